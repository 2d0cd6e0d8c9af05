//! The v2 memory-domain calls (`uct_md_mem_reg_v2`, `uct_md_mem_dereg_v2`,
//! `uct_md_mkey_pack_v2`, `uct_rkey_unpack_v2`, `uct_rkey_compare`):
//! registrations and keys made with them serve zcopy RMA and atomics between
//! two soft devices, handles and packed keys of the v1 and v2 calls are
//! interchangeable, and each bad field mask, flag, field value or pointer
//! gets UCX's status.

mod rc_common;

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::{null, null_mut};

use rc_common::uct_safe::*;
use rc_common::*;
use uct::abi::*;
use uct::api::md::*;

fn open_md(name: &CStr) -> uct_md_h {
    let mut md = null_mut();
    // NULL config = defaults.
    assert_eq!(md_open(component(), name, null(), &mut md), UCS_OK);
    md
}

/// Registration parameters with `field_mask` and `flags`; the other fields
/// hold what UCX assumes when they are absent.
fn reg_params(field_mask: u64, flags: u64) -> uct_md_mem_reg_params_t {
    uct_md_mem_reg_params_t {
        field_mask,
        flags,
        dmabuf_fd: UCT_DMABUF_FD_INVALID,
        dmabuf_offset: 0,
        mem_type: UCS_MEMORY_TYPE_HOST,
    }
}

/// `uct_md_mem_reg_v2`: its status and the handle written (NULL if none).
fn reg_v2(
    md: uct_md_h,
    buffer: *mut u8,
    length: usize,
    params: &uct_md_mem_reg_params_t,
) -> (ucs_status_t, uct_mem_h) {
    let mut memh: uct_mem_h = null_mut();
    // SAFETY: buffer is valid for length bytes while registered (callers
    // deregister before dropping it); params and out-pointer are valid.
    let status = unsafe { uct_md_mem_reg_v2(md, buffer.cast(), length, params, &mut memh) };
    (status, memh)
}

/// `uct_md_mem_dereg_v2` with the given fields.
fn dereg_v2(
    md: uct_md_h,
    field_mask: u64,
    flags: c_uint,
    memh: uct_mem_h,
    comp: *mut uct_completion_t,
) -> ucs_status_t {
    let params = uct_md_mem_dereg_params_t {
        field_mask,
        flags,
        memh,
        comp,
    };
    // SAFETY: params valid; memh NULL, foreign or live (the call checks).
    unsafe { uct_md_mem_dereg_v2(md, &params) }
}

const DEREG_ALL_FIELDS: u64 = (UCT_MD_MEM_DEREG_FIELD_MEMH
    | UCT_MD_MEM_DEREG_FIELD_FLAGS
    | UCT_MD_MEM_DEREG_FIELD_COMPLETION) as u64;

/// `uct_md_mkey_pack_v2` into a buffer pre-filled with 0xaa.
fn pack_v2(
    md: uct_md_h,
    memh: uct_mem_h,
    field_mask: u64,
    flags: c_uint,
) -> (ucs_status_t, [u8; 8]) {
    let params = uct_md_mkey_pack_params_t { field_mask, flags };
    let mut packed = [0xaau8; 8];
    // SAFETY: packed has room for rkey_packed_size (8); params valid.
    let status = unsafe {
        uct_md_mkey_pack_v2(md, memh, null_mut(), 0, &params, packed.as_mut_ptr().cast())
    };
    (status, packed)
}

/// `uct_md_mkey_pack` (v1) into a buffer pre-filled with 0xaa.
fn pack_v1(md: uct_md_h, memh: uct_mem_h) -> [u8; 8] {
    let mut packed = [0xaau8; 8];
    // SAFETY: packed has room for rkey_packed_size (8).
    let status = unsafe { uct_md_mkey_pack(md, memh, packed.as_mut_ptr().cast()) };
    assert_eq!(status, UCS_OK);
    packed
}

fn empty_bundle() -> uct_rkey_bundle_t {
    uct_rkey_bundle_t {
        rkey: 0x5555,
        handle: 0x1 as *mut c_void,
        r#type: null_mut(),
    }
}

