//! Value types of `UCX_*` configuration variables: how each one is parsed
//! from text, printed back, and described in `uct_config_print`'s
//! `syntax:` line.
//!
//! The accepted spellings and the printed forms follow UCX's parser (a
//! configuration written for UCX means the same here, and printed values read
//! the same). Where UCX's `sscanf` would silently ignore trailing garbage
//! (`10msx`, `8kq`), we reject it: a typo should not change a setting.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Spelling of "no limit" in every numeric type that has one.
pub const INF_STR: &str = "inf";
/// Spelling of "let the library decide".
pub const AUTO_STR: &str = "auto";

/// UCX's log level names, in `ucs_log_level_t` order (index = level value).
pub const LOG_LEVEL_NAMES: &[&str] = &[
    "FATAL", "ERROR", "WARN", "DIAG", "INFO", "DEBUG", "TRACE", "REQ", "DATA", "ASYNC", "FUNC",
    "POLL",
];

/// A yes / no / try / auto setting; discriminants are UCX's `ucs_ternary_auto_value_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ternary {
    No = 0,
    Yes = 1,
    Try = 2,
    Auto = 3,
}

/// An unsigned long that may also be `inf` or `auto` (UCX "ulunits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ulunits {
    Value(u64),
    Inf,
    Auto,
}

/// A byte count that may also be `inf` or `auto` (UCX "memunits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemUnits {
    Bytes(u64),
    Inf,
    Auto,
}

impl MemUnits {
    /// The byte count, `auto_value` for `auto`, and `u64::MAX` for `inf`.
    pub fn bytes_or(self, auto_value: u64) -> u64 {
        match self {
            MemUnits::Bytes(bytes) => bytes,
            MemUnits::Inf => u64::MAX,
            MemUnits::Auto => auto_value,
        }
    }
}

/// A time that may also be `inf` or `auto` (UCX "time units").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnits {
    Time(Duration),
    Inf,
    Auto,
}

/// One soft HCA device: its MD name and the IPv4 address its link binds to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoftDeviceSpec {
    pub name: String,
    pub ipv4: Ipv4Addr,
}

/// Longest device name that fits UCX's `md_name[UCT_MD_NAME_MAX]` with its NUL.
pub const MAX_DEVICE_NAME_LEN: usize = 15;

/// The type of a configuration field: decides parsing, printing and syntax.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Any text.
    String,
    /// `int` (UCX tables write "no limit" as `-1`).
    Int,
    /// `unsigned`; `inf` is `u32::MAX`, and so is `-1` (UCX tables use it as "no limit").
    Uint,
    /// `unsigned long`.
    Ulong,
    /// `unsigned long` or `inf` / `auto`.
    Ulunits,
    /// Any finite floating point number.
    Double,
    /// A positive floating point number or `auto`.
    PosDouble,
    /// A floating point number from 0 to 1 (ours: loss ratios).
    Fraction,
    /// `0x`-prefixed hexadecimal number or `auto`.
    Hex,
    /// `y`/`n` and their synonyms.
    Bool,
    /// `yes`/`no`/`try`.
    Ternary,
    /// `yes`/`no`/`try`/`auto`.
    TernaryAuto,
    /// One name from the list (case-insensitive).
    Enum(&'static [&'static str]),
    /// A time; stored as seconds.
    Time,
    /// A time, `inf` or `auto`.
    TimeUnits,
    /// A byte count with an optional `k`/`m`/`g`/`t` suffix, `inf` or `auto`.
    MemUnits,
    /// Comma separated strings.
    StringArray,
    /// Comma separated names from the list.
    EnumArray(&'static [&'static str]),
    /// A set of names from the list, comma separated; printed in list order.
    Bitmap(&'static [&'static str]),
    /// Comma separated number ranges: `<first>-<last>` or one number.
    RangeArray,
    /// Comma separated `<device>:<bandwidth>` entries (bandwidth as UCX
    /// writes it: `<number>[T|G|M|K]B|b[[p|/]s]`, or `auto`).
    BandwidthArray,
    /// Comma separated `name@ipv4` soft HCA devices.
    SoftDevices,
    /// One time per key: `value` (all keys), `key:value`, or both
    /// (`5ns,db:40ns`); the list holds each key and its description.
    KeyedTimes(&'static [(&'static str, &'static str)]),
}

