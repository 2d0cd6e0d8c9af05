//! rc_mlx5 data-path ops beyond the basics, between two soft devices in one
//! process: am_zcopy at its limits (largest header, most iov entries, empty
//! entries, many messages in order with one completion), refused am_zcopy
//! input that posts nothing, put_zcopy gathering and get_zcopy scattering
//! the most iov entries, empty entries without a memory handle (get_short:
//! `rc_get_short.rs`).

mod rc_common;

use std::ffi::c_uint;
use std::ptr::null_mut;

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::ep::*;

/// Splits `buffer` into `parts` iov entries of different lengths (some
/// empty) covering it exactly.
fn split(buffer: &mut [u8], parts: usize, memh: uct_mem_h) -> Vec<uct_iov_t> {
    assert!(parts >= 3);
    let len = buffer.len();
    let mut cuts: Vec<usize> = (1..parts)
        .map(|i| (i * i * len) / (parts * parts))
        .collect();
    // Two equal cuts in the middle make an empty entry.
    cuts[1] = cuts[0];
    cuts.push(len);
    let mut start = 0;
    cuts.iter()
        .map(|&end| {
            let entry = iov_entry(buffer[start..].as_mut_ptr(), end - start, memh);
            start = end;
            entry
        })
        .collect()
}

#[test]
fn am_zcopy_at_its_limits_arrives_whole_and_in_order() {
    const MESSAGES: usize = 40;
    let pair = Pair::new();
    let at_b = pair.b.collect_am(9);
    let attr = pair.a.attr;
    assert_ne!(attr.cap.flags & UCT_IFACE_FLAG_AM_ZCOPY, 0);
    let max_hdr = attr.cap.am.max_hdr;
    let max_iov = attr.cap.am.max_iov;
    assert!(
        max_hdr >= 32 && max_iov >= 3,
        "max_hdr {max_hdr} max_iov {max_iov}"
    );
    // The largest message: max_hdr header bytes plus max_zcopy - max_hdr
    // data bytes in max_iov entries.
    let data_len = attr.cap.am.max_zcopy - max_hdr;
    let mut data: Vec<u8> = (0..data_len).map(|i| (i * 7 % 253) as u8).collect();
    let (memh, _) = pair.a.register(data.as_mut_ptr(), data.len());
    let entries = split(&mut data, max_iov, memh);
    assert_eq!(entries.iter().map(|e| e.length).sum::<usize>(), data_len);
    let mut comp = CountingCompletion::new(MESSAGES as i32);
    for n in 0..MESSAGES {
        // Alternate: the largest header with all entries; no header with the
        // first entry only (an AM carrying data alone).
        let header: Vec<u8> = (0..max_hdr).map(|i| (i + n) as u8).collect();
        let (header_len, iovcnt) = if n % 2 == 0 {
            (max_hdr, entries.len())
        } else {
            (0, 1)
        };
        // SAFETY: valid header, registered iov, live completion; the data
        // stays unchanged until the completion.
        let status = unsafe {
            uct_ep_am_zcopy(
                pair.ep_a,
                9,
                header.as_ptr().cast(),
                header_len as c_uint,
                entries.as_ptr(),
                iovcnt,
                0,
                comp.as_ptr(),
            )
        };
        assert_eq!(status, UCS_INPROGRESS, "message {n}");
        if n % 8 == 7 {
            pair.progress();
        }
    }
    assert!(pair.wait(|| comp.calls() == 1 && at_b.lock().unwrap().len() == MESSAGES));
    assert_eq!(comp.status(), UCS_OK);
    let got = at_b.lock().unwrap();
    for (n, message) in got.iter().enumerate() {
        if n % 2 == 0 {
            let header: Vec<u8> = (0..max_hdr).map(|i| (i + n) as u8).collect();
            assert_eq!(message.len(), max_hdr + data_len, "message {n}");
            assert_eq!(&message[..max_hdr], &header[..], "message {n} header");
            assert!(message[max_hdr..] == data[..], "message {n} data");
        } else {
            assert_eq!(message[..], data[..entries[0].length], "message {n}");
        }
    }
    drop(got);
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    pair.close();
}

