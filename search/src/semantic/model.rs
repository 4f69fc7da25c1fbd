//! A static embedding model in model2vec's layout: a directory with `model.safetensors` (one
//! `[vocabulary, dimensions]` float32 tensor), the `tokenizer.json` of the model it was distilled
//! from (BERT WordPiece) and an optional `config.json`. A text's vector is the mean of its
//! tokens' rows, so embedding costs a tokenization and a few hundred additions per token: no
//! neural network runs at query time. Nothing is ever downloaded: the model is a local path.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::SemanticError;
use super::wordpiece::WordPiece;
use crate::format;

/// A loaded static embedding model.
pub struct StaticModel {
    tokenizer: WordPiece,
    /// `vocab * dims` floats, row-major.
    rows: Vec<f32>,
    dims: usize,
    id: u64,
    path: PathBuf,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("path", &self.path)
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
    #[serde(rename = "type")]
    kind: String,
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

#[derive(Deserialize)]
struct TensorInfo {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

impl StaticModel {
    /// Loads the model in directory `dir` (see the module documentation).
    pub fn load(dir: &Path) -> Result<StaticModel, SemanticError> {
        let tok_path = dir.join("tokenizer.json");
        let tok_text = read(&tok_path)?;
        let tok: TokenizerJson =
            serde_json::from_slice(&tok_text).map_err(|source| SemanticError::Json {
                path: tok_path.clone(),
                source,
            })?;
        let bad = |path: &Path, reason: String| SemanticError::BadModel {
            path: path.to_path_buf(),
            reason,
        };
        if tok.model.kind != "WordPiece" {
            return Err(bad(
                &tok_path,
                format!(
                    "tokenizer model {}, this build reads WordPiece (BERT) tokenizers",
                    tok.model.kind
                ),
            ));
        }
        let (lowercase, strip_accents) = match &tok.normalizer {
            Some(n) if n.kind == "BertNormalizer" => {
                let lower = n.lowercase.unwrap_or(true);
                (lower, n.strip_accents.unwrap_or(lower))
            }
            Some(n) => {
                return Err(bad(
                    &tok_path,
                    format!(
                        "normalizer {}, this build reads BertNormalizer tokenizers",
                        n.kind
                    ),
                ));
            }
            None => (false, false),
        };
        let vocab_len = tok
            .model
            .vocab
            .values()
            .max()
            .map_or(0, |m| *m as usize + 1);

        let st_path = dir.join("model.safetensors");
        let bytes = read(&st_path)?;
        let (rows, dims) = embeddings_tensor(&bytes).map_err(|reason| bad(&st_path, reason))?;
        if rows.len() / dims < vocab_len {
            return Err(bad(
                &st_path,
                format!(
                    "{} rows for a vocabulary of {vocab_len} tokens",
                    rows.len() / dims
                ),
            ));
        }
        let id = model_id(&rows, dims, &tok_text);
        Ok(StaticModel {
            tokenizer: WordPiece::new(
                tok.model.vocab,
                tok.model.continuing_subword_prefix,
                tok.model.max_input_chars_per_word,
                lowercase,
                strip_accents,
            ),
            rows,
            dims,
            id,
            path: dir.to_path_buf(),
        })
    }

