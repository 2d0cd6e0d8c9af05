//! `ucs/type/cpu_set.h`: a fixed-size CPU bit mask.

use core::ffi::c_ulong;

/// One word of a CPU mask.
pub type ucs_cpu_mask_t = c_ulong;
/// Number of CPUs a `ucs_cpu_set_t` can name.
pub const UCS_CPU_SETSIZE: usize = 1024;

/// A set of CPUs, bit `n` of the array standing for CPU `n`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ucs_cpu_set {
    pub ucs_bits: [ucs_cpu_mask_t; 16],
}
pub type ucs_cpu_set_t = ucs_cpu_set;
