//! `uct_perf_attr_t` as each UCX version lays it out, for
//! `uct_iface_estimate_perf`: the struct grew twice, and the later growth
//! moved field bits, so the same request means different fields to callers
//! of different versions.
//!
//! | UCX | size | after `bandwidth` | bits of latency, max inflight eps, flags |
//! |---|---|---|---|
//! | up to 1.16 | 88 | latency, max_inflight_eps | 9, 10, – |
//! | 1.17, 1.18 | 96 | latency, max_inflight_eps, flags | 9, 10, 11 |
//! | 1.19 on (our headers) | 112 | path_bandwidth (bit 9), latency, max_inflight_eps, flags | 10, 11, 12 |
//!
//! The fields up to `bandwidth` and their bits 0..8 are the same in all.

use std::marker::PhantomData;
use std::mem::offset_of;

use crate::abi::*;
use crate::api::caller_version::UcxVersion;
use crate::api::checks::non_null;
use crate::core::c_boundary::FromC;
use crate::core::iface::PerfEstimate;

/// UCX 1.13..1.16's `uct_perf_attr_t`.
#[repr(C)]
#[allow(dead_code)] // only its layout is used
struct PerfAttrV113 {
    field_mask: u64,
    operation: uct_ep_operation_t,
    local_memory_type: ucs_memory_type_t,
    remote_memory_type: ucs_memory_type_t,
    local_sys_device: ucs_sys_device_t,
    remote_sys_device: ucs_sys_device_t,
    send_pre_overhead: f64,
    send_post_overhead: f64,
    recv_overhead: f64,
    bandwidth: uct_ppn_bandwidth_t,
    latency: ucs_linear_func_t,
    max_inflight_eps: usize,
}

/// UCX 1.17 and 1.18's `uct_perf_attr_t`.
#[repr(C)]
#[allow(dead_code)] // only its layout is used
struct PerfAttrV117 {
    v113: PerfAttrV113,
    flags: u64,
}

/// Where an output field is and which `field_mask` bit asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Field {
    bit: u64,
    offset: usize,
}

/// One version's `uct_perf_attr_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PerfAttrLayout {
    size: usize,
    path_bandwidth: Option<Field>,
    latency: Field,
    max_inflight_eps: Field,
    flags: Option<Field>,
}

const V113: PerfAttrLayout = PerfAttrLayout {
    size: size_of::<PerfAttrV113>(),
    path_bandwidth: None,
    latency: Field {
        bit: 1 << 9,
        offset: offset_of!(PerfAttrV113, latency),
    },
    max_inflight_eps: Field {
        bit: 1 << 10,
        offset: offset_of!(PerfAttrV113, max_inflight_eps),
    },
    flags: None,
};

const V117: PerfAttrLayout = PerfAttrLayout {
    size: size_of::<PerfAttrV117>(),
    flags: Some(Field {
        bit: 1 << 11,
        offset: offset_of!(PerfAttrV117, flags),
    }),
    ..V113
};

const HEADERS: PerfAttrLayout = PerfAttrLayout {
    size: size_of::<uct_perf_attr_t>(),
    path_bandwidth: Some(Field {
        bit: UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH,
        offset: offset_of!(uct_perf_attr_t, path_bandwidth),
    }),
    latency: Field {
        bit: UCT_PERF_ATTR_FIELD_LATENCY,
        offset: offset_of!(uct_perf_attr_t, latency),
    },
    max_inflight_eps: Field {
        bit: UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS,
        offset: offset_of!(uct_perf_attr_t, max_inflight_eps),
    },
    flags: Some(Field {
        bit: UCT_PERF_ATTR_FIELD_FLAGS,
        offset: offset_of!(uct_perf_attr_t, flags),
    }),
};

