//! `ucs_topo_*` (`ucs/sys/topo/base/topo.h`): the system devices (PCI
//! functions) resources sit on, their names, and the distance between two.
//!
//! An HCA device's tl resources are registered here by its PCI function
//! ([`system_device`], named after the HCA, as UCX's ib md does): a real
//! adapter's, or for a soft HCA device the one of the network interface
//! carrying its address ([`crate::hca::netdev`]); a device on none (a soft
//! device on loopback) is `UCS_SYS_DEVICE_ID_UNKNOWN`. This library
//! reads no PCI topology, so every distance is
//! [`ucs_topo_default_distance`] (UCX's answer for unknown or equal
//! devices). Names and bus ids are kept as UCX
//! keeps them. With UCX's libucs loaded, every call goes to UCX
//! (`crate::core::ucx_libucs`): its device table is the process's.

use std::ffi::{c_char, c_uint, c_void, CStr, CString};
use std::sync::{Mutex, MutexGuard};

use crate::abi::*;
use crate::api::checks::{non_null, status_entry_point};
use crate::core::ucx_libucs::{return_ucx_call, ucx_function};

/// The distance of near (or unknown) devices: no latency, no bandwidth limit.
#[no_mangle]
pub static ucs_topo_default_distance: ucs_sys_dev_distance_t = ucs_sys_dev_distance {
    latency: 0.0,
    bandwidth: f64::MAX,
};

/// UCX's list of topology methods: empty here (no method of ours is
/// registered), a valid empty list for anyone who walks or extends it (UCX's
/// libucs links its methods in when this definition is the one the process
/// uses). Rust never touches it after the initialiser: only C code does,
/// under UCX's rules, hence `static mut`.
#[no_mangle]
pub static mut ucs_sys_topo_methods_list: ucs_list_link_t = ucs_list_link {
    prev: &raw mut ucs_sys_topo_methods_list,
    next: &raw mut ucs_sys_topo_methods_list,
};

const DEVICE_NAME_UNKNOWN: &CStr = c"<unknown>";
const DEVICE_NAME_INVALID: &CStr = c"<invalid>";

struct Device {
    bus_id: ucs_sys_bus_id_t,
    /// Never freed while the process runs: `get_name` hands out pointers.
    name: &'static CStr,
}

fn devices() -> MutexGuard<'static, Vec<Device>> {
    static DEVICES: Mutex<Vec<Device>> = Mutex::new(Vec::new());
    DEVICES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn bus_id_text(bus_id: &ucs_sys_bus_id_t, abbreviate: bool) -> String {
    if abbreviate && bus_id.domain == 0 {
        format!("{:02x}:{:02x}.{}", bus_id.bus, bus_id.slot, bus_id.function)
    } else {
        format!(
            "{:04x}:{:02x}:{:02x}.{}",
            bus_id.domain, bus_id.bus, bus_id.slot, bus_id.function
        )
    }
}

/// A name that lives as long as the process (device names are handed out).
fn leak_name(text: &[u8]) -> &'static CStr {
    let owned = CString::new(
        text.iter()
            .copied()
            .filter(|&byte| byte != 0)
            .collect::<Vec<u8>>(),
    )
    .unwrap_or_default();
    Box::leak(owned.into_boxed_c_str())
}

/// Copies `text` into the caller's `buffer` of `max` bytes, NUL-terminated
/// and truncated to fit; returns `buffer`.
///
/// # Safety
/// `buffer` NULL or writable for `max` bytes.
unsafe fn copy_out(text: &[u8], buffer: *mut c_char, max: usize) -> *const c_char {
    if buffer.is_null() || max == 0 {
        return buffer;
    }
    let length = text.len().min(max - 1);
    // SAFETY: `buffer` holds `max` bytes; `length + 1 <= max`.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast(), length);
        buffer.add(length).write(0);
    }
    buffer
}

