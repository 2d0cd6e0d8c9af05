//! Packet sequences into an RC QP in RTS with registered memory (responder
//! and requester paths). The checks live in `uct::hca::soft::engine_fuzzing`
//! so that `cargo test --test softhca_engine_fuzz` runs the same ones on
//! stable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    uct::hca::soft::engine_fuzzing::exercise(data);
});
