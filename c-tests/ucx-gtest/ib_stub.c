/*
 * Stands in for UCX's libuct_ib.so when ucx_gtest.sh links UCX's gtest.
 *
 * Some UCT test objects call functions of UCX's own IB implementation
 * directly (address packing, QP creation, md open, ...). UCX's libuct_ib.so
 * cannot be loaded next to our libuct.so.0: it needs UCX-internal libuct
 * symbols that our library does not have, so the process would stop at load.
 * These definitions satisfy the link instead. Only the groups the driver leaves
 * out (run_groups.py, INTERNAL_GROUPS) reach them; a call means a group was
 * run that should not be, so it says which function and aborts.
 */
#include <stdio.h>
#include <stdlib.h>

/* The real prototypes differ; nothing here is ever called meaningfully. */
#define UCT_IB_STUB(_name) \
    void _name(void); \
    void _name(void) \
    { \
        fprintf(stderr, "ib_stub: %s() is UCX's libuct_ib.so internal, not linked in\n", \
                #_name); \
        abort(); \
    }

UCT_IB_STUB(uct_ib_address_pack)
UCT_IB_STUB(uct_ib_address_size)
UCT_IB_STUB(uct_ib_address_unpack)
UCT_IB_STUB(uct_ib_device_async_event_register)
UCT_IB_STUB(uct_ib_device_async_event_unregister)
UCT_IB_STUB(uct_ib_device_async_event_wait)
UCT_IB_STUB(uct_ib_device_is_accessible)
UCT_IB_STUB(uct_ib_device_is_gid_raw_empty)
UCT_IB_STUB(uct_ib_device_test_roce_gid_index)
UCT_IB_STUB(uct_ib_iface_address_pack)
UCT_IB_STUB(uct_ib_iface_address_pack_flags)
UCT_IB_STUB(uct_ib_iface_address_size)
UCT_IB_STUB(uct_ib_iface_fill_ah_attr_from_gid_lid)
UCT_IB_STUB(uct_ib_iface_init_roce_gid_info)
UCT_IB_STUB(uct_ib_iface_is_reachable)
UCT_IB_STUB(uct_ib_iface_is_roce)
UCT_IB_STUB(uct_ib_md_close)
UCT_IB_STUB(uct_ib_md_open)
UCT_IB_STUB(uct_ib_mlx5_destroy_qp)
UCT_IB_STUB(uct_ib_mlx5_devx_query_ooo_sl_mask)
UCT_IB_STUB(uct_ib_mlx5_modify_qp_state)
UCT_IB_STUB(uct_ib_mlx5_qp_mmio_cleanup)
UCT_IB_STUB(uct_ib_mlx5_select_sl)
UCT_IB_STUB(uct_ib_modify_qp)
UCT_IB_STUB(uct_ib_mtu_value)
UCT_IB_STUB(uct_ib_to_qp_fabric_time)
UCT_IB_STUB(uct_ib_to_rnr_fabric_time)
UCT_IB_STUB(uct_rc_ep_process_pending)
UCT_IB_STUB(uct_rc_iface_qp_connect)
UCT_IB_STUB(uct_rc_iface_qp_create)
UCT_IB_STUB(uct_rc_iface_qp_init)
UCT_IB_STUB(uct_rc_mlx5_ep_connect_qp)
UCT_IB_STUB(uct_rc_mlx5_iface_create_qp)
UCT_IB_STUB(uct_rc_mlx5_iface_fill_attr)

/*
 * Two data objects the test objects take the address of: UCX's ib component
 * (passed to uct_ib_md_open above, used by test_uct_ib_gid_idx/sl) and its
 * RNR timer table (read by test_uct_ib_utils, a group without a transport
 * prefix that the driver never selects). Zero-filled, of UCX 1.13.1's sizes
 * on x86-64 (208 and 256 bytes), so the executable's copies match.
 */
_Alignas(64) unsigned char uct_ib_component[208];
_Alignas(64) const unsigned char uct_ib_qp_rnr_time_ms[256];
