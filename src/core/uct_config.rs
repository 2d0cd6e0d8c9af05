//! UCX's `uct/base` configuration tables, which every transport's interface
//! table and every memory domain's table nest: names, types and defaults are
//! UCX 1.13's (with master's additions); the descriptions are ours.

use super::config::table::{deprecated, unapplied, value, Field};
use super::config::value::{Kind, LOG_LEVEL_NAMES};

/// `uct_alloc_method_t` names, in enum order.
pub const ALLOC_METHOD_NAMES: &[&str] = &["thp", "md", "heap", "mmap", "huge"];
/// `uct_iface_config_table`: settings of every transport.
pub static UCT_IFACE_FIELDS: &[Field] = &[
    deprecated("MAX_SHORT", "Replaced by the transport's TX_MIN_INLINE."),
    deprecated("MAX_BCOPY", "Replaced by the transport's SEG_SIZE."),
    value(
        "ALLOC",
        "huge,thp,md,mmap,heap",
        "Allocation methods for internal communication buffers, in order of preference.",
        Kind::EnumArray(ALLOC_METHOD_NAMES),
    ),
    value(
        "FAILURE",
        "diag",
        "Log level at which network failures are reported.",
        Kind::Enum(LOG_LEVEL_NAMES),
    ),
    value(
        "MAX_NUM_EPS",
        "inf",
        "Upper bound on the number of endpoints an interface creates.",
        Kind::Ulunits,
    ),
];

/// `uct_md_config_table`: empty in UCX as well.
pub static UCT_MD_FIELDS: &[Field] = &[];

const NO_RCACHE: &str = "memory is registered directly, without a registration cache.";

/// `uct_md_config_rcache_table`: the registration cache's settings.
pub static UCT_MD_RCACHE_FIELDS: &[Field] = &[
    unapplied(
        "RCACHE_MEM_PRIO",
        "1000",
        "Priority of the registration cache's memory event handler.",
        Kind::Uint,
        NO_RCACHE,
    ),
    unapplied(
        "RCACHE_OVERHEAD",
        "auto",
        "Cost of a registration cache lookup (performance model).",
        Kind::TimeUnits,
        NO_RCACHE,
    ),
    unapplied(
        "RCACHE_ADDR_ALIGN",
        "64",
        "Alignment of cached regions: a power of 2 up to the page size.",
        Kind::Uint,
        NO_RCACHE,
    ),
    unapplied(
        "RCACHE_MAX_REGIONS",
        "inf",
        "Most regions the registration cache holds.",
        Kind::Ulunits,
        NO_RCACHE,
    ),
    unapplied(
        "RCACHE_MAX_SIZE",
        "inf",
        "Most bytes the registration cache's regions cover.",
        Kind::MemUnits,
        NO_RCACHE,
    ),
    unapplied(
        "RCACHE_MAX_UNRELEASED",
        "512M",
        "Bytes of invalidated regions waiting for release that start a clean-up.",
        Kind::MemUnits,
        NO_RCACHE,
    ),
    unapplied(
        "RCACHE_PURGE_ON_FORK",
        "y",
        "Empty the registration cache in a forked child.",
        Kind::Bool,
        NO_RCACHE,
    ),
];