/// `uct_rkey_unpack_v2` of `packed` with the given fields.
fn unpack_v2(
    packed: &[u8; 8],
    field_mask: u64,
    sys_device: ucs_sys_device_t,
) -> (ucs_status_t, uct_rkey_bundle_t) {
    let params = uct_rkey_unpack_params_t {
        field_mask,
        sys_device,
    };
    let mut bundle = empty_bundle();
    // SAFETY: packed holds 8 bytes; params and bundle valid.
    let status =
        unsafe { uct_rkey_unpack_v2(component(), packed.as_ptr().cast(), &params, &mut bundle) };
    (status, bundle)
}

/// `uct_rkey_unpack` (v1) of `packed`.
fn unpack_v1(packed: &[u8; 8]) -> uct_rkey_bundle_t {
    let mut bundle = empty_bundle();
    // SAFETY: packed holds 8 bytes; bundle valid.
    let status = unsafe { uct_rkey_unpack(component(), packed.as_ptr().cast(), &mut bundle) };
    assert_eq!(status, UCS_OK);
    bundle
}

fn release(bundle: &uct_rkey_bundle_t) {
    // SAFETY: a bundle from uct_rkey_unpack(_v2).
    assert_eq!(unsafe { uct_rkey_release(component(), bundle) }, UCS_OK);
}

/// The bytes of `target`, read volatile (the devices write them).
fn target_bytes(target: &mut Target) -> Vec<u8> {
    let base = target.base();
    (0..target.len())
        // SAFETY: in bounds of the target; nothing is in flight when read.
        .map(|i| unsafe { base.add(i).read_volatile() })
        .collect()
}

#[test]
fn v2_registrations_and_keys_serve_zcopy_and_atomics() {
    let pair = Pair::new();
    const LEN: usize = 8192;
    let all_fields = (UCT_MD_MEM_REG_FIELD_FLAGS
        | UCT_MD_MEM_REG_FIELD_DMABUF_FD
        | UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET
        | UCT_MD_MEM_REG_FIELD_MEM_TYPE) as u64;

    // Target on b: every field given, remote access asked for.
    let mut target = Target::new(LEN / 8 + 2);
    let (status, target_memh) = reg_v2(
        pair.b.md,
        target.base(),
        target.len(),
        &reg_params(
            all_fields,
            (UCT_MD_MEM_ACCESS_RMA | UCT_MD_MEM_ACCESS_REMOTE_ATOMIC) as u64,
        ),
    );
    assert_eq!(status, UCS_OK);
    let (status, packed) = pack_v2(
        pair.b.md,
        target_memh,
        UCT_MD_MKEY_PACK_FIELD_FLAGS as u64,
        0,
    );
    assert_eq!(status, UCS_OK);
    let (status, bundle) = unpack_v2(
        &packed,
        UCT_RKEY_UNPACK_FIELD_SYS_DEVICE as u64,
        UCS_SYS_DEVICE_ID_UNKNOWN,
    );
    assert_eq!(status, UCS_OK);
    assert!(bundle.handle.is_null());
    let rkey = bundle.rkey;
    let base = target.addr(0);

    // Source on a: flags only, local access.
    let mut source: Vec<u8> = (0..LEN).map(|i| (i * 7 % 251) as u8).collect();
    let (status, source_memh) = reg_v2(
        pair.a.md,
        source.as_mut_ptr(),
        LEN,
        &reg_params(
            UCT_MD_MEM_REG_FIELD_FLAGS as u64,
            (UCT_MD_MEM_ACCESS_LOCAL_READ | UCT_MD_MEM_ACCESS_LOCAL_WRITE) as u64,
        ),
    );
    assert_eq!(status, UCS_OK);

    // put_zcopy in two iov entries.
    let half = LEN / 2;
    let second = source[half..].as_mut_ptr();
    let put_iov = [
        iov_entry(source.as_mut_ptr(), half, source_memh),
        iov_entry(second, half, source_memh),
    ];
    let mut comp = CountingCompletion::new(1);
    let status = pair.post_retrying(|| {
        // Registered iov, live completion, target registered.
        put_zcopy(pair.ep_a, &put_iov, base, rkey, comp.as_ptr())
    });
    pair.expect_completion(status, &comp);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    let landed = target_bytes(&mut target);
    assert_eq!(&landed[..LEN], &source[..]);
    assert!(
        landed[LEN..].iter().all(|&b| b == 0),
        "nothing past the put"
    );

    // get_zcopy back into memory registered with no fields at all.
    let mut back = Target::new(LEN / 8);
    let (status, back_memh) = reg_v2(pair.a.md, back.base(), back.len(), &reg_params(0, 0));
    assert_eq!(status, UCS_OK);
    let get_iov = [iov_entry(back.base(), LEN, back_memh)];
    let mut get_comp = CountingCompletion::new(1);
    let status = pair.post_retrying(|| {
        // Registered iov, live completion.
        get_zcopy(pair.ep_a, &get_iov, base, rkey, get_comp.as_ptr())
    });
    pair.expect_completion(status, &get_comp);
    assert_eq!(target_bytes(&mut back), source);

    // Atomics on the word past the put, with the same rkey.
    target.write64(LEN, 100);
    let mut old = 0u64;
    let mut fetch = CountingCompletion::new(1);
    let status = pair.post_retrying(|| {
        // An aligned registered word; result and completion live.
        atomic64_fetch(
            pair.ep_a,
            UCT_ATOMIC_OP_ADD,
            5,
            &mut old,
            base + LEN as u64,
            rkey,
            fetch.as_ptr(),
        )
    });
    pair.expect_completion(status, &fetch);
    // Completed; the device no longer writes it.
    assert_eq!(read_volatile(&old), 100);
    let mut swapped = 0u64;
    let mut cswap = CountingCompletion::new(1);
    let status = pair.post_retrying(|| {
        cswap64(
            pair.ep_a,
            105,
            7,
            base + LEN as u64,
            rkey,
            &mut swapped,
            cswap.as_ptr(),
        )
    });
    assert_eq!(status, UCS_INPROGRESS);
    assert!(pair.wait(|| cswap.calls() == 1));
    assert_eq!(read_volatile(&swapped), 105);
    assert_eq!(target.read64(LEN), 7);
    // A post without completion.
    let status = atomic64_post(
        pair.ep_a,
        UCT_ATOMIC_OP_XOR,
        0xf0,
        base + LEN as u64 + 8,
        rkey,
    );
    assert_eq!(status, UCS_OK);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(target.read64(LEN + 8), 0xf0);

    // Deregistration v2 with a completion (UCP's way): not called without
    // invalidation.
    release(&bundle);
    let mut dereg_comp = CountingCompletion::new(1);
    for (md, memh) in [
        (pair.b.md, target_memh),
        (pair.a.md, source_memh),
        (pair.a.md, back_memh),
    ] {
        assert_eq!(
            dereg_v2(md, DEREG_ALL_FIELDS, 0, memh, dereg_comp.as_ptr()),
            UCS_OK
        );
    }
    assert_eq!(dereg_comp.calls(), 0);
    assert_eq!(dereg_comp.count(), 1);
    pair.close();
}