/// Input and output fields every version has at the same place and bit.
const COMMON_FIELDS: u64 = UCT_PERF_ATTR_FIELD_OPERATION
    | UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE
    | UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE
    | UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE
    | UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE
    | UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD
    | UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD
    | UCT_PERF_ATTR_FIELD_RECV_OVERHEAD
    | UCT_PERF_ATTR_FIELD_BANDWIDTH;

impl PerfAttrLayout {
    /// The layout a caller of UCX `version` uses.
    pub(crate) fn of(version: UcxVersion) -> PerfAttrLayout {
        if version >= UcxVersion::PERF_ATTR_PATH_BANDWIDTH {
            HEADERS
        } else if version >= UcxVersion::PERF_ATTR_FLAGS {
            V117
        } else {
            V113
        }
    }

    /// Bytes of the struct in this version.
    #[cfg(test)]
    fn size(&self) -> usize {
        self.size
    }

    fn known_fields(&self) -> u64 {
        [
            self.path_bandwidth,
            Some(self.latency),
            Some(self.max_inflight_eps),
            self.flags,
        ]
        .iter()
        .flatten()
        .fold(COMMON_FIELDS, |mask, field| mask | field.bit)
    }

    /// The operation the caller asks about: `None` without the `OPERATION`
    /// bit or with `UCT_EP_OP_LAST` (as UCX: a general estimate). A value past
    /// `UCT_EP_OP_LAST` is refused. Unknown field bits are ignored with a
    /// debug line, as UCX ignores them.
    pub(crate) fn operation(
        &self,
        attr: &PerfAttrArg,
        function: &str,
    ) -> Result<Option<uct_ep_operation_t>, Status> {
        let (field_mask, operation) = attr.inputs();
        let unknown = field_mask & !self.known_fields();
        if unknown != 0 {
            tracing::debug!(
                "{function}: uct_perf_attr_t.field_mask bits 0x{unknown:x} are unknown, ignored"
            );
        }
        if field_mask & UCT_PERF_ATTR_FIELD_OPERATION == 0 {
            return Ok(None);
        }
        match operation {
            UCT_EP_OP_LAST => Ok(None),
            op if op < UCT_EP_OP_LAST => Ok(Some(op)),
            op => {
                tracing::warn!("{function}: perf_attr->operation {op} is not an operation");
                Err(Status::InvalidParam)
            }
        }
    }

    /// Writes the fields the caller's `field_mask` asks for.
    pub(crate) fn write(&self, attr: &PerfAttrArg, estimate: &PerfEstimate) {
        let (field_mask, _) = attr.inputs();
        let common = |bit: u64, offset: usize| Some(Field { bit, offset });
        let doubles = [
            (
                common(
                    UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD,
                    offset_of!(uct_perf_attr_t, send_pre_overhead),
                ),
                estimate.send_pre_overhead,
            ),
            (
                common(
                    UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD,
                    offset_of!(uct_perf_attr_t, send_post_overhead),
                ),
                estimate.send_post_overhead,
            ),
            (
                common(
                    UCT_PERF_ATTR_FIELD_RECV_OVERHEAD,
                    offset_of!(uct_perf_attr_t, recv_overhead),
                ),
                estimate.recv_overhead,
            ),
        ];
        let bandwidths = [
            (
                common(
                    UCT_PERF_ATTR_FIELD_BANDWIDTH,
                    offset_of!(uct_perf_attr_t, bandwidth),
                ),
                estimate.bandwidth,
            ),
            (self.path_bandwidth, estimate.path_bandwidth),
        ];
        let asked = |field: Option<Field>| field.filter(|f| field_mask & f.bit != 0);
        for (field, value) in doubles {
            if let Some(f) = asked(field) {
                attr.put(self, f, value);
            }
        }
        for (field, value) in bandwidths {
            if let Some(f) = asked(field) {
                attr.put(self, f, value);
            }
        }
        if let Some(f) = asked(Some(self.latency)) {
            attr.put(self, f, estimate.latency);
        }
        if let Some(f) = asked(Some(self.max_inflight_eps)) {
            attr.put(self, f, estimate.max_inflight_eps);
        }
        if let Some(f) = asked(self.flags) {
            // No UCT_PERF_ATTR_FLAGS_* applies to rc (TX_RX_SHARED is a
            // shared-memory property).
            attr.put(self, f, 0u64);
        }
    }
}

