//! The C boundary: how an `extern "C"` function of this library (an entry
//! point of api/ or a slot of a transport) takes its raw C arguments over as
//! typed values, once, and answers C.
//!
//! - [`FromC`] makes a typed argument from raw C values; [`c_entry!`] (api/)
//!   and the transports' slot macros call it in their one unsafe block, so
//!   the bodies are safe code.
//! - The argument types: [`Out`] (a pointer to write one value through), [`CSlice`] /
//!   [`CBytes`] (a pointer with its length), [`CStrArg`] (a C string).
//! - Field-masked structs ([`FieldMasked`], [`Masked`], [`masked_member!`]):
//!   a member is read only when its bit is set, so a caller built against an
//!   older UCX, whose struct ends before the newer members, is never read
//!   past its end.
//! - Checks with a log line ([`non_null`], [`known_fields`],
//!   [`required_fields`]) and the answer to C ([`finish`],
//!   [`crate::abi::status_of`]).
//!
//! Why this is sound: [`FromC::from_c`] requires exactly what UCX's contract
//! promises the function (pointers NULL or valid for what their type says,
//! handles NULL or this library's), and the types keep the raw pointers
//! private, so safe code cannot pair a pointer with another length or use it
//! beyond what the contract covers. Lives in `core` so that api/ and every
//! transport (below api/ in the layer order) share it.

use std::ffi::{c_char, c_void, CStr};
use std::marker::PhantomData;
use std::ptr::addr_of;

use crate::abi::*;
use crate::core::iface::BaseIface;

/// A typed argument made from the raw C values of an `extern "C"` function.
pub(crate) trait FromC<Raw>: Sized {
    /// # Safety
    /// `raw` as the C caller's contract promises it (each implementation
    /// says what it relies on).
    unsafe fn from_c(raw: Raw) -> Self;
}

