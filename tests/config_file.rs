//! `ucx.conf` files: syntax, section filters, search order and precedence
//! below the environment (the latter in a child process with its own HOME,
//! UCX_CONFIG_DIR and working directory).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use uct::core::config::file::{load_config_files, parse_config_text, CONFIG_FILE_NAME};
use uct::rc::config::{read_iface_config, RcMlx5IfaceConfig};

const CHILD_MARKER: &str = "UCT_CONFIG_FILE_CHILD";

fn pairs(text: &str) -> Vec<(String, String)> {
    parse_config_text(text)
}

#[test]
fn file_syntax() {
    let text = "\u{feff}# comment\n\
                ; another comment\n\
                UCX_RC_TIMEOUT = 10ms\n\
                UCX_IB_TX_QUEUE_LEN: 64 ; inline comment\n\
                UCX_TLS=rc;no-space-is-not-a-comment\n\
                garbage line\n\
                \n\
                [anything]\n\
                UCX_RC_RETRY_COUNT=3\n\
                [only on some CPUs]\n\
                CPU vendor = Intel\n\
                UCX_RC_RETRY_COUNT=5\n\
                [next]\n\
                UCX_RC_FC_ENABLE=n\n";
    let expected = [
        ("UCX_RC_TIMEOUT", "10ms"),
        ("UCX_IB_TX_QUEUE_LEN", "64"),
        ("UCX_TLS", "rc;no-space-is-not-a-comment"),
        ("UCX_RC_RETRY_COUNT", "3"),
        ("UCX_RC_FC_ENABLE", "n"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert_eq!(pairs(text), expected);
}

fn scratch_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("uct-conf-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn later_directories_override_earlier_ones() {
    let home = scratch_dir("home");
    let custom = scratch_dir("custom");
    std::fs::write(home.join(CONFIG_FILE_NAME), "A=home\nB=home\n").unwrap();
    std::fs::write(custom.join(CONFIG_FILE_NAME), "B=custom\nC=custom\n").unwrap();
    let missing = home.join("no-such-dir");
    let vars = load_config_files(&[home.clone(), missing, custom.clone()]);
    assert_eq!(vars.get("A").map(String::as_str), Some("home"));
    assert_eq!(vars.get("B").map(String::as_str), Some("custom"));
    assert_eq!(vars.get("C").map(String::as_str), Some("custom"));
    std::fs::remove_dir_all(home).unwrap();
    std::fs::remove_dir_all(custom).unwrap();
}

#[test]
fn files_apply_below_the_environment() {
    if std::env::var_os(CHILD_MARKER).is_none() {
        let home = scratch_dir("child-home");
        let custom = scratch_dir("child-custom");
        let cwd = scratch_dir("child-cwd");
        std::fs::write(
            home.join(CONFIG_FILE_NAME),
            "UCX_RC_TIMEOUT=10ms\nUCX_RC_RETRY_COUNT=1\nUCX_IB_TX_QUEUE_LEN=32\n",
        )
        .unwrap();
        std::fs::write(custom.join(CONFIG_FILE_NAME), "UCX_RC_RETRY_COUNT=2\n").unwrap();
        std::fs::write(cwd.join(CONFIG_FILE_NAME), "UCX_RC_FC_WND_SIZE=64\n").unwrap();
        let exe = std::env::current_exe().unwrap();
        let output = Command::new(exe)
            .args([
                "files_apply_below_the_environment",
                "--exact",
                "--nocapture",
            ])
            .current_dir(&cwd)
            .env(CHILD_MARKER, "1")
            .env("HOME", &home)
            .env("UCX_CONFIG_DIR", &custom)
            .env("UCX_IB_TX_QUEUE_LEN", "48")
            .output()
            .unwrap();
        for dir in [home, custom, cwd] {
            std::fs::remove_dir_all(dir).unwrap();
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{stdout}");
        assert!(stdout.contains("1 passed"), "{stdout}");
        return;
    }
    let config = read_iface_config("rc_mlx5", None).unwrap();
    let cfg = RcMlx5IfaceConfig::from_config(&config).unwrap();
    assert_eq!(
        cfg.timeout,
        Duration::from_millis(10),
        "from $HOME/ucx.conf"
    );
    assert_eq!(cfg.retry_count, 2, "UCX_CONFIG_DIR overrides HOME");
    assert_eq!(cfg.fc_wnd_size, 64, "from ./ucx.conf");
    assert_eq!(cfg.tx_queue_len, 48, "the environment overrides files");
}
