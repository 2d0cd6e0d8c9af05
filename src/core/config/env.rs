//! Where configuration text comes from: the process environment, or a map
//! (tests, and callers that want to read a table without touching the
//! process-wide environment).

use std::collections::HashMap;

/// A source of `UCX_*` variables.
pub trait Env {
    /// The value of `name`, if set.
    fn get(&self, name: &str) -> Option<String>;
    /// Every variable name that starts with `prefix`.
    fn names_with_prefix(&self, prefix: &str) -> Vec<String>;
}

/// The process environment, backed by UCX's `ucx.conf` files (the
/// environment wins). Values that are not UTF-8 are treated as unset (no
/// valid UCX value needs anything else).
#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name)
            .ok()
            .or_else(|| super::file::config_file_vars().get(name).cloned())
    }

    fn names_with_prefix(&self, prefix: &str) -> Vec<String> {
        std::env::vars_os()
            .filter_map(|(name, _)| name.into_string().ok())
            .filter(|name| name.starts_with(prefix))
            .collect()
    }
}

/// A fixed set of variables.
#[derive(Debug, Default, Clone)]
pub struct MapEnv(pub HashMap<String, String>);

impl MapEnv {
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> MapEnv {
        MapEnv(
            pairs
                .into_iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
        )
    }
}

impl Env for MapEnv {
    fn get(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }

    fn names_with_prefix(&self, prefix: &str) -> Vec<String> {
        self.0
            .keys()
            .filter(|name| name.starts_with(prefix))
            .cloned()
            .collect()
    }
}
