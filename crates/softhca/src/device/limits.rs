//! Limits of the soft device: what it reports in its attributes and checks
//! when objects are created.

pub const MAX_QP_WQEBB: u32 = 1 << 15;
pub const MAX_CQE: u32 = 1 << 22;
pub const MAX_SRQ_WQE: u32 = 1 << 15;
pub const MAX_SRQ_SGE: u32 = 16;
pub const MAX_RD_ATOMIC: u8 = 16;
/// The only port.
pub const PORT: u8 = 1;
