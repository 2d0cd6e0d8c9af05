//! Remote atomics of rc_mlx5: `uct_ep_atomic{32,64}_post`,
//! `uct_ep_atomic{32,64}_fetch` and `uct_ep_atomic_cswap{32,64}`.
//!
//! mlx5 has two standard 64-bit atomics (compare-and-swap, fetch-and-add) and
//! two masked ("extended") atomics of either width. Every UCT operation is
//! one WQE of one of them, chosen as rc_mlx5 does on real hardware so that a
//! peer running UCX sees the same wire operations:
//!
//! | UCT op      | 64-bit                | 32-bit                          |
//! |-------------|-----------------------|---------------------------------|
//! | add         | standard fetch-add    | masked fetch-add, no boundaries |
//! | and         | masked CS, `swap_mask = !v`, `swap = v`, compare ignored |
//! | or          | masked CS, `swap_mask = v`, `swap = v`                    |
//! | xor         | masked fetch-add with a field boundary at every bit (no carries) |
//! | swap        | masked CS, all bits swapped, compare ignored            |
//! | cswap       | standard compare-swap | masked CS, both masks full      |
//!
//! Every atomic WQE carries a data segment naming where the old value lands:
//! a small slot (one cache line) of the iface's send pool, a class of its own
//! so that atomics and bcopy never take each other's buffers (see
//! [`result_slot`] for its bound). For fetching ops the op table
//! entry records the caller's `result` pointer (in its [`PostedOp`]),
//! and the completion copies the value there, byte-swapped when the device
//! returns results big-endian (mlx5 hardware; the soft HCA writes host order),
//! as the device attribute resolved at iface open says.

use std::ffi::c_void;

use crate::abi::*;
use crate::failover::{PostedOp, RemoteTarget};
use crate::ib::rkey::atomic_rkey;
use crate::mlx5::{
    self, AtomicSeg, AtomicSize, DataSeg, MaskedCsSeg, MaskedFaSeg, RaddrSeg, WqeBuilder,
};
use crate::rc::ep::{Bounce, PostSpec, RcEp};
use crate::rc::iface::{IfaceState, RcIface};
use crate::uct::pool::{BufferPool, LKEY_BYTES};

/// The non-fetching ops rc_mlx5 executes (bits of `UCT_ATOMIC_OP_*`).
pub const POST_OPS: u64 = (1 << UCT_ATOMIC_OP_ADD)
    | (1 << UCT_ATOMIC_OP_AND)
    | (1 << UCT_ATOMIC_OP_OR)
    | (1 << UCT_ATOMIC_OP_XOR);

/// The fetching ops, `uct_ep_atomic_cswap*` included (advertised as CSWAP).
pub const FETCH_OPS: u64 = POST_OPS | (1 << UCT_ATOMIC_OP_SWAP) | (1 << UCT_ATOMIC_OP_CSWAP);

/// One atomic WQE: the opcode and its operand segment(s). Operand values are
/// in host order, already cut to the operand width; the segment writers
/// store them big-endian as the device reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicWqe {
    /// Standard 64-bit fetch-and-add.
    FetchAdd { add: u64 },
    /// Standard 64-bit compare-and-swap.
    CompareSwap { compare: u64, swap: u64 },
    /// Masked compare-and-swap of either width.
    MaskedCs { size: AtomicSize, seg: MaskedCsSeg },
    /// Masked fetch-and-add of either width.
    MaskedFa { size: AtomicSize, seg: MaskedFaSeg },
}

/// All ones in the operand width.
#[inline]
fn width_mask(size: AtomicSize) -> u64 {
    match size {
        AtomicSize::Bits32 => u64::from(u32::MAX),
        AtomicSize::Bits64 => u64::MAX,
    }
}