#[test]
fn refused_am_zcopy_posts_nothing() {
    let pair = Pair::new();
    let at_b = pair.b.collect_am(4);
    let attr = pair.a.attr;
    let mut data = vec![1u8; attr.cap.am.max_zcopy + 64];
    let (memh, _) = pair.a.register(data.as_mut_ptr(), 4096);
    let header = [0u8; 8];
    let base = data.as_mut_ptr();
    let post = |id: u8, header_len: usize, entries: &[uct_iov_t]| {
        // SAFETY: live ep; the iov may be bad, which is what is tested.
        unsafe {
            uct_ep_am_zcopy(
                pair.ep_a,
                id,
                header.as_ptr().cast(),
                header_len as c_uint,
                entries.as_ptr(),
                entries.len(),
                0,
                null_mut(),
            )
        }
    };
    let good = iov_entry(base, 100, memh);
    // No memory handle.
    assert_eq!(
        post(4, 8, &[iov_entry(base, 100, null_mut())]),
        UCS_ERR_INVALID_PARAM
    );
    // Past the end of the registration.
    // SAFETY: inside `data`, outside the 4096 registered bytes.
    let outside = iov_entry(unsafe { base.add(4000) }, 200, memh);
    assert_eq!(post(4, 8, &[good, outside]), UCS_ERR_INVALID_PARAM);
    // More entries than max_iov.
    let many = vec![iov_entry(base, 1, memh); attr.cap.am.max_iov + 1];
    assert_eq!(post(4, 8, &many), UCS_ERR_INVALID_PARAM);
    // An AM id out of range.
    assert_eq!(post(UCT_AM_ID_MAX as u8, 8, &[good]), UCS_ERR_INVALID_PARAM);
    // More than max_zcopy in total.
    let (big_memh, _) = pair.a.register(base, data.len());
    assert_eq!(
        post(4, 8, &[iov_entry(base, attr.cap.am.max_zcopy, big_memh)]),
        UCS_ERR_INVALID_PARAM
    );
    // A NULL buffer with a length.
    assert_eq!(
        post(4, 8, &[iov_entry(null_mut::<u8>(), 10, memh)]),
        UCS_ERR_INVALID_PARAM
    );
    // Nothing was posted: flush completes at once, nothing arrives.
    assert_eq!(ep_flush(pair.ep_a, 0, null_mut()), UCS_OK);
    for _ in 0..100 {
        pair.progress();
    }
    assert!(at_b.lock().unwrap().is_empty());
    // The ep still works.
    assert_eq!(post(4, 8, &[good]), UCS_INPROGRESS);
    assert!(pair.wait(|| at_b.lock().unwrap().len() == 1));
    assert_eq!(at_b.lock().unwrap()[0].len(), 8 + 100);
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, big_memh), UCS_OK);
    pair.close();
}

#[test]
fn zcopy_rma_gathers_and_scatters_the_most_iov_entries() {
    let pair = Pair::new();
    let put_iov = pair.a.attr.cap.put.max_iov;
    let get_iov = pair.a.attr.cap.get.max_iov;
    assert!(put_iov >= 3 && get_iov >= 3, "put {put_iov} get {get_iov}");
    const LEN: usize = 50_000;
    let mut source: Vec<u8> = (0..LEN).map(|i| (i * 31 % 251) as u8).collect();
    let mut target = vec![0u8; LEN];
    let mut back = vec![0u8; LEN];
    let (source_memh, _) = pair.a.register(source.as_mut_ptr(), LEN);
    let (back_memh, _) = pair.a.register(back.as_mut_ptr(), LEN);
    let (target_memh, rkey) = pair.b.register(target.as_mut_ptr(), LEN);
    let remote = target.as_ptr() as u64;

    // One WRITE gathers put_iov pieces into one contiguous remote range.
    let gather = split(&mut source, put_iov, source_memh);
    let mut put_done = CountingCompletion::new(1);
    let status = put_zcopy(pair.ep_a, &gather, remote, rkey, put_done.as_ptr());
    pair.expect_completion(status, &put_done);
    assert!(target == source, "put_zcopy gathered data");

    // One READ scatters the range into get_iov pieces, cut differently.
    let scatter = split(&mut back, get_iov, back_memh);
    let mut get_done = CountingCompletion::new(1);
    let status = get_zcopy(pair.ep_a, &scatter, remote, rkey, get_done.as_ptr());
    pair.expect_completion(status, &get_done);
    assert!(back == source, "get_zcopy scattered data");

    // One entry too many is refused.
    let too_many = vec![iov_entry(source.as_mut_ptr(), 8, source_memh); put_iov + 1];
    let status = put_zcopy(pair.ep_a, &too_many, remote, rkey, null_mut());
    assert_eq!(status, UCS_ERR_INVALID_PARAM);
    assert_eq!(mem_dereg(pair.a.md, source_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.a.md, back_memh), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, target_memh), UCS_OK);
    pair.close();
}

