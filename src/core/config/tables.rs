//! Our configuration tables. Names, nesting, prefixes, types and defaults are
//! UCX's (openucx/ucx master: `uct/base/uct_iface.c`, `uct/ib/base/ib_md.c`,
//! `uct/ib/base/ib_iface.c`, `uct/ib/rc/base/rc_iface.c`,
//! `uct/ib/mlx5/ib_mlx5.c`, `uct/ib/mlx5/rc/rc_mlx5_common.c`,
//! `uct/ib/mlx5/rc/rc_mlx5_iface.c`), limited to the fields this library
//! implements or accepts; the descriptions are ours.

use super::table::{ConfigTable, Field, FieldKind};
use super::value::{Kind, LOG_LEVEL_NAMES};

const fn value(name: &'static str, default: &'static str, doc: &'static str, kind: Kind) -> Field {
    Field {
        name,
        default,
        doc,
        kind: FieldKind::Value(kind),
    }
}

const fn table(name: &'static str, default: &'static str, fields: &'static [Field]) -> Field {
    Field {
        name,
        default,
        doc: "",
        kind: FieldKind::Table(fields),
    }
}

const fn deprecated(name: &'static str, doc: &'static str) -> Field {
    Field {
        name,
        default: "",
        doc,
        kind: FieldKind::Deprecated,
    }
}

/// `uct_alloc_method_t` names, in enum order.
pub const ALLOC_METHOD_NAMES: &[&str] = &["thp", "md", "heap", "mmap", "huge"];
/// `uct_ib_mtu_t` names: index 0 is "device default", then 512..4096.
pub const PATH_MTU_NAMES: &[&str] = &["default", "512", "1024", "2048", "4096"];
/// RC fence modes.
pub const FENCE_MODE_NAMES: &[&str] = &["none", "weak", "auto"];
/// mlx5 doorbell write modes.
pub const MMIO_MODE_NAMES: &[&str] = &["bf_post", "bf_post_mt", "db", "db_lock", "auto"];