/// A parsed configuration value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i32),
    Uint(u32),
    Ulong(u64),
    Ulunits(Ulunits),
    Double(f64),
    /// `None` is `auto`.
    PosDouble(Option<f64>),
    /// `None` is `auto`.
    Hex(Option<u32>),
    Bool(bool),
    Ternary(Ternary),
    /// Index into the kind's name list.
    Enum(usize),
    /// Seconds.
    Time(f64),
    TimeUnits(TimeUnits),
    Mem(MemUnits),
    StrList(Vec<String>),
    EnumList(Vec<usize>),
    /// Inclusive ranges.
    Ranges(Vec<(u32, u32)>),
    Devices(Vec<SoftDeviceSpec>),
    /// Seconds per key, in the kind's key order.
    KeyedTimes(Vec<f64>),
}

impl Kind {
    /// Parses `text`; `None` when it is not a valid spelling of this type.
    pub fn parse(self, text: &str) -> Option<Value> {
        Some(match self {
            Kind::String => Value::Str(text.to_string()),
            Kind::Int => Value::Int(text.trim().parse().ok()?),
            Kind::Uint => Value::Uint(parse_uint(text)?),
            Kind::Ulong => Value::Ulong(parse_decimal_u64(text)?),
            Kind::Ulunits => Value::Ulunits(parse_ulunits(text)?),
            Kind::Double => Value::Double(parse_double(text)?),
            Kind::PosDouble => Value::PosDouble(parse_pos_double(text)?),
            Kind::Fraction => {
                Value::Double(parse_double(text).filter(|v| (0.0..=1.0).contains(v))?)
            }
            Kind::Hex => Value::Hex(parse_hex(text)?),
            Kind::Bool => Value::Bool(parse_bool(text)?),
            Kind::Ternary => Value::Ternary(parse_ternary(text)?),
            Kind::TernaryAuto => Value::Ternary(parse_ternary_auto(text)?),
            Kind::Enum(names) => Value::Enum(parse_enum(text, names)?),
            Kind::Time => Value::Time(parse_time_seconds(text)?),
            Kind::TimeUnits => Value::TimeUnits(parse_time_units(text)?),
            Kind::MemUnits => Value::Mem(parse_memunits(text)?),
            Kind::StringArray => Value::StrList(list_items(text).map(str::to_string).collect()),
            Kind::EnumArray(names) => Value::EnumList(
                list_items(text)
                    .map(|item| parse_enum(item, names))
                    .collect::<Option<Vec<_>>>()?,
            ),
            Kind::Bitmap(names) => {
                let mut indexes = list_items(text)
                    .map(|item| parse_enum(item, names))
                    .collect::<Option<Vec<_>>>()?;
                indexes.sort_unstable();
                indexes.dedup();
                Value::EnumList(indexes)
            }
            Kind::RangeArray => Value::Ranges(
                list_items(text)
                    .map(parse_range)
                    .collect::<Option<Vec<_>>>()?,
            ),
            Kind::BandwidthArray => Value::StrList(
                list_items(text)
                    .map(|item| {
                        let (device, bandwidth) = item.split_once(':')?;
                        parse_bandwidth(bandwidth)?;
                        Some(format!("{device}:{bandwidth}"))
                    })
                    .collect::<Option<Vec<_>>>()?,
            ),
            Kind::SoftDevices => Value::Devices(parse_soft_devices(text).ok()?),
            Kind::KeyedTimes(keys) => Value::KeyedTimes(parse_keyed_times(text, keys)?),
        })
    }

