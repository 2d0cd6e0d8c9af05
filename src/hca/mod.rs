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

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::RawFd;

use crate::abi::ucs_status::Status;

/// Runs `$call` on the backend object inside `$handle` (bound to `$inner`)
/// and wraps its `Result` into the same backend's variant of `$out`: the
/// constructors whose two arms are the same code.
macro_rules! on_either_backend {
    ($handle:expr, $enum:ident, $inner:ident => $call:expr, into $out:ident) => {
        match $handle {
            $enum::Soft($inner) => $call.map($out::Soft),
            $enum::Verbs($inner) => $call.map($out::Verbs),
        }
    };
}

/// Declares a handle over the two backends (`Soft` wraps the soft HCA's
/// object, `Verbs` rdma-core's) and the methods that only forward to the
/// backend's method of the same name and arguments.
macro_rules! backend_handle {
    (
        $(#[$meta:meta])*
        pub enum $name:ident($soft:ty, $verbs:ty);
        $(
            $(#[$fn_meta:meta])*
            pub fn $method:ident(&self $(, $arg:ident: $arg_ty:ty)*) $(-> $ret:ty)?;
        )*
    ) => {
        $(#[$meta])*
        pub enum $name {
            Soft($soft),
            Verbs($verbs),
        }

        impl $name {
            $(
                $(#[$fn_meta])*
                pub fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)? {
                    match self {
                        $name::Soft(inner) => inner.$method($($arg),*),
                        $name::Verbs(inner) => inner.$method($($arg),*),
                    }
                }
            )*
        }
    };
}

pub mod config;
pub mod devices;
pub mod netdev;
pub mod rings;
pub mod soft;
pub mod verbs;

pub use self::rings::{PolledCq, RecvQueue, SendQueue};
/// The ring descriptions and the atomic result order are mlx5 formats
/// (`crates/mlx5`), shared with the soft HCA.
pub use crate::mlx5::{AtomicResultOrder, CqRing, RecvRing, SendRing};
/// Memory access rights of a registration (the verbs `IBV_ACCESS_*` bits);
/// one type shared with the soft HCA's engine.
pub use softhca::engine::Access;

/// IB path MTU, with the verbs encoding as discriminant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Mtu {
    Mtu256 = 1,
    Mtu512 = 2,
    Mtu1024 = 3,
    Mtu2048 = 4,
    Mtu4096 = 5,
}

impl Mtu {
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }
    pub const fn from_bytes(bytes: u32) -> Option<Mtu> {
        Some(match bytes {
            256 => Mtu::Mtu256,
            512 => Mtu::Mtu512,
            1024 => Mtu::Mtu1024,
            2048 => Mtu::Mtu2048,
            4096 => Mtu::Mtu4096,
            _ => return None,
        })
    }

    /// The MTU of its verbs code (`IBV_MTU_*`, this enum's discriminant).
    pub const fn from_code(code: u8) -> Option<Mtu> {
        Some(match code {
            1 => Mtu::Mtu256,
            2 => Mtu::Mtu512,
            3 => Mtu::Mtu1024,
            4 => Mtu::Mtu2048,
            5 => Mtu::Mtu4096,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    InfiniBand,
    /// RoCE; the soft HCA is RoCEv2 over UDP.
    Ethernet,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    Down,
    Active,
}

/// What a peer needs to send to this device's port. Packed into the UCT
/// device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceAddress {
    /// The soft HCA: the port's UDP socket.
    Udp(SocketAddrV4),
    /// RoCE: the port's GID (the entry chosen at discovery); packets carry
    /// it in their IP/GRH header.
    Roce { gid: [u8; 16] },
    /// InfiniBand: the port's LID, and its GID when the port is not on the
    /// default link-local subnet (a peer then needs a GRH to reach it).
    Ib { lid: u16, gid: Option<[u8; 16]> },
}

/// The subnet prefix every InfiniBand port has unless a subnet manager
/// assigns another one (fe80::/64): within it, LIDs route without a GRH.
pub const IB_DEFAULT_SUBNET_PREFIX: [u8; 8] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0];

impl DeviceAddress {
    /// Bytes [`DeviceAddress::pack`] writes at most (InfiniBand with GID:
    /// kind, LID, GID). This is also the UCT `device_addr_len`.
    pub const MAX_PACKED_LEN: usize = 19;
    const KIND_UDP: u8 = 1;
    const KIND_IB_LID: u8 = 3;
    const KIND_IB_LID_GID: u8 = 4;
    const UDP_LEN: usize = 7;
    const ROCE_LEN: usize = 17;
    const IB_LID_LEN: usize = 3;
    const IB_LID_GID_LEN: usize = 19;
    /// A RoCE address is UCX 1.13's `uct_ib_address_t` for Ethernet, so
    /// that UCX's own rc_mlx5 and ours read each other's: a flags byte
    /// (`UCT_IB_ADDRESS_FLAG_LINK_LAYER_ETH`, `_ROCE_IPV6` unless the GID
    /// is IPv4-mapped, the RoCE version in bits 5..7: 2 = v2, the kind our
    /// discovery prefers), then the GID, then the path MTU's code when
    /// `UCT_IB_ADDRESS_FLAG_PATH_MTU` is set. Other optional fields UCX may
    /// append (GID index, P_Key, each flagged) are ignored on unpack.
    /// The ETH bit (0x08) is clear in every other kind byte.
    const UCX_FLAG_LINK_LAYER_ETH: u8 = 1 << 3;
    const UCX_FLAG_ROCE_IPV6: u8 = 1 << 4;
    const UCX_FLAG_PATH_MTU: u8 = 1 << 1;
    const UCX_ROCE_V2: u8 = 2 << 5;
    /// Our own kinds carry the path MTU's code in bits 4..6 of the kind
    /// byte (0: not given), so their lengths stay as they are.
    const KIND_MTU_SHIFT: u32 = 4;
    const KIND_BITS: u8 = 0x0f;

    /// Writes the address into `out` (a kind byte, then the fields,
    /// multi-byte numbers big-endian; RoCE as UCX does, see
    /// `UCX_FLAG_LINK_LAYER_ETH`) and returns the length written;
    /// `out` must hold `MAX_PACKED_LEN` bytes. No path MTU: a peer reads
    /// 4096 ([`DeviceAddress::pack_with_mtu`]).
    pub fn pack(&self, out: &mut [u8]) -> Result<usize, Status> {
        self.pack_with_mtu(Mtu::Mtu4096, out)
    }

    /// As [`DeviceAddress::pack`], with the path MTU of the iface whose
    /// device address this is. As UCX's ib ifaces do, an MTU of 4096 is
    /// left out (a reader takes 4096 when none is given); any other is
    /// written as UCX does for RoCE, in the kind byte for our kinds.
    pub fn pack_with_mtu(&self, path_mtu: Mtu, out: &mut [u8]) -> Result<usize, Status> {
        let mtu_given = path_mtu != Mtu::Mtu4096;
        let roce_mtu_len = usize::from(mtu_given && matches!(self, DeviceAddress::Roce { .. }));
        let len = self.packed_len() + roce_mtu_len;
        let out = out.get_mut(..len).ok_or(Status::BufferTooSmall)?;
        match self {
            DeviceAddress::Udp(addr) => {
                out[0] = Self::KIND_UDP;
                out[1..5].copy_from_slice(&addr.ip().octets());
                out[5..7].copy_from_slice(&addr.port().to_be_bytes());
            }
            DeviceAddress::Roce { gid } => {
                let ipv4_mapped = gid[..10].iter().all(|&b| b == 0) && gid[10..12] == [0xff, 0xff];
                out[0] = Self::UCX_FLAG_LINK_LAYER_ETH | Self::UCX_ROCE_V2;
                if !ipv4_mapped {
                    out[0] |= Self::UCX_FLAG_ROCE_IPV6;
                }
                out[1..17].copy_from_slice(gid);
                if mtu_given {
                    out[0] |= Self::UCX_FLAG_PATH_MTU;
                    out[17] = path_mtu as u8;
                }
            }
            DeviceAddress::Ib { lid, gid } => {
                out[1..3].copy_from_slice(&lid.to_be_bytes());
                match gid {
                    None => out[0] = Self::KIND_IB_LID,
                    Some(gid) => {
                        out[0] = Self::KIND_IB_LID_GID;
                        out[3..19].copy_from_slice(gid);
                    }
                }
            }
        }
        if mtu_given && !matches!(self, DeviceAddress::Roce { .. }) {
            out[0] |= (path_mtu as u8) << Self::KIND_MTU_SHIFT;
        }
        Ok(len)
    }

    /// Bytes `pack` writes for this address.
    pub fn packed_len(&self) -> usize {
        match self {
            DeviceAddress::Udp(_) => Self::UDP_LEN,
            DeviceAddress::Roce { .. } => Self::ROCE_LEN,
            DeviceAddress::Ib { gid: None, .. } => Self::IB_LID_LEN,
            DeviceAddress::Ib { gid: Some(_), .. } => Self::IB_LID_GID_LEN,
        }
    }

    /// Reads an address written by [`DeviceAddress::pack`] or
    /// [`DeviceAddress::pack_with_mtu`] (its path MTU is not kept).
    pub fn unpack(bytes: &[u8]) -> Result<DeviceAddress, Status> {
        Self::unpack_with_mtu(bytes).map(|(address, _)| address)
    }

    /// Reads an address written by [`DeviceAddress::pack_with_mtu`] and its
    /// path MTU (4096 when none is given); bytes after it are ignored.
    /// Anything else is `InvalidAddr`: short, unknown kind, UDP port 0, an
    /// all-zero GID, a LID outside the unicast range, an unknown MTU code.
    pub fn unpack_with_mtu(bytes: &[u8]) -> Result<(DeviceAddress, Mtu), Status> {
        let gid_at = |at: usize| -> Result<[u8; 16], Status> {
            let gid: [u8; 16] = bytes
                .get(at..at + 16)
                .and_then(|b| b.try_into().ok())
                .ok_or(Status::InvalidAddr)?;
            if gid.iter().all(|&b| b == 0) {
                return Err(Status::InvalidAddr);
            }
            Ok(gid)
        };
        let lid = || -> Result<u16, Status> {
            let lid = u16::from_be_bytes([
                *bytes.get(1).ok_or(Status::InvalidAddr)?,
                *bytes.get(2).ok_or(Status::InvalidAddr)?,
            ]);
            // Unicast LIDs are 0x0001..=0xbfff (0 is reserved, the rest
            // multicast or permissive).
            if lid == 0 || lid >= 0xc000 {
                return Err(Status::InvalidAddr);
            }
            Ok(lid)
        };
        let mtu_of = |code: u8| Mtu::from_code(code).ok_or(Status::InvalidAddr);
        let &first = bytes.first().ok_or(Status::InvalidAddr)?;
        // RoCE v1, v1.5 or v2 (UCX's version 3 is its "any" wildcard,
        // never in an address of a port).
        if first & Self::UCX_FLAG_LINK_LAYER_ETH != 0 {
            if first >> 5 > 2 {
                return Err(Status::InvalidAddr);
            }
            let address = DeviceAddress::Roce { gid: gid_at(1)? };
            let mtu = if first & Self::UCX_FLAG_PATH_MTU != 0 {
                mtu_of(*bytes.get(Self::ROCE_LEN).ok_or(Status::InvalidAddr)?)?
            } else {
                Mtu::Mtu4096
            };
            return Ok((address, mtu));
        }
        let mtu = match first >> Self::KIND_MTU_SHIFT {
            0 => Mtu::Mtu4096,
            code => mtu_of(code)?,
        };
        let address = match first & Self::KIND_BITS {
            Self::KIND_UDP if bytes.len() >= Self::UDP_LEN => {
                let ip = Ipv4Addr::new(bytes[1], bytes[2], bytes[3], bytes[4]);
                let port = u16::from_be_bytes([bytes[5], bytes[6]]);
                if port == 0 {
                    return Err(Status::InvalidAddr);
                }
                DeviceAddress::Udp(SocketAddrV4::new(ip, port))
            }
            Self::KIND_IB_LID => DeviceAddress::Ib {
                lid: lid()?,
                gid: None,
            },
            Self::KIND_IB_LID_GID => DeviceAddress::Ib {
                lid: lid()?,
                gid: Some(gid_at(3)?),
            },
            _ => return Err(Status::InvalidAddr),
        };
        Ok((address, mtu))
    }

    /// 16 bytes that name the port this address reaches, for identities
    /// that must fit 16 bytes (failover tokens): a GID where there is one
    /// (unique per port), else the packed address zero-padded. Kinds cannot
    /// collide: such a packed address starts with a kind byte 1, 3 or 4, and GIDs in
    /// use never start with those (`::/8` holds only IPv4-mapped and
    /// reserved addresses, whose first byte is 0).
    pub fn identity(&self) -> [u8; 16] {
        match self {
            DeviceAddress::Roce { gid } | DeviceAddress::Ib { gid: Some(gid), .. } => *gid,
            DeviceAddress::Udp(_) | DeviceAddress::Ib { gid: None, .. } => {
                let mut packed = [0u8; Self::MAX_PACKED_LEN];
                let mut id = [0u8; 16];
                if let Ok(len) = self.pack(&mut packed) {
                    let len = len.min(16);
                    id[..len].copy_from_slice(&packed[..len]);
                }
                id
            }
        }
    }
}

/// Device-wide limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceAttr {
    pub name: String,
    pub port_count: u8,
    /// Largest send ring, in 64-byte WQE basic blocks.
    pub max_qp_wqebb: u32,
    pub max_cqe: u32,
    pub max_srq_wqe: u32,
    /// Data segments per receive WQE.
    pub max_srq_sge: u32,
    /// Outstanding READ/atomic requests per QP, either direction.
    pub max_rd_atomic: u8,
    /// 64-bit and masked atomics are supported.
    pub atomics: bool,
    /// The byte order in which fetched atomic values land in the local
    /// buffer, per operand width.
    pub atomic_result_order: AtomicResultOrder,
}

/// One port (ports are numbered from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortAttr {
    pub state: PortState,
    pub max_mtu: Mtu,
    pub active_mtu: Mtu,
    pub link_layer: LinkLayer,
    pub address: DeviceAddress,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    Reset,
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    Error,
}

