//! Stub interfaces (`UCT_IFACE_OPEN_MODE_STUB`, UCX 1.20 on): an iface of no
//! transport, opened without md or worker, whose operations answer the
//! status given at open (`params->mode.stub.status`). UCX's `libucp` (1.22)
//! opens one under every proxy endpoint and then installs its own public
//! operations in the table; the v2 entry points that go through the iface's
//! internal operations get the stub status, as UCX's stub iface answers.

use std::ffi::c_uint;

use crate::abi::*;
use crate::core::c_boundary::{FromC, MaskedOut};
use crate::core::iface::{query_v2_defaults, IfaceInternalOps, PerfEstimate, PurgeRequest};
use crate::core::ops::unsupported_iface_ops;
use crate::uct::iface::{IfaceBase, TRANSPORT_INTERNAL_OPS};

#[repr(C)]
struct StubIface {
    /// An AM table like any iface's (UCP may install handlers on it).
    base: IfaceBase,
    status: ucs_status_t,
}

/// The stub status of `iface`.
///
/// # Safety
/// `iface` is a live stub iface (its internal ops are [`STUB_INTERNAL_OPS`],
/// which only stub ifaces carry).
unsafe fn stub_status(iface: uct_iface_h) -> Result<(), Status> {
    // SAFETY: by the contract.
    let status = unsafe { (*(iface as *const StubIface)).status };
    result_of(status)
}

mod stub_ops {
    use super::*;

    pub unsafe fn iface_query_v2(
        _: uct_iface_h,
        attr: *mut uct_iface_attr_v2_t,
    ) -> Result<(), Status> {
        // SAFETY: the entry point checked `attr`: non-NULL, valid for its
        // field mask.
        query_v2_defaults(&unsafe { MaskedOut::from_c(attr) })
    }
    pub unsafe fn iface_is_reachable_v2(
        _: uct_iface_h,
        _: &uct_iface_is_reachable_params_t,
    ) -> bool {
        false
    }
    /// The ep operations: each answers the stub status of the ep's iface.
    macro_rules! ep_stub_ops {
        ($($name:ident($($arg:ty),*);)*) => {$(
            pub unsafe fn $name(ep: uct_ep_h $(, _: $arg)*) -> Result<(), Status> {
                // SAFETY: dispatched only for eps of stub ifaces, and an ep
                // starts with its iface.
                unsafe { stub_status((*ep.cast::<uct_ep>()).iface) }
            }
        )*};
    }

    ep_stub_ops! {
        ep_query(*mut uct_ep_attr_t);
        ep_invalidate(c_uint);
        ep_failover_enable();
        ep_outstanding_purge(PurgeRequest<'_>);
        ep_connect_to_ep_v2(*const uct_device_addr_t, *const uct_ep_addr_t, &uct_ep_connect_to_ep_params_t);
    }

    pub unsafe fn ep_is_connected(_: uct_ep_h, _: &uct_ep_is_connected_params_t) -> bool {
        false
    }
    pub unsafe fn iface_estimate_perf(
        iface: uct_iface_h,
        _: Option<uct_ep_operation_t>,
    ) -> Result<PerfEstimate, Status> {
        // SAFETY: dispatched only for stub ifaces. A stub status of UCS_OK
        // still estimates nothing.
        unsafe { stub_status(iface) }.and(Err(Status::Unsupported))
    }
}

static STUB_INTERNAL_OPS: IfaceInternalOps = IfaceInternalOps {
    iface_query_v2: stub_ops::iface_query_v2,
    iface_is_reachable_v2: stub_ops::iface_is_reachable_v2,
    ep_query: stub_ops::ep_query,
    ep_invalidate: stub_ops::ep_invalidate,
    ep_failover_enable: stub_ops::ep_failover_enable,
    ep_outstanding_purge: stub_ops::ep_outstanding_purge,
    ep_connect_to_ep_v2: stub_ops::ep_connect_to_ep_v2,
    ep_is_connected: stub_ops::ep_is_connected,
    iface_estimate_perf: stub_ops::iface_estimate_perf,
    ..TRANSPORT_INTERNAL_OPS
};

/// `iface_close` of a stub iface.
unsafe extern "C" fn stub_iface_close(iface: uct_iface_h) {
    if iface.is_null() {
        return;
    }
    // SAFETY: this slot is installed only in stub ifaces, which are boxed
    // StubIfaces; the caller closes each once.
    let mut stub = unsafe { Box::from_raw(iface as *mut StubIface) };
    stub.base.head.invalidate();
}

/// A new stub iface answering `status`.
pub(crate) fn open(status: ucs_status_t) -> uct_iface_h {
    let ops = uct_iface_ops_t {
        iface_close: Some(stub_iface_close),
        ..unsupported_iface_ops()
    };
    let stub = Box::new(StubIface {
        base: IfaceBase::new(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            ops,
            &STUB_INTERNAL_OPS,
            UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_CB_ASYNC,
        ),
        status,
    });
    Box::into_raw(stub) as uct_iface_h
}
