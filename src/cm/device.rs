//! Which of our devices an IP address belongs to, and what the peer needs
//! to reach it. A soft HCA device has the IPv4 address of its
//! `UCX_SOFT_HCA_DEVICES` entry; a RoCE device of the rdma-core backend the
//! IPv4 address of the GID its rc QPs use (an IPv4-mapped RoCE v2 GID, as
//! UCX chooses by default); an InfiniBand port that of its IPoIB interface
//! (`crate::hca::verbs::discovery::ipoib_interfaces`). The connection manager
//! listens and connects on those addresses, and names the device
//! (`mlx5_0:1`) to the layer above so that its rc lanes use the same one.
//!
//! Not served: RoCE ports whose GID is not IPv4-mapped (IPv6 only, or
//! `UCX_IB_GID_INDEX` naming such a GID) and InfiniBand ports without an
//! IPoIB interface carrying an IPv4 address.

use std::ffi::c_char;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use crate::abi::ucs_status::Status;
use crate::abi::UCT_DEVICE_NAME_MAX;
use crate::hca::devices::{hca_devices, Backend, HcaDevice, DEVICE_PORT};
use crate::hca::soft::ReceiveMark;
use crate::hca::{Device, DeviceAddress};

/// How long [`PendingReceives::done`] waits for a transport that takes
/// no receive completion at all.
const RECEIVES_STALL: Duration = Duration::from_millis(100);

/// How often the connection manager looks at the CQs meanwhile.
const RECEIVES_CHECK_INTERVAL: Duration = Duration::from_micros(100);

/// The IPv4 address the connection manager uses for `device`.
pub fn device_ipv4(device: &HcaDevice) -> Option<Ipv4Addr> {
    match &device.backend {
        Backend::Soft { spec, .. } => Some(spec.ipv4),
        Backend::Verbs { ipv4, .. } => *ipv4,
    }
}

/// The device listening or connecting on `ip`.
pub fn device_at(ip: Ipv4Addr) -> Option<&'static HcaDevice> {
    hca_devices().iter().find(|d| device_ipv4(d) == Some(ip))
}

/// The first device the connection manager can use.
pub fn first_device() -> Option<&'static HcaDevice> {
    hca_devices().iter().find(|d| device_ipv4(d).is_some())
}

/// A device a connection runs on, kept open for the connection's life so
/// that its address stays the one handed to the peer.
pub struct LocalDevice {
    /// UCT's device name (`mlx5_0:1`).
    pub name: String,
    pub ipv4: Ipv4Addr,
    /// The packed device address, as `uct_iface_get_device_address` of an
    /// rc_mlx5 iface on this device gives it.
    pub address: Vec<u8>,
    open: Device,
}

impl std::fmt::Debug for LocalDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.ipv4)
    }
}

impl LocalDevice {
    /// The device name as UCT's callbacks carry it (NUL-padded; names are
    /// short, a longer one would be cut to leave the NUL).
    pub fn c_name(&self) -> [c_char; UCT_DEVICE_NAME_MAX] {
        let mut name = [0 as c_char; UCT_DEVICE_NAME_MAX];
        for (slot, byte) in name[..UCT_DEVICE_NAME_MAX - 1]
            .iter_mut()
            .zip(self.name.bytes())
        {
            *slot = byte as c_char;
        }
        name
    }

    /// What the transport has still to take from the receive CQs of the
    /// process's soft devices now that `peer`'s disconnect arrived (what
    /// `peer` sent before it among them, on whichever device its lanes
    /// run), so that the layer above, which fails the ep on that disconnect
    /// and drops what it has not taken yet, sees the data first (as a
    /// stream's data is read before its end). Over a NIC and the kernel's
    /// connection manager the disconnect comes late enough; here it comes
    /// on a socket at once, while the transport takes `RX_MAX_POLL`
    /// completions per progress. `None`: nothing to wait for.
    ///
    /// The caller checks it again from time to time, never by waiting in
    /// its event handler: the handler runs with the worker's async context
    /// blocked, and the worker's progress (UCP's, among its callbacks)
    /// blocks that context too, so a wait there would hold up the very
    /// progress that takes the receives.
    pub fn pending_receives(&self, peer: Ipv4Addr) -> Option<PendingReceives> {
        let mark = self.open.receive_mark()?;
        if mark.taken() {
            return None;
        }
        Some(PendingReceives {
            device: self.name.clone(),
            peer,
            consumed: mark.consumed(),
            mark,
            moved_at: Instant::now(),
        })
    }

    pub fn open(device: &HcaDevice) -> Result<LocalDevice, Status> {
        let ipv4 = device_ipv4(device).ok_or(Status::NoDevice)?;
        let open = Device::open(&device.name)?;
        let port = open.port_attr(DEVICE_PORT)?;
        let mut packed = [0u8; DeviceAddress::MAX_PACKED_LEN];
        let len = port.address.pack(&mut packed)?;
        Ok(LocalDevice {
            name: format!("{}:{DEVICE_PORT}", device.name),
            ipv4,
            // The whole reported length, as the iface hands it out.
            address: packed[..DeviceAddress::MAX_PACKED_LEN.max(len)].to_vec(),
            open,
        })
    }
}

/// The receive completions a peer's disconnect waits behind
/// ([`LocalDevice::pending_receives`]).
pub struct PendingReceives {
    device: String,
    peer: Ipv4Addr,
    mark: ReceiveMark,
    consumed: u64,
    moved_at: Instant,
}

impl PendingReceives {
    /// How long to wait before the next [`Self::check`].
    pub const CHECK_INTERVAL: Duration = RECEIVES_CHECK_INTERVAL;

    /// Whether the disconnect may go up now: the transport took every
    /// marked completion, or it stopped taking any for [`RECEIVES_STALL`]
    /// (the worker does not progress).
    pub fn done(&mut self) -> bool {
        if self.mark.taken() {
            return true;
        }
        let consumed = self.mark.consumed();
        if consumed != self.consumed {
            self.consumed = consumed;
            self.moved_at = Instant::now();
            return false;
        }
        if self.moved_at.elapsed() < RECEIVES_STALL {
            return false;
        }
        tracing::debug!(
            "cm: {}: the transport stopped taking {}'s receives; disconnecting anyway",
            self.device,
            self.peer
        );
        true
    }
}
