//! The table-driven configuration model, with UCX's semantics:
//!
//! * A table is a list of fields; a field is a value or a nested table whose
//!   name is a prefix (`RC_`, `IB_`, or empty). A nested table's default is a
//!   `NAME=value;NAME=value` list overriding defaults inside it.
//! * Reading: every value starts at its default; then for each value the
//!   environment is consulted under each enclosing prefix, innermost first and
//!   the table's own prefix last, later ones winning: for `rc_mlx5`,
//!   `UCX_IB_TX_QUEUE_LEN` < `UCX_RC_TX_QUEUE_LEN` < `UCX_RC_MLX5_TX_QUEUE_LEN`.
//!   With an application prefix `APP`, the whole `UCX_` pass runs first and
//!   an `APP_UCX_` pass overrides it.
//! * Modifying (`uct_config_modify`): the name is a glob pattern matched
//!   against UCX's names relative to the table (a field of the table itself
//!   by its bare name, `GID_INDEX` in the md table; a nested one with any
//!   enclosing table's prefix, `RC_TIMEOUT`, `IB_TX_QUEUE_LEN`) and, beyond
//!   UCX, the same with the table's own prefix (`RC_MLX5_TIMEOUT`,
//!   `IB_GID_INDEX`), or a glob (`*TIMEOUT`).
//! * Getting (`uct_config_get`): UCX addresses a value by its path through
//!   the nested tables (`RC_RC_IB_TX_QUEUE_LEN`); we accept that and, beyond
//!   UCX, the names `modify` accepts.

use std::fmt::Write as _;

use super::env::Env;
use super::value::{Kind, Value};
use crate::abi::ucs_config::{
    ucs_config_print_flags_t, UCS_CONFIG_PRINT_COMMENT_DEFAULT, UCS_CONFIG_PRINT_CONFIG,
    UCS_CONFIG_PRINT_DOC, UCS_CONFIG_PRINT_HEADER, UCS_CONFIG_PRINT_HIDDEN,
};
use crate::abi::ucs_status::Status;

/// The prefix of every variable in the environment.
pub const DEFAULT_ENV_PREFIX: &str = "UCX_";

/// Width UCX pads the `syntax:`/`inherits:` titles to in printed docs.
const DOC_TITLE_WIDTH: usize = 10;

/// One entry of a configuration table.
#[derive(Debug)]
pub struct Field {
    pub name: &'static str,
    /// Text parsed at read time before the environment is applied; for a
    /// nested table, `NAME=value;…` overrides of its defaults.
    pub default: &'static str,
    pub doc: &'static str,
    pub kind: FieldKind,
    /// For a setting UCX has that means nothing to this library: why it is
    /// accepted (set, read back, printed) but changes nothing. Printed after
    /// the description.
    pub not_applied: Option<&'static str>,
}

#[derive(Debug)]
pub enum FieldKind {
    Value(Kind),
    /// A nested table; the field name is its prefix.
    Table(&'static [Field]),
    /// A name UCX still recognises but ignores (warned about when set).
    Deprecated,
}

/// A top-level table: what `uct_md_config_read` / `uct_md_iface_config_read`
/// fill (UCX's `ucs_config_global_list_entry_t`).
#[derive(Debug)]
pub struct ConfigTable {
    /// Used in the print title, e.g. `IB memory domain`.
    pub name: &'static str,
    /// e.g. `IB_`, `RC_MLX5_`; empty for global variables.
    pub prefix: &'static str,
    pub fields: &'static [Field],
}

/// A value field.
pub const fn value(
    name: &'static str,
    default: &'static str,
    doc: &'static str,
    kind: Kind,
) -> Field {
    Field {
        name,
        default,
        doc,
        kind: FieldKind::Value(kind),
        not_applied: None,
    }
}

/// A UCX setting this library accepts but does not apply, and why.
pub const fn unapplied(
    name: &'static str,
    default: &'static str,
    doc: &'static str,
    kind: Kind,
    why: &'static str,
) -> Field {
    Field {
        name,
        default,
        doc,
        kind: FieldKind::Value(kind),
        not_applied: Some(why),
    }
}

/// A nested table: its name is its prefix, its default `NAME=value;…`
/// overrides defaults inside it.
pub const fn table(name: &'static str, default: &'static str, fields: &'static [Field]) -> Field {
    Field {
        name,
        default,
        doc: "",
        kind: FieldKind::Table(fields),
        not_applied: None,
    }
}

/// A name UCX still recognises but ignores.
pub const fn deprecated(name: &'static str, doc: &'static str) -> Field {
    Field {
        name,
        default: "",
        doc,
        kind: FieldKind::Deprecated,
        not_applied: None,
    }
}

/// A value field with the nested-table names leading to it.
#[derive(Debug, Clone)]
struct Leaf {
    field: &'static Field,
    kind: Option<Kind>,
    /// Enclosing table names, outermost first (below the top-level table).
    ancestors: Vec<&'static str>,
}

impl Leaf {
    /// UCX's `uct_config_get` address: table names then field name.
    fn path(&self) -> String {
        let mut path: String = self.ancestors.concat();
        path.push_str(self.field.name);
        path
    }

