//! The configuration model: UCX's defaults, prefix precedence, application
//! prefixes, modify/get, printing. All through an injected environment map,
//! so tests never race on the process environment.

use std::time::Duration;

use uct::abi::ucs_config::{
    UCS_CONFIG_PRINT_COMMENT_DEFAULT, UCS_CONFIG_PRINT_CONFIG, UCS_CONFIG_PRINT_DOC,
    UCS_CONFIG_PRINT_HEADER, UCS_CONFIG_PRINT_HIDDEN, UCS_LOG_LEVEL_DIAG,
};
use uct::abi::ucs_status::Status;
use uct::api::config::ALL_TABLES;
use uct::core::config::table::glob_match;
use uct::core::config::unused::{edit_distance, misspelled_env_vars};
use uct::core::config::*;
use uct::core::log::LOG_CONFIG;
use uct::hca::config::{soft_hca_config_from, SoftHcaMode, SOFT_HCA_CONFIG};
use uct::ib::config::{IbMdConfig, IB_MD_CONFIG};
use uct::rc::config::{FenceMode, MmioMode};
use uct::rc::config::{RcMlx5IfaceConfig, RC_MLX5_IFACE_CONFIG};

fn rc_mlx5(env: &[(&str, &str)]) -> Result<RcMlx5IfaceConfig, Status> {
    let config = Config::read(
        &RC_MLX5_IFACE_CONFIG,
        None,
        &MapEnv::new(env.iter().copied()),
    )?;
    RcMlx5IfaceConfig::from_config(&config)
}

fn rc_mlx5_config(env: &[(&str, &str)]) -> Config {
    Config::read(
        &RC_MLX5_IFACE_CONFIG,
        None,
        &MapEnv::new(env.iter().copied()),
    )
    .expect("valid configuration")
}

#[test]
fn every_table_parses_its_own_defaults() {
    for table in ALL_TABLES {
        let config = Config::with_defaults(table);
        assert!(config.is_ok(), "defaults of {} do not parse", table.name);
    }
}

#[test]
fn rc_mlx5_defaults_are_ucx_defaults_with_nested_overrides() {
    let cfg = rc_mlx5(&[]).expect("defaults");
    assert_eq!(cfg.timeout, Duration::from_secs(1));
    assert_eq!(cfg.retry_count, 7);
    assert_eq!(cfg.rnr_timeout, Duration::from_millis(1));
    assert_eq!(cfg.rnr_retry_count, 7);
    assert_eq!(cfg.tx_queue_len, 256);
    assert_eq!(cfg.tx_max_batch, 16);
    assert_eq!(cfg.tx_cq_len, 4096);
    assert_eq!(cfg.tx_cq_moderation, 64);
    assert!(cfg.fc_enable);
    assert_eq!(cfg.fc_wnd_size, 512);
    assert_eq!(cfg.fc_hard_thresh, 0.25);
    assert_eq!(cfg.fc_soft_thresh, 0.5);
    assert_eq!(cfg.max_rd_atomic, Ulunits::Auto);
    assert_eq!(cfg.fence, FenceMode::Auto);
    assert_eq!(cfg.mmio_mode, MmioMode::Auto);
    assert_eq!(cfg.path_mtu, None);
    assert_eq!(cfg.pkey, None);
    assert_eq!(cfg.tx_max_bb, u32::MAX);
    assert_eq!(cfg.tx_min_inline, MemUnits::Bytes(64));
    assert_eq!(cfg.tx_num_get_bytes, MemUnits::Inf);
    assert_eq!(cfg.max_get_zcopy, MemUnits::Auto);
    assert_eq!(cfg.srq_topo, ["cyclic", "cyclic_emulated", "list"]);
    assert_eq!(cfg.failure_log_level, UCS_LOG_LEVEL_DIAG);
    // The rc_mlx5 table overrides wqe_post of the IB default (0).
    let overhead = cfg.send_overhead;
    assert_eq!(
        (overhead.bcopy, overhead.cqe, overhead.db),
        (5e-9, 20e-9, 40e-9)
    );
    assert_eq!((overhead.wqe_fetch, overhead.wqe_post), (350e-9, 40e-9));
    // Overridden by the RC tables' "IB_" defaults:
    assert_eq!(cfg.rx_queue_len, 4095);
    assert_eq!(cfg.seg_size, MemUnits::Bytes(8256));
    assert_eq!(cfg.rx_inline, MemUnits::Bytes(64));
    assert_eq!(cfg.tx_inline_resp, MemUnits::Bytes(64));
    // ... by the IB iface table's "" default and the RC table's "RC_" default:
    assert_eq!(cfg.alloc_methods, ["thp", "mmap", "heap"]);
    assert_eq!(cfg.max_num_eps, Ulunits::Value(256));
}

