//! Field-masked parameter structs at the C boundary: a member whose bit is
//! clear is never read, so a caller built against an older UCX, whose struct
//! ends before the newer members, is never read past its end. Each struct is
//! laid out against an inaccessible page: a read past it kills the test.

mod rc_common;

use std::ffi::c_void;
use std::mem::offset_of;

use rc_common::*;
use uct::abi::*;
use uct::api::v2::uct_iface_is_reachable_v2;

/// Bytes of `uct_iface_is_reachable_params_t` in UCX 1.13: up to and
/// including `info_string_length` (no `scope`, no address lengths).
const REACHABLE_PARAMS_LEN_1_13: usize = offset_of!(uct_iface_is_reachable_params_t, scope);

/// A page-aligned readable page followed by an inaccessible one.
struct GuardedPage {
    base: *mut u8,
    page: usize,
}

impl GuardedPage {
    fn new() -> Self {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        // SAFETY: a fresh anonymous mapping; checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        // SAFETY: the second page of the mapping just made.
        let rc =
            unsafe { libc::mprotect(base.cast::<u8>().add(page).cast(), page, libc::PROT_NONE) };
        assert_eq!(rc, 0);
        GuardedPage {
            base: base.cast(),
            page,
        }
    }

    /// The address `len` bytes before the inaccessible page.
    fn tail(&self, len: usize) -> *mut u8 {
        // SAFETY: inside the first page.
        unsafe { self.base.add(self.page - len) }
    }
}

impl Drop for GuardedPage {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new, unmapped once.
        unsafe { libc::munmap(self.base.cast::<c_void>(), 2 * self.page) };
    }
}

#[test]
fn is_reachable_v2_reads_no_member_past_a_1_13_callers_struct() {
    let pair = Pair::new();
    let device = pair.b.device_address();
    let guarded = GuardedPage::new();
    let at = guarded.tail(REACHABLE_PARAMS_LEN_1_13);
    assert_eq!(at as usize % std::mem::align_of::<u64>(), 0);
    // SAFETY: REACHABLE_PARAMS_LEN_1_13 writable bytes at `at`, aligned;
    // only members before `scope` are written.
    unsafe {
        let params = at.cast::<uct_iface_is_reachable_params_t>();
        std::ptr::addr_of_mut!((*params).field_mask)
            .write(u64::from(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR));
        std::ptr::addr_of_mut!((*params).device_addr).write(device.as_ptr().cast());
        std::ptr::addr_of_mut!((*params).iface_addr).write(std::ptr::null());
        std::ptr::addr_of_mut!((*params).info_string).write(std::ptr::null_mut());
        std::ptr::addr_of_mut!((*params).info_string_length).write(0);
        assert_eq!(uct_iface_is_reachable_v2(pair.a.iface, params), 1);
    }
    pair.close();
}
