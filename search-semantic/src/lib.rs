//! The optional semantic stage of toolgate's tool search: an embedding model
//! ([`EmbeddingModel`]: a static model read from a model2vec or sentence-transformers
//! directory, or a BERT sentence encoder run in Rust, [`Transformer`]) gives every tool a
//! vector at index build ([`ToolVectors`], stored beside the index) and the query one at search
//! time; the tools nearest the query are fused with the lexical ranking ([`Fusion`]). It finds
//! tools whose descriptions say what the query means in other words.
//!
//! Attach it with [`SemanticIndex::with_semantic`] (or [`Semantic::compute`] and
//! [`SemanticIndex::with_semantic_stage`]); `toolgate-search` calls it through its
//! [`FusedStage`] hook, and without it search is lexical only and runs exactly as before.
//!
//! # Rebuilds embed only what changed
//!
//! Each tool's vector is stored with the hash of the text it was computed from. Given the
//! vectors of an earlier build ([`Semantic::compute`]'s `previous`), a tool whose text hashes
//! the same takes its vector from there ([`ToolVectors::raw`]) and only the others are
//! embedded; [`Computed`] counts both.
//!
//! # Static model or transformer
//!
//! A static model embeds a query in microseconds (a tokenization and a mean of rows), which
//! keeps `tool_search` under a millisecond at 100,000 tools; a transformer (MiniLM-L6: about
//! 20 MFLOP a token) costs milliseconds a query and far more at index build, and ranks by
//! meaning better. Which to pick for which catalog, with figures: `docs/search.md`. The
//! transformer's forward pass is written here on `matrixmultiply` (see [`Transformer`] for
//! why not a tensor library).

mod bert;
mod encoder;
mod error;
mod fuse;
mod kernels;
mod linear;
mod model;
mod scan;
mod vectors;
mod wordpiece;

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

pub use bert::Transformer;
pub use encoder::{EmbeddingModel, TRANSFORMER_FUSION};
pub use error::SemanticError;
pub use fuse::{Fusion, fuse};
pub use model::{Layout, StaticModel};
pub use vectors::{EXACT_UP_TO, RESCORE, ToolVectors};

use toolgate_search::{FusedStage, SearchIndex, ToolDocRef};
use vectors::tools_id;

/// How many tools each ranking contributes to the fusion.
pub const FUSION_DEPTH: usize = 50;

/// A model and the vectors of an index's tools, computed with it.
#[derive(Clone, Debug)]
pub struct Semantic {
    model: Arc<EmbeddingModel>,
    vectors: ToolVectors,
    fusion: Fusion,
}

/// What [`Semantic::compute`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Computed {
    /// Tools whose vectors were computed with the model.
    pub embedded: usize,
    /// Distinct texts among them: tools of the same text are embedded once.
    pub texts: usize,
    /// Tools whose vectors were taken from the previous vectors (same text, same model).
    pub reused: usize,
}

impl Semantic {
    /// The vectors of `index`'s tools computed with `model`. A tool whose text hashes as one of
    /// `previous` (vectors of the same model, from an earlier build) takes its vector from
    /// there instead of being embedded again.
    pub fn compute(
        model: Arc<EmbeddingModel>,
        index: &SearchIndex,
        previous: Option<&ToolVectors>,
    ) -> (Semantic, Computed) {
        let dims = model.dims();
        let reusable: HashMap<u64, usize> = match previous {
            Some(p) if p.model_id() == model.id() && p.dims() == dims => p
                .hashes()
                .iter()
                .enumerate()
                .map(|(i, h)| (*h, i))
                .collect(),
            _ => HashMap::new(),
        };
        let mut computed = Computed::default();
        let mut data = vec![0.0f32; index.len() * dims];
        let mut hashes = Vec::with_capacity(index.len());
        // Tools to embed: their number and text, embedded together below (a transformer
        // encodes them in batches).
        let mut todo: Vec<(usize, String)> = Vec::new();
        for tool in 0..index.len() {
            let Some(doc) = index.doc(tool as u32) else {
                hashes.push(0);
                continue;
            };
            let text = model.tool_text(&doc);
            let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
            hashes.push(hash);
            let old = reusable
                .get(&hash)
                .zip(previous)
                .map(|(i, p)| (p.raw(*i), p.scales_is_zero(*i)));
            match old {
                Some((Some(v), _)) if v.len() == dims => {
                    computed.reused += 1;
                    data[tool * dims..(tool + 1) * dims].copy_from_slice(&v);
                }
                Some((None, true)) => {
                    // It had no vector (no known word) and its text is the same.
                    computed.reused += 1;
                }
                _ => todo.push((tool, text)),
            }
        }
        computed.embedded = todo.len();
        // Tools of the same text (hash) are embedded once, and share the vector.
        let mut unique: HashMap<u64, usize> = HashMap::new();
        let mut texts: Vec<&str> = Vec::new();
        let slots: Vec<usize> = todo
            .iter()
            .map(|(tool, text)| {
                *unique.entry(hashes[*tool]).or_insert_with(|| {
                    texts.push(text.as_str());
                    texts.len() - 1
                })
            })
            .collect();
        computed.texts = texts.len();
        let embedded = model.embed_many(&texts);
        for ((tool, _), slot) in todo.iter().zip(slots) {
            if let Some(v) = embedded[slot].as_ref().filter(|v| v.len() == dims) {
                data[tool * dims..(tool + 1) * dims].copy_from_slice(v);
            }
        }
        let tools = tools_id(index.names());
        let vectors = if model.centres() {
            ToolVectors::new(dims, model.id(), tools, data, hashes)
        } else {
            ToolVectors::uncentred(dims, model.id(), tools, data, hashes)
        };
        let fusion = model.default_fusion();
        let semantic = Semantic {
            model,
            vectors,
            fusion,
        };
        (semantic, computed)
    }

