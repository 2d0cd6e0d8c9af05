//! The active-message slots: am_short, am_short_iov, am_bcopy, am_zcopy.

use std::ffi::{c_uint, c_void};

use super::args::{
    check_len, in_progress, slot, status_of, CBytes, CIov, EpArg, PackCb, MAX_SHORT_IOV,
};
use crate::abi::*;
use crate::core::data_trace;
use crate::failover::PostedOp;
use crate::mlx5::{self, DataSeg, InlineSegs};
use crate::rc::ep::{bounce_from_pool, PostSpec, RcEp};
use crate::rc::iface::{am_header, RcIface, AM_HDR_LEN};
use crate::rc::limits::AM_ZCOPY_MAX_IOV;
use crate::uct::pool::BufferPool;

/// The flow-control bits of the next AM on `ep`. An exhausted window means
/// `UCS_ERR_NO_RESOURCE` only while a grant can still come: a failed or
/// cancelled ep answers its own status, or retry loops would spin forever.
#[inline(always)]
fn am_fc_bits(ep: &mut RcEp, iface: &RcIface) -> Result<u8, Status> {
    match ep.fc.am_bits(iface.state.fc()) {
        Ok(bits) => Ok(bits),
        Err(window_closed) => Err(fc_refusal(ep, iface.state.tx().credits, window_closed)),
    }
}

/// The rare half of [`am_fc_bits`]: the ep's own refusal, if it has one,
/// wins over the closed window.
#[cold]
#[inline(never)]
fn fc_refusal(ep: &RcEp, credits: u32, window_closed: Status) -> Status {
    match ep.check_post(credits) {
        Err(status) if status != Status::NoResource => status,
        _ => window_closed,
    }
}

/// The checked ep, iface and AM id every AM starts with.
#[inline(always)]
fn am_start<'a>(
    function: &str,
    ep: EpArg,
    id: u8,
) -> Result<(&'a mut RcEp, &'a mut RcIface), Status> {
    let (ep, iface) = ep.ep_and_iface(function)?;
    if u32::from(id) >= UCT_AM_ID_MAX {
        return Err(bad_am_id(function, id));
    }
    Ok((ep, iface))
}

/// The logging half of [`am_start`]'s id check, kept out of the posting
/// path.
#[cold]
#[inline(never)]
fn bad_am_id(function: &str, id: u8) -> Status {
    tracing::error!(
        "{function}: invalid active message id {id} (valid: 0..{})",
        UCT_AM_ID_MAX - 1
    );
    Status::InvalidParam
}

/// The data-path line of an AM just posted on `ep`, after its AM tracer
/// (if any) saw the user's bytes `parts` (the AM header excluded, as UCX's
/// tracers get them), on its send side.
#[cold]
#[inline(never)]
fn trace_am_sent(ep: &RcEp, iface: &RcIface, id: u8, parts: &[&[u8]]) {
    let data = parts.concat();
    let tracer_text =
        data_trace::call_am_tracer(iface.base.am().tracer(), UCT_AM_TRACE_TYPE_SEND, id, &data);
    let mut line = ep.txwq().describe_last();
    data_trace::am_text(&mut line, id, data.len(), &tracer_text);
    data_trace::emit(data_trace::source_site!(), &line);
}

/// [`trace_am_sent`] for am_zcopy: the header, then the iov's bytes.
#[cold]
#[inline(never)]
fn trace_am_zcopy_sent(ep: &RcEp, iface: &RcIface, id: u8, header: &[u8], segments: &[DataSeg]) {
    let mut parts = vec![header];
    for segment in segments.iter().filter(|segment| segment.byte_count != 0) {
        // SAFETY: each segment is an iov entry the caller handed over for
        // this send, registered memory valid until the send completes.
        parts.push(unsafe {
            std::slice::from_raw_parts(segment.addr as *const u8, segment.byte_count as usize)
        });
    }
    trace_am_sent(ep, iface, id, &parts);
}