#[test]
fn v1_and_v2_handles_and_keys_are_interchangeable() {
    let pair = Pair::new();
    let mut first = Target::new(4);
    let mut second = Target::new(4);
    // `first` is valid while registered.
    let memh_v1 = mem_reg(pair.b.md, first.base(), first.len(), 0).expect("uct_md_mem_reg");
    let (status, memh_v2) = reg_v2(
        pair.b.md,
        second.base(),
        second.len(),
        &reg_params(UCT_MD_MEM_REG_FIELD_FLAGS as u64, 0),
    );
    assert_eq!(status, UCS_OK);

    // Both packings give the same bytes for a handle of either call, and
    // both unpackings the same key from either packing.
    let mut rkeys = Vec::new();
    for memh in [memh_v1, memh_v2] {
        let v1 = pack_v1(pair.b.md, memh);
        let (status, v2) = pack_v2(pair.b.md, memh, 0, 0);
        assert_eq!(status, UCS_OK);
        assert_eq!(v1, v2);
        assert_ne!(v1, [0xaa; 8], "written");
        let from_v1 = unpack_v1(&v1);
        let (status, from_v2) = unpack_v2(&v2, 0, 0);
        assert_eq!(status, UCS_OK);
        assert_eq!(from_v1.rkey, from_v2.rkey);
        assert_eq!(from_v1.handle, from_v2.handle);
        release(&from_v1);
        release(&from_v2);
        rkeys.push(from_v1.rkey);
    }
    assert_ne!(rkeys[0], rkeys[1], "two registrations, two keys");

    // Each key reaches its own registration: v1 memory packed by v2 and
    // unpacked by v1 takes a put; v2 memory packed by v1 and unpacked by v2
    // takes an atomic.
    let (_, packed) = pack_v2(pair.b.md, memh_v1, 0, 0);
    let rkey_first = unpack_v1(&packed).rkey;
    let (_, rkey_second) = unpack_v2(&pack_v1(pair.b.md, memh_v2), 0, 0);
    let value = 0x0123_4567_89ab_cdefu64.to_ne_bytes();
    // 8 inline bytes into registered memory.
    let status = put_short(pair.ep_a, &value, first.addr(8), rkey_first);
    assert_eq!(status, UCS_OK);
    second.write64(16, 1);
    // An aligned registered word.
    let status = atomic64_post(
        pair.ep_a,
        UCT_ATOMIC_OP_ADD,
        41,
        second.addr(16),
        rkey_second.rkey,
    );
    assert_eq!(status, UCS_OK);
    assert_eq!(pair.flush(pair.ep_a), UCS_OK);
    assert_eq!(first.read64(8), 0x0123_4567_89ab_cdef);
    assert_eq!(first.read64(0), 0, "only the word put");
    assert_eq!(second.read64(16), 42);
    assert_eq!(first.read64(16), 0, "the other registration untouched");

    // Deregistration crosswise.
    assert_eq!(
        dereg_v2(
            pair.b.md,
            UCT_MD_MEM_DEREG_FIELD_MEMH as u64,
            0,
            memh_v1,
            null_mut()
        ),
        UCS_OK
    );
    // A handle from uct_md_mem_reg_v2, released once.
    assert_eq!(mem_dereg(pair.b.md, memh_v2), UCS_OK);
    pair.close();
}

