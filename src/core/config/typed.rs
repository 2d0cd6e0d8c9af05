//! Typed reads of a filled configuration, for the typed settings structs of
//! the tables' owners (ib md, rc_mlx5 iface, soft HCA). Each struct is built
//! from a [`Config`] of its table, so values set through the environment,
//! `uct_config_modify` or defaults all arrive the same way.

use std::time::Duration;

use super::table::Config;
use super::value::{MemUnits, Ternary, Ulunits, Value};
use crate::abi::ucs_status::Status;

/// Typed reads of a [`Config`] by UCX path; a type mismatch is an internal
/// error (tables and structs disagree) and is reported, not panicked on.
pub struct Reader<'a>(pub &'a Config);

impl Reader<'_> {
    pub fn mismatch<T>(&self, path: &str) -> Result<T, Status> {
        tracing::error!(
            "configuration field {path} of {} has an unexpected type",
            self.0.table().name
        );
        Err(Status::InvalidParam)
    }

    pub fn duration(&self, path: &str) -> Result<Duration, Status> {
        match self.0.value(path)? {
            Value::Time(seconds) => {
                Duration::try_from_secs_f64(*seconds).or_else(|_| self.mismatch(path))
            }
            _ => self.mismatch(path),
        }
    }

    pub fn enum_names(
        &self,
        path: &str,
        names: &[&'static str],
    ) -> Result<Vec<&'static str>, Status> {
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
                pub fn $name(&self, path: &str) -> Result<$ty, Status> {
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