/// Defines a C entry point: `#[no_mangle] pub unsafe extern "C" fn` with the
/// given C signature whose raw arguments are taken over as the [`FromC`]
/// types named after `take` (a group of C arguments becomes one value);
/// logging is set up first (any entry point may be a program's first call),
/// then `$body` runs as safe code. Only argument names may appear in a
/// group, so the unsafe block does nothing but [`FromC::from_c`].
macro_rules! c_entry {
    (
        @define [$($setup:tt)*] [$($head:tt)*]
        $(#[$attr:meta])*
        fn $name:ident($($arg:ident: $cty:ty),* $(,)?) $(-> $ret:ty)?;
        take $($bind:ident: $ty:ty = ($($raw:ident),+)),+ $(,)?;
        $body:block
    ) => {
        $(#[$attr])*
        ///
        /// # Safety
        /// Arguments as UCX's contract for this function promises them.
        $($head)* unsafe extern "C" fn $name($($arg: $cty),*) $(-> $ret)? {
            $($setup)*
            $(
                // SAFETY: the C caller keeps this function's contract for
                // these arguments, which is what `FromC::from_c` requires.
                let $bind = unsafe {
                    <$ty as $crate::core::c_boundary::FromC<_>>::from_c(($($raw),+))
                };
            )+
            $body
        }
    };
    // A function that may hand the call on to UCX's libucs untouched, or
    // one on a hot path, sets up logging only where it needs it.
    (no_log_setup $($rest:tt)*) => {
        $crate::core::c_boundary::c_entry!(@define [] [#[no_mangle] pub] $($rest)*);
    };
    // A function of an ops table (not exported; reached through a handle
    // this library made, so logging is set up already).
    (ops_slot $($rest:tt)*) => {
        $crate::core::c_boundary::c_entry!(@define [] [] $($rest)*);
    };
    ($($rest:tt)*) => {
        $crate::core::c_boundary::c_entry!(
            @define [$crate::core::log::init();] [#[no_mangle] pub] $($rest)*
        );
    };
}
pub(crate) use c_entry;

/// `UCS_OK` or the error's code, logging at debug level which call failed.
pub(crate) fn finish(function: &str, result: Result<(), Status>) -> ucs_status_t {
    match result {
        Ok(()) => UCS_OK,
        Err(status) => {
            tracing::debug!("{function}: returning {status}");
            status.raw()
        }
    }
}

#[cold]
#[inline(never)]
pub(crate) fn null_argument(function: &str, what: &str) -> Status {
    crate::core::log::init();
    tracing::warn!("{function}: {what} is NULL");
    Status::InvalidParam
}

#[cold]
#[inline(never)]
pub(crate) fn null_buffer(function: &str, length: usize) -> Status {
    tracing::warn!("{function}: NULL buffer with length {length}");
    Status::InvalidParam
}

/// `Err(InvalidParam)` with a log line when `ptr` is NULL.
pub(crate) fn non_null<T>(ptr: *const T, function: &str, argument: &str) -> Result<(), Status> {
    if ptr.is_null() {
        return Err(null_argument(function, argument));
    }
    Ok(())
}

/// `Err(InvalidParam)` with a log line when `field_mask` has bits outside
/// `known`: a caller asking for a field we do not know would otherwise get
/// garbage back silently.
pub(crate) fn known_fields(
    field_mask: u64,
    known: u64,
    function: &str,
    structure: &str,
) -> Result<(), Status> {
    refuse_mask_bits(field_mask & !known, "has unsupported", function, structure)
}

/// `Err(InvalidParam)` with a log line unless every bit of `required` is set.
pub(crate) fn required_fields(
    field_mask: u64,
    required: u64,
    function: &str,
    structure: &str,
) -> Result<(), Status> {
    refuse_mask_bits(
        required & !field_mask,
        "lacks required",
        function,
        structure,
    )
}

/// `Err(InvalidParam)`, logging `structure.field_mask <problem> bits`, when
/// any of the `offending` bits is set.
fn refuse_mask_bits(
    offending: u64,
    problem: &str,
    function: &str,
    structure: &str,
) -> Result<(), Status> {
    if offending != 0 {
        crate::core::log::init();
        tracing::warn!("{function}: {structure}.field_mask {problem} bits 0x{offending:x}");
        return Err(Status::InvalidParam);
    }
    Ok(())
}

/// A C pointer to one value to be written.
pub(crate) struct Out<'a, T> {
    ptr: *mut T,
    _life: PhantomData<&'a mut T>,
}

impl<T> FromC<*mut T> for Out<'_, T> {
    /// Relies on: NULL or writable for one `T`.
    unsafe fn from_c(ptr: *mut T) -> Self {
        Out {
            ptr,
            _life: PhantomData,
        }
    }
}

impl<const N: usize> FromC<*mut c_void> for Out<'_, [u8; N]> {
    /// Relies on: NULL or writable for `N` bytes (any alignment).
    unsafe fn from_c(ptr: *mut c_void) -> Self {
        Out {
            ptr: ptr.cast(),
            _life: PhantomData,
        }
    }
}

impl<T> Out<'_, T> {
    /// An out-pointer from a pointer of another C type (an address).
    ///
    /// # Safety
    /// `ptr` NULL or writable for a `T`.
    pub(crate) unsafe fn from_raw(ptr: *mut T) -> Self {
        Out {
            ptr,
            _life: PhantomData,
        }
    }

    pub(crate) fn is_null(&self) -> bool {
        self.ptr.is_null()
    }

    /// `InvalidParam` with a log line naming `what` for NULL (checked
    /// before the work whose result is written).
    pub(crate) fn check(&self, function: &str, what: &str) -> Result<(), Status> {
        non_null(self.ptr, function, what)
    }

    /// Writes `value`; `InvalidParam` for NULL.
    pub(crate) fn write(&self, function: &str, what: &str, value: T) -> Result<(), Status> {
        if self.ptr.is_null() {
            return Err(null_argument(function, what));
        }
        // SAFETY: non-NULL, writable (FromC).
        unsafe { self.ptr.write(value) };
        Ok(())
    }
}

/// A C pointer to one value to be read and written.
pub(crate) struct CMut<'a, T> {
    ptr: *mut T,
    _life: PhantomData<&'a mut T>,
}

impl<T> FromC<*mut T> for CMut<'_, T> {
    /// Relies on: NULL or valid for reads and writes of one initialised `T`
    /// for the call.
    unsafe fn from_c(ptr: *mut T) -> Self {
        CMut {
            ptr,
            _life: PhantomData,
        }
    }
}