#[test]
fn mem_reg_v2_refuses_bad_input_with_ucx_statuses() {
    let md = open_md(c"mlx5_0");
    let mut buffer = vec![0u8; 4096];
    let addr = buffer.as_mut_ptr();
    let flags = UCT_MD_MEM_REG_FIELD_FLAGS as u64;
    let with = |edit: fn(&mut uct_md_mem_reg_params_t)| {
        let mut params = reg_params(flags, 0);
        edit(&mut params);
        params
    };
    let cases: [(&str, uct_md_mem_reg_params_t, ucs_status_t); 8] = [
        (
            "unknown flag",
            reg_params(flags, 1 << 4),
            UCS_ERR_INVALID_PARAM,
        ),
        (
            "flag above 32 bits",
            reg_params(flags, 1 << 40),
            UCS_ERR_INVALID_PARAM,
        ),
        (
            "GVA",
            reg_params(flags, UCT_MD_MEM_GVA as u64),
            UCS_ERR_UNSUPPORTED,
        ),
        (
            "dmabuf fd",
            with(|p| {
                p.field_mask |= UCT_MD_MEM_REG_FIELD_DMABUF_FD as u64;
                p.dmabuf_fd = 0;
            }),
            UCS_ERR_UNSUPPORTED,
        ),
        (
            "cuda memory",
            with(|p| {
                p.field_mask |= UCT_MD_MEM_REG_FIELD_MEM_TYPE as u64;
                p.mem_type = UCS_MEMORY_TYPE_CUDA;
            }),
            UCS_ERR_UNSUPPORTED,
        ),
        (
            "rdma memory",
            with(|p| {
                p.field_mask |= UCT_MD_MEM_REG_FIELD_MEM_TYPE as u64;
                p.mem_type = UCS_MEMORY_TYPE_RDMA;
            }),
            UCS_ERR_UNSUPPORTED,
        ),
        (
            "not a memory type",
            with(|p| {
                p.field_mask |= UCT_MD_MEM_REG_FIELD_MEM_TYPE as u64;
                p.mem_type = UCS_MEMORY_TYPE_UNKNOWN + 1;
            }),
            UCS_ERR_INVALID_PARAM,
        ),
        (
            "hidden errors still refused",
            reg_params(flags, (UCT_MD_MEM_FLAG_HIDE_ERRORS as u64) | 1 << 33),
            UCS_ERR_INVALID_PARAM,
        ),
    ];
    for (what, params, expected) in cases {
        let (status, memh) = reg_v2(md, addr, 4096, &params);
        assert_eq!(status, expected, "{what}");
        assert!(memh.is_null(), "{what}: nothing written");
    }

    let good = reg_params(flags, 0);
    let mut memh: uct_mem_h = null_mut();
    // SAFETY: each call has one bad argument; nothing is registered.
    unsafe {
        assert_eq!(
            uct_md_mem_reg_v2(md, addr.cast(), 4096, null(), &mut memh),
            UCS_ERR_INVALID_PARAM,
            "NULL params"
        );
        assert_eq!(
            uct_md_mem_reg_v2(null_mut(), addr.cast(), 4096, &good, &mut memh),
            UCS_ERR_INVALID_PARAM,
            "NULL md"
        );
        assert_eq!(
            uct_md_mem_reg_v2(md, addr.cast(), 4096, &good, null_mut()),
            UCS_ERR_INVALID_PARAM,
            "NULL memh_p"
        );
        assert_eq!(
            uct_md_mem_reg_v2(md, null_mut(), 4096, &good, &mut memh),
            UCS_ERR_INVALID_PARAM,
            "NULL address"
        );
        assert_eq!(
            uct_md_mem_reg_v2(md, addr.cast(), 0, &good, &mut memh),
            UCS_ERR_INVALID_PARAM,
            "length 0"
        );
    }
    assert!(memh.is_null());

    // Accepted: fields the mask does not name are not read (garbage there),
    // the "invalid" dmabuf fd, an offset without an fd (ignored, as UCX),
    // host and unknown memory types.
    let mut garbage = reg_params(0, u64::MAX);
    garbage.dmabuf_fd = 7;
    garbage.mem_type = 99;
    let accepted = [
        ("no fields, garbage in the rest", garbage),
        (
            "invalid fd and an offset",
            with(|p| {
                p.field_mask |=
                    (UCT_MD_MEM_REG_FIELD_DMABUF_FD | UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET) as u64;
                p.dmabuf_fd = UCT_DMABUF_FD_INVALID;
                p.dmabuf_offset = 4096;
            }),
        ),
        (
            "offset alone",
            with(|p| {
                p.field_mask |= UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET as u64;
                p.dmabuf_offset = 64;
            }),
        ),
        (
            "unknown memory type",
            with(|p| {
                p.field_mask |= UCT_MD_MEM_REG_FIELD_MEM_TYPE as u64;
                p.mem_type = UCS_MEMORY_TYPE_UNKNOWN;
            }),
        ),
        (
            "every known flag but GVA",
            reg_params(
                flags,
                (UCT_MD_MEM_FLAG_NONBLOCK
                    | UCT_MD_MEM_FLAG_FIXED
                    | UCT_MD_MEM_FLAG_LOCK
                    | UCT_MD_MEM_FLAG_HIDE_ERRORS
                    | UCT_MD_MEM_ACCESS_ALL
                    | UCT_MD_MEM_SYMMETRIC_RKEY) as u64,
            ),
        ),
    ];
    for (what, params) in accepted {
        let (status, memh) = reg_v2(md, addr, 4096, &params);
        assert_eq!(status, UCS_OK, "{what}");
        assert!(!memh.is_null(), "{what}");
        assert_eq!(
            dereg_v2(md, DEREG_ALL_FIELDS, 0, memh, null_mut()),
            UCS_OK,
            "{what}"
        );
    }
    // Nothing is registered any more.
    md_close(md);
}

