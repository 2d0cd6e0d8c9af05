//! Memory registration through the md: register, pack the rkey, unpack it
//! as a peer would, deregister; registration flags as UCX's ib md takes
//! them (every access right granted, atomics on memory registered for them
//! or not), advice; bad handles, flags and arguments are refused.

mod rc_common;

use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};

use rc_common::uct_safe::{
    atomic64_fetch, md_close, md_open, md_query_v2, mem_dereg, mem_reg, read_volatile,
};
use rc_common::*;
use uct::abi::*;
use uct::api::md::*;
use uct::hca::Device;
use uct::ib::domain::MemHandle;
use uct::ib::rkey::rdma_rkey;

fn open_md(name: &CStr) -> uct_md_h {
    let mut md = null_mut();
    // NULL config = defaults.
    assert_eq!(md_open(component(), name, null(), &mut md), UCS_OK);
    md
}

#[test]
fn register_pack_unpack_release() {
    let md = open_md(c"mlx5_0");
    let mut buffer = vec![0u8; 4096];
    // The buffer stays valid for its length until dereg.
    let memh = mem_reg(md, buffer.as_mut_ptr(), buffer.len(), 0).expect("uct_md_mem_reg");
    assert!(!memh.is_null());
    // SAFETY: a handle from uct_md_mem_reg.
    let handle = unsafe { MemHandle::from_handle(memh) }.expect("live handle");
    assert!(handle.covers(buffer.as_ptr() as usize, 4096));
    assert!(!handle.covers(buffer.as_ptr() as usize + 1, 4096));

    let mut packed = [0u8; 9];
    // SAFETY: packed has room for rkey_packed_size (8), unaligned on purpose.
    let status = unsafe { uct_md_mkey_pack(md, memh, packed[1..].as_mut_ptr().cast()) };
    assert_eq!(status, UCS_OK);
    let mut bundle = empty_rkey_bundle();
    // SAFETY: packed by uct_md_mkey_pack; bundle writable.
    let status = unsafe { uct_rkey_unpack(component(), packed[1..].as_ptr().cast(), &mut bundle) };
    assert_eq!(status, UCS_OK);
    assert_eq!(rdma_rkey(bundle.rkey), handle.mr.keys().rkey);
    // SAFETY: a bundle from uct_rkey_unpack.
    assert_eq!(unsafe { uct_rkey_release(component(), &bundle) }, UCS_OK);

    assert_eq!(mem_dereg(md, memh), UCS_OK);
    md_close(md);
}

#[test]
fn registration_keys_are_the_devices() {
    // The md registers with the shared device: the key is one the device
    // knows (a second registration gets a different key).
    let md = open_md(c"mlx5_1");
    let mut a = vec![0u8; 64];
    let mut b = vec![0u8; 64];
    let (mut memh_a, mut memh_b) = (null_mut(), null_mut());
    // SAFETY: valid buffers and out-pointers.
    unsafe {
        assert_eq!(
            uct_md_mem_reg(md, a.as_mut_ptr().cast(), 64, 0, &mut memh_a),
            UCS_OK
        );
        assert_eq!(
            uct_md_mem_reg(md, b.as_mut_ptr().cast(), 64, 0, &mut memh_b),
            UCS_OK
        );
        let ka = MemHandle::from_handle(memh_a).unwrap().mr.keys();
        let kb = MemHandle::from_handle(memh_b).unwrap().mr.keys();
        assert_ne!(ka.rkey, kb.rkey);
        assert_eq!(uct_md_mem_dereg(md, memh_a), UCS_OK);
        assert_eq!(uct_md_mem_dereg(md, memh_b), UCS_OK);
        uct_md_close(md);
    }
    assert!(Device::list().contains(&"mlx5_1".to_string()));
}

