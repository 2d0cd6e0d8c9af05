//! Seeded, bounded run of the engine fuzz checks (`uct::hca::soft::
//! engine_fuzzing`, the same code the cargo-fuzz target `engine_packets`
//! runs): an RC and a UD QP in RTS fed packet sequences must never panic, never change
//! memory no packet may change, and only send packets that parse back.

use uct::hca::soft::engine::sim::Rng;
use uct::hca::soft::engine_fuzzing::*;
use uct::hca::soft::wire::Opcode;

const RUNS: usize = 3_000;

/// One input: a flags byte, then packets with a well-formed layout for a
/// random opcode of ours (BTH, the extension headers it needs, a payload
/// that is a multiple of 4 bytes, room for the ICRC) and random contents,
/// a RETH length matching the payload most of the time, and now and then a
/// random length, so that most of them parse and some do not.
fn input(rng: &mut Rng) -> Vec<u8> {
    // Odd: responder errors are fatal (the QP stops early); mostly not.
    let mut bytes = vec![rng.chance(0.2) as u8];
    for _ in 0..rng.below(40) {
        let mut control = rng.next_u64() as u8 & (ADVANCE_TIME | POST_RECV | FIX_PSN_RESPONSE);
        // Mostly aimed at this QP, its expected PSN and its regions.
        for (bit, p) in [(FIX_QP, 0.9), (FIX_PSN_REQUEST, 0.6), (FIX_REMOTE, 0.8)] {
            if rng.chance(p) {
                control |= bit;
            }
        }
        // A time jump fires the retransmission timer; a few in a row
        // exceed the retry count and end the run with the QP in error.
        if rng.chance(0.85) {
            control &= !ADVANCE_TIME;
        }
        // Mostly the expected PSN, sometimes a little before or after it.
        let psn_offset = if rng.chance(0.7) {
            0
        } else {
            rng.below(9) as i8 - 4
        };
        let opcode = Opcode::ALL[rng.below(Opcode::ALL.len() as u64) as usize];
        let layout = opcode.layout();
        let payload = match (layout.payload, rng.below(3)) {
            (false, _) => 0,
            (true, 0) => 256, // one path-MTU packet
            (true, _) => 4 * rng.below(65) as usize,
        };
        let mut len = 12 + layout.ext_len() + payload + 4;
        if rng.chance(0.05) {
            len = rng.below(300) as usize;
        }
        let mut packet: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        if len >= 12 {
            packet[0] = opcode.as_u8();
            packet[1] &= 0xc0; // pad count 0, transport version 0
        }
        if layout.reth && len >= 28 && rng.chance(0.8) {
            let dma_len = if rng.chance(0.5) {
                payload as u32
            } else {
                rng.below(1200) as u32
            };
            packet[24..28].copy_from_slice(&dma_len.to_be_bytes());
        }
        if layout.aeth && len >= 13 && rng.chance(0.6) {
            packet[12] = 0x1f; // plain ACK, no credit limit
        }
        bytes.extend_from_slice(&[control, psn_offset as u8, rng.next_u64() as u8]);
        bytes.extend_from_slice(&(len as u16).to_be_bytes());
        bytes.extend_from_slice(&packet);
    }
    bytes
}

#[test]
fn engine_survives_random_packet_sequences() {
    let mut rng = Rng::new(0x5eed_f00d);
    let mut total = Outcome::default();
    let mut errors = 0;
    for _ in 0..RUNS {
        let outcome = exercise(&input(&mut rng));
        total.packets += outcome.packets;
        total.writes += outcome.writes;
        total.sent += outcome.sent;
        total.completions += outcome.completions;
        total.ud_delivered += outcome.ud_delivered;
        errors += usize::from(outcome.qp_error);
    }
    eprintln!("{total:?}, {errors} runs ended with the QP in error");
    // The inputs must reach the engine's data paths, not just its door.
    assert!(total.packets > 10 * RUNS as u64, "{total:?}");
    assert!(total.writes > RUNS as u64 / 2, "{total:?}");
    assert!(total.completions > RUNS as u64, "{total:?}");
    assert!(total.ud_delivered > RUNS as u64 / 10, "{total:?}");
}

#[test]
fn empty_and_tiny_inputs() {
    for input in [&[][..], &[1], &[0, 3, 0, 0, 0, 12], &[0xff; 64]] {
        exercise(input);
    }
}
