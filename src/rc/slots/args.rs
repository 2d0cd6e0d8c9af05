//! The one unsafe core of the slots: it takes the raw C arguments of a slot
//! (ep and iface handles, pointers with their lengths, iov arrays, user
//! callbacks, output pointers) over as the types below, once, in the
//! [`slot!`] macro. Everything after that is safe code: each type checks
//! NULL and lengths where it is used, with a clear status and a log line.
//!
//! Why this is sound: [`FromC::from_c`] requires exactly what UCX's contract
//! promises the slot (handles NULL or live objects of this library,
//! pointers NULL or valid for the length passed with them, callbacks
//! callable with their argument), and the types keep the raw values private,
//! so no safe code can pair a pointer with another length.

use std::ffi::{c_uint, c_void};
use std::marker::PhantomData;

pub(super) use crate::abi::status_of;
use crate::abi::*;
pub(super) use crate::core::c_boundary::{null_argument, null_buffer, CBytes, CSlice, FromC, Out};
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
/// arguments are taken over as the [`FromC`] types named after `take` (a
/// group of C arguments becomes one value), then `$body` runs as safe code.
/// Only argument names may appear in a group, so the unsafe block does
/// nothing but [`FromC::from_c`].
///
/// [`IfaceInternalOps`]: crate::core::iface::IfaceInternalOps
macro_rules! slot {
    (
        @define [$($attr:tt)*] [$($abi:tt)*]
        fn $name:ident($($arg:ident: $cty:ty),* $(,)?) $(-> $ret:ty)?;
        take $($bind:ident: $ty:ty = ($($raw:ident),+)),+ $(,)?;
        $body:block
    ) => {
        $($attr)*
        pub(super) unsafe $($abi)* fn $name($($arg: $cty),*) $(-> $ret)? {
            $(
                // SAFETY: the slot's caller keeps UCX's contract for these
                // arguments (an internal op's: the entry point's), which is
                // what `FromC::from_c` requires.
                let $bind = unsafe {
                    <$ty as $crate::core::c_boundary::FromC<_>>::from_c(($($raw),+))
                };
            )+
            $body
        }
    };
    ($(#[$attr:meta])* internal fn $($rest:tt)*) => {
        slot!(@define [$(#[$attr])*] [] fn $($rest)*);
    };
    ($(#[$attr:meta])* fn $($rest:tt)*) => {
        slot!(@define [$(#[$attr])*] [extern "C"] fn $($rest)*);
    };
}
pub(super) use slot;

/// Maps a posted zcopy/get/flush to `UCS_INPROGRESS`.
#[inline]
pub(super) fn in_progress(result: Result<(), Status>) -> ucs_status_t {
    match result {
        Ok(()) => UCS_INPROGRESS,
        Err(status) => status.raw(),
    }
}

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

/// The C address types and the length our iface reports for each: a
/// pointer to one is taken as [`OutBytes`] (our own address, written) or
/// [`InBytes`] (a peer's, read) of that length.
macro_rules! address_bytes {
    ($($c:ty => $len:expr),* $(,)?) => {$(
        impl FromC<*mut $c> for OutBytes<'_, { $len }> {
            /// Relies on: NULL or writable for the address length.
            unsafe fn from_c(ptr: *mut $c) -> Self {
                // SAFETY: forwarded contract.
                unsafe { Out::from_raw(ptr.cast()) }
            }
        }

        impl FromC<*const $c> for InBytes<'_, { $len }> {
            /// Relies on: NULL or readable for the address length.
            unsafe fn from_c(ptr: *const $c) -> Self {
                InBytes { ptr: ptr.cast(), _life: PhantomData }
            }
        }
    )*};
}

address_bytes!(
    uct_ep_addr_t => crate::rc::ep::EP_ADDR_LEN,
    uct_device_addr_t => crate::hca::DeviceAddress::MAX_PACKED_LEN,
    uct_iface_addr_t => IFACE_ADDR_LEN,
);

/// A C buffer of a length fixed by the slot, to be read (a peer's
/// address as our iface reports its length).
#[derive(Clone, Copy)]
pub(super) struct InBytes<'a, const N: usize> {
    ptr: *const u8,
    _life: PhantomData<&'a [u8; N]>,
}

impl<'a, const N: usize> From<InBytes<'a, N>> for CBytes<'a> {
    fn from(bytes: InBytes<'a, N>) -> Self {
        // SAFETY: NULL or readable for N bytes (FromC).
        unsafe { CBytes::from_c((bytes.ptr, N)) }
    }
}

impl<'a, const N: usize> InBytes<'a, N> {
    /// The bytes, `None` for NULL.
    pub(super) fn get(self) -> Option<&'a [u8; N]> {
        // SAFETY: NULL or readable for N bytes (FromC); u8 has no alignment.
        unsafe { self.ptr.cast::<[u8; N]>().as_ref() }
    }
}

/// A peer's addresses from the parameters of a v2 call, each NULL unless
/// its field bit is set; the device address with the length the call gives
/// (ours when it gives none).
pub(super) struct PeerAddress<'a> {
    pub(super) device: CBytes<'a>,
    pub(super) iface: InBytes<'a, IFACE_ADDR_LEN>,
    pub(super) ep: InBytes<'a, { crate::rc::ep::EP_ADDR_LEN }>,
}

impl PeerAddress<'_> {
    /// From the members whose bits are set; the others NULL.
    ///
    /// # Safety
    /// Each address given NULL or readable for its length.
    unsafe fn taken(
        device: Option<(*const uct_device_addr_t, usize)>,
        iface: Option<*const uct_iface_addr_t>,
        ep: Option<*const uct_ep_addr_t>,
    ) -> Self {
        let (device, len) = device.unwrap_or((std::ptr::null(), 0));
        PeerAddress {
            // SAFETY: NULL or readable for len bytes (the contract).
            device: unsafe { CBytes::from_c((device.cast::<u8>(), len)) },
            iface: InBytes {
                ptr: iface.unwrap_or(std::ptr::null()).cast(),
                _life: PhantomData,
            },
            ep: InBytes {
                ptr: ep.unwrap_or(std::ptr::null()).cast(),
                _life: PhantomData,
            },
        }
    }
}

/// The device address length a v2 call gives, or ours.
fn device_len(given: bool, length: usize) -> usize {
    if given {
        length
    } else {
        crate::hca::DeviceAddress::MAX_PACKED_LEN
    }
}

impl FromC<&uct_iface_is_reachable_params_t> for PeerAddress<'_> {
    /// Relies on: each address whose bit is set NULL or readable for its
    /// length (the device address: its given length, or ours).
    unsafe fn from_c(params: &uct_iface_is_reachable_params_t) -> Self {
        let mask = params.field_mask;
        let bit = |field: u32| mask & u64::from(field) != 0;
        let given = bit(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH);
        // The length member is read only when its bit is set.
        let len = device_len(given, if given { params.device_addr_length } else { 0 });
        // SAFETY: forwarded contract.
        unsafe {
            PeerAddress::taken(
                bit(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR).then_some((params.device_addr, len)),
                bit(UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR).then_some(params.iface_addr),
                None,
            )
        }
    }
}

