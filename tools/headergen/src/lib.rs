//! Generates the C headers under `include/` from the `uct` crate's Rust
//! sources, one header per UCX header path.
//!
//! Each header is produced by a separate cbindgen run over the Rust files
//! mapped to it ([`HEADERS`]), so it holds only its own items and reaches
//! the rest through `#include`. Shared settings come from `cbindgen.toml` at
//! the crate root. Two things cbindgen cannot express are added here:
//! - references to structs defined in *another* header are renamed to
//!   `struct <tag>` (cbindgen only knows the kind of types it parsed);
//! - C macros that UCX callers use (`UCS_BIT`, `UCS_CPU_ZERO`,
//!   `uct_recv_desc`, ...) are written as text after the includes, and
//!   anonymous union members (UCX's `uct_ep_op_info_t`) are inlined.
//!
//! `cargo run -p headergen` rewrites `include/`; `tests/header_drift.rs`
//! fails when the checked-in headers differ from a fresh run.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

mod enums;
mod macros;

pub use enums::{EnumSpec, ENUMS};

/// One generated header.
pub struct HeaderSpec {
    /// Path below `include/`, as UCX spells it.
    pub path: &'static str,
    /// Rust files (relative to the crate root) whose items this header owns.
    /// Missing files are skipped, so the map can name files not written yet.
    pub sources: &'static [&'static str],
    /// Our headers this one includes.
    pub includes: &'static [&'static str],
    /// System headers this one includes.
    pub sys_includes: &'static [&'static str],
    /// C macros placed after the includes (see `macros.rs`).
    pub macros: &'static str,
    /// Anonymous union members to inline: `(union tag, member name)`.
    pub anonymous_members: &'static [(&'static str, &'static str)],
    /// Items of the sources left out (declared by hand in `macros` because
    /// cbindgen cannot express their Rust type, e.g. string tables).
    pub exclude: &'static [&'static str],
    /// Items this header declares wherever they are defined, because UCX's
    /// header for them differs from the Rust file's: exported functions of
    /// `src/api`, and types of `src/abi` (the forward typedefs uct_def.h
    /// gives for structs whose Rust definition sits in a file above it).
    pub claims: &'static [&'static str],
}

/// Types UCX declares in `uct/api/uct_def.h` ahead of the structs `uct.h`
/// and `uct_v2.h` complete, so that `tl.h` (which includes only
/// `uct_def.h`) can name them. In Rust each sits beside its struct.
const UCT_DEF_FORWARD_TYPES: &[&str] = &[
    "uct_iface_attr_t",
    "uct_iface_params_t",
    "uct_ep_attr_t",
    "uct_md_attr_t",
    "uct_completion_t",
    "uct_pending_req_t",
    "uct_ep_params_t",
    "uct_ep_connect_params_t",
    "uct_cm_attr_t",
    "uct_listener_attr_t",
    "uct_listener_params_t",
    "uct_tag_context_t",
    "uct_completion_callback_t",
    "uct_pending_callback_t",
    "uct_pending_purge_callback_t",
];

/// Functions UCX declares in `uct/api/v2/uct_v2.h`.
const UCT_V2_FUNCTIONS: &[&str] = &[
    "uct_iface_estimate_perf",
    "uct_md_mem_reg_v2",
    "uct_md_mem_dereg_v2",
    "uct_md_mem_query_v2",
    "uct_md_query_v2",
    "uct_md_mkey_pack_v2",
    "uct_md_mem_attach",
    "uct_ep_query",
    "uct_ep_invalidate",
    "uct_iface_query_v2",
    "uct_iface_is_reachable_v2",
    "uct_ep_connect_to_ep_v2",
    "uct_ep_is_connected",
    "uct_ep_get_device_ep",
    "uct_ep_put_sgl_zcopy",
    "uct_ep_get_sgl_zcopy",
    "uct_rkey_compare",
    "uct_rkey_unpack_v2",
    "uct_md_mem_elem_pack",
    "uct_md_mem_elem_release",
    "uct_ep_outstanding_purge",
    "uct_ep_failover_enable",
];

