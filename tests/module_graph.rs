//! The crate's module graph, read from its own source: every `use crate::…`
//! / `use super::…` tree and every `crate::…` path outside comments, strings
//! and `#[cfg(test)]` modules, in every file under src/.
//!
//! Checked:
//! - the top-level modules form no import circle, and each imports only the
//!   layers below it ([`LAYERS`], DESIGN.md §6: `core` imports only `abi`);
//! - inside every module folder (src/ itself, src/rc, src/hca, …), no
//!   circle of more than one file; and none in the crates below `uct`
//!   ([`CRATE_SOURCES`]: the mlx5 formats, the soft HCA: its device, engine,
//!   wire and link).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules from the bottom up: each may import only those before it
/// (so `core` imports only `abi`, and nothing imports `api`). The mlx5
/// formats are a crate of their own (`crates/mlx5`, re-exported as
/// `crate::mlx5`), below all of these.
const LAYERS: &[&str] = &[
    "abi", "core", "hca", "ib", "failover", "uct", "rc", "cm", "api",
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The source roots of the workspace's own crates below `uct`, each checked
/// for import circles like src/.
const CRATE_SOURCES: &[&str] = &["crates/mlx5/src", "crates/softhca/src"];

/// The soft HCA crate's top-level modules from the bottom up, each importing
/// only those before it: the sans-IO part (the wire format, the engine and
/// its fuzz checks) knows nothing of the port or the device; the port
/// (`shm` rings, `batch`ed datagrams, the `link`) nothing of the device.
const SOFTHCA_LAYERS: &[&str] = &[
    "wire",
    "engine",
    "engine_fuzzing",
    "shm",
    "batch",
    "link",
    "device",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The module path a file defines: `rc/ep.rs` -> `[rc, ep]`,
/// `hca/soft/mod.rs` -> `[hca, soft]`, `lib.rs` -> `[]`.
fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop().expect("a file name");
    let stem = file.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && stem == "lib") {
        parts.push(stem.to_string());
    }
    parts
}

/// `source` with comments, string and char literals blanked out (newlines
/// kept), so that only code is searched for paths and braces.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let blank = |out: &mut String, text: &[u8]| {
        for &b in text {
            out.push(if b == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = 0;
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string_len(rest) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let len = (j + 1).min(rest.len());
            blank(&mut out, &rest[..len]);
            i += len;
        } else if let Some(len) = char_literal_len(&source[i..]) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else {
            let len = source[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&source[i..i + len]);
            i += len;
        }
    }
    out
}

/// Length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the start.
fn raw_string_len(text: &[u8]) -> Option<usize> {
    let start = if text.starts_with(b"br") {
        2
    } else if text.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = text[start..].iter().take_while(|&&b| b == b'#').count();
    if text.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let body = start + hashes + 1;
    let end = text[body..]
        .windows(close.len())
        .position(|window| window == close.as_slice())?;
    Some(body + end + close.len())
}

/// Length of a char literal (`'a'`, `'\n'`, `'\u{1F600}'`) at the start;
/// `None` for a lifetime.
fn char_literal_len(text: &str) -> Option<usize> {
    let rest = text.strip_prefix('\'')?;
    if let Some(escaped) = rest.strip_prefix('\\') {
        // The escaped char itself may be a quote (`'\''`).
        let first = escaped.chars().next()?.len_utf8();
        return Some(2 + first + escaped[first..].find('\'')? + 1);
    }
    let ch = rest.chars().next()?;
    let after = 1 + ch.len_utf8();
    text[after..].starts_with('\'').then_some(after + 1)
}

