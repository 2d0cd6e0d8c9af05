/*
 * Prints the ABI facts of the UCT/UCS headers it is compiled against, one per
 * line: "size TYPE BYTES", "field TYPE MEMBER OFFSET BYTES", "const NAME VALUE"
 * (values modulo 2^64). Built twice: against our generated include/ and
 * against Debian's UCX 1.13 headers (with UCT_ABI_UCX113 defined, which hides
 * what 1.13 does not have). abi_compare checks the two tables and
 * master_layout.txt against each other.
 *
 * Generated from the UCX layout data by the h1 tooling; edit by regenerating.
 */
#include <stddef.h>
#include <stdio.h>

#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>
#include <ucs/memory/memory_type.h>
#include <ucs/type/status.h>
#include <ucs/type/thread_mode.h>
#include <ucs/datastruct/callbackq.h>
#ifndef UCT_ABI_UCX113
#include <uct/api/v2/uct_v2.h>
#endif

#define SIZE(_key, _type) \
    printf("size %s %zu\n", _key, sizeof(_type))
#define FIELD(_key, _type, _member) \
    printf("field %s %s %zu %zu\n", _key, #_member, offsetof(_type, _member), \
           sizeof(((_type*)0)->_member))
#define CONST(_name) \
    printf("const %s %llu\n", #_name, (unsigned long long)(_name))

int main(void)
{
    SIZE("ucs_callbackq", struct ucs_callbackq);
    FIELD("ucs_callbackq", struct ucs_callbackq, fast_elems);
    FIELD("ucs_callbackq", struct ucs_callbackq, priv);
    SIZE("ucs_callbackq_elem", struct ucs_callbackq_elem);
    FIELD("ucs_callbackq_elem", struct ucs_callbackq_elem, cb);
    FIELD("ucs_callbackq_elem", struct ucs_callbackq_elem, arg);
    SIZE("uct_allocated_memory_t", uct_allocated_memory_t);
    FIELD("uct_allocated_memory_t", uct_allocated_memory_t, address);
    FIELD("uct_allocated_memory_t", uct_allocated_memory_t, length);
    FIELD("uct_allocated_memory_t", uct_allocated_memory_t, method);
    FIELD("uct_allocated_memory_t", uct_allocated_memory_t, mem_type);
    FIELD("uct_allocated_memory_t", uct_allocated_memory_t, md);
    FIELD("uct_allocated_memory_t", uct_allocated_memory_t, memh);
#ifndef UCT_ABI_UCX113
    FIELD("uct_allocated_memory_t", uct_allocated_memory_t, sys_device);
#endif
    SIZE("uct_cm_attr", struct uct_cm_attr);
    FIELD("uct_cm_attr", struct uct_cm_attr, field_mask);
    FIELD("uct_cm_attr", struct uct_cm_attr, max_conn_priv);
    SIZE("uct_cm_ep_client_connect_args_t", uct_cm_ep_client_connect_args_t);
    FIELD("uct_cm_ep_client_connect_args_t", uct_cm_ep_client_connect_args_t, field_mask);
    FIELD("uct_cm_ep_client_connect_args_t", uct_cm_ep_client_connect_args_t, remote_data);
    FIELD("uct_cm_ep_client_connect_args_t", uct_cm_ep_client_connect_args_t, status);
    SIZE("uct_cm_ep_priv_data_pack_args_t", uct_cm_ep_priv_data_pack_args_t);
    FIELD("uct_cm_ep_priv_data_pack_args_t", uct_cm_ep_priv_data_pack_args_t, field_mask);
    FIELD("uct_cm_ep_priv_data_pack_args_t", uct_cm_ep_priv_data_pack_args_t, dev_name);
    SIZE("uct_cm_ep_resolve_args_t", uct_cm_ep_resolve_args_t);
    FIELD("uct_cm_ep_resolve_args_t", uct_cm_ep_resolve_args_t, field_mask);
    FIELD("uct_cm_ep_resolve_args_t", uct_cm_ep_resolve_args_t, dev_name);
    FIELD("uct_cm_ep_resolve_args_t", uct_cm_ep_resolve_args_t, status);
    SIZE("uct_cm_ep_server_conn_notify_args_t", uct_cm_ep_server_conn_notify_args_t);
    FIELD("uct_cm_ep_server_conn_notify_args_t", uct_cm_ep_server_conn_notify_args_t, field_mask);
    FIELD("uct_cm_ep_server_conn_notify_args_t", uct_cm_ep_server_conn_notify_args_t, status);
    SIZE("uct_cm_listener_conn_request_args_t", uct_cm_listener_conn_request_args_t);
    FIELD("uct_cm_listener_conn_request_args_t", uct_cm_listener_conn_request_args_t, field_mask);
    FIELD("uct_cm_listener_conn_request_args_t", uct_cm_listener_conn_request_args_t, dev_name);
    FIELD("uct_cm_listener_conn_request_args_t", uct_cm_listener_conn_request_args_t, conn_request);
    FIELD("uct_cm_listener_conn_request_args_t", uct_cm_listener_conn_request_args_t, remote_data);
    FIELD("uct_cm_listener_conn_request_args_t", uct_cm_listener_conn_request_args_t, client_address);
    SIZE("uct_cm_remote_data_t", uct_cm_remote_data_t);
    FIELD("uct_cm_remote_data_t", uct_cm_remote_data_t, field_mask);
    FIELD("uct_cm_remote_data_t", uct_cm_remote_data_t, dev_addr);
    FIELD("uct_cm_remote_data_t", uct_cm_remote_data_t, dev_addr_length);
    FIELD("uct_cm_remote_data_t", uct_cm_remote_data_t, conn_priv_data);
    FIELD("uct_cm_remote_data_t", uct_cm_remote_data_t, conn_priv_data_length);
    SIZE("uct_completion", struct uct_completion);
    FIELD("uct_completion", struct uct_completion, func);
    FIELD("uct_completion", struct uct_completion, count);
    FIELD("uct_completion", struct uct_completion, status);
    SIZE("uct_component_attr_t", uct_component_attr_t);
    FIELD("uct_component_attr_t", uct_component_attr_t, field_mask);
    FIELD("uct_component_attr_t", uct_component_attr_t, name);
    FIELD("uct_component_attr_t", uct_component_attr_t, md_resource_count);
    FIELD("uct_component_attr_t", uct_component_attr_t, md_resources);
    FIELD("uct_component_attr_t", uct_component_attr_t, flags);
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_attr", struct uct_ep_attr);
    FIELD("uct_ep_attr", struct uct_ep_attr, field_mask);
    FIELD("uct_ep_attr", struct uct_ep_attr, local_address);
    FIELD("uct_ep_attr", struct uct_ep_attr, remote_address);
    FIELD("uct_ep_attr", struct uct_ep_attr, tx_token);
#endif
    SIZE("uct_ep_connect_params", struct uct_ep_connect_params);
    FIELD("uct_ep_connect_params", struct uct_ep_connect_params, field_mask);
    FIELD("uct_ep_connect_params", struct uct_ep_connect_params, private_data);
    FIELD("uct_ep_connect_params", struct uct_ep_connect_params, private_data_length);
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_connect_to_ep_params_t", uct_ep_connect_to_ep_params_t);
    FIELD("uct_ep_connect_to_ep_params_t", uct_ep_connect_to_ep_params_t, field_mask);
    FIELD("uct_ep_connect_to_ep_params_t", uct_ep_connect_to_ep_params_t, device_addr_length);
    FIELD("uct_ep_connect_to_ep_params_t", uct_ep_connect_to_ep_params_t, ep_addr_length);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_invalidate_params_t", uct_ep_invalidate_params_t);
    FIELD("uct_ep_invalidate_params_t", uct_ep_invalidate_params_t, field_mask);
    FIELD("uct_ep_invalidate_params_t", uct_ep_invalidate_params_t, flags);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_is_connected_params_t", uct_ep_is_connected_params_t);
    FIELD("uct_ep_is_connected_params_t", uct_ep_is_connected_params_t, field_mask);
    FIELD("uct_ep_is_connected_params_t", uct_ep_is_connected_params_t, device_addr);
    FIELD("uct_ep_is_connected_params_t", uct_ep_is_connected_params_t, iface_addr);
    FIELD("uct_ep_is_connected_params_t", uct_ep_is_connected_params_t, ep_addr);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_op_info_t", uct_ep_op_info_t);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, field_mask);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, operation);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, comp);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.field_mask);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.am_id);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.flags);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.header);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.header.value);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.header.zcopy);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.header.zcopy.buffer);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.header.zcopy.length);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.payload);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.payload.data);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.payload.data.buffer);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.payload.data.length);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.payload.zcopy);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.payload.zcopy.iov);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, am.payload.zcopy.iovcnt);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.field_mask);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.remote_addr);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.rkey);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.data);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.data.buffer);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.data.length);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.zcopy);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.zcopy.iov);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.zcopy.iovcnt);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.unpack);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.unpack.unpack_cb);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.unpack.arg);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, rma.payload.unpack.length);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, flush);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, flush.field_mask);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, flush.flags);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, atomic);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, atomic.field_mask);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, atomic.op);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, atomic.remote_addr);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, atomic.rkey);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, atomic.value);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, atomic.compare);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, atomic.result);
    FIELD("uct_ep_op_info_t", uct_ep_op_info_t, atomic.size);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_outstanding_purge_params_t", uct_ep_outstanding_purge_params_t);
    FIELD("uct_ep_outstanding_purge_params_t", uct_ep_outstanding_purge_params_t, field_mask);
    FIELD("uct_ep_outstanding_purge_params_t", uct_ep_outstanding_purge_params_t, rx_token);
    FIELD("uct_ep_outstanding_purge_params_t", uct_ep_outstanding_purge_params_t, cb);
    FIELD("uct_ep_outstanding_purge_params_t", uct_ep_outstanding_purge_params_t, arg);
#endif
    SIZE("uct_ep_params", struct uct_ep_params);
    FIELD("uct_ep_params", struct uct_ep_params, field_mask);
    FIELD("uct_ep_params", struct uct_ep_params, iface);
    FIELD("uct_ep_params", struct uct_ep_params, user_data);
    FIELD("uct_ep_params", struct uct_ep_params, dev_addr);
    FIELD("uct_ep_params", struct uct_ep_params, iface_addr);
    FIELD("uct_ep_params", struct uct_ep_params, sockaddr);
    FIELD("uct_ep_params", struct uct_ep_params, sockaddr_cb_flags);
    FIELD("uct_ep_params", struct uct_ep_params, sockaddr_pack_cb);
    FIELD("uct_ep_params", struct uct_ep_params, cm);
    FIELD("uct_ep_params", struct uct_ep_params, conn_request);
    FIELD("uct_ep_params", struct uct_ep_params, sockaddr_cb_client);
    FIELD("uct_ep_params", struct uct_ep_params, sockaddr_cb_server);
    FIELD("uct_ep_params", struct uct_ep_params, disconnect_cb);
    FIELD("uct_ep_params", struct uct_ep_params, path_index);
    FIELD("uct_ep_params", struct uct_ep_params, cm_resolve_cb);
    FIELD("uct_ep_params", struct uct_ep_params, private_data);
    FIELD("uct_ep_params", struct uct_ep_params, private_data_length);
    FIELD("uct_ep_params", struct uct_ep_params, local_sockaddr);
#ifndef UCT_ABI_UCX113
    FIELD("uct_ep_params", struct uct_ep_params, dev_addr_length);
#endif
#ifndef UCT_ABI_UCX113
    FIELD("uct_ep_params", struct uct_ep_params, iface_addr_length);
#endif
    SIZE("uct_ep_t", uct_ep_t);
    FIELD("uct_ep_t", uct_ep_t, iface);
    SIZE("uct_iface_attr", struct uct_iface_attr);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.put);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.put.max_short);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.put.max_bcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.put.min_zcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.put.max_zcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.put.opt_zcopy_align);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.put.align_mtu);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.put.max_iov);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.get);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.get.max_short);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.get.max_bcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.get.min_zcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.get.max_zcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.get.opt_zcopy_align);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.get.align_mtu);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.get.max_iov);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.am);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.am.max_short);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.am.max_bcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.am.min_zcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.am.max_zcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.am.opt_zcopy_align);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.am.align_mtu);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.am.max_hdr);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.am.max_iov);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.recv);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.recv.min_recv);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.recv.max_zcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.recv.max_iov);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.recv.max_outstanding);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.eager);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.eager.max_short);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.eager.max_bcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.eager.max_zcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.eager.max_iov);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.rndv);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.rndv.max_zcopy);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.rndv.max_hdr);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.tag.rndv.max_iov);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.atomic32);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.atomic32.op_flags);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.atomic32.fop_flags);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.atomic64);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.atomic64.op_flags);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.atomic64.fop_flags);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.flags);
    FIELD("uct_iface_attr", struct uct_iface_attr, cap.event_flags);
    FIELD("uct_iface_attr", struct uct_iface_attr, device_addr_len);
    FIELD("uct_iface_attr", struct uct_iface_attr, iface_addr_len);
    FIELD("uct_iface_attr", struct uct_iface_attr, ep_addr_len);
    FIELD("uct_iface_attr", struct uct_iface_attr, max_conn_priv);
    FIELD("uct_iface_attr", struct uct_iface_attr, listen_sockaddr);
    FIELD("uct_iface_attr", struct uct_iface_attr, overhead);
    FIELD("uct_iface_attr", struct uct_iface_attr, bandwidth);
    FIELD("uct_iface_attr", struct uct_iface_attr, latency);
    FIELD("uct_iface_attr", struct uct_iface_attr, priority);
    FIELD("uct_iface_attr", struct uct_iface_attr, max_num_eps);
    FIELD("uct_iface_attr", struct uct_iface_attr, dev_num_paths);