/// The device index of `bus_id`, registering it (named by its short PCI
/// address) the first time.
///
/// # Safety
/// Pointers NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn ucs_topo_find_device_by_bus_id(
    bus_id: *const ucs_sys_bus_id_t,
    sys_dev: *mut ucs_sys_device_t,
) -> ucs_status_t {
    return_ucx_call!(ucs_topo_find_device_by_bus_id: fn(*const ucs_sys_bus_id_t, *mut ucs_sys_device_t) -> ucs_status_t; bus_id, sys_dev);
    status_entry_point!(FUNCTION = "ucs_topo_find_device_by_bus_id", {
        non_null(bus_id, FUNCTION, "bus_id")?;
        non_null(sys_dev, FUNCTION, "sys_dev")?;
        // SAFETY: non-NULL, readable by the caller's contract.
        let bus_id = unsafe { bus_id.read() };
        let mut devices = devices();
        let index = match devices.iter().position(|device| device.bus_id == bus_id) {
            Some(index) => index,
            None if devices.len() >= usize::from(UCS_SYS_DEVICE_ID_MAX) => {
                crate::api::enter();
                tracing::error!(
                    "{FUNCTION}: all {} system device ids are taken",
                    devices.len()
                );
                return Err(Status::ExceedsLimit);
            }
            None => {
                let name = leak_name(bus_id_text(&bus_id, true).as_bytes());
                devices.push(Device { bus_id, name });
                devices.len() - 1
            }
        };
        // SAFETY: non-NULL, writable by the caller's contract; index < 255.
        unsafe { sys_dev.write(index as ucs_sys_device_t) };
        Ok(())
    })
}

/// The PCI address of device `sys_dev`; `UCS_ERR_NO_ELEM` for an unknown one.
///
/// # Safety
/// `bus_id` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ucs_topo_get_device_bus_id(
    sys_dev: ucs_sys_device_t,
    bus_id: *mut ucs_sys_bus_id_t,
) -> ucs_status_t {
    return_ucx_call!(ucs_topo_get_device_bus_id: fn(ucs_sys_device_t, *mut ucs_sys_bus_id_t) -> ucs_status_t; sys_dev, bus_id);
    status_entry_point!(FUNCTION = "ucs_topo_get_device_bus_id", {
        non_null(bus_id, FUNCTION, "bus_id")?;
        let found = devices()
            .get(usize::from(sys_dev))
            .map(|device| device.bus_id);
        let Some(found) = found else {
            return Err(Status::NoElem);
        };
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { bus_id.write(found) };
        Ok(())
    })
}

/// The distance between two devices: always the default one here (see the
/// module documentation).
///
/// # Safety
/// `distance` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ucs_topo_get_distance(
    device1: ucs_sys_device_t,
    device2: ucs_sys_device_t,
    distance: *mut ucs_sys_dev_distance_t,
) -> ucs_status_t {
    return_ucx_call!(ucs_topo_get_distance: fn(ucs_sys_device_t, ucs_sys_device_t, *mut ucs_sys_dev_distance_t) -> ucs_status_t; device1, device2, distance);
    status_entry_point!(FUNCTION = "ucs_topo_get_distance", {
        non_null(distance, FUNCTION, "distance")?;
        // SAFETY: non-NULL, writable by the caller's contract.
        unsafe { distance.write(ucs_topo_default_distance) };
        Ok(())
    })
}

/// `"<latency>ns <bandwidth>MB/s"` (`>1PB/s` when unlimited), as UCX writes it.
fn distance_text(distance: &ucs_sys_dev_distance_t) -> String {
    const MBYTE: f64 = 1024.0 * 1024.0;
    const PBYTE: f64 = MBYTE * 1024.0 * 1024.0 * 1024.0;
    let latency = format!("{:.0}ns ", distance.latency * 1e9);
    if distance.bandwidth <= PBYTE {
        format!("{latency}{:.2}MB/s", distance.bandwidth / MBYTE)
    } else {
        format!("{latency}>1PB/s")
    }
}

/// Writes `distance` as text into `buffer` (`max` bytes); returns `buffer`.
///
/// # Safety
/// `distance` NULL or readable; `buffer` NULL or writable for `max` bytes.
#[no_mangle]
pub unsafe extern "C" fn ucs_topo_distance_str(
    distance: *const ucs_sys_dev_distance_t,
    buffer: *mut c_char,
    max: usize,
) -> *const c_char {
    return_ucx_call!(ucs_topo_distance_str: fn(*const ucs_sys_dev_distance_t, *mut c_char, usize) -> *const c_char; distance, buffer, max);
    if distance.is_null() {
        crate::api::enter();
        tracing::warn!("ucs_topo_distance_str: distance is NULL");
        // SAFETY: the caller's contract.
        return unsafe { copy_out(b"", buffer, max) };
    }
    // SAFETY: non-NULL, readable by the caller's contract.
    let text = distance_text(unsafe { &*distance });
    // SAFETY: the caller's contract.
    unsafe { copy_out(text.as_bytes(), buffer, max) }
}