#[inline(always)]
fn am_short(ep: EpArg, id: u8, header: u64, payload: CBytes) -> Result<(), Status> {
    const F: &str = "uct_ep_am_short";
    let (ep, iface) = am_start(F, ep, id)?;
    let length = payload.len();
    check_len(F, 8 + length, iface.state.limits().am_max_short())?;
    let payload = payload.get(F)?;
    let fc_bits = am_fc_bits(ep, iface)?;
    // The AM header byte then the user's 8-byte header: one fixed-size
    // prefix of the inline data.
    let mut head = [0u8; AM_HDR_LEN + 8];
    head[..AM_HDR_LEN].copy_from_slice(&am_header(id | fc_bits));
    head[AM_HDR_LEN..].copy_from_slice(&header.to_ne_bytes());
    let spec = PostSpec::new(
        PostedOp::AmShort { am_id: id },
        mlx5::MLX5_OPCODE_SEND,
        AM_HDR_LEN + 8 + length,
    );
    let credits = &mut iface.state.tx_mut().credits;
    ep.ready(*credits)?.post_inline(
        credits,
        spec,
        InlineSegs {
            raddr: None,
            head: &head,
            data: payload,
        },
    )?;
    ep.fc.sent(fc_bits, iface.state.fc());
    if data_trace::enabled() {
        trace_am_sent(ep, iface, id, &[&header.to_ne_bytes(), payload]);
    }
    Ok(())
}

slot! {
    fn ep_am_short(ep: uct_ep_h, id: u8, header: u64, payload: *const c_void, length: c_uint)
        -> ucs_status_t;
    take ep: EpArg = (ep), payload: CBytes = (payload, length);
    { status_of(am_short(ep, id, header, payload)) }
}

fn am_short_iov(ep: EpArg, id: u8, iov: CIov) -> Result<(), Status> {
    const F: &str = "uct_ep_am_short_iov";
    let (ep, iface) = am_start(F, ep, id)?;
    let count = iov.entries(F, MAX_SHORT_IOV)?.len();
    let fc_bits = am_fc_bits(ep, iface)?;
    let id_bytes = am_header(id | fc_bits);
    let mut parts: [&[u8]; MAX_SHORT_IOV + 1] = [&[]; MAX_SHORT_IOV + 1];
    parts[0] = &id_bytes;
    let mut total = 0usize;
    for index in 0..count {
        let bytes = iov.inline_bytes(F, index)?;
        parts[index + 1] = bytes;
        total = total.saturating_add(bytes.len());
    }
    check_len(F, total, iface.state.limits().am_max_short())?;
    let spec = PostSpec::new(
        PostedOp::AmShort { am_id: id },
        mlx5::MLX5_OPCODE_SEND,
        AM_HDR_LEN + total,
    );
    let credits = &mut iface.state.tx_mut().credits;
    ep.ready(*credits)?.post(credits, spec, |wqe| {
        wqe.inline(&parts[..count + 1]);
    })?;
    ep.fc.sent(fc_bits, iface.state.fc());
    if data_trace::enabled() {
        trace_am_sent(ep, iface, id, &parts[1..count + 1]);
    }
    Ok(())
}

slot! {
    fn ep_am_short_iov(ep: uct_ep_h, id: u8, iov: *const uct_iov_t, iovcnt: usize) -> ucs_status_t;
    take ep: EpArg = (ep), iov: CIov = (iov, iovcnt);
    { status_of(am_short_iov(ep, id, iov)) }
}

