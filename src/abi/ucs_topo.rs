//! `ucs/sys/topo/base/topo.h`: system device ids (the PCI device a resource
//! sits on).

/// Index of a system device known to the topology module.
pub type ucs_sys_device_t = u8;
/// No system device, or unknown.
pub const UCS_SYS_DEVICE_ID_UNKNOWN: ucs_sys_device_t = 255;
pub const UCS_SYS_DEVICE_ID_MAX: ucs_sys_device_t = 255;
