//! Composing a send WQE in the ring, segment after segment: what the
//! datapath's post functions use, so that segment order, wrap-around and the
//! DS count are computed in one place.

use super::decode::WqeError;
use super::wqe::*;

/// Builds the WQE at `wqe_index` of a send ring. Segments go in the order
/// they are added (the caller follows the layout of its opcode: remote
/// address, atomic operands, then data or inline segments); the control
/// segment is written last, by [`WqeBuilder::finish`].
pub struct WqeBuilder<'a> {
    ring: &'a mut [u8],
    wqe_index: u16,
    /// Byte offset of the control segment in the ring.
    base: usize,
    /// Units that may be used: the 6-bit DS field and the ring both bound
    /// it (computed once, not per segment).
    unit_limit: usize,
    /// Next free 16-byte unit; unit 0 is the control segment.
    unit: usize,
    overflow: bool,
}

impl<'a> WqeBuilder<'a> {
    /// `None` if `ring` is not a power-of-two number of basic blocks.
    #[inline]
    pub fn new(ring: &'a mut [u8], wqe_index: u16) -> Option<WqeBuilder<'a>> {
        if !ring_len_is_valid(ring.len()) {
            return None;
        }
        let base = seg_offset(ring.len(), wqe_index, 0);
        let unit_limit = usize::from(MAX_DS).min(ring.len() / SEG_LEN);
        Some(WqeBuilder {
            ring,
            wqe_index,
            base,
            unit_limit,
            unit: 1,
            overflow: false,
        })
    }

    /// The 16-byte unit at `at` (a multiple of 16 below the ring's length,
    /// which is a multiple of 64, so it is always whole).
    #[inline]
    fn seg_at(&mut self, at: usize) -> Option<&mut Seg> {
        self.ring.get_mut(at..at + SEG_LEN)?.try_into().ok()
    }

    #[inline]
    fn next_seg(&mut self) -> Option<&mut Seg> {
        if self.overflow || self.unit >= self.unit_limit {
            self.overflow = true;
            return None;
        }
        let at = (self.base + self.unit * SEG_LEN) & (self.ring.len() - 1);
        self.unit += 1;
        self.seg_at(at)
    }

    #[inline]
    pub fn raddr(&mut self, seg: RaddrSeg) -> &mut Self {
        if let Some(s) = self.next_seg() {
            seg.write(s);
        }
        self
    }

    #[inline]
    pub fn atomic(&mut self, seg: AtomicSeg) -> &mut Self {
        if let Some(s) = self.next_seg() {
            seg.write(s);
        }
        self
    }

    /// Masked compare-and-swap operands (one unit for 32-bit, two for
    /// 64-bit; the ctrl opmod must be `size.opmod()`).
    #[inline]
    pub fn masked_cs(&mut self, size: AtomicSize, seg: MaskedCsSeg) -> &mut Self {
        match size {
            AtomicSize::Bits32 => {
                if let Some(s) = self.next_seg() {
                    seg.write32(s);
                }
            }
            AtomicSize::Bits64 => {
                let (mut first, mut second) = ([0u8; SEG_LEN], [0u8; SEG_LEN]);
                seg.write64(&mut first, &mut second);
                if let Some(s) = self.next_seg() {
                    *s = first;
                }
                if let Some(s) = self.next_seg() {
                    *s = second;
                }
            }
        }
        self
    }

    /// Masked fetch-and-add operands (one unit; opmod `size.opmod()`).
    #[inline]
    pub fn masked_fa(&mut self, size: AtomicSize, seg: MaskedFaSeg) -> &mut Self {
        if let Some(s) = self.next_seg() {
            seg.write(s, size);
        }
        self
    }

    /// The address of a UD send (three units, right after the control
    /// segment).
    #[inline]
    pub fn datagram(&mut self, seg: DatagramSeg) -> &mut Self {
        let mut bytes = [0u8; DatagramSeg::LEN];
        seg.write(&mut bytes);
        for chunk in bytes.chunks_exact(SEG_LEN) {
            if let Some(s) = self.next_seg() {
                s.copy_from_slice(chunk);
            }
        }
        self
    }

    /// A data pointer segment.
    #[inline]
    pub fn data(&mut self, seg: DataSeg) -> &mut Self {
        if let Some(s) = self.next_seg() {
            seg.write(s);
        }
        self
    }

    /// One inline segment holding the concatenation of `parts`.
    #[inline]
    pub fn inline(&mut self, parts: &[&[u8]]) -> &mut Self {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if self.overflow || self.unit + InlineSeg::units(len) > self.unit_limit {
            self.overflow = true;
            return self;
        }
        match write_inline_parts(self.ring, self.wqe_index, self.unit, parts) {
            Some(units) => self.unit += units,
            None => self.overflow = true,
        }
        self
    }

    /// Units used so far, the control segment included.
    #[inline]
    pub fn ds(&self) -> usize {
        self.unit
    }

    /// Writes the control segment `ctrl` with this WQE's index and DS count
    /// filled in, and returns it (its first 8 bytes are the doorbell value).
    /// Fails, leaving the control segment unwritten, if the segments did not
    /// fit the DS field or the ring.
    #[inline]
    pub fn finish(mut self, ctrl: CtrlSeg) -> Result<CtrlSeg, WqeError> {
        if self.overflow {
            return Err(WqeError::TooLarge);
        }
        let ctrl = CtrlSeg {
            wqe_index: self.wqe_index,
            ds: self.unit as u8, // <= MAX_DS, checked as units were added
            ..ctrl
        };
        let base = self.base;
        let seg = self.seg_at(base).ok_or(WqeError::BadRing)?;
        ctrl.write(seg);
        Ok(ctrl)
    }
}

/// Units of a WQE made of a control segment, an optional remote address
/// segment and one inline segment of `inline_len` data bytes.
#[inline(always)]
pub const fn inline_wqe_ds(with_raddr: bool, inline_len: usize) -> usize {
    1 + with_raddr as usize + InlineSeg::units(inline_len)
}

/// What follows the control segment in the most common WQE shape: an
/// optional remote address segment, then one inline segment holding `head`
/// (a fixed-size prefix such as an active-message header; may be empty)
/// then `data`.
#[derive(Clone, Copy, Debug)]
pub struct InlineSegs<'a, const H: usize> {
    pub raddr: Option<RaddrSeg>,
    pub head: &'a [u8; H],
    pub data: &'a [u8],
}