impl FromC<&uct_ep_is_connected_params_t> for PeerAddress<'_> {
    /// Relies on: each address whose bit is set NULL or readable for our
    /// length of it.
    unsafe fn from_c(params: &uct_ep_is_connected_params_t) -> Self {
        let bit = |field: u32| params.field_mask & u64::from(field) != 0;
        // SAFETY: forwarded contract.
        unsafe {
            PeerAddress::taken(
                bit(UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR)
                    .then_some((params.device_addr, device_len(false, 0))),
                None,
                bit(UCT_EP_IS_CONNECTED_FIELD_EP_ADDR).then_some(params.ep_addr),
            )
        }
    }
}

impl FromC<(*const uct_device_addr_t, &uct_ep_connect_to_ep_params_t)> for CBytes<'_> {
    /// Relies on: the device address NULL or readable for the length the
    /// parameters give (ours when they give none).
    unsafe fn from_c(
        (device, params): (*const uct_device_addr_t, &uct_ep_connect_to_ep_params_t),
    ) -> Self {
        let given =
            params.field_mask & u64::from(UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH) != 0;
        let len = device_len(given, params.device_addr_length);
        // SAFETY: forwarded contract.
        unsafe { CBytes::from_c((device.cast::<u8>(), len)) }
    }
}

c_struct_arg! {
    /// The `uct_ep_params_t` of `uct_ep_create`: only the members its mask
    /// says are set may be read.
    EpParams(*const uct_ep_params_t),
    relies_on: "NULL or valid for its `field_mask` and the members it names."
}

