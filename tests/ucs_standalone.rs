//! The `ucs_*` functions our library implements for processes without UCX's
//! own libucs (a pure UCT program with our library as `libucs.so.0` too):
//! callback queues walked as UCX 1.13's inline dispatch walks them, event
//! sets over epoll, topology names and distances, memory allocation, and
//! the name tables. This test binary loads no UCX library, so none of these
//! steps aside (`uct::core::ucx_libucs`).

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, Ordering};

use uct::abi::*;
use uct::api::callbackq::*;
use uct::api::event_set::*;
use uct::api::mem_alloc::*;
use uct::api::names::*;
use uct::api::stats::ucs_stats_get_root;
use uct::api::topo::*;

#[test]
fn no_ucx_libucs_in_this_process() {
    assert!(!uct::core::ucx_libucs::ucx_libucs_loaded());
}

static CALLS: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn count(_arg: *mut c_void) -> c_uint {
    CALLS.fetch_add(1, Ordering::SeqCst);
    1
}

unsafe extern "C" fn is_count(elem: *const ucs_callbackq_elem_t, _arg: *mut c_void) -> i32 {
    // SAFETY: the queue hands a live element.
    i32::from(unsafe { (*elem).cb }.map(|cb| cb as *const ()) == Some(count as *const ()))
}

/// UCX 1.13's inline `ucs_callbackq_dispatch`: 24-byte elements `{cb, arg,
/// flags, id}`, walked until a NULL `cb`.
fn dispatch_as_1_13(storage: &[u64; 33]) -> c_uint {
    let mut work = 0;
    for element in storage.chunks(3).take(8) {
        if element[0] == 0 {
            break;
        }
        // SAFETY: a non-zero cb slot holds the dispatcher ucs_callbackq_init
        // wrote, with its argument.
        let cb: unsafe extern "C" fn(*mut c_void) -> c_uint =
            unsafe { std::mem::transmute(element[0] as usize) };
        // SAFETY: as above.
        work += unsafe { cb(element[1] as *mut c_void) };
    }
    work
}

#[test]
fn callback_queue_in_1_13_storage() {
    // 1.13's ucs_callbackq_t is 264 bytes; fill it with garbage first.
    let mut storage = [u64::MAX; 33];
    let cbq = storage.as_mut_ptr() as *mut ucs_callbackq_t;
    // SAFETY: 264 writable bytes, more than the 48 the init writes.
    unsafe {
        assert_eq!(ucs_callbackq_init(cbq), UCS_OK);
        assert_eq!(
            ucs_callbackq_add(null_mut(), Some(count), null_mut(), 0),
            -1
        );
        assert_eq!(ucs_callbackq_add(cbq, None, null_mut(), 0), -1);
        assert_eq!(ucs_callbackq_add(cbq, Some(count), null_mut(), 0x80), -1);
        let id = ucs_callbackq_add_safe(cbq, Some(count), null_mut(), UCS_CALLBACKQ_FLAG_FAST);
        assert!(id >= 0);
        let oneshot = ucs_callbackq_add(cbq, Some(count), null_mut(), UCS_CALLBACKQ_FLAG_ONESHOT);
        assert!(oneshot >= 0 && oneshot != id);
        CALLS.store(0, Ordering::SeqCst);
        assert_eq!(dispatch_as_1_13(&storage), 2);
        assert_eq!(dispatch_as_1_13(&storage), 1, "the one-shot ran once");
        ucs_callbackq_remove_if(cbq, Some(is_count), null_mut());
        assert_eq!(dispatch_as_1_13(&storage), 0);
        assert_eq!(CALLS.load(Ordering::SeqCst), 3);
        let again = ucs_callbackq_add(cbq, Some(count), null_mut(), 0);
        ucs_callbackq_remove(cbq, again);
        assert_eq!(dispatch_as_1_13(&storage), 0);
        ucs_callbackq_cleanup(cbq);
        assert_eq!(dispatch_as_1_13(&storage), 0, "an empty walk after cleanup");
        assert_eq!(
            ucs_callbackq_add(cbq, Some(count), null_mut(), 0),
            -1,
            "not a queue any more"
        );
    }
}