#ifndef UCT_ABI_UCX113
    FIELD("uct_iface_attr", struct uct_iface_attr, ctl_device);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_iface_attr_v2_t", uct_iface_attr_v2_t);
    FIELD("uct_iface_attr_v2_t", uct_iface_attr_v2_t, field_mask);
    FIELD("uct_iface_attr_v2_t", uct_iface_attr_v2_t, max_put_sgl_zcopy_count);
    FIELD("uct_iface_attr_v2_t", uct_iface_attr_v2_t, max_get_sgl_zcopy_count);
    FIELD("uct_iface_attr_v2_t", uct_iface_attr_v2_t, cap);
    FIELD("uct_iface_attr_v2_t", uct_iface_attr_v2_t, cap.flags);
    FIELD("uct_iface_attr_v2_t", uct_iface_attr_v2_t, tx_token_length);
    FIELD("uct_iface_attr_v2_t", uct_iface_attr_v2_t, rx_token_length);
    FIELD("uct_iface_attr_v2_t", uct_iface_attr_v2_t, tx_token);
    FIELD("uct_iface_attr_v2_t", uct_iface_attr_v2_t, rx_token);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_iface_is_reachable_params_t", uct_iface_is_reachable_params_t);
    FIELD("uct_iface_is_reachable_params_t", uct_iface_is_reachable_params_t, field_mask);
    FIELD("uct_iface_is_reachable_params_t", uct_iface_is_reachable_params_t, device_addr);
    FIELD("uct_iface_is_reachable_params_t", uct_iface_is_reachable_params_t, iface_addr);
    FIELD("uct_iface_is_reachable_params_t", uct_iface_is_reachable_params_t, info_string);
    FIELD("uct_iface_is_reachable_params_t", uct_iface_is_reachable_params_t, info_string_length);
    FIELD("uct_iface_is_reachable_params_t", uct_iface_is_reachable_params_t, scope);
    FIELD("uct_iface_is_reachable_params_t", uct_iface_is_reachable_params_t, device_addr_length);
    FIELD("uct_iface_is_reachable_params_t", uct_iface_is_reachable_params_t, iface_addr_length);
