//! Static embedding models, loaded from a local directory in either standard layout:
//!
//! * **model2vec** (`StaticModel.save_pretrained`, e.g. the potion models): `model.safetensors`
//!   with an `embeddings` tensor of shape `[vocabulary, dimensions]`, the `tokenizer.json` of
//!   the tokenizer it was distilled with, and `config.json`;
//! * **sentence-transformers' static embeddings** (`StaticEmbedding`, e.g.
//!   static-retrieval-mrl-en-v1): `modules.json` naming a `StaticEmbedding` module, whose
//!   folder (usually `0_StaticEmbedding/`) holds `model.safetensors` with an `embedding.weight`
//!   tensor and `tokenizer.json`.
//!
//! A text's vector is the mean of its tokens' rows, so embedding costs a tokenization and a few
//! hundred additions per token: no neural network runs at query time. Weights may be float32,
//! float16 or bfloat16 (widened to float32 at load). Nothing is ever downloaded: the model is a
//! local path. A transformer model directory (a sentence-transformers `Transformer` module, a
//! BERT `config.json` without static weights) is not a static model: [`StaticModel::load`]
//! refuses it, saying so, and [`crate::EmbeddingModel::load`] (what `search.embeddings.model`
//! uses) reads it as a [`crate::Transformer`].
//!
//! The weights are read with the `safetensors` crate. The tokenizer is read here: only
//! `tokenizer.json`'s WordPiece model and BERT normalizer are used (see [`crate::wordpiece`]
//! for why it is not the `tokenizers` crate).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::error::SemanticError;
use crate::wordpiece::WordPiece;

/// A loaded static embedding model.
pub struct StaticModel {
    tokenizer: WordPiece,
    /// `vocab * dims` floats, row-major.
    rows: Vec<f32>,
    dims: usize,
    id: u64,
    path: PathBuf,
    layout: Layout,
}

/// The directory layout a model was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// model2vec's: `model.safetensors` (`embeddings`), `tokenizer.json`, `config.json`.
    Model2Vec,
    /// sentence-transformers' `StaticEmbedding` module (`embedding.weight`).
    SentenceTransformers,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("path", &self.path)
            .field("layout", &self.layout)
            .field("vocab", &(self.rows.len() / self.dims.max(1)))
            .field("dims", &self.dims)
            .finish()
    }
}

#[derive(Deserialize)]
struct TokenizerJson {
    normalizer: Option<NormalizerJson>,
    model: WordPieceJson,
}

#[derive(Deserialize)]
struct NormalizerJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    lowercase: Option<bool>,
    #[serde(default)]
    strip_accents: Option<bool>,
}

#[derive(Deserialize)]
struct WordPieceJson {
    #[serde(default)]
    vocab: HashMap<String, u32>,
    #[serde(default = "default_prefix")]
    continuing_subword_prefix: String,
    #[serde(default = "default_max_chars")]
    max_input_chars_per_word: usize,
}

fn default_prefix() -> String {
    "##".to_string()
}

fn default_max_chars() -> usize {
    100
}

/// One entry of sentence-transformers' `modules.json`.
#[derive(Deserialize)]
struct ModuleJson {
    #[serde(default)]
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

/// Where a layout keeps the weights, the tensor's names and the tokenizer.
struct Files {
    weights: PathBuf,
    tensors: &'static [&'static str],
    tokenizer: PathBuf,
    layout: Layout,
}