unsafe extern "C" fn note_ready(
    data: *mut c_void,
    events: ucs_event_set_types_t,
    arg: *mut c_void,
) {
    // SAFETY: arg is the test's Vec.
    unsafe { &mut *(arg as *mut Vec<(usize, u8)>) }.push((data as usize, events));
}

#[test]
fn event_set_reports_ready_fds() {
    // SAFETY: plain syscalls and our functions with valid pointers.
    unsafe {
        let fd = libc::eventfd(0, libc::EFD_NONBLOCK);
        assert!(fd >= 0);
        let mut set = null_mut();
        assert_eq!(ucs_event_set_create(null_mut()), UCS_ERR_INVALID_PARAM);
        assert_eq!(ucs_event_set_create(&mut set), UCS_OK);
        assert_eq!(
            ucs_event_set_add(set, fd, UCS_EVENT_SET_EVREAD, 7 as *mut c_void),
            UCS_OK
        );
        assert_eq!(
            ucs_event_set_add(set, fd, 0x40, null_mut()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            ucs_event_set_add(set, -1, UCS_EVENT_SET_EVREAD, null_mut()),
            UCS_ERR_IO_ERROR
        );
        let mut ready: Vec<(usize, u8)> = Vec::new();
        let arg = &mut ready as *mut Vec<(usize, u8)> as *mut c_void;
        let mut count: c_uint = 8;
        assert_eq!(
            ucs_event_set_wait(set, &mut count, 0, Some(note_ready), arg),
            UCS_OK
        );
        assert_eq!(count, 0, "nothing ready yet");
        let one: u64 = 1;
        assert_eq!(libc::write(fd, (&one as *const u64).cast(), 8), 8);
        count = 8;
        assert_eq!(
            ucs_event_set_wait(set, &mut count, 1000, Some(note_ready), arg),
            UCS_OK
        );
        assert_eq!(count, 1);
        assert_eq!(ready, vec![(7, UCS_EVENT_SET_EVREAD)]);
        assert_eq!(
            ucs_event_set_mod(set, fd, UCS_EVENT_SET_EVREAD, 9 as *mut c_void),
            UCS_OK
        );
        count = 8;
        assert_eq!(
            ucs_event_set_wait(set, &mut count, 1000, Some(note_ready), arg),
            UCS_OK
        );
        assert_eq!(ready.last(), Some(&(9, UCS_EVENT_SET_EVREAD)));
        let mut epoll_fd = -1;
        assert_eq!(ucs_event_set_fd_get(set, &mut epoll_fd), UCS_OK);
        assert!(epoll_fd >= 0);
        assert_eq!(ucs_event_set_del(set, fd), UCS_OK);
        count = 8;
        assert_eq!(
            ucs_event_set_wait(set, &mut count, 0, Some(note_ready), arg),
            UCS_OK
        );
        assert_eq!(count, 0, "deleted fds are not reported");
        ucs_event_set_cleanup(set);
        let mut garbage = [0u64; 4];
        assert_eq!(
            ucs_event_set_fd_get(garbage.as_mut_ptr().cast(), &mut epoll_fd),
            UCS_ERR_INVALID_PARAM
        );
        libc::close(fd);
    }
}

#[test]
fn topology_names_and_distances() {
    // SAFETY: our functions with valid pointers and buffers.
    unsafe {
        let bus = ucs_sys_bus_id {
            domain: 0,
            bus: 0x3b,
            slot: 0,
            function: 1,
        };
        let (mut first, mut again) = (0, 0);
        assert_eq!(ucs_topo_find_device_by_bus_id(&bus, &mut first), UCS_OK);
        assert_eq!(
            ucs_topo_find_device_by_bdf_name(c"0000:3b:00.1".as_ptr(), &mut again),
            UCS_OK
        );
        assert_eq!(first, again, "the same PCI function is one device");
        assert!(ucs_topo_num_devices() > u32::from(first));
        assert_eq!(
            CStr::from_ptr(ucs_topo_sys_device_get_name(first)).to_str(),
            Ok("3b:00.1")
        );
        let mut buffer = [0 as std::ffi::c_char; 16];
        ucs_topo_sys_device_bdf_name(first, buffer.as_mut_ptr(), buffer.len());
        assert_eq!(CStr::from_ptr(buffer.as_ptr()).to_str(), Ok("0000:3b:00.1"));
        assert_eq!(
            ucs_topo_sys_device_set_name(first, c"nic0".as_ptr()),
            UCS_OK
        );
        assert_eq!(
            CStr::from_ptr(ucs_topo_sys_device_get_name(first)).to_str(),
            Ok("nic0")
        );
        assert_eq!(
            ucs_topo_sys_device_set_name(200, c"x".as_ptr()),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(
            CStr::from_ptr(ucs_topo_sys_device_get_name(UCS_SYS_DEVICE_ID_UNKNOWN)).to_str(),
            Ok("<unknown>")
        );
        assert_eq!(
            ucs_topo_find_device_by_bdf_name(c"mlx5_0".as_ptr(), &mut again),
            UCS_ERR_INVALID_PARAM
        );
        let mut read_back = ucs_sys_bus_id {
            domain: 9,
            bus: 9,
            slot: 9,
            function: 9,
        };
        assert_eq!(ucs_topo_get_device_bus_id(first, &mut read_back), UCS_OK);
        assert_eq!(read_back, bus);
        assert_eq!(
            ucs_topo_get_device_bus_id(250, &mut read_back),
            UCS_ERR_NO_ELEM
        );
        let mut distance = ucs_sys_dev_distance {
            latency: 1.0,
            bandwidth: 1.0,
        };
        assert_eq!(
            ucs_topo_get_distance(first, UCS_SYS_DEVICE_ID_UNKNOWN, &mut distance),
            UCS_OK
        );
        assert_eq!(distance, ucs_topo_default_distance);
        let mut text = [0 as std::ffi::c_char; 64];
        ucs_topo_distance_str(&distance, text.as_mut_ptr(), text.len());
        assert_eq!(CStr::from_ptr(text.as_ptr()).to_str(), Ok("0ns >1PB/s"));
        // SAFETY: only reads the two pointers of the list head.
        let head = &raw mut ucs_sys_topo_methods_list;
        assert_eq!((*head).next, head, "an empty, valid list");
    }
    assert!(ucs_stats_get_root().is_null());
}

#[test]
fn memory_allocation_methods() {
    // SAFETY: our functions with valid pointers; memory used within bounds.
    unsafe {
        let params = uct_mem_alloc_params_t {
            field_mask: (UCT_MEM_ALLOC_PARAM_FIELD_FLAGS | UCT_MEM_ALLOC_PARAM_FIELD_NAME) as u64,
            flags: UCT_MD_MEM_ACCESS_ALL,
            address: null_mut(),
            mem_type: UCS_MEMORY_TYPE_HOST,
            mds: uct_mem_alloc_params_mds {
                mds: null(),
                count: 0,
            },
            name: c"test".as_ptr(),
            sys_device: UCS_SYS_DEVICE_ID_UNKNOWN,
        };
        for method in [
            UCT_ALLOC_METHOD_THP,
            UCT_ALLOC_METHOD_HEAP,
            UCT_ALLOC_METHOD_MMAP,
        ] {
            let mut mem: uct_allocated_memory_t = std::mem::zeroed();
            let methods = [UCT_ALLOC_METHOD_MD, method];
            assert_eq!(
                uct_mem_alloc(10_000, methods.as_ptr(), 2, &params, &mut mem),
                UCS_OK
            );
            assert_eq!(mem.method, method, "md is skipped, {method} used");
            assert!(mem.length >= 10_000);
            std::ptr::write_bytes(mem.address as *mut u8, 0xab, mem.length);
            assert!(mem.memh.is_null() && mem.md.is_null());
            assert_eq!(uct_mem_free(&mem), UCS_OK);
        }
        let mut mem: uct_allocated_memory_t = std::mem::zeroed();
        let only_md = [UCT_ALLOC_METHOD_MD];
        assert_eq!(
            uct_mem_alloc(4096, only_md.as_ptr(), 1, &params, &mut mem),
            UCS_ERR_NO_MEMORY
        );
        let bad = [UCT_ALLOC_METHOD_LAST + 3];
        assert_eq!(
            uct_mem_alloc(4096, bad.as_ptr(), 1, &params, &mut mem),
            UCS_ERR_INVALID_PARAM
        );
        let mut cuda = params;
        cuda.field_mask |= UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE as u64;
        cuda.mem_type = UCS_MEMORY_TYPE_CUDA;
        assert_eq!(
            uct_mem_alloc(4096, only_md.as_ptr(), 1, &cuda, &mut mem),
            UCS_ERR_UNSUPPORTED
        );
        assert_eq!(
            uct_mem_alloc(0, only_md.as_ptr(), 1, &params, &mut mem),
            UCS_ERR_INVALID_PARAM
        );
        assert_eq!(uct_mem_free(null()), UCS_ERR_INVALID_PARAM);
    }
}

#[test]
fn name_tables_are_ucx_1_13s() {
    let text = |pointer: *const std::ffi::c_char| {
        // SAFETY: table entries are NUL-terminated literals.
        unsafe { CStr::from_ptr(pointer) }.to_str().unwrap_or("?")
    };
    assert_eq!(std::mem::size_of_val(&uct_device_type_names), 32);
    assert_eq!(
        text(uct_device_type_names.0[UCT_DEVICE_TYPE_SELF as usize]),
        "loopback"
    );
    assert_eq!(std::mem::size_of_val(&uct_alloc_method_names), 48);
    assert_eq!(
        text(uct_alloc_method_names.0[UCT_ALLOC_METHOD_HEAP as usize]),
        "heap"
    );
    assert!(uct_alloc_method_names.0[UCT_ALLOC_METHOD_LAST as usize].is_null());
    assert_eq!(
        text(ucs_thread_mode_names.0[UCS_THREAD_MODE_MULTI as usize]),
        "multi"
    );
    assert_eq!(
        std::mem::size_of_val(&uct::api::memory_type::ucs_memory_type_names),
        56
    );
    assert_eq!(
        std::mem::size_of_val(&uct::api::memory_type::ucs_memory_type_descs),
        48
    );
}

#[test]
fn topology_types_have_ucx_layouts() {
    // UCX 1.13's topo.h: {uint16_t domain; uint8_t bus, slot, function}, two
    // doubles, and the two-pointer list link.
    assert_eq!(std::mem::size_of::<ucs_sys_bus_id_t>(), 6);
    assert_eq!(std::mem::offset_of!(ucs_sys_bus_id_t, function), 4);
    assert_eq!(std::mem::size_of::<ucs_sys_dev_distance_t>(), 16);
    assert_eq!(std::mem::offset_of!(ucs_sys_dev_distance_t, bandwidth), 8);
    assert_eq!(std::mem::size_of::<ucs_list_link_t>(), 16);
}

static WORKER_CALLS: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn count_worker(_arg: *mut c_void) -> c_uint {
    WORKER_CALLS.fetch_add(1, Ordering::SeqCst);
    1
}

unsafe extern "C" fn is_count_worker(elem: *const ucs_callbackq_elem_t, _arg: *mut c_void) -> i32 {
    // SAFETY: the queue hands a live element.
    i32::from(unsafe { (*elem).cb }.map(|cb| cb as *const ()) == Some(count_worker as *const ()))
}

#[test]
fn remove_if_on_a_workers_progress_queue() {
    use uct::api::async_context::*;
    use uct::api::worker::*;
    // SAFETY: valid out-pointers; handles used while alive, destroyed once.
    unsafe {
        let mut async_context = null_mut();
        assert_eq!(
            ucs_async_context_create(UCS_ASYNC_MODE_POLL, &mut async_context),
            UCS_OK
        );
        let mut worker = null_mut();
        assert_eq!(
            uct_worker_create(async_context, UCS_THREAD_MODE_SINGLE, &mut worker),
            UCS_OK
        );
        let mut id = -1;
        uct_worker_progress_register_safe(worker, Some(count_worker), null_mut(), 0, &mut id);
        assert_eq!(uct_worker_progress(worker), 1);
        // As UCX 1.13's libucp does: straight on &worker->progress_q.
        let queue = worker as *mut ucs_callbackq_t;
        ucs_callbackq_remove_if(queue, Some(is_count_worker), null_mut());
        assert_eq!(uct_worker_progress(worker), 0);
        assert_eq!(WORKER_CALLS.load(Ordering::SeqCst), 1);
        ucs_callbackq_cleanup(queue);
        assert_eq!(
            uct_worker_progress(worker),
            0,
            "cleanup refused: still a live worker"
        );
        uct_worker_destroy(worker);
        ucs_async_context_destroy(async_context);
    }
}
