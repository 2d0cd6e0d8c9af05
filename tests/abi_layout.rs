//! Size and offset of every field of UCX master's public UCT/UCS structs,
//! checked against our `#[repr(C)]` mirrors in `uct::abi`.
//!
//! The numbers were read off UCX master's headers with gdb (`ptype /o`) and
//! copied here as data; `uct_ep_invalidate_params_t` carries the failover
//! addition (`flags` at offset 8, 16 bytes). Nested anonymous aggregates have
//! Rust names (`uct_ep_op_info_t`'s anonymous union is `detail`).

use std::mem::{offset_of, size_of};

use uct::abi;

/// Size of the type a field projection points at.
fn pointee_size<T, F>(_project: fn(*const T) -> *const F) -> usize {
    size_of::<F>()
}

/// Records `(field, expected offset/size, actual offset/size)` mismatches.
macro_rules! field {
    ($errors:ident, $ty:ty, $off:expr, $size:expr, $($path:tt)+) => {{
        let actual_off = offset_of!($ty, $($path)+);
        // SAFETY: the projection is never called; it only names the field's type.
        #[allow(unused_unsafe)]
        let actual_size = pointee_size::<$ty, _>(|p| unsafe { core::ptr::addr_of!((*p).$($path)+) });
        if (actual_off, actual_size) != ($off, $size) {
            $errors.push(format!(
                "{}.{}: expected offset {} size {}, ours offset {} size {}",
                stringify!($ty), stringify!($($path)+), $off, $size, actual_off, actual_size
            ));
        }
    }};
}

fn report(errors: Vec<String>) {
    assert!(
        errors.is_empty(),
        "layout differs from UCX master:\n{}",
        errors.join("\n")
    );
}

#[test]
fn layout_ucs_callbackq() {
    let mut errors = Vec::new();
    if size_of::<abi::ucs_callbackq_t>() != 136 {
        errors.push(format!(
            "sizeof(ucs_callbackq): expected 136, ours {}",
            size_of::<abi::ucs_callbackq_t>()
        ));
    }
    field!(errors, abi::ucs_callbackq_t, 0, 128, fast_elems);
    field!(errors, abi::ucs_callbackq_t, 128, 8, priv_);
    report(errors);
}

#[test]
fn layout_ucs_callbackq_elem() {
    let mut errors = Vec::new();
    if size_of::<abi::ucs_callbackq_elem>() != 16 {
        errors.push(format!(
            "sizeof(ucs_callbackq_elem): expected 16, ours {}",
            size_of::<abi::ucs_callbackq_elem>()
        ));
    }
    field!(errors, abi::ucs_callbackq_elem, 0, 8, cb);
    field!(errors, abi::ucs_callbackq_elem, 8, 8, arg);
    report(errors);
}

#[test]
fn layout_uct_allocated_memory_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_allocated_memory_t>() != 48 {
        errors.push(format!(
            "sizeof(uct_allocated_memory_t): expected 48, ours {}",
            size_of::<abi::uct_allocated_memory_t>()
        ));
    }
    field!(errors, abi::uct_allocated_memory_t, 0, 8, address);
    field!(errors, abi::uct_allocated_memory_t, 8, 8, length);
    field!(errors, abi::uct_allocated_memory_t, 16, 4, method);
    field!(errors, abi::uct_allocated_memory_t, 20, 4, mem_type);
    field!(errors, abi::uct_allocated_memory_t, 24, 8, md);
    field!(errors, abi::uct_allocated_memory_t, 32, 8, memh);
    field!(errors, abi::uct_allocated_memory_t, 40, 1, sys_device);
    report(errors);
}

#[test]
fn layout_uct_cm_attr() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_cm_attr>() != 16 {
        errors.push(format!(
            "sizeof(uct_cm_attr): expected 16, ours {}",
            size_of::<abi::uct_cm_attr>()
        ));
    }
    field!(errors, abi::uct_cm_attr, 0, 8, field_mask);
    field!(errors, abi::uct_cm_attr, 8, 8, max_conn_priv);
    report(errors);
}

#[test]
fn layout_uct_cm_ep_client_connect_args_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_cm_ep_client_connect_args_t>() != 24 {
        errors.push(format!(
            "sizeof(uct_cm_ep_client_connect_args_t): expected 24, ours {}",
            size_of::<abi::uct_cm_ep_client_connect_args_t>()
        ));
    }
    field!(
        errors,
        abi::uct_cm_ep_client_connect_args_t,
        0,
        8,
        field_mask
    );
    field!(
        errors,
        abi::uct_cm_ep_client_connect_args_t,
        8,
        8,
        remote_data
    );
    field!(errors, abi::uct_cm_ep_client_connect_args_t, 16, 1, status);
    report(errors);
}

#[test]
fn layout_uct_cm_ep_priv_data_pack_args_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_cm_ep_priv_data_pack_args_t>() != 40 {
        errors.push(format!(
            "sizeof(uct_cm_ep_priv_data_pack_args_t): expected 40, ours {}",
            size_of::<abi::uct_cm_ep_priv_data_pack_args_t>()
        ));
    }
    field!(
        errors,
        abi::uct_cm_ep_priv_data_pack_args_t,
        0,
        8,
        field_mask
    );
    field!(
        errors,
        abi::uct_cm_ep_priv_data_pack_args_t,
        8,
        32,
        dev_name
    );
    report(errors);
}

#[test]
fn layout_uct_cm_ep_resolve_args_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_cm_ep_resolve_args_t>() != 48 {
        errors.push(format!(
            "sizeof(uct_cm_ep_resolve_args_t): expected 48, ours {}",
            size_of::<abi::uct_cm_ep_resolve_args_t>()
        ));
    }
    field!(errors, abi::uct_cm_ep_resolve_args_t, 0, 8, field_mask);
    field!(errors, abi::uct_cm_ep_resolve_args_t, 8, 32, dev_name);
    field!(errors, abi::uct_cm_ep_resolve_args_t, 40, 1, status);
    report(errors);
}

#[test]
fn layout_uct_cm_ep_server_conn_notify_args_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_cm_ep_server_conn_notify_args_t>() != 16 {
        errors.push(format!(
            "sizeof(uct_cm_ep_server_conn_notify_args_t): expected 16, ours {}",
            size_of::<abi::uct_cm_ep_server_conn_notify_args_t>()
        ));
    }
    field!(
        errors,
        abi::uct_cm_ep_server_conn_notify_args_t,
        0,
        8,
        field_mask
    );
    field!(
        errors,
        abi::uct_cm_ep_server_conn_notify_args_t,
        8,
        1,
        status
    );
    report(errors);
}

