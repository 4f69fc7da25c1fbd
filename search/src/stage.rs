//! The hook for a second ranking fused with the lexical one: the semantic stage
//! (`toolgate-search-semantic`) implements [`FusedStage`] and is attached with
//! [`crate::SearchIndex::with_stage`]. This crate knows nothing of models or vectors; without a
//! stage, search is lexical only and runs exactly as before.

use std::any::Any;
use std::fmt::Debug;

/// A ranking fused with the lexical one, for free-text queries.
pub trait FusedStage: Send + Sync + Debug + Any {
    /// How many of the lexical ranking's best tools the stage is given (at least the number
    /// of results asked for is given in any case).
    fn depth(&self) -> usize;

    /// `lexical` (`(score, tool number)`, best first) fused with the stage's own ranking of
    /// `query`, as `(fused score, tool number)`, best first. With `lexical_only`, only tools in
    /// `lexical` may be returned (the query had `+required` words, which only the lexical stage
    /// checks).
    fn fused(
        &self,
        query: &str,
        lexical: &[(f32, u32)],
        depth: usize,
        lexical_only: bool,
    ) -> Vec<(f32, u32)>;

    /// The stage as [`Any`], so its crate can reach its own type again.
    fn as_any(&self) -> &dyn Any;
}
