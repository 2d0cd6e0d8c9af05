//! The component registry. There is one component, `ib`; its memory domains
//! are the HCA devices (see [`crate::hca::devices`]).
//!
//! Component handles are addresses of the statics below. Validating a handle
//! is a pointer comparison against this list, so a garbage handle from C is
//! rejected without ever being dereferenced.

use crate::abi::*;
use crate::hca::devices::{hca_devices, HcaDevice};

/// A UCT component: a family of memory domains and their transports.
pub struct Component {
    name: &'static str,
    /// `UCT_COMPONENT_FLAG_*` bits.
    flags: u64,
    /// Whether its memory domains are the HCA devices (else it has none).
    has_mds: bool,
}

/// The InfiniBand component (UCX's name for the mlx5 family too): no
/// connection manager and no rkey-pointer access.
pub static IB_COMPONENT: Component = Component {
    name: "ib",
    flags: 0,
    has_mds: true,
};

/// The connection manager component (`crate::cm`): no memory domain. Named
/// `rdmacm`, the first name of UCP's default `UCX_SOCKADDR_TLS_PRIORITY`
/// (`rdmacm,tcp,sockcm`), so UCP uses it without configuration.
pub static CM_COMPONENT: Component = Component {
    name: "rdmacm",
    flags: UCT_COMPONENT_FLAG_CM,
    has_mds: false,
};

/// Every component, in the order `uct_query_components` lists them.
pub static COMPONENTS: [&Component; 2] = [&IB_COMPONENT, &CM_COMPONENT];

impl Component {
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// `UCT_COMPONENT_FLAG_*` bits.
    pub fn flags(&self) -> u64 {
        self.flags
    }

    /// Whether this is the connection manager component.
    pub fn is_cm(&self) -> bool {
        self.flags & UCT_COMPONENT_FLAG_CM != 0
    }

    /// The devices this component opens as memory domains.
    pub fn md_devices(&self) -> &'static [HcaDevice] {
        if !self.has_mds {
            return &[];
        }
        crate::ib::config::hand_down_device_settings();
        hca_devices()
    }

    /// The device named `md_name`, if this component has it.
    pub fn find_md_device(&self, md_name: &str) -> Option<&'static HcaDevice> {
        self.md_devices()
            .iter()
            .find(|device| device.name == md_name)
    }

    /// The handle C code holds for this component.
    pub fn handle(&'static self) -> uct_component_h {
        self as *const Component as uct_component_h
    }

    /// The component a C handle names, or `None` for anything that is not one
    /// of ours.
    pub fn from_handle(handle: uct_component_h) -> Option<&'static Component> {
        COMPONENTS
            .iter()
            .copied()
            .find(|component| std::ptr::eq(component.handle(), handle))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_foreign_ones_are_rejected() {
        let handle = IB_COMPONENT.handle();
        let found = Component::from_handle(handle).map(Component::name);
        assert_eq!(found, Some("ib"));
        assert!(Component::from_handle(std::ptr::null_mut()).is_none());
        let bogus = 0x1000 as uct_component_h;
        assert!(Component::from_handle(bogus).is_none());
    }
}