#[test]
fn layout_uct_cm_listener_conn_request_args_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_cm_listener_conn_request_args_t>() != 72 {
        errors.push(format!(
            "sizeof(uct_cm_listener_conn_request_args_t): expected 72, ours {}",
            size_of::<abi::uct_cm_listener_conn_request_args_t>()
        ));
    }
    field!(
        errors,
        abi::uct_cm_listener_conn_request_args_t,
        0,
        8,
        field_mask
    );
    field!(
        errors,
        abi::uct_cm_listener_conn_request_args_t,
        8,
        32,
        dev_name
    );
    field!(
        errors,
        abi::uct_cm_listener_conn_request_args_t,
        40,
        8,
        conn_request
    );
    field!(
        errors,
        abi::uct_cm_listener_conn_request_args_t,
        48,
        8,
        remote_data
    );
    field!(
        errors,
        abi::uct_cm_listener_conn_request_args_t,
        56,
        16,
        client_address
    );
    report(errors);
}

#[test]
fn layout_uct_cm_remote_data_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_cm_remote_data_t>() != 40 {
        errors.push(format!(
            "sizeof(uct_cm_remote_data_t): expected 40, ours {}",
            size_of::<abi::uct_cm_remote_data_t>()
        ));
    }
    field!(errors, abi::uct_cm_remote_data_t, 0, 8, field_mask);
    field!(errors, abi::uct_cm_remote_data_t, 8, 8, dev_addr);
    field!(errors, abi::uct_cm_remote_data_t, 16, 8, dev_addr_length);
    field!(errors, abi::uct_cm_remote_data_t, 24, 8, conn_priv_data);
    field!(
        errors,
        abi::uct_cm_remote_data_t,
        32,
        8,
        conn_priv_data_length
    );
    report(errors);
}

#[test]
fn layout_uct_completion() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_completion>() != 16 {
        errors.push(format!(
            "sizeof(uct_completion): expected 16, ours {}",
            size_of::<abi::uct_completion>()
        ));
    }
    field!(errors, abi::uct_completion, 0, 8, func);
    field!(errors, abi::uct_completion, 8, 4, count);
    field!(errors, abi::uct_completion, 12, 1, status);
    report(errors);
}

#[test]
fn layout_uct_component_attr_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_component_attr_t>() != 48 {
        errors.push(format!(
            "sizeof(uct_component_attr_t): expected 48, ours {}",
            size_of::<abi::uct_component_attr_t>()
        ));
    }
    field!(errors, abi::uct_component_attr_t, 0, 8, field_mask);
    field!(errors, abi::uct_component_attr_t, 8, 16, name);
    field!(errors, abi::uct_component_attr_t, 24, 4, md_resource_count);
    field!(errors, abi::uct_component_attr_t, 32, 8, md_resources);
    field!(errors, abi::uct_component_attr_t, 40, 8, flags);
    report(errors);
}

#[test]
fn layout_uct_ep_attr() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ep_attr>() != 272 {
        errors.push(format!(
            "sizeof(uct_ep_attr): expected 272, ours {}",
            size_of::<abi::uct_ep_attr>()
        ));
    }
    field!(errors, abi::uct_ep_attr, 0, 8, field_mask);
    field!(errors, abi::uct_ep_attr, 8, 128, local_address);
    field!(errors, abi::uct_ep_attr, 136, 128, remote_address);
    field!(errors, abi::uct_ep_attr, 264, 8, tx_token);
    report(errors);
}

#[test]
fn layout_uct_ep_connect_params() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ep_connect_params>() != 24 {
        errors.push(format!(
            "sizeof(uct_ep_connect_params): expected 24, ours {}",
            size_of::<abi::uct_ep_connect_params>()
        ));
    }
    field!(errors, abi::uct_ep_connect_params, 0, 8, field_mask);
    field!(errors, abi::uct_ep_connect_params, 8, 8, private_data);
    field!(
        errors,
        abi::uct_ep_connect_params,
        16,
        8,
        private_data_length
    );
    report(errors);
}

#[test]
fn layout_uct_ep_connect_to_ep_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ep_connect_to_ep_params_t>() != 24 {
        errors.push(format!(
            "sizeof(uct_ep_connect_to_ep_params_t): expected 24, ours {}",
            size_of::<abi::uct_ep_connect_to_ep_params_t>()
        ));
    }
    field!(errors, abi::uct_ep_connect_to_ep_params_t, 0, 8, field_mask);
    field!(
        errors,
        abi::uct_ep_connect_to_ep_params_t,
        8,
        8,
        device_addr_length
    );
    field!(
        errors,
        abi::uct_ep_connect_to_ep_params_t,
        16,
        8,
        ep_addr_length
    );
    report(errors);
}

#[test]
fn layout_uct_ep_invalidate_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ep_invalidate_params_t>() != 16 {
        errors.push(format!(
            "sizeof(uct_ep_invalidate_params_t): expected 16, ours {}",
            size_of::<abi::uct_ep_invalidate_params_t>()
        ));
    }
    field!(errors, abi::uct_ep_invalidate_params_t, 0, 8, field_mask);
    field!(errors, abi::uct_ep_invalidate_params_t, 8, 4, flags);
    report(errors);
}

#[test]
fn layout_uct_ep_is_connected_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ep_is_connected_params_t>() != 32 {
        errors.push(format!(
            "sizeof(uct_ep_is_connected_params_t): expected 32, ours {}",
            size_of::<abi::uct_ep_is_connected_params_t>()
        ));
    }
    field!(errors, abi::uct_ep_is_connected_params_t, 0, 8, field_mask);
    field!(errors, abi::uct_ep_is_connected_params_t, 8, 8, device_addr);
    field!(errors, abi::uct_ep_is_connected_params_t, 16, 8, iface_addr);
    field!(errors, abi::uct_ep_is_connected_params_t, 24, 8, ep_addr);
    report(errors);
}

