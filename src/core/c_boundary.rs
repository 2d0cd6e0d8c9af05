//! The C boundary: how an `extern "C"` function of this library (an entry
//! point of api/ or a slot of a transport) takes its raw C arguments over as
//! typed values, once, and answers C.
//!
//! - [`FromC`] makes a typed argument from raw C values; [`c_entry!`]
//!   defines api/'s entry points and the transports' slots and internal ops
//!   and calls it in its one unsafe block, so the bodies are safe code.
//! - The argument types: [`Out`] (a pointer to write one value through), [`CSlice`] /
//!   [`CBytes`] (a pointer with its length), [`CStrArg`] (a C string),
//!   [`CRef`] (one struct to read), [`CIov`], a peer's addresses of the
//!   transport's lengths ([`PeerAddress`], [`InBytes`]), user callbacks
//!   ([`PendingPurgeCb`]), handles ([`IfaceHandle`], [`EpHandle`], [`Live`],
//!   [`Closing`]; [`BoxedHandle`] for the objects this library gives out).
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

use crate::abi::*;

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
        @define [$($setup:tt)*] [$($head:tt)*] [$($abi:tt)*]
        $(#[$attr:meta])*
        fn $name:ident($($arg:ident: $cty:ty),* $(,)?) $(-> $ret:ty)?;
        take $($bind:ident: $ty:ty = ($($raw:ident),+)),+ $(,)?;
        $body:block
    ) => {
        $(#[$attr])*
        ///
        /// # Safety
        /// Arguments as UCX's contract for this function promises them.
        $($head)* unsafe $($abi)* fn $name($($arg: $cty),*) $(-> $ret)? {
            $($setup)*
            $(
                // SAFETY: the caller keeps this function's contract for
                // these arguments (an internal op's caller: its entry
                // point's), which is what `FromC::from_c` requires.
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
        $crate::core::c_boundary::c_entry!(@define [] [#[no_mangle] pub] [extern "C"] $($rest)*);
    };
    // A function of an ops table (not exported; reached through a handle
    // this library made, so logging is set up already).
    (ops_slot $($rest:tt)*) => {
        $crate::core::c_boundary::c_entry!(@define [] [] [extern "C"] $($rest)*);
    };
    // A transport's slot: a function of its ops table, seen by the module
    // that builds the table.
    (slot $($rest:tt)*) => {
        $crate::core::c_boundary::c_entry!(@define [] [pub(super)] [extern "C"] $($rest)*);
    };
    // A transport's internal op (`IfaceInternalOps`): a Rust function with
    // the same typed arguments.
    (internal_slot $($rest:tt)*) => {
        $crate::core::c_boundary::c_entry!(@define [] [pub(super)] [] $($rest)*);
    };
    ($($rest:tt)*) => {
        $crate::core::c_boundary::c_entry!(
            @define [$crate::core::log::init();] [#[no_mangle] pub] [extern "C"] $($rest)*
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
        CSlice {
            ptr: ptr.cast(),
            len: len as usize,
            _life: PhantomData,
        }
    }
}

impl FromC<(*const c_void, usize)> for CBytes<'_> {
    /// Relies on: the buffer NULL or readable for `length` bytes.
    #[inline(always)]
    unsafe fn from_c((ptr, len): (*const c_void, usize)) -> Self {
        CSlice {
            ptr: ptr.cast(),
            len,
            _life: PhantomData,
        }
    }
}

/// The part of `uct_allocated_memory_t` that UCX 1.13 has (its first 40
/// bytes): `sys_device` came after 1.13 (40 → 48 bytes), so a 1.13 caller's
/// struct ends before it, and this library reads and writes only this part.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Allocated113 {
    pub(crate) address: *mut c_void,
    pub(crate) length: usize,
    pub(crate) method: uct_alloc_method_t,
    pub(crate) mem_type: ucs_memory_type_t,
    pub(crate) md: uct_md_h,
    pub(crate) memh: uct_mem_h,
}

const _: () = assert!(std::mem::size_of::<Allocated113>() == 40);
const _: () = assert!(
    std::mem::offset_of!(Allocated113, memh) == std::mem::offset_of!(uct_allocated_memory_t, memh)
);

impl FromC<*mut uct_allocated_memory_t> for Out<'_, Allocated113> {
    /// Relies on: NULL or writable for UCX 1.13's part (40 bytes).
    unsafe fn from_c(mem: *mut uct_allocated_memory_t) -> Self {
        Out {
            ptr: mem.cast(),
            _life: PhantomData,
        }
    }
}

/// `uct_mem_alloc`'s parameters with the name taken over.
pub(crate) struct AllocParams<'a> {
    pub(crate) params: &'a uct_mem_alloc_params_t,
    pub(crate) name: CStrArg<'a>,
}

impl FromC<*const uct_mem_alloc_params_t> for Option<AllocParams<'_>> {
    /// Relies on: NULL or valid per its field mask, the name (when its bit
    /// is set) NULL or NUL-terminated.
    unsafe fn from_c(params: *const uct_mem_alloc_params_t) -> Self {
        // SAFETY: by the contract.
        let params = unsafe { params.as_ref() }?;
        let name = if params.field_mask & UCT_MEM_ALLOC_PARAM_FIELD_NAME as u64 != 0 {
            params.name
        } else {
            std::ptr::null()
        };
        Some(AllocParams {
            params,
            name: CStrArg {
                ptr: name,
                _life: PhantomData,
            },
        })
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
    /// Where its `field_mask`, a `u64`, is (`offset_of!`).
    const FIELD_MASK_OFFSET: usize;
}

macro_rules! field_masked {
    ($($ty:ident),* $(,)?) => {$(
        impl FieldMasked for $ty {
            const NAME: &'static str = stringify!($ty);
            const FIELD_MASK_OFFSET: usize = {
                // The member is a u64.
                let _: fn(&$ty) -> &u64 = |this| &this.field_mask;
                std::mem::offset_of!($ty, field_mask)
            };
        }
    )*};
}

field_masked!(
    uct_ep_params_t,
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
        // SAFETY: non-NULL, field_mask readable (FromC), a u64 at this
        // offset (FieldMasked); a raw read forms no reference to the
        // members the caller may have left uninitialised.
        let field_mask = unsafe {
            self.ptr
                .cast::<u8>()
                .add(T::FIELD_MASK_OFFSET)
                .cast::<u64>()
                .read()
        };
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
    ($out:expr, $mask:expr, $bit:expr => $($field:ident).+ = $value:expr) => {
        $out.write_member(
            $mask,
            u64::from($bit),
            |this| {
                // SAFETY: only the address is computed (no read, no
                // reference); `write_member` passes a non-NULL pointer.
                unsafe { std::ptr::addr_of_mut!((*this).$($field).+) }
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
        // A live iface is a uct_iface at its start (binary ABI; FromC).
        let iface: CRef<'a, uct_iface> = CRef {
            ptr: self.0 as *const uct_iface,
            _life: PhantomData,
        };
        Ok(&iface.get(function, "iface")?.ops)
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
        // A live ep or a tombstone is a uct_ep (its iface pointer) at its
        // start (FromC).
        let ep: CRef<'_, uct_ep> = CRef {
            ptr: self.0 as *const uct_ep,
            _life: PhantomData,
        };
        Ok(ep.get(function, "ep")?.iface)
    }

    /// The ep's iface (for a destroyed ep of ours the dead iface), or
    /// `InvalidParam` with a log line for a NULL ep or an ep without an
    /// iface.
    pub(crate) fn iface_handle(self, function: &str) -> Result<IfaceHandle, Status> {
        let iface = self.iface(function)?;
        if iface.is_null() {
            tracing::warn!("{function}: ep {:p} has no iface", self.0);
            return Err(Status::InvalidParam);
        }
        // The ep's iface is live while the ep is.
        Ok(IfaceHandle(iface))
    }

    /// The handle as passed.
    pub(crate) fn raw(self) -> uct_ep_h {
        self.0
    }

    /// `ep->iface->ops` (any transport's; for a destroyed ep of ours the
    /// dead iface's), or `InvalidParam` with a log line for a NULL ep or an
    /// ep without an iface.
    pub(crate) fn ops<'a>(self, function: &str) -> Result<&'a uct_iface_ops_t, Status> {
        self.iface_handle(function)?.ops(function)
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
        self.opt().ok_or_else(|| null_argument(function, what))
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

/// A C handle type: a pointer to an opaque C struct.
pub(crate) trait CHandle: Copy {
    fn address(self) -> *mut c_void;
}

impl<T> CHandle for *mut T {
    fn address(self) -> *mut c_void {
        self.cast()
    }
}

/// An object given to C as a leaked `Box` whose handle points at its start
/// (a `#[repr(C)]` struct whose first field is the C struct the handle
/// names), recognised by its own mark while live and marked dead before
/// its memory is freed: [`ByHandle`] and [`ReleasedByHandle`] for it are
/// these two checked conversions, written once.
pub(crate) trait BoxedHandle: Sized {
    type Raw: CHandle;
    /// The argument's name in log lines (`"md"`).
    const ARGUMENT: &'static str;
    /// What a live one is, for the log line refusing anything else (`"an
    /// open memory domain"`).
    const LIVE: &'static str;
    /// Whether this is a live object of the type (its mark).
    fn is_live(&self) -> bool;
    /// Marks it dead and lets go of what it holds, just before its memory is
    /// freed.
    fn retire(&mut self);
}

impl<T: BoxedHandle> ByHandle for T {
    type Raw = T::Raw;

    /// Relies on: `raw` NULL or a handle of this type not released yet (a
    /// released one whose memory was not reused fails the mark check).
    unsafe fn lookup<'a>(raw: T::Raw, function: &str) -> Result<&'a T, Status> {
        let address = raw.address();
        non_null(address, function, T::ARGUMENT)?;
        // SAFETY: non-NULL and, by the contract, the start of a live boxed
        // T (BoxedHandle).
        let object = unsafe { &*address.cast::<T>() };
        if !object.is_live() {
            tracing::warn!("{function}: {address:p} is not {}", T::LIVE);
            return Err(Status::InvalidParam);
        }
        Ok(object)
    }
}

impl<T: BoxedHandle> ReleasedByHandle for T {
    unsafe fn release(raw: T::Raw) {
        // SAFETY: accepted by lookup, so the leaked Box of a live T
        // (BoxedHandle); freed once, as the contract says.
        let mut owned = unsafe { Box::from_raw(raw.address().cast::<T>()) };
        owned.retire();
    }
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

/// Maps a posted operation that completes later (zcopy, get, flush) to
/// `UCS_INPROGRESS`.
#[inline]
pub(crate) fn in_progress(result: Result<(), Status>) -> ucs_status_t {
    match result {
        Ok(()) => UCS_INPROGRESS,
        Err(status) => status.raw(),
    }
}

/// `InvalidParam` with a log line when `length` is over `max`.
#[inline(always)]
pub(crate) fn check_len(function: &str, length: usize, max: usize) -> Result<(), Status> {
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

/// A C buffer of a length fixed by the function (`N`: the length the
/// transport reports for that address), to be read: a peer's address.
#[derive(Clone, Copy)]
pub(crate) struct InBytes<'a, const N: usize> {
    ptr: *const u8,
    _life: PhantomData<&'a [u8; N]>,
}

impl<'a, const N: usize> InBytes<'a, N> {
    fn new<C>(ptr: *const C) -> Self {
        InBytes {
            ptr: ptr.cast(),
            _life: PhantomData,
        }
    }

    /// The bytes, `None` for NULL.
    pub(crate) fn get(self) -> Option<&'a [u8; N]> {
        if self.ptr.is_null() {
            return None;
        }
        CBytes::from(self).get("").ok()?.try_into().ok()
    }
}

impl<'a, const N: usize> From<InBytes<'a, N>> for CBytes<'a> {
    fn from(bytes: InBytes<'a, N>) -> Self {
        CSlice {
            ptr: bytes.ptr,
            len: N,
            _life: PhantomData,
        }
    }
}

/// The C address types: a pointer to one is taken as an [`Out`] of the
/// transport's length for it (its own address, written) or an [`InBytes`]
/// (a peer's, read); the slot's signature names the length.
macro_rules! address_bytes {
    ($($c:ty),* $(,)?) => {$(
        impl<const N: usize> FromC<*mut $c> for Out<'_, [u8; N]> {
            /// Relies on: NULL or writable for the address length `N`.
            unsafe fn from_c(ptr: *mut $c) -> Self {
                Out {
                    ptr: ptr.cast(),
                    _life: PhantomData,
                }
            }
        }

        impl<const N: usize> FromC<*const $c> for InBytes<'_, N> {
            /// Relies on: NULL or readable for the address length `N`.
            unsafe fn from_c(ptr: *const $c) -> Self {
                InBytes::new(ptr)
            }
        }
    )*};
}

address_bytes!(uct_ep_addr_t, uct_device_addr_t, uct_iface_addr_t);

/// A peer's addresses from the parameters of a v2 call, each NULL unless
/// its field bit is set: the device address with the length the call gives
/// (`DEVICE`, the transport's, when it gives none), the iface and ep
/// addresses of the transport's lengths `IFACE` and `EP`.
pub(crate) struct PeerAddress<'a, const DEVICE: usize, const IFACE: usize, const EP: usize> {
    pub(crate) device: CBytes<'a>,
    pub(crate) iface: InBytes<'a, IFACE>,
    pub(crate) ep: InBytes<'a, EP>,
}

