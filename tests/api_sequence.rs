//! Seeded, bounded run of the API-sequence fuzzing (`api_seq`, the same code
//! the cargo-fuzz target `api_sequence` runs): a few hundred random byte
//! strings, each decoded into a sequence of UCT calls on two connected
//! rc_mlx5 eps with faults, run through the C API and checked (no crash,
//! no hang, completions once, nothing lost or reported twice, the data
//! that arrived is what was posted). `API_SEQ_RUNS` and `API_SEQ_SEED`
//! change the run count and the seed; a failure names the case's seed.

mod api_seq;
mod failover_rc_common;
mod rc_common;
#[path = "seeded_rng/mod.rs"]
mod seeded_rng;

use api_seq::calls::decode;
use api_seq::driver::{run, Summary};
use rc_common::uct_safe;
use seeded_rng::Rng;

const RUNS: usize = 300;
const SEED: u64 = 0xa91_5e9;

/// One input: random bytes of a random length (every byte string decodes).
fn input(seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let len = 8 + rng.below(160);
    (0..len).map(|_| rng.next() as u8).collect()
}

/// A number from the environment (decimal, or hex after `0x`).
fn env_or(name: &str, default: u64) -> u64 {
    let Ok(value) = std::env::var(name) else {
        return default;
    };
    let parsed = match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    parsed.unwrap_or_else(|_| panic!("{name}={value} is not a number"))
}

#[test]
fn random_call_sequences_keep_every_promise() {
    let runs = env_or("API_SEQ_RUNS", RUNS as u64);
    let seed = env_or("API_SEQ_SEED", SEED);
    let mut total = Summary::default();
    for case in 0..runs {
        let case_seed = seed.wrapping_add(case);
        let calls = decode(&input(case_seed));
        match run(&calls) {
            Ok(summary) => {
                total.calls += summary.calls;
                total.ops += summary.ops;
                total.posted += summary.posted;
                total.completed_ok += summary.completed_ok;
                total.completed_err += summary.completed_err;
                total.reported += summary.reported;
                total.delivered += summary.delivered;
                total.purges_ok += summary.purges_ok;
                total.handler_calls += summary.handler_calls;
                total.failed_epochs += summary.failed_epochs;
                total.abandoned += summary.abandoned;
            }
            Err(message) => {
                panic!("case {case} (API_SEQ_SEED={case_seed:#x} API_SEQ_RUNS=1): {message}")
            }
        }
    }
    eprintln!("api_sequence: {runs} sequences: {total:?}");
    if runs < RUNS as u64 {
        return;
    }
    // The sequences must reach the interesting states, or the checks
    // above prove little.
    assert!(total.posted as u64 > runs, "few posts: {total:?}");
    assert!(
        total.reported > 0,
        "no purge ever reported an op: {total:?}"
    );
    assert!(
        total.failed_epochs > 0,
        "no connection ever failed: {total:?}"
    );
    assert!(total.delivered > 0, "nothing was delivered: {total:?}");
}

/// Found by this fuzzing (a `Reconnect` whose `uct_ep_connect_to_ep` was
/// refused left the peer's new ep unconnected, then `PendingAdd` on it):
/// nothing can ever run a request queued on an ep that is not connected,
/// so `uct_ep_pending_add` refuses it with `UCS_ERR_NOT_CONNECTED`, as a
/// post is refused; otherwise the ep's flush answers
/// `UCS_ERR_NO_RESOURCE` for ever and a caller's flush loop never ends.
#[test]
fn pending_add_on_an_unconnected_ep_is_refused() {
    use std::ptr::null_mut;
    use std::time::{Duration, Instant};
    use uct::abi::*;
    use uct_safe::*;

    unsafe extern "C" fn never_runs(_req: *mut uct_pending_req_t) -> ucs_status_t {
        UCS_OK
    }

    let pair = rc_common::Pair::new();
    let ep = pair.a.create_ep();
    let mut req = uct_pending_req_t {
        func: Some(never_runs),
        r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
    };
    let added = pending_add(ep, &mut req, 0);
    assert_eq!(
        added, UCS_ERR_NOT_CONNECTED,
        "pending_add on an unconnected ep"
    );
    if added == UCS_OK {
        // Queued: then a flush must end (NOT_CONNECTED, or anything but
        // "try again"), or the request must be able to run.
        let start = Instant::now();
        let mut status = UCS_ERR_NO_RESOURCE;
        while start.elapsed() < Duration::from_secs(1) {
            pair.progress();
            status = ep_flush(ep, 0, null_mut());
            if status != UCS_ERR_NO_RESOURCE && status != UCS_INPROGRESS {
                break;
            }
        }
        pending_purge(ep, None, null_mut());
        assert!(
            status != UCS_ERR_NO_RESOURCE && status != UCS_INPROGRESS,
            "pending_add on an unconnected ep answered UCS_OK, and its flush still \
             answers {status} after 1 s"
        );
    }
    ep_destroy(ep);
    pair.close();
}

/// Found by this fuzzing (case seed 0xa91654 of the seeded run): on an ep
/// that has failed with ops still outstanding (here held for purge by
/// `uct_ep_invalidate(NO_COMPLETIONS)`), `uct_ep_flush(UCT_FLUSH_FLAG_CANCEL,
/// comp)` cannot keep `comp` (held ops fire nothing until purge), so it
/// answers `UCS_ERR_CANCELED` at once, as the README says any flush of held
/// ops does; the purge that follows reports the ops.
#[test]
fn flush_cancel_on_a_held_ep_answers_canceled() {
    use api_seq::calls::*;
    // The peer's cable out first, so that the put stays outstanding.
    let calls = [
        Call::Link {
            device: 1,
            up: false,
        },
        Call::Post(Post {
            side: 0,
            op: Op::PutZcopy,
            size: 100,
            with_comp: true,
            iov_parts: 1,
        }),
        Call::Invalidate {
            side: 0,
            how: Invalidate::NoCompletions,
        },
        Call::Flush {
            side: 0,
            cancel: true,
            with_comp: true,
        },
    ];
    if let Err(message) = api_seq::driver::run(&calls) {
        panic!("{message}");
    }
}
