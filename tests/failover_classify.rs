//! Failover classification: which outstanding ops the peer has, from PSNs.
//! Tables over every op class × delivered / undelivered / partially
//! delivered, the PSN wrap at 2^24, lost fetches, GETs without data, flush
//! ordering, internal ops, and refused tokens and op lists.

use uct::abi::Status;
use uct::failover::{classify, packets_for, FailoverError, OpClass, OpPsns, Verdict};
use uct::mlx5::{psn_add, psn_distance, PSN_MASK};

const MTU: u32 = 1024;

/// Lays out ops back to back from `start`, as a requester numbers them.
struct Layout {
    ops: Vec<OpPsns>,
    next_psn: u32,
}

impl Layout {
    fn new(start: u32) -> Layout {
        Layout {
            ops: Vec::new(),
            next_psn: start,
        }
    }

    fn op(mut self, class: OpClass, length: usize) -> Layout {
        let count = packets_for(class, length, MTU);
        self.ops.push(OpPsns {
            class,
            first_psn: self.next_psn,
            psn_count: count,
            cqe_seen: false,
        });
        self.next_psn = psn_add(self.next_psn, count);
        self
    }

    fn cqe_seen_at(mut self, index: usize) -> Layout {
        self.ops[index].cqe_seen = true;
        self
    }

    /// The PSN just past op `index` (what the responder expects after it).
    fn end_of(&self, index: usize) -> u32 {
        psn_add(self.ops[index].first_psn, self.ops[index].psn_count)
    }

    fn classify(&self, rx_next_psn: u32) -> Result<Vec<Verdict>, FailoverError> {
        classify(&self.ops, self.next_psn, rx_next_psn)
    }
}

/// The length used for a class in the single-op tables: 3 packets for data
/// ops, so that "partially delivered" exists.
fn multi_packet_length(class: OpClass) -> usize {
    match class {
        OpClass::Am | OpClass::Put | OpClass::Get => 2 * MTU as usize + 1,
        _ => 8,
    }
}

/// One op of each class, alone; the responder accepted all, none or (for
/// multi-packet ops) part of its packets; no CQE polled.
#[test]
fn single_op_table_every_class() {
    use Verdict::*;
    // (class, all accepted, none accepted, part accepted)
    let table = [
        (OpClass::Am, Delivered, Replay, Some(Replay)),
        (OpClass::Put, Delivered, Replay, Some(Replay)),
        (OpClass::Get, GetReplay, GetReplay, Some(GetReplay)),
        (OpClass::AtomicPost, Delivered, Replay, None),
        (OpClass::AtomicFetch, FetchLost, Replay, None),
        (OpClass::AtomicCswap, FetchLost, Replay, None),
        (OpClass::Flush, Delivered, Delivered, None),
        (OpClass::Internal, InternalConsumed, InternalConsumed, None),
    ];
    for start in [0u32, 0x00_1000, 0xff_fffe] {
        for (class, all, none, part) in table {
            let layout = Layout::new(start).op(class, multi_packet_length(class));
            let first = layout.ops[0].first_psn;
            assert_eq!(
                layout.classify(layout.next_psn),
                Ok(vec![all]),
                "{class:?} all accepted, start 0x{start:x}"
            );
            assert_eq!(
                layout.classify(first),
                Ok(vec![none]),
                "{class:?} none accepted, start 0x{start:x}"
            );
            if let Some(part) = part {
                assert_eq!(layout.ops[0].psn_count, 3);
                for accepted in 1..3 {
                    assert_eq!(
                        layout.classify(psn_add(first, accepted)),
                        Ok(vec![part]),
                        "{class:?} {accepted} of 3 packets, start 0x{start:x}"
                    );
                }
            }
        }
    }
}

