//! Every configuration key of UCX 1.13's rc_mlx5 interface and ib memory
//! domain tables (tests/data/ucx-1.13-config-keys.txt, listed from UCX's
//! source by scripts/ucx-config-keys.py) is ours too: `uct_config_modify`
//! takes it under UCX's name with UCX's default, our default is the same
//! value, `uct_config_get` reads it, the environment sets it, and
//! `uct_config_print` lists it with a description.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::null_mut;

use uct::abi::ucs_config::{UCS_CONFIG_PRINT_CONFIG, UCS_CONFIG_PRINT_DOC};
use uct::abi::ucs_status::UCS_OK;
use uct::abi::uct_def::{uct_iface_config_t, uct_md_config_t, uct_md_h};
use uct::api::config::{
    uct_config_get, uct_config_modify, uct_config_release, uct_md_config_read,
    uct_md_iface_config_read,
};
use uct::core::config::{Config, ConfigTable, MapEnv};
use uct::ib::component::IB_COMPONENT;
use uct::ib::config::IB_MD_CONFIG;
use uct::rc::config::RC_MLX5_IFACE_CONFIG;

/// One key of UCX's tables.
struct UcxKey {
    /// `iface` or `md`.
    table: &'static str,
    name: &'static str,
    ucx_type: &'static str,
    default: &'static str,
}

impl UcxKey {
    fn ours(&self) -> &'static ConfigTable {
        match self.table {
            "iface" => &RC_MLX5_IFACE_CONFIG,
            _ => &IB_MD_CONFIG,
        }
    }

    /// The name `uct_config_modify` takes in UCX: relative to the table,
    /// so under rc_mlx5's nesting of `RC_` tables, bare in the md table.
    fn ucx_modify_name(&self) -> String {
        match self.table {
            "iface" => format!("RC_{}", self.name),
            _ => self.name.to_string(),
        }
    }

    /// The environment variable, as `ucx_info -c` prints it.
    fn variable(&self) -> String {
        match self.table {
            "iface" => format!("UCX_RC_MLX5_{}", self.name),
            _ => format!("UCX_IB_{}", self.name),
        }
    }
}

fn ucx_keys() -> Vec<UcxKey> {
    let keys: Vec<UcxKey> = include_str!("data/ucx-1.13-config-keys.txt")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!(fields.len(), 4, "bad line {line:?}");
            UcxKey {
                table: fields[0],
                name: fields[1],
                ucx_type: fields[2],
                default: if fields[3] == "-" { "" } else { fields[3] },
            }
        })
        .collect();
    assert!(keys.len() > 90, "the list is UCX 1.13's whole tables");
    keys
}

/// Defaults UCX master changed since 1.13, which ours follow (both read
/// back as UCX 1.13 writes them when set).
const MASTER_DEFAULTS: &[(&str, &str)] = &[
    ("UCX_RC_MLX5_ALLOC", "thp,mmap,heap"),
    ("UCX_RC_MLX5_SRQ_TOPO", "cyclic,cyclic_emulated,list"),
];