impl<T: Copy> CMut<'_, T> {
    /// The value, or `InvalidParam` with a log line naming `what` for NULL.
    /// No reference is kept: the caller's code may run before
    /// [`CMut::write`] (callbacks), and the pointer is read and written
    /// only at these two points.
    pub(crate) fn read(&self, function: &str, what: &str) -> Result<T, Status> {
        if self.ptr.is_null() {
            return Err(null_argument(function, what));
        }
        // SAFETY: non-NULL, readable (FromC).
        Ok(unsafe { self.ptr.read() })
    }

    /// Writes `value` (nothing for NULL, which [`CMut::read`] refused).
    pub(crate) fn write(&self, value: T) {
        if !self.ptr.is_null() {
            // SAFETY: non-NULL, writable (FromC).
            unsafe { self.ptr.write(value) };
        }
    }
}

/// A C array and its length, to be read: a pointer the caller's contract
/// makes NULL or readable for `len` entries.
pub(crate) struct CSlice<'a, T> {
    ptr: *const T,
    len: usize,
    _life: PhantomData<&'a [T]>,
}

impl<T> Clone for CSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for CSlice<'_, T> {}

impl<T> FromC<(*const T, usize)> for CSlice<'_, T> {
    /// Relies on: NULL or readable for `len` entries.
    #[inline(always)]
    unsafe fn from_c((ptr, len): (*const T, usize)) -> Self {
        CSlice {
            ptr,
            len,
            _life: PhantomData,
        }
    }
}

impl<T> FromC<(*const T, std::ffi::c_uint)> for CSlice<'_, T> {
    /// Relies on: NULL or readable for `len` entries.
    #[inline(always)]
    unsafe fn from_c((ptr, len): (*const T, std::ffi::c_uint)) -> Self {
        CSlice {
            ptr,
            len: len as usize,
            _life: PhantomData,
        }
    }
}

impl<'a, T> CSlice<'a, T> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_null(&self) -> bool {
        self.ptr.is_null()
    }

    /// The pointer as passed (for log lines).
    pub(crate) fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// The entries; NULL is allowed only for length 0.
    #[inline(always)]
    pub(crate) fn get(&self, function: &str) -> Result<&'a [T], Status> {
        if self.len == 0 {
            return Ok(&[]);
        }
        if self.ptr.is_null() {
            return Err(null_buffer(function, self.len));
        }
        // SAFETY: non-NULL, readable for len entries (FromC).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, self.len) })
    }
}

/// A C array and its length, to be written: a pointer the caller's
/// contract makes NULL or writable for `len` entries.
pub(crate) struct CSliceMut<'a, T> {
    ptr: *mut T,
    len: usize,
    _life: PhantomData<&'a mut [T]>,
}

impl<T> FromC<(*mut T, usize)> for CSliceMut<'_, T> {
    /// Relies on: NULL or writable for `len` entries.
    unsafe fn from_c((ptr, len): (*mut T, usize)) -> Self {
        CSliceMut {
            ptr,
            len,
            _life: PhantomData,
        }
    }
}

impl<'a, T> CSliceMut<'a, T> {
    pub(crate) fn is_null(&self) -> bool {
        self.ptr.is_null()
    }

    /// The entries, perhaps uninitialised; NULL is allowed only for
    /// length 0.
    pub(crate) fn get(self, function: &str) -> Result<&'a mut [std::mem::MaybeUninit<T>], Status> {
        if self.len == 0 {
            return Ok(&mut []);
        }
        if self.ptr.is_null() {
            return Err(null_buffer(function, self.len));
        }
        // SAFETY: non-NULL, writable for len entries (FromC).
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.cast(), self.len) })
    }
}

impl CSliceMut<'_, c_char> {
    /// Copies `text` into the buffer as a C string, truncated so that the
    /// NUL fits; nothing for NULL or an empty buffer.
    pub(crate) fn write_c_string(self, text: &[u8]) {
        let Ok(buffer) = self.get("") else {
            return;
        };
        if let Some((last, room)) = buffer.split_last_mut() {
            let copied = text.len().min(room.len());
            for (slot, byte) in room.iter_mut().zip(&text[..copied]) {
                slot.write(*byte as c_char);
            }
            match room.get_mut(copied) {
                Some(end) => end.write(0),
                None => last.write(0),
            };
        }
    }
}