/// With the op's CQE polled, every class is delivered (the data and the
/// fetched values arrived), whatever the token says within the window.
#[test]
fn single_op_with_cqe_is_delivered() {
    for class in [
        OpClass::Am,
        OpClass::Put,
        OpClass::Get,
        OpClass::AtomicPost,
        OpClass::AtomicFetch,
        OpClass::AtomicCswap,
        OpClass::Flush,
    ] {
        let layout = Layout::new(77)
            .op(class, multi_packet_length(class))
            .cqe_seen_at(0);
        assert_eq!(
            layout.classify(layout.next_psn),
            Ok(vec![Verdict::Delivered]),
            "{class:?}"
        );
    }
    let internal = Layout::new(77).op(OpClass::Internal, 0).cqe_seen_at(0);
    assert_eq!(internal.classify(77), Ok(vec![Verdict::InternalConsumed]));
}

/// A CQE covers every op before it (in-order completion): a GET and a fetch
/// before a polled CQE are delivered even though their own CQE was not
/// requested.
#[test]
fn a_later_cqe_completes_the_ops_before_it() {
    let layout = Layout::new(10)
        .op(OpClass::Get, 100)
        .op(OpClass::AtomicFetch, 8)
        .op(OpClass::Put, 5000)
        .cqe_seen_at(2)
        .op(OpClass::Get, 100)
        .op(OpClass::AtomicCswap, 8)
        .op(OpClass::Am, 10);
    let end_of_put = layout.end_of(2);
    assert_eq!(
        layout.classify(end_of_put),
        Ok(vec![
            Verdict::Delivered,
            Verdict::Delivered,
            Verdict::Delivered,
            Verdict::GetReplay,
            Verdict::Replay,
            Verdict::Replay,
        ])
    );
    assert_eq!(
        layout.classify(layout.next_psn),
        Ok(vec![
            Verdict::Delivered,
            Verdict::Delivered,
            Verdict::Delivered,
            Verdict::GetReplay,
            Verdict::FetchLost,
            Verdict::Delivered,
        ])
    );
}

/// A stream of mixed ops crossing PSN 2^24 - 1 → 0, with the responder's
/// position at every packet boundary: each op is delivered exactly when the
/// position is past its last packet, regardless of the wrap.
#[test]
fn psn_wrap_at_2_pow_24() {
    let layout = Layout::new(0xff_fffa)
        .op(OpClass::Am, 10) // 1 packet: ..fa
        .op(OpClass::Put, 3 * MTU as usize) // 3: ..fb..fd
        .op(OpClass::Internal, 0) // NOP
        .op(OpClass::Am, 4 * MTU as usize) // 4: ..fe, ..ff, 0, 1
        .op(OpClass::AtomicPost, 8) // 1: 2
        .op(OpClass::Put, 1); // 1: 3
    assert_eq!(layout.next_psn, 4);
    assert_eq!(layout.ops[3].first_psn, 0xff_fffe);
    let total = psn_distance(layout.ops[0].first_psn, layout.next_psn);
    assert_eq!(total, 10);
    for accepted in 0..=total as u32 {
        let rx = psn_add(0xff_fffa, accepted);
        let verdicts = layout.classify(rx).unwrap();
        for (index, (op, verdict)) in layout.ops.iter().zip(&verdicts).enumerate() {
            let expected = if op.class == OpClass::Internal {
                Verdict::InternalConsumed
            } else if psn_distance(op.first_psn, rx) >= op.psn_count as i32 {
                Verdict::Delivered
            } else {
                Verdict::Replay
            };
            assert_eq!(*verdict, expected, "op {index}, rx 0x{rx:06x}");
        }
    }
    // The AM across the wrap: delivered at rx = 2, not at rx = 1.
    assert_eq!(layout.classify(1).unwrap()[3], Verdict::Replay);
    assert_eq!(layout.classify(2).unwrap()[3], Verdict::Delivered);
}

