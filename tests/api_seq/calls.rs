//! The input of the API-sequence fuzzing: a byte string decoded into a
//! bounded list of UCT calls on two connected eps. Pure (no UCT call, no
//! state), so that the cargo-fuzz target and the seeded stable test decode
//! the same bytes into the same calls, and any byte string decodes (missing
//! bytes read as 0).
#![allow(dead_code)]

/// Calls decoded from one input at most (each may post a burst).
pub const MAX_CALLS: usize = 48;

/// Which ep of the pair a call is made on: side 0 is mlx5_0's ep (towards
/// mlx5_1), side 1 mlx5_1's ep (back).
pub type Side = usize;

/// A fetching or non-fetching atomic's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    And,
    Or,
    Xor,
    Swap,
}

/// One data-path operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    AmShort,
    AmShortIov,
    AmBcopy,
    AmZcopy,
    PutShort,
    PutBcopy,
    PutZcopy,
    GetShort,
    GetBcopy,
    GetZcopy,
    AtomicPost {
        bits64: bool,
        op: AtomicOp,
    },
    AtomicFetch {
        bits64: bool,
        op: AtomicOp,
    },
    /// `compare_matches`: the compare value is the word's value (the swap
    /// happens); otherwise it is not (nothing changes).
    Cswap {
        bits64: bool,
        compare_matches: bool,
    },
}

/// A post: the op, a size the driver scales into the op's limits, whether
/// a zcopy/get/fetch takes a completion (UCX allows NULL), and into how many
/// iov entries a zcopy splits its buffer (1..=3, capped by the iface).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Post {
    pub side: Side,
    pub op: Op,
    pub size: u16,
    pub with_comp: bool,
    pub iov_parts: u8,
}

/// `uct_ep_invalidate`'s parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalidate {
    /// `params` NULL.
    NullParams,
    /// The flags field set, no flag.
    NoFlags,
    /// `UCT_EP_INVALIDATE_FLAG_NO_COMPLETIONS`.
    NoCompletions,
    /// Unknown flag and field-mask bits (ignored by the library), with or
    /// without `NO_COMPLETIONS`.
    UnknownBits { no_completions: bool },
}

/// What the iface error handler answers for the side's ep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Ok,
    InProgress,
    /// The status it was called with (any other error).
    Status,
}

/// The RX token (and parameters) a purge is called with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    /// Derived now: the ep's TX token turned into an RX token by the
    /// peer's iface.
    Fresh,
    /// One derived earlier in this input (index modulo the saved ones):
    /// valid if it names the ep's current connection, stale otherwise.
    Saved(u8),
    /// Random bytes.
    Garbage(u8),
    /// A fresh or saved token with one byte changed.
    Corrupted {
        byte: u8,
        xor: u8,
    },
    /// Parameter errors: NULL params, no RX token, no callback.
    NullParams,
    RxFieldUnset,
    CallbackFieldUnset,
}

/// A soft device: 0 is mlx5_0 (side 0's), 1 is mlx5_1.
pub type Device = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Post(Post),
    /// `count` AM shorts in a row (stopping at the first refusal): fills
    /// the send queue so that pending requests and `NO_RESOURCE` happen.
    Burst {
        side: Side,
        count: u8,
    },
    Flush {
        side: Side,
        cancel: bool,
        with_comp: bool,
    },
    IfaceFlush {
        side: Side,
    },
    Fence {
        side: Side,
    },
    EpCheck {
        side: Side,
    },
    PendingAdd {
        side: Side,
    },
    PendingPurge {
        side: Side,
    },
    Invalidate {
        side: Side,
        how: Invalidate,
    },
    FailoverEnable {
        side: Side,
    },
    Answer {
        side: Side,
        answer: Answer,
    },
    Purge {
        side: Side,
        token: Token,
    },
    Link {
        device: Device,
        up: bool,
    },
    DropNext {
        device: Device,
        count: u8,
    },
    /// Loss ratio `percent`/100 (0..=30 %).
    Loss {
        device: Device,
        percent: u8,
    },
    Progress {
        rounds: u8,
    },
    /// Progress for `millis` ms (0..=15): lets retransmission timers fire.
    Wait {
        millis: u8,
    },
    /// `uct_ep_destroy`, after `uct_ep_pending_purge` when
    /// `purge_pending` (the caller's duty; without it the requests must
    /// simply never run again).
    Destroy {
        side: Side,
        purge_pending: bool,
    },
    /// After a purge: a new ep on the peer's iface and the side's ep
    /// connected to it (the peer's old ep is destroyed).
    Reconnect {
        side: Side,
    },
    /// Both eps drained, checked and destroyed; a new connected pair.
    NewPair,
}

/// Reads bytes, 0 past the end.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let byte = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        byte
    }

    fn side(&mut self) -> Side {
        (self.byte() & 1) as Side
    }

    fn more(&self) -> bool {
        self.at < self.data.len()
    }
}

