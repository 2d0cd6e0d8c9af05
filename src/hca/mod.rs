//! The device behind the rings: the backend interface the rc_mlx5 transport
//! drives, over two backends: the software HCA (`soft`) and real mlx5
//! devices through rdma-core (`verbs`). [`devices`] decides which
//! backend serves which device name (`UCX_SOFT_HCA`).
//!
//! The transport talks to a device only on the control path (open, register
//! memory, create and modify queues). On the data path it writes mlx5 WQEs
//! into [`SendRing`], updates the doorbell record, calls [`Doorbell::ring`],
//! and polls CQE64 entries from [`CqRing`]: the formats live in
//! `crate::mlx5`, so nothing is translated. Each handle is an enum over the
//! backends, resolved once when the transport opens its iface: a post costs
//! one `match` on a variant that never changes, no lock and no allocation in
//! the transport (what the soft device does behind the doorbell is its own
//! business, as a NIC's firmware is).
//!
//! Lifetimes: ring pointers handed out by a handle stay valid until that
//! handle is dropped. Dropping a handle destroys the object (deregisters the
//! memory, destroys the QP, ...). A CQ or SRQ still used by a QP stays alive
//! inside the device until the QP goes, so destroy order cannot make the
//! device write into freed memory.
//!
//! How a transport drives a device:
//! 1. `Device::open("mlx5_0")`, `port_attr(1)` (MTU, state, the
//!    [`DeviceAddress`] to pack into the UCT device address), `alloc_pd()`,
//!    `pd.reg_mr(addr, len, access)` (keys for zcopy and rkeys).
//! 2. `create_event_channel()` once, `create_cq(n, Some(&channel))` for send
//!    and receive, `pd.create_srq(..)`; fill the SRQ ring with receive WQEs
//!    (`mlx5::SrqNextSeg` + `mlx5::DataSeg`s, `mlx5::decode_recv_wqe` is the
//!    reader) and publish the count posted in its `dbrec[0]`.
//! 3. Per endpoint `pd.create_qp(..)`, keep `qp.send_ring()` and a clone of
//!    `qp.doorbell()`; connect with `modify(Init)`, `modify(Rtr(..))` (peer's
//!    QPN and address), `modify(Rts(..))`.
//! 4. Post: write the WQE at `index & (wqebb_count - 1)`, store
//!    `mlx5::dbrec_word(new_pi)` into `dbrec[1]` with release ordering, call
//!    `doorbell.ring(ctrl)`. Signalled WQEs (`MLX5_WQE_CTRL_CQ_UPDATE`) get a
//!    CQE whose `wqe_counter` is the WQE's index; errors always get one, and
//!    after an error every later WQE completes with a flush error in order.
//! 5. Progress: `device.progress()` (a no-op on rdma-core) then poll the
//!    CQ rings with `mlx5::cqe_is_sw_owned`. Receive CQEs name the SRQ WQE
//!    index.
//! 6. Blocking wait: expose `channel.fd()`; to arm, `channel.clear()` (it
//!    also counts the events consumed, which arming needs), `arm(ci, ..)`
//!    each CQ with the transport's consumer index, then poll the rings once
//!    more (anything found: `UCS_ERR_BUSY`).
//! 7. Failover: `qp.query()` gives `dest_qpn`, `next_rcv_psn`, `sq_psn`;
//!    `modify(QpTransition::Error)` flushes.

pub mod attrs;
pub mod config;
pub mod devices;
pub mod netdev;
pub mod objects;
pub mod rings;
pub mod soft;
pub mod verbs;

