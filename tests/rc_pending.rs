//! rc_mlx5 pending requests dispatched as UCX's arbiter does: a callback
//! that answers `UCS_INPROGRESS` stays at the head of its ep's queue and is
//! called again in the same dispatch while resources last; sends of the
//! user never overtake a waiting request; and a sender that moves long
//! multi-fragment messages the way UCP does (one fragment per callback,
//! `UCS_INPROGRESS` until the last) through a small flow-control window
//! never stalls at a window boundary, with bcopy and zcopy fragments.

mod rc_common;

use std::ffi::{c_void, CStr};
use std::ptr::null_mut;
use std::sync::Mutex;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;

/// Tests here fill send resources on purpose: one at a time.
static TRAFFIC: Mutex<()> = Mutex::new(());

fn traffic() -> std::sync::MutexGuard<'static, ()> {
    TRAFFIC.lock().unwrap_or_else(|p| p.into_inner())
}

const AM_ID: u8 = 3;

/// UCX's gtest settings for pending tests: a short send queue, no flow
/// control (the ring, not the window, runs out).
const SMALL_QUEUE: [(&CStr, &CStr); 2] = [(c"RC_TX_QUEUE_LEN", c"32"), (c"RC_FC_ENABLE", c"n")];

/// A pending request that answers `UCS_INPROGRESS` `countdown` times, then
/// sends AM `seq` (as UCX's `test_uct_pending` does).
#[repr(C)]
struct CountdownReq {
    req: uct_pending_req_t,
    ep: uct_ep_h,
    seq: u64,
    countdown: u32,
    sent: bool,
}

unsafe extern "C" fn countdown_send(req: *mut uct_pending_req_t) -> ucs_status_t {
    // SAFETY: req is the first field of a live CountdownReq.
    let this = unsafe { &mut *(req as *mut CountdownReq) };
    if this.countdown > 0 {
        this.countdown -= 1;
        return UCS_INPROGRESS;
    }
    let status = am_short(this.ep, AM_ID, this.seq, &[]);
    if status == UCS_OK {
        this.sent = true;
    }
    status
}

impl CountdownReq {
    fn new(ep: uct_ep_h, seq: u64, countdown: u32) -> Box<CountdownReq> {
        Box::new(CountdownReq {
            req: uct_pending_req_t {
                func: Some(countdown_send),
                r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
            },
            ep,
            seq,
            countdown,
            sent: false,
        })
    }

    fn sent(&self) -> bool {
        read_volatile(&self.sent)
    }
}

/// Sends AMs `0..` from `pair.ep_a` without progressing a until the ring is
/// full; returns the next sequence number.
fn fill_ring(pair: &Pair) -> u64 {
    let mut seq = 0u64;
    while am_short(pair.ep_a, AM_ID, seq, &[]) == UCS_OK {
        seq += 1;
        assert!(seq < 100_000, "the send queue never filled");
    }
    seq
}

#[test]
fn a_request_answering_in_progress_is_called_again_until_it_sends() {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &SMALL_QUEUE);
    let at_b = pair.b.collect_am(AM_ID);
    let seq = fill_ring(&pair);
    let mut req = CountdownReq::new(pair.ep_a, seq, 5);
    assert_eq!(pending_add(pair.ep_a, &mut req.req, 0), UCS_OK);
    // Nothing else is ever sent: only the dispatch that runs when the ring
    // drains can take the request through its five `UCS_INPROGRESS`.
    assert!(pair.wait(|| req.sent()), "the pending request never sent");
    assert!(pair.wait(|| at_b.lock().unwrap().len() as u64 == seq + 1));
    assert_eq!(sequence(at_b), (0..=seq).collect::<Vec<u64>>());
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    pair.close();
}