/// The full PCI address of `sys_dev` (`<unknown>`, `<invalid>`) in `buffer`.
///
/// # Safety
/// `buffer` NULL or writable for `max` bytes.
#[no_mangle]
pub unsafe extern "C" fn ucs_topo_sys_device_bdf_name(
    sys_dev: ucs_sys_device_t,
    buffer: *mut c_char,
    max: usize,
) -> *const c_char {
    return_ucx_call!(ucs_topo_sys_device_bdf_name: fn(ucs_sys_device_t, *mut c_char, usize) -> *const c_char; sys_dev, buffer, max);
    let text = if sys_dev == UCS_SYS_DEVICE_ID_UNKNOWN {
        DEVICE_NAME_UNKNOWN.to_bytes().to_vec()
    } else {
        match devices().get(usize::from(sys_dev)) {
            Some(device) => bus_id_text(&device.bus_id, false).into_bytes(),
            None => DEVICE_NAME_INVALID.to_bytes().to_vec(),
        }
    };
    // SAFETY: the caller's contract.
    unsafe { copy_out(&text, buffer, max) }
}

/// Parses a PCI address, `dddd:bb:ss.f` or `bb:ss.f` (hex), into a bus id.
fn parse_bdf(name: &str) -> Option<ucs_sys_bus_id_t> {
    let (head, function) = name.rsplit_once('.')?;
    let fields: Vec<&str> = head.split(':').collect();
    let (domain, bus, slot) = match fields.as_slice() {
        [domain, bus, slot] => (u16::from_str_radix(domain, 16).ok()?, *bus, *slot),
        [bus, slot] => (0, *bus, *slot),
        _ => return None,
    };
    Some(ucs_sys_bus_id {
        domain,
        bus: u8::from_str_radix(bus, 16).ok()?,
        slot: u8::from_str_radix(slot, 16).ok()?,
        function: u8::from_str_radix(function, 16).ok()?,
    })
}