#endif
    SIZE("uct_iface_ops_t", uct_iface_ops_t);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_put_short);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_put_bcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_put_zcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_get_short);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_get_bcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_get_zcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_am_short);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_am_short_iov);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_am_bcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_am_zcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_atomic_cswap64);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_atomic_cswap32);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_atomic32_post);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_atomic64_post);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_atomic32_fetch);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_atomic64_fetch);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_tag_eager_short);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_tag_eager_bcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_tag_eager_zcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_tag_rndv_zcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_tag_rndv_cancel);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_tag_rndv_request);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_tag_recv_zcopy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_tag_recv_cancel);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_pending_add);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_pending_purge);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_flush);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_fence);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_check);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_create);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_connect);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_disconnect);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, cm_ep_conn_notify);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_destroy);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_get_address);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, ep_connect_to_ep);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_accept);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_reject);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_flush);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_fence);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_progress_enable);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_progress_disable);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_progress);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_event_fd_get);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_event_arm);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_close);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_query);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_get_device_address);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_get_address);
    FIELD("uct_iface_ops_t", uct_iface_ops_t, iface_is_reachable);
    SIZE("uct_iface_params", struct uct_iface_params);
    FIELD("uct_iface_params", struct uct_iface_params, field_mask);
    FIELD("uct_iface_params", struct uct_iface_params, cpu_mask);
    FIELD("uct_iface_params", struct uct_iface_params, open_mode);
    FIELD("uct_iface_params", struct uct_iface_params, mode);
    FIELD("uct_iface_params", struct uct_iface_params, mode.device);
    FIELD("uct_iface_params", struct uct_iface_params, mode.device.tl_name);
    FIELD("uct_iface_params", struct uct_iface_params, mode.device.dev_name);
    FIELD("uct_iface_params", struct uct_iface_params, mode.sockaddr);
    FIELD("uct_iface_params", struct uct_iface_params, mode.sockaddr.listen_sockaddr);
    FIELD("uct_iface_params", struct uct_iface_params, mode.sockaddr.conn_request_arg);
    FIELD("uct_iface_params", struct uct_iface_params, mode.sockaddr.conn_request_cb);
    FIELD("uct_iface_params", struct uct_iface_params, mode.sockaddr.cb_flags);
#ifndef UCT_ABI_UCX113
    FIELD("uct_iface_params", struct uct_iface_params, mode.stub);
#endif
#ifndef UCT_ABI_UCX113
    FIELD("uct_iface_params", struct uct_iface_params, mode.stub.status);
#endif
    FIELD("uct_iface_params", struct uct_iface_params, stats_root);
    FIELD("uct_iface_params", struct uct_iface_params, rx_headroom);
    FIELD("uct_iface_params", struct uct_iface_params, err_handler_arg);
    FIELD("uct_iface_params", struct uct_iface_params, err_handler);
    FIELD("uct_iface_params", struct uct_iface_params, err_handler_flags);
    FIELD("uct_iface_params", struct uct_iface_params, eager_arg);
    FIELD("uct_iface_params", struct uct_iface_params, eager_cb);
    FIELD("uct_iface_params", struct uct_iface_params, rndv_arg);
    FIELD("uct_iface_params", struct uct_iface_params, rndv_cb);
    FIELD("uct_iface_params", struct uct_iface_params, async_event_arg);
    FIELD("uct_iface_params", struct uct_iface_params, async_event_cb);
    FIELD("uct_iface_params", struct uct_iface_params, keepalive_interval);
    FIELD("uct_iface_params", struct uct_iface_params, am_alignment);
    FIELD("uct_iface_params", struct uct_iface_params, am_align_offset);
    FIELD("uct_iface_params", struct uct_iface_params, features);
    SIZE("uct_iface_t", uct_iface_t);
    FIELD("uct_iface_t", uct_iface_t, ops);
    SIZE("uct_iov_t", uct_iov_t);
    FIELD("uct_iov_t", uct_iov_t, buffer);
    FIELD("uct_iov_t", uct_iov_t, length);
    FIELD("uct_iov_t", uct_iov_t, memh);
    FIELD("uct_iov_t", uct_iov_t, stride);
    FIELD("uct_iov_t", uct_iov_t, count);
    SIZE("uct_listener_attr", struct uct_listener_attr);
    FIELD("uct_listener_attr", struct uct_listener_attr, field_mask);
    FIELD("uct_listener_attr", struct uct_listener_attr, sockaddr);
    SIZE("uct_listener_params", struct uct_listener_params);
    FIELD("uct_listener_params", struct uct_listener_params, field_mask);
    FIELD("uct_listener_params", struct uct_listener_params, backlog);
    FIELD("uct_listener_params", struct uct_listener_params, conn_request_cb);
    FIELD("uct_listener_params", struct uct_listener_params, user_data);
    SIZE("uct_listener_t", uct_listener_t);
    FIELD("uct_listener_t", uct_listener_t, cm);
    SIZE("uct_md_attr", struct uct_md_attr);
    FIELD("uct_md_attr", struct uct_md_attr, cap);
    FIELD("uct_md_attr", struct uct_md_attr, cap.max_alloc);
    FIELD("uct_md_attr", struct uct_md_attr, cap.max_reg);
    FIELD("uct_md_attr", struct uct_md_attr, cap.flags);
    FIELD("uct_md_attr", struct uct_md_attr, cap.reg_mem_types);
    FIELD("uct_md_attr", struct uct_md_attr, cap.detect_mem_types);
    FIELD("uct_md_attr", struct uct_md_attr, cap.alloc_mem_types);
    FIELD("uct_md_attr", struct uct_md_attr, cap.access_mem_types);
    FIELD("uct_md_attr", struct uct_md_attr, reg_cost);
    FIELD("uct_md_attr", struct uct_md_attr, component_name);
    FIELD("uct_md_attr", struct uct_md_attr, rkey_packed_size);
    FIELD("uct_md_attr", struct uct_md_attr, local_cpus);
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_attr_v2_t", uct_md_attr_v2_t);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, field_mask);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, max_alloc);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, max_reg);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, flags);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, reg_mem_types);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, reg_nonblock_mem_types);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, cache_mem_types);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, gva_mem_types);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, detect_mem_types);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, alloc_mem_types);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, access_mem_types);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, dmabuf_mem_types);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, reg_cost);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, component_name);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, rkey_packed_size);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, local_cpus);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, exported_mkey_packed_size);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, global_id);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, reg_alignment);
    FIELD("uct_md_attr_v2_t", uct_md_attr_v2_t, required_mem_flags);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_attach_params_t", uct_md_mem_attach_params_t);
    FIELD("uct_md_mem_attach_params_t", uct_md_mem_attach_params_t, field_mask);
    FIELD("uct_md_mem_attach_params_t", uct_md_mem_attach_params_t, flags);
    FIELD("uct_md_mem_attach_params_t", uct_md_mem_attach_params_t, mkey_size);