#[test]
fn fetching_atomics_executed_without_result_are_lost_not_replayed() {
    let layout = Layout::new(500)
        .op(OpClass::AtomicFetch, 8)
        .op(OpClass::AtomicCswap, 4)
        .op(OpClass::AtomicPost, 8)
        .op(OpClass::AtomicFetch, 8);
    // Responder executed the first three.
    let rx = layout.end_of(2);
    assert_eq!(
        layout.classify(rx),
        Ok(vec![
            Verdict::FetchLost,
            Verdict::FetchLost,
            Verdict::Delivered,
            Verdict::Replay,
        ])
    );
}

#[test]
fn gets_without_data_are_replayed_never_delivered() {
    let layout = Layout::new(0)
        .op(OpClass::Get, 8)
        .op(OpClass::Get, 5 * MTU as usize)
        .op(OpClass::Put, 8);
    for rx in 0..=layout.next_psn {
        let verdicts = layout.classify(rx).unwrap();
        assert_eq!(verdicts[0], Verdict::GetReplay, "rx {rx}");
        assert_eq!(verdicts[1], Verdict::GetReplay, "rx {rx}");
        let put = if rx == layout.next_psn {
            Verdict::Delivered
        } else {
            Verdict::Replay
        };
        assert_eq!(verdicts[2], put, "rx {rx}");
    }
}

#[test]
fn flush_follows_the_ops_before_it() {
    use Verdict::*;
    // Everything before delivered: the flush is done.
    let layout = Layout::new(40)
        .op(OpClass::Am, 8)
        .op(OpClass::Put, 8)
        .op(OpClass::Flush, 0)
        .op(OpClass::Am, 8);
    assert_eq!(
        layout.classify(layout.end_of(1)),
        Ok(vec![Delivered, Delivered, Delivered, Replay])
    );
    // One op before it replayed: the flush is replayed after it.
    assert_eq!(
        layout.classify(layout.end_of(0)),
        Ok(vec![Delivered, Replay, Replay, Replay])
    );
    // A GET before it without data, though later ops were accepted.
    let with_get = Layout::new(40)
        .op(OpClass::Get, 8)
        .op(OpClass::Put, 8)
        .op(OpClass::Flush, 0);
    assert_eq!(
        with_get.classify(with_get.next_psn),
        Ok(vec![GetReplay, Delivered, Replay])
    );
    // Only a lost fetch before it: completed with the loss status.
    let with_fetch = Layout::new(40)
        .op(OpClass::AtomicFetch, 8)
        .op(OpClass::Put, 8)
        .op(OpClass::Flush, 0)
        .op(OpClass::Flush, 0);
    assert_eq!(
        with_fetch.classify(with_fetch.next_psn),
        Ok(vec![FetchLost, Delivered, FlushAfterLoss, FlushAfterLoss])
    );
    // Ops after a flush do not affect it; a second flush sees them.
    let two = Layout::new(40)
        .op(OpClass::Put, 8)
        .op(OpClass::Flush, 0)
        .op(OpClass::Get, 8)
        .op(OpClass::Flush, 0);
    assert_eq!(
        two.classify(two.next_psn),
        Ok(vec![Delivered, Delivered, GetReplay, Replay])
    );
    // Internal ops before a flush never hold it back.
    let internal = Layout::new(40)
        .op(OpClass::Internal, 0)
        .op(OpClass::Am, 8) // a grant is a SEND: uses a PSN
        .op(OpClass::Flush, 0);
    let mut internal = internal;
    internal.ops[1].class = OpClass::Internal;
    assert_eq!(
        internal.classify(internal.ops[0].first_psn),
        Ok(vec![InternalConsumed, InternalConsumed, Delivered])
    );
}

#[test]
fn flush_that_uses_packets_needs_them_accepted() {
    let mut layout = Layout::new(5).op(OpClass::Put, 8).op(OpClass::Get, 0);
    // A flush implemented with a READ (remote flush): class Flush, 1 PSN.
    layout.ops[1].class = OpClass::Flush;
    assert_eq!(
        layout.classify(layout.end_of(0)),
        Ok(vec![Verdict::Delivered, Verdict::Replay])
    );
    assert_eq!(
        layout.classify(layout.next_psn),
        Ok(vec![Verdict::Delivered, Verdict::Delivered])
    );
}