#[test]
fn layout_uct_ep_op_info_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ep_op_info_t>() != 80 {
        errors.push(format!(
            "sizeof(uct_ep_op_info_t): expected 80, ours {}",
            size_of::<abi::uct_ep_op_info_t>()
        ));
    }
    field!(errors, abi::uct_ep_op_info_t, 0, 8, field_mask);
    field!(errors, abi::uct_ep_op_info_t, 8, 4, operation);
    field!(errors, abi::uct_ep_op_info_t, 16, 8, comp);
    field!(errors, abi::uct_ep_op_info_t, 24, 56, detail);
    field!(errors, abi::uct_ep_op_info_t, 24, 40, detail.am);
    field!(errors, abi::uct_ep_op_info_t, 24, 2, detail.am.field_mask);
    field!(errors, abi::uct_ep_op_info_t, 26, 1, detail.am.am_id);
    field!(errors, abi::uct_ep_op_info_t, 28, 4, detail.am.flags);
    field!(errors, abi::uct_ep_op_info_t, 32, 16, detail.am.header);
    field!(errors, abi::uct_ep_op_info_t, 32, 8, detail.am.header.value);
    field!(
        errors,
        abi::uct_ep_op_info_t,
        32,
        16,
        detail.am.header.zcopy
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        32,
        8,
        detail.am.header.zcopy.buffer
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        40,
        8,
        detail.am.header.zcopy.length
    );
    field!(errors, abi::uct_ep_op_info_t, 48, 16, detail.am.payload);
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        16,
        detail.am.payload.data
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        8,
        detail.am.payload.data.buffer
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        56,
        8,
        detail.am.payload.data.length
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        16,
        detail.am.payload.zcopy
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        8,
        detail.am.payload.zcopy.iov
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        56,
        8,
        detail.am.payload.zcopy.iovcnt
    );
    field!(errors, abi::uct_ep_op_info_t, 24, 48, detail.rma);
    field!(errors, abi::uct_ep_op_info_t, 24, 2, detail.rma.field_mask);
    field!(errors, abi::uct_ep_op_info_t, 32, 8, detail.rma.remote_addr);
    field!(errors, abi::uct_ep_op_info_t, 40, 8, detail.rma.rkey);
    field!(errors, abi::uct_ep_op_info_t, 48, 24, detail.rma.payload);
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        16,
        detail.rma.payload.data
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        8,
        detail.rma.payload.data.buffer
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        56,
        8,
        detail.rma.payload.data.length
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        16,
        detail.rma.payload.zcopy
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        8,
        detail.rma.payload.zcopy.iov
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        56,
        8,
        detail.rma.payload.zcopy.iovcnt
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        24,
        detail.rma.payload.unpack
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        48,
        8,
        detail.rma.payload.unpack.unpack_cb
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        56,
        8,
        detail.rma.payload.unpack.arg
    );
    field!(
        errors,
        abi::uct_ep_op_info_t,
        64,
        8,
        detail.rma.payload.unpack.length
    );
    field!(errors, abi::uct_ep_op_info_t, 24, 8, detail.flush);
    field!(
        errors,
        abi::uct_ep_op_info_t,
        24,
        2,
        detail.flush.field_mask
    );
    field!(errors, abi::uct_ep_op_info_t, 28, 4, detail.flush.flags);
    field!(errors, abi::uct_ep_op_info_t, 24, 56, detail.atomic);
    field!(
        errors,
        abi::uct_ep_op_info_t,
        24,
        2,
        detail.atomic.field_mask
    );
    field!(errors, abi::uct_ep_op_info_t, 28, 4, detail.atomic.op);
    field!(
        errors,
        abi::uct_ep_op_info_t,
        32,
        8,
        detail.atomic.remote_addr
    );
    field!(errors, abi::uct_ep_op_info_t, 40, 8, detail.atomic.rkey);
    field!(errors, abi::uct_ep_op_info_t, 48, 8, detail.atomic.value);
    field!(errors, abi::uct_ep_op_info_t, 56, 8, detail.atomic.compare);
    field!(errors, abi::uct_ep_op_info_t, 64, 8, detail.atomic.result);
    field!(errors, abi::uct_ep_op_info_t, 72, 8, detail.atomic.size);
    report(errors);
}

#[test]
fn layout_uct_ep_outstanding_purge_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ep_outstanding_purge_params_t>() != 32 {
        errors.push(format!(
            "sizeof(uct_ep_outstanding_purge_params_t): expected 32, ours {}",
            size_of::<abi::uct_ep_outstanding_purge_params_t>()
        ));
    }
    field!(
        errors,
        abi::uct_ep_outstanding_purge_params_t,
        0,
        8,
        field_mask
    );
    field!(
        errors,
        abi::uct_ep_outstanding_purge_params_t,
        8,
        8,
        rx_token
    );
    field!(errors, abi::uct_ep_outstanding_purge_params_t, 16, 8, cb);
    field!(errors, abi::uct_ep_outstanding_purge_params_t, 24, 8, arg);
    report(errors);
}

#[test]
fn layout_uct_ep_params() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ep_params>() != 160 {
        errors.push(format!(
            "sizeof(uct_ep_params): expected 160, ours {}",
            size_of::<abi::uct_ep_params>()
        ));
    }
    field!(errors, abi::uct_ep_params, 0, 8, field_mask);
    field!(errors, abi::uct_ep_params, 8, 8, iface);
    field!(errors, abi::uct_ep_params, 16, 8, user_data);
    field!(errors, abi::uct_ep_params, 24, 8, dev_addr);
    field!(errors, abi::uct_ep_params, 32, 8, iface_addr);
    field!(errors, abi::uct_ep_params, 40, 8, sockaddr);
    field!(errors, abi::uct_ep_params, 48, 4, sockaddr_cb_flags);
    field!(errors, abi::uct_ep_params, 56, 8, sockaddr_pack_cb);
    field!(errors, abi::uct_ep_params, 64, 8, cm);
    field!(errors, abi::uct_ep_params, 72, 8, conn_request);
    field!(errors, abi::uct_ep_params, 80, 8, sockaddr_cb_client);
    field!(errors, abi::uct_ep_params, 88, 8, sockaddr_cb_server);
    field!(errors, abi::uct_ep_params, 96, 8, disconnect_cb);
    field!(errors, abi::uct_ep_params, 104, 4, path_index);
    field!(errors, abi::uct_ep_params, 112, 8, cm_resolve_cb);
    field!(errors, abi::uct_ep_params, 120, 8, private_data);
    field!(errors, abi::uct_ep_params, 128, 8, private_data_length);
    field!(errors, abi::uct_ep_params, 136, 8, local_sockaddr);
    field!(errors, abi::uct_ep_params, 144, 8, dev_addr_length);
    field!(errors, abi::uct_ep_params, 152, 8, iface_addr_length);
    report(errors);
}

#[test]
fn layout_uct_ep_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ep_t>() != 8 {
        errors.push(format!(
            "sizeof(uct_ep_t): expected 8, ours {}",
            size_of::<abi::uct_ep_t>()
        ));
    }
    field!(errors, abi::uct_ep_t, 0, 8, iface);
    report(errors);
}

