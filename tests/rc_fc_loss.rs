//! rc_mlx5 AM flow control over lossy soft devices (5 % of packets dropped
//! each way): thousands of AMs both ways through a window of 16 arrive
//! exactly once and in order, so requests and grants (messages and
//! piggybacked) survive retransmission. Its own test binary, since the
//! loss applies to the whole device.

mod rc_common;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;

const AM_ID: u8 = 4;

fn send_until_accepted(pair: &Pair, ep: uct_ep_h, seq: u64) {
    loop {
        let status = am_short(ep, AM_ID, seq, &[]);
        if status == UCS_OK {
            return;
        }
        assert_eq!(status, UCS_ERR_NO_RESOURCE);
        pair.progress();
    }
}

#[test]
fn small_window_under_loss_delivers_everything_once_in_order() {
    const COUNT: u64 = 2000;
    std::env::set_var("UCX_SOFT_HCA_SEED", "20261202");
    let settings = [
        (c"RC_TIMEOUT", c"10ms"),
        (c"RC_RETRY_COUNT", c"7"),
        (c"RC_FC_WND_SIZE", c"16"),
    ];
    let pair = Pair::with_config(None, None, &settings);
    assert_eq!(loss_set(c"mlx5_0", 0.05), UCS_OK);
    assert_eq!(loss_set(c"mlx5_1", 0.05), UCS_OK);
    let (at_a, at_b) = (inbox(), inbox());
    for (side, inbox) in [(&pair.a, at_a), (&pair.b, at_b)] {
        side.collect_am_into(AM_ID, inbox);
    }
    // Mostly a → b (grant messages), with some b → a traffic now and then
    // (piggybacked grants).
    let mut back = 0u64;
    for seq in 0..COUNT {
        send_until_accepted(&pair, pair.ep_a, seq);
        if seq % 5 == 0 {
            send_until_accepted(&pair, pair.ep_b, back);
            back += 1;
        }
    }
    assert!(pair.wait(|| {
        at_b.lock().unwrap().len() as u64 >= COUNT && at_a.lock().unwrap().len() as u64 >= back
    }));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(pair.flush(pair.ep_b), UCS_OK);
    for _ in 0..100 {
        pair.progress();
    }
    assert_eq!(sequence(at_b), (0..COUNT).collect::<Vec<u64>>());
    assert_eq!(sequence(at_a), (0..back).collect::<Vec<u64>>());
    assert_eq!(loss_set(c"mlx5_0", 0.0), UCS_OK);
    assert_eq!(loss_set(c"mlx5_1", 0.0), UCS_OK);
    pair.close();
}