impl<'a, const DEVICE: usize, const IFACE: usize, const EP: usize>
    PeerAddress<'a, DEVICE, IFACE, EP>
{
    /// From the addresses given (NULL for those whose bits are not set);
    /// the device address with its length in bytes.
    fn taken(
        device: Option<(*const uct_device_addr_t, usize)>,
        iface: *const uct_iface_addr_t,
        ep: *const uct_ep_addr_t,
    ) -> Self {
        let (device, len) = device.unwrap_or((std::ptr::null(), 0));
        PeerAddress {
            device: CSlice {
                ptr: device.cast(),
                len,
                _life: PhantomData,
            },
            iface: InBytes::new(iface),
            ep: InBytes::new(ep),
        }
    }
}

/// The member `$field` of a parameter struct when `$bit` is set, else
/// `$absent` (a plain read: the struct is a reference the caller checked).
macro_rules! if_bit {
    ($params:expr, $bit:expr => $field:ident, $absent:expr) => {
        if_bit!($params, $bit => $field, $absent; |member| member)
    };
    ($params:expr, $bit:expr => $field:ident, $absent:expr; $map:expr) => {
        if $params.field_mask & u64::from($bit) != 0 {
            ($map)($params.$field)
        } else {
            $absent
        }
    };
}

impl<const DEVICE: usize, const IFACE: usize, const EP: usize>
    FromC<&uct_iface_is_reachable_params_t> for PeerAddress<'_, DEVICE, IFACE, EP>
{
    /// Relies on: each address whose bit is set NULL or readable for its
    /// length (the device address: its given length, or `DEVICE`).
    unsafe fn from_c(params: &uct_iface_is_reachable_params_t) -> Self {
        let len = if_bit!(params, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH
            => device_addr_length, DEVICE);
        PeerAddress::taken(
            if_bit!(params, UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR
                => device_addr, None; |address| Some((address, len))),
            if_bit!(params, UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR => iface_addr, std::ptr::null()),
            std::ptr::null(),
        )
    }
}