/// The device of PCI address `name`, registered on first use;
/// `UCS_ERR_INVALID_PARAM` for text that is not a PCI address.
///
/// # Safety
/// `name` NULL or NUL-terminated; `sys_dev` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ucs_topo_find_device_by_bdf_name(
    name: *const c_char,
    sys_dev: *mut ucs_sys_device_t,
) -> ucs_status_t {
    return_ucx_call!(ucs_topo_find_device_by_bdf_name: fn(*const c_char, *mut ucs_sys_device_t) -> ucs_status_t; name, sys_dev);
    const FUNCTION: &str = "ucs_topo_find_device_by_bdf_name";
    if let Err(status) = non_null(name, FUNCTION, "name") {
        return status.raw();
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    let text = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    let Some(bus_id) = parse_bdf(text.trim()) else {
        crate::api::enter();
        tracing::warn!("{FUNCTION}: '{text}' is not a PCI address");
        return UCS_ERR_INVALID_PARAM;
    };
    // SAFETY: a live local; `sys_dev` as the caller's contract.
    unsafe { ucs_topo_find_device_by_bus_id(&bus_id, sys_dev) }
}

/// The system device of the PCI function `bus_id`, registered the first
/// time and named `name` (UCX's ib md names each HCA's system device after
/// the HCA); `UCS_SYS_DEVICE_ID_UNKNOWN`, with a debug line, when the
/// table is full. Through UCX's functions when its libucs is loaded.
pub(crate) fn system_device(bus_id: &ucs_sys_bus_id_t, name: &str) -> ucs_sys_device_t {
    let mut sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    // SAFETY: a live bus id and out-pointer.
    let status = unsafe { ucs_topo_find_device_by_bus_id(bus_id, &mut sys_dev) };
    if status != UCS_OK {
        tracing::debug!("{name}: no system device for PCI {bus_id:?} ({status})");
        return UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    // SAFETY: get_name answers a NUL-terminated string that lives on.
    let current = unsafe { CStr::from_ptr(ucs_topo_sys_device_get_name(sys_dev)) };
    if current.to_bytes() == name.as_bytes() {
        return sys_dev; // named by an earlier query: nothing to copy again
    }
    let Ok(c_name) = CString::new(name) else {
        return sys_dev;
    };
    // SAFETY: a NUL-terminated name; set_name copies it.
    let status = unsafe { ucs_topo_sys_device_set_name(sys_dev, c_name.as_ptr()) };
    if status != UCS_OK {
        tracing::debug!("{name}: system device {sys_dev} keeps its name ({status})");
    }
    sys_dev
}

/// Renames device `sys_dev`.
///
/// # Safety
/// `name` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn ucs_topo_sys_device_set_name(
    sys_dev: ucs_sys_device_t,
    name: *const c_char,
) -> ucs_status_t {
    return_ucx_call!(ucs_topo_sys_device_set_name: fn(ucs_sys_device_t, *const c_char) -> ucs_status_t; sys_dev, name);
    status_entry_point!(FUNCTION = "ucs_topo_sys_device_set_name", {
        non_null(name, FUNCTION, "name")?;
        let mut devices = devices();
        let count = devices.len();
        let Some(device) = devices.get_mut(usize::from(sys_dev)) else {
            crate::api::enter();
            tracing::error!("{FUNCTION}: system device {sys_dev} is invalid (max: {count})");
            return Err(Status::InvalidParam);
        };
        // SAFETY: non-NULL and NUL-terminated by the caller's contract.
        device.name = leak_name(unsafe { CStr::from_ptr(name) }.to_bytes());
        Ok(())
    })
}

/// The name of `sys_dev` (`<unknown>`, `<invalid>`); valid for the process.
#[no_mangle]
pub extern "C" fn ucs_topo_sys_device_get_name(sys_dev: ucs_sys_device_t) -> *const c_char {
    if let Some(ucx) =
        ucx_function!(ucs_topo_sys_device_get_name: fn(ucs_sys_device_t) -> *const c_char)
    {
        // SAFETY: UCX's function, same argument as ours.
        return unsafe { ucx(sys_dev) };
    }
    if sys_dev == UCS_SYS_DEVICE_ID_UNKNOWN {
        return DEVICE_NAME_UNKNOWN.as_ptr();
    }
    devices()
        .get(usize::from(sys_dev))
        .map_or(DEVICE_NAME_INVALID.as_ptr(), |device| device.name.as_ptr())
}

/// How many system devices are known.
#[no_mangle]
pub extern "C" fn ucs_topo_num_devices() -> c_uint {
    return_ucx_call!(ucs_topo_num_devices: fn() -> c_uint);
    devices().len() as c_uint
}

/// Prints one line per device (index, PCI address, name) to `stream`.
///
/// # Safety
/// `stream` NULL or an open `FILE *`.
#[no_mangle]
pub unsafe extern "C" fn ucs_topo_print_info(stream: *mut libc::FILE) {
    return_ucx_call!(ucs_topo_print_info: fn(*mut libc::FILE); stream);
    if stream.is_null() {
        crate::api::enter();
        tracing::warn!("ucs_topo_print_info: stream is NULL");
        return;
    }
    let lines: String = devices()
        .iter()
        .enumerate()
        .map(|(index, device)| {
            format!(
                " {index}  {:>16}  {}\n",
                bus_id_text(&device.bus_id, false),
                device.name.to_string_lossy()
            )
        })
        .collect();
    // SAFETY: an open stream by the caller's contract; the bytes live for
    // the call.
    unsafe { libc::fwrite(lines.as_ptr() as *const c_void, 1, lines.len(), stream) };
}

/// Called by UCX's library constructor; nothing to set up here.
#[no_mangle]
pub extern "C" fn ucs_topo_init() {
    return_ucx_call!(ucs_topo_init: fn());
}

/// Called by UCX's library destructor; nothing to tear down here (device
/// names stay valid until the process ends).
#[no_mangle]
pub extern "C" fn ucs_topo_cleanup() {
    return_ucx_call!(ucs_topo_cleanup: fn());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses_parse_in_both_forms() {
        let full = parse_bdf("0001:3b:00.1").expect("full form");
        assert_eq!(
            (full.domain, full.bus, full.slot, full.function),
            (1, 0x3b, 0, 1)
        );
        let short = parse_bdf("3b:00.1").expect("short form");
        assert_eq!(short.domain, 0);
        assert_eq!(bus_id_text(&short, true), "3b:00.1");
        assert_eq!(bus_id_text(&short, false), "0000:3b:00.1");
        assert!(parse_bdf("mlx5_0").is_none());
    }

    #[test]
    fn distances_print_like_ucx() {
        assert_eq!(distance_text(&ucs_topo_default_distance), "0ns >1PB/s");
        let near = ucs_sys_dev_distance {
            latency: 300e-9,
            bandwidth: 3500.0 * 1024.0 * 1024.0,
        };
        assert_eq!(distance_text(&near), "300ns 3500.00MB/s");
    }
}
