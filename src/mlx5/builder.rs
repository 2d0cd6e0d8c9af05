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
        Some(WqeBuilder {
            ring,
            wqe_index,
            unit: 1,
            overflow: false,
        })
    }

    /// Units that may be used: the 6-bit DS field and the ring both bound it.
    #[inline]
    fn unit_limit(&self) -> usize {
        usize::from(MAX_DS).min(self.ring.len() / SEG_LEN)
    }

    #[inline]
    fn next_seg(&mut self) -> Option<&mut Seg> {
        if self.overflow || self.unit >= self.unit_limit() {
            self.overflow = true;
            return None;
        }
        let unit = self.unit;
        self.unit += 1;
        ring_seg_mut(self.ring, self.wqe_index, unit)
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
        if self.overflow || self.unit + InlineSeg::units(len) > self.unit_limit() {
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
    pub fn finish(self, ctrl: CtrlSeg) -> Result<CtrlSeg, WqeError> {
        if self.overflow {
            return Err(WqeError::TooLarge);
        }
        let ctrl = CtrlSeg {
            wqe_index: self.wqe_index,
            ds: self.unit as u8, // <= MAX_DS, checked as units were added
            ..ctrl
        };
        let seg = ring_seg_mut(self.ring, self.wqe_index, 0).ok_or(WqeError::BadRing)?;
        ctrl.write(seg);
        Ok(ctrl)
    }
}