#[test]
fn zero_psn_ops_at_the_edges() {
    let layout = Layout::new(0xff_ffff)
        .op(OpClass::Internal, 0)
        .op(OpClass::Flush, 0)
        .op(OpClass::Am, 1)
        .op(OpClass::Internal, 0)
        .op(OpClass::Flush, 0);
    assert_eq!(layout.next_psn, 0);
    assert_eq!(
        layout.classify(0xff_ffff),
        Ok(vec![
            Verdict::InternalConsumed,
            Verdict::Delivered,
            Verdict::Replay,
            Verdict::InternalConsumed,
            Verdict::Replay,
        ])
    );
    assert_eq!(
        layout.classify(0),
        Ok(vec![
            Verdict::InternalConsumed,
            Verdict::Delivered,
            Verdict::Delivered,
            Verdict::InternalConsumed,
            Verdict::Delivered,
        ])
    );
}

fn assert_outside_window(result: Result<Vec<Verdict>, FailoverError>, what: &str) {
    match result {
        Err(error @ FailoverError::RxPsnOutsideWindow { .. }) => {
            assert_eq!(error.status(), Status::InvalidParam, "{what}");
            assert!(error.to_string().contains("stale or foreign"), "{what}");
        }
        other => panic!("{what}: expected RxPsnOutsideWindow, got {other:?}"),
    }
}

#[test]
fn rx_psn_outside_the_window_is_refused() {
    let layout = Layout::new(0xff_fff0)
        .op(OpClass::Put, 4 * MTU as usize)
        .op(OpClass::Am, 8)
        .cqe_seen_at(1)
        .op(OpClass::Get, 64);
    let end_of_cqe = layout.end_of(1);
    assert_eq!(end_of_cqe, 0xff_fff5);
    // Below what the ep saw acknowledged: stale.
    assert_outside_window(layout.classify(0xff_fff0), "first PSN, behind CQE");
    assert_outside_window(layout.classify(0xff_fff4), "one behind CQE");
    assert!(layout.classify(end_of_cqe).is_ok());
    assert!(layout.classify(layout.next_psn).is_ok());
    // Beyond what the ep sent: foreign.
    assert_outside_window(layout.classify(psn_add(layout.next_psn, 1)), "one past");
    assert_outside_window(layout.classify(0x40_0000), "far away");
    assert_outside_window(layout.classify(0x7f_fff0), "half the space away");
    // No CQE: the window starts at the first outstanding PSN.
    let fresh = Layout::new(100).op(OpClass::Am, 8).op(OpClass::Am, 8);
    assert!(fresh.classify(100).is_ok());
    assert_outside_window(fresh.classify(99), "before first PSN");
    assert_outside_window(fresh.classify(103), "after next PSN");
    // Bits above 24 are not a PSN at all.
    assert!(matches!(
        fresh.classify(0x0100_0064),
        Err(FailoverError::FieldOutOfRange { .. })
    ));
}

fn assert_inconsistent(result: Result<Vec<Verdict>, FailoverError>, index: usize) {
    match result {
        Err(error @ FailoverError::InconsistentOps { index: at, .. }) => {
            assert_eq!(at, index);
            assert_eq!(error.status(), Status::IoError);
        }
        other => panic!("expected InconsistentOps at {index}, got {other:?}"),
    }
}

