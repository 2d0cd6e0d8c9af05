//! Several ep pairs sharing one small send CQ (UCX_RC_TX_CQ_LEN=64, so the
//! iface runs out of CQ credits long before any ring is full): AMs from
//! every ep arrive exactly once and in per-ep order; NO_RESOURCE is
//! reported and pending requests run once credits return.

mod rc_common;

use std::sync::atomic::{AtomicUsize, Ordering};

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;

const EPS: usize = 4;
const PER_EP: u64 = 500;

static PENDING_RUNS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_pending(_req: *mut uct_pending_req_t) -> ucs_status_t {
    PENDING_RUNS.fetch_add(1, Ordering::SeqCst);
    UCS_OK
}

#[test]
fn many_eps_share_the_send_cq() {
    let settings = [(c"RC_TX_CQ_LEN", c"64")];
    let a = Side::open_with(c"mlx5_0", c"mlx5_0:1", None, &settings);
    let b = Side::open_with(c"mlx5_1", c"mlx5_1:1", None, &settings);
    let at_b = b.collect_am(6);
    let eps: Vec<_> = (0..EPS).map(|_| connect_eps(&a, &b)).collect();
    let progress = || {
        a.progress();
        b.progress();
    };
    let mut no_resource = 0usize;
    let mut reqs: Vec<uct_pending_req_t> = (0..EPS)
        .map(|_| uct_pending_req_t {
            func: Some(count_pending),
            r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
        })
        .collect();
    let mut added = 0usize;
    for seq in 0..PER_EP {
        for (index, &(ep_a, _)) in eps.iter().enumerate() {
            let header = ((index as u64) << 32) | seq;
            let start = std::time::Instant::now();
            loop {
                assert!(
                    start.elapsed() < std::time::Duration::from_secs(30),
                    "no progress"
                );
                let status = am_short(ep_a, 6, header, &[]);
                if status == UCS_OK {
                    break;
                }
                assert_eq!(status, UCS_ERR_NO_RESOURCE);
                no_resource += 1;
                if added < EPS {
                    let status = pending_add(ep_a, &mut reqs[added], 0);
                    if status == UCS_OK {
                        added += 1;
                    } else {
                        assert_eq!(status, UCS_ERR_BUSY);
                    }
                }
                progress();
            }
        }
    }
    assert!(no_resource > 0, "64 CQ entries must run out");
    let total = EPS * PER_EP as usize;
    let start = std::time::Instant::now();
    while at_b.lock().unwrap().len() < total || PENDING_RUNS.load(Ordering::SeqCst) < added {
        progress();
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "stalled"
        );
    }
    assert!(added > 0);
    assert_eq!(
        PENDING_RUNS.load(Ordering::SeqCst),
        added,
        "each pending request ran once"
    );
    let messages = at_b.lock().unwrap();
    assert_eq!(messages.len(), total);
    let mut next = [0u64; EPS];
    for message in messages.iter() {
        let header = u64::from_ne_bytes(message[..8].try_into().unwrap());
        let (index, seq) = ((header >> 32) as usize, header & 0xffff_ffff);
        assert_eq!(seq, next[index], "ep {index} out of order");
        next[index] += 1;
    }
    assert!(next.iter().all(|&n| n == PER_EP));
    drop(messages);
    for &(ep_a, ep_b) in &eps {
        ep_destroy(ep_a);
        ep_destroy(ep_b);
    }
    a.close();
    b.close();
}