fn atomic_op(byte: u8) -> AtomicOp {
    [
        AtomicOp::Add,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Swap,
    ][byte as usize % 5]
}

fn op(kind: u8, detail: u8) -> Op {
    let bits64 = detail & 0x80 != 0;
    match kind % 13 {
        0 => Op::AmShort,
        1 => Op::AmShortIov,
        2 => Op::AmBcopy,
        3 => Op::AmZcopy,
        4 => Op::PutShort,
        5 => Op::PutBcopy,
        6 => Op::PutZcopy,
        7 => Op::GetShort,
        8 => Op::GetBcopy,
        9 => Op::GetZcopy,
        10 => Op::AtomicPost {
            bits64,
            op: atomic_op(detail),
        },
        11 => Op::AtomicFetch {
            bits64,
            op: atomic_op(detail),
        },
        _ => Op::Cswap {
            bits64,
            // Mostly matching: a swap that happens is observable.
            compare_matches: detail & 0x0f != 0,
        },
    }
}

fn token(r: &mut Reader<'_>) -> Token {
    match r.byte() % 10 {
        0..=3 => Token::Fresh,
        4 => Token::Saved(r.byte()),
        5 => Token::Garbage(r.byte()),
        6 => Token::Corrupted {
            byte: r.byte(),
            xor: r.byte() | 1,
        },
        7 => Token::NullParams,
        8 => Token::RxFieldUnset,
        _ => Token::CallbackFieldUnset,
    }
}

/// One call from the reader (the first byte picks the kind, weighted
/// towards posts).
fn call(r: &mut Reader<'_>) -> Call {
    let kind = r.byte();
    match kind % 40 {
        0..=13 => {
            let side = r.side();
            let kind = r.byte();
            let detail = r.byte();
            let size = u16::from_le_bytes([r.byte(), r.byte()]);
            Call::Post(Post {
                side,
                op: op(kind, detail),
                size,
                // Mostly with a completion (NULL is allowed too).
                with_comp: detail & 0x18 != 0,
                iov_parts: 1 + detail % 3,
            })
        }
        14 | 15 => Call::Burst {
            side: r.side(),
            count: r.byte() % 48 + 1,
        },
        16 | 17 => {
            let side = r.side();
            let flags = r.byte();
            Call::Flush {
                side,
                cancel: flags % 5 == 0,
                with_comp: flags & 0x10 == 0,
            }
        }
        18 => Call::IfaceFlush { side: r.side() },
        19 => Call::Fence { side: r.side() },
        20 => Call::EpCheck { side: r.side() },
        21 | 22 => Call::PendingAdd { side: r.side() },
        23 => Call::PendingPurge { side: r.side() },
        24 => {
            let side = r.side();
            let how = match r.byte() % 5 {
                0 => Invalidate::NullParams,
                1 => Invalidate::NoFlags,
                2 | 3 => Invalidate::NoCompletions,
                _ => Invalidate::UnknownBits {
                    no_completions: r.byte() & 1 == 1,
                },
            };
            Call::Invalidate { side, how }
        }
        25 => Call::FailoverEnable { side: r.side() },
        26 => {
            let side = r.side();
            let answer = match r.byte() % 3 {
                0 => Answer::Ok,
                1 => Answer::InProgress,
                _ => Answer::Status,
            };
            Call::Answer { side, answer }
        }
        27 | 28 => {
            let side = r.side();
            Call::Purge {
                side,
                token: token(r),
            }
        }
        29 => Call::Link {
            device: r.side(),
            up: r.byte() & 1 == 1,
        },
        30 => Call::DropNext {
            device: r.side(),
            count: r.byte() % 16,
        },
        31 => Call::Loss {
            device: r.side(),
            percent: r.byte() % 31,
        },
        32 | 33 => Call::Progress {
            rounds: r.byte() % 16 + 1,
        },
        34 => Call::Wait {
            millis: r.byte() % 16,
        },
        35 => Call::Destroy {
            side: r.side(),
            purge_pending: r.byte() % 4 != 0,
        },
        36 | 37 => Call::Reconnect { side: r.side() },
        38 => Call::NewPair,
        _ => Call::Progress { rounds: 1 },
    }
}

/// The calls `data` encodes (at most [`MAX_CALLS`]).
pub fn decode(data: &[u8]) -> Vec<Call> {
    let mut r = Reader { data, at: 0 };
    let mut calls = Vec::new();
    while r.more() && calls.len() < MAX_CALLS {
        calls.push(call(&mut r));
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bytes_decode_within_bounds() {
        assert!(decode(&[]).is_empty());
        assert_eq!(decode(&[0]).len(), 1);
        let long: Vec<u8> = (0..10_000u32).map(|i| (i * 7919 % 251) as u8).collect();
        assert_eq!(decode(&long).len(), MAX_CALLS);
    }
}
