//! `ucs/type/status.h`: the status code every UCS/UCT call returns.
//!
//! UCX declares `ucs_status_t` as a packed enum, so on the wire of the C ABI it
//! is one signed byte. We expose it as `i8` plus constants (any byte a C caller
//! hands us is then a valid Rust value) and offer the [`Status`] enum for use
//! inside Rust.

/// Status code of a UCS/UCT operation: `0` success, `1` in progress, negative
/// values are errors.
pub type ucs_status_t = i8;

/// A pointer that is either a valid pointer or an encoded error status.
pub type ucs_status_ptr_t = *mut core::ffi::c_void;

pub const UCS_OK: ucs_status_t = 0;
pub const UCS_INPROGRESS: ucs_status_t = 1;
pub const UCS_ERR_NO_MESSAGE: ucs_status_t = -1;
pub const UCS_ERR_NO_RESOURCE: ucs_status_t = -2;
pub const UCS_ERR_IO_ERROR: ucs_status_t = -3;
pub const UCS_ERR_NO_MEMORY: ucs_status_t = -4;
pub const UCS_ERR_INVALID_PARAM: ucs_status_t = -5;
pub const UCS_ERR_UNREACHABLE: ucs_status_t = -6;
pub const UCS_ERR_INVALID_ADDR: ucs_status_t = -7;
pub const UCS_ERR_NOT_IMPLEMENTED: ucs_status_t = -8;
pub const UCS_ERR_MESSAGE_TRUNCATED: ucs_status_t = -9;
pub const UCS_ERR_NO_PROGRESS: ucs_status_t = -10;
pub const UCS_ERR_BUFFER_TOO_SMALL: ucs_status_t = -11;
pub const UCS_ERR_NO_ELEM: ucs_status_t = -12;
pub const UCS_ERR_SOME_CONNECTS_FAILED: ucs_status_t = -13;
pub const UCS_ERR_NO_DEVICE: ucs_status_t = -14;
pub const UCS_ERR_BUSY: ucs_status_t = -15;
pub const UCS_ERR_CANCELED: ucs_status_t = -16;
pub const UCS_ERR_SHMEM_SEGMENT: ucs_status_t = -17;
pub const UCS_ERR_ALREADY_EXISTS: ucs_status_t = -18;
pub const UCS_ERR_OUT_OF_RANGE: ucs_status_t = -19;
pub const UCS_ERR_TIMED_OUT: ucs_status_t = -20;
pub const UCS_ERR_EXCEEDS_LIMIT: ucs_status_t = -21;
pub const UCS_ERR_UNSUPPORTED: ucs_status_t = -22;
pub const UCS_ERR_REJECTED: ucs_status_t = -23;
pub const UCS_ERR_NOT_CONNECTED: ucs_status_t = -24;
pub const UCS_ERR_CONNECTION_RESET: ucs_status_t = -25;
/// Range `FIRST_LINK_FAILURE..=LAST_LINK_FAILURE` is reserved for link errors.
pub const UCS_ERR_FIRST_LINK_FAILURE: ucs_status_t = -40;
pub const UCS_ERR_LAST_LINK_FAILURE: ucs_status_t = -59;
/// Range `FIRST_ENDPOINT_FAILURE..=LAST_ENDPOINT_FAILURE` is reserved for
/// endpoint errors.
pub const UCS_ERR_FIRST_ENDPOINT_FAILURE: ucs_status_t = -60;
pub const UCS_ERR_ENDPOINT_TIMEOUT: ucs_status_t = -80;
pub const UCS_ERR_LAST_ENDPOINT_FAILURE: ucs_status_t = -89;
pub const UCS_ERR_LAST: ucs_status_t = -100;

/// Rust view of a [`ucs_status_t`] that is not `UCS_OK`.
///
/// `Ok(..)` of a `Result<T, Status>` stands for `UCS_OK`, so there is no `Ok`
/// variant here; `InProgress` is included because several UCT calls report it
/// as a non-error outcome the caller must handle.
/// cbindgen:ignore
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum Status {
    InProgress = UCS_INPROGRESS,
    NoMessage = UCS_ERR_NO_MESSAGE,
    NoResource = UCS_ERR_NO_RESOURCE,
    IoError = UCS_ERR_IO_ERROR,
    NoMemory = UCS_ERR_NO_MEMORY,
    InvalidParam = UCS_ERR_INVALID_PARAM,
    Unreachable = UCS_ERR_UNREACHABLE,
    InvalidAddr = UCS_ERR_INVALID_ADDR,
    NotImplemented = UCS_ERR_NOT_IMPLEMENTED,
    MessageTruncated = UCS_ERR_MESSAGE_TRUNCATED,
    NoProgress = UCS_ERR_NO_PROGRESS,
    BufferTooSmall = UCS_ERR_BUFFER_TOO_SMALL,
    NoElem = UCS_ERR_NO_ELEM,
    SomeConnectsFailed = UCS_ERR_SOME_CONNECTS_FAILED,
    NoDevice = UCS_ERR_NO_DEVICE,
    Busy = UCS_ERR_BUSY,
    Canceled = UCS_ERR_CANCELED,
    ShmemSegment = UCS_ERR_SHMEM_SEGMENT,
    AlreadyExists = UCS_ERR_ALREADY_EXISTS,
    OutOfRange = UCS_ERR_OUT_OF_RANGE,
    TimedOut = UCS_ERR_TIMED_OUT,
    ExceedsLimit = UCS_ERR_EXCEEDS_LIMIT,
    Unsupported = UCS_ERR_UNSUPPORTED,
    Rejected = UCS_ERR_REJECTED,
    NotConnected = UCS_ERR_NOT_CONNECTED,
    ConnectionReset = UCS_ERR_CONNECTION_RESET,
    EndpointTimeout = UCS_ERR_ENDPOINT_TIMEOUT,
}