impl<const H: usize> InlineSegs<'_, H> {
    /// Units of the whole WQE, control segment included ([`inline_wqe_ds`]).
    #[inline(always)]
    pub const fn ds(&self) -> usize {
        inline_wqe_ds(self.raddr.is_some(), H + self.data.len())
    }
}

/// The posting fast path for [`InlineSegs`]. Writes exactly the bytes
/// [`WqeBuilder`] writes for `raddr` + `inline(&[head, data])` +
/// `finish(ctrl)`, but only when the WQE does not cross the ring's end: then
/// it is one contiguous run of bytes, written with fixed-size stores and one
/// copy of `data`.
///
/// `ctrl.wqe_index` and `ctrl.ds` are filled in. Returns the control
/// segment as written, or `None` — having written nothing — when the WQE
/// would wrap, does not fit the DS field, or `ring` is not a valid ring; the
/// caller then uses [`WqeBuilder`], which handles (or reports) all of these.
#[inline(always)]
pub fn write_inline_wqe<const H: usize>(
    ring: &mut [u8],
    wqe_index: u16,
    ctrl: CtrlSeg,
    segs: InlineSegs<'_, H>,
) -> Option<CtrlSeg> {
    let ds = segs.ds();
    if ds > usize::from(MAX_DS) || !ring_len_is_valid(ring.len()) {
        return None;
    }
    write_inline_wqe_prechecked(ring, wqe_index, ds, ctrl, segs)
}

/// [`write_inline_wqe`] for a caller that has already computed
/// `ds` = [`InlineSegs::ds`], checked it against [`MAX_DS`], and holds a
/// ring of valid length (a posting ep: both are invariants of its QP and of
/// its own size check), so the post does not test them again. Broken
/// preconditions give wrong bytes or `None`, never an access outside `ring`.
#[inline(always)]
pub fn write_inline_wqe_prechecked<const H: usize>(
    ring: &mut [u8],
    wqe_index: u16,
    ds: usize,
    ctrl: CtrlSeg,
    InlineSegs { raddr, head, data }: InlineSegs<'_, H>,
) -> Option<CtrlSeg> {
    debug_assert!(ring_len_is_valid(ring.len()) && ds <= usize::from(MAX_DS));
    debug_assert_eq!(ds, inline_wqe_ds(raddr.is_some(), H + data.len()));
    let inline_len = H + data.len();
    let at = seg_offset(ring.len(), wqe_index, 0);
    // `None` when the WQE runs past the ring's end.
    let wqe = ring.get_mut(at..at + ds * SEG_LEN)?;
    // Zero the last unit first so the inline padding needs no variable-length
    // fill; the data written below overwrites what it covers.
    *wqe.last_chunk_mut::<SEG_LEN>()? = [0; SEG_LEN];
    let (ctrl_seg, rest) = wqe.split_first_chunk_mut::<SEG_LEN>()?;
    let ctrl = CtrlSeg {
        wqe_index,
        ds: ds as u8, // <= MAX_DS, checked above
        ..ctrl
    };
    let rest = match raddr {
        Some(raddr) => {
            let (seg, rest) = rest.split_first_chunk_mut::<SEG_LEN>()?;
            raddr.write(seg);
            rest
        }
        None => rest,
    };
    let (header, rest) = rest.split_first_chunk_mut::<4>()?;
    *header = (u32::try_from(inline_len).ok()? | MLX5_INLINE_SEG).to_be_bytes();
    let (head_bytes, rest) = rest.split_first_chunk_mut::<H>()?;
    *head_bytes = *head;
    copy_short(rest.get_mut(..data.len())?, data);
    ctrl.write(ctrl_seg);
    Some(ctrl)
}

/// `dst.copy_from_slice(src)` (equal lengths), with payloads of up to 16
/// bytes — the common `put_short`/`am_short` sizes — copied by two
/// overlapping loads and stores instead of a call into `memcpy`.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let len = src.len();
    if dst.len() != len {
        return dst.copy_from_slice(src); // reports the mismatch
    }
    if len == 0 {
        // am_short without payload: nothing to copy.
    } else if (8..=16).contains(&len) {
        copy_head_and_tail::<8>(dst, src);
    } else if (4..8).contains(&len) {
        copy_head_and_tail::<4>(dst, src);
    } else {
        dst.copy_from_slice(src);
    }
}

/// Copies `src` (`N..=2N` bytes) into `dst` of the same length as its first
/// and last `N` bytes, which overlap in the middle: both are loaded before
/// either is stored.
#[inline(always)]
fn copy_head_and_tail<const N: usize>(dst: &mut [u8], src: &[u8]) {
    if let (Some(&head), Some(&tail)) = (src.first_chunk::<N>(), src.last_chunk::<N>()) {
        if let Some(dst_tail) = dst.last_chunk_mut::<N>() {
            *dst_tail = tail;
        }
        if let Some(dst_head) = dst.first_chunk_mut::<N>() {
            *dst_head = head;
        }
    }
}
