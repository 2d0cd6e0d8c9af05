//! `ucs/sys/topo/base/topo.h`: system device ids (the PCI device a resource
//! sits on).

/// Index of a system device known to the topology module.
pub type ucs_sys_device_t = u8;
/// No system device, or unknown.
pub const UCS_SYS_DEVICE_ID_UNKNOWN: ucs_sys_device_t = 255;
pub const UCS_SYS_DEVICE_ID_MAX: ucs_sys_device_t = 255;

/// A PCI address (`ucs_sys_bus_id_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ucs_sys_bus_id {
    pub domain: u16,
    pub bus: u8,
    pub slot: u8,
    pub function: u8,
}
pub type ucs_sys_bus_id_t = ucs_sys_bus_id;

/// Latency (seconds) and bandwidth (bytes/second) between two devices.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ucs_sys_dev_distance {
    pub latency: f64,
    pub bandwidth: f64,
}
pub type ucs_sys_dev_distance_t = ucs_sys_dev_distance;

/// A doubly linked list head (`ucs_list_link_t`).
#[repr(C)]
pub struct ucs_list_link {
    pub prev: *mut ucs_list_link,
    pub next: *mut ucs_list_link,
}
pub type ucs_list_link_t = ucs_list_link;