#[test]
fn mem_dereg_v2_refuses_bad_input_and_invalidation() {
    let md = open_md(c"mlx5_1");
    // As UCX's verbs ib md: no invalidation advertised, so none offered.
    let mut attr: uct_md_attr_v2_t = rc_common::uct_safe::zeroed();
    attr.field_mask = UCT_MD_ATTR_FIELD_FLAGS;
    assert_eq!(md_query_v2(md, &mut attr), UCS_OK);
    let invalidation =
        UCT_MD_FLAG_INVALIDATE | UCT_MD_FLAG_INVALIDATE_RMA | UCT_MD_FLAG_INVALIDATE_AMO;
    assert_eq!(attr.flags & invalidation, 0);

    let mut buffer = vec![0u8; 256];
    let (status, memh) = reg_v2(md, buffer.as_mut_ptr(), 256, &reg_params(0, 0));
    assert_eq!(status, UCS_OK);
    let mut comp = CountingCompletion::new(1);
    let memh_field = UCT_MD_MEM_DEREG_FIELD_MEMH as u64;
    let mut fake = [0u64; 8];
    let not_a_handle = fake.as_mut_ptr() as uct_mem_h;
    let cases = [
        (
            "MEMH missing",
            UCT_MD_MEM_DEREG_FIELD_FLAGS as u64,
            0,
            memh,
            UCS_ERR_INVALID_PARAM,
        ),
        ("no fields", 0, 0, memh, UCS_ERR_INVALID_PARAM),
        (
            "NULL memh",
            memh_field,
            0,
            null_mut(),
            UCS_ERR_INVALID_PARAM,
        ),
        (
            "unknown flag",
            DEREG_ALL_FIELDS,
            0x2,
            memh,
            UCS_ERR_INVALID_PARAM,
        ),
        (
            "not a handle",
            memh_field,
            0,
            not_a_handle,
            UCS_ERR_INVALID_PARAM,
        ),
        (
            "invalidate with a completion",
            DEREG_ALL_FIELDS,
            UCT_MD_MEM_DEREG_FLAG_INVALIDATE,
            memh,
            UCS_ERR_UNSUPPORTED,
        ),
        (
            // UCX checks support before the completion.
            "invalidate without a completion",
            memh_field | UCT_MD_MEM_DEREG_FIELD_FLAGS as u64,
            UCT_MD_MEM_DEREG_FLAG_INVALIDATE,
            memh,
            UCS_ERR_UNSUPPORTED,
        ),
    ];
    for (what, field_mask, flags, handle, expected) in cases {
        assert_eq!(
            dereg_v2(md, field_mask, flags, handle, comp.as_ptr()),
            expected,
            "{what}"
        );
    }
    let params = uct_md_mem_dereg_params_t {
        field_mask: memh_field,
        flags: 0,
        memh,
        comp: null_mut(),
    };
    // SAFETY: NULL params or NULL md; nothing is read through them.
    unsafe {
        assert_eq!(uct_md_mem_dereg_v2(md, null()), UCS_ERR_INVALID_PARAM);
        assert_eq!(
            uct_md_mem_dereg_v2(null_mut(), &params),
            UCS_ERR_INVALID_PARAM
        );
    }
    assert_eq!(comp.calls(), 0, "refusals call no completion");
    assert_eq!(fake, [0u64; 8], "nothing written to a foreign handle");

    // The handle survived every refusal: it still packs, then deregisters
    // with a completion that is not called and a NULL one alike.
    assert_eq!(pack_v2(md, memh, 0, 0).0, UCS_OK);
    assert_eq!(
        dereg_v2(md, DEREG_ALL_FIELDS, 0, memh, comp.as_ptr()),
        UCS_OK
    );
    assert_eq!(comp.calls(), 0);
    let (_, memh) = reg_v2(md, buffer.as_mut_ptr(), 256, &reg_params(0, 0));
    assert_eq!(dereg_v2(md, DEREG_ALL_FIELDS, 0, memh, null_mut()), UCS_OK);
    // Nothing is registered any more.
    md_close(md);
}