pub(crate) fn bad(path: &Path, reason: impl Into<String>) -> SemanticError {
    SemanticError::BadModel {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Finds the layout of the model in `dir`.
fn files(dir: &Path) -> Result<Files, SemanticError> {
    let modules = dir.join("modules.json");
    if modules.is_file() {
        let text = read(&modules)?;
        let list: Vec<ModuleJson> =
            serde_json::from_slice(&text).map_err(|source| SemanticError::Json {
                path: modules.clone(),
                source,
            })?;
        let Some(first) = list.first() else {
            return Err(bad(&modules, "no modules"));
        };
        if !first.kind.ends_with("StaticEmbedding") {
            return Err(bad(
                &modules,
                format!(
                    "its first module is {}, not a StaticEmbedding: a transformer model, which \
                     EmbeddingModel::load reads as one (Transformer)",
                    first.kind
                ),
            ));
        }
        let sub = dir.join(&first.path);
        return Ok(Files {
            weights: sub.join("model.safetensors"),
            tensors: &["embedding.weight", "embeddings"],
            tokenizer: sub.join("tokenizer.json"),
            layout: Layout::SentenceTransformers,
        });
    }
    Ok(Files {
        weights: dir.join("model.safetensors"),
        tensors: &["embeddings", "embedding.weight"],
        tokenizer: dir.join("tokenizer.json"),
        layout: Layout::Model2Vec,
    })
}

/// Reads the BERT WordPiece tokenizer of `tokenizer.json` at `tok_path` (in a static model's
/// reading; [`WordPiece::bert`] gives BERT's), with the xxh3 hash of the file.
pub(crate) fn read_wordpiece(tok_path: &Path) -> Result<(WordPiece, u64), SemanticError> {
    let tok_text = read(tok_path)?;
    let json_error = |source| SemanticError::Json {
        path: tok_path.to_path_buf(),
        source,
    };
    let tok: serde_json::Value = serde_json::from_slice(&tok_text).map_err(json_error)?;
    let kind = tok["model"]["type"].as_str().unwrap_or("missing");
    if kind != "WordPiece" {
        return Err(bad(
            tok_path,
            format!("tokenizer model {kind}, this build reads WordPiece (BERT) tokenizers"),
        ));
    }
    let tok: TokenizerJson = serde_json::from_value(tok).map_err(json_error)?;
    let (lowercase, strip_accents) = match &tok.normalizer {
        Some(n) if n.kind == "BertNormalizer" => {
            let lower = n.lowercase.unwrap_or(true);
            (lower, n.strip_accents.unwrap_or(lower))
        }
        Some(n) => {
            return Err(bad(
                tok_path,
                format!(
                    "normalizer {}, this build reads BertNormalizer tokenizers",
                    n.kind
                ),
            ));
        }
        None => (false, false),
    };
    let wordpiece = WordPiece::new(
        tok.model.vocab,
        tok.model.continuing_subword_prefix,
        tok.model.max_input_chars_per_word,
        lowercase,
        strip_accents,
    );
    Ok((wordpiece, xxhash_rust::xxh3::xxh3_64(&tok_text)))
}

impl StaticModel {
    /// Loads the model in directory `dir` (see the module documentation).
    pub fn load(dir: &Path) -> Result<StaticModel, SemanticError> {
        let files = files(dir)?;
        let (tokenizer, tok_hash) = read_wordpiece(&files.tokenizer)?;
        let vocab_len = tokenizer.len();

        let st_path = &files.weights;
        let bytes = match read(st_path) {
            Err(SemanticError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound
                    && files.layout == Layout::Model2Vec
                    && dir.join("config.json").is_file() =>
            {
                return Err(bad(
                    st_path,
                    "missing: a model directory without static weights (a transformer's \
                     pytorch_model.bin or other weights are not read by this build)",
                ));
            }
            other => other?,
        };
        let (rows, dims, weights_id) =
            embeddings_tensor(&bytes, files.tensors).map_err(|reason| bad(st_path, reason))?;
        if rows.len() / dims < vocab_len {
            return Err(bad(
                st_path,
                format!(
                    "{} rows for a vocabulary of {vocab_len} tokens",
                    rows.len() / dims
                ),
            ));
        }
        let id = xxhash_rust::xxh3::xxh3_64(
            &[
                (dims as u64).to_le_bytes().as_slice(),
                &weights_id.to_le_bytes(),
                &tok_hash.to_le_bytes(),
                &crate::wordpiece::READING_VERSION.to_le_bytes(),
            ]
            .concat(),
        );
        Ok(StaticModel {
            tokenizer,
            rows,
            dims,
            id,
            path: dir.to_path_buf(),
            layout: files.layout,
        })
    }

    /// The number of dimensions of a vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The number of rows (tokens) of the model.
    pub fn vocab_len(&self) -> usize {
        self.rows.len() / self.dims.max(1)
    }

    /// An id of the model's content (its tokenizer and weights), recorded in tool-vectors
    /// files so vectors of another model are refused.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The model's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The layout the model was read from.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The unit-length vector of `text`, or `None` if none of its words is in the vocabulary.
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        let mut ids = Vec::new();
        self.tokenizer.ids(text, &mut ids);
        if ids.is_empty() {
            return None;
        }
        let mut v = vec![0.0f32; self.dims];
        for id in &ids {
            let start = *id as usize * self.dims;
            if let Some(row) = self.rows.get(start..start + self.dims) {
                for (a, b) in v.iter_mut().zip(row) {
                    *a += b;
                }
            }
        }
        normalize(&mut v).then_some(v)
    }
}

/// Scales `v` to unit length; false if it is zero.
pub(crate) fn normalize(v: &mut [f32]) -> bool {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in v.iter_mut() {
            *x /= norm;
        }
        true
    } else {
        false
    }
}

pub(crate) fn read(path: &Path) -> Result<Vec<u8>, SemanticError> {
    fs::read(path).map_err(|source| SemanticError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The `[vocab, dims]` tensor of a safetensors file, widened to float32: the first of `names`
/// there is, or the only tensor there is; with the xxh3 hash of its bytes.
fn embeddings_tensor(bytes: &[u8], names: &[&str]) -> Result<(Vec<f32>, usize, u64), String> {
    let st = SafeTensors::deserialize(bytes).map_err(|e| format!("not a safetensors file: {e}"))?;
    let all = st.names();
    let name = names
        .iter()
        .find(|n| all.contains(n))
        .copied()
        .or_else(|| (all.len() == 1).then(|| all[0]))
        .ok_or_else(|| format!("no tensor named {}", names.join(" or ")))?;
    let view = st.tensor(name).map_err(|e| format!("tensor {name}: {e}"))?;
    let [rows, dims] = view.shape()[..] else {
        return Err(format!(
            "tensor {name} has shape {:?}, expected [vocab, dims]",
            view.shape()
        ));
    };
    if dims == 0 || rows == 0 {
        return Err(format!("tensor {name} is empty"));
    }
    let floats = tensor_floats(&view, name)?;
    Ok((floats, dims, xxhash_rust::xxh3::xxh3_64(view.data())))
}

/// The values of tensor `name` (`view`) widened to float32; refused if it is of another type
/// than F32, F16 and BF16, if its data does not match its shape, or if a value is not finite.
pub(crate) fn tensor_floats(view: &TensorView<'_>, name: &str) -> Result<Vec<f32>, String> {
    let data = view.data();
    let floats: Vec<f32> = match view.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        other => {
            return Err(format!(
                "tensor {name} is {other:?}, this build reads F32, F16 and BF16"
            ));
        }
    };
    if floats.len() != view.shape().iter().product::<usize>() {
        return Err(format!("tensor {name}: its data does not match its shape"));
    }
    if floats.iter().any(|x| !x.is_finite()) {
        return Err(format!("tensor {name} holds a non-finite value"));
    }
    Ok(floats)
}