impl EpParams {
    pub(super) fn is_null(&self) -> bool {
        self.0.is_null()
    }

    /// `field_mask` and `iface` (read whatever the mask says: the caller
    /// checks the bits), or `InvalidParam` for NULL.
    pub(super) fn mask_and_iface(&self, function: &str) -> Result<(u64, IfaceArg), Status> {
        if self.0.is_null() {
            return Err(null_argument(function, "params"));
        }
        // SAFETY: non-NULL, valid (FromC); raw member reads form no
        // reference to members left unset.
        let (mask, iface) = unsafe {
            (
                std::ptr::addr_of!((*self.0).field_mask).read(),
                std::ptr::addr_of!((*self.0).iface).read(),
            )
        };
        // The iface member is a handle like any other.
        Ok((mask, IfaceArg(iface)))
    }
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
        // SAFETY: valid as the entry point checked it (FromC).
        unsafe {
            query_v2_generic(self.0);
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

/// A pending-purge callback with its argument.
pub(super) struct PendingPurgeCb {
    cb: uct_pending_purge_callback_t,
    arg: *mut c_void,
}

impl FromC<(uct_pending_purge_callback_t, *mut c_void)> for PendingPurgeCb {
    /// Relies on: `cb` NULL or callable with `arg` on each request the
    /// caller added.
    unsafe fn from_c((cb, arg): (uct_pending_purge_callback_t, *mut c_void)) -> Self {
        PendingPurgeCb { cb, arg }
    }
}

impl PendingPurgeCb {
    /// Hands `req` (from `uct_ep_pending_add`) back to the caller; a NULL
    /// callback drops it.
    pub(super) fn call(&self, req: *mut uct_pending_req_t) {
        if let Some(cb) = self.cb {
            // SAFETY: the caller's callback with its own request and arg.
            unsafe { cb(req, self.arg) };
        }
    }
}

/// A C iov array and its count; its `FromC` (of [`CSlice`]) also relies
/// on each entry's buffer readable for its length (`count` times when
/// strided) and its `memh` NULL or a handle from `uct_md_mem_reg`.
pub(super) type CIov<'a> = CSlice<'a, uct_iov_t>;

impl<'a> CIov<'a> {
    /// The entries, at most `max` of them; `InvalidParam` with a log line
    /// for more, or for NULL with a count.
    pub(super) fn entries(&self, function: &str, max: usize) -> Result<&'a [uct_iov_t], Status> {
        if self.len() > max || (self.len() > 0 && self.is_null()) {
            tracing::error!(
                "{function}: bad iov ({} entries at {:p}, limit {max})",
                self.len(),
                self.as_ptr()
            );
            return Err(Status::InvalidParam);
        }
        self.get(function)
    }

    /// The bytes of entry `index` (of [`CIov::entries`]) for inline
    /// sending; strided entries are refused.
    pub(super) fn inline_bytes(&self, function: &str, index: usize) -> Result<&'a [u8], Status> {
        let entry = &self.entries(function, usize::MAX)?[index];
        refuse_strided(function, entry)?;
        let len = entry.length.saturating_mul(entry.count.max(1) as usize);
        // SAFETY: the entry's buffer is readable for its length (FromC).
        unsafe { CBytes::from_c((entry.buffer.cast_const(), len)) }.get(function)
    }

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

    /// The op table's copy of the iov (purge reports it back); empty for
    /// no entries or an iov refused by [`CIov::entries`].
    pub(super) fn copy(&self) -> Box<[uct_iov_t]> {
        self.entries("", usize::MAX).unwrap_or_default().into()
    }
}

fn refuse_strided(function: &str, entry: &uct_iov_t) -> Result<(), Status> {
    if entry.count > 1 {
        tracing::warn!(
            "{function}: iov count {} (strided entries) is not supported",
            entry.count
        );
        return Err(Status::InvalidParam);
    }
    Ok(())
}

#[inline(always)]
pub(super) fn check_len(function: &str, length: usize, max: usize) -> Result<(), Status> {
    if length > max {
        return Err(length_exceeded(function, length, max));
    }
    Ok(())
}

/// The logging half of [`check_len`], kept out of the posting path.
#[cold]
#[inline(never)]
fn length_exceeded(function: &str, length: usize, max: usize) -> Status {
    tracing::error!("{function}: invalid length {length} (limit {max})");
    Status::InvalidParam
}