/// Attributes of the INIT→RTR transition: who the peer is and what the
/// responder expects first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtrAttr {
    pub dest_qpn: u32,
    pub peer: DeviceAddress,
    /// First PSN the responder expects (24 bits).
    pub rq_psn: u32,
    pub path_mtu: Mtu,
    /// RNR NAK timer code (IB encoding, 0..=31) this responder sends.
    pub min_rnr_timer: u8,
    /// READ/atomic requests this responder accepts in flight.
    pub max_dest_rd_atomic: u8,
    /// How packets to the peer are routed (real devices; the soft HCA
    /// ignores it).
    pub path: PathAttr,
}

/// The routing fields of the address vector a real device puts in the QP
/// at RTR, from `UCX_IB_SL`, `UCX_IB_TRAFFIC_CLASS`, `UCX_IB_HOP_LIMIT`.
/// The source GID index is the device's (the GID chosen at discovery,
/// `UCX_IB_GID_INDEX`), since it must match the address peers were given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathAttr {
    /// Service level (InfiniBand) or Ethernet priority (RoCE), 0..=15.
    pub sl: u8,
    /// GRH traffic class (InfiniBand) or IP DSCP+ECN byte (RoCE v2).
    pub traffic_class: u8,
    /// GRH hop limit (InfiniBand) or IP TTL (RoCE v2).
    pub hop_limit: u8,
}

