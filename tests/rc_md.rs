//! Memory registration through the md: register, pack the rkey, unpack it
//! as a peer would, deregister; bad handles and arguments are refused.

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::Once;

use uct::abi::*;
use uct::api::component::*;
use uct::api::md::*;
use uct::hca::Device;
use uct::rc::domain::{rdma_rkey, MemHandle};

fn setup() {
    static SETUP: Once = Once::new();
    SETUP.call_once(|| {
        std::env::set_var("UCX_SOFT_HCA_DEVICES", "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2")
    });
}

fn ib_component() -> uct_component_h {
    setup();
    let mut components: *mut uct_component_h = null_mut();
    let mut count: c_uint = 0;
    // SAFETY: valid out-pointers.
    assert_eq!(
        unsafe { uct_query_components(&mut components, &mut count) },
        UCS_OK
    );
    assert!(count >= 1);
    // SAFETY: the array holds `count` handles.
    let component = unsafe { *components };
    // SAFETY: the array from uct_query_components.
    unsafe { uct_release_component_list(components) };
    component
}

fn open_md(name: &CStr) -> uct_md_h {
    let mut md = null_mut();
    // SAFETY: valid component, name and out-pointer; NULL config = defaults.
    assert_eq!(
        unsafe { uct_md_open(ib_component(), name.as_ptr(), null(), &mut md) },
        UCS_OK
    );
    md
}

#[test]
fn register_pack_unpack_release() {
    let md = open_md(c"mlx5_0");
    let mut buffer = vec![0u8; 4096];
    let mut memh: uct_mem_h = null_mut();
    // SAFETY: live md, buffer valid for its length until dereg.
    let status =
        unsafe { uct_md_mem_reg(md, buffer.as_mut_ptr().cast(), buffer.len(), 0, &mut memh) };
    assert_eq!(status, UCS_OK);
    assert!(!memh.is_null());
    // SAFETY: a handle from uct_md_mem_reg.
    let handle = unsafe { MemHandle::from_handle(memh) }.expect("live handle");
    assert!(handle.covers(buffer.as_ptr() as usize, 4096));
    assert!(!handle.covers(buffer.as_ptr() as usize + 1, 4096));

    let mut packed = [0u8; 9];
    // SAFETY: packed has room for rkey_packed_size (8), unaligned on purpose.
    let status = unsafe { uct_md_mkey_pack(md, memh, packed[1..].as_mut_ptr().cast()) };
    assert_eq!(status, UCS_OK);
    let mut bundle = uct_rkey_bundle_t {
        rkey: 0,
        handle: null_mut(),
        r#type: null_mut(),
    };
    // SAFETY: packed by uct_md_mkey_pack; bundle writable.
    let status =
        unsafe { uct_rkey_unpack(ib_component(), packed[1..].as_ptr().cast(), &mut bundle) };
    assert_eq!(status, UCS_OK);
    assert_eq!(rdma_rkey(bundle.rkey), handle.mr.keys().rkey);
    // SAFETY: a bundle from uct_rkey_unpack.
    assert_eq!(unsafe { uct_rkey_release(ib_component(), &bundle) }, UCS_OK);

    // SAFETY: live handle, released once; then the stale one is refused.
    unsafe {
        assert_eq!(uct_md_mem_dereg(md, memh), UCS_OK);
        uct_md_close(md);
    }
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
    let mut bundle = uct_rkey_bundle_t {
        rkey: 0,
        handle: null_mut(),
        r#type: null_mut(),
    };
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
            uct_rkey_unpack(ib_component(), null(), &mut bundle),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_rkey_unpack(ib_component(), out.as_ptr().cast(), null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        // Double deregistration is caught while the memory is not reused.
        assert_eq!(uct_md_mem_reg(md, addr, 64, 0, &mut memh), UCS_OK);
        assert_eq!(uct_md_mem_dereg(md, memh), UCS_OK);
        uct_md_close(md);
    }
    assert_eq!(fake[0], 0);
}