#[test]
fn layout_uct_iface_attr() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_iface_attr>() != 536 {
        errors.push(format!(
            "sizeof(uct_iface_attr): expected 536, ours {}",
            size_of::<abi::uct_iface_attr>()
        ));
    }
    field!(errors, abi::uct_iface_attr, 0, 312, cap);
    field!(errors, abi::uct_iface_attr, 0, 56, cap.put);
    field!(errors, abi::uct_iface_attr, 0, 8, cap.put.max_short);
    field!(errors, abi::uct_iface_attr, 8, 8, cap.put.max_bcopy);
    field!(errors, abi::uct_iface_attr, 16, 8, cap.put.min_zcopy);
    field!(errors, abi::uct_iface_attr, 24, 8, cap.put.max_zcopy);
    field!(errors, abi::uct_iface_attr, 32, 8, cap.put.opt_zcopy_align);
    field!(errors, abi::uct_iface_attr, 40, 8, cap.put.align_mtu);
    field!(errors, abi::uct_iface_attr, 48, 8, cap.put.max_iov);
    field!(errors, abi::uct_iface_attr, 56, 56, cap.get);
    field!(errors, abi::uct_iface_attr, 56, 8, cap.get.max_short);
    field!(errors, abi::uct_iface_attr, 64, 8, cap.get.max_bcopy);
    field!(errors, abi::uct_iface_attr, 72, 8, cap.get.min_zcopy);
    field!(errors, abi::uct_iface_attr, 80, 8, cap.get.max_zcopy);
    field!(errors, abi::uct_iface_attr, 88, 8, cap.get.opt_zcopy_align);
    field!(errors, abi::uct_iface_attr, 96, 8, cap.get.align_mtu);
    field!(errors, abi::uct_iface_attr, 104, 8, cap.get.max_iov);
    field!(errors, abi::uct_iface_attr, 112, 64, cap.am);
    field!(errors, abi::uct_iface_attr, 112, 8, cap.am.max_short);
    field!(errors, abi::uct_iface_attr, 120, 8, cap.am.max_bcopy);
    field!(errors, abi::uct_iface_attr, 128, 8, cap.am.min_zcopy);
    field!(errors, abi::uct_iface_attr, 136, 8, cap.am.max_zcopy);
    field!(errors, abi::uct_iface_attr, 144, 8, cap.am.opt_zcopy_align);
    field!(errors, abi::uct_iface_attr, 152, 8, cap.am.align_mtu);
    field!(errors, abi::uct_iface_attr, 160, 8, cap.am.max_hdr);
    field!(errors, abi::uct_iface_attr, 168, 8, cap.am.max_iov);
    field!(errors, abi::uct_iface_attr, 176, 88, cap.tag);
    field!(errors, abi::uct_iface_attr, 176, 32, cap.tag.recv);
    field!(errors, abi::uct_iface_attr, 176, 8, cap.tag.recv.min_recv);
    field!(errors, abi::uct_iface_attr, 184, 8, cap.tag.recv.max_zcopy);
    field!(errors, abi::uct_iface_attr, 192, 8, cap.tag.recv.max_iov);
    field!(
        errors,
        abi::uct_iface_attr,
        200,
        8,
        cap.tag.recv.max_outstanding
    );
    field!(errors, abi::uct_iface_attr, 208, 32, cap.tag.eager);
    field!(errors, abi::uct_iface_attr, 208, 8, cap.tag.eager.max_short);
    field!(errors, abi::uct_iface_attr, 216, 8, cap.tag.eager.max_bcopy);
    field!(errors, abi::uct_iface_attr, 224, 8, cap.tag.eager.max_zcopy);
    field!(errors, abi::uct_iface_attr, 232, 8, cap.tag.eager.max_iov);
    field!(errors, abi::uct_iface_attr, 240, 24, cap.tag.rndv);
    field!(errors, abi::uct_iface_attr, 240, 8, cap.tag.rndv.max_zcopy);
    field!(errors, abi::uct_iface_attr, 248, 8, cap.tag.rndv.max_hdr);
    field!(errors, abi::uct_iface_attr, 256, 8, cap.tag.rndv.max_iov);
    field!(errors, abi::uct_iface_attr, 264, 16, cap.atomic32);
    field!(errors, abi::uct_iface_attr, 264, 8, cap.atomic32.op_flags);
    field!(errors, abi::uct_iface_attr, 272, 8, cap.atomic32.fop_flags);
    field!(errors, abi::uct_iface_attr, 280, 16, cap.atomic64);
    field!(errors, abi::uct_iface_attr, 280, 8, cap.atomic64.op_flags);
    field!(errors, abi::uct_iface_attr, 288, 8, cap.atomic64.fop_flags);
    field!(errors, abi::uct_iface_attr, 296, 8, cap.flags);
    field!(errors, abi::uct_iface_attr, 304, 8, cap.event_flags);
    field!(errors, abi::uct_iface_attr, 312, 8, device_addr_len);
    field!(errors, abi::uct_iface_attr, 320, 8, iface_addr_len);
    field!(errors, abi::uct_iface_attr, 328, 8, ep_addr_len);
    field!(errors, abi::uct_iface_attr, 336, 8, max_conn_priv);
    field!(errors, abi::uct_iface_attr, 344, 128, listen_sockaddr);
    field!(errors, abi::uct_iface_attr, 472, 8, overhead);
    field!(errors, abi::uct_iface_attr, 480, 16, bandwidth);
    field!(errors, abi::uct_iface_attr, 496, 16, latency);
    field!(errors, abi::uct_iface_attr, 512, 1, priority);
    field!(errors, abi::uct_iface_attr, 520, 8, max_num_eps);
    field!(errors, abi::uct_iface_attr, 528, 4, dev_num_paths);
    field!(errors, abi::uct_iface_attr, 532, 1, ctl_device);
    report(errors);
}

#[test]
fn layout_uct_iface_attr_v2_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_iface_attr_v2_t>() != 64 {
        errors.push(format!(
            "sizeof(uct_iface_attr_v2_t): expected 64, ours {}",
            size_of::<abi::uct_iface_attr_v2_t>()
        ));
    }
    field!(errors, abi::uct_iface_attr_v2_t, 0, 8, field_mask);
    field!(
        errors,
        abi::uct_iface_attr_v2_t,
        8,
        8,
        max_put_sgl_zcopy_count
    );
    field!(
        errors,
        abi::uct_iface_attr_v2_t,
        16,
        8,
        max_get_sgl_zcopy_count
    );
    field!(errors, abi::uct_iface_attr_v2_t, 24, 8, cap);
    field!(errors, abi::uct_iface_attr_v2_t, 24, 8, cap.flags);
    field!(errors, abi::uct_iface_attr_v2_t, 32, 8, tx_token_length);
    field!(errors, abi::uct_iface_attr_v2_t, 40, 8, rx_token_length);
    field!(errors, abi::uct_iface_attr_v2_t, 48, 8, tx_token);
    field!(errors, abi::uct_iface_attr_v2_t, 56, 8, rx_token);
    report(errors);
}

