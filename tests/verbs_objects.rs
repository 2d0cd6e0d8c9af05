//! The verbs objects without a device: opening a device that rdma-core
//! does not have, and the `ibv_modify_qp` attributes of each RC transition.
//! (Creating real objects needs a ConnectX NIC or the stand-in library,
//! which does not exist yet.)

use uct::abi::ucs_status::Status;
use uct::hca::verbs::ffi::{self, ibv_qp_attr};
use uct::hca::verbs::objects::{
    transition_attrs, AddressVector, VerbsDevice, VerbsRtr, VerbsTransition,
};
use uct::hca::{Access, Mtu, RtsAttr};

#[test]
fn opening_a_device_rdma_core_does_not_list_is_no_device() {
    let err = VerbsDevice::open("mlx5_does_not_exist")
        .err()
        .expect("no such device");
    assert_eq!(err, Status::NoDevice);
}

fn rtr(av: AddressVector) -> VerbsRtr {
    VerbsRtr {
        dest_qpn: 0x1234,
        av,
        port: 1,
        rq_psn: 0x0100_0005, // bit 24 set: must be cut to 24 bits
        path_mtu: Mtu::Mtu4096,
        min_rnr_timer: 12,
        max_dest_rd_atomic: 16,
    }
}

fn state_of(attr: &ibv_qp_attr) -> u32 {
    attr.qp_state
}

#[test]
fn init_grants_access_with_local_write_where_verbs_requires_it() {
    let (attr, mask) = transition_attrs(&VerbsTransition::Init {
        port: 2,
        access: Access::REMOTE_ATOMIC,
    });
    assert_eq!(state_of(&attr), ffi::IBV_QPS_INIT);
    assert_eq!(
        mask,
        ffi::IBV_QP_STATE | ffi::IBV_QP_PKEY_INDEX | ffi::IBV_QP_PORT | ffi::IBV_QP_ACCESS_FLAGS
    );
    assert_eq!(attr.port_num, 2);
    assert_eq!(
        attr.qp_access_flags,
        ffi::IBV_ACCESS_REMOTE_ATOMIC | ffi::IBV_ACCESS_LOCAL_WRITE
    );

    let (attr, _) = transition_attrs(&VerbsTransition::Init {
        port: 1,
        access: Access::REMOTE_READ,
    });
    assert_eq!(attr.qp_access_flags, ffi::IBV_ACCESS_REMOTE_READ);
}

#[test]
fn rtr_on_roce_carries_the_gid_and_on_ib_the_lid() {
    let gid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
    let (attr, mask) = transition_attrs(&VerbsTransition::Rtr(rtr(AddressVector::Roce {
        gid,
        sgid_index: 3,
    })));
    assert_eq!(state_of(&attr), ffi::IBV_QPS_RTR);
    let expected_mask = ffi::IBV_QP_STATE
        | ffi::IBV_QP_AV
        | ffi::IBV_QP_PATH_MTU
        | ffi::IBV_QP_DEST_QPN
        | ffi::IBV_QP_RQ_PSN
        | ffi::IBV_QP_MAX_DEST_RD_ATOMIC
        | ffi::IBV_QP_MIN_RNR_TIMER;
    assert_eq!(mask, expected_mask);
    assert_eq!(attr.dest_qp_num, 0x1234);
    assert_eq!(attr.rq_psn, 5);
    assert_eq!(attr.path_mtu, ffi::IBV_MTU_4096);
    assert_eq!((attr.min_rnr_timer, attr.max_dest_rd_atomic), (12, 16));
    assert_eq!(attr.ah_attr.is_global, 1);
    assert_eq!(attr.ah_attr.port_num, 1);
    assert_eq!(attr.ah_attr.grh.sgid_index, 3);
    assert!(attr.ah_attr.grh.hop_limit > 1, "RoCE v2 is routed");
    // SAFETY: `raw` is the union member written.
    assert_eq!(unsafe { attr.ah_attr.grh.dgid.raw }, gid);

    let (attr, mask) = transition_attrs(&VerbsTransition::Rtr(rtr(AddressVector::Ib { lid: 7 })));
    assert_eq!(mask, expected_mask);
    assert_eq!(attr.ah_attr.is_global, 0);
    assert_eq!(attr.ah_attr.dlid, 7);
}

#[test]
fn rts_sets_the_requester_timers_and_error_and_reset_only_the_state() {
    let rts = RtsAttr {
        sq_psn: 0xff00_0042,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 4,
    };
    let (attr, mask) = transition_attrs(&VerbsTransition::Rts(rts));
    assert_eq!(state_of(&attr), ffi::IBV_QPS_RTS);
    assert_eq!(
        mask,
        ffi::IBV_QP_STATE
            | ffi::IBV_QP_SQ_PSN
            | ffi::IBV_QP_TIMEOUT
            | ffi::IBV_QP_RETRY_CNT
            | ffi::IBV_QP_RNR_RETRY
            | ffi::IBV_QP_MAX_QP_RD_ATOMIC
    );
    assert_eq!(attr.sq_psn, 0x42);
    assert_eq!(
        (
            attr.timeout,
            attr.retry_cnt,
            attr.rnr_retry,
            attr.max_rd_atomic
        ),
        (14, 7, 7, 4)
    );

    let (attr, mask) = transition_attrs(&VerbsTransition::Error);
    assert_eq!(
        (state_of(&attr), mask),
        (ffi::IBV_QPS_ERR, ffi::IBV_QP_STATE)
    );
    let (attr, mask) = transition_attrs(&VerbsTransition::Reset);
    assert_eq!(
        (state_of(&attr), mask),
        (ffi::IBV_QPS_RESET, ffi::IBV_QP_STATE)
    );
}