#endif
    SIZE("uct_md_mem_attr_t", uct_md_mem_attr_t);
    FIELD("uct_md_mem_attr_t", uct_md_mem_attr_t, field_mask);
    FIELD("uct_md_mem_attr_t", uct_md_mem_attr_t, mem_type);
    FIELD("uct_md_mem_attr_t", uct_md_mem_attr_t, sys_dev);
    FIELD("uct_md_mem_attr_t", uct_md_mem_attr_t, base_address);
    FIELD("uct_md_mem_attr_t", uct_md_mem_attr_t, alloc_length);
#ifndef UCT_ABI_UCX113
    FIELD("uct_md_mem_attr_t", uct_md_mem_attr_t, dmabuf_fd);
#endif
#ifndef UCT_ABI_UCX113
    FIELD("uct_md_mem_attr_t", uct_md_mem_attr_t, dmabuf_offset);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_attr_v2_t", uct_md_mem_attr_v2_t);
    FIELD("uct_md_mem_attr_v2_t", uct_md_mem_attr_v2_t, field_mask);
    FIELD("uct_md_mem_attr_v2_t", uct_md_mem_attr_v2_t, mem_type);
    FIELD("uct_md_mem_attr_v2_t", uct_md_mem_attr_v2_t, sys_dev);
    FIELD("uct_md_mem_attr_v2_t", uct_md_mem_attr_v2_t, base_address);
    FIELD("uct_md_mem_attr_v2_t", uct_md_mem_attr_v2_t, alloc_length);
    FIELD("uct_md_mem_attr_v2_t", uct_md_mem_attr_v2_t, dmabuf_fd);
    FIELD("uct_md_mem_attr_v2_t", uct_md_mem_attr_v2_t, dmabuf_offset);
    FIELD("uct_md_mem_attr_v2_t", uct_md_mem_attr_v2_t, mem_flags);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_dereg_params_t", uct_md_mem_dereg_params_t);
    FIELD("uct_md_mem_dereg_params_t", uct_md_mem_dereg_params_t, field_mask);
    FIELD("uct_md_mem_dereg_params_t", uct_md_mem_dereg_params_t, flags);
    FIELD("uct_md_mem_dereg_params_t", uct_md_mem_dereg_params_t, memh);
    FIELD("uct_md_mem_dereg_params_t", uct_md_mem_dereg_params_t, comp);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_reg_params_t", uct_md_mem_reg_params_t);
    FIELD("uct_md_mem_reg_params_t", uct_md_mem_reg_params_t, field_mask);
    FIELD("uct_md_mem_reg_params_t", uct_md_mem_reg_params_t, flags);
    FIELD("uct_md_mem_reg_params_t", uct_md_mem_reg_params_t, dmabuf_fd);
    FIELD("uct_md_mem_reg_params_t", uct_md_mem_reg_params_t, dmabuf_offset);
    FIELD("uct_md_mem_reg_params_t", uct_md_mem_reg_params_t, mem_type);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mkey_pack_params_t", uct_md_mkey_pack_params_t);
    FIELD("uct_md_mkey_pack_params_t", uct_md_mkey_pack_params_t, field_mask);
    FIELD("uct_md_mkey_pack_params_t", uct_md_mkey_pack_params_t, flags);
#endif
    SIZE("uct_md_resource_desc_t", uct_md_resource_desc_t);
    FIELD("uct_md_resource_desc_t", uct_md_resource_desc_t, md_name);
    SIZE("uct_mem_alloc_params_t", uct_mem_alloc_params_t);
    FIELD("uct_mem_alloc_params_t", uct_mem_alloc_params_t, field_mask);
    FIELD("uct_mem_alloc_params_t", uct_mem_alloc_params_t, flags);
    FIELD("uct_mem_alloc_params_t", uct_mem_alloc_params_t, address);
    FIELD("uct_mem_alloc_params_t", uct_mem_alloc_params_t, mem_type);
    FIELD("uct_mem_alloc_params_t", uct_mem_alloc_params_t, mds);
    FIELD("uct_mem_alloc_params_t", uct_mem_alloc_params_t, mds.mds);
    FIELD("uct_mem_alloc_params_t", uct_mem_alloc_params_t, mds.count);
    FIELD("uct_mem_alloc_params_t", uct_mem_alloc_params_t, name);
#ifndef UCT_ABI_UCX113
    FIELD("uct_mem_alloc_params_t", uct_mem_alloc_params_t, sys_device);
#endif
    SIZE("uct_pending_req", struct uct_pending_req);
    FIELD("uct_pending_req", struct uct_pending_req, func);
    FIELD("uct_pending_req", struct uct_pending_req, priv);
#ifndef UCT_ABI_UCX113
    SIZE("uct_perf_attr_t", uct_perf_attr_t);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, field_mask);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, operation);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, local_memory_type);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, remote_memory_type);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, local_sys_device);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, remote_sys_device);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, send_pre_overhead);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, send_post_overhead);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, recv_overhead);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, bandwidth);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, path_bandwidth);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, latency);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, max_inflight_eps);
    FIELD("uct_perf_attr_t", uct_perf_attr_t, flags);
#endif
    SIZE("uct_ppn_bandwidth_t", uct_ppn_bandwidth_t);
    FIELD("uct_ppn_bandwidth_t", uct_ppn_bandwidth_t, dedicated);
    FIELD("uct_ppn_bandwidth_t", uct_ppn_bandwidth_t, shared);
    SIZE("uct_recv_desc", struct uct_recv_desc);
    FIELD("uct_recv_desc", struct uct_recv_desc, cb);
    SIZE("uct_rkey_bundle_t", uct_rkey_bundle_t);
    FIELD("uct_rkey_bundle_t", uct_rkey_bundle_t, rkey);
    FIELD("uct_rkey_bundle_t", uct_rkey_bundle_t, handle);
    FIELD("uct_rkey_bundle_t", uct_rkey_bundle_t, type);