#[test]
fn layout_uct_iface_is_reachable_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_iface_is_reachable_params_t>() != 64 {
        errors.push(format!(
            "sizeof(uct_iface_is_reachable_params_t): expected 64, ours {}",
            size_of::<abi::uct_iface_is_reachable_params_t>()
        ));
    }
    field!(
        errors,
        abi::uct_iface_is_reachable_params_t,
        0,
        8,
        field_mask
    );
    field!(
        errors,
        abi::uct_iface_is_reachable_params_t,
        8,
        8,
        device_addr
    );
    field!(
        errors,
        abi::uct_iface_is_reachable_params_t,
        16,
        8,
        iface_addr
    );
    field!(
        errors,
        abi::uct_iface_is_reachable_params_t,
        24,
        8,
        info_string
    );
    field!(
        errors,
        abi::uct_iface_is_reachable_params_t,
        32,
        8,
        info_string_length
    );
    field!(errors, abi::uct_iface_is_reachable_params_t, 40, 4, scope);
    field!(
        errors,
        abi::uct_iface_is_reachable_params_t,
        48,
        8,
        device_addr_length
    );
    field!(
        errors,
        abi::uct_iface_is_reachable_params_t,
        56,
        8,
        iface_addr_length
    );
    report(errors);
}

#[test]
fn layout_uct_iface_ops_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_iface_ops_t>() != 400 {
        errors.push(format!(
            "sizeof(uct_iface_ops_t): expected 400, ours {}",
            size_of::<abi::uct_iface_ops_t>()
        ));
    }
    field!(errors, abi::uct_iface_ops_t, 0, 8, ep_put_short);
    field!(errors, abi::uct_iface_ops_t, 8, 8, ep_put_bcopy);
    field!(errors, abi::uct_iface_ops_t, 16, 8, ep_put_zcopy);
    field!(errors, abi::uct_iface_ops_t, 24, 8, ep_get_short);
    field!(errors, abi::uct_iface_ops_t, 32, 8, ep_get_bcopy);
    field!(errors, abi::uct_iface_ops_t, 40, 8, ep_get_zcopy);
    field!(errors, abi::uct_iface_ops_t, 48, 8, ep_am_short);
    field!(errors, abi::uct_iface_ops_t, 56, 8, ep_am_short_iov);
    field!(errors, abi::uct_iface_ops_t, 64, 8, ep_am_bcopy);
    field!(errors, abi::uct_iface_ops_t, 72, 8, ep_am_zcopy);
    field!(errors, abi::uct_iface_ops_t, 80, 8, ep_atomic_cswap64);
    field!(errors, abi::uct_iface_ops_t, 88, 8, ep_atomic_cswap32);
    field!(errors, abi::uct_iface_ops_t, 96, 8, ep_atomic32_post);
    field!(errors, abi::uct_iface_ops_t, 104, 8, ep_atomic64_post);
    field!(errors, abi::uct_iface_ops_t, 112, 8, ep_atomic32_fetch);
    field!(errors, abi::uct_iface_ops_t, 120, 8, ep_atomic64_fetch);
    field!(errors, abi::uct_iface_ops_t, 128, 8, ep_tag_eager_short);
    field!(errors, abi::uct_iface_ops_t, 136, 8, ep_tag_eager_bcopy);
    field!(errors, abi::uct_iface_ops_t, 144, 8, ep_tag_eager_zcopy);
    field!(errors, abi::uct_iface_ops_t, 152, 8, ep_tag_rndv_zcopy);
    field!(errors, abi::uct_iface_ops_t, 160, 8, ep_tag_rndv_cancel);
    field!(errors, abi::uct_iface_ops_t, 168, 8, ep_tag_rndv_request);
    field!(errors, abi::uct_iface_ops_t, 176, 8, iface_tag_recv_zcopy);
    field!(errors, abi::uct_iface_ops_t, 184, 8, iface_tag_recv_cancel);
    field!(errors, abi::uct_iface_ops_t, 192, 8, ep_pending_add);
    field!(errors, abi::uct_iface_ops_t, 200, 8, ep_pending_purge);
    field!(errors, abi::uct_iface_ops_t, 208, 8, ep_flush);
    field!(errors, abi::uct_iface_ops_t, 216, 8, ep_fence);
    field!(errors, abi::uct_iface_ops_t, 224, 8, ep_check);
    field!(errors, abi::uct_iface_ops_t, 232, 8, ep_create);
    field!(errors, abi::uct_iface_ops_t, 240, 8, ep_connect);
    field!(errors, abi::uct_iface_ops_t, 248, 8, ep_disconnect);
    field!(errors, abi::uct_iface_ops_t, 256, 8, cm_ep_conn_notify);
    field!(errors, abi::uct_iface_ops_t, 264, 8, ep_destroy);
    field!(errors, abi::uct_iface_ops_t, 272, 8, ep_get_address);
    field!(errors, abi::uct_iface_ops_t, 280, 8, ep_connect_to_ep);
    field!(errors, abi::uct_iface_ops_t, 288, 8, iface_accept);
    field!(errors, abi::uct_iface_ops_t, 296, 8, iface_reject);
    field!(errors, abi::uct_iface_ops_t, 304, 8, iface_flush);
    field!(errors, abi::uct_iface_ops_t, 312, 8, iface_fence);
    field!(errors, abi::uct_iface_ops_t, 320, 8, iface_progress_enable);
    field!(errors, abi::uct_iface_ops_t, 328, 8, iface_progress_disable);
    field!(errors, abi::uct_iface_ops_t, 336, 8, iface_progress);
    field!(errors, abi::uct_iface_ops_t, 344, 8, iface_event_fd_get);
    field!(errors, abi::uct_iface_ops_t, 352, 8, iface_event_arm);
    field!(errors, abi::uct_iface_ops_t, 360, 8, iface_close);
    field!(errors, abi::uct_iface_ops_t, 368, 8, iface_query);
    field!(
        errors,
        abi::uct_iface_ops_t,
        376,
        8,
        iface_get_device_address
    );
    field!(errors, abi::uct_iface_ops_t, 384, 8, iface_get_address);
    field!(errors, abi::uct_iface_ops_t, 392, 8, iface_is_reachable);
    report(errors);
}