impl<const DEVICE: usize, const IFACE: usize, const EP: usize> FromC<&uct_ep_is_connected_params_t>
    for PeerAddress<'_, DEVICE, IFACE, EP>
{
    /// Relies on: each address whose bit is set NULL or readable for the
    /// transport's length of it.
    unsafe fn from_c(params: &uct_ep_is_connected_params_t) -> Self {
        PeerAddress::taken(
            if_bit!(params, UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR
                => device_addr, None; |address| Some((address, DEVICE))),
            std::ptr::null(),
            if_bit!(params, UCT_EP_IS_CONNECTED_FIELD_EP_ADDR => ep_addr, std::ptr::null()),
        )
    }
}

impl<const DEVICE: usize, const IFACE: usize, const EP: usize>
    FromC<(
        *const uct_device_addr_t,
        *const uct_ep_addr_t,
        &uct_ep_connect_to_ep_params_t,
    )> for PeerAddress<'_, DEVICE, IFACE, EP>
{
    /// Relies on: the device address NULL or readable for the length the
    /// parameters give (`DEVICE` when they give none), the ep address NULL
    /// or readable for `EP` bytes.
    unsafe fn from_c(
        (device, ep, params): (
            *const uct_device_addr_t,
            *const uct_ep_addr_t,
            &uct_ep_connect_to_ep_params_t,
        ),
    ) -> Self {
        let len = if_bit!(params, UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH
            => device_addr_length, DEVICE);
        PeerAddress::taken(Some((device, len)), std::ptr::null(), ep)
    }
}