/// `uct_iface_config_table`: settings of every transport.
static UCT_IFACE_FIELDS: &[Field] = &[
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
static UCT_MD_FIELDS: &[Field] = &[];

/// `uct_ib_md_config_table` (prefix `IB_`).
static IB_MD_FIELDS: &[Field] = &[
    table("", "", UCT_MD_FIELDS),
    value(
        "MEM_REG_OVERHEAD",
        "16us",
        "Fixed cost of registering a memory region (performance model).",
        Kind::Time,
    ),
    value(
        "MEM_REG_GROWTH",
        "0.06ns",
        "Cost per byte of registering memory (performance model).",
        Kind::Time,
    ),
    value(
        "FORK_INIT",
        "try",
        "Make the verbs library fork-safe before opening the device.",
        Kind::Ternary,
    ),
    value(
        "ASYNC_EVENTS",
        "y",
        "Listen to asynchronous device events (port state, QP errors).",
        Kind::Bool,
    ),
    value(
        "ETH_PAUSE_ON",
        "y",
        "Whether Ethernet pause frames are on; 'no' excludes transports that\nperform badly on a lossy RoCE fabric.",
        Kind::Bool,
    ),
    value(
        "PREFER_NEAREST_DEVICE",
        "y",
        "Prefer the device closest to the calling CPU.",
        Kind::Bool,
    ),
    value(
        "INDIRECT_ATOMIC",
        "y",
        "Use indirect atomic operations where the device offers them.",
        Kind::Bool,
    ),
    value(
        "GID_INDEX",
        "auto",
        "GID table index of the port to use; 'auto' picks one.",
        Kind::Ulunits,
    ),
    value(
        "SUBNET_PREFIX",
        "",
        "Use only ports of this InfiniBand subnet prefix; empty means any.",
        Kind::String,
    ),
    value(
        "MLX5_DV",
        "try",
        "Drive mlx5 devices directly (work queues in user memory).",
        Kind::Ternary,
    ),
    value(
        "MLX5_DEVX",
        "try",
        "Create device objects through DEVX.",
        Kind::Ternary,
    ),
    value(
        "REG_MT_THRESH",
        "4G",
        "Regions at least this large are registered by several threads.",
        Kind::MemUnits,
    ),
    value(
        "REG_MT_CHUNK",
        "2G",
        "Chunk size of multi-threaded registration (a power of 2).",
        Kind::MemUnits,
    ),
    value(
        "REG_MT_BIND",
        "n",
        "Bind multi-threaded registration threads to CPUs.",
        Kind::Bool,
    ),
    value(
        "PCI_RELAXED_ORDERING",
        "auto",
        "Relaxed ordering of PCIe writes to registered memory.",
        Kind::TernaryAuto,
    ),
    value(
        "MAX_IDLE_RKEY_COUNT",
        "16",
        "How many invalidated memory keys are kept before they are reused.",
        Kind::Uint,
    ),
    value(
        "REG_RETRY_CNT",
        "inf",
        "How many times a failed memory registration is attempted.",
        Kind::Ulunits,
    ),
];

/// The `ib` component's MD configuration.
pub static IB_MD_CONFIG: ConfigTable = ConfigTable {
    name: "IB memory domain",
    prefix: "IB_",
    fields: IB_MD_FIELDS,
};

/// `uct_ib_iface_config_table` (nested under `IB_`).
static IB_IFACE_FIELDS: &[Field] = &[
    table("", "ALLOC=thp,mmap,heap", UCT_IFACE_FIELDS),
    value(
        "SEG_SIZE",
        "8192",
        "Size of the bounce buffers used by copy sends and receives.",
        Kind::MemUnits,
    ),
    value(
        "TX_QUEUE_LEN",
        "256",
        "Number of entries of the send queue.",
        Kind::Uint,
    ),
    value(
        "TX_MAX_BATCH",
        "16",
        "Send work requests posted together; more saves CPU, less lowers latency.",
        Kind::Uint,
    ),
    value(
        "TX_MAX_POLL",
        "16",
        "Most send completions handled in one poll.",
        Kind::Uint,
    ),
    value(
        "TX_MIN_INLINE",
        "64",
        "Bytes of each send work request reserved for inline data.",
        Kind::MemUnits,
    ),
    value(
        "TX_INLINE_RESP",
        "0",
        "Bytes reserved for responses (read, atomic) delivered inline.",
        Kind::MemUnits,
    ),
    value(
        "TX_MIN_SGE",
        "5",
        "Scatter/gather entries reserved in each send work request.",
        Kind::Uint,
    ),
    value(
        "RX_QUEUE_LEN",
        "4096",
        "Number of entries of the receive queue.",
        Kind::Uint,
    ),
    value(
        "RX_MAX_BATCH",
        "16",
        "Receive buffers posted together.",
        Kind::Uint,
    ),
    value(
        "RX_MAX_POLL",
        "16",
        "Most receive completions handled in one poll.",
        Kind::Uint,
    ),
    value(
        "RX_INLINE",
        "0",
        "Bytes of received data requested inline in the completion.",
        Kind::MemUnits,
    ),
    value(
        "IS_GLOBAL",
        "n",
        "Always use global routing (GRH).",
        Kind::Bool,
    ),
    value(
        "SL",
        "auto",
        "Service level (InfiniBand) or Ethernet priority (RoCEv2).",
        Kind::Ulunits,
    ),
    value(
        "TRAFFIC_CLASS",
        "auto",
        "Traffic class (InfiniBand) or DSCP (RoCEv2).",
        Kind::Ulunits,
    ),
    value(
        "HOP_LIMIT",
        "255",
        "Hop limit (InfiniBand) or time to live (RoCEv2), 0..255.",
        Kind::Uint,
    ),
    value(
        "NUM_PATHS",
        "auto",
        "Connections per endpoint pair used to spread traffic over paths.",
        Kind::Ulunits,
    ),
    value(
        "PKEY",
        "auto",
        "Partition key, 0..0x7fff; 'auto' takes the first full-membership one.",
        Kind::Hex,
    ),
    value(
        "PATH_MTU",
        "default",
        "Path MTU; 'default' takes the best the port offers.",
        Kind::Enum(PATH_MTU_NAMES),
    ),
    value(
        "SEND_OVERHEAD",
        "bcopy:5ns,cqe:20ns,db:40ns,wqe_fetch:350ns,wqe_post:0",
        "Estimated CPU and device costs of a send (performance model)",
        Kind::KeyedTimes(SEND_OVERHEAD_KEYS),
    ),
];

/// Parts of the send overhead estimate, in UCX's order.
pub const SEND_OVERHEAD_KEYS: &[(&str, &str)] = &[
    ("bcopy", "taking a send buffer for a copy send"),
    ("cqe", "handling a completion"),
    ("db", "ringing the doorbell"),
    ("wqe_fetch", "the device reading a work request"),
    ("wqe_post", "writing a work request"),
];

/// `uct_rc_iface_common_config_table` (nested under `RC_`).
static RC_COMMON_FIELDS: &[Field] = &[
    table(
        "IB_",
        "RX_INLINE=64;TX_INLINE_RESP=64;RX_QUEUE_LEN=4095;SEG_SIZE=8256",
        IB_IFACE_FIELDS,
    ),
    value(
        "MAX_RD_ATOMIC",
        "auto",
        "Outstanding read/atomic operations per connection; 'auto' is the device maximum.",
        Kind::Ulunits,
    ),
    value(
        "TIMEOUT",
        "1.0s",
        "Time to wait for an acknowledgement before retransmitting.",
        Kind::Time,
    ),
    value(
        "RETRY_COUNT",
        "7",
        "Retransmissions before the connection fails.",
        Kind::Uint,
    ),
    value(
        "RNR_TIMEOUT",
        "1ms",
        "Time to wait after a receiver-not-ready answer.",
        Kind::Time,
    ),
    value(
        "RNR_RETRY_COUNT",
        "7",
        "Receiver-not-ready retries before the connection fails (7 = forever).",
        Kind::Uint,
    ),
    value(
        "FC_ENABLE",
        "y",
        "Credit based flow control of active messages, so that a sender\ndoes not overrun its receiver.",
        Kind::Bool,
    ),
    value(
        "FC_WND_SIZE",
        "512",
        "Active messages an endpoint may send without new credits.",
        Kind::Uint,
    ),
    value(
        "FC_HARD_THRESH",
        "0.25",
        "Fraction of FC_WND_SIZE left at which credits are requested urgently (0..1).",
        Kind::Double,
    ),
    value(
        "FENCE",
        "auto",
        "What a fence does: nothing, order reads after writes, or chosen by the device.",
        Kind::Enum(FENCE_MODE_NAMES),
    ),
    deprecated("TX_NUM_GET_OPS", "Replaced by UCX_RC_TX_NUM_GET_BYTES."),
    value(
        "MAX_GET_ZCOPY",
        "auto",
        "Largest zero-copy get.",
        Kind::MemUnits,
    ),
    value(
        "TX_NUM_GET_BYTES",
        "inf",
        "Bytes that may be in flight in get operations at once.",
        Kind::MemUnits,
    ),
    value(
        "TX_POLL_ALWAYS",
        "n",
        "Poll send completions on every progress call, not only when nothing was received.",
        Kind::Bool,
    ),
    value(
        "ECE",
        "auto",
        "Enhanced connection establishment value: 'auto', 'inf' (maximum) or a number.",
        Kind::Ulunits,
    ),
];

/// `uct_rc_iface_config_table` (nested under `RC_`).
static RC_IFACE_FIELDS: &[Field] = &[
    table("RC_", "MAX_NUM_EPS=256", RC_COMMON_FIELDS),
    value(
        "FC_SOFT_THRESH",
        "0.5",
        "Fraction of FC_WND_SIZE left at which credits are requested (above the hard threshold, below 1).",
        Kind::Double,
    ),
    value(
        "TX_CQ_MODERATION",
        "64",
        "Most sends posted without asking for a completion.",
        Kind::Uint,
    ),
    value(
        "TX_CQ_LEN",
        "4096",
        "Entries of the send completion queue: bounds outstanding signaled sends.",
        Kind::Uint,
    ),
];

/// `uct_ib_mlx5_iface_config_table` (nested under `IB_`).
static IB_MLX5_IFACE_FIELDS: &[Field] = &[
    value(
        "MMIO_MODE",
        "auto",
        "How a send is announced to the device: BlueFlame copy of the WQE,\nthe same from several threads, an 8-byte doorbell, a locked doorbell,\nor chosen from the thread mode.",
        Kind::Enum(MMIO_MODE_NAMES),
    ),
    value(
        "AR_ENABLE",
        "auto",
        "Adaptive routing (packets may arrive out of order).",
        Kind::TernaryAuto,
    ),
    value(
        "TX_CQE_ZIP_ENABLE",
        "no",
        "Let the device compress send completions.",
        Kind::Bool,
    ),
    value(
        "RX_CQE_ZIP_ENABLE",
        "no",
        "Let the device compress receive completions.",
        Kind::Bool,
    ),
];

/// `uct_rc_mlx5_common_config_table` (nested under `RC_`).
static RC_MLX5_COMMON_FIELDS: &[Field] = &[
    table("IB_", "", IB_MLX5_IFACE_FIELDS),
    value(
        "TX_MAX_BB",
        "-1",
        "Most outstanding send building blocks (64-byte WQE units); -1 is the queue size.",
        Kind::Uint,
    ),
    value("TM_ENABLE", "n", "Hardware tag matching.", Kind::Bool),
    value(
        "EXP_BACKOFF",
        "0",
        "Each consecutive retry multiplies the ack timeout by 2^EXP_BACKOFF.",
        Kind::Uint,
    ),
    value(
        "SRQ_TOPO",
        "cyclic,cyclic_emulated,list",
        "Shared receive queue layouts, in order of preference.",
        Kind::StringArray,
    ),
    value(
        "LOG_ACK_REQ_FREQ",
        "8",
        "Log2 of how often a request asks for an acknowledgement.",
        Kind::Uint,
    ),
    value("DDP_ENABLE", "try", "Direct data placement.", Kind::Ternary),
];

/// `uct_rc_mlx5_iface_config_table`: the `rc_mlx5` transport (prefix `RC_MLX5_`).
static RC_MLX5_IFACE_FIELDS: &[Field] = &[
    table(
        "RC_",
        "IB_SEND_OVERHEAD=bcopy:5ns,cqe:20ns,db:40ns,wqe_fetch:350ns,wqe_post:40e-9",
        RC_IFACE_FIELDS,
    ),
    table("RC_", "", RC_MLX5_COMMON_FIELDS),
];

/// The `rc_mlx5` transport's interface configuration.
pub static RC_MLX5_IFACE_CONFIG: ConfigTable = ConfigTable {
    name: "RC_MLX5 transport",
    prefix: "RC_MLX5_",
    fields: RC_MLX5_IFACE_FIELDS,
};

/// Soft HCA mode names.
pub const SOFT_HCA_MODE_NAMES: &[&str] = &["auto", "yes", "no"];

/// Soft HCA wire names.
pub const SOFT_HCA_WIRE_NAMES: &[&str] = &["auto", "udp"];

/// Our own variables for the software HCA (no UCX counterpart).
static SOFT_HCA_FIELDS: &[Field] = &[
    value(
        "SOFT_HCA",
        "auto",
        "Use the software HCA: 'auto' where no mlx5 device is usable, 'yes'\nalways, 'no' never.",
        Kind::Enum(SOFT_HCA_MODE_NAMES),
    ),
    value(
        "SOFT_HCA_DEVICES",
        "mlx5_0@127.0.0.1",
        "Software HCA devices: <name>@<IPv4 address the device's link binds to>.",
        Kind::SoftDevices,
    ),
    value(
        "SOFT_HCA_LOSS",
        "0",
        "Fraction of packets the software HCA's link drops, 0..1 (fault injection).",
        Kind::Fraction,
    ),
    value(
        "SOFT_HCA_SEED",
        "auto",
        "Seed of the software HCA's packet drop decisions, for reproducible lossy\nruns; 'auto' picks a random one.",
        Kind::Ulunits,
    ),
    value(
        "SOFT_HCA_WIRE",
        "auto",
        "How the software HCA carries its RoCEv2 datagrams: 'auto' through shared\nmemory to devices on this host (same network namespace) and UDP to the\nothers, 'udp' always over UDP.",
        Kind::Enum(SOFT_HCA_WIRE_NAMES),
    ),
    value(
        "SOFT_HCA_GSO",
        "y",
        "Send runs of equal-sized datagrams to one peer as one UDP GSO message, and\nreceive coalesced (GRO) messages, where the kernel has them. A capture on\nthe interface then shows the unsegmented messages.",
        Kind::Bool,
    ),
];

pub static SOFT_HCA_CONFIG: ConfigTable = ConfigTable {
    name: "Soft HCA",
    prefix: "",
    fields: SOFT_HCA_FIELDS,
};

/// The part of UCS's global options this library honours.
static LOG_FIELDS: &[Field] = &[
    value(
        "LOG_LEVEL",
        "warn",
        "Lowest severity of log messages printed.",
        Kind::Enum(LOG_LEVEL_NAMES),
    ),
    value(
        "LOG_FILE",
        "",
        "Write log messages to this file instead of stderr; %p is replaced\nby the process id, %h by the host name.",
        Kind::String,
    ),
    value(
        "WARN_UNUSED_ENV_VARS",
        "y",
        "Warn about UCX_ variables that look like a misspelled setting.",
        Kind::Bool,
    ),
];

pub static LOG_CONFIG: ConfigTable = ConfigTable {
    name: "UCS global",
    prefix: "",
    fields: LOG_FIELDS,
};

/// The connection manager (`rdmacm` component) has no settings of its own.
pub static CM_CONFIG: ConfigTable = ConfigTable {
    name: "Connection manager",
    prefix: "RDMA_CM_",
    fields: &[],
};

/// Every table, for checks over all known variable names.
pub static ALL_TABLES: [&ConfigTable; 4] = [
    &IB_MD_CONFIG,
    &RC_MLX5_IFACE_CONFIG,
    &SOFT_HCA_CONFIG,
    &LOG_CONFIG,
];