#[test]
fn ib_md_defaults() {
    let config = Config::read(&IB_MD_CONFIG, None, &MapEnv::default()).expect("defaults");
    let md = IbMdConfig::from_config(&config).expect("typed");
    assert_eq!(md.gid_index, Ulunits::Auto);
    assert_eq!(md.mem_reg_overhead, Duration::from_micros(16));
    assert_eq!(md.fork_init, Ternary::Try);
    assert!(md.async_events && md.eth_pause && md.prefer_nearest_device);
    assert_eq!(md.subnet_prefix, "");
    assert_eq!(md.reg_mt_thresh, MemUnits::Bytes(4 << 30));
    assert_eq!(md.pci_relaxed_ordering, Ternary::Auto);
    assert_eq!(md.reg_retry_count, Ulunits::Inf);
}

#[test]
fn more_specific_prefix_wins() {
    let cfg = rc_mlx5(&[("UCX_IB_TX_QUEUE_LEN", "100")]).unwrap();
    assert_eq!(cfg.tx_queue_len, 100);
    let cfg = rc_mlx5(&[
        ("UCX_IB_TX_QUEUE_LEN", "100"),
        ("UCX_RC_TX_QUEUE_LEN", "200"),
    ])
    .unwrap();
    assert_eq!(cfg.tx_queue_len, 200);
    let cfg = rc_mlx5(&[
        ("UCX_IB_TX_QUEUE_LEN", "100"),
        ("UCX_RC_TX_QUEUE_LEN", "200"),
        ("UCX_RC_MLX5_TX_QUEUE_LEN", "300"),
    ])
    .unwrap();
    assert_eq!(cfg.tx_queue_len, 300);

    let cfg = rc_mlx5(&[("UCX_RC_TIMEOUT", "10ms"), ("UCX_RC_MLX5_TIMEOUT", "20ms")]).unwrap();
    assert_eq!(cfg.timeout, Duration::from_millis(20));
    let cfg = rc_mlx5(&[("UCX_RC_TIMEOUT", "10ms")]).unwrap();
    assert_eq!(cfg.timeout, Duration::from_millis(10));
    // The variable without any table prefix is not an RC setting.
    let cfg = rc_mlx5(&[("UCX_TIMEOUT", "10ms")]).unwrap();
    assert_eq!(cfg.timeout, Duration::from_secs(1));

    // A uct_iface_config_table field answers to UCX_<name> as well.
    let cfg = rc_mlx5(&[("UCX_ALLOC", "heap")]).unwrap();
    assert_eq!(cfg.alloc_methods, ["heap"]);
    let cfg = rc_mlx5(&[("UCX_ALLOC", "heap"), ("UCX_IB_ALLOC", "mmap")]).unwrap();
    assert_eq!(cfg.alloc_methods, ["mmap"]);

    // mlx5-level fields: UCX_IB_ < UCX_RC_ < UCX_RC_MLX5_.
    let cfg = rc_mlx5(&[("UCX_IB_MMIO_MODE", "db"), ("UCX_RC_MMIO_MODE", "db_lock")]).unwrap();
    assert_eq!(cfg.mmio_mode, MmioMode::DbLock);
    let cfg = rc_mlx5(&[("UCX_RC_MLX5_TX_MAX_BB", "32"), ("UCX_RC_TX_MAX_BB", "16")]).unwrap();
    assert_eq!(cfg.tx_max_bb, 32);
    let cfg = rc_mlx5(&[("UCX_IB_SEND_OVERHEAD", "1us,db:2us")]).unwrap();
    assert_eq!(cfg.send_overhead.bcopy, 1e-6);
    assert_eq!(cfg.send_overhead.db, 2e-6);
}