#[test]
fn bad_arguments_are_refused() {
    let md = open_md(c"mlx5_0");
    let mut buffer = [0u8; 64];
    let mut memh: uct_mem_h = null_mut();
    let mut fake = [0u64; 8];
    let mut out = [0u8; 8];
    let mut bundle = empty_rkey_bundle();
    // SAFETY: each call has one bad argument; nothing is dereferenced badly.
    unsafe {
        let addr = buffer.as_mut_ptr() as *mut c_void;
        assert_eq!(
            uct_md_mem_reg(md, addr, 0, 0, &mut memh),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_md_mem_reg(md, null_mut(), 64, 0, &mut memh),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_md_mem_reg(md, addr, 64, 0, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_md_mem_reg(null_mut(), addr, 64, 0, &mut memh),
            UCS_ERR_INVALID_PARAM
        );
        let not_a_handle = fake.as_mut_ptr() as uct_mem_h;
        assert_eq!(uct_md_mem_dereg(md, not_a_handle), UCS_ERR_INVALID_PARAM);
        assert_eq!(
            uct_md_mkey_pack(md, not_a_handle, out.as_mut_ptr().cast()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(uct_md_mem_dereg(md, null_mut()), UCS_ERR_INVALID_PARAM);
        assert_eq!(
            uct_rkey_unpack(component(), null(), &mut bundle),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_rkey_unpack(component(), out.as_ptr().cast(), null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        // Double deregistration is caught while the memory is not reused.
        assert_eq!(uct_md_mem_reg(md, addr, 64, 0, &mut memh), UCS_OK);
        assert_eq!(uct_md_mem_dereg(md, memh), UCS_OK);
        uct_md_close(md);
    }
    assert_eq!(fake[0], 0);
}

#[test]
fn query_advertises_what_ucx_ib_md_does() {
    let md = open_md(c"mlx5_0");
    let mut attr: uct_md_attr_v2_t = rc_common::uct_safe::zeroed();
    attr.field_mask = UCT_MD_ATTR_FIELD_FLAGS
        | UCT_MD_ATTR_FIELD_REG_MEM_TYPES
        | UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES
        | UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES
        | UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE
        | UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS;
    assert_eq!(md_query_v2(md, &mut attr), UCS_OK);
    let host = 1u64 << UCS_MEMORY_TYPE_HOST;
    assert_eq!(
        attr.flags,
        UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY | UCT_MD_FLAG_ADVISE
    );
    assert_eq!(attr.reg_mem_types, host);
    assert_eq!(attr.access_mem_types, host);
    assert_eq!(attr.alloc_mem_types, 0, "no UCT_MD_FLAG_ALLOC");
    assert_eq!(attr.rkey_packed_size, 8);
    assert_eq!(attr.required_mem_flags, UCS_MEM_FLAG_REGISTRABLE as u8);
    md_close(md);
}

#[test]
fn atomics_reach_memory_registered_with_any_access_flags() {
    let pair = Pair::new();
    for flags in [
        UCT_MD_MEM_ACCESS_REMOTE_ATOMIC,
        UCT_MD_MEM_ACCESS_ALL,
        UCT_MD_MEM_ACCESS_RMA,
        UCT_MD_MEM_ACCESS_LOCAL_READ | UCT_MD_MEM_ACCESS_LOCAL_WRITE,
        UCT_MD_MEM_FLAG_NONBLOCK | UCT_MD_MEM_FLAG_HIDE_ERRORS | UCT_MD_MEM_SYMMETRIC_RKEY,
        0,
    ] {
        let mut target = Target::new(1);
        target.write64(0, 40);
        let (memh, rkey) = pair
            .b
            .register_with_flags(target.base(), target.len(), flags);
        let mut old = 0u64;
        let mut comp = CountingCompletion::new(1);
        // A registered aligned target; result and completion live until
        // waited for.
        let status = atomic64_fetch(
            pair.ep_a,
            UCT_ATOMIC_OP_ADD,
            2,
            &mut old,
            target.addr(0),
            rkey,
            comp.as_ptr(),
        );
        assert_eq!(status, UCS_INPROGRESS);
        assert!(pair.wait(|| comp.calls() == 1), "flags 0x{flags:x}");
        assert_eq!(comp.status(), UCS_OK, "flags 0x{flags:x}");
        // Completed; the device no longer writes it.
        assert_eq!(read_volatile(&old), 40);
        assert_eq!(target.read64(0), 42, "flags 0x{flags:x}");
        // Registered above, nothing in flight.
        assert_eq!(mem_dereg(pair.b.md, memh), UCS_OK);
    }
    pair.close();
}

#[test]
fn flags_registration_cannot_honour_are_refused() {
    let md = open_md(c"mlx5_0");
    let mut buffer = [0u8; 64];
    let addr = buffer.as_mut_ptr() as *mut c_void;
    let mut memh: uct_mem_h = null_mut();
    // SAFETY: valid arguments but for the flags; nothing is registered.
    unsafe {
        for unknown in [1 << 4, 1 << 12, 1 << 31] {
            assert_eq!(
                uct_md_mem_reg(md, addr, 64, unknown, &mut memh),
                UCS_ERR_INVALID_PARAM,
                "flags 0x{unknown:x}"
            );
        }
        assert_eq!(
            uct_md_mem_reg(md, addr, 64, UCT_MD_MEM_GVA, &mut memh),
            UCS_ERR_UNSUPPORTED
        );
        uct_md_close(md);
    }
    assert!(memh.is_null(), "nothing written on failure");
}

#[test]
fn advice_is_taken_for_registered_ranges_only() {
    let md = open_md(c"mlx5_1");
    let mut buffer = vec![0u8; 4096];
    let base = buffer.as_mut_ptr();
    let mut memh: uct_mem_h = null_mut();
    let mut fake = [0u64; 8];
    // SAFETY: live md; buffer valid until dereg; the bad calls carry one
    // bad argument each and read nothing through it.
    unsafe {
        assert_eq!(
            uct_md_mem_reg(md, base.cast(), 4096, UCT_MD_MEM_FLAG_NONBLOCK, &mut memh),
            UCS_OK
        );
        for advice in [UCT_MADV_NORMAL, UCT_MADV_WILLNEED] {
            assert_eq!(
                uct_md_mem_advise(md, memh, base.add(1024).cast(), 2048, advice),
                UCS_OK
            );
        }
        assert_eq!(
            uct_md_mem_advise(md, memh, base.add(1024).cast(), 4096, UCT_MADV_WILLNEED),
            UCS_ERR_INVALID_PARAM,
            "past the registration"
        );
        assert_eq!(
            uct_md_mem_advise(md, memh, base.cast(), 64, 7),
            UCS_ERR_INVALID_PARAM,
            "unknown advice"
        );
        assert_eq!(
            uct_md_mem_advise(md, null_mut(), base.cast(), 64, UCT_MADV_NORMAL),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_md_mem_advise(
                md,
                fake.as_mut_ptr() as uct_mem_h,
                base.cast(),
                64,
                UCT_MADV_NORMAL
            ),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_md_mem_advise(null_mut(), memh, base.cast(), 64, UCT_MADV_NORMAL),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(uct_md_mem_dereg(md, memh), UCS_OK);
        uct_md_close(md);
    }
    assert_eq!(fake, [0u64; 8]);
}