#[test]
fn every_ucx_key_is_modified_under_its_ucx_name_with_ucx_default_and_read_back() {
    let mut missing = Vec::new();
    for key in ucx_keys() {
        let mut config = Config::with_defaults(key.ours()).unwrap();
        let own = key.variable().trim_start_matches("UCX_").to_string();
        let Ok(ours_default) = config.get(&own) else {
            missing.push(format!("{} (get {own})", key.variable()));
            continue;
        };
        if config.modify(&key.ucx_modify_name(), key.default).is_err() {
            missing.push(format!(
                "{} (modify {} = '{}', UCX type {})",
                key.variable(),
                key.ucx_modify_name(),
                key.default,
                key.ucx_type
            ));
            continue;
        }
        let after = config.get(&own).unwrap();
        let master_default = MASTER_DEFAULTS
            .iter()
            .find(|(name, _)| *name == key.variable())
            .map(|(_, default)| *default);
        if master_default.is_some_and(|default| default == ours_default) {
            continue;
        }
        if after != ours_default {
            missing.push(format!(
                "{}: our default '{ours_default}' is not UCX's '{}' (reads back '{after}')",
                key.variable(),
                key.default
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "keys missing or different:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_ucx_key_is_read_from_the_environment() {
    for key in ucx_keys() {
        let env = MapEnv::new([(key.variable().as_str(), key.default)]);
        let read = Config::read(key.ours(), None, &env);
        assert!(read.is_ok(), "{}='{}' refused", key.variable(), key.default);
        let known = read.unwrap().variable_names();
        assert!(
            known.contains(&key.variable()),
            "{} is not one of ours",
            key.variable()
        );
    }
}

#[test]
fn every_ucx_key_is_printed_with_a_description() {
    let flags = UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_DOC;
    let iface = Config::with_defaults(&RC_MLX5_IFACE_CONFIG).unwrap().print(
        "rc_mlx5",
        flags,
        &MapEnv::default(),
    );
    let md = Config::with_defaults(&IB_MD_CONFIG)
        .unwrap()
        .print("ib", flags, &MapEnv::default());
    for key in ucx_keys() {
        let text = if key.table == "iface" { &iface } else { &md };
        let assignment = format!("\n{}=", key.variable());
        let at = text
            .find(&assignment)
            .unwrap_or_else(|| panic!("{} not printed", key.variable()));
        // Each printed variable follows its "# syntax:" block, whose
        // description lines come first.
        let block_start = text[..at].rfind("\n\n").map_or(0, |i| i + 2);
        let block = &text[block_start..at];
        let described = block
            .lines()
            .any(|line| line.len() > 2 && line.starts_with("# ") && !line.contains("syntax:"));
        assert!(
            described,
            "{} printed without a description:\n{block}",
            key.variable()
        );
    }
}

fn c(text: &str) -> CString {
    CString::new(text).unwrap()
}

/// Through the C entry points, as UCX's gtest calls them: `uct_config_modify`
/// with UCX's name and default, then `uct_config_get` of the same name.
#[test]
fn every_ucx_key_goes_through_the_c_api() {
    let mut md_config: *mut uct_md_config_t = null_mut();
    let mut iface_config: *mut uct_iface_config_t = null_mut();
    let tl = c("rc_mlx5");
    // SAFETY: valid component, strings and out pointers; the md handle is
    // only checked for NULL (never dereferenced) by uct_md_iface_config_read.
    unsafe {
        assert_eq!(
            uct_md_config_read(
                IB_COMPONENT.handle(),
                std::ptr::null(),
                std::ptr::null(),
                &mut md_config
            ),
            UCS_OK
        );
        let some_md: uct_md_h = std::ptr::NonNull::<u8>::dangling().as_ptr().cast();
        assert_eq!(
            uct_md_iface_config_read(
                some_md,
                tl.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                &mut iface_config
            ),
            UCS_OK
        );
    }
    for key in ucx_keys() {
        let config: *mut c_void = match key.table {
            "iface" => iface_config.cast(),
            _ => md_config.cast(),
        };
        let (name, value) = (c(&key.ucx_modify_name()), c(key.default));
        // SAFETY: a config from uct_*_config_read; NUL-terminated strings.
        let status = unsafe { uct_config_modify(config, name.as_ptr(), value.as_ptr()) };
        assert_eq!(status, UCS_OK, "uct_config_modify({:?}, {:?})", name, value);
        let mut buffer = [0 as c_char; 256];
        // SAFETY: as above; the buffer is writable for its length.
        let status =
            unsafe { uct_config_get(config, name.as_ptr(), buffer.as_mut_ptr(), buffer.len()) };
        assert_eq!(status, UCS_OK, "uct_config_get({name:?})");
        // SAFETY: uct_config_get NUL-terminates inside the buffer.
        let text = unsafe { CStr::from_ptr(buffer.as_ptr()) };
        assert!(
            key.default.is_empty() || !text.is_empty(),
            "{name:?} reads back empty"
        );
    }
    // SAFETY: configs from uct_*_config_read, released once.
    unsafe {
        uct_config_release(md_config.cast());
        uct_config_release(iface_config.cast());
    }
}
