//! Fault injection on the soft HCA, per device and per process
//! (`include/uct/soft/soft_hca.h`): pull a device's cable, or make it lose a
//! fraction of its packets. Settings reach every QP of the device at once
//! and are kept for a device that is not open yet. For a device served by
//! rdma-core they are forwarded to the loaded libibverbs when it is the
//! test stand-in (`hca::verbs::faults`), else `UCS_ERR_UNSUPPORTED`.

use std::ffi::{c_char, c_int, c_uint};

use crate::abi::ucs_status::{status_of, ucs_status_t, Status};
use crate::api::cstr::c_str_arg;
use crate::hca::devices::soft_hca_settings;
use crate::hca::soft::{drop_next, set_faults};
use crate::hca::verbs::faults::{forward, FaultCall};

/// What every fault call does: read the device name (NULL or non-UTF-8 is
/// `InvalidParam`, logged by `c_str_arg`), check the call's own argument,
/// forward `call` to the loaded libibverbs when that serves the device, else
/// `apply` it to the soft HCA's registry and log `what_changed`; a name the
/// registry does not know is `NoDevice` with a log line.
///
/// # Safety
/// `device` NULL or a NUL-terminated string that lives for the call.
unsafe fn fault_call(
    function: &str,
    device: *const c_char,
    call: FaultCall,
    apply: impl FnOnce(&str) -> Result<(), Status>,
    what_changed: impl FnOnce() -> String,
) -> ucs_status_t {
    crate::api::enter();
    // SAFETY: by the contract.
    let result = unsafe { c_str_arg(device, function, "device") }.and_then(|name| {
        if let FaultCall::LossSet { drop_ratio } = call {
            if !(0.0..=1.0).contains(&drop_ratio) {
                tracing::warn!("{function}: drop ratio {drop_ratio} is outside [0, 1]");
                return Err(Status::InvalidParam);
            }
        }
        if let Some(forwarded) = forward(function, name, call) {
            return forwarded;
        }
        apply(name)
            .map_err(|_| {
                tracing::warn!("{function}: no soft HCA device named '{name}'");
                Status::NoDevice
            })
            .inspect(|()| tracing::info!("soft hca {name}: {}", what_changed()))
    });
    status_of(result)
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
    // SAFETY: NULL or NUL-terminated by the caller's contract.
    unsafe {
        fault_call(
            "uct_soft_hca_link_set",
            device,
            FaultCall::LinkSet { up },
            |name| {
                set_faults(name, &soft_hca_settings(), |faults| {
                    faults.link_up = up != 0
                })
            },
            || format!("link {}", if up != 0 { "up" } else { "down" }),
        )
    }
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
    // SAFETY: NULL or NUL-terminated by the caller's contract.
    unsafe {
        fault_call(
            "uct_soft_hca_loss_set",
            device,
            FaultCall::LossSet { drop_ratio },
            |name| {
                set_faults(name, &soft_hca_settings(), |faults| {
                    faults.loss = drop_ratio
                })
            },
            || format!("drop ratio {drop_ratio}"),
        )
    }
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
    // SAFETY: NULL or NUL-terminated by the caller's contract.
    unsafe {
        fault_call(
            "uct_soft_hca_drop_next",
            device,
            FaultCall::DropNext { count },
            |name| drop_next(name, u64::from(count), &soft_hca_settings()),
            || format!("dropping the next {count} packets"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::ucs_status::{UCS_ERR_INVALID_PARAM, UCS_ERR_NO_DEVICE, UCS_OK};
    use crate::hca::devices::open_soft_at;

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
        let device = open_soft_at("apitest0", std::net::Ipv4Addr::LOCALHOST).expect("open");
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