/// The Rust file -> header map.
pub const HEADERS: &[HeaderSpec] = &[
    HeaderSpec {
        path: "ucs/sys/compiler_def.h",
        sources: &[],
        includes: &[],
        sys_includes: &["stddef.h", "stdint.h"],
        macros: macros::COMPILER_DEF,
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/type/status.h",
        sources: &["src/abi/ucs_status.rs", "src/api/status.rs"],
        includes: &["ucs/sys/compiler_def.h"],
        sys_includes: &["stdint.h"],
        macros: macros::STATUS,
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/type/thread_mode.h",
        sources: &["src/abi/ucs_thread_mode.rs"],
        includes: &[],
        sys_includes: &[],
        macros: macros::THREAD_MODE,
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/type/cpu_set.h",
        sources: &["src/abi/ucs_cpu_set.rs"],
        includes: &[],
        sys_includes: &["stddef.h", "stdint.h"],
        macros: macros::CPU_SET,
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/memory/memory_type.h",
        sources: &["src/abi/ucs_memory_type.rs", "src/api/memory_type.rs"],
        includes: &["ucs/sys/compiler_def.h"],
        sys_includes: &["stdint.h"],
        macros: macros::MEMORY_TYPE,
        anonymous_members: &[],
        exclude: &["ucs_memory_type_names", "ucs_memory_type_descs"],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/config/types.h",
        sources: &["src/abi/ucs_config.rs"],
        includes: &["ucs/sys/compiler_def.h"],
        sys_includes: &["sys/socket.h"],
        macros: macros::CONFIG_TYPES,
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/time/time_def.h",
        sources: &["src/abi/ucs_time.rs"],
        includes: &[],
        sys_includes: &[],
        macros: "",
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/stats/stats_fwd.h",
        sources: &["src/abi/ucs_stats.rs", "src/api/stats.rs"],
        includes: &[],
        sys_includes: &[],
        macros: macros::STATS,
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/async/async_fwd.h",
        sources: &["src/abi/ucs_async.rs", "src/api/async_context.rs"],
        includes: &[
            "ucs/config/types.h",
            "ucs/time/time_def.h",
            "ucs/type/status.h",
        ],
        sys_includes: &["stdint.h"],
        macros: "",
        anonymous_members: &[],
        exclude: &["ucs_async_mode_names"],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/sys/event_set.h",
        sources: &["src/api/event_set.rs"],
        includes: &["ucs/async/async_fwd.h", "ucs/type/status.h"],
        sys_includes: &[],
        macros: "",
        anonymous_members: &[],
        exclude: &["EventSet", "ControlFn"],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/async/async.h",
        sources: &[],
        includes: &["ucs/async/async_fwd.h"],
        sys_includes: &[],
        macros: "",
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/datastruct/callbackq.h",
        sources: &["src/abi/ucs_callbackq.rs", "src/api/callbackq.rs"],
        includes: &["ucs/sys/compiler_def.h", "ucs/type/status.h"],
        sys_includes: &["stddef.h", "stdint.h"],
        macros: "",
        anonymous_members: &[],
        exclude: &["AddFn", "RemoveFn"],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/datastruct/linear_func.h",
        sources: &["src/abi/ucs_linear_func.rs"],
        includes: &[],
        sys_includes: &[],
        macros: "",
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "ucs/sys/topo/base/topo.h",
        sources: &["src/abi/ucs_topo.rs", "src/api/topo.rs"],
        includes: &["ucs/type/status.h"],
        sys_includes: &["stddef.h", "stdint.h", "stdio.h"],
        macros: "",
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "uct/api/version.h",
        sources: &[],
        includes: &[],
        sys_includes: &[],
        macros: macros::VERSION,
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "uct/api/uct_def.h",
        sources: &["src/abi/uct_def.rs"],
        includes: &[
            "ucs/sys/compiler_def.h",
            "ucs/config/types.h",
            "ucs/type/status.h",
        ],
        sys_includes: &["stddef.h", "stdint.h", "sys/types.h"],
        macros: macros::UCT_DEF,
        anonymous_members: &[],
        exclude: &[],
        claims: UCT_DEF_FORWARD_TYPES,
    },
    HeaderSpec {
        path: "uct/api/tl.h",
        sources: &["src/abi/uct_tl.rs"],
        includes: &[
            "uct/api/uct_def.h",
            "ucs/type/status.h",
            "ucs/datastruct/callbackq.h",
            "ucs/config/types.h",
        ],
        sys_includes: &["stddef.h", "sys/types.h"],
        macros: macros::TL,
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "uct/api/uct.h",
        sources: &[
            "src/abi/uct_api.rs",
            "src/api/component.rs",
            "src/api/md.rs",
            "src/api/config.rs",
            "src/api/worker.rs",
            "src/api/iface.rs",
            "src/api/mem_alloc.rs",
            "src/api/ep.rs",
            "src/api/cm.rs",
        ],
        includes: &[
            "uct/api/uct_def.h",
            "uct/api/tl.h",
            "uct/api/version.h",
            "ucs/async/async_fwd.h",
            "ucs/datastruct/callbackq.h",
            "ucs/datastruct/linear_func.h",
            "ucs/memory/memory_type.h",
            "ucs/type/status.h",
            "ucs/type/thread_mode.h",
            "ucs/type/cpu_set.h",
            "ucs/stats/stats_fwd.h",
            "ucs/sys/compiler_def.h",
            "ucs/sys/topo/base/topo.h",
            "ucs/sys/event_set.h",
        ],
        sys_includes: &["sys/socket.h", "stdio.h", "sched.h"],
        macros: macros::UCT,
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
    HeaderSpec {
        path: "uct/api/v2/uct_v2.h",
        sources: &["src/abi/uct_v2.rs", "src/api/v2.rs"],
        includes: &[
            "ucs/sys/compiler_def.h",
            "ucs/memory/memory_type.h",
            "uct/api/uct.h",
            "ucs/sys/topo/base/topo.h",
        ],
        sys_includes: &["stdint.h"],
        macros: macros::UCT_V2,
        anonymous_members: &[("uct_ep_op_info_detail", "detail")],
        exclude: &[],
        claims: UCT_V2_FUNCTIONS,
    },
    HeaderSpec {
        path: "uct/soft/soft_hca.h",
        sources: &["src/api/soft_hca.rs"],
        includes: &["uct/api/uct.h"],
        sys_includes: &["stdint.h"],
        macros: "",
        anonymous_members: &[],
        exclude: &[],
        claims: &[],
    },
];

/// Why generation failed.
#[derive(Debug)]
pub enum Error {
    Io(PathBuf, std::io::Error),
    Parse(PathBuf, syn::Error),
    Cbindgen(String, Box<cbindgen::Error>),
    Config(String),
    AnonymousMember(String),
    Enum(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(path, err) => write!(f, "{}: {err}", path.display()),
            Error::Parse(path, err) => write!(f, "{}: {err}", path.display()),
            Error::Cbindgen(header, err) => write!(f, "{header}: cbindgen: {err}"),
            Error::Config(msg) => write!(f, "cbindgen.toml: {msg}"),
            Error::AnonymousMember(msg) => write!(f, "anonymous member: {msg}"),
            Error::Enum(msg) => write!(f, "enum: {msg}"),
        }
    }
}

