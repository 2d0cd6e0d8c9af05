//! The verbs objects without a device: opening a device that rdma-core
//! does not have, the RTR address vector built from an `hca::RtrAttr`
//! (GRH fields included), and the `ibv_modify_qp` attributes of each RC
//! transition. (Creating real objects needs a ConnectX NIC or the stand-in
//! library.)

use uct::abi::ucs_status::Status;
use uct::hca::verbs::ffi::{self, ibv_qp_attr};
use uct::hca::verbs::objects::{
    transition_attrs, AddressVector, Grh, VerbsDevice, VerbsRtr, VerbsTransition,
};
use uct::hca::{Access, DeviceAddress, LinkLayer, Mtu, PathAttr, RtrAttr, RtsAttr};

#[test]
fn opening_a_device_rdma_core_does_not_list_is_no_device() {
    let err = VerbsDevice::open("mlx5_does_not_exist")
        .err()
        .expect("no such device");
    assert_eq!(err, Status::NoDevice);
}

const GID: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];

fn rtr_attr(peer: DeviceAddress) -> RtrAttr {
    RtrAttr {
        dest_qpn: 0x1234,
        peer,
        rq_psn: 0x0100_0005, // bit 24 set: must be cut to 24 bits
        path_mtu: Mtu::Mtu4096,
        min_rnr_timer: 12,
        max_dest_rd_atomic: 16,
        path: PathAttr {
            sl: 5,
            traffic_class: 106,
            hop_limit: 64,
        },
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

const RTR_MASK: u32 = ffi::IBV_QP_STATE
    | ffi::IBV_QP_AV
    | ffi::IBV_QP_PATH_MTU
    | ffi::IBV_QP_DEST_QPN
    | ffi::IBV_QP_RQ_PSN
    | ffi::IBV_QP_MAX_DEST_RD_ATOMIC
    | ffi::IBV_QP_MIN_RNR_TIMER;

#[test]
fn rtr_on_roce_is_global_with_the_peer_gid_and_the_configured_path() {
    let rtr = VerbsRtr::new(
        &rtr_attr(DeviceAddress::Roce { gid: GID }),
        1,
        LinkLayer::Ethernet,
        3,
    )
    .expect("RoCE reaches RoCE");
    assert_eq!(
        rtr.av,
        AddressVector {
            dlid: 0,
            sl: 5,
            grh: Some(Grh {
                dgid: GID,
                sgid_index: 3,
                hop_limit: 64,
                traffic_class: 106
            })
        }
    );
    let (attr, mask) = transition_attrs(&VerbsTransition::Rtr(rtr));
    assert_eq!(state_of(&attr), ffi::IBV_QPS_RTR);
    assert_eq!(mask, RTR_MASK);
    assert_eq!(attr.dest_qp_num, 0x1234);
    assert_eq!(attr.rq_psn, 5);
    assert_eq!(attr.path_mtu, ffi::IBV_MTU_4096);
    assert_eq!((attr.min_rnr_timer, attr.max_dest_rd_atomic), (12, 16));
    assert_eq!(attr.ah_attr.is_global, 1);
    assert_eq!(attr.ah_attr.port_num, 1);
    assert_eq!(attr.ah_attr.sl, 5);
    assert_eq!(attr.ah_attr.dlid, 0);
    assert_eq!(attr.ah_attr.grh.sgid_index, 3);
    assert_eq!(attr.ah_attr.grh.hop_limit, 64);
    assert_eq!(attr.ah_attr.grh.traffic_class, 106);
    // SAFETY: `raw` is the union member written.
    assert_eq!(unsafe { attr.ah_attr.grh.dgid.raw }, GID);
}

#[test]
fn rtr_on_infiniband_uses_the_lid_and_a_grh_only_when_the_peer_gave_a_gid() {
    let local = VerbsRtr::new(
        &rtr_attr(DeviceAddress::Ib { lid: 7, gid: None }),
        2,
        LinkLayer::InfiniBand,
        0,
    )
    .expect("IB reaches IB");
    let (attr, mask) = transition_attrs(&VerbsTransition::Rtr(local));
    assert_eq!(mask, RTR_MASK);
    assert_eq!(attr.ah_attr.is_global, 0);
    assert_eq!(attr.ah_attr.dlid, 7);
    assert_eq!(attr.ah_attr.sl, 5);
    assert_eq!(attr.ah_attr.port_num, 2);
    assert_eq!(attr.ah_attr.grh.hop_limit, 0, "no GRH fields without GRH");

    let routed = VerbsRtr::new(
        &rtr_attr(DeviceAddress::Ib {
            lid: 7,
            gid: Some(GID),
        }),
        1,
        LinkLayer::InfiniBand,
        2,
    )
    .expect("IB reaches IB");
    let (attr, _) = transition_attrs(&VerbsTransition::Rtr(routed));
    assert_eq!((attr.ah_attr.is_global, attr.ah_attr.dlid), (1, 7));
    assert_eq!(attr.ah_attr.grh.sgid_index, 2);
    assert_eq!(attr.ah_attr.grh.traffic_class, 106);
    // SAFETY: `raw` is the union member written.
    assert_eq!(unsafe { attr.ah_attr.grh.dgid.raw }, GID);
}

#[test]
fn rtr_to_an_address_the_port_cannot_reach_is_invalid_addr() {
    let udp = DeviceAddress::Udp("127.0.0.1:4791".parse().unwrap());
    let roce = DeviceAddress::Roce { gid: GID };
    let ib = DeviceAddress::Ib { lid: 1, gid: None };
    for (peer, link) in [
        (udp, LinkLayer::Ethernet),
        (udp, LinkLayer::InfiniBand),
        (roce, LinkLayer::InfiniBand),
        (ib, LinkLayer::Ethernet),
    ] {
        assert_eq!(
            VerbsRtr::new(&rtr_attr(peer), 1, link, 0),
            Err(Status::InvalidAddr),
            "{peer:?} from {link:?}"
        );
    }
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

#[test]
fn srq_ring_is_taken_from_the_provider_layout_and_odd_layouts_are_refused() {
    use uct::hca::verbs::objects::recv_ring_from_dv;
    let mut buf = [0u8; 64];
    let mut dbrec = [0u32; 2];
    let dv = ffi::mlx5dv_srq {
        buf: buf.as_mut_ptr().cast(),
        dbrec: dbrec.as_mut_ptr(),
        stride: 64,
        head: 0,
        tail: 255,
        comp_mask: 0,
        srqn: 0x42,
    };
    let ring = recv_ring_from_dv(&dv).expect("provider layout");
    assert_eq!(
        (ring.wqe_count, ring.stride, ring.max_sge, ring.srqn),
        (256, 64, 3, 0x42)
    );
    assert_eq!(ring.buf, buf.as_mut_ptr());
    for bad in [
        ffi::mlx5dv_srq { head: 1, ..dv },
        ffi::mlx5dv_srq { tail: 254, ..dv },
        ffi::mlx5dv_srq { stride: 16, ..dv },
        ffi::mlx5dv_srq { stride: 48, ..dv },
        ffi::mlx5dv_srq {
            buf: std::ptr::null_mut(),
            ..dv
        },
    ] {
        assert_eq!(recv_ring_from_dv(&bad).err(), Some(Status::Unsupported));
    }
}
