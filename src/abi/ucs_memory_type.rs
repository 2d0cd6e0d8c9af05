//! `ucs/memory/memory_type.h`: where a buffer lives.

use core::ffi::c_uint;

/// Kind of memory a buffer lives in.
pub type ucs_memory_type_t = c_uint;
pub const UCS_MEMORY_TYPE_HOST: ucs_memory_type_t = 0;
pub const UCS_MEMORY_TYPE_CUDA: ucs_memory_type_t = 1;
pub const UCS_MEMORY_TYPE_CUDA_MANAGED: ucs_memory_type_t = 2;
pub const UCS_MEMORY_TYPE_ROCM: ucs_memory_type_t = 3;
pub const UCS_MEMORY_TYPE_ROCM_MANAGED: ucs_memory_type_t = 4;
pub const UCS_MEMORY_TYPE_RDMA: ucs_memory_type_t = 5;
pub const UCS_MEMORY_TYPE_ZE_HOST: ucs_memory_type_t = 6;
pub const UCS_MEMORY_TYPE_ZE_DEVICE: ucs_memory_type_t = 7;
pub const UCS_MEMORY_TYPE_ZE_MANAGED: ucs_memory_type_t = 8;
pub const UCS_MEMORY_TYPE_GAUDI: ucs_memory_type_t = 9;
/// Number of real memory types; also the size of `ucs_memory_type_names`.
pub const UCS_MEMORY_TYPE_LAST: ucs_memory_type_t = 10;
/// "Not known yet": shares the value of `UCS_MEMORY_TYPE_LAST`.
pub const UCS_MEMORY_TYPE_UNKNOWN: ucs_memory_type_t = 10;

/// Bit mask of the memory types the CPU can load from and store to directly
/// (bit `n` stands for memory type `n`).
pub const UCS_MEMORY_TYPES_CPU_ACCESSIBLE: u64 = 0x151;

/// Properties of a memory region.
pub type ucs_mem_flags_t = c_uint;
/// The region can be registered with a memory domain.
pub const UCS_MEM_FLAG_REGISTRABLE: ucs_mem_flags_t = 0x1;
