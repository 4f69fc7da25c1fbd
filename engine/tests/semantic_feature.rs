//! The `semantic` cargo feature and `search.embeddings` (off by default, on in the `toolgate`
//! CLI): without it, a policy that names an embedding model fails when the engine is built,
//! saying why; with it, the model is loaded (a missing one fails the build) and `tool_search`
//! finds a tool by a word that is only close in meaning to its description.

mod common;

#[cfg(feature = "semantic")]
use common::*;
#[cfg(feature = "semantic")]
use serde_json::Value;
use serde_json::json;
use toolgate::{Engine, Policy};
use toolgate_policy::{EmbeddingsSettings, SearchSettings};

fn catalog_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("catalog.jsonl");
    let lines = [
        json!({"name": "get_weather", "description": "Current weather for a city."}),
        json!({"name": "send_email", "description": "Send an email message."}),
    ];
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(&path, text.join("\n")).unwrap();
    path
}

fn policy(dir: &std::path::Path, model: std::path::PathBuf) -> Policy {
    Policy {
        search: Some(SearchSettings {
            catalogs: vec![catalog_file(dir)],
            default_max_results: 5,
            embeddings: Some(EmbeddingsSettings { model }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The error's text and the texts of every source under it.
fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(err), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(not(feature = "semantic"))]
#[test]
fn a_policy_with_embeddings_fails_to_build_without_the_semantic_feature() {
    let dir = tempfile::tempdir().unwrap();
    let Err(err) = Engine::builder(policy(dir.path(), dir.path().join("model"))).build() else {
        panic!("embeddings were accepted in a build without the semantic feature");
    };
    let text = chain(&err);
    assert!(
        text.contains("built without the semantic feature"),
        "{text}"
    );
}

#[cfg(feature = "semantic")]
#[test]
fn a_missing_embedding_model_fails_the_build_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let Err(err) = Engine::builder(policy(dir.path(), dir.path().join("no-model"))).build() else {
        panic!("a missing model was accepted");
    };
    let text = chain(&err);
    assert!(
        text.contains("search.embeddings: cannot load the model") && text.contains("no-model"),
        "{text}"
    );
}

/// A static model in which "forecast" and "weather" have the same vector, "email" another.
#[cfg(feature = "semantic")]
fn write_model(dir: &std::path::Path) {
    let words = [
        "[UNK]", "weather", "forecast", "email", "city", "send", "message", "current",
    ];
    let rows: [[f32; 4]; 8] = [
        [0.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
        [0.0, 0.2, 0.0, 1.0],
        [0.0, 0.2, 0.0, 1.0],
        [0.0, 0.0, 0.5, 0.5],
    ];
    let vocab: serde_json::Map<String, Value> = words
        .iter()
        .enumerate()
        .map(|(i, w)| (w.to_string(), json!(i)))
        .collect();
    let tok = json!({
        "normalizer": {"type": "BertNormalizer", "lowercase": true},
        "model": {"type": "WordPiece", "vocab": vocab}
    });
    std::fs::write(dir.join("tokenizer.json"), tok.to_string()).unwrap();
    let data: Vec<u8> = rows
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let header = json!({"embeddings": {"dtype": "F32", "shape": [8, 4],
        "data_offsets": [0, data.len()]}})
    .to_string();
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&data);
    std::fs::write(dir.join("model.safetensors"), file).unwrap();
}

#[cfg(feature = "semantic")]
#[tokio::test]
async fn tool_search_finds_a_tool_by_a_word_close_in_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model");
    std::fs::create_dir(&model).unwrap();
    write_model(&model);
    let engine = Engine::builder(policy(dir.path(), model)).build().unwrap();
    let s = engine.session(Some("s")).unwrap();
    let o = engine
        .call(&s, &call("1", "tool_search", json!({"query": "forecast"})))
        .await;
    assert!(!o.is_error(), "{:?}", o.error);
    let v: Value = serde_json::from_str(&o.content.text()).unwrap();
    assert_eq!(v["tools"][0]["name"], "get_weather", "{v}");
}
