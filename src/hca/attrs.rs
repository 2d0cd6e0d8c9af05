//! What the backend interface's calls take and answer: MTUs, link layers,
//! port states, device addresses (and their packed form), device and port
//! attributes, QP states and transitions, registration keys.

use std::net::{Ipv4Addr, SocketAddrV4};

use crate::abi::ucs_status::Status;
use crate::mlx5::AtomicResultOrder;
use softhca::engine::Access;

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