/// `code` without its `#[cfg(test)]` items (test modules may reach anywhere).
fn without_test_items(code: &str) -> String {
    let mut out = code.to_string();
    while let Some(start) = out.find("#[cfg(test)]") {
        let bytes = out.as_bytes();
        let mut j = start + "#[cfg(test)]".len();
        // The item ends at its `;` or at the brace closing its first block.
        let mut depth = 0usize;
        while j < bytes.len() {
            match bytes[j] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        j += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    j += 1;
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        let blanked: String = out[start..j]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(start..j, &blanked);
    }
    out
}

/// Expands one use tree (`a::{b, c::d as e, f::*}`) into its paths.
fn expand_use_tree(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = path_segments(&tree[..open]);
        let close = tree.rfind('}').expect("balanced use tree");
        let mut base = prefix.to_vec();
        base.extend(head);
        for part in split_top_level(&tree[open + 1..close]) {
            expand_use_tree(part, &base, out);
        }
    } else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        let mut full = prefix.to_vec();
        full.extend(path_segments(path));
        out.push(full);
    }
}

fn path_segments(text: &str) -> Vec<String> {
    text.split("::")
        .map(str::trim)
        .filter(|segment| !segment.is_empty())
        .map(str::to_string)
        .collect()
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Every path a file names, absolute from the crate root (`super::` and
/// `self::` resolved against the file's module).
fn paths_named(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut raw: Vec<Vec<String>> = Vec::new();
    // use trees
    let mut rest = code;
    while let Some(at) = find_keyword(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        expand_use_tree(&after[..end], &[], &mut raw);
        rest = &after[end + 1..];
    }
    // inline paths: crate::a::b, super::a
    for keyword in ["crate", "super"] {
        let mut rest = code;
        while let Some(at) = find_keyword(rest, keyword) {
            let tail = &rest[at..];
            let len = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            let segments = path_segments(&tail[..len]);
            if segments.len() > 1 {
                raw.push(segments);
            }
            rest = &tail[len.max(keyword.len())..];
        }
    }
    raw.into_iter()
        .filter_map(|path| resolve(&path, module))
        .collect()
}

/// Position of `word` as a whole word in `text`.
fn find_keyword(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        if boundary(before) && boundary(after) && !text[..at].ends_with('$') {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

fn resolve(path: &[String], module: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = match path.first()?.as_str() {
        "crate" => Vec::new(),
        "super" | "self" => module.to_vec(),
        _ => return None,
    };
    let mut rest = if path[0] == "crate" { &path[1..] } else { path };
    while let Some(first) = rest.first() {
        match first.as_str() {
            "super" => {
                base.pop()?;
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    base.extend(rest.iter().filter(|s| *s != "*").cloned());
    Some(base)
}

/// The module graph: for each file (relative to src/), the module paths it
/// names.
struct Graph {
    /// File -> its module path.
    modules: BTreeMap<String, Vec<String>>,
    /// File -> absolute paths it names.
    uses: BTreeMap<String, Vec<Vec<String>>>,
}

impl Graph {
    fn read() -> Graph {
        let graph = Graph::read_root(&src_dir());
        assert!(
            graph.modules.len() > 50,
            "src/ read: {} files",
            graph.modules.len()
        );
        graph
    }

    /// The graph of the crate whose source root is `src`.
    fn read_root(src: &Path) -> Graph {
        let src = src.to_path_buf();
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut modules = BTreeMap::new();
        let mut uses = BTreeMap::new();
        for file in files {
            let relative = file.strip_prefix(&src).expect("under src/").to_path_buf();
            let name = relative.to_string_lossy().replace('\\', "/");
            let module = module_of(&relative);
            let source = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
            let code = without_test_items(&code_only(&source));
            uses.insert(name.clone(), paths_named(&code, &module));
            modules.insert(name, module);
        }
        Graph { modules, uses }
    }

    /// The file defining the longest module prefix of `path`.
    fn file_of(&self, path: &[String]) -> Option<&str> {
        self.modules
            .iter()
            .filter(|(_, module)| path.starts_with(module))
            .max_by_key(|(_, module)| module.len())
            .map(|(file, _)| file.as_str())
    }

    /// Edges between top-level modules named in `layers`: (from, to) -> one
    /// file that makes it.
    fn top_level_edges(&self, layers: &[&str]) -> BTreeMap<(String, String), String> {
        let mut edges = BTreeMap::new();
        for (file, paths) in &self.uses {
            let Some(from) = self.modules[file].first() else {
                continue;
            };
            for path in paths {
                if let Some(to) = path.first() {
                    if to != from && layers.contains(&to.as_str()) {
                        edges
                            .entry((from.clone(), to.clone()))
                            .or_insert_with(|| file.clone());
                    }
                }
            }
        }
        edges
    }

    /// Edges between the files under `folder` (relative to the crate's
    /// source root, e.g. `rc/`; `""` for all of them).
    fn file_edges_under(&self, folder: &str) -> BTreeMap<String, BTreeSet<String>> {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (file, paths) in &self.uses {
            if !file.starts_with(folder) {
                continue;
            }
            edges.entry(file.clone()).or_default();
            for path in paths {
                if let Some(to) = self.file_of(path) {
                    if to != file && to.starts_with(folder) {
                        edges.get_mut(file).unwrap().insert(to.to_string());
                    }
                }
            }
        }
        edges
    }
}

/// Strongly connected components of more than one node (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(walk: &mut Walk<'a>, node: &'a str) {
        let n = walk.index.len();
        walk.index.insert(node, n);
        walk.low.insert(node, n);
        walk.stack.push(node);
        walk.on_stack.insert(node);
        if let Some(targets) = walk.edges.get(node) {
            for target in targets {
                let target = target.as_str();
                if !walk.index.contains_key(target) {
                    visit(walk, target);
                    let low = walk.low[node].min(walk.low[target]);
                    walk.low.insert(node, low);
                } else if walk.on_stack.contains(target) {
                    let low = walk.low[node].min(walk.index[target]);
                    walk.low.insert(node, low);
                }
            }
        }
        if walk.low[node] == walk.index[node] {
            let mut component = BTreeSet::new();
            while let Some(top) = walk.stack.pop() {
                walk.on_stack.remove(top);
                component.insert(top.to_string());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                walk.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !walk.index.contains_key(node.as_str()) {
            visit(&mut walk, node);
        }
    }
    walk.found.sort();
    walk.found
}

#[test]
fn every_top_level_module_is_a_known_layer() {
    let graph = Graph::read();
    let top: BTreeSet<&str> = graph
        .modules
        .values()
        .filter_map(|module| module.first().map(String::as_str))
        .collect();
    let unknown: Vec<_> = top.iter().filter(|m| !LAYERS.contains(m)).collect();
    assert!(
        unknown.is_empty(),
        "top-level modules missing from LAYERS (place them in the layer order): {unknown:?}"
    );
}

#[test]
fn top_level_modules_import_only_layers_below_them() {
    let graph = Graph::read();
    let edges = graph.top_level_edges(LAYERS);
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m).expect("a known layer");
    let upward: Vec<String> = edges
        .iter()
        .filter(|((from, to), _)| rank(to) > rank(from))
        .map(|((from, to), file)| format!("{from} -> {to} (e.g. src/{file})"))
        .collect();
    assert!(
        upward.is_empty(),
        "imports against the layer order {LAYERS:?}:\n  {}",
        upward.join("\n  ")
    );
    // The order alone excludes circles; say so in terms of the graph too.
    let mut graph_edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph_edges
            .entry(from.clone())
            .or_default()
            .insert(to.clone());
    }
    assert_eq!(circles(&graph_edges), Vec::<BTreeSet<String>>::new());
}

/// Each circle as `<root>/<innermost folder holding it>: a.rs <-> b.rs …`.
fn describe_circles(root: &str, found: &[BTreeSet<String>]) -> Vec<String> {
    found
        .iter()
        .map(|circle| {
            format!(
                "{root}/{}: {}",
                common_folder(circle),
                circle.iter().cloned().collect::<Vec<_>>().join(" <-> ")
            )
        })
        .collect()
}

#[test]
fn no_module_folder_has_a_file_circle() {
    // A circle inside a folder lies inside every folder above it, so the
    // circles among all the crate's files are those of every folder; each
    // is reported with the innermost folder that holds it.
    let found = describe_circles("src", &circles(&Graph::read().file_edges_under("")));
    assert!(
        found.is_empty(),
        "import circles inside module folders:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_crates_below_uct_have_no_file_circle() {
    for root in CRATE_SOURCES {
        let graph = Graph::read_root(&Path::new(env!("CARGO_MANIFEST_DIR")).join(root));
        assert!(
            graph.modules.len() > 5,
            "{root} read: {} files",
            graph.modules.len()
        );
        let found = describe_circles(root, &circles(&graph.file_edges_under("")));
        assert!(
            found.is_empty(),
            "import circles:\n  {}",
            found.join("\n  ")
        );
    }
}

#[test]
fn the_soft_hca_crate_imports_only_layers_below_each_module() {
    let graph = Graph::read_root(&Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/softhca/src"));
    let top: BTreeSet<&str> = graph
        .modules
        .values()
        .filter_map(|module| module.first().map(String::as_str))
        .collect();
    let unknown: Vec<_> = top.iter().filter(|m| !SOFTHCA_LAYERS.contains(m)).collect();
    assert!(
        unknown.is_empty(),
        "crates/softhca modules missing from SOFTHCA_LAYERS: {unknown:?}"
    );
    let rank = |m: &str| {
        SOFTHCA_LAYERS
            .iter()
            .position(|l| *l == m)
            .expect("a layer")
    };
    let upward: Vec<String> = graph
        .top_level_edges(SOFTHCA_LAYERS)
        .iter()
        .filter(|((from, to), _)| rank(to) > rank(from))
        .map(|((from, to), file)| format!("{from} -> {to} (e.g. crates/softhca/src/{file})"))
        .collect();
    assert!(
        upward.is_empty(),
        "imports against the layer order {SOFTHCA_LAYERS:?}:\n  {}",
        upward.join("\n  ")
    );
}

/// The innermost folder holding every file of `circle` (`""`: src/ itself).
fn common_folder(circle: &BTreeSet<String>) -> String {
    let mut files = circle.iter();
    let Some(first) = files.next() else {
        return String::new();
    };
    let mut folder = first
        .rfind('/')
        .map_or("", |slash| &first[..=slash])
        .to_string();
    for file in files {
        while !file.starts_with(&folder) {
            folder.pop();
            folder.truncate(folder.rfind('/').map_or(0, |slash| slash + 1));
        }
    }
    folder
}

/// The reader itself, on a small source with the forms that must be seen
/// and those that must not.
#[test]
fn reader_sees_use_trees_and_paths_but_not_comments_strings_or_tests() {
    let source = r##"
        use crate::{core::worker::Worker, hca::{Device, devices::find_device as f}};
        use super::fc::Window;
        // use crate::api::hidden;
        /* crate::api::also_hidden */
        const S: &str = "crate::api::in_string";
        const R: &str = r#"crate::api::in_raw"#;
        const C: char = '{';
        const Q: char = '\'';
        fn f<'a>(x: &'a u8) { crate::mlx5::wqe::build(); let _ = pub_crate(); }
        pub(crate) fn g() {}
        #[cfg(test)]
        mod tests { use crate::api::tested; }
    "##;
    let module = vec!["rc".to_string(), "ep".to_string()];
    let code = without_test_items(&code_only(source));
    let mut named: Vec<String> = paths_named(&code, &module)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    named.sort();
    named.dedup();
    assert_eq!(
        named,
        [
            "core::worker::Worker",
            "hca::Device",
            "hca::devices::find_device",
            "mlx5::wqe::build",
            "rc::fc::Window",
        ]
    );
    let folders = |files: &[&str]| common_folder(&files.iter().map(|f| f.to_string()).collect());
    assert_eq!(folders(&["rc/ep.rs", "rc/iface/mod.rs"]), "rc/");
    assert_eq!(folders(&["hca/soft/a.rs", "hca/soft/b.rs"]), "hca/soft/");
    assert_eq!(folders(&["abi/a.rs", "core/b.rs"]), "");
    let mut edges = BTreeMap::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "d")] {
        edges
            .entry(from.to_string())
            .or_insert_with(BTreeSet::new)
            .insert(to.to_string());
    }
    let expected: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    assert_eq!(circles(&edges), vec![expected]);
}