/// The `perf_attr` argument of `uct_iface_estimate_perf`: NULL, or valid
/// for reads and writes of the caller's version of `uct_perf_attr_t`
/// ([`PerfAttrLayout::of`] its version), with `field_mask` and `operation`
/// initialised.
pub(crate) struct PerfAttrArg<'a> {
    attr: *mut u8,
    _life: PhantomData<&'a mut u8>,
}

impl FromC<*mut uct_perf_attr_t> for PerfAttrArg<'_> {
    /// Relies on: as the type says.
    unsafe fn from_c(attr: *mut uct_perf_attr_t) -> Self {
        PerfAttrArg {
            attr: attr.cast(),
            _life: PhantomData,
        }
    }
}

impl PerfAttrArg<'_> {
    /// `InvalidParam` with a log line for NULL.
    pub(crate) fn check(&self, function: &str) -> Result<(), Status> {
        non_null(self.attr, function, "perf_attr")
    }

    /// `field_mask` and `operation` (at the same offsets in every layout).
    fn inputs(&self) -> (u64, uct_ep_operation_t) {
        if self.attr.is_null() {
            return (0, UCT_EP_OP_LAST);
        }
        // SAFETY: non-NULL, both fields readable and initialised (FromC),
        // any alignment.
        unsafe {
            (
                self.attr
                    .add(offset_of!(uct_perf_attr_t, field_mask))
                    .cast::<u64>()
                    .read_unaligned(),
                self.attr
                    .add(offset_of!(uct_perf_attr_t, operation))
                    .cast::<uct_ep_operation_t>()
                    .read_unaligned(),
            )
        }
    }

    /// Writes `value` into `field` of `layout` (the caller's version).
    fn put<T>(&self, layout: &PerfAttrLayout, field: Field, value: T) {
        if self.attr.is_null() || field.offset + size_of::<T>() > layout.size {
            return;
        }
        // SAFETY: non-NULL and writable for the layout's size (FromC); the
        // field lies inside it (checked), any alignment.
        unsafe {
            self.attr
                .add(field.offset)
                .cast::<T>()
                .write_unaligned(value)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_ucx_s() {
        assert_eq!(V113.size(), 88);
        assert_eq!(V117.size(), 96);
        assert_eq!(HEADERS.size(), 112);
    }

    #[test]
    fn every_field_lies_inside_its_struct() {
        for layout in [V113, V117, HEADERS] {
            let fields = [
                (layout.path_bandwidth, size_of::<uct_ppn_bandwidth_t>()),
                (Some(layout.latency), size_of::<ucs_linear_func_t>()),
                (Some(layout.max_inflight_eps), size_of::<usize>()),
                (layout.flags, size_of::<u64>()),
            ];
            for (field, len) in fields.iter().filter_map(|(f, len)| f.map(|f| (f, *len))) {
                assert!(field.offset + len <= layout.size, "{layout:?}");
            }
        }
    }

    #[test]
    fn versions_pick_their_layout() {
        assert_eq!(PerfAttrLayout::of(UcxVersion::new(1, 13)), V113);
        assert_eq!(PerfAttrLayout::of(UcxVersion::new(1, 16)), V113);
        assert_eq!(PerfAttrLayout::of(UcxVersion::new(1, 18)), V117);
        assert_eq!(PerfAttrLayout::of(UcxVersion::new(1, 22)), HEADERS);
        assert_eq!(V113.latency.bit, 1 << 9);
        assert_eq!(V113.max_inflight_eps.bit, 1 << 10);
        assert_eq!(HEADERS.latency.bit, 1 << 10);
    }
}
