//! The `ib` configuration: the memory domain's table (`UCX_IB_*`, UCX's
//! `uct_ib_md_config_table`), and the interface tables every IB and mlx5
//! transport nests (`uct_ib_iface_config_table`,
//! `uct_ib_mlx5_iface_config_table`). Names, types and defaults are UCX
//! 1.13's (listed by `scripts/ucx-config-keys.py`, checked by
//! `tests/config_ucx_keys.rs`) plus master's additions; the descriptions are
//! ours, and a setting that means nothing here says why it is not applied.

use std::time::Duration;

use crate::abi::ucs_status::Status;
use crate::abi::uct_def::uct_md_config_t;
use crate::core::config::handle::typed_from_handle;
use crate::core::config::table::{table, unapplied, value, Config, ConfigTable, Field};
use crate::core::config::typed::Reader;
use crate::core::config::value::{Kind, MemUnits, Ternary, Ulunits, Value};
use crate::core::config::ProcessEnv;
use crate::core::uct_config::{UCT_IFACE_FIELDS, UCT_MD_FIELDS, UCT_MD_RCACHE_FIELDS};
use crate::hca::verbs::discovery::set_configured_gid_index;

/// `uct_ib_mtu_t` names: index 0 is "device default", then 512..4096.
pub const PATH_MTU_NAMES: &[&str] = &["default", "512", "1024", "2048", "4096"];
/// mlx5 doorbell write modes.
pub const MMIO_MODE_NAMES: &[&str] = &["bf_post", "bf_post_mt", "db", "db_lock", "auto"];

/// `ucs_numa_policy_names`.
pub const NUMA_POLICY_NAMES: &[&str] = &["default", "bind", "preferred"];
/// `uct_ib_devx_objs`: objects DEVX may create.
pub const DEVX_OBJECT_NAMES: &[&str] = &["rcqp", "rcsrq", "dct", "dcsrq", "dci"];
const NO_ODP: &str = "registrations are pinned, never on-demand paged.";
const VERBS_DECIDES: &str =
    "the device's objects are created through rdma-core's verbs and mlx5dv \
     calls (or the software HCA), never through DEVX.";