impl Default for PathAttr {
    /// UCX's defaults: SL 0, traffic class 0, hop limit 255.
    fn default() -> Self {
        PathAttr {
            sl: 0,
            traffic_class: 0,
            hop_limit: u8::MAX,
        }
    }
}

impl PathAttr {
    /// From the iface configuration's `SL`, `TRAFFIC_CLASS` and
    /// `HOP_LIMIT`. `auto` means the default; a value out of range is clamped
    /// to the largest valid one, with a warning.
    pub fn from_config(
        sl: crate::core::config::Ulunits,
        traffic_class: crate::core::config::Ulunits,
        hop_limit: u32,
    ) -> PathAttr {
        use crate::core::config::Ulunits;
        let pick = |name: &str, value: u64, max: u8| -> u8 {
            u8::try_from(value)
                .ok()
                .filter(|v| *v <= max)
                .unwrap_or_else(|| {
                    tracing::warn!("UCX_IB_{name}={value} is above {max}, using {max}");
                    max
                })
        };
        let default = PathAttr::default();
        PathAttr {
            sl: match sl {
                Ulunits::Value(v) => pick("SL", v, 15),
                Ulunits::Auto | Ulunits::Inf => default.sl,
            },
            traffic_class: match traffic_class {
                Ulunits::Value(v) => pick("TRAFFIC_CLASS", v, u8::MAX),
                Ulunits::Auto | Ulunits::Inf => default.traffic_class,
            },
            hop_limit: pick("HOP_LIMIT", u64::from(hop_limit), u8::MAX),
        }
    }
}