impl AtomicWqe {
    /// The WQE of `uct_ep_atomic*_post` (`fetch == false`) or
    /// `uct_ep_atomic*_fetch` (`fetch == true`) with `opcode` on a `size`
    /// operand. `Unsupported` for ops rc_mlx5 does not offer in that form
    /// (swap without fetch; cswap through the op code, which has its own
    /// function; unknown codes).
    pub fn for_op(
        opcode: uct_atomic_op_t,
        size: AtomicSize,
        value: u64,
        fetch: bool,
    ) -> Result<AtomicWqe, Status> {
        let allowed = if fetch {
            FETCH_OPS & !(1 << UCT_ATOMIC_OP_CSWAP)
        } else {
            POST_OPS
        };
        if opcode >= 64 || allowed & (1u64 << opcode) == 0 {
            return Err(Status::Unsupported);
        }
        let all = width_mask(size);
        let value = value & all;
        let masked_cs = |swap: u64, swap_mask: u64| AtomicWqe::MaskedCs {
            size,
            seg: MaskedCsSeg {
                swap,
                compare: 0,
                swap_mask: swap_mask & all,
                // Compare nothing: the swap always happens.
                compare_mask: 0,
            },
        };
        let masked_fa = |field_boundary: u64| AtomicWqe::MaskedFa {
            size,
            seg: MaskedFaSeg {
                add: value,
                field_boundary,
            },
        };
        Ok(match opcode {
            UCT_ATOMIC_OP_ADD => match size {
                AtomicSize::Bits64 => AtomicWqe::FetchAdd { add: value },
                AtomicSize::Bits32 => masked_fa(0),
            },
            // Bits set in `value` keep the old bit (mask clear), bits clear
            // in it are replaced by the 0 of `swap`.
            UCT_ATOMIC_OP_AND => masked_cs(value, !value),
            // Bits set in `value` are replaced by 1, the rest kept.
            UCT_ATOMIC_OP_OR => masked_cs(value, value),
            // Every bit its own field: a carry-less add is xor.
            UCT_ATOMIC_OP_XOR => masked_fa(all),
            UCT_ATOMIC_OP_SWAP => masked_cs(value, all),
            _ => return Err(Status::Unsupported),
        })
    }

    /// The WQE of `uct_ep_atomic_cswap{32,64}`.
    pub fn compare_swap(size: AtomicSize, compare: u64, swap: u64) -> AtomicWqe {
        match size {
            AtomicSize::Bits64 => AtomicWqe::CompareSwap { compare, swap },
            AtomicSize::Bits32 => {
                let all = width_mask(size);
                AtomicWqe::MaskedCs {
                    size,
                    seg: MaskedCsSeg {
                        swap: swap & all,
                        compare: compare & all,
                        swap_mask: all,
                        compare_mask: all,
                    },
                }
            }
        }
    }

    /// Operand width.
    pub fn size(&self) -> AtomicSize {
        match *self {
            AtomicWqe::FetchAdd { .. } | AtomicWqe::CompareSwap { .. } => AtomicSize::Bits64,
            AtomicWqe::MaskedCs { size, .. } | AtomicWqe::MaskedFa { size, .. } => size,
        }
    }

    /// The control segment's opcode and opmod.
    pub fn opcode_opmod(&self) -> (u8, u8) {
        match *self {
            AtomicWqe::FetchAdd { .. } => (mlx5::MLX5_OPCODE_ATOMIC_FA, 0),
            AtomicWqe::CompareSwap { .. } => (mlx5::MLX5_OPCODE_ATOMIC_CS, 0),
            AtomicWqe::MaskedCs { size, .. } => (mlx5::MLX5_OPCODE_ATOMIC_MASKED_CS, size.opmod()),
            AtomicWqe::MaskedFa { size, .. } => (mlx5::MLX5_OPCODE_ATOMIC_MASKED_FA, size.opmod()),
        }
    }

    /// Adds the operand segment(s), after the remote-address segment.
    pub fn add_operands(&self, wqe: &mut WqeBuilder<'_>) {
        match *self {
            AtomicWqe::FetchAdd { add } => {
                wqe.atomic(AtomicSeg {
                    swap_add: add,
                    compare: 0,
                });
            }
            AtomicWqe::CompareSwap { compare, swap } => {
                wqe.atomic(AtomicSeg {
                    swap_add: swap,
                    compare,
                });
            }
            AtomicWqe::MaskedCs { size, seg } => {
                wqe.masked_cs(size, seg);
            }
            AtomicWqe::MaskedFa { size, seg } => {
                wqe.masked_fa(size, seg);
            }
        }
    }
}

/// Sets the atomic capabilities of an iface whose device executes atomics
/// (`device_atomics`: 64-bit standard and masked atomics of both widths).
pub fn advertise(attr: &mut uct_iface_attr_t, device_atomics: bool) {
    if !device_atomics {
        return;
    }
    for cap in [&mut attr.cap.atomic32, &mut attr.cap.atomic64] {
        cap.op_flags |= POST_OPS;
        cap.fop_flags |= FETCH_OPS;
    }
    attr.cap.flags |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
}