#[test]
fn layout_uct_iface_params() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_iface_params>() != 304 {
        errors.push(format!(
            "sizeof(uct_iface_params): expected 304, ours {}",
            size_of::<abi::uct_iface_params>()
        ));
    }
    field!(errors, abi::uct_iface_params, 0, 8, field_mask);
    field!(errors, abi::uct_iface_params, 8, 128, cpu_mask);
    field!(errors, abi::uct_iface_params, 136, 8, open_mode);
    field!(errors, abi::uct_iface_params, 144, 40, mode);
    field!(errors, abi::uct_iface_params, 144, 16, mode.device);
    field!(errors, abi::uct_iface_params, 144, 8, mode.device.tl_name);
    field!(errors, abi::uct_iface_params, 152, 8, mode.device.dev_name);
    field!(errors, abi::uct_iface_params, 144, 40, mode.sockaddr);
    field!(
        errors,
        abi::uct_iface_params,
        144,
        16,
        mode.sockaddr.listen_sockaddr
    );
    field!(
        errors,
        abi::uct_iface_params,
        160,
        8,
        mode.sockaddr.conn_request_arg
    );
    field!(
        errors,
        abi::uct_iface_params,
        168,
        8,
        mode.sockaddr.conn_request_cb
    );
    field!(
        errors,
        abi::uct_iface_params,
        176,
        4,
        mode.sockaddr.cb_flags
    );
    field!(errors, abi::uct_iface_params, 144, 1, mode.stub);
    field!(errors, abi::uct_iface_params, 144, 1, mode.stub.status);
    field!(errors, abi::uct_iface_params, 184, 8, stats_root);
    field!(errors, abi::uct_iface_params, 192, 8, rx_headroom);
    field!(errors, abi::uct_iface_params, 200, 8, err_handler_arg);
    field!(errors, abi::uct_iface_params, 208, 8, err_handler);
    field!(errors, abi::uct_iface_params, 216, 4, err_handler_flags);
    field!(errors, abi::uct_iface_params, 224, 8, eager_arg);
    field!(errors, abi::uct_iface_params, 232, 8, eager_cb);
    field!(errors, abi::uct_iface_params, 240, 8, rndv_arg);
    field!(errors, abi::uct_iface_params, 248, 8, rndv_cb);
    field!(errors, abi::uct_iface_params, 256, 8, async_event_arg);
    field!(errors, abi::uct_iface_params, 264, 8, async_event_cb);
    field!(errors, abi::uct_iface_params, 272, 8, keepalive_interval);
    field!(errors, abi::uct_iface_params, 280, 8, am_alignment);
    field!(errors, abi::uct_iface_params, 288, 8, am_align_offset);
    field!(errors, abi::uct_iface_params, 296, 8, features);
    report(errors);
}

#[test]
fn layout_uct_iface_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_iface_t>() != 400 {
        errors.push(format!(
            "sizeof(uct_iface_t): expected 400, ours {}",
            size_of::<abi::uct_iface_t>()
        ));
    }
    field!(errors, abi::uct_iface_t, 0, 400, ops);
    report(errors);
}

#[test]
fn layout_uct_iov_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_iov_t>() != 40 {
        errors.push(format!(
            "sizeof(uct_iov_t): expected 40, ours {}",
            size_of::<abi::uct_iov_t>()
        ));
    }
    field!(errors, abi::uct_iov_t, 0, 8, buffer);
    field!(errors, abi::uct_iov_t, 8, 8, length);
    field!(errors, abi::uct_iov_t, 16, 8, memh);
    field!(errors, abi::uct_iov_t, 24, 8, stride);
    field!(errors, abi::uct_iov_t, 32, 4, count);
    report(errors);
}

#[test]
fn layout_uct_listener_attr() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_listener_attr>() != 136 {
        errors.push(format!(
            "sizeof(uct_listener_attr): expected 136, ours {}",
            size_of::<abi::uct_listener_attr>()
        ));
    }
    field!(errors, abi::uct_listener_attr, 0, 8, field_mask);
    field!(errors, abi::uct_listener_attr, 8, 128, sockaddr);
    report(errors);
}

#[test]
fn layout_uct_listener_params() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_listener_params>() != 32 {
        errors.push(format!(
            "sizeof(uct_listener_params): expected 32, ours {}",
            size_of::<abi::uct_listener_params>()
        ));
    }
    field!(errors, abi::uct_listener_params, 0, 8, field_mask);
    field!(errors, abi::uct_listener_params, 8, 4, backlog);
    field!(errors, abi::uct_listener_params, 16, 8, conn_request_cb);
    field!(errors, abi::uct_listener_params, 24, 8, user_data);
    report(errors);
}

#[test]
fn layout_uct_listener_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_listener_t>() != 8 {
        errors.push(format!(
            "sizeof(uct_listener_t): expected 8, ours {}",
            size_of::<abi::uct_listener_t>()
        ));
    }
    field!(errors, abi::uct_listener_t, 0, 8, cm);
    report(errors);
}

#[test]
fn layout_uct_md_attr() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_md_attr>() != 224 {
        errors.push(format!(
            "sizeof(uct_md_attr): expected 224, ours {}",
            size_of::<abi::uct_md_attr>()
        ));
    }
    field!(errors, abi::uct_md_attr, 0, 56, cap);
    field!(errors, abi::uct_md_attr, 0, 8, cap.max_alloc);
    field!(errors, abi::uct_md_attr, 8, 8, cap.max_reg);
    field!(errors, abi::uct_md_attr, 16, 8, cap.flags);
    field!(errors, abi::uct_md_attr, 24, 8, cap.reg_mem_types);
    field!(errors, abi::uct_md_attr, 32, 8, cap.detect_mem_types);
    field!(errors, abi::uct_md_attr, 40, 8, cap.alloc_mem_types);
    field!(errors, abi::uct_md_attr, 48, 8, cap.access_mem_types);
    field!(errors, abi::uct_md_attr, 56, 16, reg_cost);
    field!(errors, abi::uct_md_attr, 72, 16, component_name);
    field!(errors, abi::uct_md_attr, 88, 8, rkey_packed_size);
    field!(errors, abi::uct_md_attr, 96, 128, local_cpus);
    report(errors);
}