#[test]
fn inconsistent_op_lists_are_refused() {
    let good = Layout::new(10).op(OpClass::Am, 8).op(OpClass::Put, 8);
    // A gap between ops.
    let mut gap = Layout::new(10).op(OpClass::Am, 8).op(OpClass::Put, 8);
    gap.ops[1].first_psn = 12;
    gap.next_psn = 13;
    assert_inconsistent(gap.classify(12), 1);
    // The list does not end where the ep's next PSN is.
    assert_inconsistent(classify(&good.ops, 13, 12), 1);
    // A data op without packets.
    let mut empty = Layout::new(10).op(OpClass::Am, 8);
    empty.ops[0].psn_count = 0;
    empty.next_psn = 10;
    assert_inconsistent(empty.classify(10), 0);
    // PSNs wider than 24 bits.
    let mut wide = Layout::new(10).op(OpClass::Am, 8);
    wide.ops[0].first_psn |= 0x0100_0000;
    assert_inconsistent(wide.classify(11), 0);
    // A window of half the PSN space or more has no direction.
    let huge = Layout::new(0).op(OpClass::Put, (1usize << 23) * MTU as usize);
    assert_inconsistent(huge.classify(0), 0);
    assert!(good.classify(12).is_ok());
}

/// Seeded random streams: properties every classification must have,
/// checked independently of how the rules are written.
#[test]
fn random_streams_keep_the_invariants() {
    let mut seed: u64 = 0x5eed_f00d;
    let mut next = move |bound: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % bound
    };
    let classes = [
        OpClass::Am,
        OpClass::Put,
        OpClass::Get,
        OpClass::AtomicPost,
        OpClass::AtomicFetch,
        OpClass::AtomicCswap,
        OpClass::Flush,
        OpClass::Internal,
    ];
    for _ in 0..300 {
        let start = next(u64::from(PSN_MASK) + 1) as u32;
        let mut layout = Layout::new(start);
        let count = 1 + next(20) as usize;
        for _ in 0..count {
            let class = classes[next(classes.len() as u64) as usize];
            layout = layout.op(class, next(4 * u64::from(MTU)) as usize);
        }
        let cqe_at = if next(3) == 0 {
            Some(next(count as u64) as usize)
        } else {
            None
        };
        if let Some(index) = cqe_at {
            layout = layout.cqe_seen_at(index);
        }
        let low = cqe_at.map_or(start, |i| layout.end_of(i));
        let span = psn_distance(low, layout.next_psn) as u32;
        let rx = psn_add(low, next(u64::from(span) + 1) as u32);
        let verdicts = layout.classify(rx).unwrap();
        assert_eq!(verdicts.len(), count);
        let mut replay_seen = false;
        for (index, (op, verdict)) in layout.ops.iter().zip(&verdicts).enumerate() {
            let covered = cqe_at.is_some_and(|c| index <= c);
            let accepted = psn_distance(op.first_psn, rx) >= op.psn_count as i32;
            match op.class {
                OpClass::Internal => assert_eq!(*verdict, Verdict::InternalConsumed),
                OpClass::Get => assert_eq!(
                    *verdict,
                    if covered {
                        Verdict::Delivered
                    } else {
                        Verdict::GetReplay
                    }
                ),
                OpClass::AtomicFetch | OpClass::AtomicCswap if !covered && accepted => {
                    assert_eq!(*verdict, Verdict::FetchLost)
                }
                OpClass::Flush => {
                    // A flush is done only if nothing before it is replayed.
                    if replay_seen {
                        assert_eq!(*verdict, Verdict::Replay);
                    } else {
                        assert_ne!(*verdict, Verdict::Replay);
                    }
                }
                _ => assert_eq!(
                    *verdict,
                    if covered || accepted {
                        Verdict::Delivered
                    } else {
                        Verdict::Replay
                    },
                    "op {index} {op:?} rx 0x{rx:06x}"
                ),
            }
            if matches!(verdict, Verdict::Replay | Verdict::GetReplay) {
                replay_seen = true;
            }
            // Nothing is both at the peer and replayed: a replayed data op
            // was never fully accepted, unless it is a READ.
            if *verdict == Verdict::Replay && op.class != OpClass::Flush {
                assert!(!accepted, "op {index} accepted but replayed");
            }
        }
    }
}