    /// The `syntax:` description UCX prints for this type.
    pub fn syntax(self) -> String {
        match self {
            Kind::String => "string".into(),
            Kind::Int => "integer".into(),
            Kind::Uint => "unsigned integer".into(),
            Kind::Ulong => "unsigned long".into(),
            Kind::Ulunits => "unsigned long: <number>, \"inf\", or \"auto\"".into(),
            Kind::Double => "floating point number".into(),
            Kind::PosDouble => "positive floating point number or \"auto\"".into(),
            Kind::Fraction => "floating point number from 0 to 1".into(),
            Kind::Hex => "hex representation of a number or \"auto\"".into(),
            Kind::Bool => "<y|n>".into(),
            Kind::Ternary => "<yes|no|try>".into(),
            Kind::TernaryAuto => "<yes|no|try|auto>".into(),
            Kind::Enum(names) => enum_syntax(names),
            Kind::Time => "time value: <number>[m|s|ms|us|ns]".into(),
            Kind::TimeUnits => "time value: <number>[m|s|ms|us|ns], \"inf\", or \"auto\"".into(),
            Kind::MemUnits => "memory units: <number>[b|kb|mb|gb], \"inf\", or \"auto\"".into(),
            Kind::StringArray => "comma-separated list of: string".into(),
            Kind::EnumArray(names) | Kind::Bitmap(names) => {
                format!("comma-separated list of: {}", enum_syntax(names))
            }
            Kind::RangeArray => "comma-separated list of: numbers range: <number>-<number>".into(),
            Kind::BandwidthArray => {
                "comma-separated list of: device_name:<number>[T|G|M|K]B|b[[p|/]s] \
                                     or device_name:auto"
                    .into()
            }
            Kind::SoftDevices => "comma-separated list of: <name>@<ipv4 address>".into(),
            Kind::KeyedTimes(keys) => format!(
                "comma-separated list of value or key:value pairs, where key is one of [{}] \
                 and value is: {}. A value without a key is the default.",
                keys.iter()
                    .map(|(key, _)| *key)
                    .collect::<Vec<_>>()
                    .join(","),
                Kind::Time.syntax()
            ),
        }
    }

