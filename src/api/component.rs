//! `uct_query_components`, `uct_release_component_list`, `uct_component_query`.

use std::ffi::{c_char, c_uint};
use std::ptr::{addr_of, addr_of_mut};

use crate::abi::*;
use crate::api::c_array::{hand_out_c_array, HandedOutArray};
use crate::api::checks::{known_fields, non_null, status_entry_point};
use crate::api::cstr::fill_c_array;
use crate::core::c_boundary::{c_entry, Out};
use crate::ib::component::{Component, COMPONENTS};

const COMPONENT_ATTR_FIELDS: u64 = UCT_COMPONENT_ATTR_FIELD_NAME
    | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
    | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES
    | UCT_COMPONENT_ATTR_FIELD_FLAGS;

/// The component a C handle names, or `InvalidParam` with a log line.
pub(crate) fn component_arg(
    component: uct_component_h,
    function: &str,
) -> Result<&'static Component, Status> {
    non_null(component, function, "component")?;
    Component::from_handle(component).ok_or_else(|| {
        tracing::warn!("{function}: {component:p} is not a UCT component");
        Status::InvalidParam
    })
}

c_entry! {
    no_log_setup
    /// Lists the components; release the array with
    /// `uct_release_component_list`.
    fn uct_query_components(
        components_p: *mut *mut uct_component_h,
        num_components_p: *mut c_uint,
    ) -> ucs_status_t;
    take components_p: Out<*mut uct_component_h> = (components_p),
        num_components_p: Out<c_uint> = (num_components_p);
    {
        status_entry_point!(FUNCTION = "uct_query_components", {
            hand_out_c_array(
                &COMPONENTS,
                |slot, component| *slot = component.handle(),
                components_p,
                num_components_p,
                (FUNCTION, "components_p", "num_components_p"),
                "component handles",
            )
        })
    }
}

c_entry! {
    no_log_setup
    /// Frees an array from `uct_query_components`; NULL is ignored.
    fn uct_release_component_list(components: *mut uct_component_h);
    take components: HandedOutArray<uct_component_h> = (components);
    {
        components.free();
    }
}

/// Fills the fields `component_attr->field_mask` asks for. For
/// `MD_RESOURCES` the caller provides `md_resources` with room for
/// `md_resource_count` entries (learned from a previous query).
///
/// # Safety
/// `component_attr` must be NULL or a valid `uct_component_attr_t`; with
/// `MD_RESOURCES`, `md_resources` must have room for every md.
#[no_mangle]
pub unsafe extern "C" fn uct_component_query(
    component: uct_component_h,
    component_attr: *mut uct_component_attr_t,
) -> ucs_status_t {
    status_entry_point!(FUNCTION = "uct_component_query", {
        let component = component_arg(component, FUNCTION)?;
        non_null(component_attr, FUNCTION, "component_attr")?;
        // Fields are read and written through raw field pointers: the caller
        // only initialised field_mask (and md_resources when asked to fill it).
        // SAFETY: component_attr is non-NULL and valid by the caller's contract.
        let field_mask = unsafe { addr_of!((*component_attr).field_mask).read() };
        known_fields(
            field_mask,
            COMPONENT_ATTR_FIELDS,
            FUNCTION,
            "uct_component_attr_t",
        )?;
        let wants = |bit: u64| field_mask & bit != 0;
        let devices = component.md_devices();
        let mut md_resources = std::ptr::null_mut();
        if wants(UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES) {
            // SAFETY: as above; the caller set md_resources with this bit.
            md_resources = unsafe { addr_of!((*component_attr).md_resources).read() };
            // A component without memory domains (the connection manager)
            // is asked with room for none: UCX's callers then pass NULL.
            if !devices.is_empty() {
                non_null(md_resources, FUNCTION, "md_resources")?;
            }
        }
        if wants(UCT_COMPONENT_ATTR_FIELD_NAME) {
            let mut name = [0 as c_char; UCT_COMPONENT_NAME_MAX];
            fill_c_array(&mut name, component.name().as_bytes());
            // SAFETY: writable by the caller's contract.
            unsafe { addr_of_mut!((*component_attr).name).write(name) };
        }
        if wants(UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT) {
            let count = devices.len() as c_uint;
            // SAFETY: writable by the caller's contract.
            unsafe { addr_of_mut!((*component_attr).md_resource_count).write(count) };
        }
        for (index, device) in devices
            .iter()
            .enumerate()
            .filter(|_| !md_resources.is_null())
        {
            let mut md_name = [0 as c_char; UCT_MD_NAME_MAX];
            fill_c_array(&mut md_name, device.name.as_bytes());
            // SAFETY: the caller sized md_resources for every md (the device
            // list never changes within a process).
            unsafe {
                md_resources
                    .add(index)
                    .write(uct_md_resource_desc_t { md_name })
            };
        }
        if wants(UCT_COMPONENT_ATTR_FIELD_FLAGS) {
            // SAFETY: writable by the caller's contract.
            unsafe { addr_of_mut!((*component_attr).flags).write(component.flags()) };
        }
        Ok(())
    })
}