/// A C buffer and its length, to be read.
pub(crate) type CBytes<'a> = CSlice<'a, u8>;

impl FromC<(*const c_void, std::ffi::c_uint)> for CBytes<'_> {
    /// Relies on: the buffer NULL or readable for `length` bytes.
    #[inline(always)]
    unsafe fn from_c((ptr, len): (*const c_void, std::ffi::c_uint)) -> Self {
        // SAFETY: forwarded contract.
        unsafe { CBytes::from_c((ptr.cast::<u8>(), len as usize)) }
    }
}

impl FromC<(*const c_void, usize)> for CBytes<'_> {
    /// Relies on: the buffer NULL or readable for `length` bytes.
    #[inline(always)]
    unsafe fn from_c((ptr, len): (*const c_void, usize)) -> Self {
        // SAFETY: forwarded contract.
        unsafe { CBytes::from_c((ptr.cast::<u8>(), len)) }
    }
}

/// A NUL-terminated C string argument.
#[derive(Clone, Copy)]
pub(crate) struct CStrArg<'a> {
    ptr: *const c_char,
    _life: PhantomData<&'a CStr>,
}

impl FromC<*const c_char> for CStrArg<'_> {
    /// Relies on: NULL or a NUL-terminated string valid for the call.
    unsafe fn from_c(ptr: *const c_char) -> Self {
        CStrArg {
            ptr,
            _life: PhantomData,
        }
    }
}

impl<'a> CStrArg<'a> {
    /// The C string, `None` for NULL.
    pub(crate) fn c_str(&self) -> Option<&'a CStr> {
        // SAFETY: non-NULL, NUL-terminated (FromC).
        (!self.ptr.is_null()).then(|| unsafe { CStr::from_ptr(self.ptr) })
    }

    /// The text as UTF-8, `None` for NULL; non-UTF-8 gives `InvalidParam`
    /// with a log line naming `what`.
    pub(crate) fn opt(&self, function: &str, what: &str) -> Result<Option<&'a str>, Status> {
        if self.ptr.is_null() {
            return Ok(None);
        }
        self.get(function, what).map(Some)
    }

    pub(crate) fn is_null(&self) -> bool {
        self.ptr.is_null()
    }

    /// The text as UTF-8; NULL or non-UTF-8 gives `InvalidParam` with a log
    /// line naming `what`.
    pub(crate) fn get(&self, function: &str, what: &str) -> Result<&'a str, Status> {
        let text = self.c_str().ok_or_else(|| null_argument(function, what))?;
        text.to_str().map_err(|_| {
            tracing::warn!("{function}: {what} is not valid UTF-8: {text:?}");
            Status::InvalidParam
        })
    }
}

/// A v2 parameter or attribute struct: its C name and how to read its
/// `field_mask` (the one member a caller always initialises).
pub(crate) trait FieldMasked {
    const NAME: &'static str;
    /// # Safety
    /// `this` non-NULL and valid for reads of its `field_mask`.
    unsafe fn field_mask(this: *const Self) -> u64;
}

macro_rules! field_masked {
    ($($ty:ident),* $(,)?) => {$(
        impl FieldMasked for $ty {
            const NAME: &'static str = stringify!($ty);
            unsafe fn field_mask(this: *const Self) -> u64 {
                // SAFETY: by the contract; a raw read forms no reference to
                // the members the caller may have left uninitialised.
                unsafe { addr_of!((*this).field_mask).read() }
            }
        }
    )*};
}

field_masked!(
    uct_iface_attr_v2_t,
    uct_md_attr_v2_t,
    uct_ep_attr_t,
    uct_ep_invalidate_params_t,
    uct_ep_outstanding_purge_params_t,
    uct_iface_is_reachable_params_t,
    uct_ep_connect_to_ep_params_t,
    uct_ep_is_connected_params_t,
    uct_md_mem_reg_params_t,
    uct_md_mem_dereg_params_t,
    uct_md_mkey_pack_params_t,
    uct_rkey_unpack_params_t,
    uct_rkey_compare_params_t,
    uct_cm_attr_t,
    uct_listener_attr_t,
    uct_component_attr_t,
);

