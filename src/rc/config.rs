//! The `rc_mlx5` transport's configuration table (`UCX_RC_MLX5_*`, and the
//! `UCX_RC_*`, `UCX_IB_*`, `UCX_*` names it inherits): UCX's
//! `uct_rc_iface_common_config_table`, `uct_rc_iface_config_table`,
//! `uct_rc_mlx5_common_config_table` and `uct_rc_mlx5_iface_config_table`,
//! nesting the `ib` interface tables. Names, types and defaults are UCX
//! 1.13's (listed by `scripts/ucx-config-keys.py`, checked by
//! `tests/config_ucx_keys.rs`) except where master changed a default
//! (`ALLOC`, `SRQ_TOPO`), plus master's additions; the descriptions are ours,
//! and a setting that means nothing here says why it is not applied.

use std::time::Duration;

use crate::abi::ucs_status::Status;
use crate::abi::uct_def::uct_iface_config_t;
use crate::core::config::handle::typed_from_handle;
use crate::core::config::table::{deprecated, table, unapplied, value, Config, ConfigTable, Field};
use crate::core::config::typed::Reader;
use crate::core::config::value::{Kind, MemUnits, Ternary, Ulunits, Value};
use crate::core::config::ProcessEnv;
use crate::core::uct_config::ALLOC_METHOD_NAMES;
use crate::ib::config::{
    IB_IFACE_FIELDS, IB_MLX5_IFACE_FIELDS, MMIO_MODE_NAMES, NO_EXP_VERBS, PATH_MTU_NAMES,
};
use crate::ib::md::RC_MLX5_TL_NAME;

/// RC fence modes.
pub const FENCE_MODE_NAMES: &[&str] = &["none", "weak", "auto"];
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
    unapplied(
        "OOO_RW",
        "n",
        "Out-of-order placement of RDMA data.",
        Kind::Bool,
        NO_EXP_VERBS,
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

const NO_TAG_MATCHING: &str = "the transport has no hardware tag matching.";

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
    unapplied(
        "TM_LIST_SIZE",
        "1024",
        "Most tags posted to the device for matching.",
        Kind::Uint,
        NO_TAG_MATCHING,
    ),
    unapplied(
        "TM_SEG_SIZE",
        "48k",
        "Largest copy send with tag matching on.",
        Kind::MemUnits,
        NO_TAG_MATCHING,
    ),
    unapplied(
        "TM_MP_SRQ_ENABLE",
        "try",
        "Multi-packet shared receive queue for tag matching.",
        Kind::Ternary,
        NO_TAG_MATCHING,
    ),
    unapplied(
        "TM_MP_NUM_STRIDES",
        "8",
        "Strides per receive WQE of the multi-packet queue (8 or 16).",
        Kind::Ulunits,
        NO_TAG_MATCHING,
    ),
    unapplied(
        "TM_MAX_BCOPY",
        "48k",
        "Another name of TM_SEG_SIZE.",
        Kind::MemUnits,
        NO_TAG_MATCHING,
    ),
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

/// Path MTU setting: `None` is "device default".
pub type PathMtu = Option<u32>;

/// Estimated costs of a send, in seconds (`UCX_IB_SEND_OVERHEAD`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SendOverhead {
    pub bcopy: f64,
    pub cqe: f64,
    pub db: f64,
    pub wqe_fetch: f64,
    pub wqe_post: f64,
}

/// RC fence mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceMode {
    None,
    Weak,
    Auto,
}

/// How the doorbell is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmioMode {
    BfPost,
    BfPostMt,
    Db,
    DbLock,
    Auto,
}