/// Attributes of the RTR→RTS transition: the requester's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtsAttr {
    /// First PSN the requester sends (24 bits).
    pub sq_psn: u32,
    /// Local ACK timeout, IB encoding: 4.096 µs × 2^timeout (0 = infinite).
    pub timeout: u8,
    /// Retransmissions after a timeout or a sequence NAK (0..=7).
    pub retry_cnt: u8,
    /// Retries after an RNR NAK (0..=7, 7 = infinite).
    pub rnr_retry: u8,
    /// READ/atomic requests this requester keeps in flight.
    pub max_rd_atomic: u8,
}

/// The IB `timeout` exponent whose local ACK timeout (4.096 µs × 2^t) is
/// the shortest one not below `wait` (from `UCX_RC_TIMEOUT`); at least 1,
/// at most 31 (0 would mean "forever").
pub fn ack_timeout_exponent(wait: std::time::Duration) -> u8 {
    (1..=31u8)
        .find(|&t| softhca::engine::ack_timeout_from_ib(t).is_some_and(|d| d >= wait))
        .unwrap_or(31)
}

/// The RNR timer code (IBTA table 45) of the shortest wait not below `wait`
/// (from `UCX_RC_RNR_TIMEOUT`); the longest, code 0 (655.36 ms), if none is.
pub fn rnr_timer_code(wait: std::time::Duration) -> u8 {
    (1..=31u8)
        .filter(|&code| softhca::engine::rnr_timer_duration(code) >= wait)
        .min_by_key(|&code| softhca::engine::rnr_timer_duration(code))
        .unwrap_or(0)
}