#ifndef UCT_ABI_UCX113
    SIZE("uct_rkey_compare_params_t", uct_rkey_compare_params_t);
    FIELD("uct_rkey_compare_params_t", uct_rkey_compare_params_t, field_mask);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_rkey_unpack_params_t", uct_rkey_unpack_params_t);
    FIELD("uct_rkey_unpack_params_t", uct_rkey_unpack_params_t, field_mask);
    FIELD("uct_rkey_unpack_params_t", uct_rkey_unpack_params_t, sys_device);
#endif
    SIZE("uct_tag_context", struct uct_tag_context);
    FIELD("uct_tag_context", struct uct_tag_context, tag_consumed_cb);
    FIELD("uct_tag_context", struct uct_tag_context, completed_cb);
    FIELD("uct_tag_context", struct uct_tag_context, rndv_cb);
    FIELD("uct_tag_context", struct uct_tag_context, priv);
    SIZE("uct_tl_resource_desc_t", uct_tl_resource_desc_t);
    FIELD("uct_tl_resource_desc_t", uct_tl_resource_desc_t, tl_name);
    FIELD("uct_tl_resource_desc_t", uct_tl_resource_desc_t, dev_name);
    FIELD("uct_tl_resource_desc_t", uct_tl_resource_desc_t, dev_type);
    FIELD("uct_tl_resource_desc_t", uct_tl_resource_desc_t, sys_device);
    SIZE("uct_worker_t", uct_worker_t);
    FIELD("uct_worker_t", uct_worker_t, progress_q);
    SIZE("ucs_async_mode_t", ucs_async_mode_t);
    SIZE("ucs_config_print_flags_t", ucs_config_print_flags_t);
    SIZE("ucs_cpu_mask_t", ucs_cpu_mask_t);
    SIZE("ucs_log_level_t", ucs_log_level_t);
#ifndef UCT_ABI_UCX113
    SIZE("ucs_mem_flags_t", ucs_mem_flags_t);
#endif
    SIZE("ucs_memory_type_t", ucs_memory_type_t);
    SIZE("ucs_status_ptr_t", ucs_status_ptr_t);
    SIZE("ucs_status_t", ucs_status_t);
    SIZE("ucs_sys_device_t", ucs_sys_device_t);
    SIZE("ucs_thread_mode_t", ucs_thread_mode_t);
    SIZE("ucs_time_t", ucs_time_t);
    SIZE("uct_alloc_method_t", uct_alloc_method_t);
    SIZE("uct_am_trace_type_t", uct_am_trace_type_t);
    SIZE("uct_atomic_op_t", uct_atomic_op_t);
    SIZE("uct_conn_request_h", uct_conn_request_h);
    SIZE("uct_device_type_t", uct_device_type_t);
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_connect_to_ep_param_field_t", uct_ep_connect_to_ep_param_field_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_is_connected_field_mask_t", uct_ep_is_connected_field_mask_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_op_info_am_field_t", uct_ep_op_info_am_field_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_op_info_atomic_field_t", uct_ep_op_info_atomic_field_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_op_info_field_t", uct_ep_op_info_field_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_op_info_flush_field_t", uct_ep_op_info_flush_field_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_op_info_rma_field_t", uct_ep_op_info_rma_field_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_operation_t", uct_ep_operation_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_ep_outstanding_purge_field_t", uct_ep_outstanding_purge_field_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_iface_is_reachable_field_mask_t", uct_iface_is_reachable_field_mask_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_iface_reachability_scope_t", uct_iface_reachability_scope_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_attr_field_t", uct_md_attr_field_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_flags_v2_t", uct_md_flags_v2_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_attach_field_mask_t", uct_md_mem_attach_field_mask_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_attach_flags_t", uct_md_mem_attach_flags_t);
#endif
    SIZE("uct_md_mem_attr_field_t", uct_md_mem_attr_field_t);
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_attr_v2_field_t", uct_md_mem_attr_v2_field_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_dereg_field_mask_t", uct_md_mem_dereg_field_mask_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_dereg_flags_t", uct_md_mem_dereg_flags_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mem_reg_field_mask_t", uct_md_mem_reg_field_mask_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mkey_pack_field_mask_t", uct_md_mkey_pack_field_mask_t);
#endif
#ifndef UCT_ABI_UCX113
    SIZE("uct_md_mkey_pack_flags_t", uct_md_mkey_pack_flags_t);
#endif
    SIZE("uct_mem_advice_t", uct_mem_advice_t);
    SIZE("uct_mem_alloc_params_field_t", uct_mem_alloc_params_field_t);
    SIZE("uct_mem_h", uct_mem_h);
#ifndef UCT_ABI_UCX113
    SIZE("uct_perf_attr_flags_t", uct_perf_attr_flags_t);
#endif
    SIZE("uct_rkey_t", uct_rkey_t);
#ifndef UCT_ABI_UCX113
    SIZE("uct_rkey_unpack_field_mask_t", uct_rkey_unpack_field_mask_t);