/// Everything the `rc_mlx5` transport reads (`UCX_RC_MLX5_*` and the
/// inherited `UCX_RC_*`, `UCX_IB_*`, `UCX_*` names).
#[derive(Debug, Clone, PartialEq)]
pub struct RcMlx5IfaceConfig {
    // uct_iface_config_table
    pub alloc_methods: Vec<&'static str>,
    /// `ucs_log_level_t` value of network failure reports.
    pub failure_log_level: u32,
    pub max_num_eps: Ulunits,
    // uct_ib_iface_config_table
    pub seg_size: MemUnits,
    pub tx_queue_len: u32,
    pub tx_max_batch: u32,
    pub tx_max_poll: u32,
    pub tx_min_inline: MemUnits,
    pub tx_inline_resp: MemUnits,
    pub tx_min_sge: u32,
    pub rx_queue_len: u32,
    pub rx_max_batch: u32,
    pub rx_max_poll: u32,
    pub rx_inline: MemUnits,
    pub is_global: bool,
    pub sl: Ulunits,
    pub traffic_class: Ulunits,
    pub hop_limit: u32,
    pub num_paths: Ulunits,
    /// `None` is `auto`.
    pub pkey: Option<u32>,
    /// MTU in bytes; `None` is the device default.
    pub path_mtu: PathMtu,
    pub send_overhead: SendOverhead,
    // uct_rc_iface_common_config_table
    pub max_rd_atomic: Ulunits,
    pub timeout: Duration,
    pub retry_count: u32,
    pub rnr_timeout: Duration,
    pub rnr_retry_count: u32,
    pub fc_enable: bool,
    pub fc_wnd_size: u32,
    pub fc_hard_thresh: f64,
    pub fence: FenceMode,
    pub max_get_zcopy: MemUnits,
    pub tx_num_get_bytes: MemUnits,
    pub tx_poll_always: bool,
    pub ece: Ulunits,
    // uct_rc_iface_config_table
    pub fc_soft_thresh: f64,
    pub tx_cq_moderation: u32,
    pub tx_cq_len: u32,
    // uct_ib_mlx5_iface_config_table
    pub mmio_mode: MmioMode,
    pub ar_enable: Ternary,
    pub tx_cqe_zip_enable: bool,
    pub rx_cqe_zip_enable: bool,
    // uct_rc_mlx5_common_config_table
    /// `u32::MAX` means no limit beyond the queue size.
    pub tx_max_bb: u32,
    pub tm_enable: bool,
    pub exp_backoff: u32,
    pub srq_topo: Vec<String>,
    pub log_ack_req_freq: u32,
    pub ddp_enable: Ternary,
}