    /// Prefixes this leaf answers to, weakest first, relative to the table
    /// at `depth` and an optional prefix of the caller (`table_prefix`).
    fn prefixes(&self, depth: usize, table_prefix: Option<&'static str>) -> Vec<&'static str> {
        let relative = self.ancestors.get(depth..).unwrap_or(&[]);
        let mut prefixes: Vec<&'static str> = relative.iter().rev().copied().collect();
        match table_prefix {
            Some(prefix) => prefixes.push(prefix),
            None if relative.is_empty() => prefixes.push(""),
            None => {}
        }
        prefixes
    }
}

fn collect_leaves(
    fields: &'static [Field],
    ancestors: &mut Vec<&'static str>,
    out: &mut Vec<Leaf>,
) {
    for field in fields {
        match &field.kind {
            FieldKind::Table(sub) => {
                ancestors.push(field.name);
                collect_leaves(sub, ancestors, out);
                ancestors.pop();
            }
            FieldKind::Value(kind) => out.push(Leaf {
                field,
                kind: Some(*kind),
                ancestors: ancestors.clone(),
            }),
            FieldKind::Deprecated => out.push(Leaf {
                field,
                kind: None,
                ancestors: ancestors.clone(),
            }),
        }
    }
}

/// A filled configuration: one value per field of the table.
#[derive(Debug, Clone)]
pub struct Config {
    table: &'static ConfigTable,
    /// `UCX_` or `<APP>_UCX_`: used to print variable names.
    env_prefix: String,
    leaves: Vec<Leaf>,
    /// Parallel to `leaves`; `None` for deprecated fields.
    values: Vec<Option<Value>>,
}

impl Config {
    /// Defaults only, no environment.
    pub fn with_defaults(table: &'static ConfigTable) -> Result<Config, Status> {
        let mut leaves = Vec::new();
        collect_leaves(table.fields, &mut Vec::new(), &mut leaves);
        let values = vec![None; leaves.len()];
        let mut config = Config {
            table,
            env_prefix: DEFAULT_ENV_PREFIX.to_string(),
            leaves,
            values,
        };
        config.apply_defaults(table.fields, 0, 0)?;
        Ok(config)
    }

    /// Defaults, then the environment, as `uct_md_config_read` does.
    /// `app_prefix` is the caller's `env_prefix` argument (`None` or empty:
    /// `UCX_` only). A value that does not parse fails the whole read with
    /// `InvalidParam` and an error line naming the variable.
    pub fn read(
        table: &'static ConfigTable,
        app_prefix: Option<&str>,
        env: &dyn Env,
    ) -> Result<Config, Status> {
        let mut config = Config::with_defaults(table)?;
        let full_prefix = match app_prefix {
            Some(app) if !app.is_empty() => format!("{app}_{DEFAULT_ENV_PREFIX}"),
            _ => DEFAULT_ENV_PREFIX.to_string(),
        };
        if full_prefix != DEFAULT_ENV_PREFIX {
            config.apply_env(DEFAULT_ENV_PREFIX, env)?;
        }
        config.apply_env(&full_prefix, env)?;
        config.env_prefix = full_prefix;
        Ok(config)
    }

