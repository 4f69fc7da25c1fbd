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