#[test]
fn application_prefix_overrides_the_plain_ucx_names() {
    let env = MapEnv::new([
        ("UCX_RC_MLX5_TIMEOUT", "20ms"),
        ("MYAPP_UCX_RC_TIMEOUT", "30ms"),
        ("UCX_RC_RETRY_COUNT", "3"),
    ]);
    let config = Config::read(&RC_MLX5_IFACE_CONFIG, Some("MYAPP"), &env).unwrap();
    let cfg = RcMlx5IfaceConfig::from_config(&config).unwrap();
    assert_eq!(cfg.timeout, Duration::from_millis(30));
    assert_eq!(cfg.retry_count, 3, "plain UCX_ names still apply");
    // Without the application prefix its variables are not read.
    let config = Config::read(&RC_MLX5_IFACE_CONFIG, None, &env).unwrap();
    let cfg = RcMlx5IfaceConfig::from_config(&config).unwrap();
    assert_eq!(cfg.timeout, Duration::from_millis(20));
    // An empty prefix is the same as none.
    let config = Config::read(&RC_MLX5_IFACE_CONFIG, Some(""), &env).unwrap();
    assert_eq!(config.get("RC_RC_TIMEOUT").unwrap(), "20000.00us");
}

#[test]
fn bad_environment_value_fails_the_read() {
    for (name, value) in [
        ("UCX_RC_TIMEOUT", "fast"),
        ("UCX_IB_TX_QUEUE_LEN", "-5"),
        ("UCX_RC_MLX5_SEG_SIZE", "8q"),
        ("UCX_RC_FC_ENABLE", "perhaps"),
        ("UCX_IB_PATH_MTU", "1500"),
        ("UCX_RC_MLX5_FENCE", "strong"),
        ("UCX_ALLOC", "thp,malloc"),
        ("UCX_RC_TX_QUEUE_LEN", ""),
    ] {
        assert_eq!(
            rc_mlx5(&[(name, value)]).err(),
            Some(Status::InvalidParam),
            "{name}={value}"
        );
    }
    let md = Config::read(
        &IB_MD_CONFIG,
        None,
        &MapEnv::new([("UCX_IB_GID_INDEX", "x")]),
    );
    assert_eq!(md.err(), Some(Status::InvalidParam));
}

#[test]
fn deprecated_variables_are_accepted_and_ignored() {
    let cfg = rc_mlx5(&[
        ("UCX_RC_MLX5_MAX_SHORT", "128"),
        ("UCX_RC_TX_NUM_GET_OPS", "4"),
    ]);
    assert!(cfg.is_ok());
}

#[test]
fn md_variables_use_the_ib_prefix() {
    let env = MapEnv::new([("UCX_IB_GID_INDEX", "3"), ("UCX_IB_FORK_INIT", "no")]);
    let md = IbMdConfig::from_config(&Config::read(&IB_MD_CONFIG, None, &env).unwrap()).unwrap();
    assert_eq!(md.gid_index, Ulunits::Value(3));
    assert_eq!(md.fork_init, Ternary::No);
    let env = MapEnv::new([("UCX_GID_INDEX", "3")]);
    let md = IbMdConfig::from_config(&Config::read(&IB_MD_CONFIG, None, &env).unwrap()).unwrap();
    assert_eq!(md.gid_index, Ulunits::Auto);
}

#[test]
fn modify_takes_prefixed_names_and_globs() {
    let mut config = rc_mlx5_config(&[]);
    config.modify("RC_TIMEOUT", "10ms").unwrap();
    config.modify("RC_MLX5_RETRY_COUNT", "3").unwrap();
    config.modify("IB_TX_QUEUE_LEN", "64").unwrap();
    config.modify("ALLOC", "heap").unwrap();
    config.modify("IB_MMIO_MODE", "bf_post").unwrap();
    let cfg = RcMlx5IfaceConfig::from_config(&config).unwrap();
    assert_eq!(cfg.timeout, Duration::from_millis(10));
    assert_eq!(cfg.retry_count, 3);
    assert_eq!(cfg.tx_queue_len, 64);
    assert_eq!(cfg.alloc_methods, ["heap"]);
    assert_eq!(cfg.mmio_mode, MmioMode::BfPost);

    config.modify("*_QUEUE_LEN", "128").unwrap();
    let cfg = RcMlx5IfaceConfig::from_config(&config).unwrap();
    assert_eq!((cfg.tx_queue_len, cfg.rx_queue_len), (128, 128));

    // UCX needs a table prefix for fields inside prefixed tables.
    assert_eq!(config.modify("TIMEOUT", "1s"), Err(Status::NoElem));
    assert_eq!(config.modify("RC_NO_SUCH_THING", "1"), Err(Status::NoElem));
    assert_eq!(config.modify("RC_MLX5_MAX_SHORT", "1"), Err(Status::NoElem));
    assert_eq!(
        config.modify("RC_TIMEOUT", "soon"),
        Err(Status::InvalidParam)
    );
    assert_eq!(config.modify("RC_TIMEOUT", ""), Err(Status::InvalidParam));
    let cfg = RcMlx5IfaceConfig::from_config(&config).unwrap();
    assert_eq!(
        cfg.timeout,
        Duration::from_millis(10),
        "a rejected value changes nothing"
    );
}