impl std::error::Error for Error {}

/// The `uct` crate root (this crate lives in `tools/headergen`).
pub fn crate_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What a Rust file declares, as far as header generation cares.
#[derive(Default)]
struct FileItems {
    /// Types to emit, in source order.
    types: Vec<String>,
    /// Struct, union and opaque-type names (written `struct X` / `union X`
    /// when another header refers to them).
    tagged: Vec<(String, &'static str)>,
    /// Exported functions and statics (`#[no_mangle]`), including those
    /// generated by `export_dispatch!`.
    exports: Vec<String>,
    /// Constants (left out where another header reads the file only for
    /// the items it claims).
    constants: Vec<String>,
    /// Declarations of the `export_dispatch!` functions as plain Rust, for
    /// cbindgen (which does not expand macros).
    dispatch_source: String,
}

fn has_cbindgen_ignore(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("doc")
            && matches!(&attr.meta, syn::Meta::NameValue(nv)
                if matches!(&nv.value, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })
                    if s.value().trim() == "cbindgen:ignore"))
    })
}

fn has_repr(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| attr.path().is_ident("repr"))
}

fn has_no_mangle(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("no_mangle")
            || (attr.path().is_ident("unsafe")
                && attr
                    .meta
                    .require_list()
                    .is_ok_and(|l| l.tokens.to_string() == "no_mangle"))
    })
}

/// One function of an `export_dispatch!` invocation:
/// `#[doc] fn name(via handle: Type, arg: Type, ...) -> Ret => slot;`
struct DispatchFn {
    docs: Vec<String>,
    name: syn::Ident,
    params: Vec<(syn::Ident, syn::Type)>,
    ret: syn::Type,
}

struct DispatchFns(Vec<DispatchFn>);

impl syn::parse::Parse for DispatchFns {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let mut fns = Vec::new();
        while !input.is_empty() {
            let attrs = input.call(syn::Attribute::parse_outer)?;
            let docs = attrs
                .iter()
                .filter_map(|attr| match &attr.meta {
                    syn::Meta::NameValue(nv) if attr.path().is_ident("doc") => match &nv.value {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(s),
                            ..
                        }) => Some(s.value()),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            input.parse::<syn::Token![fn]>()?;
            let name: syn::Ident = input.parse()?;
            let content;
            syn::parenthesized!(content in input);
            let _via: syn::Ident = content.parse()?;
            let mut params = Vec::new();
            while !content.is_empty() {
                let param: syn::Ident = content.parse()?;
                content.parse::<syn::Token![:]>()?;
                let ty: syn::Type = content.parse()?;
                params.push((param, ty));
                if !content.is_empty() {
                    content.parse::<syn::Token![,]>()?;
                }
            }
            input.parse::<syn::Token![->]>()?;
            let ret: syn::Type = input.parse()?;
            input.parse::<syn::Token![=>]>()?;
            let _slot: syn::Ident = input.parse()?;
            input.parse::<syn::Token![;]>()?;
            fns.push(DispatchFn {
                docs,
                name,
                params,
                ret,
            });
        }
        Ok(DispatchFns(fns))
    }
}

