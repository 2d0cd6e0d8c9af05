//! Sequences of UCT calls through the C API on two connected rc_mlx5 eps
//! over the soft HCA of this process, with faults (link cuts, drops, loss),
//! failover (invalidate, enable, purge with good and bad tokens), pending
//! requests, flushes and destroys. The decoding and the checks live in
//! `tests/api_seq` so that `cargo test --test api_sequence` runs the same
//! ones on stable; a broken promise panics with the calls that led to it,
//! a hang aborts with the call it hangs in.
#![no_main]

#[path = "../../tests/rc_common/mod.rs"]
mod rc_common;
#[path = "../../tests/failover_rc_common/mod.rs"]
mod failover_rc_common;
#[path = "../../tests/api_seq/mod.rs"]
mod api_seq;

use libfuzzer_sys::fuzz_target;
use rc_common::uct_safe;

fuzz_target!(|data: &[u8]| {
    let calls = api_seq::calls::decode(data);
    if let Err(message) = api_seq::driver::run(&calls) {
        panic!("{message}");
    }
});
