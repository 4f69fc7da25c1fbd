//! The policies shipped in `policies/` load, and their scripts compile.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolgate_policy::{PluginLocation, Policy, ReductionSettings, ScriptSource, load_file};

fn policies_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../policies")
}

fn load(relative: &str) -> Policy {
    let path = policies_dir().join(relative);
    match load_file(&path) {
        Ok(policy) => policy,
        Err(error) => panic!("{} should load:\n{error}", path.display()),
    }
}

/// Every `.yaml` file under `policies/`, recursively.
fn shipped_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&policies_dir(), &mut out);
    out.sort();
    out
}

#[test]
fn every_shipped_policy_loads() {
    let files = shipped_files();
    assert!(
        files.len() >= 7,
        "expected the shipped policies, found {files:?}"
    );
    for file in files {
        if let Err(error) = load_file(&file) {
            panic!("{} should load:\n{error}", file.display());
        }
    }
}

#[test]
fn every_shipped_policy_names_the_schema() {
    for file in shipped_files() {
        let text = std::fs::read_to_string(&file).expect("readable");
        let first = text.lines().next().unwrap_or("");
        assert!(
            first.starts_with("# yaml-language-server: $schema=")
                && first.ends_with("schemas/policy.schema.json"),
            "{}: first line is {first:?}",
            file.display()
        );
        // The header's relative path really leads to the schema.
        let relative = first.rsplit('=').next().unwrap_or("");
        let schema = file.parent().expect("a parent").join(relative);
        assert!(
            schema.is_file(),
            "{}: {} does not exist",
            file.display(),
            schema.display()
        );
    }
}

#[test]
fn the_default_policy_reads_the_current_directory_and_reduces_to_the_local_store() {
    let policy = load("default.yaml");
    assert_eq!(policy.plugins.len(), 1);
    assert_eq!(
        policy.plugins[0].location,
        PluginLocation::Name("fs".to_owned())
    );
    assert_eq!(policy.plugins[0].config["root"], ".");
    assert_eq!(policy.reduction, Some(ReductionSettings::default()));
    assert_eq!(policy.search, None);
}

#[test]
fn the_testkit_policy_loads_testkit_with_a_two_second_timeout() {
    let policy = load("testkit.yaml");
    assert_eq!(policy.plugins.len(), 1);
    assert_eq!(
        policy.plugins[0].location,
        PluginLocation::Name("testkit".to_owned())
    );
    assert_eq!(policy.dispatch.timeout, Some(Duration::from_secs(2)));
    assert_eq!(policy.reduction, None);
}

#[test]
fn the_offload_policy_uses_testkit_and_the_host_chosen_local_store() {
    let policy = load("offload.yaml");
    assert_eq!(
        policy.plugins[0].location,
        PluginLocation::Name("testkit".to_owned())
    );
    let reduction = policy.reduction.expect("reduction on");
    assert_eq!(reduction.store, None);
}

#[test]
fn the_hooks_example_has_all_four_hooks() {
    let scripts = load("examples/hooks.yaml").scripts;
    assert!(scripts.rewrite.is_some());
    assert!(scripts.before.is_some());
    assert!(scripts.after.is_some());
    assert!(scripts.unknown_tool.is_some());
}

#[test]
fn the_hooks_example_inline_script_offset_points_at_its_first_line() {
    let script = load("examples/hooks.yaml")
        .scripts
        .unknown_tool
        .expect("inline script");
    let text = std::fs::read_to_string(&script.file).expect("the policy file");
    let line = text
        .lines()
        .nth(script.line_offset as usize - 1)
        .unwrap_or("");
    let first_code_line = script.code.lines().next().unwrap_or("");
    assert_eq!(line.trim(), first_code_line.trim());
}

/// The variables each hook's script sees (`call` would be natural, but Rhai reserves it).
fn variables_of(hook: &str) -> &'static [&'static str] {
    match hook {
        "after" => &[
            "tool",
            "model_name",
            "args",
            "call_id",
            "session",
            "outcome",
        ],
        "unknown_tool" => &[
            "tool",
            "model_name",
            "args",
            "call_id",
            "session",
            "suggestions",
        ],
        _ => &["tool", "model_name", "args", "call_id", "session"],
    }
}

/// Compiles a script as the engine does (a raw Rhai engine), with strict variables, so a
/// script that uses a variable its hook does not provide fails here.
fn compile(hook: &str, script: &ScriptSource) {
    let mut engine = rhai::Engine::new_raw();
    engine.set_strict_variables(true);
    let mut scope = rhai::Scope::new();
    for name in variables_of(hook) {
        scope.push_constant(*name, ());
    }
    if let Err(error) = engine.compile_with_scope(&scope, &script.code) {
        panic!(
            "{hook} script {} (from line {}): {error}",
            script.file.display(),
            script.line_offset
        );
    }
}

#[test]
fn every_shipped_script_compiles_with_only_its_hook_variables() {
    let mut count = 0;
    for file in shipped_files() {
        let Ok(policy) = load_file(&file) else {
            continue;
        };
        let s = policy.scripts;
        let hooks = [
            ("rewrite", s.rewrite),
            ("before", s.before),
            ("after", s.after),
            ("unknown_tool", s.unknown_tool),
        ];
        for (hook, script) in hooks {
            if let Some(script) = script {
                compile(hook, &script);
                count += 1;
            }
        }
    }
    assert!(count >= 5, "expected the example scripts, compiled {count}");
}

#[test]
fn call_is_reserved_in_rhai_so_scripts_cannot_name_a_variable_call() {
    // Why the call's fields are variables of their own: if this ever compiles, `call` became usable.
    let engine = rhai::Engine::new_raw();
    assert!(engine.compile("call.tool").is_err());
}

#[test]
fn the_fs_example_confines_the_fs_plugin() {
    let policy = load("examples/fs-readonly.yaml");
    assert_eq!(
        policy.plugins[0].location,
        PluginLocation::Name("fs".to_owned())
    );
    assert_eq!(policy.plugins[0].config, serde_json::json!({"root": "."}));
    assert_eq!(policy.tools[0].sequential_group.as_deref(), Some("disk"));
}

#[test]
fn the_search_example_resolves_its_catalog() {
    let search = load("examples/search.yaml").search.expect("search on");
    assert_eq!(
        search.catalogs,
        [policies_dir().join("examples/catalog.jsonl")]
    );
}