/// The function of a `c_entry!` invocation (`core::c_boundary`):
/// `[no_log_setup | ops_slot] #[doc] fn name(arg: Type, ...) [-> Ret]; take
/// ...; { body }`. An `ops_slot` function is reached through an ops table,
/// not exported: `exported` is false.
struct EntryFn(DispatchFn, bool);

impl syn::parse::Parse for EntryFn {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let mut exported = true;
        if input.peek(syn::Ident) {
            let setup: syn::Ident = input.parse()?;
            exported = setup != "ops_slot";
        }
        let attrs = input.call(syn::Attribute::parse_outer)?;
        let docs = attrs
            .iter()
            .filter_map(|attr| match &attr.meta {
                syn::Meta::NameValue(nv) if attr.path().is_ident("doc") => match &nv.value {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) => Some(s.value()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        input.parse::<syn::Token![fn]>()?;
        let name: syn::Ident = input.parse()?;
        let content;
        syn::parenthesized!(content in input);
        let mut params = Vec::new();
        while !content.is_empty() {
            let param: syn::Ident = content.parse()?;
            content.parse::<syn::Token![:]>()?;
            let ty: syn::Type = content.parse()?;
            params.push((param, ty));
            if !content.is_empty() {
                content.parse::<syn::Token![,]>()?;
            }
        }
        let ret = if input.peek(syn::Token![->]) {
            input.parse::<syn::Token![->]>()?;
            input.parse()?
        } else {
            syn::parse_quote!(())
        };
        input.parse::<syn::Token![;]>()?;
        // The `take` clause and the body declare nothing for C.
        input.step(|cursor| {
            let mut rest = *cursor;
            while let Some((_, next)) = rest.token_tree() {
                rest = next;
            }
            Ok(((), rest))
        })?;
        Ok(EntryFn(
            DispatchFn {
                docs,
                name,
                params,
                ret,
            },
            exported,
        ))
    }
}

/// Plain Rust declarations of the functions an `export_dispatch!` expands to.
/// `isize` results are written `ssize_t`, as UCX declares them.
fn dispatch_declarations(fns: &[DispatchFn]) -> String {
    use quote::ToTokens;
    let mut out = String::new();
    for f in fns {
        for doc in &f.docs {
            out.push_str(&format!("///{doc}\n"));
        }
        let params: Vec<String> = f
            .params
            .iter()
            .map(|(name, ty)| format!("{name}: {}", ty.to_token_stream()))
            .collect();
        let ret = f
            .ret
            .to_token_stream()
            .to_string()
            .replace("isize", "ssize_t");
        out.push_str(&format!(
            "#[no_mangle]\npub unsafe extern \"C\" fn {}({}) -> {} {{ loop {{}} }}\n\n",
            f.name,
            params.join(", "),
            ret
        ));
    }
    out
}

fn scan_file(path: &Path) -> Result<FileItems, Error> {
    let text = fs::read_to_string(path).map_err(|e| Error::Io(path.to_owned(), e))?;
    let file = syn::parse_file(&text).map_err(|e| Error::Parse(path.to_owned(), e))?;
    let mut items = FileItems::default();
    for item in &file.items {
        match item {
            syn::Item::Struct(s) if !has_cbindgen_ignore(&s.attrs) => {
                items.types.push(s.ident.to_string());
                items.tagged.push((s.ident.to_string(), "struct"));
            }
            syn::Item::Union(u) if !has_cbindgen_ignore(&u.attrs) => {
                items.types.push(u.ident.to_string());
                items.tagged.push((u.ident.to_string(), "union"));
            }
            syn::Item::Type(t) if !has_cbindgen_ignore(&t.attrs) => {
                items.types.push(t.ident.to_string());
            }
            syn::Item::Enum(e) if !has_cbindgen_ignore(&e.attrs) && has_repr(&e.attrs) => {
                items.types.push(e.ident.to_string());
            }
            syn::Item::Const(c) if !has_cbindgen_ignore(&c.attrs) => {
                items.constants.push(c.ident.to_string());
            }
            syn::Item::Fn(f) if has_no_mangle(&f.attrs) => {
                items.exports.push(f.sig.ident.to_string());
            }
            syn::Item::Static(st) if has_no_mangle(&st.attrs) => {
                items.exports.push(st.ident.to_string());
            }
            syn::Item::Macro(m) if m.mac.path.is_ident("export_dispatch") => {
                let fns = m
                    .mac
                    .parse_body::<DispatchFns>()
                    .map_err(|e| Error::Parse(path.to_owned(), e))?;
                items
                    .exports
                    .extend(fns.0.iter().map(|f| f.name.to_string()));
                items
                    .dispatch_source
                    .push_str(&dispatch_declarations(&fns.0));
            }
            syn::Item::Macro(m) if m.mac.path.is_ident("c_entry") => {
                let entry = m
                    .mac
                    .parse_body::<EntryFn>()
                    .map_err(|e| Error::Parse(path.to_owned(), e))?;
                if !entry.1 {
                    continue;
                }
                items.exports.push(entry.0.name.to_string());
                items
                    .dispatch_source
                    .push_str(&dispatch_declarations(std::slice::from_ref(&entry.0)));
            }
            _ => {}
        }
    }
    Ok(items)
}

const GENERATED_NOTICE: &str = "\
/*
 * Generated by tools/headergen from the Rust sources of the uct crate.
 * Do not edit: change the Rust code and run `cargo run -p headergen`.
 */";

fn guard_name(path: &str) -> String {
    let mut guard = String::from("UCT_RS_");
    for c in path.chars() {
        guard.push(if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        });
    }
    guard
}

/// `#define X -1` becomes `#define X (-1)`, so that `a -X` stays valid C.
fn parenthesize_negative_defines(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let mut words = body.splitn(3, ' ');
        let negative_literal = match (words.next(), words.next(), words.next()) {
            (Some("#define"), Some(_), Some(value)) => {
                value.starts_with('-') && value[1..].chars().all(|c| c.is_ascii_digit())
            }
            _ => false,
        };
        if negative_literal {
            let (head, value) = body.rsplit_once(' ').unwrap_or((body, ""));
            out.push_str(&format!("{head} ({value})"));
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// Replaces `union <tag> <member>;` by an unnamed union with the same
/// members, so C code can write `info->am` as with UCX's header.
fn inline_anonymous_member(text: &str, union_tag: &str, member: &str) -> Result<String, Error> {
    let open = format!("union {union_tag} {{\n");
    let start = text
        .find(&open)
        .ok_or_else(|| Error::AnonymousMember(format!("union {union_tag} not found")))?;
    let body_start = start + open.len();
    let body_len = text[body_start..]
        .find("\n};")
        .ok_or_else(|| Error::AnonymousMember(format!("end of union {union_tag} not found")))?;
    let body = &text[body_start..body_start + body_len + 1];
    let use_site = format!("union {union_tag} {member};");
    let line_start = text
        .find(&use_site)
        .and_then(|pos| text[..pos].rfind('\n').map(|nl| nl + 1))
        .ok_or_else(|| Error::AnonymousMember(format!("member {member} not found")))?;
    let indent = &text[line_start..text[line_start..].find(&use_site).unwrap_or(0) + line_start];
    let mut anonymous = format!("{indent}union {{\n");
    for line in body.lines() {
        anonymous.push_str(indent);
        anonymous.push_str(line);
        anonymous.push('\n');
    }
    anonymous.push_str(indent);
    anonymous.push_str("};");
    let full_use = format!("{indent}{use_site}");
    Ok(text.replacen(&full_use, &anonymous, 1))
}

/// Macros UCX defines with `UCS_BIT` (type `unsigned long`): written the
/// same way, so that their C type is UCX's.
fn is_unsigned_long_macro(name: &str) -> bool {
    name.starts_with("UCT_IFACE_FLAG_") || name == "UCT_AM_ID_MAX"
}

/// `#define X <power of two>` becomes `#define X UCS_BIT(n)` for the macros
/// UCX defines that way.
fn unsigned_long_macros(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let mut words = body.split(' ');
        if let (Some("#define"), Some(name), Some(value), None) =
            (words.next(), words.next(), words.next(), words.next())
        {
            if let Ok(value) = value.parse::<u64>() {
                if is_unsigned_long_macro(name) && value.is_power_of_two() {
                    out.push_str(&format!(
                        "#define {name} UCS_BIT({})",
                        value.trailing_zeros()
                    ));
                    out.push_str(&line[body.len()..]);
                    continue;
                }
            }
        }
        out.push_str(line);
    }
    out
}

/// Where `#define name ...` (with the doc comment right above it and the
/// blank line after it) lies in `text`, and its value.
fn find_define(text: &str, name: &str) -> Option<(std::ops::Range<usize>, String, String)> {
    let needle = format!("\n#define {name} ");
    let start = text.find(&needle)? + 1;
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let value = text[start + needle.len() - 1..line_end].to_string();
    let mut end = line_end;
    if text[end..].starts_with("\n\n") {
        end += 2;
    } else if end < text.len() {
        end += 1;
    }
    // The doc comment directly above: "/**\n * ...\n */\n".
    let mut begin = start;
    let mut doc = String::new();
    if text[..start].ends_with(" */\n") {
        if let Some(open) = text[..start].rfind("/**\n") {
            if !text[open..start].contains("\n\n") {
                begin = open;
                doc = text[open..start].to_string();
            }
        }
    }
    Some((begin..end, value, doc))
}

/// Declares `spec` as UCX does: the members' `#define`s of our constants
/// become the enum's members (with their docs and values), placed where our
/// typedef of the enum type was, or where the first member was.
fn declare_enum(text: &str, spec: &EnumSpec) -> Result<String, Error> {
    let label = spec.tag.or(spec.typedef).unwrap_or(spec.members[0]);
    let mut found = Vec::new();
    for member in spec.members {
        match find_define(text, member) {
            Some(define) => found.push((*member, define)),
            None => {
                return Err(Error::Enum(format!(
                    "{}: member {member} of {label} is not defined here",
                    spec.header
                )))
            }
        }
    }
    let mut body = String::new();
    for (member, (_, value, doc)) in &found {
        for line in doc.lines() {
            body.push_str("    ");
            body.push_str(line);
            body.push('\n');
        }
        body.push_str(&format!("    {member} = {value},\n"));
    }
    let head = match spec.tag {
        Some(tag) => format!("enum {tag}"),
        None => "enum".to_string(),
    };
    let declaration = match (spec.tag, spec.typedef) {
        (Some(tag), Some(typedef)) => {
            format!("{head} {{\n{body}}};\n\ntypedef enum {tag} {typedef};\n")
        }
        (None, Some(typedef)) => format!("typedef {head} {{\n{body}}} {typedef};\n"),
        (_, None) => format!("{head} {{\n{body}}};\n"),
    };
    // Remove the defines, last first, leaving a mark where the first was.
    const MARK: &str = "\u{1}ENUM\u{1}";
    let mut ranges: Vec<_> = found
        .iter()
        .map(|(_, (range, _, _))| range.clone())
        .collect();
    let first = ranges[0].start;
    ranges.sort_by_key(|range| std::cmp::Reverse(range.start));
    let mut out = text.to_string();
    for range in ranges {
        let mark = if range.start == first { MARK } else { "" };
        out.replace_range(range, mark);
    }
    if let Some(typedef) = spec.typedef {
        let suffix = format!(" {typedef};\n");
        let typedef_line = out.lines().position(|line| {
            line.starts_with("typedef ")
                && !line.contains('(')
                && format!("{line}\n").ends_with(&suffix)
        });
        if let Some(index) = typedef_line {
            let start: usize = out.lines().take(index).map(|l| l.len() + 1).sum();
            let end = start + out[start..].find('\n').map_or(out.len() - start, |i| i + 1);
            out.replace_range(start..end, &declaration);
            return Ok(out.replace(MARK, ""));
        }
    }
    Ok(out.replace(MARK, &format!("{declaration}\n")))
}

/// Every enum of `header` declared as UCX declares it.
fn declare_enums(text: &str, header: &str) -> Result<String, Error> {
    let mut out = text.to_string();
    for spec in ENUMS.iter().filter(|spec| spec.header == header) {
        out = declare_enum(&out, spec)?;
    }
    Ok(out)
}

/// Everything the headers are generated from: each mapped file's items.
pub struct Sources {
    root: PathBuf,
    files: BTreeMap<&'static str, FileItems>,
    /// Struct/union/opaque type name -> `struct` / `union`.
    tagged: BTreeMap<String, &'static str>,
    /// Scratch directory for the `export_dispatch!` declarations.
    scratch: PathBuf,
}

impl Sources {
    /// Scans every mapped file that exists below `root`.
    pub fn scan(root: &Path) -> Result<Sources, Error> {
        let mut files = BTreeMap::new();
        let mut tagged = BTreeMap::new();
        for spec in HEADERS {
            for source in spec.sources {
                let path = root.join(source);
                if path.exists() && !files.contains_key(source) {
                    let items = scan_file(&path)?;
                    tagged.extend(items.tagged.iter().cloned());
                    files.insert(*source, items);
                }
            }
        }
        let scratch = std::env::temp_dir().join(format!("headergen-{}", std::process::id()));
        fs::create_dir_all(&scratch).map_err(|e| Error::Io(scratch.clone(), e))?;
        Ok(Sources {
            root: root.to_owned(),
            files,
            tagged,
            scratch,
        })
    }

    fn claimed_elsewhere(spec: &HeaderSpec, name: &str) -> bool {
        HEADERS
            .iter()
            .any(|other| other.path != spec.path && other.claims.contains(&name))
    }

    /// Adds one Rust file (and its `export_dispatch!` declarations) to
    /// `paths`, and to `exclude` the exports `spec` must not declare.
    fn add_input(
        &self,
        spec: &HeaderSpec,
        source: &str,
        items: &FileItems,
        own: bool,
        paths: &mut Vec<PathBuf>,
        exclude: &mut Vec<String>,
    ) -> Result<(), Error> {
        paths.push(self.root.join(source));
        if !items.dispatch_source.is_empty() {
            let path = self.scratch.join(source.replace('/', "_"));
            fs::write(&path, &items.dispatch_source).map_err(|e| Error::Io(path.clone(), e))?;
            paths.push(path);
        }
        let items_of_file = items.exports.iter().chain(&items.types);
        for item in items_of_file.chain(&items.constants) {
            let keep = if own {
                !Self::claimed_elsewhere(spec, item)
            } else {
                spec.claims.contains(&item.as_str())
            };
            if !keep {
                exclude.push(item.clone());
            }
        }
        Ok(())
    }

    /// The Rust files cbindgen reads for `spec`, and the exports to leave out.
    fn inputs(&self, spec: &HeaderSpec) -> Result<(Vec<PathBuf>, Vec<String>), Error> {
        let mut paths = Vec::new();
        let mut exclude: Vec<String> = spec.exclude.iter().map(|s| s.to_string()).collect();
        for source in spec.sources {
            if let Some(items) = self.files.get(source) {
                self.add_input(spec, source, items, true, &mut paths, &mut exclude)?;
            }
        }
        for (source, items) in &self.files {
            let holds_claim = items
                .exports
                .iter()
                .chain(&items.types)
                .any(|item| spec.claims.contains(&item.as_str()));
            if holds_claim && !spec.sources.contains(source) {
                self.add_input(spec, source, items, false, &mut paths, &mut exclude)?;
            }
        }
        Ok((paths, exclude))
    }

    /// Generates one header's text.
    pub fn generate_header(&self, spec: &HeaderSpec) -> Result<String, Error> {
        let config_path = self.root.join("cbindgen.toml");
        let mut config = cbindgen::Config::from_file(&config_path).map_err(Error::Config)?;
        config.header = Some(GENERATED_NOTICE.to_string());
        config.include_guard = Some(guard_name(spec.path));
        // Angle brackets for our headers too, as UCX callers write them: the
        // include directory is on the search path, not next to the includer.
        config.includes = Vec::new();
        config.sys_includes = spec
            .sys_includes
            .iter()
            .chain(spec.includes)
            .map(|s| s.to_string())
            .collect();
        if !spec.macros.is_empty() {
            config.after_includes = Some(spec.macros.trim_end().to_string());
        }

        let mut own_tagged = Vec::new();
        for source in spec.sources {
            if let Some(items) = self.files.get(source) {
                own_tagged.extend(items.tagged.iter().map(|(name, _)| name.clone()));
                config.export.include.extend(items.types.iter().cloned());
            }
        }
        for (name, kind) in &self.tagged {
            if !own_tagged.contains(name) {
                config
                    .export
                    .rename
                    .insert(name.clone(), format!("{kind} {name}"));
            }
        }
        let claimed_types = self.files.values().flat_map(|items| &items.types);
        config.export.include.extend(
            claimed_types
                .filter(|name| spec.claims.contains(&name.as_str()))
                .cloned(),
        );
        let (mut paths, exclude) = self.inputs(spec)?;
        config.export.exclude.extend(exclude);
        if paths.is_empty() {
            // A header of macros and includes only.
            let empty = self.scratch.join("empty.rs");
            fs::write(&empty, "").map_err(|e| Error::Io(empty.clone(), e))?;
            paths.push(empty);
        }

        let mut builder = cbindgen::Builder::new().with_config(config);
        for path in &paths {
            builder = builder.with_src(path);
        }
        let mut out = Vec::new();
        builder
            .generate()
            .map_err(|e| Error::Cbindgen(spec.path.to_string(), Box::new(e)))?
            .write(&mut out);
        let mut text = parenthesize_negative_defines(&String::from_utf8_lossy(&out));
        for (union_tag, member) in spec.anonymous_members {
            text = inline_anonymous_member(&text, union_tag, member)?;
        }
        text = declare_enums(&text, spec.path)?;
        Ok(unsigned_long_macros(&text))
    }
}

impl Drop for Sources {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.scratch);
    }
}