/// A pointer to a field-masked C struct: NULL, or valid for reads of its
/// `field_mask` and of each member whose bit is set (a caller of an older
/// UCX has a shorter struct and sets no bit of the members it lacks).
pub(crate) struct Masked<'a, T> {
    ptr: *const T,
    _life: PhantomData<&'a T>,
}

impl<T> Clone for Masked<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Masked<'_, T> {}

impl<T: FieldMasked> FromC<*const T> for Masked<'_, T> {
    /// Relies on: NULL or valid for `field_mask` and the members it names.
    unsafe fn from_c(ptr: *const T) -> Self {
        Masked {
            ptr,
            _life: PhantomData,
        }
    }
}

impl<T: FieldMasked> FromC<*mut T> for Masked<'_, T> {
    /// Relies on: NULL or valid for `field_mask` and the members it names.
    unsafe fn from_c(ptr: *mut T) -> Self {
        Masked {
            ptr: ptr.cast_const(),
            _life: PhantomData,
        }
    }
}

impl<'a, T: FieldMasked> Masked<'a, T> {
    /// A complete struct of ours (a v1 call's parameters filled as UCX
    /// fills them for the v2 call).
    pub(crate) fn of(params: &'a T) -> Self {
        Masked {
            ptr: params,
            _life: PhantomData,
        }
    }

    /// The pointer as passed (to hand on to code that checks the mask).
    pub(crate) fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// The `field_mask` (argument `argument`, non-NULL); bits outside
    /// `known` are ignored with a debug line, as UCX's v2 entry points
    /// ignore fields they do not know (a newer caller's struct is longer,
    /// and its extra fields are simply not read).
    pub(crate) fn tolerant_mask(
        &self,
        known: u64,
        function: &str,
        argument: &str,
    ) -> Result<u64, Status> {
        non_null(self.ptr, function, argument)?;
        // SAFETY: non-NULL, field_mask readable (FromC).
        let field_mask = unsafe { T::field_mask(self.ptr) };
        let unknown = field_mask & !known;
        if unknown != 0 {
            tracing::debug!(
                "{function}: {}.field_mask bits 0x{unknown:x} are unknown, ignored",
                T::NAME
            );
        }
        Ok(field_mask)
    }

    /// The `field_mask`, which must be non-NULL and ask only for fields in
    /// `known`; else `InvalidParam` with a log line.
    pub(crate) fn checked_mask(
        &self,
        known: u64,
        function: &str,
        argument: &str,
    ) -> Result<u64, Status> {
        let field_mask = self.tolerant_mask(u64::MAX, function, argument)?;
        known_fields(field_mask, known, function, T::NAME)?;
        Ok(field_mask)
    }

    /// Reads a member through `project` when `bit` is set in `field_mask`
    /// (as read by [`Masked::tolerant_mask`]), else `None`. `project` must
    /// only compute the member's address (use [`masked_member!`]).
    #[doc(hidden)]
    pub(crate) fn member<F: Copy>(
        &self,
        field_mask: u64,
        bit: u64,
        project: fn(*const T) -> *const F,
    ) -> Option<F> {
        if field_mask & bit == 0 || self.ptr.is_null() {
            return None;
        }
        // SAFETY: non-NULL; the member's bit is set, so the caller's struct
        // has it and it is initialised (FromC); a raw read forms no
        // reference to the rest of the struct.
        Some(unsafe { project(self.ptr).read() })
    }
}

/// `masked.member(mask, bit, <address of member>)`: the member `$field` of
/// a [`Masked`] struct, `Some` only when `$bit` is set in `$mask`.
macro_rules! masked_member {
    ($masked:expr, $mask:expr, $bit:expr => $field:ident) => {
        $masked.member($mask, u64::from($bit), |this| {
            // SAFETY: only the address is computed (no read, no reference);
            // `member` passes a non-NULL pointer to the struct.
            unsafe { std::ptr::addr_of!((*this).$field) }
        })
    };
}
pub(crate) use masked_member;