/// A small slot of the send pool for an atomic's old value (posts need one
/// too: the WQE's data segment must name registered memory).
///
/// Bound: one slot per send-CQ credit. Every atomic holds a credit and its
/// slot until it completes, so a correct post never finds the slots gone
/// before the credits (both give `UCS_ERR_NO_RESOURCE`, and the pending
/// queue retries once completions return them); the bound turns a leak into
/// `NO_RESOURCE` instead of unbounded growth. bcopy segments are another
/// class with their own free list, untouched by atomics.
fn result_slot(state: &mut IfaceState) -> Result<Bounce, Status> {
    let bound = state.tx().credits_max as usize;
    let buffer = state.tx_mut().pool.get_small(bound)?;
    // The data area starts after the header, inside the slot.
    Ok(Bounce {
        buffer,
        data: buffer.wrapping_add(LKEY_BYTES),
        lkey: state.tx().pool.lkey(buffer),
    })
}

/// One atomic as its slot received it: the op table's record, its WQE,
/// the remote memory and where a fetched old value goes.
pub(crate) struct Atomic {
    op: PostedOp,
    wqe: AtomicWqe,
    remote: RemoteTarget,
    result: Option<*mut c_void>,
}

impl Atomic {
    /// The WQE of `op` (an atomic post, fetch or compare-and-swap), with a
    /// log line and `Unsupported` when rc_mlx5 does not offer it in that
    /// form (or `op` is no atomic).
    pub(crate) fn new(function: &str, op: PostedOp) -> Result<Atomic, Status> {
        let (wqe, remote, result) = match op {
            PostedOp::AtomicPost {
                remote,
                op: opcode,
                size,
                value,
            } => (AtomicWqe::for_op(opcode, size, value, false), remote, None),
            PostedOp::AtomicFetch {
                remote,
                op: opcode,
                size,
                value,
                result,
                ..
            } => (
                AtomicWqe::for_op(opcode, size, value, true),
                remote,
                Some(result),
            ),
            PostedOp::AtomicCswap {
                remote,
                size,
                compare,
                swap,
                result,
                ..
            } => (
                Ok(AtomicWqe::compare_swap(size, compare, swap)),
                remote,
                Some(result),
            ),
            _ => return Err(not_offered(function, &op)),
        };
        let wqe = wqe.map_err(|_| not_offered(function, &op))?;
        Ok(Atomic {
            op,
            wqe,
            remote,
            result,
        })
    }
}

/// The log line of an atomic rc_mlx5 does not offer.
#[cold]
fn not_offered(function: &str, op: &PostedOp) -> Status {
    tracing::warn!("{function}: {op:?} is not supported");
    Status::Unsupported
}