impl RcMlx5IfaceConfig {
    pub fn from_config(config: &Config) -> Result<RcMlx5IfaceConfig, Status> {
        const IFACE: &str = "RC_RC_IB_";
        const RC: &str = "RC_RC_";
        const RC_TOP: &str = "RC_";
        const MLX5: &str = "RC_IB_";
        let r = Reader(config);
        let p = |prefix: &str, name: &str| format!("{prefix}{name}");
        let path_mtu = match r.enum_index(&p(IFACE, "PATH_MTU"))? {
            0 => None,
            index => PATH_MTU_NAMES
                .get(index)
                .and_then(|name| name.parse::<u32>().ok())
                .map(Some)
                .ok_or(Status::InvalidParam)?,
        };
        let fence = match FENCE_MODE_NAMES.get(r.enum_index(&p(RC, "FENCE"))?) {
            Some(&"none") => FenceMode::None,
            Some(&"weak") => FenceMode::Weak,
            _ => FenceMode::Auto,
        };
        let mmio_mode = match MMIO_MODE_NAMES.get(r.enum_index(&p(MLX5, "MMIO_MODE"))?) {
            Some(&"bf_post") => MmioMode::BfPost,
            Some(&"bf_post_mt") => MmioMode::BfPostMt,
            Some(&"db") => MmioMode::Db,
            Some(&"db_lock") => MmioMode::DbLock,
            _ => MmioMode::Auto,
        };
        Ok(RcMlx5IfaceConfig {
            alloc_methods: r.enum_names("RC_RC_IB_ALLOC", ALLOC_METHOD_NAMES)?,
            failure_log_level: u32::try_from(r.enum_index("RC_RC_IB_FAILURE")?)
                .map_err(|_| Status::InvalidParam)?,
            max_num_eps: r.ulunits("RC_RC_IB_MAX_NUM_EPS")?,
            seg_size: r.mem(&p(IFACE, "SEG_SIZE"))?,
            tx_queue_len: r.uint(&p(IFACE, "TX_QUEUE_LEN"))?,
            tx_max_batch: r.uint(&p(IFACE, "TX_MAX_BATCH"))?,
            tx_max_poll: r.uint(&p(IFACE, "TX_MAX_POLL"))?,
            tx_min_inline: r.mem(&p(IFACE, "TX_MIN_INLINE"))?,
            tx_inline_resp: r.mem(&p(IFACE, "TX_INLINE_RESP"))?,
            tx_min_sge: r.uint(&p(IFACE, "TX_MIN_SGE"))?,
            rx_queue_len: r.uint(&p(IFACE, "RX_QUEUE_LEN"))?,
            rx_max_batch: r.uint(&p(IFACE, "RX_MAX_BATCH"))?,
            rx_max_poll: r.uint(&p(IFACE, "RX_MAX_POLL"))?,
            rx_inline: r.mem(&p(IFACE, "RX_INLINE"))?,
            is_global: r.boolean(&p(IFACE, "IS_GLOBAL"))?,
            sl: r.ulunits(&p(IFACE, "SL"))?,
            traffic_class: r.ulunits(&p(IFACE, "TRAFFIC_CLASS"))?,
            hop_limit: r.uint(&p(IFACE, "HOP_LIMIT"))?,
            num_paths: r.ulunits(&p(IFACE, "NUM_PATHS"))?,
            pkey: r.hex(&p(IFACE, "PKEY"))?,
            path_mtu,
            send_overhead: match config.value(&p(IFACE, "SEND_OVERHEAD"))? {
                Value::KeyedTimes(times) => match times.as_slice() {
                    &[bcopy, cqe, db, wqe_fetch, wqe_post] => SendOverhead {
                        bcopy,
                        cqe,
                        db,
                        wqe_fetch,
                        wqe_post,
                    },
                    _ => return r.mismatch("SEND_OVERHEAD"),
                },
                _ => return r.mismatch("SEND_OVERHEAD"),
            },
            max_rd_atomic: r.ulunits(&p(RC, "MAX_RD_ATOMIC"))?,
            timeout: r.duration(&p(RC, "TIMEOUT"))?,
            retry_count: r.uint(&p(RC, "RETRY_COUNT"))?,
            rnr_timeout: r.duration(&p(RC, "RNR_TIMEOUT"))?,
            rnr_retry_count: r.uint(&p(RC, "RNR_RETRY_COUNT"))?,
            fc_enable: r.boolean(&p(RC, "FC_ENABLE"))?,
            fc_wnd_size: r.uint(&p(RC, "FC_WND_SIZE"))?,
            fc_hard_thresh: r.double(&p(RC, "FC_HARD_THRESH"))?,
            fence,
            max_get_zcopy: r.mem(&p(RC, "MAX_GET_ZCOPY"))?,
            tx_num_get_bytes: r.mem(&p(RC, "TX_NUM_GET_BYTES"))?,
            tx_poll_always: r.boolean(&p(RC, "TX_POLL_ALWAYS"))?,
            ece: r.ulunits(&p(RC, "ECE"))?,
            fc_soft_thresh: r.double(&p(RC_TOP, "FC_SOFT_THRESH"))?,
            tx_cq_moderation: r.uint(&p(RC_TOP, "TX_CQ_MODERATION"))?,
            tx_cq_len: r.uint(&p(RC_TOP, "TX_CQ_LEN"))?,
            mmio_mode,
            ar_enable: r.ternary(&p(MLX5, "AR_ENABLE"))?,
            tx_cqe_zip_enable: r.boolean(&p(MLX5, "TX_CQE_ZIP_ENABLE"))?,
            rx_cqe_zip_enable: r.boolean(&p(MLX5, "RX_CQE_ZIP_ENABLE"))?,
            tx_max_bb: r.uint(&p(RC_TOP, "TX_MAX_BB"))?,
            tm_enable: r.boolean(&p(RC_TOP, "TM_ENABLE"))?,
            exp_backoff: r.uint(&p(RC_TOP, "EXP_BACKOFF"))?,
            srq_topo: r.strings(&p(RC_TOP, "SRQ_TOPO"))?,
            log_ack_req_freq: r.uint(&p(RC_TOP, "LOG_ACK_REQ_FREQ"))?,
            ddp_enable: r.ternary(&p(RC_TOP, "DDP_ENABLE"))?,
        })
    }
}