    /// The stage of `index` with `vectors` (read with [`ToolVectors::open`]) as they are,
    /// without embedding anything: refused if they were computed with another model or for
    /// other tools. `path` names the vectors file in the error. [`Semantic::compute`] with the
    /// vectors as `previous` also checks each tool's text.
    pub fn with_vectors(
        model: Arc<EmbeddingModel>,
        index: &SearchIndex,
        vectors: ToolVectors,
        path: &std::path::Path,
    ) -> Result<Semantic, SemanticError> {
        if vectors.model_id() != model.id() || vectors.dims() != model.dims() {
            return Err(SemanticError::OtherModel {
                path: path.to_path_buf(),
                expected: model.id(),
                found: vectors.model_id(),
            });
        }
        if vectors.tools_id() != tools_id(index.names()) {
            return Err(SemanticError::OtherTools {
                path: path.to_path_buf(),
            });
        }
        let fusion = model.default_fusion();
        Ok(Semantic {
            model,
            vectors,
            fusion,
        })
    }

    /// The same stage with another fusion.
    pub fn with_fusion(self, fusion: Fusion) -> Semantic {
        Semantic { fusion, ..self }
    }

    /// The fusion in use.
    pub fn fusion(&self) -> Fusion {
        self.fusion
    }

    /// The tool vectors.
    pub fn vectors(&self) -> &ToolVectors {
        &self.vectors
    }

    /// The model.
    pub fn model(&self) -> &EmbeddingModel {
        &self.model
    }

    /// The model, shared.
    pub fn model_arc(&self) -> Arc<EmbeddingModel> {
        self.model.clone()
    }

    /// The `k` tools nearest `query` as `(cosine, tool number)`; none if the query has no
    /// vector (for a static model, no word of it is in the vocabulary).
    pub fn nearest(&self, query: &str, k: usize) -> Vec<(f32, u32)> {
        match self.model.embed(query) {
            Some(q) => self.vectors.nearest(&q, k),
            None => Vec::new(),
        }
    }

    /// [`Semantic::nearest`] of each of `queries`, in order, the queries embedded together
    /// (a transformer encodes them in batches).
    pub fn nearest_many<S: AsRef<str>>(&self, queries: &[S], k: usize) -> Vec<Vec<(f32, u32)>> {
        self.model
            .embed_many(queries)
            .into_iter()
            .map(|q| match q {
                Some(q) => self.vectors.nearest(&q, k),
                None => Vec::new(),
            })
            .collect()
    }

    /// `lexical` fused with the `depth` tools nearest `query` by `fusion` (see
    /// [`FusedStage::fused`]): what a search with that fusion ranks.
    pub fn fused_with(
        &self,
        fusion: Fusion,
        query: &str,
        lexical: &[(f32, u32)],
        depth: usize,
        lexical_only: bool,
    ) -> Vec<(f32, u32)> {
        // A full lexical list whose top score silences the dense ranking keeps its order
        // exactly (`Fusion::dense_can_matter`): the query is not embedded at all.
        if lexical.len() >= depth && !fusion.dense_can_matter(lexical) {
            return fuse(fusion, lexical, &[], |_| 0.0);
        }
        let q = self
            .model
            .embed(query)
            .and_then(|q| self.vectors.centre_query(&q));
        let Some(q) = q else {
            return fuse(fusion, lexical, &[], |_| 0.0);
        };
        let mut dense = self.vectors.nearest_centred(&q, depth);
        if lexical_only {
            dense.retain(|(_, t)| lexical.iter().any(|(_, l)| l == t));
        }
        fuse(fusion, lexical, &dense, |t| {
            self.vectors.cosine_centred(&q, t)
        })
    }
}