#[test]
fn get_by_ucx_path_and_by_modify_names() {
    let mut config = rc_mlx5_config(&[]);
    assert_eq!(config.get("RC_RC_IB_TX_QUEUE_LEN").unwrap(), "256");
    assert_eq!(config.get("RC_RC_TIMEOUT").unwrap(), "1000000.00us");
    assert_eq!(config.get("RC_RC_IB_SEG_SIZE").unwrap(), "8256");
    assert_eq!(config.get("RC_RC_IB_ALLOC").unwrap(), "thp,mmap,heap");
    assert_eq!(config.get("RC_RC_IB_FAILURE").unwrap(), "DIAG");
    assert_eq!(config.get("RC_IB_MMIO_MODE").unwrap(), "auto");
    assert_eq!(config.get("RC_TX_MAX_BB").unwrap(), "inf");
    assert_eq!(config.get("RC_TIMEOUT").unwrap(), "1000000.00us");
    assert_eq!(config.get("RC_MLX5_TX_QUEUE_LEN").unwrap(), "256");
    assert_eq!(config.get("IB_TX_QUEUE_LEN").unwrap(), "256");
    assert_eq!(config.get("NOPE"), Err(Status::NoElem));
    assert_eq!(config.get(""), Err(Status::NoElem));
    assert_eq!(config.get("RC_RC_MAX_SHORT"), Err(Status::NoElem));

    config.modify("RC_MLX5_TIMEOUT", "2.5ms").unwrap();
    assert_eq!(config.get("RC_RC_TIMEOUT").unwrap(), "2500.00us");
    config.modify("IB_SEG_SIZE", "16k").unwrap();
    assert_eq!(config.get("RC_RC_IB_SEG_SIZE").unwrap(), "16K");
}

#[test]
fn print_config_only_lists_variables_under_the_table_prefix() {
    let config = rc_mlx5_config(&[]);
    let text = config.print("title", UCS_CONFIG_PRINT_CONFIG, &MapEnv::default());
    assert!(
        text.starts_with("UCX_RC_MLX5_ALLOC=thp,mmap,heap\n"),
        "{text}"
    );
    assert!(text.contains("\nUCX_RC_MLX5_TIMEOUT=1000000.00us\n"));
    assert!(text.contains("\nUCX_RC_MLX5_TX_QUEUE_LEN=256\n"));
    assert!(text.contains("\nUCX_RC_MLX5_SEG_SIZE=8256\n"));
    assert!(text.contains("\nUCX_RC_MLX5_TX_MAX_BB=inf\n"));
    assert!(text.contains("\nUCX_RC_MLX5_FC_HARD_THRESH=0.250\n"));
    assert!(!text.contains('#'));
    assert!(!text.contains("MAX_SHORT"), "deprecated fields are hidden");
    assert!(text
        .lines()
        .all(|line| line.starts_with("UCX_RC_MLX5_") && line.contains('=')));
}

