//! Arbitrary bytes into the RoCEv2 parser, re-emitting whatever parses.
//! The checks live in `uct::hca::soft::wire::fuzzing` so that the seeded
//! property test in `tests/wire_fuzz.rs` runs the same ones on stable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    uct::hca::soft::wire::fuzzing::exercise(data);
});