#[test]
fn layout_uct_md_attr_v2_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_md_attr_v2_t>() != 544 {
        errors.push(format!(
            "sizeof(uct_md_attr_v2_t): expected 544, ours {}",
            size_of::<abi::uct_md_attr_v2_t>()
        ));
    }
    field!(errors, abi::uct_md_attr_v2_t, 0, 8, field_mask);
    field!(errors, abi::uct_md_attr_v2_t, 8, 8, max_alloc);
    field!(errors, abi::uct_md_attr_v2_t, 16, 8, max_reg);
    field!(errors, abi::uct_md_attr_v2_t, 24, 8, flags);
    field!(errors, abi::uct_md_attr_v2_t, 32, 8, reg_mem_types);
    field!(errors, abi::uct_md_attr_v2_t, 40, 8, reg_nonblock_mem_types);
    field!(errors, abi::uct_md_attr_v2_t, 48, 8, cache_mem_types);
    field!(errors, abi::uct_md_attr_v2_t, 56, 8, gva_mem_types);
    field!(errors, abi::uct_md_attr_v2_t, 64, 8, detect_mem_types);
    field!(errors, abi::uct_md_attr_v2_t, 72, 8, alloc_mem_types);
    field!(errors, abi::uct_md_attr_v2_t, 80, 8, access_mem_types);
    field!(errors, abi::uct_md_attr_v2_t, 88, 8, dmabuf_mem_types);
    field!(errors, abi::uct_md_attr_v2_t, 96, 16, reg_cost);
    field!(errors, abi::uct_md_attr_v2_t, 112, 16, component_name);
    field!(errors, abi::uct_md_attr_v2_t, 128, 8, rkey_packed_size);
    field!(errors, abi::uct_md_attr_v2_t, 136, 128, local_cpus);
    field!(
        errors,
        abi::uct_md_attr_v2_t,
        264,
        8,
        exported_mkey_packed_size
    );
    field!(errors, abi::uct_md_attr_v2_t, 272, 256, global_id);
    field!(errors, abi::uct_md_attr_v2_t, 528, 8, reg_alignment);
    field!(errors, abi::uct_md_attr_v2_t, 536, 1, required_mem_flags);
    report(errors);
}

#[test]
fn layout_uct_md_mem_attach_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_md_mem_attach_params_t>() != 24 {
        errors.push(format!(
            "sizeof(uct_md_mem_attach_params_t): expected 24, ours {}",
            size_of::<abi::uct_md_mem_attach_params_t>()
        ));
    }
    field!(errors, abi::uct_md_mem_attach_params_t, 0, 8, field_mask);
    field!(errors, abi::uct_md_mem_attach_params_t, 8, 8, flags);
    field!(errors, abi::uct_md_mem_attach_params_t, 16, 8, mkey_size);
    report(errors);
}

#[test]
fn layout_uct_md_mem_attr_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_md_mem_attr_t>() != 48 {
        errors.push(format!(
            "sizeof(uct_md_mem_attr_t): expected 48, ours {}",
            size_of::<abi::uct_md_mem_attr_t>()
        ));
    }
    field!(errors, abi::uct_md_mem_attr_t, 0, 8, field_mask);
    field!(errors, abi::uct_md_mem_attr_t, 8, 4, mem_type);
    field!(errors, abi::uct_md_mem_attr_t, 12, 1, sys_dev);
    field!(errors, abi::uct_md_mem_attr_t, 16, 8, base_address);
    field!(errors, abi::uct_md_mem_attr_t, 24, 8, alloc_length);
    field!(errors, abi::uct_md_mem_attr_t, 32, 4, dmabuf_fd);
    field!(errors, abi::uct_md_mem_attr_t, 40, 8, dmabuf_offset);
    report(errors);
}

#[test]
fn layout_uct_md_mem_attr_v2_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_md_mem_attr_v2_t>() != 56 {
        errors.push(format!(
            "sizeof(uct_md_mem_attr_v2_t): expected 56, ours {}",
            size_of::<abi::uct_md_mem_attr_v2_t>()
        ));
    }
    field!(errors, abi::uct_md_mem_attr_v2_t, 0, 8, field_mask);
    field!(errors, abi::uct_md_mem_attr_v2_t, 8, 4, mem_type);
    field!(errors, abi::uct_md_mem_attr_v2_t, 12, 1, sys_dev);
    field!(errors, abi::uct_md_mem_attr_v2_t, 16, 8, base_address);
    field!(errors, abi::uct_md_mem_attr_v2_t, 24, 8, alloc_length);
    field!(errors, abi::uct_md_mem_attr_v2_t, 32, 4, dmabuf_fd);
    field!(errors, abi::uct_md_mem_attr_v2_t, 40, 8, dmabuf_offset);
    field!(errors, abi::uct_md_mem_attr_v2_t, 48, 1, mem_flags);
    report(errors);
}

#[test]
fn layout_uct_md_mem_dereg_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_md_mem_dereg_params_t>() != 32 {
        errors.push(format!(
            "sizeof(uct_md_mem_dereg_params_t): expected 32, ours {}",
            size_of::<abi::uct_md_mem_dereg_params_t>()
        ));
    }
    field!(errors, abi::uct_md_mem_dereg_params_t, 0, 8, field_mask);
    field!(errors, abi::uct_md_mem_dereg_params_t, 8, 4, flags);
    field!(errors, abi::uct_md_mem_dereg_params_t, 16, 8, memh);
    field!(errors, abi::uct_md_mem_dereg_params_t, 24, 8, comp);
    report(errors);
}

#[test]
fn layout_uct_md_mem_reg_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_md_mem_reg_params_t>() != 40 {
        errors.push(format!(
            "sizeof(uct_md_mem_reg_params_t): expected 40, ours {}",
            size_of::<abi::uct_md_mem_reg_params_t>()
        ));
    }
    field!(errors, abi::uct_md_mem_reg_params_t, 0, 8, field_mask);
    field!(errors, abi::uct_md_mem_reg_params_t, 8, 8, flags);
    field!(errors, abi::uct_md_mem_reg_params_t, 16, 4, dmabuf_fd);
    field!(errors, abi::uct_md_mem_reg_params_t, 24, 8, dmabuf_offset);
    field!(errors, abi::uct_md_mem_reg_params_t, 32, 4, mem_type);
    report(errors);
}

#[test]
fn layout_uct_md_mkey_pack_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_md_mkey_pack_params_t>() != 16 {
        errors.push(format!(
            "sizeof(uct_md_mkey_pack_params_t): expected 16, ours {}",
            size_of::<abi::uct_md_mkey_pack_params_t>()
        ));
    }
    field!(errors, abi::uct_md_mkey_pack_params_t, 0, 8, field_mask);
    field!(errors, abi::uct_md_mkey_pack_params_t, 8, 4, flags);
    report(errors);
}

#[test]
fn layout_uct_md_resource_desc_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_md_resource_desc_t>() != 16 {
        errors.push(format!(
            "sizeof(uct_md_resource_desc_t): expected 16, ours {}",
            size_of::<abi::uct_md_resource_desc_t>()
        ));
    }
    field!(errors, abi::uct_md_resource_desc_t, 0, 16, md_name);
    report(errors);
}