/// Posts one atomic WQE on `ep` (of `iface`). Returns `Ok(())` once
/// posted; the caller maps that to `UCS_OK` (post) or `UCS_INPROGRESS`
/// (fetch). A fetch's `result` must stay writable for the operand width
/// until `comp` is called (or the ep is flushed): the slot's contract.
pub(crate) fn post(
    function: &str,
    (ep, iface): (&mut RcEp, &mut RcIface),
    atomic: Atomic,
) -> Result<(), Status> {
    let Atomic {
        op,
        wqe,
        remote,
        result,
    } = atomic;
    let width = wqe.size().bytes();
    let remote_addr = remote.address;
    if remote_addr % u64::from(width) != 0 {
        tracing::warn!("{function}: remote address 0x{remote_addr:x} is not {width}-byte aligned");
        return Err(Status::InvalidParam);
    }
    if result.is_some_and(|result| result.is_null()) {
        tracing::warn!("{function}: result is NULL");
        return Err(Status::InvalidParam);
    }
    let state = &mut iface.state;
    ep.check_post(state.tx().credits)?;
    let bounce = result_slot(state)?;
    let rkey = atomic_rkey(remote.rkey);
    let (opcode, opmod) = wqe.opcode_opmod();
    let mut spec = PostSpec::new(op, opcode, usize::from(width))
        .opmod(opmod)
        .rkey(rkey)
        .bounce(bounce);
    if result.is_some() {
        // The result must reach the caller without waiting for a later
        // op's CQE.
        spec = spec.signaled();
    }
    let lkey = BufferPool::bounce_lkey(&bounce);
    let credits = &mut state.tx_mut().credits;
    let posted = ep.ready(*credits).and_then(|sq| {
        sq.post(credits, spec, |builder| {
            builder.raddr(RaddrSeg {
                raddr: remote_addr,
                rkey,
            });
            wqe.add_operands(builder);
            builder.data(DataSeg {
                byte_count: u32::from(width),
                lkey,
                addr: bounce.data as u64,
            });
        })
    });
    posted.inspect_err(|_| state.tx_mut().pool.put(bounce.buffer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::c_uint;

    /// What the device computes for a masked/standard atomic (the mlx5
    /// semantics, written out independently of the soft HCA's engine).
    fn execute(wqe: &AtomicWqe, old: u64) -> u64 {
        match *wqe {
            AtomicWqe::FetchAdd { add } => old.wrapping_add(add),
            AtomicWqe::CompareSwap { compare, swap } => {
                if old == compare {
                    swap
                } else {
                    old
                }
            }
            AtomicWqe::MaskedCs { size, seg } => {
                let all = width_mask(size);
                if (old ^ seg.compare) & seg.compare_mask & all == 0 {
                    ((old & !seg.swap_mask) | (seg.swap & seg.swap_mask)) & all
                } else {
                    old & all
                }
            }
            AtomicWqe::MaskedFa { size, seg } => {
                let bits = u32::from(size.bytes()) * 8;
                let (mut sum, mut carry) = (0u64, 0u64);
                for bit in 0..bits {
                    let s = ((old >> bit) & 1) + ((seg.add >> bit) & 1) + carry;
                    sum |= (s & 1) << bit;
                    carry = if (seg.field_boundary >> bit) & 1 == 1 {
                        0
                    } else {
                        s >> 1
                    };
                }
                sum
            }
        }
    }

    #[test]
    fn every_op_computes_what_uct_defines() {
        let old64 = 0xf0f0_1234_8000_0001u64;
        let v64 = 0x0ff0_ffff_8000_0003u64;
        for (size, old, v) in [
            (AtomicSize::Bits64, old64, v64),
            (AtomicSize::Bits32, old64 & 0xffff_ffff, v64 & 0xffff_ffff),
        ] {
            let all = width_mask(size);
            let cases = [
                (UCT_ATOMIC_OP_ADD, old.wrapping_add(v) & all),
                (UCT_ATOMIC_OP_AND, old & v),
                (UCT_ATOMIC_OP_OR, old | v),
                (UCT_ATOMIC_OP_XOR, old ^ v),
                (UCT_ATOMIC_OP_SWAP, v),
            ];
            for (op, expected) in cases {
                let wqe = AtomicWqe::for_op(op, size, v, true).unwrap();
                assert_eq!(execute(&wqe, old), expected, "op {op} {size:?}");
            }
            let hit = AtomicWqe::compare_swap(size, old, v);
            assert_eq!(execute(&hit, old), v);
            let miss = AtomicWqe::compare_swap(size, old ^ 1, v);
            assert_eq!(execute(&miss, old), old);
        }
    }

    #[test]
    fn opcodes_follow_rc_mlx5() {
        let op = |code, size| {
            AtomicWqe::for_op(code, size, 5, true)
                .unwrap()
                .opcode_opmod()
        };
        use AtomicSize::*;
        assert_eq!(
            op(UCT_ATOMIC_OP_ADD, Bits64),
            (mlx5::MLX5_OPCODE_ATOMIC_FA, 0)
        );
        assert_eq!(
            op(UCT_ATOMIC_OP_ADD, Bits32),
            (
                mlx5::MLX5_OPCODE_ATOMIC_MASKED_FA,
                mlx5::OPMOD_EXT_ATOMIC_32
            )
        );
        for code in [UCT_ATOMIC_OP_AND, UCT_ATOMIC_OP_OR, UCT_ATOMIC_OP_SWAP] {
            assert_eq!(
                op(code, Bits64),
                (
                    mlx5::MLX5_OPCODE_ATOMIC_MASKED_CS,
                    mlx5::OPMOD_EXT_ATOMIC_64
                )
            );
        }
        assert_eq!(
            op(UCT_ATOMIC_OP_XOR, Bits32),
            (
                mlx5::MLX5_OPCODE_ATOMIC_MASKED_FA,
                mlx5::OPMOD_EXT_ATOMIC_32
            )
        );
        assert_eq!(
            AtomicWqe::compare_swap(Bits64, 1, 2).opcode_opmod(),
            (mlx5::MLX5_OPCODE_ATOMIC_CS, 0)
        );
        assert_eq!(
            AtomicWqe::compare_swap(Bits32, 1, 2).opcode_opmod(),
            (
                mlx5::MLX5_OPCODE_ATOMIC_MASKED_CS,
                mlx5::OPMOD_EXT_ATOMIC_32
            )
        );
    }

    #[test]
    fn ops_outside_the_table_are_unsupported() {
        use AtomicSize::*;
        assert_eq!(
            AtomicWqe::for_op(UCT_ATOMIC_OP_SWAP, Bits64, 1, false),
            Err(Status::Unsupported)
        );
        for fetch in [false, true] {
            for code in [UCT_ATOMIC_OP_CSWAP, UCT_ATOMIC_OP_LAST, 63, 64, c_uint::MAX] {
                assert_eq!(
                    AtomicWqe::for_op(code, Bits32, 1, fetch),
                    Err(Status::Unsupported),
                    "code {code}"
                );
            }
        }
    }
}
