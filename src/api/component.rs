//! `uct_query_components`, `uct_release_component_list`, `uct_component_query`.

use std::ffi::{c_char, c_uint};

use crate::abi::*;
use crate::api::c_array::{hand_out_c_array, HandedOutArray};
use crate::api::checks::{finish, non_null, status_entry_point};
use crate::api::cstr::fill_c_array;
use crate::core::c_boundary::{
    c_entry, masked_member, masked_write, CSliceMut, FromC, MaskedOut, Out,
};
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
        const FUNCTION: &str = "uct_query_components";
        crate::api::enter();
        finish(FUNCTION,
            hand_out_c_array(
                &COMPONENTS,
                |slot, component| *slot = component.handle(),
                components_p,
                num_components_p,
                (FUNCTION, "components_p", "num_components_p"),
                "component handles",
            )
        )
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

c_entry! {
    no_log_setup
    /// Fills the fields `component_attr->field_mask` asks for. For
    /// `MD_RESOURCES` the caller provides `md_resources` with room for
    /// `md_resource_count` entries (learned from a previous query).
    fn uct_component_query(
        component: uct_component_h,
        component_attr: *mut uct_component_attr_t,
    ) -> ucs_status_t;
    take attr: MaskedOut<uct_component_attr_t> = (component_attr);
    {
        status_entry_point!(FUNCTION = "uct_component_query", {
            let component = component_arg(component, FUNCTION)?;
            // Members are read and written one by one: the caller only
            // initialised field_mask (and md_resources when asked to fill it).
            let field_mask = attr.checked_mask(COMPONENT_ATTR_FIELDS, FUNCTION, "component_attr")?;
            let devices = component.md_devices();
            let md_resources = masked_member!(attr, field_mask, UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES
                => md_resources)
            .unwrap_or(std::ptr::null_mut());
            // A component without memory domains (the connection manager)
            // is asked with room for none: UCX's callers then pass NULL.
            if field_mask & UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES != 0 && !devices.is_empty() {
                non_null(md_resources, FUNCTION, "md_resources")?;
            }
            let mut name = [0 as c_char; UCT_COMPONENT_NAME_MAX];
            fill_c_array(&mut name, component.name().as_bytes());
            masked_write!(attr, field_mask, UCT_COMPONENT_ATTR_FIELD_NAME => name = name);
            masked_write!(attr, field_mask, UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
                => md_resource_count = devices.len() as c_uint);
            // SAFETY: the caller sized md_resources for every md (the
            // contract; the device list never changes within a process).
            let slots: CSliceMut<uct_md_resource_desc_t> =
                unsafe { CSliceMut::from_c((md_resources, devices.len())) };
            if !slots.is_null() {
                for (slot, device) in slots.get(FUNCTION)?.iter_mut().zip(devices.iter()) {
                    let mut md_name = [0 as c_char; UCT_MD_NAME_MAX];
                    fill_c_array(&mut md_name, device.name.as_bytes());
                    slot.write(uct_md_resource_desc_t { md_name });
                }
            }
            masked_write!(attr, field_mask, UCT_COMPONENT_ATTR_FIELD_FLAGS => flags = component.flags());
            Ok(())
        })
    }
}