fn am_bcopy(ep: EpArg, id: u8, pack: PackCb, flags: c_uint) -> Result<isize, Status> {
    const F: &str = "uct_ep_am_bcopy";
    let (ep, iface) = am_start(F, ep, id)?;
    pack.check(F)?;
    // Both before packing: the callback must not run for a refused post.
    let fc_bits = am_fc_bits(ep, iface)?;
    ep.check_post(iface.state.tx().credits)?;
    let bounce = bounce_from_pool(&mut iface.state.tx_mut().pool, 0)?;
    let packed = pack.pack(&bounce, &am_header(id | fc_bits));
    if packed > iface.state.limits().am_max_bcopy() {
        tracing::error!("{F}: pack callback wrote {packed} bytes, more than max_bcopy");
        iface.state.tx_mut().pool.put(bounce.buffer);
        return Err(Status::InvalidParam);
    }
    let total = AM_HDR_LEN + packed;
    let am = PostedOp::AmBcopy { am_id: id, flags };
    let spec = PostSpec::new(am, mlx5::MLX5_OPCODE_SEND, total).bounce(bounce);
    let lkey = BufferPool::bounce_lkey(&bounce);
    let credits = &mut iface.state.tx_mut().credits;
    ep.ready(*credits)?
        .post(credits, spec, |wqe| {
            wqe.data(DataSeg {
                byte_count: total as u32,
                lkey,
                addr: bounce.data as u64,
            });
        })
        .inspect_err(|_| iface.state.tx_mut().pool.put(bounce.buffer))?;
    ep.fc.sent(fc_bits, iface.state.fc());
    if data_trace::enabled() {
        // SAFETY: the pack callback wrote `packed` bytes after the AM
        // header into the bounce buffer, which the posted op keeps until
        // its completion.
        let packed_bytes =
            unsafe { std::slice::from_raw_parts(bounce.data.add(AM_HDR_LEN), packed) };
        trace_am_sent(ep, iface, id, &[packed_bytes]);
    }
    Ok(packed as isize)
}

slot! {
    fn ep_am_bcopy(
        ep: uct_ep_h,
        id: u8,
        pack_cb: uct_pack_callback_t,
        arg: *mut c_void,
        flags: c_uint,
    ) -> isize;
    take ep: EpArg = (ep), pack: PackCb = (pack_cb, arg);
    { am_bcopy(ep, id, pack, flags).unwrap_or_else(|status| isize::from(status.raw())) }
}

fn am_zcopy(
    ep: EpArg,
    id: u8,
    header: CBytes,
    iov: CIov,
    flags: c_uint,
    comp: *mut uct_completion_t,
) -> Result<(), Status> {
    const F: &str = "uct_ep_am_zcopy";
    let (ep, iface) = am_start(F, ep, id)?;
    let header_length = header.len();
    check_len(F, header_length, iface.state.limits().am_max_hdr())?;
    let header = header.get(F)?;
    let mut segments = [DataSeg::default(); 16];
    // No iov at all is a header-only AM (UCX allows it; `iov` may then be
    // NULL).
    let (count, total) = if iov.len() == 0 {
        (0, 0)
    } else {
        iov.segments(F, AM_ZCOPY_MAX_IOV, &mut segments)?
    };
    check_len(
        F,
        header_length + total,
        iface.state.limits().am_max_zcopy(),
    )?;
    let fc_bits = am_fc_bits(ep, iface)?;
    let am = PostedOp::AmZcopy {
        am_id: id,
        flags,
        iov: iov.copy(),
        comp,
    };
    let spec = PostSpec::new(
        am,
        mlx5::MLX5_OPCODE_SEND,
        AM_HDR_LEN + header_length + total,
    );
    let credits = &mut iface.state.tx_mut().credits;
    ep.ready(*credits)?.post(credits, spec, |wqe| {
        wqe.inline(&[&am_header(id | fc_bits), header]);
        for segment in &segments[..count] {
            wqe.data(*segment);
        }
    })?;
    ep.fc.sent(fc_bits, iface.state.fc());
    if data_trace::enabled() {
        trace_am_zcopy_sent(ep, iface, id, header, &segments[..count]);
    }
    Ok(())
}

slot! {
    #[allow(clippy::too_many_arguments)] // the slot's C signature
    fn ep_am_zcopy(ep: uct_ep_h, id: u8, header: *const c_void, header_length: c_uint,
                   iov: *const uct_iov_t, iovcnt: usize, flags: c_uint,
                   comp: *mut uct_completion_t) -> ucs_status_t;
    take ep: EpArg = (ep), header: CBytes = (header, header_length), iov: CIov = (iov, iovcnt);
    { in_progress(am_zcopy(ep, id, header, iov, flags, comp)) }
}
