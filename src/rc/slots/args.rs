//! The rc_mlx5 side of the C boundary ([`crate::core::c_boundary`]): the
//! slots take their raw C arguments over through its [`FromC`] types, once,
//! in [`slot!`]; here are the arguments only rc_mlx5 has (its ep and iface
//! handles, its address lengths, the bounce buffer a pack callback fills,
//! an iov as mlx5 data segments, the failover attributes). Everything after
//! that is safe code: each type checks NULL and lengths where it is used,
//! with a clear status and a log line.

use std::ffi::{c_uint, c_void};

pub(super) use crate::abi::status_of;
use crate::abi::*;
pub(super) use crate::core::c_boundary::{
    check_len, in_progress, null_argument, null_buffer, CBytes, CIov, FromC, InBytes, Out,
    PendingPurgeCb,
};
use crate::core::c_boundary::{refuse_strided, Masked, MaskedOut};
use crate::core::iface::{query_v2_generic, PurgeRequest};
use crate::failover::{ep_query_tx_token, iface_query_tokens, ConnectionId, ResponderLookup};
use crate::ib::domain::MemHandle;
use crate::mlx5::DataSeg;
use crate::rc::ep::{Bounce, RcEp};
use crate::rc::iface::RcIface;

/// Bytes of the iface address (UCX 1.13 rc_mlx5's: its address type).
pub(super) const IFACE_ADDR_LEN: usize = 1;

/// Largest iov count of `am_short_iov`.
pub(super) const MAX_SHORT_IOV: usize = 8;

