//! Components, memory domains and transport resources, with every bad input.
//! The process sees two soft devices (set before first use, see `setup`).

use std::ffi::{c_uint, CStr};
use std::mem::size_of;
use std::ptr::null_mut;
use std::sync::Once;

use uct::abi::*;
use uct::api::component::*;
use uct::api::cstr::c_array_to_string;
use uct::api::md::*;

#[path = "uct_safe/mod.rs"]
mod uct_safe;
use uct_safe::{
    component_query, md_close, md_open, md_query, md_query_v2, query_components,
    release_component_list, tl_resources,
};

const DEVICES: &str = "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2";

fn setup() {
    static SETUP: Once = Once::new();
    // Every test calls this before touching the library, so the variable is
    // set before any thread reads the environment.
    SETUP.call_once(|| std::env::set_var("UCX_SOFT_HCA_DEVICES", DEVICES));
}

/// The components, in listed order: `ib`, then the connection manager.
fn components() -> [uct_component_h; 2] {
    setup();
    let mut components: *mut uct_component_h = null_mut();
    let mut count: c_uint = 0;
    assert_eq!(query_components(&mut components, &mut count), UCS_OK);
    assert_eq!(count, 2);
    // SAFETY: the array has `count` entries.
    let listed = unsafe { [*components, *components.add(1)] };
    release_component_list(components);
    listed
}

fn ib_component() -> uct_component_h {
    components()[0]
}

#[test]
fn the_connection_manager_is_rdmacm_with_no_md() {
    let cm = components()[1];
    let mut attr = zeroed_component_attr(
        UCT_COMPONENT_ATTR_FIELD_NAME
            | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
            | UCT_COMPONENT_ATTR_FIELD_FLAGS,
    );
    attr.md_resource_count = 77;
    assert_eq!(component_query(cm, &mut attr), UCS_OK);
    // UCP's default UCX_SOCKADDR_TLS_PRIORITY names rdmacm first.
    assert_eq!(c_array_to_string(&attr.name), "rdmacm");
    assert_eq!(attr.md_resource_count, 0);
    assert_eq!(attr.flags, UCT_COMPONENT_FLAG_CM);
    let mut md = null_mut();
    assert_ne!(md_open(cm, c"mlx5_0", std::ptr::null(), &mut md), UCS_OK);
    assert!(md.is_null());
}

fn open_md(name: &CStr) -> uct_md_h {
    let mut md = null_mut();
    // NULL config = defaults.
    assert_eq!(
        md_open(ib_component(), name, std::ptr::null(), &mut md),
        UCS_OK
    );
    assert!(!md.is_null());
    md
}

fn zeroed_component_attr(field_mask: u64) -> uct_component_attr_t {
    uct_component_attr_t {
        field_mask,
        ..uct_safe::zeroed()
    }
}

#[test]
fn component_list_and_query() {
    let component = ib_component();
    let mut attr = zeroed_component_attr(
        UCT_COMPONENT_ATTR_FIELD_NAME
            | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
            | UCT_COMPONENT_ATTR_FIELD_FLAGS,
    );
    attr.flags = u64::MAX;
    assert_eq!(component_query(component, &mut attr), UCS_OK);
    assert_eq!(c_array_to_string(&attr.name), "ib");
    assert_eq!(attr.md_resource_count, 2);
    assert_eq!(attr.flags, 0, "ib has no CM and no rkey_ptr");

    // Second query, as uct_hello_world does: only MD_RESOURCES, array sized
    // from the count.
    let mut resources = vec![
        uct_md_resource_desc_t {
            md_name: [0x55; UCT_MD_NAME_MAX]
        };
        3
    ];
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = resources.as_mut_ptr();
    attr.md_resource_count = 77;
    // The array has room for every md (plus a guard entry).
    assert_eq!(component_query(component, &mut attr), UCS_OK);
    assert_eq!(
        attr.md_resource_count, 77,
        "fields not asked for are untouched"
    );
    let names: Vec<String> = resources[..2]
        .iter()
        .map(|r| c_array_to_string(&r.md_name))
        .collect();
    assert_eq!(names, ["mlx5_0", "mlx5_1"]);
    assert!(
        resources[2].md_name.iter().all(|&c| c == 0x55),
        "nothing written past the mds"
    );
    assert_eq!(
        resources[0].md_name[6..],
        [0; 10],
        "rest of the name zero-filled"
    );

    // field_mask 0 is a valid no-op.
    let mut empty = zeroed_component_attr(0);
    assert_eq!(component_query(component, &mut empty), UCS_OK);
}