pub use self::attrs::*;
pub use self::objects::*;
pub use self::rings::{PolledCq, RecvQueue, SendQueue};
/// The ring descriptions and the atomic result order are mlx5 formats
/// (`crates/mlx5`), shared with the soft HCA.
pub use crate::mlx5::{AtomicResultOrder, CqRing, RecvRing, SendRing};
/// Memory access rights of a registration (the verbs `IBV_ACCESS_*` bits);
/// one type shared with the soft HCA's engine.
pub use softhca::engine::Access;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::ucs_status::Status;
    use std::net::{Ipv4Addr, SocketAddrV4};

    #[test]
    fn handles_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Device>();
        send_sync::<Pd>();
        send_sync::<Mr>();
        send_sync::<Cq>();
        send_sync::<Srq>();
        send_sync::<Qp>();
        send_sync::<Doorbell>();
        send_sync::<EventChannel>();
    }

    #[test]
    fn device_address_round_trips_and_rejects_garbage() {
        let addr = DeviceAddress::Udp(SocketAddrV4::new(Ipv4Addr::new(10, 1, 2, 3), 0xbeef));
        let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
        assert_eq!(addr.pack(&mut packed), Ok(7));
        assert_eq!(packed[..7], [1, 10, 1, 2, 3, 0xbe, 0xef]);
        assert_eq!(DeviceAddress::unpack(&packed), Ok(addr));
        assert_eq!(addr.pack(&mut [0u8; 6]), Err(Status::BufferTooSmall));
        assert_eq!(
            DeviceAddress::unpack(&packed[..6]),
            Err(Status::InvalidAddr)
        );
        assert_eq!(
            DeviceAddress::unpack(&[9, 10, 1, 2, 3, 0xbe, 0xef]),
            Err(Status::InvalidAddr)
        );
        assert_eq!(
            DeviceAddress::unpack(&[1, 10, 1, 2, 3, 0, 0]),
            Err(Status::InvalidAddr)
        );
        assert_eq!(DeviceAddress::unpack(&[]), Err(Status::InvalidAddr));
    }

    const GID: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1, 0x12, 0xb7];

    #[test]
    fn roce_and_ib_addresses_round_trip_with_their_lengths() {
        let cases = [
            (DeviceAddress::Roce { gid: GID }, 17),
            (
                DeviceAddress::Ib {
                    lid: 0x1234,
                    gid: None,
                },
                3,
            ),
            (
                DeviceAddress::Ib {
                    lid: 0xbfff,
                    gid: Some(GID),
                },
                19,
            ),
        ];
        for (addr, len) in cases {
            // Garbage after the address must not matter.
            let mut packed = [0xa5u8; DeviceAddress::MAX_PACKED_LEN];
            assert_eq!(addr.pack(&mut packed), Ok(len), "{addr:?}");
            assert_eq!(addr.packed_len(), len);
            assert!(len <= DeviceAddress::MAX_PACKED_LEN);
            assert_eq!(DeviceAddress::unpack(&packed), Ok(addr));
            assert_eq!(DeviceAddress::unpack(&packed[..len]), Ok(addr));
            assert_eq!(
                DeviceAddress::unpack(&packed[..len - 1]),
                Err(Status::InvalidAddr),
                "truncated {addr:?}"
            );
            assert_eq!(
                addr.pack(&mut vec![0u8; len - 1]),
                Err(Status::BufferTooSmall)
            );
        }
        let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
        DeviceAddress::Roce { gid: GID }.pack(&mut packed).unwrap();
        // UCX 1.13's flags for RoCE v2 with an IPv6 GID: ETH | IPV6 | 2 << 5.
        assert_eq!(packed[0], 0x58);
        assert_eq!(packed[1..17], GID);
        // An address UCX packed with its optional path MTU byte after the
        // GID (flag 0x02) gives the port and the MTU.
        let mut ucx = [0u8; 18];
        ucx[0] = 0x58 | 0x02;
        ucx[1..17].copy_from_slice(&GID);
        ucx[17] = 3;
        assert_eq!(
            DeviceAddress::unpack_with_mtu(&ucx),
            Ok((DeviceAddress::Roce { gid: GID }, Mtu::Mtu1024))
        );
        let mut mapped = [0u8; 16];
        mapped[10..12].copy_from_slice(&[0xff, 0xff]);
        mapped[12..].copy_from_slice(&[10, 0, 0, 1]);
        DeviceAddress::Roce { gid: mapped }
            .pack(&mut packed)
            .unwrap();
        assert_eq!(packed[0], 0x48);
        DeviceAddress::Ib {
            lid: 0x1234,
            gid: Some(GID),
        }
        .pack(&mut packed)
        .unwrap();
        assert_eq!(packed[..3], [4, 0x12, 0x34]);
        assert_eq!(packed[3..19], GID);
    }

    #[test]
    fn path_mtu_is_carried_as_ucx_does_for_roce_and_in_the_kind_byte_for_ours() {
        let udp = DeviceAddress::Udp(SocketAddrV4::new(Ipv4Addr::new(10, 1, 2, 3), 0xbeef));
        let roce = DeviceAddress::Roce { gid: GID };
        let ib = DeviceAddress::Ib {
            lid: 0x1234,
            gid: Some(GID),
        };
        for addr in [udp, roce, ib] {
            // 4096 is left out: the bytes of `pack`, read back as 4096.
            let mut plain = [0u8; DeviceAddress::MAX_PACKED_LEN];
            let mut with_4096 = [0u8; DeviceAddress::MAX_PACKED_LEN];
            assert_eq!(
                addr.pack(&mut plain),
                addr.pack_with_mtu(Mtu::Mtu4096, &mut with_4096)
            );
            assert_eq!(plain, with_4096);
            assert_eq!(
                DeviceAddress::unpack_with_mtu(&plain),
                Ok((addr, Mtu::Mtu4096))
            );
            for mtu in [Mtu::Mtu256, Mtu::Mtu1024, Mtu::Mtu2048] {
                let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
                let len = addr.pack_with_mtu(mtu, &mut packed).unwrap();
                assert!(len <= DeviceAddress::MAX_PACKED_LEN);
                assert_eq!(
                    DeviceAddress::unpack_with_mtu(&packed[..len]),
                    Ok((addr, mtu)),
                    "{addr:?} {mtu:?}"
                );
                assert_eq!(DeviceAddress::unpack(&packed[..len]), Ok(addr));
            }
        }
        // RoCE as UCX 1.13 packs it: UCT_IB_ADDRESS_FLAG_PATH_MTU (0x02) in
        // the flags, the ibv_mtu code in the byte after the GID.
        let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
        assert_eq!(roce.pack_with_mtu(Mtu::Mtu2048, &mut packed), Ok(18));
        assert_eq!(packed[0], 0x58 | 0x02);
        assert_eq!(packed[1..17], GID);
        assert_eq!(packed[17], 4);
        // Ours: the code in bits 4..6 of the kind byte, lengths unchanged.
        assert_eq!(udp.pack_with_mtu(Mtu::Mtu2048, &mut packed), Ok(7));
        assert_eq!(packed[..7], [0x41, 10, 1, 2, 3, 0xbe, 0xef]);
        assert_eq!(ib.pack_with_mtu(Mtu::Mtu1024, &mut packed), Ok(19));
        assert_eq!(packed[..3], [0x34, 0x12, 0x34]);
        // The identity of a port does not depend on an MTU.
        assert_eq!(
            DeviceAddress::unpack(&[0x41, 10, 1, 2, 3, 0xbe, 0xef])
                .unwrap()
                .identity(),
            udp.identity()
        );
    }

    #[test]
    fn bad_path_mtus_are_refused() {
        // Codes 6 and 7, and bit 7, in our kind byte.
        for kind in [0x61, 0x71, 0x81, 0xc1] {
            assert_eq!(
                DeviceAddress::unpack(&[kind, 10, 1, 2, 3, 0xbe, 0xef]),
                Err(Status::InvalidAddr),
                "kind {kind:#x}"
            );
        }
        // RoCE with the MTU flag: the byte missing, 0 (UCX's invalid MTU)
        // or not a code.
        let mut roce = [0u8; 18];
        roce[0] = 0x58 | 0x02;
        roce[1..17].copy_from_slice(&GID);
        assert_eq!(DeviceAddress::unpack(&roce[..17]), Err(Status::InvalidAddr));
        for code in [0, 6, 0xff] {
            roce[17] = code;
            assert_eq!(DeviceAddress::unpack(&roce), Err(Status::InvalidAddr));
        }
        roce[17] = 5;
        assert_eq!(
            DeviceAddress::unpack_with_mtu(&roce),
            Ok((DeviceAddress::Roce { gid: GID }, Mtu::Mtu4096))
        );
    }

    #[test]
    fn roce_and_ib_garbage_is_refused() {
        // All-zero GID.
        let mut zero_gid = [0u8; 17];
        zero_gid[0] = 2;
        assert_eq!(DeviceAddress::unpack(&zero_gid), Err(Status::InvalidAddr));
        // LID 0, multicast and permissive LIDs.
        for lid in [0u16, 0xc000, 0xfffe, 0xffff] {
            let [hi, lo] = lid.to_be_bytes();
            assert_eq!(
                DeviceAddress::unpack(&[3, hi, lo]),
                Err(Status::InvalidAddr),
                "lid {lid:#x}"
            );
        }
        // IB with GID: zero GID, short GID.
        let mut ib = [0u8; 19];
        ib[..3].copy_from_slice(&[4, 0, 1]);
        assert_eq!(DeviceAddress::unpack(&ib), Err(Status::InvalidAddr));
        ib[3..].copy_from_slice(&GID);
        assert!(DeviceAddress::unpack(&ib).is_ok());
        assert_eq!(DeviceAddress::unpack(&ib[..18]), Err(Status::InvalidAddr));
        assert_eq!(DeviceAddress::unpack(&[3, 0]), Err(Status::InvalidAddr));
        assert_eq!(DeviceAddress::unpack(&[0]), Err(Status::InvalidAddr));
    }

    #[test]
    fn identities_are_gids_or_padded_addresses_and_differ_by_kind() {
        let udp = DeviceAddress::Udp("127.0.0.1:4791".parse().unwrap());
        let mut expected = [0u8; 16];
        expected[..7].copy_from_slice(&[1, 127, 0, 0, 1, 0x12, 0xb7]);
        assert_eq!(udp.identity(), expected);
        assert_eq!(DeviceAddress::Roce { gid: GID }.identity(), GID);
        assert_eq!(
            DeviceAddress::Ib {
                lid: 7,
                gid: Some(GID)
            }
            .identity(),
            GID
        );
        let lid_only = DeviceAddress::Ib { lid: 7, gid: None }.identity();
        assert_eq!(lid_only[..3], [3, 0, 7]);
        assert_ne!(lid_only, udp.identity());
    }

    #[test]
    fn path_attributes_from_config_default_and_clamp() {
        use crate::core::config::{Config, MapEnv};
        use crate::rc::config::{RcMlx5IfaceConfig, RC_MLX5_IFACE_CONFIG};
        let env = |pairs: &[(&str, &str)]| {
            let vars = MapEnv::new(pairs.iter().copied());
            let config = Config::read(&RC_MLX5_IFACE_CONFIG, None, &vars).expect("config");
            let config = RcMlx5IfaceConfig::from_config(&config).expect("typed");
            PathAttr::from_config(config.sl, config.traffic_class, config.hop_limit)
        };
        assert_eq!(env(&[]), PathAttr::default());
        assert_eq!(
            env(&[
                ("UCX_IB_SL", "3"),
                ("UCX_IB_TRAFFIC_CLASS", "106"),
                ("UCX_IB_HOP_LIMIT", "64"),
            ]),
            PathAttr {
                sl: 3,
                traffic_class: 106,
                hop_limit: 64
            }
        );
        let clamped = env(&[("UCX_IB_SL", "99"), ("UCX_IB_HOP_LIMIT", "1000")]);
        assert_eq!((clamped.sl, clamped.hop_limit), (15, 255));
    }

    #[test]
    fn timeouts_from_durations() {
        use std::time::Duration;
        // UCX's default UCX_RC_TIMEOUT is 1 s: 4.096 µs × 2^18 ≈ 1.07 s.
        assert_eq!(ack_timeout_exponent(Duration::from_secs(1)), 18);
        assert_eq!(ack_timeout_exponent(Duration::from_nanos(1)), 1);
        assert_eq!(ack_timeout_exponent(Duration::from_secs(100_000)), 31);
        // 10 µs is code 1; for 1 ms code 13 (0.96 ms) is short, 14 is 1.28 ms.
        assert_eq!(rnr_timer_code(Duration::from_micros(10)), 1);
        assert_eq!(rnr_timer_code(Duration::from_millis(1)), 14);
        assert_eq!(rnr_timer_code(Duration::from_secs(1)), 0);
    }

    #[test]
    fn mtu_encoding() {
        assert_eq!(Mtu::Mtu1024.bytes(), 1024);
        assert_eq!(Mtu::from_bytes(4096), Some(Mtu::Mtu4096));
        assert_eq!(Mtu::from_bytes(1000), None);
        assert_eq!(Mtu::Mtu256 as u8, 1);
    }
}
