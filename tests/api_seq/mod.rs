//! API-sequence fuzzing of the rc_mlx5 C API: random sequences of UCT calls
//! on two connected eps over the soft HCA of this process, with faults,
//! checked against what UCT and the failover API promise. Shared by the
//! cargo-fuzz target `api_sequence` and the seeded stable test
//! `tests/api_sequence.rs`; the crate that includes it has `rc_common`,
//! `failover_rc_common` and `uct_safe` at its root.

pub mod calls;
pub mod driver;
pub mod rig;