/// `uct_ib_md_config_table` (prefix `IB_`).
static IB_MD_FIELDS: &[Field] = &[
    table("", "", UCT_MD_FIELDS),
    unapplied(
        "REG_METHODS",
        "rcache,odp,direct",
        "Memory registration methods in order of preference: rcache (a registration\ncache), odp (implicit on-demand paging), direct.",
        Kind::StringArray,
        "memory is always registered directly.",
    ),
    table("", "RCACHE_ADDR_ALIGN=16", UCT_MD_RCACHE_FIELDS),
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
    unapplied(
        "FORK_INIT",
        "try",
        "Make the verbs library fork-safe before opening the device.",
        Kind::Ternary,
        "rdma-core's fork support is left as the process set it.",
    ),
    unapplied(
        "ASYNC_EVENTS",
        "y",
        "Listen to asynchronous device events (port state, QP errors).",
        Kind::Bool,
        "errors reach the transport through its completions; device events are not read.",
    ),
    unapplied(
        "ETH_PAUSE_ON",
        "y",
        "Whether Ethernet pause frames are on; 'no' excludes transports that\nperform badly on a lossy RoCE fabric.",
        Kind::Bool,
        "no transport is left out for a lossy fabric.",
    ),
    unapplied(
        "ODP_NUMA_POLICY",
        "preferred",
        "NUMA policy given to on-demand paged regions: keep the current one, or bind\nthem to (or prefer) the nodes of the calling thread.",
        Kind::Enum(NUMA_POLICY_NAMES),
        NO_ODP,
    ),
    unapplied(
        "ODP_PREFETCH",
        "n",
        "Prefetch on-demand paged regions when they are registered.",
        Kind::Bool,
        NO_ODP,
    ),
    unapplied(
        "ODP_MAX_SIZE",
        "auto",
        "Largest region registered with on-demand paging; 0 disables it.",
        Kind::MemUnits,
        NO_ODP,
    ),
    unapplied(
        "DEVICE_SPECS",
        "",
        "Extra device descriptions, each <vendor-id>:<device-id>[:name[:<flags>[:<priority>]]].",
        Kind::StringArray,
        "devices are recognised by what rdma-core reports about them.",
    ),
    unapplied(
        "PREFER_NEAREST_DEVICE",
        "y",
        "Prefer the device closest to the calling CPU.",
        Kind::Bool,
        "devices are not ordered by CPU distance (no PCI topology is read).",
    ),
    unapplied(
        "INDIRECT_ATOMIC",
        "y",
        "Use indirect atomic operations where the device offers them.",
        Kind::Bool,
        "atomics are always posted directly on the QP.",
    ),
    value(
        "GID_INDEX",
        "auto",
        "GID table index of the port to use; 'auto' picks one.",
        Kind::Ulunits,
    ),
    unapplied(
        "SUBNET_PREFIX",
        "",
        "Use only ports of this InfiniBand subnet prefix; empty means any.",
        Kind::String,
        "every port is used, whatever its subnet prefix.",
    ),
    unapplied(
        "GPU_DIRECT_RDMA",
        "try",
        "Let the device reach GPU memory directly.",
        Kind::Ternary,
        "only host memory is registered.",
    ),
    unapplied(
        "MAX_INLINE_KLM_LIST",
        "inf",
        "Longest KLM list posted inline in a memory registration WQE.",
        Kind::Uint,
        "no KLM (indirect) memory keys are created.",
    ),
    unapplied(
        "PCI_BW",
        "",
        "Effective PCIe bandwidth per device, for the performance model.",
        Kind::BandwidthArray,
        "the performance model takes the link's bandwidth.",
    ),
    unapplied(
        "MLX5_DV",
        "try",
        "Drive mlx5 devices directly (work queues in user memory).",
        Kind::Ternary,
        "mlx5 work queues are always driven directly, never through plain verbs.",
    ),
    unapplied(
        "MLX5_DEVX",
        "try",
        "Create device objects through DEVX.",
        Kind::Ternary,
        VERBS_DECIDES,
    ),
    unapplied(
        "MLX5_DEVX_OBJECTS",
        "rcqp,rcsrq,dct,dcsrq,dci",
        "Which objects DEVX creates.",
        Kind::Bitmap(DEVX_OBJECT_NAMES),
        VERBS_DECIDES,
    ),
    unapplied(
        "REG_MT_THRESH",
        "4G",
        "Regions at least this large are registered by several threads.",
        Kind::MemUnits,
        "every region is registered by the calling thread.",
    ),
    unapplied(
        "REG_MT_CHUNK",
        "2G",
        "Chunk size of multi-threaded registration (a power of 2).",
        Kind::MemUnits,
        "every region is registered by the calling thread.",
    ),
    unapplied(
        "REG_MT_BIND",
        "n",
        "Bind multi-threaded registration threads to CPUs.",
        Kind::Bool,
        "every region is registered by the calling thread.",
    ),
    unapplied(
        "PCI_RELAXED_ORDERING",
        "auto",
        "Relaxed ordering of PCIe writes to registered memory.",
        Kind::TernaryAuto,
        "memory is registered with strict PCIe ordering.",
    ),
    unapplied(
        "MAX_IDLE_RKEY_COUNT",
        "16",
        "How many invalidated memory keys are kept before they are reused.",
        Kind::Uint,
        "a memory key is released when its region is deregistered.",
    ),
    unapplied(
        "REG_RETRY_CNT",
        "inf",
        "How many times a failed memory registration is attempted.",
        Kind::Ulunits,
        "a failed registration is reported at once.",
    ),
];

/// The `ib` component's MD configuration.
pub static IB_MD_CONFIG: ConfigTable = ConfigTable {
    name: "IB memory domain",
    prefix: "IB_",
    fields: IB_MD_FIELDS,
};

/// `uct_ib_iface_addr_types`.
pub const ADDR_TYPE_NAMES: &[&str] = &["ib_local", "ib_site_local", "ib_global", "eth", "auto"];
pub(crate) const NO_EXP_VERBS: &str = "it needs the experimental verbs of old MLNX_OFED releases.";
const ONE_PATH: &str = "a connection takes one path: the port's LID, or its GID for RoCE.";
const POOLS_FROM_QUEUES: &str = "the transport sizes its buffer pools from the queue lengths.";