/// A pointer to a field-masked C struct to be filled: NULL, or valid for
/// reads of its `field_mask` and writes of each member whose bit is set.
pub(crate) struct MaskedOut<'a, T> {
    ptr: *mut T,
    _life: PhantomData<&'a mut T>,
}

impl<T: FieldMasked> FromC<*mut T> for MaskedOut<'_, T> {
    /// Relies on: NULL or valid for `field_mask` and the members it names.
    unsafe fn from_c(ptr: *mut T) -> Self {
        MaskedOut {
            ptr,
            _life: PhantomData,
        }
    }
}

impl<'a, T: FieldMasked> MaskedOut<'a, T> {
    /// A complete struct of ours (a local to answer through).
    pub(crate) fn of(attr: &'a mut T) -> Self {
        MaskedOut {
            ptr: attr,
            _life: PhantomData,
        }
    }

    /// The pointer as passed (to hand on to code that fills the struct per
    /// its mask).
    pub(crate) fn as_ptr(&self) -> *mut T {
        self.ptr
    }

    fn reader(&self) -> Masked<'_, T> {
        Masked {
            ptr: self.ptr.cast_const(),
            _life: PhantomData,
        }
    }

    /// As [`Masked::tolerant_mask`].
    pub(crate) fn tolerant_mask(
        &self,
        known: u64,
        function: &str,
        argument: &str,
    ) -> Result<u64, Status> {
        self.reader().tolerant_mask(known, function, argument)
    }

    /// As [`Masked::member`] (use [`masked_member!`]).
    #[doc(hidden)]
    pub(crate) fn member<F: Copy>(
        &self,
        field_mask: u64,
        bit: u64,
        project: fn(*const T) -> *const F,
    ) -> Option<F> {
        self.reader().member(field_mask, bit, project)
    }

    /// As [`Masked::checked_mask`].
    pub(crate) fn checked_mask(
        &self,
        known: u64,
        function: &str,
        argument: &str,
    ) -> Result<u64, Status> {
        self.reader().checked_mask(known, function, argument)
    }

    /// Writes `value` to the member `project` addresses when `bit` is set
    /// in `field_mask` (as read by [`MaskedOut::checked_mask`]). `project`
    /// must only compute the member's address (use [`masked_write!`]).
    #[doc(hidden)]
    pub(crate) fn write_member<F>(
        &self,
        field_mask: u64,
        bit: u64,
        project: fn(*mut T) -> *mut F,
        value: F,
    ) {
        if field_mask & bit == 0 || self.ptr.is_null() {
            return;
        }
        // SAFETY: non-NULL; the member's bit is set, so the caller's struct
        // has it and it is writable (FromC).
        unsafe { project(self.ptr).write(value) };
    }
}

/// `out.write_member(mask, bit, <address of member>, value)`: writes
/// `$value` to the member `$field` of a [`MaskedOut`] struct when `$bit` is
/// set in `$mask`.
macro_rules! masked_write {
    ($out:expr, $mask:expr, $bit:expr => $field:ident = $value:expr) => {
        $out.write_member(
            $mask,
            u64::from($bit),
            |this| {
                // SAFETY: only the address is computed (no read, no
                // reference); `write_member` passes a non-NULL pointer.
                unsafe { std::ptr::addr_of_mut!((*this).$field) }
            },
            $value,
        )
    };
}
pub(crate) use masked_write;

/// An iface handle argument: NULL or a live iface (its magic tells whether
/// it is one of ours).
#[derive(Clone, Copy)]
pub(crate) struct IfaceHandle(uct_iface_h);

impl FromC<uct_iface_h> for IfaceHandle {
    /// Relies on: NULL or a live iface.
    unsafe fn from_c(iface: uct_iface_h) -> Self {
        IfaceHandle(iface)
    }
}

impl IfaceHandle {
    /// The handle as passed (the internal ops take it).
    pub(crate) fn raw(self) -> uct_iface_h {
        self.0
    }

    /// `iface->ops` of any transport's iface (only the public table at its
    /// start is read), or `InvalidParam` with a log line for NULL.
    pub(crate) fn ops<'a>(self, function: &str) -> Result<&'a uct_iface_ops_t, Status> {
        let iface = self.0;
        non_null(iface, function, "iface")?;
        // SAFETY: a live iface starts with its ops table (binary ABI; FromC).
        Ok(unsafe { &(*iface.cast::<uct_iface>()).ops })
    }