#[test]
fn print_header_doc_hidden_and_comment_default() {
    let config = rc_mlx5_config(&[]);
    let header_only = config.print("RC_MLX5 title", UCS_CONFIG_PRINT_HEADER, &MapEnv::default());
    assert_eq!(header_only, "#\n# RC_MLX5 title\n#\n\n");
    assert_eq!(config.print("t", 0, &MapEnv::default()), "");

    let flags = UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HEADER | UCS_CONFIG_PRINT_DOC;
    let text = config.print("RC_MLX5 title", flags, &MapEnv::default());
    assert!(text.starts_with("#\n# RC_MLX5 title\n#\n\n#\n# "), "{text}");
    let timeout_block = "#\n\
        # Time to wait for an acknowledgement before retransmitting.\n\
        # \n\
        #\n\
        # syntax:    time value: <number>[m|s|ms|us|ns]\n\
        # inherits:  UCX_RC_TIMEOUT\n\
        #\n\
        UCX_RC_MLX5_TIMEOUT=1000000.00us\n\n";
    assert!(text.contains(timeout_block), "{text}");
    assert!(text.contains("# inherits:  UCX_RC_ALLOC, UCX_IB_ALLOC, UCX_ALLOC\n"));
    assert!(text.contains("# inherits:  UCX_RC_MMIO_MODE, UCX_IB_MMIO_MODE\n"));
    assert!(text.contains("# syntax:    [bf_post|bf_post_mt|db|db_lock|auto]\n"));
    let overhead_block = "# Estimated CPU and device costs of a send (performance model)\n\
        #  bcopy     - taking a send buffer for a copy send\n";
    assert!(text.contains(overhead_block), "{text}");
    assert!(text.contains(
        "#  wqe_post  - writing a work request\n#\n# syntax:    comma-separated list of value"
    ));
    assert!(text.contains(
        "\nUCX_RC_MLX5_SEND_OVERHEAD=bcopy:0.01us,cqe:0.02us,db:0.04us,wqe_fetch:0.35us,wqe_post:0.04us\n"
    ));

    let hidden = config.print(
        "t",
        UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HIDDEN,
        &MapEnv::default(),
    );
    assert!(
        hidden
            .lines()
            .any(|line| line == "UCX_RC_MLX5_MAX_SHORT (deprecated)"),
        "{hidden}"
    );

    let env = MapEnv::new([("UCX_RC_MLX5_TIMEOUT", "1s")]);
    let commented = config.print(
        "t",
        UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_COMMENT_DEFAULT,
        &env,
    );
    assert!(commented.contains("\nUCX_RC_MLX5_TIMEOUT=1000000.00us\n"));
    assert!(commented.contains("\n# UCX_RC_MLX5_RETRY_COUNT=7\n"));
}

#[test]
fn print_uses_the_application_prefix() {
    let config = Config::read(&IB_MD_CONFIG, Some("APP"), &MapEnv::default()).unwrap();
    let text = config.print("t", UCS_CONFIG_PRINT_CONFIG, &MapEnv::default());
    assert!(text.contains("APP_UCX_IB_GID_INDEX=auto\n"), "{text}");
}

#[test]
fn soft_hca_settings() {
    let cfg = soft_hca_config_from(&MapEnv::default()).unwrap();
    assert_eq!(cfg.mode, SoftHcaMode::Auto);
    assert_eq!(cfg.loss, 0.0);
    assert_eq!(cfg.devices.len(), 1);
    assert_eq!(cfg.devices[0].name, "mlx5_0");

    let env = MapEnv::new([
        ("UCX_SOFT_HCA", "yes"),
        ("UCX_SOFT_HCA_DEVICES", "mlx5_0@127.0.0.1,mlx5_1@127.0.0.2"),
        ("UCX_SOFT_HCA_LOSS", "0.1"),
    ]);
    let cfg = soft_hca_config_from(&env).unwrap();
    assert_eq!(cfg.mode, SoftHcaMode::Yes);
    assert_eq!(cfg.loss, 0.1);
    assert_eq!(cfg.devices[1].name, "mlx5_1");

    for (name, value) in [
        ("UCX_SOFT_HCA", "maybe"),
        ("UCX_SOFT_HCA_DEVICES", "mlx5_0"),
        ("UCX_SOFT_HCA_DEVICES", "mlx5_0@300.0.0.1"),
        ("UCX_SOFT_HCA_LOSS", "2"),
        ("UCX_SOFT_HCA_LOSS", "-0.5"),
    ] {
        let result = soft_hca_config_from(&MapEnv::new([(name, value)]));
        assert_eq!(result.err(), Some(Status::InvalidParam), "{name}={value}");
    }
}

#[test]
fn log_table_defaults() {
    let config = Config::with_defaults(&LOG_CONFIG).unwrap();
    assert_eq!(config.get("LOG_LEVEL").unwrap(), "WARN");
    assert_eq!(config.get("LOG_FILE").unwrap(), "");
    let soft = Config::with_defaults(&SOFT_HCA_CONFIG).unwrap();
    assert_eq!(soft.get("SOFT_HCA_DEVICES").unwrap(), "mlx5_0@127.0.0.1");
}

