//! The soft HCA fault calls (`uct_soft_hca_link_set`, `_loss_set`,
//! `_drop_next`) for a device served by rdma-core. A real NIC has no such
//! knobs; the test stand-in library, which runs soft HCA devices behind the
//! verbs API, exports functions of the same names acting on its devices. So
//! a fault call naming a verbs device is forwarded to the loaded libibverbs
//! when it has the symbol, and is `Unsupported` ("not a software HCA")
//! otherwise.
//!
//! The stand-in contains its own copy of this library; when that copy runs
//! a forwarded call it must not forward again. Both copies are told apart by
//! the shared object their code lives in (`dladdr` of a private function,
//! which the dynamic linker never interposes).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

use super::ffi::Verbs;
use crate::abi::ucs_status::{result_of, ucs_status_t, Status};
use crate::core::ucx_libucs::lies_in_this_object;
use crate::hca::devices::{find_device, Backend};

/// One fault call and its argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultCall {
    LinkSet { up: c_int },
    LossSet { drop_ratio: f64 },
    DropNext { count: c_uint },
}

impl FaultCall {
    fn symbol(&self) -> &'static CStr {
        match self {
            FaultCall::LinkSet { .. } => c"uct_soft_hca_link_set",
            FaultCall::LossSet { .. } => c"uct_soft_hca_loss_set",
            FaultCall::DropNext { .. } => c"uct_soft_hca_drop_next",
        }
    }
}

/// Runs `call` on the device `name` if it is served by rdma-core:
/// `None` means it is not (the caller applies the fault to its own soft
/// HCA). `function` names the entry point in the log line.
pub fn forward(function: &str, name: &str, call: FaultCall) -> Option<Result<(), Status>> {
    let target = Verbs::get()
        .ok()
        .and_then(|verbs| verbs.optional_symbol(call.symbol()));
    if let Some(target) = target {
        if lies_in_this_object(target) {
            // This copy lives in the library that would be called: it is
            // the stand-in's own, acting on its own soft devices.
            return None;
        }
    }
    if !matches!(find_device(name)?.backend, Backend::Verbs { .. }) {
        return None;
    }
    let Some(target) = target else {
        tracing::warn!("{function}: {name} is not a software HCA (an rdma-core device)");
        return Some(Err(Status::Unsupported));
    };
    let Ok(c_name) = CString::new(name) else {
        return Some(Err(Status::InvalidParam));
    };
    // SAFETY (all three): `target` is the stand-in's export of that name,
    // whose C prototype is the one in include/uct/soft/soft_hca.h, mirrored
    // by the function pointer type; `c_name` outlives the call.
    let status: ucs_status_t = unsafe {
        match call {
            FaultCall::LinkSet { up } => {
                let f: unsafe extern "C" fn(*const c_char, c_int) -> ucs_status_t =
                    std::mem::transmute::<*mut c_void, _>(target);
                f(c_name.as_ptr(), up)
            }
            FaultCall::LossSet { drop_ratio } => {
                let f: unsafe extern "C" fn(*const c_char, f64) -> ucs_status_t =
                    std::mem::transmute::<*mut c_void, _>(target);
                f(c_name.as_ptr(), drop_ratio)
            }
            FaultCall::DropNext { count } => {
                let f: unsafe extern "C" fn(*const c_char, c_uint) -> ucs_status_t =
                    std::mem::transmute::<*mut c_void, _>(target);
                f(c_name.as_ptr(), count)
            }
        }
    };
    tracing::debug!("{function}: {name} is an rdma-core device, forwarded: status {status}");
    Some(result_of(status))
}