    /// Our base iface behind the handle, for the entry points that need
    /// more than the public ops (v2 queries, AM handlers). `InvalidParam`
    /// with a log line if it is NULL or not one of ours.
    pub(crate) fn base<'a>(self, function: &str) -> Result<&'a mut BaseIface, Status> {
        let iface = self.0;
        non_null(iface, function, "iface")?;
        // SAFETY: live (FromC); every iface this library creates is a
        // BaseIface at its start (core::iface), and the magic check rejects
        // most foreign pointers. It reads through a shared reference first:
        // the dead iface of destroyed eps (core::tombstone) is a shared
        // static and must never be borrowed mutably.
        if !unsafe { &*(iface as *const BaseIface) }.is_valid() {
            tracing::warn!("{function}: {iface:p} is not an open iface of this library");
            return Err(Status::InvalidParam);
        }
        // SAFETY: as above; a valid magic means an open iface of ours.
        Ok(unsafe { &mut *(iface as *mut BaseIface) })
    }
}

/// An ep handle argument: NULL, a live endpoint of this library, or a
/// destroyed one (a tombstone) whose iface is still open.
#[derive(Clone, Copy)]
pub(crate) struct EpHandle(uct_ep_h);

impl FromC<uct_ep_h> for EpHandle {
    /// Relies on: NULL, a live ep of ours, or a destroyed one whose iface is
    /// still open.
    unsafe fn from_c(ep: uct_ep_h) -> Self {
        EpHandle(ep)
    }
}

impl EpHandle {
    /// `ep->iface`, or `InvalidParam` with a log line for NULL.
    fn iface(self, function: &str) -> Result<uct_iface_h, Status> {
        let ep = self.0;
        non_null(ep, function, "ep")?;
        // SAFETY: a live ep or a tombstone starts with its iface pointer
        // (FromC).
        Ok(unsafe { (*ep.cast::<uct_ep>()).iface })
    }

    /// `ep->iface->ops` (any transport's; for a destroyed ep of ours the
    /// dead iface's), or `InvalidParam` with a log line for a NULL ep or an
    /// ep without an iface.
    pub(crate) fn ops<'a>(self, function: &str) -> Result<&'a uct_iface_ops_t, Status> {
        let iface = self.iface(function)?;
        if iface.is_null() {
            tracing::warn!("{function}: ep {:p} has no iface", self.0);
            return Err(Status::InvalidParam);
        }
        // The ep's iface is live while the ep is.
        IfaceHandle(iface).ops(function)
    }

    /// The base iface of the ep's iface; for a destroyed ep (a tombstone,
    /// see [`crate::core::tombstone`]) its status, logged like every op on
    /// it.
    pub(crate) fn base<'a>(self, function: &str) -> Result<&'a mut BaseIface, Status> {
        let ep = self.0;
        let iface = self.iface(function)?;
        if crate::core::tombstone::is_dead_iface(iface) {
            return Err(crate::core::destroyed_ep::destroyed_ep_call(
                function,
                ep as *const c_void,
            ));
        }
        // The ep's iface is live while the ep is.
        IfaceHandle(iface).base(function)
    }
}

/// A pointer to one C struct to be read whole: NULL or valid for reads of
/// an initialised `T` for the call.
pub(crate) struct CRef<'a, T> {
    ptr: *const T,
    _life: PhantomData<&'a T>,
}

impl<T> Clone for CRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for CRef<'_, T> {}

impl<T> FromC<*const T> for CRef<'_, T> {
    /// Relies on: NULL or readable for one initialised `T`.
    unsafe fn from_c(ptr: *const T) -> Self {
        CRef {
            ptr,
            _life: PhantomData,
        }
    }
}

impl<T> FromC<*mut T> for CRef<'_, T> {
    /// Relies on: NULL or readable for one initialised `T`.
    unsafe fn from_c(ptr: *mut T) -> Self {
        CRef {
            ptr: ptr.cast_const(),
            _life: PhantomData,
        }
    }
}