/// One `modify QP` call; only the transitions RC uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpTransition {
    /// RESET→INIT, with the remote access rights the QP grants.
    Init {
        access: Access,
    },
    Rtr(RtrAttr),
    Rts(RtsAttr),
    /// Any state → ERR: outstanding and later WQEs complete with flush errors.
    Error,
    /// Any state → RESET: forget everything (rings are reused from index 0).
    Reset,
}

/// What `query QP` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpInfo {
    pub state: QpState,
    /// Next PSN the responder expects (what failover's RX token carries).
    pub next_rcv_psn: u32,
    /// Next PSN the requester will send.
    pub sq_psn: u32,
    pub dest_qpn: u32,
}

/// Keys of a memory registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrKeys {
    pub lkey: u32,
    pub rkey: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqInitAttr {
    /// Receive WQEs (rounded up to a power of two).
    pub wqe_count: u32,
    /// Data segments per receive WQE.
    pub max_sge: u32,
}

pub struct QpInitAttr<'a> {
    pub send_cq: &'a Cq,
    pub recv_cq: &'a Cq,
    /// RC QPs here always receive through an SRQ.
    pub srq: &'a Srq,
    /// Send ring size in 64-byte basic blocks (rounded up to a power of two).
    pub sq_wqebb_count: u32,
}

backend_handle! {
    /// An open device. Cloning shares it.
    #[derive(Clone)]
    pub enum Device(soft::SoftDevice, verbs::VerbsDevice);
    pub fn name(&self) -> &str;
    pub fn attr(&self) -> DeviceAttr;
    pub fn port_attr(&self, port: u8) -> Result<PortAttr, Status>;
}

/// A handle of one backend was combined with one of the other (e.g. a
/// soft CQ given to a verbs QP): a caller bug, refused with a log line.
#[cold]
fn mixed_backends(what: &str) -> Status {
    tracing::error!("hca: {what}: objects of the soft HCA and of rdma-core mixed");
    Status::InvalidParam
}