    pub fn table(&self) -> &'static ConfigTable {
        self.table
    }

    /// Sets every value of the table at `fields` (leaves from `first`, at
    /// nesting `depth`) to its default, nested tables first so that the
    /// enclosing table's overrides win.
    fn apply_defaults(
        &mut self,
        fields: &'static [Field],
        mut first: usize,
        depth: usize,
    ) -> Result<usize, Status> {
        for field in fields {
            match &field.kind {
                FieldKind::Table(sub) => {
                    let end = self.apply_defaults(sub, first, depth + 1)?;
                    for assignment in field.default.split(';').filter(|a| !a.is_empty()) {
                        let mut parts = assignment.split('=').filter(|p| !p.is_empty());
                        let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
                            tracing::error!(
                                "bad default '{}' of configuration table {}",
                                field.default,
                                field.name
                            );
                            return Err(Status::InvalidParam);
                        };
                        self.set_value_in(first..end, depth + 1, name, value, None)?;
                    }
                    first = end;
                }
                FieldKind::Value(kind) => {
                    self.values[first] = Some(parse_or_log(*kind, field.name, field.default)?);
                    first += 1;
                }
                FieldKind::Deprecated => first += 1,
            }
        }
        Ok(first)
    }

    fn apply_env(&mut self, env_prefix: &str, env: &dyn Env) -> Result<(), Status> {
        for index in 0..self.leaves.len() {
            let leaf = &self.leaves[index];
            for prefix in leaf.prefixes(0, Some(self.table.prefix)) {
                let var = format!("{env_prefix}{prefix}{}", leaf.field.name);
                let Some(text) = env.get(&var) else { continue };
                match leaf.kind {
                    None => warn_deprecated(&var),
                    Some(kind) => self.values[index] = Some(parse_or_log(kind, &var, &text)?),
                }
            }
        }
        Ok(())
    }

    /// `uct_config_modify`: sets every value whose prefixed name matches the
    /// glob `pattern`. `NoElem` if none does (or it names a deprecated
    /// field), `InvalidParam` (value unchanged) if `value` does not parse.
    pub fn modify(&mut self, pattern: &str, value: &str) -> Result<(), Status> {
        self.set_value_in(
            0..self.leaves.len(),
            0,
            pattern,
            value,
            Some(self.table.prefix),
        )
    }

    fn set_value_in(
        &mut self,
        range: std::ops::Range<usize>,
        depth: usize,
        pattern: &str,
        text: &str,
        table_prefix: Option<&'static str>,
    ) -> Result<(), Status> {
        let mut matched = false;
        for index in range {
            let leaf = &self.leaves[index];
            // UCX's names (relative to the table at `depth`: the bare name
            // of a field directly in it), and ours with the caller's prefix.
            let mut prefixes = leaf.prefixes(depth, None);
            prefixes.extend(leaf.prefixes(depth, table_prefix));
            let hit = prefixes
                .iter()
                .any(|prefix| glob_match(pattern, &format!("{prefix}{}", leaf.field.name)));
            if !hit {
                continue;
            }
            let Some(kind) = leaf.kind else {
                return Err(Status::NoElem);
            };
            self.values[index] = Some(parse_or_log(kind, pattern, text)?);
            matched = true;
        }
        if matched {
            Ok(())
        } else {
            Err(Status::NoElem)
        }
    }

    /// `uct_config_get`: the printed value of the field at `name`.
    pub fn get(&self, name: &str) -> Result<String, Status> {
        let index = self
            .find_by_path(name)
            .or_else(|| self.find_by_prefixed_name(name));
        match index.and_then(|i| Some((self.leaves[i].kind?, self.values[i].as_ref()?))) {
            Some((kind, value)) => Ok(kind.format(value)),
            None => Err(Status::NoElem),
        }
    }