/// Generates every header into `out_dir` (e.g. the crate's `include/`).
/// Returns the paths written.
pub fn generate(out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    generate_from(&crate_root(), out_dir)
}

/// As [`generate`], reading the sources below `root`. A header whose Rust
/// files do not exist yet is skipped.
pub fn generate_from(root: &Path, out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let sources = Sources::scan(root)?;
    let mut written = Vec::new();
    for spec in HEADERS {
        let all_missing = spec.sources.iter().all(|s| !sources.files.contains_key(s));
        if !spec.sources.is_empty() && all_missing {
            continue;
        }
        let text = sources.generate_header(spec)?;
        let path = out_dir.join(spec.path);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| Error::Io(dir.to_owned(), e))?;
        }
        fs::write(&path, text).map_err(|e| Error::Io(path.clone(), e))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_defines_get_parentheses() {
        let text = "#define A -1\n#define B 2\n#define C (-3)\n#define D -x\n";
        assert_eq!(
            parenthesize_negative_defines(text),
            "#define A (-1)\n#define B 2\n#define C (-3)\n#define D -x\n"
        );
    }

    #[test]
    fn anonymous_member_is_inlined() {
        let text = "union u_detail {\n    int a;\n    long b;\n};\n\nstruct s {\n    int x;\n    union u_detail detail;\n};\n";
        let out = inline_anonymous_member(text, "u_detail", "detail").expect("inlined");
        assert!(
            out.contains(
                "struct s {\n    int x;\n    union {\n        int a;\n        long b;\n    };\n};"
            ),
            "{out}"
        );
        assert!(inline_anonymous_member(text, "missing", "detail").is_err());
        assert!(inline_anonymous_member(text, "u_detail", "other").is_err());
    }

    #[test]
    fn dispatch_macro_becomes_plain_declarations() {
        let source = r#"
            export_dispatch! {
                /// Short put.
                fn uct_ep_put_short(ep_ops ep: uct_ep_h, buffer: *const c_void, length: c_uint) -> ucs_status_t => ep_put_short;
                fn uct_ep_am_bcopy(ep_ops ep: uct_ep_h, id: u8) -> isize => ep_am_bcopy;
            }
        "#;
        let dir = std::env::temp_dir().join(format!("headergen-test-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("scratch");
        let path = dir.join("ep.rs");
        fs::write(&path, source).expect("write");
        let items = scan_file(&path).expect("scan");
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(items.exports, ["uct_ep_put_short", "uct_ep_am_bcopy"]);
        let decls = syn::parse_file(&items.dispatch_source).expect("valid Rust");
        assert_eq!(decls.items.len(), 2);
        assert!(items.dispatch_source.contains("/// Short put."));
        assert!(items.dispatch_source.contains("-> ssize_t"));
    }

    #[test]
    fn defines_become_the_enum_in_place_of_its_typedef() {
        let text = "x\ntypedef unsigned int op_t;\n\n/**\n * First.\n */\n#define OP_A 0\n\n#define OP_B 1\n\nstruct s;\n";
        let spec = EnumSpec {
            header: "h",
            tag: Some("op"),
            typedef: Some("op_t"),
            members: &["OP_A", "OP_B"],
        };
        let out = declare_enum(text, &spec).expect("declared");
        assert_eq!(
            out,
            "x\nenum op {\n    /**\n     * First.\n     */\n    OP_A = 0,\n    OP_B = 1,\n};\n\ntypedef enum op op_t;\n\nstruct s;\n"
        );
        let anonymous = EnumSpec {
            header: "h",
            tag: None,
            typedef: None,
            members: &["OP_B"],
        };
        let out = declare_enum("a\n#define OP_B 1\n\nb\n", &anonymous).expect("declared");
        assert_eq!(out, "a\nenum {\n    OP_B = 1,\n};\n\nb\n");
        let missing = EnumSpec {
            header: "h",
            tag: Some("op"),
            typedef: None,
            members: &["OP_C"],
        };
        assert!(declare_enum(text, &missing).is_err());
    }

    #[test]
    fn iface_flags_are_unsigned_long_bits() {
        let text = "#define UCT_IFACE_FLAG_V2_QUERY_TOKEN 4\n#define UCT_TL_NAME_MAX 10\n";
        assert_eq!(
            unsigned_long_macros(text),
            "#define UCT_IFACE_FLAG_V2_QUERY_TOKEN UCS_BIT(2)\n#define UCT_TL_NAME_MAX 10\n"
        );
    }

    #[test]
    fn each_claimed_item_is_claimed_by_its_ucx_header_only() {
        let claimers = |name: &str| -> Vec<&str> {
            HEADERS
                .iter()
                .filter(|h| h.claims.contains(&name))
                .map(|h| h.path)
                .collect()
        };
        for name in UCT_V2_FUNCTIONS {
            assert_eq!(claimers(name), ["uct/api/v2/uct_v2.h"], "{name}");
        }
        for name in UCT_DEF_FORWARD_TYPES {
            assert_eq!(claimers(name), ["uct/api/uct_def.h"], "{name}");
        }
        let claimed: usize = HEADERS.iter().map(|h| h.claims.len()).sum();
        assert_eq!(
            claimed,
            UCT_V2_FUNCTIONS.len() + UCT_DEF_FORWARD_TYPES.len()
        );
    }
}
