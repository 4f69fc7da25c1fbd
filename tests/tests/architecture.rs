//! The shape of the house, checked: inside every crate, data flows one way between modules
//! (no two modules that use each other, directly or round a longer loop), and no source file
//! grows past what a newcomer can read in one sitting.
//!
//! How a dependency is counted: a file depends on the module a `crate::…`, `super::…`,
//! `self::…` or `child::…` path names (a child module of the file's own), whether in a `use`
//! or written inline. Paths are resolved to the
//! deepest module file that exists. Two kinds of reference are not dependencies:
//! - `pub use` re-exports in a `lib.rs` or `mod.rs`: that is the facade naming its children's
//!   items for the outside (also inside an inline module of such a file), not the parent
//!   using them;
//! - a path back into the file itself (a `#[cfg(test)] mod tests { use super::*; }`).
//!
//! A parent module that uses a child's item while the child uses the parent's is a cycle like
//! any other: put what both need in a leaf module.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Above this many lines, a source file is doing more than one job.
const MAX_LINES: usize = 800;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives inside the workspace")
        .to_path_buf()
}

/// The `src/` folder of every library or binary crate of the workspace.
fn crate_sources() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut crates = Vec::new();
    for entry in [
        "engine",
        "policy",
        "store",
        "search",
        "search-semantic",
        "search-eval",
        "plugin-api",
        "mcp",
        "telemetry",
        "cli",
    ] {
        crates.push(root.join(entry).join("src"));
    }
    let plugins = fs::read_dir(root.join("plugins")).expect("plugins/ exists");
    for plugin in plugins {
        let src = plugin.expect("readable plugins/ entry").path().join("src");
        if src.is_dir() {
            crates.push(src);
        }
    }
    crates.sort();
    crates
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("readable source folder")
        .map(|e| e.expect("readable entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file: `src/lib.rs` and `src/main.rs` are `[]`, `src/a/mod.rs` and
/// `src/a.rs` are `[a]`, `src/a/b.rs` is `[a, b]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("file under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
        parts.push(stem.to_string());
    }
    parts
}

/// Drops comments and the contents of string literals, so a path in a doc comment or a
/// message is not taken for a dependency.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            i += end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(rest.len(), |e| e + 2);
            i += end;
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].bytes().take_while(|&b| b == b'#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let body = 2 + hashes;
            let end = rest[body..]
                .find(&close)
                .map_or(rest.len(), |e| body + e + close.len());
            out.push_str("\"\"");
            i += end;
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = (j + 1).min(bytes.len());
        } else if bytes[i] == b'\''
            && i + 2 < bytes.len()
            && (bytes[i + 2] == b'\'' || bytes[i + 1] == b'\\')
        {
            // a char literal such as '"' or '\''; lifetimes ('a) are left alone
            let end = text[i + 1..]
                .find('\'')
                .map_or(bytes.len(), |e| i + 1 + e + 1);
            let end = if bytes[i + 1] == b'\\' {
                text[i + 3..]
                    .find('\'')
                    .map_or(bytes.len(), |e| i + 3 + e + 1)
            } else {
                end
            };
            out.push_str("' '");
            i = end;
        } else {
            let ch = rest.chars().next().expect("not at the end");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Expands a `use` tree such as `crate::{a::{b, c}, d}` into its paths.
fn expand_use(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let close = tree.rfind('}').unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| expand_use(&format!("{prefix}{p}")))
        .collect()
}

