//! Typed views of filled configurations, for the code that uses them (md,
//! iface, soft HCA). Each is built from a [`Config`] of its table, so values
//! set through the environment, `uct_config_modify` or defaults all arrive
//! here the same way.

use std::time::Duration;

use super::table::Config;
use super::tables::{ALLOC_METHOD_NAMES, FENCE_MODE_NAMES, MMIO_MODE_NAMES, PATH_MTU_NAMES};
use super::value::{MemUnits, SoftDeviceSpec, Ternary, Ulunits, Value};
use crate::abi::ucs_status::Status;

/// Typed reads of a [`Config`] by UCX path; a type mismatch is an internal
/// error (tables and structs disagree) and is reported, not panicked on.
struct Reader<'a>(&'a Config);

impl Reader<'_> {
    fn mismatch<T>(&self, path: &str) -> Result<T, Status> {
        tracing::error!(
            "configuration field {path} of {} has an unexpected type",
            self.0.table().name
        );
        Err(Status::InvalidParam)
    }

    fn duration(&self, path: &str) -> Result<Duration, Status> {
        match self.0.value(path)? {
            Value::Time(seconds) => {
                Duration::try_from_secs_f64(*seconds).or_else(|_| self.mismatch(path))
            }
            _ => self.mismatch(path),
        }
    }

    fn enum_names(&self, path: &str, names: &[&'static str]) -> Result<Vec<&'static str>, Status> {
        match self.0.value(path)? {
            Value::EnumList(indexes) => indexes
                .iter()
                .map(|i| names.get(*i).copied().ok_or(Status::InvalidParam))
                .collect(),
            _ => self.mismatch(path),
        }
    }
}

/// Defines one `Reader` method per `(name, type, Value variant)`: each takes
/// its variant's payload and reports any other variant as a mismatch.
macro_rules! plain_readers {
    ($($name:ident -> $ty:ty = $variant:ident;)*) => {
        impl Reader<'_> {
            $(
                fn $name(&self, path: &str) -> Result<$ty, Status> {
                    match self.0.value(path)? {
                        Value::$variant(payload) => Ok(Clone::clone(payload)),
                        _ => self.mismatch(path),
                    }
                }
            )*
        }
    };
}

plain_readers! {
    uint -> u32 = Uint;
    ulunits -> Ulunits = Ulunits;
    mem -> MemUnits = Mem;
    boolean -> bool = Bool;
    ternary -> Ternary = Ternary;
    double -> f64 = Double;
    enum_index -> usize = Enum;
    string -> String = Str;
    strings -> Vec<String> = StrList;
    hex -> Option<u32> = Hex;
}

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
        RcMlx5IfaceConfig::from_config(&Config::with_defaults(
            &super::tables::RC_MLX5_IFACE_CONFIG,
        )?)
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

/// Whether to use the software HCA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SoftHcaMode {
    /// Where no usable mlx5 device exists.
    Auto,
    Yes,
    No,
}

/// How soft devices carry datagrams (`UCX_SOFT_HCA_WIRE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SoftHcaWire {
    /// Shared memory to devices on this host, UDP to the others.
    Auto,
    /// UDP only.
    Udp,
}

/// `UCX_SOFT_HCA*`.
#[derive(Debug, Clone, PartialEq)]
pub struct SoftHcaConfig {
    pub wire: SoftHcaWire,
    /// UDP GSO on send and GRO on receive (`UCX_SOFT_HCA_GSO`).
    pub udp_offload: bool,
    pub mode: SoftHcaMode,
    pub devices: Vec<SoftDeviceSpec>,
    /// Fraction of packets dropped, 0..=1.
    pub loss: f64,
    /// Seed of the drop decisions; `None` (`auto`) means random.
    pub seed: Option<u64>,
}

impl SoftHcaConfig {
    pub fn from_config(config: &Config) -> Result<SoftHcaConfig, Status> {
        let r = Reader(config);
        let mode = match r.enum_index("SOFT_HCA")? {
            1 => SoftHcaMode::Yes,
            2 => SoftHcaMode::No,
            _ => SoftHcaMode::Auto,
        };
        let devices = match config.value("SOFT_HCA_DEVICES")? {
            Value::Devices(devices) => devices.clone(),
            _ => return r.mismatch("SOFT_HCA_DEVICES"),
        };
        Ok(SoftHcaConfig {
            udp_offload: r.boolean("SOFT_HCA_GSO")?,
            wire: match r.enum_index("SOFT_HCA_WIRE")? {
                1 => SoftHcaWire::Udp,
                _ => SoftHcaWire::Auto,
            },
            mode,
            devices,
            loss: r.double("SOFT_HCA_LOSS")?,
            seed: match r.ulunits("SOFT_HCA_SEED")? {
                Ulunits::Value(seed) => Some(seed),
                Ulunits::Auto | Ulunits::Inf => None,
            },
        })
    }
}