#[test]
fn mkey_pack_v2_refuses_bad_input_and_unadvertised_flags() {
    let md = open_md(c"mlx5_0");
    let mut buffer = vec![0u8; 4096];
    let (status, memh) = reg_v2(md, buffer.as_mut_ptr(), 4096, &reg_params(0, 0));
    assert_eq!(status, UCS_OK);
    let flags_field = UCT_MD_MKEY_PACK_FIELD_FLAGS as u64;
    for (what, field_mask, flags, expected) in [
        ("unknown flag", flags_field, 1 << 3, UCS_ERR_INVALID_PARAM),
        (
            "export",
            flags_field,
            UCT_MD_MKEY_PACK_FLAG_EXPORT,
            UCS_ERR_UNSUPPORTED,
        ),
        (
            "invalidate RMA",
            flags_field,
            UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA,
            UCS_ERR_UNSUPPORTED,
        ),
        (
            "invalidate AMO",
            flags_field,
            UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO,
            UCS_ERR_UNSUPPORTED,
        ),
    ] {
        let (status, packed) = pack_v2(md, memh, field_mask, flags);
        assert_eq!(status, expected, "{what}");
        assert_eq!(packed, [0xaa; 8], "{what}: nothing written");
    }

    let params = uct_md_mkey_pack_params_t {
        field_mask: 0,
        flags: 0,
    };
    let mut out = [0xaau8; 8];
    let mut fake = [0u64; 8];
    // SAFETY: each call has one bad argument; out has room for 8 bytes.
    unsafe {
        let buf = out.as_mut_ptr().cast();
        assert_eq!(
            uct_md_mkey_pack_v2(md, memh, null_mut(), 0, null(), buf),
            UCS_ERR_INVALID_PARAM,
            "NULL params"
        );
        assert_eq!(
            uct_md_mkey_pack_v2(md, null_mut(), null_mut(), 0, &params, buf),
            UCS_ERR_INVALID_PARAM,
            "NULL memh"
        );
        assert_eq!(
            uct_md_mkey_pack_v2(md, memh, null_mut(), 0, &params, null_mut()),
            UCS_ERR_INVALID_PARAM,
            "NULL buffer"
        );
        assert_eq!(
            uct_md_mkey_pack_v2(null_mut(), memh, null_mut(), 0, &params, buf),
            UCS_ERR_INVALID_PARAM,
            "NULL md"
        );
        assert_eq!(
            uct_md_mkey_pack_v2(
                md,
                fake.as_mut_ptr() as uct_mem_h,
                null_mut(),
                0,
                &params,
                buf
            ),
            UCS_ERR_INVALID_PARAM,
            "not a handle"
        );
    }
    assert_eq!(out, [0xaa; 8]);

    // Accepted: flags not named by the mask are not read; the range named
    // does not change the key (it covers the registration).
    let reference = pack_v1(md, memh);
    let (status, packed) = pack_v2(md, memh, 0, u32::MAX);
    assert_eq!(status, UCS_OK);
    assert_eq!(packed, reference);
    let sub_params = uct_md_mkey_pack_params_t {
        field_mask: flags_field,
        flags: 0,
    };
    let mut sub = [0u8; 8];
    // SAFETY: a range inside the registration; sub has room for 8 bytes.
    let status = unsafe {
        uct_md_mkey_pack_v2(
            md,
            memh,
            buffer.as_mut_ptr().add(1024).cast(),
            512,
            &sub_params,
            sub.as_mut_ptr().cast(),
        )
    };
    assert_eq!(status, UCS_OK);
    assert_eq!(sub, reference);
    assert_eq!(dereg_v2(md, DEREG_ALL_FIELDS, 0, memh, null_mut()), UCS_OK);
    // Nothing is registered any more.
    md_close(md);
}