#[test]
fn a_send_of_the_user_does_not_overtake_a_waiting_request() {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &SMALL_QUEUE);
    let at_b = pair.b.collect_am(AM_ID);
    let seq = fill_ring(&pair);
    let mut req = CountdownReq::new(pair.ep_a, seq, 5);
    assert_eq!(pending_add(pair.ep_a, &mut req.req, 0), UCS_OK);
    // The receiver takes everything; the sender's ring drains as a
    // progresses. The next message goes only once the request has sent.
    for _ in 0..1000 {
        pair.b.progress();
    }
    let status = pair.post_retrying(|| am_short(pair.ep_a, AM_ID, seq + 1, &[]));
    assert_eq!(status, UCS_OK);
    assert!(req.sent());
    assert!(pair.wait(|| at_b.lock().unwrap().len() as u64 == seq + 2));
    assert_eq!(sequence(at_b), (0..=seq + 1).collect::<Vec<u64>>());
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    pair.close();
}

#[test]
fn a_user_send_with_requests_waiting_answers_no_resource() {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, &SMALL_QUEUE);
    let at_b = pair.b.collect_am(AM_ID);
    let seq = fill_ring(&pair);
    // A request that never finishes on its own while `hold` is set.
    let mut req = CountdownReq::new(pair.ep_a, seq, u32::MAX);
    assert_eq!(pending_add(pair.ep_a, &mut req.req, 0), UCS_OK);
    // Let the ring drain (the request keeps answering in progress, each
    // dispatch returns after a bounded number of calls).
    for _ in 0..200 {
        pair.progress();
    }
    assert!(!req.sent());
    // Room in the ring, but a request of this ep waits: no overtaking.
    assert_eq!(
        am_short(pair.ep_a, AM_ID, seq + 1, &[]),
        UCS_ERR_NO_RESOURCE
    );
    // Purged, the ep sends again.
    pending_purge(pair.ep_a, None, null_mut());
    assert_eq!(
        pair.post_retrying(|| am_short(pair.ep_a, AM_ID, seq, &[])),
        UCS_OK
    );
    assert!(pair.wait(|| at_b.lock().unwrap().len() as u64 == seq + 1));
    assert_eq!(sequence(at_b), (0..=seq).collect::<Vec<u64>>());
    pair.close();
}

// --------------------------------------------- UCP-like multi-fragment --

/// Payload bytes of each fragment after its 8-byte sequence number.
const FRAGMENT_PAYLOAD: usize = 200;

/// A message of `fragments` AMs sent as UCP sends a long message: each call
/// of [`Message::step`] (directly, or as the pending callback) sends one
/// fragment, alternately bcopy and zcopy, and answers `UCS_INPROGRESS`
/// until the last one is out (`UCS_OK`), or `UCS_ERR_NO_RESOURCE`.
#[repr(C)]
struct Message {
    req: uct_pending_req_t,
    ep: uct_ep_h,
    /// Registered memory the zcopy fragments point at (never written while
    /// the message is in flight).
    payload: *const u8,
    memh: uct_mem_h,
    /// The sequence number of the next fragment, and one past the last.
    next: u64,
    end: u64,
    done: bool,
    /// Times the pending callback was called.
    callbacks: u64,
}

unsafe extern "C" fn pack_fragment(dest: *mut c_void, arg: *mut c_void) -> usize {
    // SAFETY: arg is a live Message; dest holds max_bcopy bytes (more than
    // a fragment).
    unsafe {
        let message = &*(arg as *const Message);
        (dest as *mut u64).write_unaligned(message.next);
        std::ptr::copy_nonoverlapping(message.payload, (dest as *mut u8).add(8), FRAGMENT_PAYLOAD);
    }
    8 + FRAGMENT_PAYLOAD
}