#[test]
fn layout_uct_mem_alloc_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_mem_alloc_params_t>() != 64 {
        errors.push(format!(
            "sizeof(uct_mem_alloc_params_t): expected 64, ours {}",
            size_of::<abi::uct_mem_alloc_params_t>()
        ));
    }
    field!(errors, abi::uct_mem_alloc_params_t, 0, 8, field_mask);
    field!(errors, abi::uct_mem_alloc_params_t, 8, 4, flags);
    field!(errors, abi::uct_mem_alloc_params_t, 16, 8, address);
    field!(errors, abi::uct_mem_alloc_params_t, 24, 4, mem_type);
    field!(errors, abi::uct_mem_alloc_params_t, 32, 16, mds);
    field!(errors, abi::uct_mem_alloc_params_t, 32, 8, mds.mds);
    field!(errors, abi::uct_mem_alloc_params_t, 40, 4, mds.count);
    field!(errors, abi::uct_mem_alloc_params_t, 48, 8, name);
    field!(errors, abi::uct_mem_alloc_params_t, 56, 1, sys_device);
    report(errors);
}

#[test]
fn layout_uct_pending_req() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_pending_req>() != 48 {
        errors.push(format!(
            "sizeof(uct_pending_req): expected 48, ours {}",
            size_of::<abi::uct_pending_req>()
        ));
    }
    field!(errors, abi::uct_pending_req, 0, 8, func);
    field!(errors, abi::uct_pending_req, 8, 40, r#priv);
    report(errors);
}

#[test]
fn layout_uct_perf_attr_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_perf_attr_t>() != 112 {
        errors.push(format!(
            "sizeof(uct_perf_attr_t): expected 112, ours {}",
            size_of::<abi::uct_perf_attr_t>()
        ));
    }
    field!(errors, abi::uct_perf_attr_t, 0, 8, field_mask);
    field!(errors, abi::uct_perf_attr_t, 8, 4, operation);
    field!(errors, abi::uct_perf_attr_t, 12, 4, local_memory_type);
    field!(errors, abi::uct_perf_attr_t, 16, 4, remote_memory_type);
    field!(errors, abi::uct_perf_attr_t, 20, 1, local_sys_device);
    field!(errors, abi::uct_perf_attr_t, 21, 1, remote_sys_device);
    field!(errors, abi::uct_perf_attr_t, 24, 8, send_pre_overhead);
    field!(errors, abi::uct_perf_attr_t, 32, 8, send_post_overhead);
    field!(errors, abi::uct_perf_attr_t, 40, 8, recv_overhead);
    field!(errors, abi::uct_perf_attr_t, 48, 16, bandwidth);
    field!(errors, abi::uct_perf_attr_t, 64, 16, path_bandwidth);
    field!(errors, abi::uct_perf_attr_t, 80, 16, latency);
    field!(errors, abi::uct_perf_attr_t, 96, 8, max_inflight_eps);
    field!(errors, abi::uct_perf_attr_t, 104, 8, flags);
    report(errors);
}

#[test]
fn layout_uct_ppn_bandwidth_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_ppn_bandwidth_t>() != 16 {
        errors.push(format!(
            "sizeof(uct_ppn_bandwidth_t): expected 16, ours {}",
            size_of::<abi::uct_ppn_bandwidth_t>()
        ));
    }
    field!(errors, abi::uct_ppn_bandwidth_t, 0, 8, dedicated);
    field!(errors, abi::uct_ppn_bandwidth_t, 8, 8, shared);
    report(errors);
}

#[test]
fn layout_uct_recv_desc() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_recv_desc>() != 8 {
        errors.push(format!(
            "sizeof(uct_recv_desc): expected 8, ours {}",
            size_of::<abi::uct_recv_desc>()
        ));
    }
    field!(errors, abi::uct_recv_desc, 0, 8, cb);
    report(errors);
}

#[test]
fn layout_uct_rkey_bundle_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_rkey_bundle_t>() != 24 {
        errors.push(format!(
            "sizeof(uct_rkey_bundle_t): expected 24, ours {}",
            size_of::<abi::uct_rkey_bundle_t>()
        ));
    }
    field!(errors, abi::uct_rkey_bundle_t, 0, 8, rkey);
    field!(errors, abi::uct_rkey_bundle_t, 8, 8, handle);
    field!(errors, abi::uct_rkey_bundle_t, 16, 8, r#type);
    report(errors);
}

#[test]
fn layout_uct_rkey_compare_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_rkey_compare_params_t>() != 8 {
        errors.push(format!(
            "sizeof(uct_rkey_compare_params_t): expected 8, ours {}",
            size_of::<abi::uct_rkey_compare_params_t>()
        ));
    }
    field!(errors, abi::uct_rkey_compare_params_t, 0, 8, field_mask);
    report(errors);
}

#[test]
fn layout_uct_rkey_unpack_params_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_rkey_unpack_params_t>() != 16 {
        errors.push(format!(
            "sizeof(uct_rkey_unpack_params_t): expected 16, ours {}",
            size_of::<abi::uct_rkey_unpack_params_t>()
        ));
    }
    field!(errors, abi::uct_rkey_unpack_params_t, 0, 8, field_mask);
    field!(errors, abi::uct_rkey_unpack_params_t, 8, 1, sys_device);
    report(errors);
}

#[test]
fn layout_uct_tag_context() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_tag_context>() != 56 {
        errors.push(format!(
            "sizeof(uct_tag_context): expected 56, ours {}",
            size_of::<abi::uct_tag_context>()
        ));
    }
    field!(errors, abi::uct_tag_context, 0, 8, tag_consumed_cb);
    field!(errors, abi::uct_tag_context, 8, 8, completed_cb);
    field!(errors, abi::uct_tag_context, 16, 8, rndv_cb);
    field!(errors, abi::uct_tag_context, 24, 32, r#priv);
    report(errors);
}

#[test]
fn layout_uct_tl_resource_desc_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_tl_resource_desc_t>() != 52 {
        errors.push(format!(
            "sizeof(uct_tl_resource_desc_t): expected 52, ours {}",
            size_of::<abi::uct_tl_resource_desc_t>()
        ));
    }
    field!(errors, abi::uct_tl_resource_desc_t, 0, 10, tl_name);
    field!(errors, abi::uct_tl_resource_desc_t, 10, 32, dev_name);
    field!(errors, abi::uct_tl_resource_desc_t, 44, 4, dev_type);
    field!(errors, abi::uct_tl_resource_desc_t, 48, 1, sys_device);
    report(errors);
}

#[test]
fn layout_uct_worker_t() {
    let mut errors = Vec::new();
    if size_of::<abi::uct_worker_t>() != 136 {
        errors.push(format!(
            "sizeof(uct_worker_t): expected 136, ours {}",
            size_of::<abi::uct_worker_t>()
        ));
    }
    field!(errors, abi::uct_worker_t, 0, 136, progress_q);
    report(errors);
}