#[test]
fn rkey_unpack_v2_refuses_bad_input_and_takes_any_sys_device() {
    let md = open_md(c"mlx5_1");
    let mut buffer = vec![0u8; 128];
    let (status, memh) = reg_v2(md, buffer.as_mut_ptr(), 128, &reg_params(0, 0));
    assert_eq!(status, UCS_OK);
    let packed = pack_v1(md, memh);
    let expected = unpack_v1(&packed).rkey;
    let sys_device_field = UCT_RKEY_UNPACK_FIELD_SYS_DEVICE as u64;

    for (field_mask, sys_device) in [
        (0, 0x33),
        (sys_device_field, UCS_SYS_DEVICE_ID_UNKNOWN),
        (sys_device_field, 0),
        (sys_device_field, 5),
    ] {
        let (status, bundle) = unpack_v2(&packed, field_mask, sys_device);
        assert_eq!(status, UCS_OK, "sys_device {sys_device}");
        assert_eq!(bundle.rkey, expected);
        assert!(bundle.handle.is_null(), "nothing to release");
        release(&bundle);
    }

    let params = uct_rkey_unpack_params_t {
        field_mask: 0,
        sys_device: UCS_SYS_DEVICE_ID_UNKNOWN,
    };
    let mut bundle = empty_bundle();
    // SAFETY: each call has one bad argument; nothing is read through it.
    unsafe {
        let buf = packed.as_ptr().cast();
        assert_eq!(
            uct_rkey_unpack_v2(component(), buf, null(), &mut bundle),
            UCS_ERR_INVALID_PARAM,
            "NULL params"
        );
        assert_eq!(
            uct_rkey_unpack_v2(component(), null(), &params, &mut bundle),
            UCS_ERR_INVALID_PARAM,
            "NULL buffer"
        );
        assert_eq!(
            uct_rkey_unpack_v2(component(), buf, &params, null_mut()),
            UCS_ERR_INVALID_PARAM,
            "NULL bundle"
        );
        assert_eq!(
            uct_rkey_unpack_v2(null_mut(), buf, &params, &mut bundle),
            UCS_ERR_INVALID_PARAM,
            "NULL component"
        );
    }
    assert_eq!(bundle.rkey, 0x5555, "nothing written");
    assert_eq!(dereg_v2(md, DEREG_ALL_FIELDS, 0, memh, null_mut()), UCS_OK);
    // Nothing is registered any more.
    md_close(md);
}

