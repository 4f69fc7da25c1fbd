//! Tool vectors are cached by content hash: a rebuild embeds only the tools whose text changed.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use safetensors::{Dtype, serialize, tensor::TensorView};
use serde_json::json;
use toolgate_search::{Query, SearchIndex, ToolDoc};
use toolgate_search_semantic::{EmbeddingModel, Semantic, SemanticIndex, StaticModel, ToolVectors};

const WORDS: [&str; 9] = [
    "[UNK]", "weather", "forecast", "email", "send", "city", "message", "file", "read",
];

/// A model whose rows are fixed pseudo-random directions of 16 dimensions.
fn model(dir: &Path) -> Arc<EmbeddingModel> {
    let vocab: serde_json::Map<String, serde_json::Value> = WORDS
        .iter()
        .enumerate()
        .map(|(i, w)| (w.to_string(), json!(i)))
        .collect();
    let tok = json!({
        "normalizer": {"type": "BertNormalizer", "lowercase": true},
        "model": {"type": "WordPiece", "vocab": vocab}
    });
    fs::write(dir.join("tokenizer.json"), tok.to_string()).expect("writes");
    let rows: Vec<u8> = (0..WORDS.len() * 16)
        .map(|i| (((i * 37 + 11) % 23) as f32 - 11.0) / 11.0)
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let view = TensorView::new(Dtype::F32, vec![WORDS.len(), 16], &rows).expect("tensor");
    let data = serialize(HashMap::from([("embeddings".to_string(), view)]), None).expect("ok");
    fs::write(dir.join("model.safetensors"), data).expect("writes");
    Arc::new(StaticModel::load(dir).expect("loads").into())
}

fn catalog() -> Vec<ToolDoc> {
    let words = [
        "weather", "forecast", "email", "send", "city", "message", "file", "read",
    ];
    (0..40)
        .map(|i| {
            ToolDoc::new(
                format!("tool_{i:02}"),
                format!(
                    "{} {} {}",
                    words[i % 8],
                    words[(i / 8) % 8],
                    words[(i * 3) % 8]
                ),
            )
        })
        .collect()
}

#[test]
fn a_rebuild_with_one_changed_tool_embeds_that_tool_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = model(dir.path());
    let docs = catalog();
    let first = SearchIndex::build(&docs).expect("builds");
    let (stage, computed) = Semantic::compute(model.clone(), &first, None);
    assert_eq!((computed.embedded, computed.reused), (40, 0));
    let file = dir.path().join("index.vectors");
    stage.vectors().write(&file).expect("writes");

    let mut changed = docs.clone();
    changed[7].description = "read the city forecast".into();
    let second = SearchIndex::build(&changed).expect("builds");
    let previous = ToolVectors::open(&file).expect("reads");
    let (cached, computed) = Semantic::compute(model.clone(), &second, Some(&previous));
    assert_eq!((computed.embedded, computed.reused), (1, 39));

    // The cached vectors score every tool as vectors computed afresh do, within the
    // quantisation's hundredth.
    let (fresh, _) = Semantic::compute(model, &second, None);
    for q in ["weather forecast", "send email message", "read file"] {
        let a: HashMap<u32, f32> = cached.nearest(q, 40).iter().map(|x| (x.1, x.0)).collect();
        let b: HashMap<u32, f32> = fresh.nearest(q, 40).iter().map(|x| (x.1, x.0)).collect();
        assert_eq!(a.len(), 40);
        for (tool, cos) in &a {
            assert!(
                (cos - b[tool]).abs() < 0.02,
                "{q}: tool {tool}: {cos} against {}",
                b[tool]
            );
        }
    }
}

#[test]
fn vectors_of_another_model_are_not_reused() {
    let (a, b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let one = model(a.path());
    // The same words, another tokenizer file: another model id.
    let other = {
        let m = model(b.path());
        let mut tok: serde_json::Value =
            serde_json::from_slice(&fs::read(b.path().join("tokenizer.json")).expect("reads"))
                .expect("json");
        tok["model"]["max_input_chars_per_word"] = json!(50);
        fs::write(b.path().join("tokenizer.json"), tok.to_string()).expect("writes");
        drop(m);
        Arc::new(EmbeddingModel::from(
            StaticModel::load(b.path()).expect("loads"),
        ))
    };
    assert_ne!(one.id(), other.id());
    let index = SearchIndex::build(catalog()).expect("builds");
    let (stage, _) = Semantic::compute(one, &index, None);
    let (_, computed) = Semantic::compute(other, &index, Some(stage.vectors()));
    assert_eq!((computed.embedded, computed.reused), (40, 0));
}

#[test]
fn an_attached_stage_finds_a_tool_by_a_word_of_its_description_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let index = SearchIndex::build(catalog())
        .expect("builds")
        .with_semantic(model(dir.path()));
    assert!(index.semantic().is_some());
    let found = index.search(&Query::parse("weather").expect("parses"), 3);
    assert!(!found.hits.is_empty());
}

#[test]
fn tools_of_the_same_text_are_embedded_once_and_share_the_vector() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = model(dir.path());
    // A static model's text is the name's words and the description: "send email. send email
    // message" for both spellings of the name.
    let docs = vec![
        ToolDoc::new("send_email", "send email message"),
        ToolDoc::new("sendEmail", "send email message"),
        ToolDoc::new("read_file", "read file"),
    ];
    let index = SearchIndex::build(&docs).expect("builds");
    let (stage, computed) = Semantic::compute(model, &index, None);
    assert_eq!(
        (computed.embedded, computed.texts, computed.reused),
        (3, 2, 0)
    );
    let number = |name: &str| index.names().position(|n| n == name).expect("listed");
    let vector = |name: &str| stage.vectors().raw(number(name)).expect("a vector");
    assert_eq!(vector("send_email"), vector("sendEmail"));
    assert_ne!(vector("send_email"), vector("read_file"));
}