impl Message {
    fn step(&mut self) -> ucs_status_t {
        let status = if self.next % 2 == 0 {
            // SAFETY: a live ep; the pack callback reads this message.
            let sent = unsafe {
                uct::api::ep::uct_ep_am_bcopy(
                    self.ep,
                    AM_ID,
                    Some(pack_fragment),
                    self as *mut Message as *mut c_void,
                    0,
                )
            };
            if sent < 0 {
                sent as ucs_status_t
            } else {
                UCS_OK
            }
        } else {
            let iov = [uct_iov_t {
                buffer: self.payload as *mut c_void,
                length: FRAGMENT_PAYLOAD,
                memh: self.memh,
                stride: 0,
                count: 1,
            }];
            am_zcopy(
                self.ep,
                AM_ID,
                &self.next.to_ne_bytes(),
                &iov,
                0,
                null_mut(),
            )
        };
        match status {
            UCS_OK | UCS_INPROGRESS => {
                self.next += 1;
                if self.next == self.end {
                    self.done = true;
                    UCS_OK
                } else {
                    UCS_INPROGRESS
                }
            }
            status => status,
        }
    }
}

unsafe extern "C" fn message_pending(req: *mut uct_pending_req_t) -> ucs_status_t {
    // SAFETY: req is the first field of a live Message.
    let message = unsafe { &mut *(req as *mut Message) };
    message.callbacks += 1;
    message.step()
}

/// Sends `messages` messages of `fragments` fragments each from `pair.ep_a`
/// as UCP would, and checks every fragment arrives once and in order.
fn send_messages_through_the_window(settings: &[(&CStr, &CStr)], messages: u64, fragments: u64) {
    let _traffic = traffic();
    let pair = Pair::with_config(None, None, settings);
    let at_b = pair.b.collect_am(AM_ID);
    let mut payload = vec![0x5au8; FRAGMENT_PAYLOAD];
    let (memh, _) = pair.a.register(payload.as_mut_ptr(), payload.len());
    let mut dispatched = 0u64;
    for index in 0..messages {
        let mut message = Box::new(Message {
            req: uct_pending_req_t {
                func: Some(message_pending),
                r#priv: [0; UCT_PENDING_REQ_PRIV_LEN],
            },
            ep: pair.ep_a,
            payload: payload.as_ptr(),
            memh,
            next: index * fragments,
            end: (index + 1) * fragments,
            done: false,
            callbacks: 0,
        });
        loop {
            match message.step() {
                UCS_OK => break,
                UCS_INPROGRESS => continue,
                UCS_ERR_NO_RESOURCE => {}
                status => panic!("message {index}: {status}"),
            }
            match pending_add(pair.ep_a, &mut message.req, 0) {
                UCS_ERR_BUSY => continue,
                UCS_OK => {}
                status => panic!("message {index}: pending_add {status}"),
            }
            let sent = pair.wait(|| read_volatile(&message.done));
            assert!(
                sent,
                "message {index} stalled at fragment {} (window {:?})",
                read_volatile(&message.next),
                settings
            );
            break;
        }
        dispatched += read_volatile(&message.callbacks);
    }
    let total = messages * fragments;
    assert!(pair.wait(|| at_b.lock().unwrap().len() as u64 >= total));
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    let received = at_b.lock().unwrap().clone();
    assert_eq!(received.len() as u64, total);
    for (expected, fragment) in received.iter().enumerate() {
        assert_eq!(fragment.len(), 8 + FRAGMENT_PAYLOAD, "fragment {expected}");
        let seq = u64::from_ne_bytes(fragment[..8].try_into().unwrap());
        assert_eq!(seq, expected as u64, "fragment {expected}");
        assert!(
            fragment[8..].iter().all(|&b| b == 0x5a),
            "fragment {expected}"
        );
    }
    // The pending path was taken (the window ran out), not only direct sends.
    assert!(dispatched > 0, "no fragment went through a pending request");
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn multi_fragment_messages_cross_many_flow_control_windows() {
    send_messages_through_the_window(&[(c"RC_FC_WND_SIZE", c"16")], 40, 64);
}

#[test]
fn multi_fragment_messages_cross_a_full_ring_without_flow_control() {
    send_messages_through_the_window(
        &[(c"RC_FC_ENABLE", c"n"), (c"RC_TX_QUEUE_LEN", c"32")],
        40,
        64,
    );
}