#[test]
fn component_bad_input() {
    let component = ib_component();
    let mut count: c_uint = 0;
    let mut list: *mut uct_component_h = null_mut();
    let mut attr = zeroed_component_attr(UCT_COMPONENT_ATTR_FIELD_NAME);
    let mut foreign = [0u64; 4];
    // SAFETY: each call passes one bad (NULL) out-pointer.
    unsafe {
        assert_eq!(
            uct_query_components(null_mut(), &mut count),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_query_components(&mut list, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_component_query(component, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
    }
    // Each call passes one bad argument; the rest are valid.
    assert_eq!(
        component_query(null_mut(), &mut attr),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(
        component_query(foreign.as_mut_ptr().cast(), &mut attr),
        UCS_ERR_INVALID_PARAM
    );
    // A bit UCX does not define.
    let mut unknown = zeroed_component_attr(UCT_COMPONENT_ATTR_FIELD_FLAGS << 1);
    assert_eq!(
        component_query(component, &mut unknown),
        UCS_ERR_INVALID_PARAM
    );
    // MD_RESOURCES without an array.
    let mut no_array = zeroed_component_attr(UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES);
    assert_eq!(
        component_query(component, &mut no_array),
        UCS_ERR_INVALID_PARAM
    );
    release_component_list(null_mut());
    assert!(list.is_null());
    assert_eq!(
        attr.name, [0; UCT_COMPONENT_NAME_MAX],
        "nothing written on failure"
    );
}

#[test]
fn md_open_close_and_bad_input() {
    let component = ib_component();
    let md = open_md(c"mlx5_1");
    md_close(md);

    let mut out = null_mut();
    let mut foreign = [0u64; 4];
    let defaults = std::ptr::null();
    // Each call passes one bad argument.
    assert_eq!(
        md_open(component, c"mlx5_9", defaults, &mut out),
        UCS_ERR_NO_DEVICE
    );
    assert_eq!(
        md_open(component, c"", defaults, &mut out),
        UCS_ERR_NO_DEVICE
    );
    // SAFETY: the NULL name and the NULL out-pointer are the bad inputs.
    unsafe {
        assert_eq!(
            uct_md_open(component, std::ptr::null(), defaults, &mut out),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            uct_md_open(component, c"mlx5_0".as_ptr(), defaults, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
    }
    assert_eq!(
        md_open(null_mut(), c"mlx5_0", defaults, &mut out),
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(
        md_open(foreign.as_mut_ptr().cast(), c"mlx5_0", defaults, &mut out),
        UCS_ERR_INVALID_PARAM
    );
    let invalid_utf8 = CStr::from_bytes_with_nul(&[0xff, 0]).unwrap();
    assert_eq!(
        md_open(component, invalid_utf8, defaults, &mut out),
        UCS_ERR_INVALID_PARAM
    );
    // A config handle that is not one.
    assert_ne!(
        md_open(component, c"mlx5_0", foreign.as_ptr().cast(), &mut out),
        UCS_OK
    );
    md_close(null_mut());
    assert!(out.is_null(), "nothing written on failure");
}

#[test]
fn md_open_with_config_from_md_config_read() {
    let component = ib_component();
    let mut config: *mut uct_md_config_t = null_mut();
    // SAFETY: valid component and out-pointer.
    let status = unsafe {
        uct::api::config::uct_md_config_read(
            component,
            std::ptr::null(),
            std::ptr::null(),
            &mut config,
        )
    };
    assert_eq!(status, UCS_OK);
    let mut md = null_mut();
    // A config from uct_md_config_read.
    assert_eq!(md_open(component, c"mlx5_0", config, &mut md), UCS_OK);
    md_close(md);
    // SAFETY: the config handle, released once.
    unsafe { uct::api::config::uct_config_release(config as *mut _) };
}

/// Size of `uct_md_attr_t` in UCX 1.13 and in master (identical layouts).
const MD_ATTR_SIZE: usize = 224;
const GUARD: u8 = 0xA5;

#[test]
fn md_query_v1_stays_inside_the_old_struct() {
    assert_eq!(size_of::<uct_md_attr_t>(), MD_ATTR_SIZE);
    let md = open_md(c"mlx5_0");
    // The caller's struct (1.13 size) followed by guard bytes, all pre-filled.
    #[repr(C, align(8))]
    struct Guarded {
        attr: [u8; MD_ATTR_SIZE],
        guard: [u8; 64],
    }
    let mut buffer = Guarded {
        attr: [GUARD; MD_ATTR_SIZE],
        guard: [GUARD; 64],
    };
    let attr_ptr = buffer.attr.as_mut_ptr() as *mut uct_md_attr_t;
    // SAFETY: open md; attr_ptr is 8-aligned with room for the struct.
    assert_eq!(unsafe { uct_md_query(md, attr_ptr) }, UCS_OK);
    assert!(
        buffer.guard.iter().all(|&b| b == GUARD),
        "wrote past sizeof(uct_md_attr_t)"
    );

    // SAFETY: written by uct_md_query.
    let attr = unsafe { attr_ptr.read() };
    assert_eq!(c_array_to_string(&attr.component_name), "ib");
    assert_eq!(attr.cap.reg_mem_types & (1 << UCS_MEMORY_TYPE_HOST), 1);
    assert_eq!(
        attr.cap.flags,
        UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY | UCT_MD_FLAG_ADVISE,
        "registration works (ib::domain), handles and rkeys are needed, advice is taken"
    );
    assert_eq!(attr.cap.max_alloc, u64::MAX, "ULONG_MAX, as UCX's ib md");
    assert_eq!(attr.rkey_packed_size, 8);
    assert!(attr.reg_cost.c > 0.0, "cost from UCX_IB_MEM_REG_OVERHEAD");
    assert!(attr.local_cpus.ucs_bits[0] & 1 == 1, "CPU 0 is local");

    // SAFETY: bad arguments: a NULL attr, a NULL md with a valid attr.
    unsafe {
        assert_eq!(uct_md_query(md, null_mut()), UCS_ERR_INVALID_PARAM);
        assert_eq!(uct_md_query(null_mut(), attr_ptr), UCS_ERR_INVALID_PARAM);
    }
    md_close(md);
}

fn guarded_v2(field_mask: u64) -> Box<uct_md_attr_v2_t> {
    let mut attr: Box<uct_md_attr_v2_t> = Box::new(uct_safe::zeroed());
    // SAFETY: writing bytes of a plain-data struct.
    unsafe {
        std::ptr::write_bytes(
            &mut *attr as *mut uct_md_attr_v2_t as *mut u8,
            GUARD,
            size_of::<uct_md_attr_v2_t>(),
        )
    };
    attr.field_mask = field_mask;
    attr
}

#[test]
fn md_query_v2_writes_only_requested_fields() {
    let md = open_md(c"mlx5_1");
    let pattern = u64::from_ne_bytes([GUARD; 8]);

    let mut attr = guarded_v2(
        UCT_MD_ATTR_FIELD_FLAGS | UCT_MD_ATTR_FIELD_COMPONENT_NAME | UCT_MD_ATTR_FIELD_GLOBAL_ID,
    );
    assert_eq!(md_query_v2(md, &mut attr), UCS_OK);
    assert_eq!(
        attr.flags,
        UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY | UCT_MD_FLAG_ADVISE
    );
    assert_eq!(c_array_to_string(&attr.component_name), "ib");
    assert_eq!(
        c_array_to_string(&attr.global_id),
        "soft-hca:mlx5_1@127.0.0.2"
    );
    assert_eq!(attr.max_alloc, pattern, "MAX_ALLOC not asked for");
    assert_eq!(attr.max_reg as u64, pattern);
    assert_eq!(attr.reg_alignment as u64, pattern);
    assert_eq!(attr.required_mem_flags, GUARD);

    let mut all = guarded_v2((UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS << 1) - 1);
    assert_eq!(md_query_v2(md, &mut all), UCS_OK);
    assert_eq!(all.max_reg, usize::MAX);
    assert_eq!(all.reg_mem_types, 1 << UCS_MEMORY_TYPE_HOST);
    assert_eq!(all.rkey_packed_size, 8);
    assert_eq!(all.reg_alignment, 1);
    assert_eq!(all.required_mem_flags, UCS_MEM_FLAG_REGISTRABLE as u8);

    // The v1 and v2 answers agree.
    let mut v1: uct_md_attr_t = uct_safe::zeroed();
    assert_eq!(md_query(md, &mut v1), UCS_OK);
    assert_eq!(v1.cap.flags, all.flags);
    assert_eq!(v1.cap.max_reg, all.max_reg);
    assert_eq!(v1.cap.access_mem_types, all.access_mem_types);
    assert_eq!(v1.reg_cost, all.reg_cost);
    assert_eq!(v1.local_cpus.ucs_bits, all.local_cpus.ucs_bits);

    // A field this version does not know is ignored, as UCX does: the call
    // succeeds and writes nothing.
    let unknown_bit = UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS << 1;
    let mut unknown = guarded_v2(unknown_bit);
    assert_eq!(md_query_v2(md, &mut unknown), UCS_OK);
    let mut untouched = guarded_v2(unknown_bit);
    untouched.field_mask = unknown.field_mask;
    // SAFETY: both are plain-data structs of the same size, read as bytes.
    let (written, expected) = unsafe {
        (
            std::slice::from_raw_parts(
                &*unknown as *const uct_md_attr_v2_t as *const u8,
                size_of::<uct_md_attr_v2_t>(),
            ),
            std::slice::from_raw_parts(
                &*untouched as *const uct_md_attr_v2_t as *const u8,
                size_of::<uct_md_attr_v2_t>(),
            ),
        )
    };
    assert_eq!(written, expected, "an unknown field bit wrote something");
    // SAFETY: the NULL attr is the bad argument.
    assert_eq!(
        unsafe { uct_md_query_v2(md, null_mut()) },
        UCS_ERR_INVALID_PARAM
    );
    assert_eq!(md_query_v2(null_mut(), &mut all), UCS_ERR_INVALID_PARAM);
    md_close(md);
    assert_eq!(unknown.max_alloc, pattern, "nothing written on failure");
}

#[test]
fn tl_resources_are_rc_mlx5_on_port_1() {
    for (md_name, dev_name) in [(c"mlx5_0", "mlx5_0:1"), (c"mlx5_1", "mlx5_1:1")] {
        let md = open_md(md_name);
        let resources = tl_resources(md).expect("tl resources");
        assert_eq!(resources.len(), 1);
        let resource = resources[0];
        assert_eq!(c_array_to_string(&resource.tl_name), "rc_mlx5");
        assert_eq!(c_array_to_string(&resource.dev_name), dev_name);
        assert_eq!(resource.dev_type, UCT_DEVICE_TYPE_NET);
        assert_eq!(resource.sys_device, UCS_SYS_DEVICE_ID_UNKNOWN);
        let mut resources: *mut uct_tl_resource_desc_t = null_mut();
        let mut count: c_uint = 0;
        // SAFETY: each call passes one bad (NULL) argument; md open.
        unsafe {
            assert_eq!(
                uct_md_query_tl_resources(md, null_mut(), &mut count),
                UCS_ERR_INVALID_PARAM
            );
            assert_eq!(
                uct_md_query_tl_resources(md, &mut resources, null_mut()),
                UCS_ERR_INVALID_PARAM
            );
            assert_eq!(
                uct_md_query_tl_resources(null_mut(), &mut resources, &mut count),
                UCS_ERR_INVALID_PARAM
            );
            uct_release_tl_resource_list(null_mut());
        }
        md_close(md);
    }
}

// Memory registration (success and bad input) is tested in rc_md.rs.

#[test]
fn unimplemented_functions_exist_and_report_unsupported() {
    use uct::api::cm::uct_cm_open;
    use uct::api::unsupported::*;
    let md = open_md(c"mlx5_0");
    let mut cm: uct_cm_h = null_mut();
    let mut mem_type: ucs_memory_type_t = UCS_MEMORY_TYPE_UNKNOWN;
    // SAFETY: the stubs read no argument; uct_cm_open refuses the ib
    // component (no connection manager) before reading the others.
    unsafe {
        assert_eq!(
            uct_cm_open(ib_component(), null_mut(), std::ptr::null(), &mut cm),
            UCS_ERR_UNSUPPORTED
        );
        assert_eq!(
            uct_md_detect_memory_type(md, std::ptr::null(), 0, &mut mem_type),
            UCS_ERR_UNSUPPORTED
        );
        assert_eq!(uct_md_is_sockaddr_accessible(md, std::ptr::null(), 0), 0);
        uct_md_close(md);
    }
    assert!(cm.is_null());
    assert_eq!(mem_type, UCS_MEMORY_TYPE_UNKNOWN);
}

#[test]
fn md_resources_of_a_component_without_mds_may_be_null() {
    // UCX's gtest asks every component for its md list with the data
    // pointer of a vector sized by md_resource_count: NULL for rdmacm.
    let cm = components()[1];
    let mut attr = zeroed_component_attr(UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES);
    attr.md_resources = null_mut();
    assert_eq!(component_query(cm, &mut attr), UCS_OK);
    // A component with mds still needs the array.
    let mut attr = zeroed_component_attr(UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES);
    attr.md_resources = null_mut();
    assert_eq!(
        component_query(ib_component(), &mut attr),
        UCS_ERR_INVALID_PARAM
    );
}