#endif
    SIZE("uct_sockaddr_accessibility_t", uct_sockaddr_accessibility_t);
    SIZE("uct_tag_t", uct_tag_t);
    SIZE("uct_worker_cb_id_t", uct_worker_cb_id_t);
    CONST(UCS_ASYNC_MODE_LAST);
    CONST(UCS_ASYNC_MODE_POLL);
    CONST(UCS_ASYNC_MODE_SIGNAL);
    CONST(UCS_ASYNC_MODE_THREAD);
    CONST(UCS_ASYNC_MODE_THREAD_MUTEX);
    CONST(UCS_ASYNC_MODE_THREAD_SPINLOCK);
    CONST(UCS_AUTO);
    CONST(UCS_CALLBACKQ_FAST_COUNT);
    CONST(UCS_CALLBACKQ_ID_NULL);
    CONST(UCS_CONFIG_ALLOW_LIST_ALLOW);
    CONST(UCS_CONFIG_ALLOW_LIST_ALLOW_ALL);
    CONST(UCS_CONFIG_ALLOW_LIST_NEGATE);
    CONST(UCS_CONFIG_AUTO);
    CONST(UCS_CONFIG_OFF);
    CONST(UCS_CONFIG_ON);
    CONST(UCS_CONFIG_ON_OFF_LAST);
    CONST(UCS_CONFIG_PRINT_COMMENT_DEFAULT);
    CONST(UCS_CONFIG_PRINT_CONFIG);
    CONST(UCS_CONFIG_PRINT_DOC);
    CONST(UCS_CONFIG_PRINT_HEADER);
    CONST(UCS_CONFIG_PRINT_HIDDEN);
    CONST(UCS_CPU_SETSIZE);
    CONST(UCS_ERR_ALREADY_EXISTS);
    CONST(UCS_ERR_BUFFER_TOO_SMALL);
    CONST(UCS_ERR_BUSY);
    CONST(UCS_ERR_CANCELED);
    CONST(UCS_ERR_CONNECTION_RESET);
    CONST(UCS_ERR_ENDPOINT_TIMEOUT);
    CONST(UCS_ERR_EXCEEDS_LIMIT);
    CONST(UCS_ERR_FIRST_ENDPOINT_FAILURE);
    CONST(UCS_ERR_FIRST_LINK_FAILURE);
    CONST(UCS_ERR_INVALID_ADDR);
    CONST(UCS_ERR_INVALID_PARAM);
    CONST(UCS_ERR_IO_ERROR);
    CONST(UCS_ERR_LAST);
    CONST(UCS_ERR_LAST_ENDPOINT_FAILURE);
    CONST(UCS_ERR_LAST_LINK_FAILURE);
    CONST(UCS_ERR_MESSAGE_TRUNCATED);
    CONST(UCS_ERR_NOT_CONNECTED);
    CONST(UCS_ERR_NOT_IMPLEMENTED);
    CONST(UCS_ERR_NO_DEVICE);
    CONST(UCS_ERR_NO_ELEM);
    CONST(UCS_ERR_NO_MEMORY);
    CONST(UCS_ERR_NO_MESSAGE);
    CONST(UCS_ERR_NO_PROGRESS);
    CONST(UCS_ERR_NO_RESOURCE);
    CONST(UCS_ERR_OUT_OF_RANGE);
    CONST(UCS_ERR_REJECTED);
    CONST(UCS_ERR_SHMEM_SEGMENT);
    CONST(UCS_ERR_SOME_CONNECTS_FAILED);
    CONST(UCS_ERR_TIMED_OUT);
    CONST(UCS_ERR_UNREACHABLE);
    CONST(UCS_ERR_UNSUPPORTED);
    CONST(UCS_EVENT_SET_EDGE_TRIGGERED);
    CONST(UCS_EVENT_SET_EVERR);
    CONST(UCS_EVENT_SET_EVREAD);
    CONST(UCS_EVENT_SET_EVWRITE);
    CONST(UCS_HANDLE_ERROR_BACKTRACE);
    CONST(UCS_HANDLE_ERROR_DEBUG);
    CONST(UCS_HANDLE_ERROR_FREEZE);
    CONST(UCS_HANDLE_ERROR_LAST);
    CONST(UCS_HANDLE_ERROR_NONE);
    CONST(UCS_INPROGRESS);
    CONST(UCS_LOG_LEVEL_DEBUG);
    CONST(UCS_LOG_LEVEL_DIAG);
    CONST(UCS_LOG_LEVEL_ERROR);
    CONST(UCS_LOG_LEVEL_FATAL);
    CONST(UCS_LOG_LEVEL_INFO);
    CONST(UCS_LOG_LEVEL_LAST);
    CONST(UCS_LOG_LEVEL_PRINT);
    CONST(UCS_LOG_LEVEL_TRACE);
    CONST(UCS_LOG_LEVEL_TRACE_ASYNC);
    CONST(UCS_LOG_LEVEL_TRACE_DATA);
    CONST(UCS_LOG_LEVEL_TRACE_FUNC);
    CONST(UCS_LOG_LEVEL_TRACE_POLL);
    CONST(UCS_LOG_LEVEL_TRACE_REQ);
    CONST(UCS_LOG_LEVEL_WARN);
    CONST(UCS_MEMORY_TYPES_CPU_ACCESSIBLE);
    CONST(UCS_MEMORY_TYPE_CUDA);
    CONST(UCS_MEMORY_TYPE_CUDA_MANAGED);
#ifndef UCT_ABI_UCX113
    CONST(UCS_MEMORY_TYPE_GAUDI);
#endif
    CONST(UCS_MEMORY_TYPE_HOST);
    CONST(UCS_MEMORY_TYPE_LAST);
#ifndef UCT_ABI_UCX113
    CONST(UCS_MEMORY_TYPE_RDMA);
#endif
    CONST(UCS_MEMORY_TYPE_ROCM);
    CONST(UCS_MEMORY_TYPE_ROCM_MANAGED);
    CONST(UCS_MEMORY_TYPE_UNKNOWN);
#ifndef UCT_ABI_UCX113
    CONST(UCS_MEMORY_TYPE_ZE_DEVICE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCS_MEMORY_TYPE_ZE_HOST);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCS_MEMORY_TYPE_ZE_MANAGED);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCS_MEM_FLAG_REGISTRABLE);
#endif
    CONST(UCS_NCPUBITS);
    CONST(UCS_NO);
    CONST(UCS_OK);
    CONST(UCS_SYS_DEVICE_ID_MAX);
    CONST(UCS_SYS_DEVICE_ID_UNKNOWN);
    CONST(UCS_TERNARY_LAST);
    CONST(UCS_THREAD_MODE_LAST);
    CONST(UCS_THREAD_MODE_MULTI);
    CONST(UCS_THREAD_MODE_SERIALIZED);
    CONST(UCS_THREAD_MODE_SINGLE);
    CONST(UCS_TRY);
    CONST(UCS_YES);
    CONST(UCT_ALLOC_METHOD_DEFAULT);
    CONST(UCT_ALLOC_METHOD_HEAP);
    CONST(UCT_ALLOC_METHOD_HUGE);
    CONST(UCT_ALLOC_METHOD_LAST);
    CONST(UCT_ALLOC_METHOD_MD);
    CONST(UCT_ALLOC_METHOD_MMAP);
    CONST(UCT_ALLOC_METHOD_THP);
    CONST(UCT_AM_ID_BITS);
    CONST(UCT_AM_ID_MAX);
    CONST(UCT_AM_TRACE_TYPE_LAST);
    CONST(UCT_AM_TRACE_TYPE_RECV);
    CONST(UCT_AM_TRACE_TYPE_RECV_DROP);
    CONST(UCT_AM_TRACE_TYPE_SEND);
    CONST(UCT_AM_TRACE_TYPE_SEND_DROP);
    CONST(UCT_ATOMIC_OP_ADD);
    CONST(UCT_ATOMIC_OP_AND);
    CONST(UCT_ATOMIC_OP_CSWAP);
    CONST(UCT_ATOMIC_OP_LAST);
    CONST(UCT_ATOMIC_OP_OR);
    CONST(UCT_ATOMIC_OP_SWAP);
    CONST(UCT_ATOMIC_OP_XOR);
    CONST(UCT_CB_FLAG_ASYNC);
    CONST(UCT_CB_FLAG_RESERVED);
    CONST(UCT_CB_PARAM_FLAG_DESC);
    CONST(UCT_CB_PARAM_FLAG_FIRST);
    CONST(UCT_CB_PARAM_FLAG_MORE);
    CONST(UCT_CM_ATTR_FIELD_MAX_CONN_PRIV);
    CONST(UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_REMOTE_DATA);
    CONST(UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_STATUS);
    CONST(UCT_CM_EP_PRIV_DATA_PACK_ARGS_FIELD_DEVICE_NAME);
    CONST(UCT_CM_EP_RESOLVE_ARGS_FIELD_DEV_NAME);
    CONST(UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS);
    CONST(UCT_CM_EP_SERVER_CONN_NOTIFY_ARGS_FIELD_STATUS);
    CONST(UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CLIENT_ADDR);
    CONST(UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CONN_REQUEST);
    CONST(UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_DEV_NAME);
    CONST(UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_REMOTE_DATA);
    CONST(UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA);
    CONST(UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH);
    CONST(UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR);
    CONST(UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH);
    CONST(UCT_COMPONENT_ATTR_FIELD_FLAGS);
    CONST(UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES);
    CONST(UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT);
    CONST(UCT_COMPONENT_ATTR_FIELD_NAME);
    CONST(UCT_COMPONENT_FLAG_CM);