#[test]
fn rkey_compare_orders_unpacked_keys() {
    let md = open_md(c"mlx5_0");
    let mut buffer = vec![0u8; 256];
    let (_, memh_a) = reg_v2(md, buffer.as_mut_ptr(), 128, &reg_params(0, 0));
    let second = buffer[128..].as_mut_ptr();
    let (_, memh_b) = reg_v2(md, second, 128, &reg_params(0, 0));
    let key_a = unpack_v1(&pack_v1(md, memh_a)).rkey;
    let key_b = unpack_v1(&pack_v1(md, memh_b)).rkey;
    let again_a = unpack_v2(&pack_v2(md, memh_a, 0, 0).1, 0, 0).1.rkey;
    let params = uct_rkey_compare_params_t { field_mask: 0 };
    let compare = |left: uct_rkey_t, right: uct_rkey_t| {
        let mut result = 99;
        // SAFETY: valid params and result.
        let status = unsafe { uct_rkey_compare(component(), left, right, &params, &mut result) };
        assert_eq!(status, UCS_OK);
        result
    };
    assert_eq!(compare(key_a, again_a), 0, "the same key from v1 and v2");
    let (low, high) = (key_a.min(key_b), key_a.max(key_b));
    assert_ne!(low, high);
    assert_eq!(compare(low, high), -1);
    assert_eq!(compare(high, low), 1);

    let mut result = 99;
    let unknown = uct_rkey_compare_params_t { field_mask: 1 };
    // SAFETY: each call has one bad argument; nothing is read through it.
    unsafe {
        assert_eq!(
            uct_rkey_compare(component(), low, high, &unknown, &mut result),
            UCS_ERR_INVALID_PARAM,
            "no fields are defined"
        );
        assert_eq!(
            uct_rkey_compare(component(), low, high, null(), &mut result),
            UCS_ERR_INVALID_PARAM,
            "NULL params"
        );
        assert_eq!(
            uct_rkey_compare(component(), low, high, &params, null_mut()),
            UCS_ERR_INVALID_PARAM,
            "NULL result"
        );
        assert_eq!(
            uct_rkey_compare(null_mut(), low, high, &params, &mut result),
            UCS_ERR_INVALID_PARAM,
            "NULL component"
        );
    }
    assert_eq!(result, 99, "nothing written");
    for memh in [memh_a, memh_b] {
        assert_eq!(dereg_v2(md, DEREG_ALL_FIELDS, 0, memh, null_mut()), UCS_OK);
    }
    // Nothing is registered any more.
    md_close(md);
}

#[test]
fn v2_md_calls_ignore_unknown_field_mask_bits_as_ucx() {
    // UCX's v2 md entry points read the fields their mask names and leave
    // the rest alone: a newer caller's extra bits are not an error.
    let md = open_md(c"mlx5_0");
    let mut buffer = vec![0u8; 4096];
    let flags = UCT_MD_MEM_REG_FIELD_FLAGS as u64;
    let (status, memh) = reg_v2(
        md,
        buffer.as_mut_ptr(),
        4096,
        &reg_params(flags | 1 << 4 | 1 << 63, 0),
    );
    assert_eq!(status, UCS_OK, "mem_reg_v2 with unknown field bits");
    assert!(!memh.is_null());

    let (status, packed) = pack_v2(md, memh, UCT_MD_MKEY_PACK_FIELD_FLAGS as u64 | 1 << 1, 0);
    assert_eq!(status, UCS_OK, "mkey_pack_v2 with an unknown field bit");
    assert_eq!(
        packed,
        pack_v1(md, memh),
        "the same key as uct_md_mkey_pack"
    );

    let expected = unpack_v1(&packed);
    let (status, bundle) = unpack_v2(&packed, UCT_RKEY_UNPACK_FIELD_SYS_DEVICE as u64 | 1 << 1, 0);
    assert_eq!(status, UCS_OK, "rkey_unpack_v2 with an unknown field bit");
    assert_eq!(bundle.rkey, expected.rkey);
    release(&bundle);
    release(&expected);

    let mut attr: uct_md_attr_v2_t = rc_common::uct_safe::zeroed();
    attr.field_mask = UCT_MD_ATTR_FIELD_MAX_REG | 1 << 62;
    assert_eq!(md_query_v2(md, &mut attr), UCS_OK);
    assert!(attr.max_reg > 0, "the known field is filled");

    assert_eq!(
        dereg_v2(md, DEREG_ALL_FIELDS | 1 << 3, 0, memh, null_mut()),
        UCS_OK,
        "mem_dereg_v2 with an unknown field bit"
    );
    // Nothing is registered any more.
    md_close(md);
}