    /// The number of dimensions of a vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// An id of the model's content (its tokenizer and vectors), recorded in tool-vectors files
    /// so vectors of another model are refused.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The model's directory.
    pub fn path(&self) -> &Path {
        &self.path
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

fn read(path: &Path) -> Result<Vec<u8>, SemanticError> {
    fs::read(path).map_err(|source| SemanticError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The `[vocab, dims]` float32 tensor of a safetensors file: the one named `embeddings`, or the
/// only tensor there is.
fn embeddings_tensor(bytes: &[u8]) -> Result<(Vec<f32>, usize), String> {
    let head_len = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        .ok_or("shorter than a safetensors header")?;
    let head_end = usize::try_from(head_len)
        .ok()
        .and_then(|n| n.checked_add(8))
        .filter(|end| *end <= bytes.len())
        .ok_or("the safetensors header runs past the end of the file")?;
    let header: HashMap<String, serde_json::Value> = serde_json::from_slice(&bytes[8..head_end])
        .map_err(|e| format!("the safetensors header is not JSON: {e}"))?;
    let tensors: Vec<(&String, &serde_json::Value)> = header
        .iter()
        .filter(|(k, _)| k.as_str() != "__metadata__")
        .collect();
    let (name, value) = tensors
        .iter()
        .find(|(k, _)| k.as_str() == "embeddings")
        .or_else(|| (tensors.len() == 1).then(|| &tensors[0]))
        .ok_or("no tensor named \"embeddings\"")?;
    let info: TensorInfo =
        serde_json::from_value((*value).clone()).map_err(|e| format!("tensor {name}: {e}"))?;
    if info.dtype != "F32" {
        return Err(format!(
            "tensor {name} is {}, this build reads F32",
            info.dtype
        ));
    }
    let [rows, dims] = info.shape[..] else {
        return Err(format!(
            "tensor {name} has shape {:?}, expected [vocab, dims]",
            info.shape
        ));
    };
    if dims == 0 || rows == 0 {
        return Err(format!("tensor {name} is empty"));
    }
    let [start, end] = info.data_offsets;
    let data = bytes
        .get(head_end..)
        .and_then(|d| d.get(start..end))
        .filter(|d| Some(d.len()) == rows.checked_mul(dims).and_then(|n| n.checked_mul(4)))
        .ok_or_else(|| format!("tensor {name}: data offsets do not match its shape"))?;
    let floats: Vec<f32> = data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if floats.iter().any(|x| !x.is_finite()) {
        return Err(format!("tensor {name} holds a non-finite value"));
    }
    Ok((floats, dims))
}

fn model_id(rows: &[f32], dims: usize, tokenizer: &[u8]) -> u64 {
    let floats: Vec<u8> = rows.iter().flat_map(|x| x.to_le_bytes()).collect();
    format::checksum(&[&(dims as u64).to_le_bytes(), tokenizer, &floats])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a model of `words` (each its own row: a one-hot vector of `dims`) into `dir`.
    fn write_model(dir: &Path, words: &[&str], dims: usize, dtype: &str) {
        let vocab: serde_json::Map<String, serde_json::Value> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.to_string(), serde_json::json!(i)))
            .collect();
        let tok = serde_json::json!({
            "normalizer": {"type": "BertNormalizer", "lowercase": true, "strip_accents": null},
            "model": {"type": "WordPiece", "vocab": vocab, "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100}
        });
        fs::write(dir.join("tokenizer.json"), tok.to_string()).expect("writes");
        let mut data = Vec::new();
        for i in 0..words.len() {
            for d in 0..dims {
                let x: f32 = if d == i % dims { 1.0 } else { 0.0 };
                data.extend_from_slice(&x.to_le_bytes());
            }
        }
        let header = serde_json::json!({"embeddings": {"dtype": dtype,
            "shape": [words.len(), dims], "data_offsets": [0, data.len()]}})
        .to_string();
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header.as_bytes());
        file.extend_from_slice(&data);
        fs::write(dir.join("model.safetensors"), file).expect("writes");
    }

    #[test]
    fn a_text_embeds_as_the_normalised_mean_of_its_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_model(dir.path(), &["[UNK]", "weather", "city"], 3, "F32");
        let m = StaticModel::load(dir.path()).expect("loads");
        let v = m.embed("Weather in the city").expect("known words");
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!((v[1] - h).abs() < 1e-6 && (v[2] - h).abs() < 1e-6 && v[0] == 0.0);
    }

    #[test]
    fn a_text_of_unknown_words_has_no_vector() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_model(dir.path(), &["[UNK]", "weather"], 2, "F32");
        let m = StaticModel::load(dir.path()).expect("loads");
        assert!(m.embed("xyzzy plugh").is_none());
    }

    #[test]
    fn a_missing_model_file_is_an_io_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        match StaticModel::load(dir.path()) {
            Err(SemanticError::Io { path, .. }) => assert!(path.ends_with("tokenizer.json")),
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }

    #[test]
    fn a_float16_tensor_is_refused_saying_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_model(dir.path(), &["[UNK]", "weather"], 2, "F16");
        match StaticModel::load(dir.path()) {
            Err(SemanticError::BadModel { reason, .. }) => assert!(reason.contains("F16")),
            other => panic!("expected a bad model, got {other:?}"),
        }
    }
}