#ifndef UCT_ABI_UCX113
    CONST(UCT_COMPONENT_FLAG_RKEY_PTR);
#endif
    CONST(UCT_COMPONENT_NAME_MAX);
    CONST(UCT_DEVICE_NAME_MAX);
    CONST(UCT_DEVICE_TYPE_ACC);
    CONST(UCT_DEVICE_TYPE_LAST);
    CONST(UCT_DEVICE_TYPE_NET);
    CONST(UCT_DEVICE_TYPE_SELF);
    CONST(UCT_DEVICE_TYPE_SHM);
#ifndef UCT_ABI_UCX113
    CONST(UCT_DMABUF_FD_INVALID);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_ATTR_FIELD_TX_TOKEN);
#endif
    CONST(UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA);
    CONST(UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH);
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_INVALIDATE_PARAM_FIELD_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_IS_CONNECTED_FIELD_EP_ADDR);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_AM_BCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_AM_SHORT);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_AM_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_ATOMIC_FETCH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_ATOMIC_POST);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_EAGER_BCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_EAGER_SHORT);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_EAGER_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_FLUSH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_GET_BCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_GET_SHORT);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_GET_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_AM_FIELD_AM_ID);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_AM_FIELD_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_AM_FIELD_HEADER_VALUE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_AM_FIELD_HEADER_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_DATA);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_AM_FIELD_PAYLOAD_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_ATOMIC_FIELD_COMPARE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_ATOMIC_FIELD_OP);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_ATOMIC_FIELD_REMOTE_ADDR);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_ATOMIC_FIELD_RESULT);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_ATOMIC_FIELD_RKEY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_ATOMIC_FIELD_SIZE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_ATOMIC_FIELD_VALUE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_FIELD_AM);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_FIELD_ATOMIC);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_FIELD_COMP);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_FIELD_FLUSH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_FIELD_OPERATION);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_FIELD_RMA);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_FLUSH_FIELD_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_DATA);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_UNPACK);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_RMA_FIELD_PAYLOAD_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_RMA_FIELD_REMOTE_ADDR);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_INFO_RMA_FIELD_RKEY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_LAST);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_PUT_BCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_PUT_SHORT);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_PUT_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OP_RNDV_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OUTSTANDING_FIELD_ARG);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OUTSTANDING_FIELD_CB);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_OUTSTANDING_FIELD_RX_TOKEN);
#endif
    CONST(UCT_EP_PARAM_FIELD_CM);
    CONST(UCT_EP_PARAM_FIELD_CM_RESOLVE_CB);
    CONST(UCT_EP_PARAM_FIELD_CONN_REQUEST);
    CONST(UCT_EP_PARAM_FIELD_DEV_ADDR);
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_PARAM_FIELD_DEV_ADDR_LENGTH);
#endif
    CONST(UCT_EP_PARAM_FIELD_IFACE);
    CONST(UCT_EP_PARAM_FIELD_IFACE_ADDR);
#ifndef UCT_ABI_UCX113
    CONST(UCT_EP_PARAM_FIELD_IFACE_ADDR_LENGTH);
#endif
    CONST(UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR);
    CONST(UCT_EP_PARAM_FIELD_PATH_INDEX);
    CONST(UCT_EP_PARAM_FIELD_PRIV_DATA);
    CONST(UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH);
    CONST(UCT_EP_PARAM_FIELD_SOCKADDR);
    CONST(UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS);
    CONST(UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT);
    CONST(UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB);
    CONST(UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER);
    CONST(UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB);
    CONST(UCT_EP_PARAM_FIELD_USER_DATA);
    CONST(UCT_EVENT_RECV);
    CONST(UCT_EVENT_RECV_SIG);
    CONST(UCT_EVENT_SEND_COMP);
#ifndef UCT_ABI_UCX113
    CONST(UCT_EVENT_SPEED_CHANGE);
#endif
    CONST(UCT_FLUSH_FLAG_CANCEL);
    CONST(UCT_FLUSH_FLAG_LOCAL);
#ifndef UCT_ABI_UCX113
    CONST(UCT_FLUSH_FLAG_REMOTE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_ATTR_FIELD_CAP_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_ATTR_FIELD_MAX_GET_SGL_ZCOPY_COUNT);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_ATTR_FIELD_RX_TOKEN);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_ATTR_FIELD_TX_TOKEN);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH);