impl<const N: usize> FromC<*const c_void> for CRef<'_, [u8; N]> {
    /// Relies on: NULL or readable for `N` bytes (any alignment).
    unsafe fn from_c(ptr: *const c_void) -> Self {
        CRef {
            ptr: ptr.cast(),
            _life: PhantomData,
        }
    }
}

impl<'a, T> CRef<'a, T> {
    /// A struct of ours.
    pub(crate) fn of(value: &'a T) -> Self {
        CRef {
            ptr: value,
            _life: PhantomData,
        }
    }

    /// The struct, `None` for NULL.
    pub(crate) fn opt(&self) -> Option<&'a T> {
        // SAFETY: non-NULL, readable and initialised (FromC).
        (!self.ptr.is_null()).then(|| unsafe { &*self.ptr })
    }

    /// The struct, or `InvalidParam` with a log line naming `what` for NULL.
    pub(crate) fn get(&self, function: &str, what: &str) -> Result<&'a T, Status> {
        non_null(self.ptr, function, what)?;
        // SAFETY: non-NULL, readable and initialised (FromC).
        Ok(unsafe { &*self.ptr })
    }
}

/// An object of this library that a C caller holds by a handle.
pub(crate) trait ByHandle: Sized {
    /// The C handle type.
    type Raw: Copy;
    /// The object behind `raw`, or `InvalidParam` with a log line naming
    /// `function` (NULL, or not one of ours by its magic).
    ///
    /// # Safety
    /// `raw` NULL or a handle of this type not released yet.
    unsafe fn lookup<'a>(raw: Self::Raw, function: &str) -> Result<&'a Self, Status>;
}

/// An object of this library that is freed through its handle.
pub(crate) trait ReleasedByHandle: ByHandle {
    /// Frees the object.
    ///
    /// # Safety
    /// `raw` accepted by [`ByHandle::lookup`], not used afterwards.
    unsafe fn release(raw: Self::Raw);
}

/// A handle argument: NULL or a live object of this library.
pub(crate) struct Live<'a, T: ByHandle> {
    raw: T::Raw,
    _life: PhantomData<&'a T>,
}

impl<T: ByHandle> Clone for Live<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: ByHandle> Copy for Live<'_, T> {}

impl<T: ByHandle> FromC<T::Raw> for Live<'_, T> {
    /// Relies on: NULL or a live handle of `T`.
    unsafe fn from_c(raw: T::Raw) -> Self {
        Live {
            raw,
            _life: PhantomData,
        }
    }
}

impl<'a, T: ByHandle> Live<'a, T> {
    /// The handle as passed.
    pub(crate) fn raw(&self) -> T::Raw {
        self.raw
    }

    /// The object, or `InvalidParam` with a log line.
    pub(crate) fn get(&self, function: &str) -> Result<&'a T, Status> {
        // SAFETY: NULL or live (FromC).
        unsafe { T::lookup(self.raw, function) }
    }
}

/// A handle the caller gives up in this call (a close or destroy): NULL or
/// a live object of this library, never used after the call.
pub(crate) struct Closing<T: ReleasedByHandle> {
    raw: T::Raw,
}

impl<T: ReleasedByHandle> FromC<T::Raw> for Closing<T> {
    /// Relies on: NULL or a live handle of `T`, not used after the call.
    unsafe fn from_c(raw: T::Raw) -> Self {
        Closing { raw }
    }
}

impl<T: ReleasedByHandle> Closing<T> {
    /// The handle as passed.
    pub(crate) fn raw(&self) -> T::Raw {
        self.raw
    }

    /// Frees the object after `last_look` has seen it; NULL and handles
    /// that are not ours are refused with the lookup's log line.
    pub(crate) fn release_with(self, function: &str, last_look: impl FnOnce(&T)) {
        // SAFETY: NULL or live (FromC).
        let Ok(object) = (unsafe { T::lookup(self.raw, function) }) else {
            return;
        };
        last_look(object);
        // SAFETY: accepted by lookup; the caller gives the handle up (FromC).
        unsafe { T::release(self.raw) };
    }

    pub(crate) fn release(self, function: &str) {
        self.release_with(function, |_| ());
    }
}