/// A C iov array and its count; its `FromC` (of [`CSlice`]) also relies
/// on each entry's buffer readable for its length (`count` times when
/// strided) and its `memh` NULL or a handle from `uct_md_mem_reg`.
pub(crate) type CIov<'a> = CSlice<'a, uct_iov_t>;

impl<'a> CIov<'a> {
    /// The entries, at most `max` of them; `InvalidParam` with a log line
    /// for more, or for NULL with a count.
    pub(crate) fn entries(&self, function: &str, max: usize) -> Result<&'a [uct_iov_t], Status> {
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
    pub(crate) fn inline_bytes(&self, function: &str, index: usize) -> Result<&'a [u8], Status> {
        let entry = &self.entries(function, usize::MAX)?[index];
        refuse_strided(function, entry)?;
        CBytes {
            ptr: entry.buffer.cast_const().cast(),
            // The entry's buffer is readable for its length (FromC).
            len: entry.length.saturating_mul(entry.count.max(1) as usize),
            _life: PhantomData,
        }
        .get(function)
    }

    /// A copy of the entries (an op table keeps it to report the op back);
    /// empty for no entries or an iov refused by [`CIov::entries`].
    pub(crate) fn copy(&self) -> Box<[uct_iov_t]> {
        self.entries("", usize::MAX).unwrap_or_default().into()
    }
}

/// `InvalidParam` with a log line for a strided iov entry (count over 1).
pub(crate) fn refuse_strided(function: &str, entry: &uct_iov_t) -> Result<(), Status> {
    if entry.count > 1 {
        tracing::warn!(
            "{function}: iov count {} (strided entries) is not supported",
            entry.count
        );
        return Err(Status::InvalidParam);
    }
    Ok(())
}

/// A pending-purge callback with its argument.
pub(crate) struct PendingPurgeCb {
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
    pub(crate) fn call(&self, req: *mut uct_pending_req_t) {
        if let Some(cb) = self.cb {
            // SAFETY: the caller's callback with its own request and arg.
            unsafe { cb(req, self.arg) };
        }
    }
}