#[test]
fn misspelled_variables_are_recognised() {
    let env = MapEnv::new([
        ("UCX_RC_TIMOUT", "1s"),
        ("UCX_RC_TIMEOUT", "1s"),
        ("UCX_TLS", "rc"),
        ("UCX_NET_DEVICES", "mlx5_0:1"),
        ("UCX_SOMETHING_ELSE_ENTIRELY", "1"),
        ("OTHER_RC_TIMOUT", "1"),
    ]);
    let found = misspelled_env_vars(&env, &ALL_TABLES);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "UCX_RC_TIMOUT");
    assert!(found[0].1.contains(&"UCX_RC_TIMEOUT".to_string()));
    assert_eq!(edit_distance("kitten", "sitting"), 3);
    assert_eq!(edit_distance("", "abc"), 3);
}

#[test]
fn glob_matching_follows_fnmatch() {
    assert!(glob_match("RC_TIMEOUT", "RC_TIMEOUT"));
    assert!(!glob_match("RC_TIMEOUT", "RC_TIMEOUTS"));
    assert!(glob_match("*TIMEOUT", "RC_RNR_TIMEOUT"));
    assert!(glob_match("RC_?X_QUEUE_LEN", "RC_TX_QUEUE_LEN"));
    assert!(glob_match("RC_[RT]X_*", "RC_RX_QUEUE_LEN"));
    assert!(!glob_match("RC_[!RT]X_*", "RC_RX_QUEUE_LEN"));
    assert!(glob_match("[a-c]", "b"));
    assert!(!glob_match("[a-c]", "d"));
    assert!(glob_match("a\\*", "a*"));
    assert!(!glob_match("a\\*", "ab"));
    assert!(glob_match("[", "["));
    assert!(glob_match("*", ""));
    assert!(!glob_match("", "x"));
}

#[test]
fn glob_matching_is_not_exponential() {
    let pattern = "*a".repeat(30) + "b";
    let name = "a".repeat(60);
    let started = std::time::Instant::now();
    assert!(!glob_match(&pattern, &name));
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(glob_match("*A*B*C", "xxAyyBzzC"));
    assert!(!glob_match("*A*B*C", "xxAyyBzzCd"));
}

#[test]
fn iface_checks_match_ucx_iface_init() {
    let mut cfg = RcMlx5IfaceConfig::defaults().unwrap();
    assert_eq!(cfg, rc_mlx5(&[]).unwrap());
    assert_eq!(cfg.check(), Ok(()));

    let mut cfg = rc_mlx5(&[
        ("UCX_RC_RETRY_COUNT", "20"),
        ("UCX_RC_RNR_RETRY_COUNT", "8"),
    ])
    .unwrap();
    assert_eq!(cfg.check(), Ok(()));
    assert_eq!(
        (cfg.retry_count, cfg.rnr_retry_count),
        (7, 7),
        "lowered to the QP maximum"
    );

    for env in [
        [("UCX_RC_FC_HARD_THRESH", "0")],
        [("UCX_RC_FC_HARD_THRESH", "1")],
        [("UCX_RC_FC_HARD_THRESH", "0.6")],
        [("UCX_RC_FC_SOFT_THRESH", "1.0")],
        [("UCX_RC_FC_SOFT_THRESH", "0.2")],
        [("UCX_IB_PKEY", "0x8000")],
    ] {
        let mut cfg = rc_mlx5(&env).unwrap();
        assert_eq!(cfg.check(), Err(Status::InvalidParam), "{env:?}");
    }
    let mut cfg = rc_mlx5(&[("UCX_IB_PKEY", "0x7fff")]).unwrap();
    assert_eq!(cfg.check(), Ok(()));
}

#[test]
fn the_connection_manager_timeout_is_applied_from_rdma_cm_timeout() {
    use uct::cm::config::{CmSettings, CM_CONFIG};
    let settings = |env: &[(&str, &str)]| {
        let config = Config::read(&CM_CONFIG, None, &MapEnv::new(env.iter().copied()))?;
        CmSettings::from_config(&config)
    };
    assert_eq!(
        settings(&[]).unwrap().handshake_timeout,
        Duration::from_secs(10),
        "UCX's default"
    );
    assert_eq!(
        settings(&[("UCX_RDMA_CM_TIMEOUT", "250ms")])
            .unwrap()
            .handshake_timeout,
        Duration::from_millis(250)
    );
    assert_eq!(
        settings(&[("UCX_RDMA_CM_TIMEOUT", "soon")]).err(),
        Some(Status::InvalidParam)
    );
}