/// Every `crate::`/`super::`/`self::` path in a file's code, with whether it sits in a
/// `pub use` (a re-export).
fn paths_in(code: &str) -> Vec<(String, bool)> {
    let mut found = Vec::new();
    // `use` statements, including grouped trees
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else { break };
        let before = rest[..at].trim_end();
        let is_pub = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        for path in expand_use(&after[..end]) {
            found.push((path.trim_start_matches("::").to_string(), is_pub));
        }
        rest = &after[end..];
    }
    // inline paths outside `use` statements
    let mut stripped = String::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        stripped.push_str(&rest[..at]);
        let after = &rest[at..];
        let end = after.find(';').map_or(after.len(), |e| e + 1);
        rest = &after[end..];
    }
    stripped.push_str(rest);
    // every `name::…` path; which of them name a module of this crate is for `resolve`
    let mut from = 0;
    while let Some(at) = stripped[from..].find("::") {
        let at = from + at;
        let start = stripped[..at]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |s| s + 1);
        let preceded = stripped[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c == ':' || c == '$');
        let end = stripped[at..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .map_or(stripped.len(), |e| at + e);
        if !preceded && start < at {
            found.push((stripped[start..end].to_string(), false));
        }
        from = end.max(at + 2);
    }
    found
}

fn find_word(text: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = text[from..].find(word) {
        let at = from + at;
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let after_ok = text[at + word.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_whitespace());
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The module a path names, resolved to the deepest module that has a file.
fn resolve(from: &[String], path: &str, modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let first = *segments.first()?;
    let mut base: Vec<String> = match first {
        "crate" => Vec::new(),
        "self" | "super" => from.to_vec(),
        child => {
            // a path relative to this module: only a child module of this crate counts
            let mut as_child = from.to_vec();
            as_child.push(child.to_string());
            if !modules.contains(&as_child) {
                return None;
            }
            from.to_vec()
        }
    };
    if first == "crate" || first == "self" {
        segments.remove(0);
    }
    while segments.first() == Some(&"super") {
        base.pop()?;
        segments.remove(0);
    }
    let mut best = base.clone();
    let mut current = base;
    for seg in segments {
        current.push(seg.to_string());
        if modules.contains(&current) {
            best = current.clone();
        } else {
            break;
        }
    }
    Some(best)
}

struct CrateGraph {
    edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
}

/// Splits inline `mod name { … }` blocks out of a file's code: each comes back with its name,
/// and the outer code keeps an empty `mod name {}` in its place.
fn inline_modules(code: &str) -> (String, Vec<(String, String)>) {
    let mut outer = String::new();
    let mut inner = Vec::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "mod") {
        let after = &rest[at + 3..];
        let name_len = after
            .trim_start()
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(0);
        let skipped = after.len() - after.trim_start().len();
        let name = &after[skipped..skipped + name_len];
        let tail = after[skipped + name_len..].trim_start();
        if name.is_empty() || !tail.starts_with('{') {
            outer.push_str(&rest[..at + 3]);
            rest = after;
            continue;
        }
        let open = rest.len() - tail.len();
        let mut depth = 0;
        let mut close = rest.len();
        for (i, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        outer.push_str(&rest[..open]);
        outer.push_str("{}");
        inner.push((
            name.to_string(),
            rest[(open + 1).min(close)..close].to_string(),
        ));
        rest = &rest[(close + 1).min(rest.len())..];
    }
    outer.push_str(rest);
    (outer, inner)
}

/// The modules one piece of code depends on, resolving `self`/`super` from `scope`.
fn dependencies(
    code: &str,
    scope: &[String],
    is_facade: bool,
    modules: &BTreeSet<Vec<String>>,
    out: &mut BTreeSet<Vec<String>>,
) {
    let (outer, inner) = inline_modules(code);
    for (path, is_pub_use) in paths_in(&outer) {
        if is_facade && is_pub_use {
            continue;
        }
        if let Some(to) = resolve(scope, &path, modules) {
            out.insert(to);
        }
    }
    for (name, body) in inner {
        let mut nested = scope.to_vec();
        nested.push(name);
        dependencies(&body, &nested, is_facade, modules, out);
    }
}

fn graph_of(src: &Path) -> CrateGraph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in &files {
        let from = module_of(src, file);
        let is_facade =
            file.ends_with("lib.rs") || file.ends_with("mod.rs") || file.ends_with("main.rs");
        let code = code_only(&fs::read_to_string(file).expect("readable source"));
        let mut out = BTreeSet::new();
        dependencies(&code, &from, is_facade, &modules, &mut out);
        // a path back into the file itself (an inline test module's `use super::*`) is no edge
        out.remove(&from);
        edges.insert(from, out);
    }
    CrateGraph { edges }
}

/// The groups of modules that reach each other (strongly connected components with more
/// than one member), by Tarjan's algorithm. An empty list means data flows one way.
fn cycles(graph: &CrateGraph) -> Vec<Vec<Vec<String>>> {
    struct State<'g> {
        graph: &'g CrateGraph,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        on_stack: BTreeSet<&'g Vec<String>>,
        found: Vec<Vec<Vec<String>>>,
    }
    fn connect<'g>(state: &mut State<'g>, node: &'g Vec<String>) {
        let n = state.index.len();
        state.index.insert(node, n);
        state.low.insert(node, n);
        state.stack.push(node);
        state.on_stack.insert(node);
        let graph = state.graph;
        for next in graph.edges.get(node).into_iter().flatten() {
            // only modules that are files of the crate take part
            let Some((next, _)) = graph.edges.get_key_value(next) else {
                continue;
            };
            if !state.index.contains_key(next) {
                connect(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(member);
                component.push(member.clone());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.edges.keys() {
        if !state.index.contains_key(node) {
            connect(&mut state, node);
        }
    }
    state.found
}

fn show(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        module.join("::")
    }
}

#[test]
fn no_module_of_any_crate_uses_a_module_that_uses_it_back() {
    let mut found = Vec::new();
    for src in crate_sources() {
        let graph = graph_of(&src);
        for component in cycles(&graph) {
            let names: Vec<String> = component.iter().map(|m| show(m)).collect();
            found.push(format!("{}: {{{}}}", src.display(), names.join(", ")));
        }
    }
    assert!(
        found.is_empty(),
        "modules that use each other:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_source_file_is_longer_than_eight_hundred_lines() {
    let mut long = Vec::new();
    for src in crate_sources() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let lines = fs::read_to_string(&file)
                .expect("readable source")
                .lines()
                .count();
            if lines > MAX_LINES {
                long.push(format!("{}: {lines} lines", file.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_cycle_check_finds_a_two_module_cycle() {
    // The checker itself, on a made-up crate: a uses b, b uses a.
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("guard")).expect("mkdir");
    fs::write(
        src.join("lib.rs"),
        "mod a;\nmod guard;\npub use a::Thing;\n",
    )
    .expect("write");
    fs::write(
        src.join("a.rs"),
        "use crate::guard::{layers::{Layer, Next}};\npub struct Thing;\n",
    )
    .expect("write");
    fs::write(
        src.join("guard/mod.rs"),
        "mod layers;\npub use layers::Layer;\n",
    )
    .expect("write");
    fs::write(
        src.join("guard/layers.rs"),
        "// crate::b in a comment is not a use\npub fn f() -> crate::a::Thing { let _ = \"crate::x\"; crate::a::Thing }\n",
    )
    .expect("write");
    let graph = graph_of(&src);
    let found = cycles(&graph);
    let names: Vec<Vec<String>> = found
        .iter()
        .map(|c| c.iter().map(|m| show(m)).collect())
        .collect();
    assert_eq!(
        names,
        [["a", "guard::layers"]],
        "a -> guard::layers -> a is a cycle"
    );
}

#[test]
fn the_cycle_check_accepts_a_facade_that_re_exports_its_children() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("guard")).expect("mkdir");
    fs::write(
        src.join("lib.rs"),
        "mod call;\nmod guard;\npub use guard::{Guard, layers::Layer};\n",
    )
    .expect("write");
    fs::write(
        src.join("call.rs"),
        "pub struct Call;\n#[cfg(test)]\nmod tests { use super::*; }\n",
    )
    .expect("write");
    fs::write(
        src.join("guard/mod.rs"),
        "pub mod layers;\npub use layers::Guard;\n",
    )
    .expect("write");
    fs::write(
        src.join("guard/layers.rs"),
        "use crate::call::Call;\npub struct Guard(Call);\npub struct Layer;\n",
    )
    .expect("write");
    let graph = graph_of(&src);
    assert_eq!(cycles(&graph), Vec::<Vec<Vec<String>>>::new());
}