impl Device {
    /// The receive completions the soft devices of this process have
    /// written by now (all of them: a peer's lanes may run on any device
    /// of the process, not only on this one), with those of everything that
    /// has reached them (a NIC writes them as packets arrive; the soft device
    /// when a thread next drives it, so this drives it once). `None`: the
    /// device has nothing to wait for (a real NIC's are in the CQ already
    /// and not tracked here).
    pub fn receive_mark(&self) -> Option<soft::ReceiveMark> {
        match self {
            Device::Soft(_) => Some(soft::SoftDevice::receive_mark_all()),
            Device::Verbs(_) => None,
        }
    }

    /// Names of the devices this process can open (see
    /// [`devices`]: real mlx5 devices and/or soft ones, per
    /// `UCX_SOFT_HCA`).
    pub fn list() -> Vec<String> {
        devices::hca_devices()
            .iter()
            .map(|d| d.name.clone())
            .collect()
    }

    /// Opens a device by its listed name (e.g. `mlx5_0`, or `soft_mlx5_0`
    /// for a soft device renamed next to a real one) with the backend that
    /// listed it; a device already open in this process is shared. A name
    /// that is not listed is `NoDevice`.
    pub fn open(name: &str) -> Result<Device, Status> {
        use devices::{find_device, Backend};
        match find_device(name).map(|d| &d.backend) {
            Some(Backend::Verbs { .. }) => verbs::VerbsDevice::open(name).map(Device::Verbs),
            Some(Backend::Soft { soft_name, .. }) => {
                devices::open_soft(soft_name).map(Device::Soft)
            }
            None => {
                tracing::warn!("hca: no device named '{name}' (see UCX_SOFT_HCA)");
                Err(Status::NoDevice)
            }
        }
    }

    pub fn alloc_pd(&self) -> Result<Pd, Status> {
        match self {
            Device::Soft(dev) => Ok(Pd::Soft(dev.alloc_pd())),
            Device::Verbs(dev) => dev.alloc_pd().map(Pd::Verbs),
        }
    }

    /// An event channel: one file descriptor that becomes readable when an
    /// armed CQ attached to it gets a completion.
    pub fn create_event_channel(&self) -> Result<EventChannel, Status> {
        on_either_backend!(self, Device, dev => dev.create_event_channel(), into EventChannel)
    }

    pub fn create_cq(&self, cqe_count: u32, channel: Option<&EventChannel>) -> Result<Cq, Status> {
        match (self, channel) {
            (Device::Soft(dev), None) => dev.create_cq(cqe_count, None).map(Cq::Soft),
            (Device::Soft(dev), Some(EventChannel::Soft(ch))) => {
                dev.create_cq(cqe_count, Some(ch)).map(Cq::Soft)
            }
            (Device::Verbs(dev), None) => dev.create_cq(cqe_count, None).map(Cq::Verbs),
            (Device::Verbs(dev), Some(EventChannel::Verbs(ch))) => {
                dev.create_cq(cqe_count, Some(ch)).map(Cq::Verbs)
            }
            (Device::Soft(_), Some(EventChannel::Verbs(_)))
            | (Device::Verbs(_), Some(EventChannel::Soft(_))) => Err(mixed_backends("create_cq")),
        }
    }

    /// Lets the device do pending work in the caller's thread (the soft HCA
    /// reads its socket and runs its timers); a no-op on real hardware. Call
    /// it from the iface's progress, before polling the CQs.
    #[inline]
    pub fn progress(&self) {
        match self {
            Device::Soft(dev) => dev.progress(),
            Device::Verbs(_) => {}
        }
    }
}

backend_handle! {
    /// A protection domain.
    pub enum Pd(soft::SoftPd, verbs::VerbsPd);
}

impl Pd {
    /// Registers `len` bytes at `addr` (both non-zero). The memory must stay
    /// valid until the returned [`Mr`] is dropped.
    pub fn reg_mr(&self, addr: *mut u8, len: usize, access: Access) -> Result<Mr, Status> {
        on_either_backend!(self, Pd, pd => pd.reg_mr(addr, len, access), into Mr)
    }

