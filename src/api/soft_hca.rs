//! Fault injection on the soft HCA, per device and per process
//! (`include/uct/soft/soft_hca.h`): pull a device's cable, or make it lose a
//! fraction of its packets. Settings reach every QP of the device at once
//! and are kept for a device that is not open yet. For a device served by
//! rdma-core they are forwarded to the loaded libibverbs when it is the
//! test stand-in (`hca::verbs::faults`), else `UCS_ERR_UNSUPPORTED`.

use std::ffi::{c_char, c_int, c_uint};

use crate::abi::ucs_status::{status_of, ucs_status_t, Status};
use crate::api::cstr::c_str_arg;
use crate::hca::soft::registry;
use crate::hca::verbs::faults::{forward, FaultCall};

/// NULL or non-UTF-8 is `InvalidParam` (logged by `c_str_arg`).
fn device_arg(device: *const c_char, function: &str) -> Result<String, Status> {
    // SAFETY: the caller passes NULL or a NUL-terminated string that lives
    // for the duration of the call (the C contract of these functions).
    let name = unsafe { c_str_arg(device, function, "device") }?;
    Ok(name.to_string())
}

/// The steps every fault call shares once its arguments are good: forward
/// `call` to the loaded libibverbs when that serves device `name`, else
/// `apply` it to the soft HCA's registry and log `what_changed`; a name the
/// registry does not know is `NoDevice` with a log line.
fn apply_fault(
    function: &str,
    name: &str,
    call: FaultCall,
    apply: impl FnOnce() -> Result<(), Status>,
    what_changed: impl FnOnce() -> String,
) -> Result<(), Status> {
    if let Some(forwarded) = forward(function, name, call) {
        return forwarded;
    }
    apply()
        .map_err(|_| {
            tracing::warn!("{function}: no soft HCA device named '{name}'");
            Status::NoDevice
        })
        .inspect(|()| tracing::info!("soft hca {name}: {}", what_changed()))
}

/// Brings the link of soft HCA `device` (e.g. `"mlx5_0"`) down (`up == 0`:
/// nothing leaves or enters its port, as with a pulled cable) or up again.
///
/// Returns `UCS_ERR_INVALID_PARAM` for a NULL device name and
/// `UCS_ERR_NO_DEVICE` for an unknown one.
///
/// # Safety
/// `device` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn uct_soft_hca_link_set(device: *const c_char, up: c_int) -> ucs_status_t {
    const FUNCTION: &str = "uct_soft_hca_link_set";
    crate::api::enter();
    let result = device_arg(device, FUNCTION).and_then(|name| {
        apply_fault(
            FUNCTION,
            &name,
            FaultCall::LinkSet { up },
            || registry::set_faults(&name, |faults| faults.link_up = up != 0),
            || format!("link {}", if up != 0 { "up" } else { "down" }),
        )
    });
    status_of(&result)
}

/// Makes soft HCA `device` drop each packet it sends or receives with
/// probability `drop_ratio` (0 = no loss, 1 = everything). Decisions are
/// deterministic for a given `UCX_SOFT_HCA_SEED`.
///
/// Returns `UCS_ERR_INVALID_PARAM` for a NULL device name or a ratio
/// outside [0, 1] (or NaN), `UCS_ERR_NO_DEVICE` for an unknown device.
///
/// # Safety
/// `device` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn uct_soft_hca_loss_set(
    device: *const c_char,
    drop_ratio: f64,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_soft_hca_loss_set";
    crate::api::enter();
    let result = device_arg(device, FUNCTION).and_then(|name| {
        if !(0.0..=1.0).contains(&drop_ratio) {
            tracing::warn!("{FUNCTION}: drop ratio {drop_ratio} is outside [0, 1]");
            return Err(Status::InvalidParam);
        }
        apply_fault(
            FUNCTION,
            &name,
            FaultCall::LossSet { drop_ratio },
            || registry::set_faults(&name, |faults| faults.loss = drop_ratio),
            || format!("drop ratio {drop_ratio}"),
        )
    });
    status_of(&result)
}

/// Makes soft HCA `device` drop the next `count` packets it sends (on top
/// of any drop ratio), e.g. to lose exactly one request or one
/// acknowledgement; a device not open yet drops them once it opens. A new
/// call replaces the count still pending; 0 cancels.
///
/// Returns `UCS_ERR_INVALID_PARAM` for a NULL device name and
/// `UCS_ERR_NO_DEVICE` for an unknown one.
///
/// # Safety
/// `device` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn uct_soft_hca_drop_next(
    device: *const c_char,
    count: c_uint,
) -> ucs_status_t {
    const FUNCTION: &str = "uct_soft_hca_drop_next";
    crate::api::enter();
    let result = device_arg(device, FUNCTION).and_then(|name| {
        apply_fault(
            FUNCTION,
            &name,
            FaultCall::DropNext { count },
            || registry::drop_next(&name, u64::from(count)),
            || format!("dropping the next {count} packets"),
        )
    });
    status_of(&result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::ucs_status::{UCS_ERR_INVALID_PARAM, UCS_ERR_NO_DEVICE, UCS_OK};
    use crate::hca::soft::SoftDevice;

    #[test]
    fn bad_arguments_are_refused() {
        // SAFETY: NULL and literal C strings.
        unsafe {
            assert_eq!(
                uct_soft_hca_link_set(std::ptr::null(), 0),
                UCS_ERR_INVALID_PARAM
            );
            assert_eq!(
                uct_soft_hca_loss_set(std::ptr::null(), 0.1),
                UCS_ERR_INVALID_PARAM
            );
            assert_eq!(
                uct_soft_hca_link_set(c"no_such_dev".as_ptr(), 0),
                UCS_ERR_NO_DEVICE
            );
            assert_eq!(
                uct_soft_hca_loss_set(c"no_such_dev".as_ptr(), 0.5),
                UCS_ERR_NO_DEVICE
            );
            assert_eq!(
                uct_soft_hca_loss_set(c"no_such_dev".as_ptr(), 1.5),
                UCS_ERR_INVALID_PARAM
            );
            assert_eq!(
                uct_soft_hca_loss_set(c"no_such_dev".as_ptr(), f64::NAN),
                UCS_ERR_INVALID_PARAM
            );
        }
    }

    #[test]
    fn faults_reach_an_open_device() {
        let device = SoftDevice::open_at("apitest0", std::net::Ipv4Addr::LOCALHOST).expect("open");
        // SAFETY: literal C strings.
        unsafe {
            assert_eq!(uct_soft_hca_link_set(c"apitest0".as_ptr(), 0), UCS_OK);
            assert_eq!(
                device.port_attr(1).map(|p| p.state),
                Ok(crate::hca::PortState::Down)
            );
            assert_eq!(uct_soft_hca_link_set(c"apitest0".as_ptr(), 1), UCS_OK);
            assert_eq!(
                device.port_attr(1).map(|p| p.state),
                Ok(crate::hca::PortState::Active)
            );
            assert_eq!(uct_soft_hca_loss_set(c"apitest0".as_ptr(), 0.25), UCS_OK);
            assert_eq!(
                uct_soft_hca_loss_set(c"apitest0".as_ptr(), -0.1),
                UCS_ERR_INVALID_PARAM
            );
        }
        assert!((device.loss() - 0.25).abs() < 1e-9);
    }
}
