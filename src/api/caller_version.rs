//! Which UCX API version the caller of a version-dependent entry point was
//! built against.
//!
//! A few UCT entry points kept their name while their arguments changed:
//! `uct_md_mkey_pack_v2` took four arguments up to UCX 1.15 and six from
//! 1.16; `uct_perf_attr_t` grew `flags` in 1.17 and `path_bandwidth` (moving
//! the later field bits) in 1.19. A C call cannot tell which form it got, so
//! the answer comes from the UCX libraries in the process: the caller of
//! these functions is, in practice, UCX's own `libucp` or a program built
//! with the `libucs` beside it.
//!
//! In this order:
//! 1. UCX's `libucp.so.0` is loaded: its `ucp_get_version` names the version;
//! 2. UCX's `libucs.so.0` is loaded (not this file under that name): the
//!    newest of the marker functions below that it exports (libucs has no
//!    version call of its own);
//! 3. neither: the API of our own headers (UCX master).
//!
//! A version found is kept (UCX's libraries, once found, stay loaded);
//! "nothing loaded" is asked again next time, since a program may `dlopen`
//! UCX later.

use std::ffi::{c_uint, c_void, CStr};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::core::ucx_libucs::loaded_symbol;

/// A UCX release, as far as the API differences we serve go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct UcxVersion {
    pub major: u32,
    pub minor: u32,
}

impl UcxVersion {
    pub const fn new(major: u32, minor: u32) -> UcxVersion {
        UcxVersion { major, minor }
    }

    /// The API our generated headers declare (UCX master, after 1.22).
    pub const HEADERS: UcxVersion = UcxVersion::new(1, 23);

    /// `uct_md_mkey_pack_v2(md, memh, address, length, params, buffer)`: six
    /// arguments from here, four (`md, memh, params, buffer`) before.
    pub const MKEY_PACK_WITH_RANGE: UcxVersion = UcxVersion::new(1, 16);
    /// `uct_perf_attr_t::flags` (field bit 11) from here.
    pub const PERF_ATTR_FLAGS: UcxVersion = UcxVersion::new(1, 17);
    /// `uct_perf_attr_t::path_bandwidth` (bit 9; latency, max inflight eps
    /// and flags move up one bit) from here.
    pub const PERF_ATTR_PATH_BANDWIDTH: UcxVersion = UcxVersion::new(1, 19);
    /// `uct_iface_attr_v2_t` with token fields and no
    /// `max_get_sgl_zcopy_count` (1.22's layout) from here...
    pub const IFACE_ATTR_V2_TOKENS: UcxVersion = UcxVersion::new(1, 22);
    /// ...to here (exclusive): master's layout, our headers'.
    pub const IFACE_ATTR_V2_GET_SGL: UcxVersion = UcxVersion::new(1, 23);

    fn packed(self) -> u32 {
        (self.major << 16) | (self.minor & 0xffff)
    }

    fn unpacked(packed: u32) -> UcxVersion {
        UcxVersion::new(packed >> 16, packed & 0xffff)
    }
}

/// Functions UCX's `libucs` exports from a release on (every release since
/// exports them), newest first; a `libucs` with none of them is older than
/// the oldest, which serves as 1.13 (the oldest form we tell apart).
const LIBUCS_MARKERS: &[(UcxVersion, &CStr)] = &[
    (
        UcxVersion::PERF_ATTR_PATH_BANDWIDTH,
        c"ucs_topo_sys_device_get_user_value",
    ),
    (UcxVersion::PERF_ATTR_FLAGS, c"ucs_cpu_vendor_name"),
    (
        UcxVersion::MKEY_PACK_WITH_RANGE,
        c"ucs_config_parser_get_env_vars",
    ),
];

/// The version 1.13..1.15 share for our purposes.
const OLDEST_TOLD_APART: UcxVersion = UcxVersion::new(1, 13);

/// The packed version found, 0 while none was.
static FOUND: AtomicU32 = AtomicU32::new(0);

/// UCX's definition of `name` in its loaded `libucs`.
pub(crate) fn libucs_symbol(name: &CStr) -> Option<*mut c_void> {
    loaded_symbol(c"libucs.so.0", name)
}

/// The version UCX's loaded `libucp` reports, if it is loaded.
pub(crate) fn libucp_version() -> Option<UcxVersion> {
    let address = loaded_symbol(c"libucp.so.0", c"ucp_get_version")?;
    type GetVersion = unsafe extern "C" fn(*mut c_uint, *mut c_uint, *mut c_uint);
    // SAFETY: UCX's `ucp_get_version(unsigned *major, unsigned *minor,
    // unsigned *release)`, unchanged since UCX 1.0.
    let get_version = unsafe { std::mem::transmute::<*mut c_void, GetVersion>(address) };
    let (mut major, mut minor, mut release) = (0, 0, 0);
    // SAFETY: three writable locals.
    unsafe { get_version(&mut major, &mut minor, &mut release) };
    Some(UcxVersion::new(major, minor))
}

/// The version of UCX's loaded `libucs`, from the markers it exports.
fn libucs_version() -> Option<UcxVersion> {
    // Loaded at all (a function every release has)?
    libucs_symbol(c"ucs_status_string")?;
    let newest = LIBUCS_MARKERS
        .iter()
        .find(|(_, marker)| libucs_symbol(marker).is_some())
        .map_or(OLDEST_TOLD_APART, |(version, _)| *version);
    Some(newest)
}

/// The UCX API version of this process's UCX libraries, or of our headers
/// when none is loaded. Every entry point whose arguments differ between
/// UCX versions asks here.
pub fn caller_version() -> UcxVersion {
    let known = FOUND.load(Ordering::Acquire);
    if known != 0 {
        return UcxVersion::unpacked(known);
    }
    match libucp_version().or_else(libucs_version) {
        Some(version) => {
            tracing::debug!(
                "UCX {}.{} is loaded: version-dependent calls use its API",
                version.major,
                version.minor
            );
            FOUND.store(version.packed(), Ordering::Release);
            version
        }
        None => UcxVersion::HEADERS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_by_major_then_minor() {
        assert!(UcxVersion::new(1, 13) < UcxVersion::MKEY_PACK_WITH_RANGE);
        assert!(UcxVersion::new(2, 0) > UcxVersion::new(1, 99));
        assert_eq!(
            UcxVersion::unpacked(UcxVersion::new(1, 22).packed()),
            UcxVersion::new(1, 22)
        );
    }

    #[test]
    fn markers_are_newest_first() {
        assert!(LIBUCS_MARKERS.windows(2).all(|w| w[0].0 > w[1].0));
    }
}