/// Largest value of the 3-bit retry counters of an RC QP.
pub const MAX_QP_RETRY_COUNT: u32 = 7;
/// Largest partition key index value a user may ask for.
pub const MAX_PKEY: u32 = 0x7fff;

impl RcMlx5IfaceConfig {
    /// The configuration with every default and no environment.
    pub fn defaults() -> Result<RcMlx5IfaceConfig, Status> {
        RcMlx5IfaceConfig::from_config(&Config::with_defaults(&RC_MLX5_IFACE_CONFIG)?)
    }

    /// The checks UCX makes when an interface is created from this
    /// configuration: flow-control thresholds must be fractions with
    /// hard < soft (`InvalidParam` otherwise), a PKEY must be at most 0x7fff,
    /// and retry counters above what the QP holds are lowered to 7 with a
    /// warning.
    pub fn check(&mut self) -> Result<(), Status> {
        if !(self.fc_hard_thresh > 0.0 && self.fc_hard_thresh < 1.0) {
            tracing::error!(
                "UCX_RC_FC_HARD_THRESH must be above 0 and below 1 (it is {})",
                self.fc_hard_thresh
            );
            return Err(Status::InvalidParam);
        }
        if !(self.fc_soft_thresh > self.fc_hard_thresh && self.fc_soft_thresh < 1.0) {
            tracing::error!(
                "UCX_RC_FC_SOFT_THRESH must be above FC_HARD_THRESH and below 1 (soft {}, hard {})",
                self.fc_soft_thresh,
                self.fc_hard_thresh
            );
            return Err(Status::InvalidParam);
        }
        if let Some(pkey) = self.pkey.filter(|pkey| *pkey > MAX_PKEY) {
            tracing::error!("UCX_IB_PKEY 0x{pkey:x} is out of range 0..0x{MAX_PKEY:x}");
            return Err(Status::InvalidParam);
        }
        for (name, value) in [
            ("RETRY_COUNT", &mut self.retry_count),
            ("RNR_RETRY_COUNT", &mut self.rnr_retry_count),
        ] {
            if *value > MAX_QP_RETRY_COUNT {
                tracing::warn!(
                    "UCX_RC_{name} {value} is above the maximum, using {MAX_QP_RETRY_COUNT}"
                );
                *value = MAX_QP_RETRY_COUNT;
            }
        }
        Ok(())
    }
}

/// The interface configuration of transport `tl_name` from the process
/// environment; `NoDevice` for a transport we do not have (as UCX).
pub fn read_iface_config(tl_name: &str, app_prefix: Option<&str>) -> Result<Config, Status> {
    if tl_name != RC_MLX5_TL_NAME {
        tracing::error!("Transport '{tl_name}' does not exist");
        return Err(Status::NoDevice);
    }
    Config::read(&RC_MLX5_IFACE_CONFIG, app_prefix, &ProcessEnv)
}

/// The typed `rc_mlx5` settings behind a `uct_iface_config_t *` (for
/// `uct_iface_open`), after [`RcMlx5IfaceConfig::check`].
pub fn iface_config_from_handle(
    handle: *const uct_iface_config_t,
) -> Result<RcMlx5IfaceConfig, Status> {
    typed_from_handle(handle.cast(), &RC_MLX5_IFACE_CONFIG, |config| {
        let mut typed = RcMlx5IfaceConfig::from_config(config)?;
        typed.check()?;
        Ok(typed)
    })
}