/// An empty iov entry is skipped whatever its buffer and memory handle (UCX
/// accepts NULL for both): am_zcopy and put_zcopy with one go through.
#[test]
fn empty_iov_entries_need_no_memory_handle() {
    let pair = Pair::new();
    let at_b = pair.b.collect_am(6);
    let mut data = vec![9u8; 64];
    let (memh, _) = pair.a.register(data.as_mut_ptr(), data.len());
    let mut target = Target::new(16);
    let (target_memh, rkey) = pair.b.register(target.base(), target.len());
    let empty = iov_entry(null_mut::<u8>(), 0, null_mut());
    let entries = [empty, iov_entry(data.as_mut_ptr(), 64, memh), empty];
    let mut comp = CountingCompletion::new(2);
    assert_eq!(
        am_zcopy(pair.ep_a, 6, b"hd", &entries, 0, comp.as_ptr()),
        UCS_INPROGRESS
    );
    assert_eq!(
        put_zcopy(pair.ep_a, &entries, target.addr(0), rkey, comp.as_ptr()),
        UCS_INPROGRESS
    );
    assert!(pair.wait(|| comp.calls() == 1 && at_b.lock().unwrap().len() == 1));
    assert_eq!(comp.status(), UCS_OK);
    let message = at_b.lock().unwrap()[0].clone();
    assert_eq!(&message[..2], b"hd");
    assert!(message[2..] == data[..]);
    assert_eq!(target.read64(0), u64::from_ne_bytes([9; 8]));
    assert_eq!(target.read64(56), u64::from_ne_bytes([9; 8]));
    // A non-empty entry still needs its handle.
    let bare = [iov_entry(data.as_mut_ptr(), 8, null_mut())];
    assert_eq!(
        am_zcopy(pair.ep_a, 6, b"hd", &bare, 0, null_mut()),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(mem_dereg(pair.a.md, memh), UCS_OK);
    assert_eq!(mem_dereg(pair.b.md, target_memh), UCS_OK);
    pair.close();
}

#[test]
fn zero_length_rma_names_no_remote_memory() {
    // What UCX's own tests post for 0-byte transfers: no buffer, no memory
    // handle, address 0 and `UCT_INVALID_RKEY`. The peer must not look at
    // the key (InfiniBand: no memory check at length 0), so every op
    // completes and the connection stays usable.
    let pair = Pair::new();
    let nowhere = (0u64, UCT_INVALID_RKEY);
    assert_eq!(put_short(pair.ep_a, &[], nowhere.0, nowhere.1), UCS_OK);
    let mut empty: [u8; 0] = [];
    assert_eq!(
        get_short(pair.ep_a, &mut empty, nowhere.0, nowhere.1),
        UCS_OK
    );
    let mut put_comp = CountingCompletion::new(1);
    let status = put_zcopy(pair.ep_a, &[], nowhere.0, nowhere.1, put_comp.as_ptr());
    pair.expect_completion(status, &put_comp);
    let mut get_comp = CountingCompletion::new(1);
    let status = get_zcopy(pair.ep_a, &[], nowhere.0, nowhere.1, get_comp.as_ptr());
    pair.expect_completion(status, &get_comp);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);

    // The same connection still carries data both ways.
    let mut target = Target::new(2);
    let (memh, rkey) = pair.b.register(target.base(), target.len());
    let value = 0x0123_4567_89ab_cdefu64;
    assert_eq!(
        put_short(pair.ep_a, &value.to_ne_bytes(), target.addr(0), rkey),
        UCS_OK
    );
    let mut back = [0u8; 8];
    assert_eq!(
        get_short(pair.ep_a, &mut back, target.addr(0), rkey),
        UCS_OK
    );
    assert_eq!(u64::from_ne_bytes(back), value);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(target.read64(0), value);
    assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    pair.close();
}