    /// The value at UCX path `path` (`RC_RC_IB_TX_QUEUE_LEN`); the typed
    /// configuration structs read through this.
    pub fn value(&self, path: &str) -> Result<&Value, Status> {
        let index = self.find_by_path(path).ok_or_else(|| {
            tracing::error!(
                "configuration table {} has no field {path}",
                self.table.name
            );
            Status::NoElem
        })?;
        self.values[index].as_ref().ok_or(Status::NoElem)
    }

    fn find_by_path(&self, path: &str) -> Option<usize> {
        self.leaves.iter().position(|leaf| leaf.path() == path)
    }

    fn find_by_prefixed_name(&self, name: &str) -> Option<usize> {
        self.leaves.iter().position(|leaf| {
            leaf.prefixes(0, Some(self.table.prefix))
                .iter()
                .any(|prefix| format!("{prefix}{}", leaf.field.name) == name)
        })
    }

    /// `uct_config_print`'s text, in UCX's layout.
    pub fn print(&self, title: &str, flags: ucs_config_print_flags_t, env: &dyn Env) -> String {
        let mut out = String::new();
        let mut header_pending = flags & UCS_CONFIG_PRINT_HEADER != 0;
        if flags & UCS_CONFIG_PRINT_CONFIG == 0 {
            if header_pending {
                print_header(&mut out, title);
            }
            return out;
        }
        for (leaf, value) in self.leaves.iter().zip(&self.values) {
            if leaf.kind.is_none() && flags & UCS_CONFIG_PRINT_HIDDEN == 0 {
                continue;
            }
            if header_pending {
                header_pending = false;
                print_header(&mut out, title);
            }
            self.print_leaf(&mut out, leaf, value.as_ref(), flags, env);
        }
        out
    }

    fn print_leaf(
        &self,
        out: &mut String,
        leaf: &Leaf,
        value: Option<&Value>,
        flags: ucs_config_print_flags_t,
        env: &dyn Env,
    ) {
        let name = leaf.field.name;
        let var = format!("{}{}{name}", self.env_prefix, self.table.prefix);
        let (assignment, syntax) = match (leaf.kind, value) {
            (Some(kind), Some(value)) => (format!("={}", kind.format(value)), kind.syntax()),
            _ => (" (deprecated)".to_string(), "N/A".to_string()),
        };
        let commented = flags & UCS_CONFIG_PRINT_COMMENT_DEFAULT != 0 && env.get(&var).is_none();
        if flags & UCS_CONFIG_PRINT_DOC != 0 {
            out.push_str("#\n");
            // UCX ends the doc with a newline, which prints as a last "# "
            // line unless the type appends its own lines (keyed values).
            let mut doc = match leaf.field.not_applied {
                Some(why) => format!("{}\nNot applied by this library: {why}\n", leaf.field.doc),
                None => format!("{}\n", leaf.field.doc),
            };
            if let Some(kind) = leaf.kind {
                doc.push_str(&kind.extra_doc());
            }
            for line in doc.split('\n') {
                let _ = writeln!(out, "# {line}");
            }
            out.push_str("#\n");
            let _ = writeln!(out, "# {:<DOC_TITLE_WIDTH$} {syntax}", "syntax:");
            let inherited = self.inherited_prefixes(leaf);
            if !inherited.is_empty() {
                let names: Vec<String> = inherited
                    .iter()
                    .map(|prefix| format!("{}{prefix}{name}", self.env_prefix))
                    .collect();
                let _ = writeln!(
                    out,
                    "# {:<DOC_TITLE_WIDTH$} {}",
                    "inherits:",
                    names.join(", ")
                );
            }
            out.push_str("#\n");
        }
        let _ = writeln!(
            out,
            "{}{var}{assignment}",
            if commented { "# " } else { "" }
        );
        if flags & UCS_CONFIG_PRINT_DOC != 0 {
            out.push('\n');
        }
    }

