//! Seeded, bounded fuzzing of the RoCEv2 parser: random bytes and mutations
//! of valid packets of every opcode must never panic, and whatever parses
//! must re-emit to the same meaning. This is the CI-run counterpart of the
//! cargo-fuzz target `fuzz/fuzz_targets/wire_parse.rs` (same checks).

mod seeded_rng;

use seeded_rng::Rng;
use uct::hca::soft::wire::fuzzing::{context, exercise};
use uct::hca::soft::wire::*;

const ROUNDS: usize = 200_000;

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(0x00c0_ffee);
    let mut parsed = 0;
    for _ in 0..ROUNDS / 4 {
        let len = rng.below(130);
        let mut input: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Bias towards our opcodes and transport version 0 so parsing goes deep.
        if len > 3 && rng.below(2) == 0 {
            input[1] = Opcode::ALL[rng.below(Opcode::ALL.len())].as_u8();
            input[2] &= 0xf0;
        }
        if exercise(&input) {
            parsed += 1;
        }
    }
    assert!(parsed > 1000, "only {parsed} random inputs parsed");
}

#[test]
fn mutated_valid_packets_never_panic() {
    let mut rng = Rng::new(0x0bad_5eed);
    let ctx = context();
    let payload: Vec<u8> = (0..40u8).collect();
    let mut valid = Vec::new();
    for op in Opcode::ALL {
        let layout = op.layout();
        let mut repr = PacketRepr::new(
            Bth::new(op, 0x42, 0xff_fff0),
            if layout.payload { &payload[..] } else { &[] },
        );
        repr.deth = layout.deth.then_some(Deth {
            qkey: 0x1ee7_a330,
            src_qp: 0x33,
        });
        repr.reth = layout.reth.then_some(Reth::default());
        repr.atomic = layout.atomic.then_some(AtomicEth::default());
        repr.ext_atomic = layout.ext_atomic.then_some(ExtAtomicEth {
            va: 0,
            rkey: 0,
            size: AtomicSize::Bits64,
            swap_add: 1,
            compare: 2,
            swap_add_mask: 3,
            compare_mask: 4,
        });
        repr.aeth = layout.aeth.then_some(Aeth {
            syndrome: AethSyndrome::Nak(NakCode::RemoteAccessError),
            msn: 5,
        });
        repr.atomic_ack = layout.atomic_ack.then_some(AtomicAckEth { orig: 9 });
        repr.imm = layout.imm.then_some(7);
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf, &ctx).unwrap();
        valid.push(buf);
    }

    let mut parsed = 0;
    for round in 0..ROUNDS {
        let mut m = valid[round % valid.len()].clone();
        for _ in 0..=rng.below(3) {
            match rng.below(6) {
                0 if !m.is_empty() => {
                    let i = rng.below(m.len());
                    m[i] ^= 1 << rng.below(8);
                }
                1 if !m.is_empty() => {
                    let i = rng.below(m.len());
                    m[i] = rng.next() as u8;
                }
                2 => m.truncate(rng.below(m.len() + 1)),
                3 => m.extend((0..rng.below(9)).map(|_| rng.next() as u8)),
                4 if !m.is_empty() => m[0] = rng.next() as u8,
                5 if m.len() > 1 => m[1] = (m[1] & 0xcf) | ((rng.below(4) as u8) << 4),
                _ => {}
            }
        }
        // Odd mode byte: the harness recomputes the ICRC.
        let mode = rng.next() as u8;
        let mut input = vec![mode];
        input.extend_from_slice(&m);
        if exercise(&input) {
            parsed += 1;
        }
    }
    assert!(parsed > ROUNDS / 10, "only {parsed} mutations parsed");
}
