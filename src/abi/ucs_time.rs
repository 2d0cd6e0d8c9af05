//! `ucs/time/time_def.h`: UCS time values.

/// A time value in UCS's internal clock units.
pub type ucs_time_t = core::ffi::c_ulong;