    pub fn create_srq(&self, attr: SrqInitAttr) -> Result<Srq, Status> {
        on_either_backend!(self, Pd, pd => pd.create_srq(attr), into Srq)
    }

    pub fn create_qp(&self, attr: &QpInitAttr<'_>) -> Result<Qp, Status> {
        match (self, attr.send_cq, attr.recv_cq, attr.srq) {
            (Pd::Soft(pd), Cq::Soft(send_cq), Cq::Soft(recv_cq), Srq::Soft(srq)) => pd
                .create_qp(send_cq, recv_cq, srq, attr.sq_wqebb_count)
                .map(Qp::Soft),
            (Pd::Verbs(pd), Cq::Verbs(send_cq), Cq::Verbs(recv_cq), Srq::Verbs(srq)) => pd
                .create_qp(send_cq, recv_cq, srq, attr.sq_wqebb_count)
                .map(|qp| Qp::Verbs(Box::new(qp))),
            _ => Err(mixed_backends("create_qp")),
        }
    }
}

backend_handle! {
    /// A memory registration; dropping it deregisters.
    pub enum Mr(soft::SoftMr, verbs::VerbsMr);
    pub fn keys(&self) -> MrKeys;
}

backend_handle! {
    pub enum EventChannel(soft::SoftEventChannel, verbs::VerbsChannel);
    /// The descriptor to poll for readability.
    pub fn fd(&self) -> RawFd;
    /// Consumes pending events so the descriptor stops being readable;
    /// on rdma-core each consumed event advances its CQ's arm sequence
    /// number, so call this before [`Cq::arm`].
    pub fn clear(&self);
}

backend_handle! {
    pub enum Cq(soft::SoftCq, verbs::VerbsCq);
    pub fn ring(&self) -> CqRing;
}

impl Cq {
    /// Requests one event on the CQ's channel for the next CQE.
    /// `consumer_index` is the transport's own (free-running) consumer
    /// index of this ring: on rdma-core the device fires at once if it has
    /// already written a CQE at or past it; `solicited_only` asks for an
    /// event only on a solicited completion (or an error). The soft HCA
    /// ignores both: it fires for the next CQE written after this call, of
    /// any kind (a superset: at worst a spurious wake-up). Either way the
    /// caller checks the ring after arming, so a CQE that raced with the
    /// arm is not missed.
    pub fn arm(&self, consumer_index: u32, solicited_only: bool) {
        match self {
            Cq::Soft(cq) => cq.arm(),
            Cq::Verbs(cq) => cq.arm(consumer_index, solicited_only),
        }
    }
}

backend_handle! {
    pub enum Srq(soft::SoftSrq, verbs::VerbsSrq);
    pub fn ring(&self) -> RecvRing;
}

backend_handle! {
    /// A queue pair. The verbs QP is boxed: it carries its rings and path,
    /// the soft one is a pointer; `Qp` stays small in the endpoint.
    pub enum Qp(soft::SoftQp, Box<verbs::VerbsQp>);
    pub fn send_ring(&self) -> SendRing;
    pub fn modify(&self, transition: QpTransition) -> Result<(), Status>;
    pub fn query(&self) -> Result<QpInfo, Status>;
}

impl Qp {
    pub fn qpn(&self) -> u32 {
        self.send_ring().qpn
    }

    /// The doorbell of this QP's send ring; clone it into the endpoint.
    pub fn doorbell(&self) -> Doorbell {
        match self {
            Qp::Soft(qp) => Doorbell::Soft(qp.doorbell()),
            Qp::Verbs(qp) => Doorbell::Verbs(qp.doorbell()),
        }
    }
}

backend_handle! {
    /// Tells the device new WQEs are in a send ring.
    #[derive(Clone)]
    pub enum Doorbell(soft::SoftDoorbell, verbs::VerbsDoorbell);
    /// Call after writing WQEs and storing the new producer index in
    /// `dbrec[1]` (an atomic store with release ordering). `last_wqe`
    /// points at the control segment of the last WQE written: hardware
    /// takes its first 8 bytes through the doorbell (BlueFlame) register.
    #[inline]
    pub fn ring(&self, last_wqe: *const u8);
}

#[cfg(test)]
mod tests {
    use super::*;

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