/// Declares a slot argument that is a C struct pointer taken over as is,
/// with its [`FromC`]; `relies_on` is what its users may assume of it.
macro_rules! c_struct_arg {
    ($(#[$doc:meta])* $name:ident($pointer:ty), relies_on: $relies_on:literal) => {
        $(#[$doc])*
        pub(super) struct $name($pointer);

        impl FromC<$pointer> for $name {
            #[doc = concat!("Relies on: ", $relies_on)]
            unsafe fn from_c(raw: $pointer) -> Self {
                $name(raw)
            }
        }
    };
}

/// Defines a slot: an `unsafe extern "C" fn` with the slot's C signature
/// (or, after `internal`, an `unsafe fn` of [`IfaceInternalOps`]) whose raw
/// arguments are taken over as the [`FromC`] types named after `take`, by
/// [`crate::core::c_boundary::c_entry!`].
///
/// [`IfaceInternalOps`]: crate::core::iface::IfaceInternalOps
macro_rules! slot {
    ($(#[$attr:meta])* internal fn $($rest:tt)*) => {
        $crate::core::c_boundary::c_entry!(internal_slot $(#[$attr])* fn $($rest)*);
    };
    ($(#[$attr:meta])* fn $($rest:tt)*) => {
        $crate::core::c_boundary::c_entry!(slot $(#[$attr])* fn $($rest)*);
    };
}
pub(super) use slot;

/// An ep handle: NULL or an ep of this transport (live or destroyed, the
/// handle check tells).
#[derive(Clone, Copy)]
pub(super) struct EpArg(uct_ep_h);

impl FromC<uct_ep_h> for EpArg {
    /// Relies on: `ep` NULL or an ep handle this library returned.
    #[inline(always)]
    unsafe fn from_c(ep: uct_ep_h) -> Self {
        EpArg(ep)
    }
}

impl EpArg {
    /// The live ep, or `InvalidParam` with a log line.
    #[inline(always)]
    pub(super) fn ep<'a>(self, function: &str) -> Result<&'a mut RcEp, Status> {
        // SAFETY: NULL or ours (FromC); from_handle checks the rest.
        unsafe { RcEp::from_handle(self.0, function) }
    }

    /// The live ep and its iface.
    #[inline(always)]
    pub(super) fn ep_and_iface<'a>(
        self,
        function: &str,
    ) -> Result<(&'a mut RcEp, &'a mut RcIface), Status> {
        let ep = self.ep(function)?;
        // SAFETY: an ep's handle names its live iface, an RcIface; the ep
        // is a separate allocation, so the two borrows do not overlap.
        let iface = unsafe { &mut *(ep.iface_handle() as *mut RcIface) };
        Ok((ep, iface))
    }

    /// Purges the ep's held ops ([`crate::rc::failover::ep_outstanding_purge`]).
    pub(super) fn purge(self, function: &str, request: PurgeRequest<'_>) -> Result<(), Status> {
        let (ep, iface) = self.ep_and_iface(function)?;
        let (ep, iface): (*mut RcEp, *mut RcIface) = (ep, iface);
        // SAFETY: both live (just checked); the references above end here,
        // before the caller's callbacks run.
        unsafe { crate::rc::failover::ep_outstanding_purge(iface, ep, request) }
    }

    /// Destroys the ep (its handle becomes a tombstone).
    pub(super) fn destroy(self, function: &str) {
        if let Ok((ep, iface)) = self.ep_and_iface(function) {
            let (ep, iface): (*mut RcEp, *mut RcIface) = (ep, iface);
            // SAFETY: both live (just checked); the references above end
            // here, before the completions run.
            unsafe { RcIface::destroy_ep(iface, ep) };
        }
    }
}

/// An iface handle: NULL or an iface of this library.
#[derive(Clone, Copy)]
pub(super) struct IfaceArg(uct_iface_h);

impl FromC<uct_iface_h> for IfaceArg {
    /// Relies on: `iface` NULL or an iface handle this library returned.
    unsafe fn from_c(iface: uct_iface_h) -> Self {
        IfaceArg(iface)
    }
}

impl IfaceArg {
    /// The handle itself (an ep names its iface by it).
    pub(super) fn handle(self) -> uct_iface_h {
        self.0
    }

    /// The open rc iface, or `InvalidParam` with a log line.
    pub(super) fn get<'a>(self, function: &str) -> Result<&'a mut RcIface, Status> {
        // SAFETY: NULL or ours (FromC); from_handle checks the rest.
        unsafe { RcIface::from_handle(self.0, function) }
    }

    /// Closes the iface.
    pub(super) fn close(self, function: &str) {
        if let Ok(iface) = self.get(function) {
            // SAFETY: live; the caller closes a handle once (UCX's rule).
            unsafe { RcIface::close(iface) };
        }
    }

    /// One progress pass (0 for a bad handle).
    pub(super) fn progress(self, function: &str) -> c_uint {
        match self.get(function) {
            // SAFETY: live; no borrow of it is held across the callbacks.
            Ok(iface) => unsafe { RcIface::progress(iface) },
            Err(_) => 0,
        }
    }
}

/// A C buffer to be written, of a length fixed by the slot (`N`: the
/// address length the iface reports).
pub(super) type OutBytes<'a, const N: usize> = Out<'a, [u8; N]>;

/// A peer's addresses from the parameters of a v2 call, of the lengths
/// rc_mlx5 reports.
pub(super) type PeerAddress<'a> = crate::core::c_boundary::PeerAddress<
    'a,
    { crate::hca::DeviceAddress::MAX_PACKED_LEN },
    IFACE_ADDR_LEN,
    { crate::rc::ep::EP_ADDR_LEN },
>;

/// The `uct_ep_params_t` of `uct_ep_create`: only the members its mask
/// says are set are read.
pub(super) type EpParams<'a> = Masked<'a, uct_ep_params_t>;

/// `field_mask` and, when its bit is set, the `iface` member of `params`
/// (`InvalidParam` for NULL); without the bit the iface is NULL.
pub(super) fn mask_and_iface(params: &EpParams, function: &str) -> Result<(u64, IfaceArg), Status> {
    let field_mask = params.tolerant_mask(u64::MAX, function, "params")?;
    let iface = crate::core::c_boundary::masked_member!(
        params, field_mask, UCT_EP_PARAM_FIELD_IFACE => iface
    );
    // The iface member is a handle like any other.
    Ok((field_mask, IfaceArg(iface.unwrap_or(std::ptr::null_mut()))))
}

c_struct_arg! {
    /// The `uct_iface_attr_v2_t` of `uct_iface_query_v2`, as the entry point
    /// checked it.
    IfaceAttrV2(*mut uct_iface_attr_v2_t),
    relies_on: "valid, `field_mask` set, token buffers non-NULL and of their lengths when \
        their bits are set (the entry point's checks)."
}

impl IfaceAttrV2 {
    /// Fills the generic fields, then the token part (see
    /// [`iface_query_tokens`]; `responder` `None`: no tokens).
    pub(super) fn fill(self, responder: Option<ResponderLookup<'_>>) -> Result<(), Status> {
        // SAFETY: valid as the entry point checked it (FromC): for its field
        // mask, and the token buffers for their lengths.
        unsafe {
            query_v2_generic(&MaskedOut::from_c(self.0))?;
            iface_query_tokens(self.0, responder)
        }
    }
}

c_struct_arg! {
    /// The `uct_ep_attr_t` of `uct_ep_query`, as the entry point checked it.
    EpAttr(*mut uct_ep_attr_t),
    relies_on: "valid, `field_mask` set, `tx_token` of its length when its bit is set (the \
        entry point's checks)."
}

impl EpAttr {
    pub(super) fn field_mask(&self) -> u64 {
        // SAFETY: valid (FromC); the one member always set.
        unsafe { std::ptr::addr_of!((*self.0).field_mask).read() }
    }

    /// The `TX_TOKEN` part (see [`ep_query_tx_token`]).
    pub(super) fn fill_tx_token(self, connection: Option<&ConnectionId>) -> Result<(), Status> {
        // SAFETY: valid as the entry point checked it (FromC).
        unsafe { ep_query_tx_token(self.0, connection) }
    }
}

/// A bcopy pack callback with its argument.
pub(super) struct PackCb {
    cb: uct_pack_callback_t,
    arg: *mut c_void,
}

impl FromC<(uct_pack_callback_t, *mut c_void)> for PackCb {
    /// Relies on: `cb` NULL or callable with `arg` on a buffer of
    /// `max_bcopy` bytes.
    unsafe fn from_c((cb, arg): (uct_pack_callback_t, *mut c_void)) -> Self {
        PackCb { cb, arg }
    }
}

impl PackCb {
    /// `InvalidParam` with a log line if the callback is NULL.
    pub(super) fn check(&self, function: &str) -> Result<(), Status> {
        match self.cb {
            Some(_) => Ok(()),
            None => Err(null_argument(function, "pack_cb")),
        }
    }

    /// Writes `header` at the start of `bounce`'s data area, then lets the
    /// callback pack after it; returns the bytes the callback packed.
    pub(super) fn pack(&self, bounce: &Bounce, header: &[u8]) -> usize {
        let Some(cb) = self.cb else {
            return 0;
        };
        // SAFETY: a bounce from the send pool has seg_size data bytes:
        // room for the AM header and max_bcopy after it; the callback is
        // the caller's with its argument (FromC).
        unsafe {
            std::ptr::copy_nonoverlapping(header.as_ptr(), bounce.data, header.len());
            cb(bounce.data.add(header.len()).cast(), self.arg)
        }
    }
}

impl CIov<'_> {
    /// The data segments of a zcopy iov, empty entries left out: returns
    /// how many were written to `segments` and the total length. Every
    /// entry must lie in its memory handle's registration.
    pub(super) fn segments(
        &self,
        function: &str,
        max_iov: usize,
        segments: &mut [DataSeg; 16],
    ) -> Result<(usize, usize), Status> {
        let entries = self.entries(function, max_iov.min(segments.len()))?;
        if entries.is_empty() {
            tracing::warn!("{function}: bad iov (0 entries at {:p})", self.as_ptr());
            return Err(Status::InvalidParam);
        }
        let mut total = 0usize;
        let mut count = 0usize;
        for (index, entry) in entries.iter().enumerate() {
            refuse_strided(function, entry)?;
            let length = if entry.count == 0 { 0 } else { entry.length };
            if length == 0 {
                // Nothing to send: neither buffer nor memory handle is
                // looked at (UCX skips such entries, NULL handle or not),
                // and no data segment is made (a byte count of 0 is not
                // "nothing" to every mlx5 device).
                continue;
            }
            if entry.buffer.is_null() {
                tracing::warn!("{function}: iov[{index}] has a NULL buffer");
                return Err(Status::InvalidParam);
            }
            // SAFETY: memh is NULL or a handle from uct_md_mem_reg (FromC).
            let memh = unsafe { MemHandle::from_handle(entry.memh) }.inspect_err(|_| {
                tracing::warn!("{function}: iov[{index}] has no valid memory handle")
            })?;
            if !memh.covers(entry.buffer as usize, length) {
                // An error, as UCX's parameter checks log theirs: the
                // caller's bug (UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF).
                tracing::error!(
                    "{function}: iov[{index}] ({length} bytes at {:p}) is outside its \
                     registration",
                    entry.buffer
                );
                return Err(Status::InvalidParam);
            }
            segments[count] = DataSeg {
                byte_count: length as u32,
                lkey: memh.mr.keys().lkey,
                addr: entry.buffer as u64,
            };
            count += 1;
            total = total.saturating_add(length);
        }
        Ok((count, total))
    }
}