    /// Lines UCX appends to a field's description for this type (the keys
    /// of a keyed value); empty for the others.
    pub fn extra_doc(self) -> String {
        match self {
            Kind::KeyedTimes(keys) => keys
                .iter()
                .map(|(key, doc)| format!(" {key:<10}- {doc}"))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }

    /// Prints `value` the way UCX prints a value of this type. A value of
    /// another type (a programming error) prints as `?`.
    pub fn format(self, value: &Value) -> String {
        match (self, value) {
            (_, Value::Str(text)) => text.clone(),
            (_, Value::Int(v)) => v.to_string(),
            (_, Value::Uint(v)) => format_uint(*v),
            (_, Value::Ulong(v)) => v.to_string(),
            (_, Value::Ulunits(v)) => format_ulunits(*v),
            (_, Value::Double(v)) => format!("{v:.3}"),
            (_, Value::PosDouble(None)) => AUTO_STR.into(),
            (_, Value::PosDouble(Some(v))) => format!("{v:.3}"),
            (_, Value::Hex(None)) => AUTO_STR.into(),
            (_, Value::Hex(Some(v))) => format!("0x{v:x}"),
            (_, Value::Bool(v)) => format_bool(*v).into(),
            (_, Value::Ternary(v)) => format_ternary(*v).into(),
            (Kind::Enum(names), Value::Enum(index)) => {
                names.get(*index).copied().unwrap_or("?").to_string()
            }
            (_, Value::Time(seconds)) => format_time_seconds(*seconds),
            (_, Value::TimeUnits(v)) => format_time_units(*v),
            (_, Value::Mem(v)) => format_memunits(*v),
            (_, Value::StrList(items)) => items.join(","),
            (_, Value::Ranges(ranges)) => ranges
                .iter()
                .map(|&(first, last)| match first == last {
                    true => first.to_string(),
                    false => format!("{first}-{last}"),
                })
                .collect::<Vec<_>>()
                .join(","),
            (Kind::EnumArray(names) | Kind::Bitmap(names), Value::EnumList(indexes)) => indexes
                .iter()
                .map(|i| names.get(*i).copied().unwrap_or("?"))
                .collect::<Vec<_>>()
                .join(","),
            (Kind::KeyedTimes(keys), Value::KeyedTimes(times)) => keys
                .iter()
                .zip(times)
                .map(|((key, _), seconds)| format!("{key}:{}", format_time_seconds(*seconds)))
                .collect::<Vec<_>>()
                .join(","),
            (_, Value::Devices(devices)) => devices
                .iter()
                .map(|d| format!("{}@{}", d.name, d.ipv4))
                .collect::<Vec<_>>()
                .join(","),
            _ => "?".into(),
        }
    }
}

/// `[a|b|c]`, UCX's way of listing enum names.
fn enum_syntax(names: &[&str]) -> String {
    format!("[{}]", names.join("|"))
}

/// Comma separated items; empty items (`a,,b`, a trailing comma) are skipped
/// as UCX's tokenizer does.
fn list_items(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').filter(|item| !item.is_empty())
}

/// `<first>-<last>` (first not above last) or one number.
fn parse_range(text: &str) -> Option<(u32, u32)> {
    let (first, last) = text.split_once('-').unwrap_or((text, text));
    let first = u32::try_from(parse_decimal_u64(first)?).ok()?;
    let last = u32::try_from(parse_decimal_u64(last)?).ok()?;
    (first <= last).then_some((first, last))
}

/// A bandwidth in bytes per second: `auto` (`None`), or a number, an
/// optional `K`/`M`/`G`/`T` multiplier, `B` (bytes) or `b` (bits), and an
/// `s`, `ps` or `/s`.
pub fn parse_bandwidth(text: &str) -> Option<Option<f64>> {
    let text = text.trim();
    if text.eq_ignore_ascii_case(AUTO_STR) {
        return Some(None);
    }
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(number_end);
    let number = parse_double(number)?;
    let (multiplier, unit) = match unit.chars().next()? {
        'K' | 'k' => (1024.0, &unit[1..]),
        'M' | 'm' => (1024.0 * 1024.0, &unit[1..]),
        'G' | 'g' => (1024.0 * 1024.0 * 1024.0, &unit[1..]),
        'T' | 't' => (1024.0 * 1024.0 * 1024.0 * 1024.0, &unit[1..]),
        _ => (1.0, unit),
    };
    let (divider, per) = match unit.split_at_checked(1)? {
        ("B", per) => (1.0, per),
        ("b", per) => (8.0, per),
        _ => return None,
    };
    matches!(per, "s" | "ps" | "/s").then_some(Some(number * multiplier / divider))
}

/// Decimal digits only (optionally surrounded by blanks); overflow rejected.
pub fn parse_decimal_u64(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `unsigned`: decimal, `inf` (= `u32::MAX`), or `-1` (= `u32::MAX`, the
/// "no limit" UCX's own tables write as a default).
pub fn parse_uint(text: &str) -> Option<u32> {
    let trimmed = text.trim();
    if trimmed.eq_ignore_ascii_case(INF_STR) || trimmed == "-1" {
        return Some(u32::MAX);
    }
    u32::try_from(parse_decimal_u64(trimmed)?).ok()
}

/// `unsigned` as UCX prints it: `inf` for `u32::MAX`.
pub fn format_uint(value: u32) -> String {
    if value == u32::MAX {
        INF_STR.into()
    } else {
        value.to_string()
    }
}

pub fn parse_ulunits(text: &str) -> Option<Ulunits> {
    let trimmed = text.trim();
    if trimmed.eq_ignore_ascii_case(AUTO_STR) {
        Some(Ulunits::Auto)
    } else if trimmed.eq_ignore_ascii_case(INF_STR) {
        Some(Ulunits::Inf)
    } else {
        parse_decimal_u64(trimmed).map(Ulunits::Value)
    }
}

pub fn format_ulunits(value: Ulunits) -> String {
    match value {
        Ulunits::Value(v) => v.to_string(),
        Ulunits::Inf => INF_STR.into(),
        Ulunits::Auto => AUTO_STR.into(),
    }
}

/// A finite decimal floating point number (`1`, `1.5`, `.5`, `1e-3`, `-2`);
/// `nan`, `inf` and text are rejected.
pub fn parse_double(text: &str) -> Option<f64> {
    let text = text.trim();
    // f64's parser also takes "inf"/"nan"/"infinity": only digits, sign,
    // point and exponent are a number here.
    let numeric = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'));
    if !numeric {
        return None;
    }
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// `auto` (`None`) or a number greater than zero.
pub fn parse_pos_double(text: &str) -> Option<Option<f64>> {
    if text.trim().eq_ignore_ascii_case(AUTO_STR) {
        return Some(None);
    }
    parse_double(text).filter(|v| *v > 0.0).map(Some)
}

/// `auto` (`None`) or `0x` followed by hex digits that fit 32 bits.
pub fn parse_hex(text: &str) -> Option<Option<u32>> {
    let text = text.trim();
    if text.eq_ignore_ascii_case(AUTO_STR) {
        return Some(None);
    }
    let digits = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok().map(Some)
}

/// `y`/`yes`/`n`/`no` in any case, `on`/`off`/`1`/`0` exactly (as UCX).
pub fn parse_bool(text: &str) -> Option<bool> {
    let yes = ["y", "yes"].iter().any(|s| text.eq_ignore_ascii_case(s));
    let no = ["n", "no"].iter().any(|s| text.eq_ignore_ascii_case(s));
    if yes || text == "on" || text == "1" {
        Some(true)
    } else if no || text == "off" || text == "0" {
        Some(false)
    } else {
        None
    }
}

pub fn format_bool(value: bool) -> &'static str {
    if value {
        "y"
    } else {
        "n"
    }
}

/// A bool, or `try`/`maybe` (any case).
pub fn parse_ternary(text: &str) -> Option<Ternary> {
    if text.eq_ignore_ascii_case("try") || text.eq_ignore_ascii_case("maybe") {
        return Some(Ternary::Try);
    }
    parse_bool(text).map(|yes| if yes { Ternary::Yes } else { Ternary::No })
}

/// A ternary, or `auto` (any case).
pub fn parse_ternary_auto(text: &str) -> Option<Ternary> {
    if text.eq_ignore_ascii_case(AUTO_STR) {
        return Some(Ternary::Auto);
    }
    parse_ternary(text)
}

pub fn format_ternary(value: Ternary) -> &'static str {
    match value {
        Ternary::No => "n",
        Ternary::Yes => "y",
        Ternary::Try => "try",
        Ternary::Auto => AUTO_STR,
    }
}

/// Index of `text` in `names`, compared without case.
pub fn parse_enum(text: &str, names: &[&str]) -> Option<usize> {
    names
        .iter()
        .position(|name| name.eq_ignore_ascii_case(text))
}

/// A time in seconds: a non-negative number with an optional unit `m`
/// (minutes), `s`, `ms`, `us` or `ns`; a bare number is seconds.
pub fn parse_time_seconds(text: &str) -> Option<f64> {
    let text = text.trim();
    let unit_start = text
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphabetic())
        .last()
        .map_or(text.len(), |(i, _)| i);
    let (number, unit) = text.split_at(unit_start);
    if number.ends_with(char::is_whitespace) {
        return None; // "10 ms": the unit must follow the number
    }
    let value = parse_double(number)?;
    // Dividing by an exact power of ten (as UCX does) keeps printed values
    // such as `1500000.00us` exact when read back.
    let seconds = match unit {
        "" | "s" => value,
        "m" => value * 60.0,
        "ms" => value / 1e3,
        "us" => value / 1e6,
        "ns" => value / 1e9,
        _ => return None,
    };
    // Times beyond what a Duration holds (~584 billion years) are typos.
    Duration::try_from_secs_f64(seconds)
        .is_ok()
        .then_some(seconds)
}

/// A time as a [`Duration`]; `None` when it does not fit.
pub fn parse_duration(text: &str) -> Option<Duration> {
    Duration::try_from_secs_f64(parse_time_seconds(text)?).ok()
}

/// UCX prints every time in microseconds with two decimals (`1.0s` is
/// `1000000.00us`).
pub fn format_time_seconds(seconds: f64) -> String {
    format!("{:.2}us", seconds * 1e6)
}

pub fn parse_time_units(text: &str) -> Option<TimeUnits> {
    // UCX compares these two case-sensitively.
    match text.trim() {
        INF_STR => Some(TimeUnits::Inf),
        AUTO_STR => Some(TimeUnits::Auto),
        other => parse_duration(other).map(TimeUnits::Time),
    }
}

pub fn format_time_units(value: TimeUnits) -> String {
    match value {
        TimeUnits::Time(duration) => format_time_seconds(duration.as_secs_f64()),
        TimeUnits::Inf => INF_STR.into(),
        TimeUnits::Auto => AUTO_STR.into(),
    }
}

/// Bytes: decimal digits and an optional unit `b`, `k`, `m`, `g`, `t` (any
/// case, powers of 1024), optionally followed by `b` (`8kb`); or `inf`/`auto`.
pub fn parse_memunits(text: &str) -> Option<MemUnits> {
    let text = text.trim();
    if text.eq_ignore_ascii_case(INF_STR) {
        return Some(MemUnits::Inf);
    }
    if text.eq_ignore_ascii_case(AUTO_STR) {
        return Some(MemUnits::Auto);
    }
    let digits_end = text
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    let value = parse_decimal_u64(digits)?;
    let unit = unit.to_ascii_lowercase();
    let multiplier: u64 = match unit.as_str() {
        "" | "b" | "bb" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        "t" | "tb" => 1 << 40,
        _ => return None,
    };
    value.checked_mul(multiplier).map(MemUnits::Bytes)
}

/// UCX's printing: the largest unit that divides the value exactly (`8192`
/// is `8K`, `8256` stays `8256`), `inf`, `auto`.
pub fn format_memunits(value: MemUnits) -> String {
    const SUFFIXES: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    match value {
        MemUnits::Inf => INF_STR.into(),
        MemUnits::Auto => AUTO_STR.into(),
        MemUnits::Bytes(mut bytes) => {
            let mut suffix = 0;
            while bytes >= 1024 && bytes % 1024 == 0 && suffix + 1 < SUFFIXES.len() {
                bytes /= 1024;
                suffix += 1;
            }
            let mut out = String::new();
            let _ = write!(out, "{bytes}{}", SUFFIXES[suffix]);
            out
        }
    }
}

/// Parses `value`, `key:value` and mixtures (`5ns,db:40ns`): every key must
/// end up with a time; a later `key:value` for the same key wins, as in UCX.
pub fn parse_keyed_times(text: &str, keys: &[(&str, &str)]) -> Option<Vec<f64>> {
    let mut default = None;
    let mut specific: Vec<Option<f64>> = vec![None; keys.len()];
    for token in list_items(text) {
        match token.split_once(':') {
            None => default = Some(parse_time_seconds(token)?),
            Some((key, value)) => {
                let index = keys.iter().position(|(name, _)| *name == key)?;
                specific[index] = Some(parse_time_seconds(value)?);
            }
        }
    }
    specific.into_iter().map(|time| time.or(default)).collect()
}

/// Parses `name@ipv4[,name@ipv4…]`. The error names the bad entry and says
/// what is expected, ready to be logged.
pub fn parse_soft_devices(text: &str) -> Result<Vec<SoftDeviceSpec>, String> {
    let mut devices: Vec<SoftDeviceSpec> = Vec::new();
    for item in list_items(text) {
        let device = parse_soft_device(item)?;
        if devices.iter().any(|d| d.name == device.name) {
            return Err(format!("device '{}' is listed twice", device.name));
        }
        devices.push(device);
    }
    if devices.is_empty() {
        return Err("the device list is empty".into());
    }
    Ok(devices)
}

fn parse_soft_device(item: &str) -> Result<SoftDeviceSpec, String> {
    let (name, address) = item
        .split_once('@')
        .ok_or_else(|| format!("'{item}' is not of the form <name>@<ipv4 address>"))?;
    let name_ok = (1..=MAX_DEVICE_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_ok {
        return Err(format!(
            "'{item}': device name must be 1 to {MAX_DEVICE_NAME_LEN} letters, digits, '_' or '-'"
        ));
    }
    let ipv4 = parse_dotted_ipv4(address)
        .ok_or_else(|| format!("'{item}': '{address}' is not a dotted IPv4 address"))?;
    Ok(SoftDeviceSpec {
        name: name.to_string(),
        ipv4,
    })
}

/// Strict dotted quad: four decimal parts 0..=255.
fn parse_dotted_ipv4(text: &str) -> Option<Ipv4Addr> {
    // std's parser is already strict (no leading zeros, exactly 4 parts).
    text.parse().ok()
}