impl Status {
    /// Every variant, in declaration order (used by tests and by
    /// `ucs_status_string` implementations that want to enumerate).
    pub const ALL: [Status; 27] = [
        Status::InProgress,
        Status::NoMessage,
        Status::NoResource,
        Status::IoError,
        Status::NoMemory,
        Status::InvalidParam,
        Status::Unreachable,
        Status::InvalidAddr,
        Status::NotImplemented,
        Status::MessageTruncated,
        Status::NoProgress,
        Status::BufferTooSmall,
        Status::NoElem,
        Status::SomeConnectsFailed,
        Status::NoDevice,
        Status::Busy,
        Status::Canceled,
        Status::ShmemSegment,
        Status::AlreadyExists,
        Status::OutOfRange,
        Status::TimedOut,
        Status::ExceedsLimit,
        Status::Unsupported,
        Status::Rejected,
        Status::NotConnected,
        Status::ConnectionReset,
        Status::EndpointTimeout,
    ];

    /// The C value of this status.
    pub const fn raw(self) -> ucs_status_t {
        self as ucs_status_t
    }

    /// The variant naming `raw`, or `None` for `UCS_OK` and for codes UCX
    /// reserves without naming them (inside the link/endpoint failure ranges).
    pub const fn from_raw(raw: ucs_status_t) -> Option<Status> {
        let status = match raw {
            UCS_INPROGRESS => Status::InProgress,
            UCS_ERR_NO_MESSAGE => Status::NoMessage,
            UCS_ERR_NO_RESOURCE => Status::NoResource,
            UCS_ERR_IO_ERROR => Status::IoError,
            UCS_ERR_NO_MEMORY => Status::NoMemory,
            UCS_ERR_INVALID_PARAM => Status::InvalidParam,
            UCS_ERR_UNREACHABLE => Status::Unreachable,
            UCS_ERR_INVALID_ADDR => Status::InvalidAddr,
            UCS_ERR_NOT_IMPLEMENTED => Status::NotImplemented,
            UCS_ERR_MESSAGE_TRUNCATED => Status::MessageTruncated,
            UCS_ERR_NO_PROGRESS => Status::NoProgress,
            UCS_ERR_BUFFER_TOO_SMALL => Status::BufferTooSmall,
            UCS_ERR_NO_ELEM => Status::NoElem,
            UCS_ERR_SOME_CONNECTS_FAILED => Status::SomeConnectsFailed,
            UCS_ERR_NO_DEVICE => Status::NoDevice,
            UCS_ERR_BUSY => Status::Busy,
            UCS_ERR_CANCELED => Status::Canceled,
            UCS_ERR_SHMEM_SEGMENT => Status::ShmemSegment,
            UCS_ERR_ALREADY_EXISTS => Status::AlreadyExists,
            UCS_ERR_OUT_OF_RANGE => Status::OutOfRange,
            UCS_ERR_TIMED_OUT => Status::TimedOut,
            UCS_ERR_EXCEEDS_LIMIT => Status::ExceedsLimit,
            UCS_ERR_UNSUPPORTED => Status::Unsupported,
            UCS_ERR_REJECTED => Status::Rejected,
            UCS_ERR_NOT_CONNECTED => Status::NotConnected,
            UCS_ERR_CONNECTION_RESET => Status::ConnectionReset,
            UCS_ERR_ENDPOINT_TIMEOUT => Status::EndpointTimeout,
            _ => return None,
        };
        Some(status)
    }

    /// True for error codes (everything except `InProgress`).
    pub const fn is_error(self) -> bool {
        (self as i8) < 0
    }
}

/// `UCS_OK` for `Ok`, the error's code otherwise: the usual last line of an
/// `extern "C"` entry point.
#[inline]
pub fn status_of<T>(result: Result<T, Status>) -> ucs_status_t {
    match result {
        Ok(_) => UCS_OK,
        Err(status) => status.raw(),
    }
}

/// Converts a status returned by C code (a callback, a function pointer) into
/// a `Result`; codes without a [`Status`] variant (the unnamed reserved ones)
/// become `Status::IoError`, the closest generic failure, so that no failure
/// is ever mistaken for success.
pub fn result_of(raw: ucs_status_t) -> Result<(), Status> {
    if raw == UCS_OK {
        return Ok(());
    }
    Err(Status::from_raw(raw).unwrap_or(Status::IoError))
}

impl From<Status> for ucs_status_t {
    fn from(status: Status) -> Self {
        status.raw()
    }
}

impl core::fmt::Display for Status {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:?} ({})", self, self.raw())
    }
}

impl std::error::Error for Status {}
