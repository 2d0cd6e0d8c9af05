//! A warning for `UCX_*` variables that look like a misspelling of one of
//! ours (UCX warns about every unused variable; we only see the UCT part of
//! the configuration, so we warn only where a near-identical name exists).

use std::sync::Once;

use super::env::Env;
use super::table::{Config, ConfigTable, DEFAULT_ENV_PREFIX};
use super::value::parse_bool;

/// Variables of other UCX layers (UCS, UCP) that must not be mistaken for
/// misspellings of ours.
const OTHER_LAYER_NAMES: &[&str] = &[
    "UCX_TLS",
    "UCX_NET_DEVICES",
    "UCX_SHM_DEVICES",
    "UCX_ACC_DEVICES",
    "UCX_SELF_DEVICES",
    "UCX_HANDLE_ERRORS",
    "UCX_ERROR_SIGNALS",
    "UCX_LOG_LEVEL_TRIGGER",
    "UCX_LOG_FILE_SIZE",
    "UCX_LOG_BUFFER",
    "UCX_MEMTYPE_CACHE",
    "UCX_RNDV_THRESH",
    "UCX_ZCOPY_THRESH",
    "UCX_PROTO_ENABLE",
    "UCX_CONFIG_DIR",
];

/// Every variable name `tables` read.
pub fn known_variable_names(tables: &[&'static ConfigTable]) -> Vec<String> {
    let mut names: Vec<String> = tables
        .iter()
        .filter_map(|table| Config::with_defaults(table).ok())
        .flat_map(|config| config.variable_names())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `UCX_*` names in `env` that no table of `tables` reads but close to one
/// they read, each with its likely intended names.
pub fn misspelled_env_vars(
    env: &dyn Env,
    tables: &[&'static ConfigTable],
) -> Vec<(String, Vec<String>)> {
    let known = known_variable_names(tables);
    let mut found: Vec<(String, Vec<String>)> = env
        .names_with_prefix(DEFAULT_ENV_PREFIX)
        .into_iter()
        .filter(|name| !known.contains(name) && !OTHER_LAYER_NAMES.contains(&name.as_str()))
        .filter_map(|name| {
            let limit = if name.len() < 12 { 1 } else { 3 };
            let close: Vec<String> = known
                .iter()
                .filter(|candidate| edit_distance(&name, candidate) <= limit)
                .cloned()
                .collect();
            (!close.is_empty()).then_some((name, close))
        })
        .collect();
    found.sort();
    found
}

/// Logs [`misspelled_env_vars`] once per process, unless
/// `UCX_WARN_UNUSED_ENV_VARS=n`.
pub fn warn_misspelled_env_vars_once(env: &dyn Env, tables: &[&'static ConfigTable]) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let enabled = env
            .get("UCX_WARN_UNUSED_ENV_VARS")
            .and_then(|text| parse_bool(&text))
            .unwrap_or(true);
        if !enabled {
            return;
        }
        let found = misspelled_env_vars(env, tables);
        if found.is_empty() {
            return;
        }
        let list: Vec<String> = found
            .iter()
            .map(|(name, close)| format!("{name} (maybe: {}?)", close.join(", ")))
            .collect();
        tracing::warn!(
            "unused environment variable{}: {} (set UCX_WARN_UNUSED_ENV_VARS=n to suppress this warning)",
            if found.len() > 1 { "s" } else { "" },
            list.join("; ")
        );
    });
}

/// Levenshtein distance.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}