/// `uct_ib_iface_config_table` (nested under `IB_`).
pub static IB_IFACE_FIELDS: &[Field] = &[
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
    unapplied(
        "TX_EVENT_MOD_COUNT",
        "0",
        "Send completions per completion event (0: no moderation).",
        Kind::Uint,
        NO_EXP_VERBS,
    ),
    unapplied(
        "TX_EVENT_MOD_PERIOD",
        "0us",
        "Longest delay of a send completion event (0: no moderation).",
        Kind::Time,
        NO_EXP_VERBS,
    ),
    unapplied(
        "RX_EVENT_MOD_COUNT",
        "0",
        "Receive completions per completion event (0: no moderation).",
        Kind::Uint,
        NO_EXP_VERBS,
    ),
    unapplied(
        "RX_EVENT_MOD_PERIOD",
        "0us",
        "Longest delay of a receive completion event (0: no moderation).",
        Kind::Time,
        NO_EXP_VERBS,
    ),
    unapplied(
        "TX_MAX_BUFS",
        "-1",
        "Most send buffers of the interface; -1 is no limit.",
        Kind::Int,
        POOLS_FROM_QUEUES,
    ),
    unapplied(
        "TX_BUFS_GROW",
        "1024",
        "Send buffers added each time the pool grows; 0 lets the transport choose.",
        Kind::Uint,
        POOLS_FROM_QUEUES,
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
    unapplied(
        "RX_MAX_BUFS",
        "-1",
        "Most receive buffers of the interface; -1 is no limit.",
        Kind::Int,
        POOLS_FROM_QUEUES,
    ),
    unapplied(
        "RX_BUFS_GROW",
        "0",
        "Receive buffers added each time the pool grows; 0 lets the transport choose.",
        Kind::Uint,
        POOLS_FROM_QUEUES,
    ),
    unapplied(
        "ADDR_TYPE",
        "auto",
        "Interface address type (superseded by IS_GLOBAL); 'auto' follows the link layer.",
        Kind::Enum(ADDR_TYPE_NAMES),
        "the address type follows the link layer and IS_GLOBAL.",
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
    unapplied(
        "ROCE_LOCAL_SUBNET",
        "n",
        "Take only RoCEv2 addresses in the local interface's subnet as reachable.",
        Kind::Bool,
        "every RoCEv2 address is taken as reachable.",
    ),
    unapplied(
        "ROCE_SUBNET_PREFIX_LEN",
        "auto",
        "Subnet prefix length, in bits, of that reachability check.",
        Kind::Ulunits,
        "every RoCEv2 address is taken as reachable.",
    ),
    unapplied(
        "ROCE_PATH_FACTOR",
        "1",
        "Multiplier of the UDP source port that spreads RoCE LAG traffic over paths.",
        Kind::Uint,
        ONE_PATH,
    ),
    unapplied(
        "LID_PATH_BITS",
        "0",
        "Path bits (low LID bits under the fabric's LMC) to use, as numbers or ranges.",
        Kind::RangeArray,
        ONE_PATH,
    ),
    value(
        "PKEY",
        "auto",
        "Partition key, 0..0x7fff; 'auto' takes the first full-membership one.",
        Kind::Hex,
    ),
    unapplied(
        "RESOURCE_DOMAIN",
        "y",
        "Several verbs resource domains per device.",
        Kind::Bool,
        NO_EXP_VERBS,
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

/// `uct_ib_mlx5_iface_config_table` (nested under `IB_`).
pub static IB_MLX5_IFACE_FIELDS: &[Field] = &[
    unapplied(
        "DM_SIZE",
        "2k",
        "Size of each device memory buffer used for sends.",
        Kind::MemUnits,
        "no device memory is allocated.",
    ),
    unapplied(
        "DM_COUNT",
        "1",
        "Device memory buffers per interface.",
        Kind::Uint,
        "no device memory is allocated.",
    ),
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
    unapplied(
        "CQE_ZIPPING_ENABLE",
        "no",
        "Let the device compress completions (UCX 1.13's single switch).",
        Kind::Ternary,
        "completions are never compressed.",
    ),
];

/// The `ib` component's memory domain settings (`UCX_IB_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct IbMdConfig {
    pub mem_reg_overhead: Duration,
    /// Seconds per byte.
    pub mem_reg_growth: f64,
    pub fork_init: Ternary,
    pub async_events: bool,
    pub eth_pause: bool,
    pub prefer_nearest_device: bool,
    pub indirect_atomic: bool,
    pub gid_index: Ulunits,
    pub subnet_prefix: String,
    pub mlx5_dv: Ternary,
    pub mlx5_devx: Ternary,
    pub reg_mt_thresh: MemUnits,
    pub reg_mt_chunk: MemUnits,
    pub reg_mt_bind: bool,
    pub pci_relaxed_ordering: Ternary,
    pub max_idle_rkey_count: u32,
    pub reg_retry_count: Ulunits,
}

impl IbMdConfig {
    pub fn from_config(config: &Config) -> Result<IbMdConfig, Status> {
        let r = Reader(config);
        Ok(IbMdConfig {
            mem_reg_overhead: r.duration("MEM_REG_OVERHEAD")?,
            mem_reg_growth: match config.value("MEM_REG_GROWTH")? {
                Value::Time(seconds) => *seconds,
                _ => return r.mismatch("MEM_REG_GROWTH"),
            },
            fork_init: r.ternary("FORK_INIT")?,
            async_events: r.boolean("ASYNC_EVENTS")?,
            eth_pause: r.boolean("ETH_PAUSE_ON")?,
            prefer_nearest_device: r.boolean("PREFER_NEAREST_DEVICE")?,
            indirect_atomic: r.boolean("INDIRECT_ATOMIC")?,
            gid_index: r.ulunits("GID_INDEX")?,
            subnet_prefix: r.string("SUBNET_PREFIX")?,
            mlx5_dv: r.ternary("MLX5_DV")?,
            mlx5_devx: r.ternary("MLX5_DEVX")?,
            reg_mt_thresh: r.mem("REG_MT_THRESH")?,
            reg_mt_chunk: r.mem("REG_MT_CHUNK")?,
            reg_mt_bind: r.boolean("REG_MT_BIND")?,
            pci_relaxed_ordering: r.ternary("PCI_RELAXED_ORDERING")?,
            max_idle_rkey_count: r.uint("MAX_IDLE_RKEY_COUNT")?,
            reg_retry_count: r.ulunits("REG_RETRY_CNT")?,
        })
    }
}

/// The `ib` MD configuration from the process environment.
pub fn read_md_config(app_prefix: Option<&str>) -> Result<Config, Status> {
    Config::read(&IB_MD_CONFIG, app_prefix, &ProcessEnv)
}

/// The typed MD settings behind a `uct_md_config_t *` (for `uct_md_open`).
pub fn md_config_from_handle(handle: *const uct_md_config_t) -> Result<IbMdConfig, Status> {
    typed_from_handle(handle.cast(), &IB_MD_CONFIG, IbMdConfig::from_config)
}

/// `UCX_IB_GID_INDEX` of the process environment: `None` for `auto` (and
/// for a bad value, which the configuration machinery reports).
fn configured_gid_index() -> Option<u8> {
    let config = read_md_config(None)
        .and_then(|c| IbMdConfig::from_config(&c))
        .ok()?;
    match config.gid_index {
        Ulunits::Value(index) => match u8::try_from(index) {
            Ok(index) => Some(index),
            Err(_) => {
                tracing::warn!("UCX_IB_GID_INDEX={index} is not a GID table index, using auto");
                None
            }
        },
        Ulunits::Auto | Ulunits::Inf => None,
    }
}

/// Hands the device layer the md settings it uses to discover and open
/// devices (the GID table index), once, before the ib layer first lists
/// devices.
pub fn hand_down_device_settings() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| set_configured_gid_index(configured_gid_index()));
}