#endif
    CONST(UCT_IFACE_FEATURE_AM);
    CONST(UCT_IFACE_FEATURE_AMO32);
    CONST(UCT_IFACE_FEATURE_AMO64);
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_FEATURE_FLUSH_REMOTE);
#endif
    CONST(UCT_IFACE_FEATURE_GET);
    CONST(UCT_IFACE_FEATURE_LAST);
    CONST(UCT_IFACE_FEATURE_PUT);
    CONST(UCT_IFACE_FEATURE_TAG);
    CONST(UCT_IFACE_FLAG_AM_BCOPY);
    CONST(UCT_IFACE_FLAG_AM_DUP);
    CONST(UCT_IFACE_FLAG_AM_SHORT);
    CONST(UCT_IFACE_FLAG_AM_ZCOPY);
    CONST(UCT_IFACE_FLAG_ATOMIC_CPU);
    CONST(UCT_IFACE_FLAG_ATOMIC_DEVICE);
    CONST(UCT_IFACE_FLAG_CB_ASYNC);
    CONST(UCT_IFACE_FLAG_CB_SYNC);
    CONST(UCT_IFACE_FLAG_CONNECT_TO_EP);
    CONST(UCT_IFACE_FLAG_CONNECT_TO_IFACE);
    CONST(UCT_IFACE_FLAG_CONNECT_TO_SOCKADDR);
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_FLAG_DEVICE_EP);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_FLAG_DEVICE_LKEY);
#endif
    CONST(UCT_IFACE_FLAG_EP_CHECK);
    CONST(UCT_IFACE_FLAG_EP_KEEPALIVE);
    CONST(UCT_IFACE_FLAG_ERRHANDLE_AM_ID);
    CONST(UCT_IFACE_FLAG_ERRHANDLE_BCOPY_BUF);
    CONST(UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN);
    CONST(UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE);
    CONST(UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM);
    CONST(UCT_IFACE_FLAG_ERRHANDLE_SHORT_BUF);
    CONST(UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF);
    CONST(UCT_IFACE_FLAG_EVENT_ASYNC_CB);
    CONST(UCT_IFACE_FLAG_EVENT_FD);
    CONST(UCT_IFACE_FLAG_EVENT_RECV);
    CONST(UCT_IFACE_FLAG_EVENT_RECV_SIG);
    CONST(UCT_IFACE_FLAG_EVENT_SEND_COMP);
    CONST(UCT_IFACE_FLAG_GET_BCOPY);
    CONST(UCT_IFACE_FLAG_GET_SHORT);
    CONST(UCT_IFACE_FLAG_GET_ZCOPY);
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_FLAG_INTER_NODE);
#endif
    CONST(UCT_IFACE_FLAG_PENDING);
    CONST(UCT_IFACE_FLAG_PUT_BCOPY);
    CONST(UCT_IFACE_FLAG_PUT_SHORT);
    CONST(UCT_IFACE_FLAG_PUT_ZCOPY);
    CONST(UCT_IFACE_FLAG_TAG_EAGER_BCOPY);
    CONST(UCT_IFACE_FLAG_TAG_EAGER_SHORT);
    CONST(UCT_IFACE_FLAG_TAG_EAGER_ZCOPY);
    CONST(UCT_IFACE_FLAG_TAG_RNDV_ZCOPY);
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_FLAG_V2_QUERY_TOKEN);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_IS_REACHABLE_FIELD_SCOPE);
#endif
    CONST(UCT_IFACE_OPEN_MODE_DEVICE);
    CONST(UCT_IFACE_OPEN_MODE_SOCKADDR_CLIENT);
    CONST(UCT_IFACE_OPEN_MODE_SOCKADDR_SERVER);
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_OPEN_MODE_STUB);
#endif
    CONST(UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT);
    CONST(UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET);
    CONST(UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_ARG);
    CONST(UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_CB);
    CONST(UCT_IFACE_PARAM_FIELD_CPU_MASK);
    CONST(UCT_IFACE_PARAM_FIELD_DEVICE);
    CONST(UCT_IFACE_PARAM_FIELD_ERR_HANDLER);
    CONST(UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG);
    CONST(UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS);
    CONST(UCT_IFACE_PARAM_FIELD_FEATURES);
    CONST(UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG);
    CONST(UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB);
    CONST(UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG);
    CONST(UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB);
    CONST(UCT_IFACE_PARAM_FIELD_KEEPALIVE_INTERVAL);
    CONST(UCT_IFACE_PARAM_FIELD_OPEN_MODE);
    CONST(UCT_IFACE_PARAM_FIELD_RX_HEADROOM);
    CONST(UCT_IFACE_PARAM_FIELD_SOCKADDR);
    CONST(UCT_IFACE_PARAM_FIELD_STATS_ROOT);
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_REACHABILITY_SCOPE_DEVICE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_IFACE_REACHABILITY_SCOPE_NETWORK);
#endif
    CONST(UCT_INVALID_RKEY);
    CONST(UCT_LISTENER_ATTR_FIELD_SOCKADDR);
    CONST(UCT_LISTENER_PARAM_FIELD_BACKLOG);
    CONST(UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB);
    CONST(UCT_LISTENER_PARAM_FIELD_USER_DATA);
    CONST(UCT_MADV_NORMAL);
    CONST(UCT_MADV_WILLNEED);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_COMPONENT_NAME);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_GLOBAL_ID);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_GVA_MEM_TYPES);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_LOCAL_CPUS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_MAX_ALLOC);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_MAX_REG);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_REG_ALIGNMENT);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_REG_COST);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_REG_MEM_TYPES);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE);
#endif
    CONST(UCT_MD_FLAG_ADVISE);
    CONST(UCT_MD_FLAG_ALLOC);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_FLAG_EXPORTED_MKEY);
#endif
    CONST(UCT_MD_FLAG_FIXED);
    CONST(UCT_MD_FLAG_INVALIDATE);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_FLAG_INVALIDATE_AMO);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_FLAG_INVALIDATE_RMA);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_FLAG_LAST);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_FLAG_MEMTYPE_COPY);
#endif
    CONST(UCT_MD_FLAG_NEED_MEMH);
    CONST(UCT_MD_FLAG_NEED_RKEY);
    CONST(UCT_MD_FLAG_REG);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_FLAG_REG_DMABUF);
#endif
    CONST(UCT_MD_FLAG_RKEY_PTR);
    CONST(UCT_MD_FLAG_SOCKADDR);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_FLAG_V2_FIRST);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_GLOBAL_ID_MAX);
#endif
    CONST(UCT_MD_MEM_ACCESS_ALL);
    CONST(UCT_MD_MEM_ACCESS_LOCAL_READ);
    CONST(UCT_MD_MEM_ACCESS_LOCAL_WRITE);
    CONST(UCT_MD_MEM_ACCESS_REMOTE_ATOMIC);
    CONST(UCT_MD_MEM_ACCESS_REMOTE_GET);
    CONST(UCT_MD_MEM_ACCESS_REMOTE_PUT);
    CONST(UCT_MD_MEM_ACCESS_RMA);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTACH_FIELD_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTACH_FIELD_MKEY_SIZE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTACH_FLAG_HIDE_ERRORS);
#endif
    CONST(UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH);
    CONST(UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTR_FIELD_DMABUF_FD);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET);
#endif
    CONST(UCT_MD_MEM_ATTR_FIELD_MEM_TYPE);
    CONST(UCT_MD_MEM_ATTR_FIELD_SYS_DEV);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_DEREG_FIELD_COMPLETION);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_DEREG_FIELD_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_DEREG_FIELD_MEMH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_DEREG_FLAG_INVALIDATE);
#endif
    CONST(UCT_MD_MEM_FLAG_FIXED);
    CONST(UCT_MD_MEM_FLAG_HIDE_ERRORS);
    CONST(UCT_MD_MEM_FLAG_LOCK);
    CONST(UCT_MD_MEM_FLAG_NONBLOCK);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_GVA);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_REG_FIELD_DMABUF_FD);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_REG_FIELD_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_REG_FIELD_MEM_TYPE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MEM_SYMMETRIC_RKEY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MKEY_PACK_FIELD_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MKEY_PACK_FLAG_EXPORT);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA);
#endif
    CONST(UCT_MD_NAME_MAX);
    CONST(UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS);
    CONST(UCT_MEM_ALLOC_PARAM_FIELD_FLAGS);
    CONST(UCT_MEM_ALLOC_PARAM_FIELD_MDS);
    CONST(UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE);
    CONST(UCT_MEM_ALLOC_PARAM_FIELD_NAME);
#ifndef UCT_ABI_UCX113
    CONST(UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE);
#endif
    CONST(UCT_PENDING_REQ_PRIV_LEN);
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_BANDWIDTH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_FLAGS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_LATENCY);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_OPERATION);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_RECV_OVERHEAD);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD);
#endif
#ifndef UCT_ABI_UCX113
    CONST(UCT_PERF_ATTR_FLAGS_TX_RX_SHARED);
#endif
    CONST(UCT_PROGRESS_RECV);
    CONST(UCT_PROGRESS_SEND);
    CONST(UCT_PROGRESS_THREAD_SAFE);
#ifndef UCT_ABI_UCX113
    CONST(UCT_RKEY_UNPACK_FIELD_SYS_DEVICE);
#endif
    CONST(UCT_SEND_FLAG_PEER_CHECK);
    CONST(UCT_SEND_FLAG_SIGNALED);
    CONST(UCT_SOCKADDR_ACC_LOCAL);
    CONST(UCT_SOCKADDR_ACC_REMOTE);
    CONST(UCT_TAG_PRIV_LEN);
    CONST(UCT_TAG_RECV_CB_INLINE_DATA);
    CONST(UCT_TL_NAME_MAX);
    return 0;
}