    /// The enclosing prefixes UCX lists under `inherits:`: outermost first,
    /// a prefix repeated right after itself listed once.
    fn inherited_prefixes(&self, leaf: &Leaf) -> Vec<&'static str> {
        let mut chain = vec![self.table.prefix];
        for ancestor in &leaf.ancestors {
            if chain.last() != Some(ancestor) {
                chain.push(ancestor);
            }
        }
        chain.split_off(1)
    }

    /// Every variable name (with `UCX_`) that can set a field of this table:
    /// used to recognise misspelled variables.
    pub fn variable_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .leaves
            .iter()
            .flat_map(|leaf| {
                leaf.prefixes(0, Some(self.table.prefix))
                    .into_iter()
                    .map(move |prefix| format!("{DEFAULT_ENV_PREFIX}{prefix}{}", leaf.field.name))
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

fn print_header(out: &mut String, title: &str) {
    let _ = write!(out, "#\n# {title}\n#\n\n");
}

/// Parses `text` as `kind`; on failure logs which variable and what syntax
/// is expected, and returns `InvalidParam`.
pub fn parse_or_log(kind: Kind, name: &str, text: &str) -> Result<Value, Status> {
    kind.parse(text).ok_or_else(|| {
        // Say which entry of a device list is wrong, beyond the syntax.
        let detail = match kind {
            Kind::SoftDevices => super::value::parse_soft_devices(text)
                .err()
                .map(|reason| format!(" ({reason})"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        tracing::error!(
            "Invalid value for {name}: '{text}'{detail}. Expected: {}",
            kind.syntax()
        );
        Status::InvalidParam
    })
}

fn warn_deprecated(var: &str) {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let first_time = match WARNED.lock() {
        Ok(mut guard) => guard
            .get_or_insert_with(HashSet::new)
            .insert(var.to_string()),
        Err(_) => true,
    };
    if first_time {
        tracing::warn!(
            "{var} is deprecated (set UCX_WARN_UNUSED_ENV_VARS=n to suppress this warning)"
        );
    }
}

/// Shell-style glob as UCX's `fnmatch(pattern, name, 0)`: `*`, `?`, `[set]`
/// (with `!`/`^` negation and `a-z` ranges), `\` escapes.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    // Classic single-backtrack matcher: on a mismatch, let the last `*`
    // swallow one more character. Linear in practice, never exponential,
    // whatever pattern a caller passes.
    let (mut p, mut n) = (0, 0);
    let mut last_star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match pattern.get(p) {
            Some('*') => {
                last_star = Some((p + 1, n));
                p += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match bracket_match(&pattern[p + 1..], Some(name[n])) {
                Some((true, rest)) => Some(pattern.len() - rest.len() - p),
                Some((false, _)) => None,
                // An unclosed '[' is an ordinary character.
                None => (name[n] == '[').then_some(1),
            },
            Some('\\') if p + 1 < pattern.len() => (pattern[p + 1] == name[n]).then_some(2),
            Some(&literal) => (literal == name[n]).then_some(1),
            None => None,
        };
        match (step, last_star) {
            (Some(width), _) => {
                p += width;
                n += 1;
            }
            (None, Some((star_p, star_n))) => {
                p = star_p;
                n = star_n + 1;
                last_star = Some((star_p, star_n + 1));
            }
            (None, None) => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Matches `c` against the set that starts at `pattern` (just after `[`);
/// returns whether it matched and the pattern after `]`, or `None` when the
/// set is not closed.
fn bracket_match(pattern: &[char], c: Option<char>) -> Option<(bool, &[char])> {
    let (negated, mut i) = match pattern.first() {
        Some('!') | Some('^') => (true, 1),
        _ => (false, 0),
    };
    let mut matched = false;
    let mut first = true;
    while i < pattern.len() {
        let start = pattern[i];
        if start == ']' && !first {
            return Some((matched != negated, &pattern[i + 1..]));
        }
        first = false;
        if i + 2 < pattern.len() && pattern[i + 1] == '-' && pattern[i + 2] != ']' {
            let end = pattern[i + 2];
            matched |= c.is_some_and(|c| start <= c && c <= end);
            i += 3;
        } else {
            matched |= c == Some(start);
            i += 1;
        }
    }
    None
}