impl FusedStage for Semantic {
    fn depth(&self) -> usize {
        FUSION_DEPTH
    }

    fn fused(
        &self,
        query: &str,
        lexical: &[(f32, u32)],
        depth: usize,
        lexical_only: bool,
    ) -> Vec<(f32, u32)> {
        self.fused_with(self.fusion, query, lexical, depth, lexical_only)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The semantic stage on a [`SearchIndex`].
pub trait SemanticIndex: Sized {
    /// The same index with a semantic stage: every tool's vector is computed with `model`.
    /// Free-text searches then fuse the lexical ranking with the tools nearest the query.
    fn with_semantic(self, model: Arc<EmbeddingModel>) -> SearchIndex;

    /// The same index with the stage `semantic` (from [`Semantic::compute`],
    /// [`Semantic::with_vectors`] or another index's [`SemanticIndex::semantic`]). If it was
    /// computed for other tools, the vectors are computed again with its model (reusing those
    /// of every tool whose text is unchanged) and its fusion kept.
    fn with_semantic_stage(self, semantic: Semantic) -> SearchIndex;

    /// The same index with the semantic stage's fusion replaced (no effect without one).
    fn with_fusion(self, fusion: Fusion) -> SearchIndex;

    /// The semantic stage, if one is attached.
    fn semantic(&self) -> Option<&Semantic>;
}

impl SemanticIndex for SearchIndex {
    fn with_semantic(self, model: Arc<EmbeddingModel>) -> SearchIndex {
        let (semantic, _) = Semantic::compute(model, &self, None);
        self.with_stage(Arc::new(semantic))
    }

    fn with_semantic_stage(self, semantic: Semantic) -> SearchIndex {
        if semantic.vectors.tools_id() != tools_id(self.names()) {
            let (fresh, _) =
                Semantic::compute(semantic.model_arc(), &self, Some(&semantic.vectors));
            let fresh = fresh.with_fusion(semantic.fusion);
            return self.with_stage(Arc::new(fresh));
        }
        self.with_stage(Arc::new(semantic))
    }

    fn with_fusion(self, fusion: Fusion) -> SearchIndex {
        let current = self.semantic().cloned();
        match current {
            Some(s) => self.with_stage(Arc::new(s.with_fusion(fusion))),
            None => self,
        }
    }

    fn semantic(&self) -> Option<&Semantic> {
        self.stage()?.as_any().downcast_ref::<Semantic>()
    }
}

/// What is embedded for a tool: its name's words, its description, its keywords, and its
/// parameters' names (as words) and descriptions, nested ones and array items' too. The
/// parameters raised the dense ranking's nDCG@5 on the tune halves from 47.9 to 51.6 (BFCL) and
/// 57.6 to 63.2 (Seal-Tools); MetaTool's tools have none.
pub fn tool_text(doc: &ToolDocRef<'_>) -> String {
    let mut s = toolgate_search::words(doc.name).join(" ");
    s.push_str(". ");
    s.push_str(&doc.description);
    for k in &doc.keywords {
        s.push(' ');
        s.push_str(k);
    }
    if let Ok(schema) = serde_json::from_str::<serde_json::Value>(&doc.parameters_json) {
        schema_text(&schema, &mut s);
    }
    s
}

/// Appends the names (as words) and descriptions of `schema`'s properties to `out`, then those
/// of their own properties and of their array items, depth first.
fn schema_text(schema: &serde_json::Value, out: &mut String) {
    let Some(props) = schema.get("properties").and_then(|p| p.as_object()) else {
        return;
    };
    for (name, prop) in props {
        for w in toolgate_search::words(name) {
            out.push(' ');
            out.push_str(&w);
        }
        if let Some(d) = prop.get("description").and_then(|d| d.as_str()) {
            out.push(' ');
            out.push_str(d);
        }
        schema_text(prop, out);
        if let Some(items) = prop.get("items") {
            schema_text(items, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    #[test]
    fn a_tools_text_holds_its_parameters_names_and_descriptions_nested_ones_too() {
        let doc = ToolDocRef {
            name: "get_weather",
            description: Cow::Borrowed("Current conditions."),
            parameters_json: Cow::Borrowed(
                r#"{"type":"object","properties":{"cityName":{"type":"string","description":"The town."},
                "days":{"type":"array","items":{"type":"object","properties":{"hourOfDay":{"description":"Local hour."}}}}}}"#,
            ),
            aliases: Vec::new(),
            keywords: vec![Cow::Borrowed("forecast")],
        };
        assert_eq!(
            tool_text(&doc),
            "get weather. Current conditions. forecast city name The town. days hour of day Local hour."
        );
    }
}
