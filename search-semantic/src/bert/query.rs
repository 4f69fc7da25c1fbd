//! One query's forward pass on two cores ([`Transformer::embed`]).
//!
//! A query is one short sequence, so the batch path's parallelism (batches shared among the
//! cores) gives it one core. Here its token rows are split in two halves, one a thread: every
//! product but attention's is row by row, so each thread runs its half through the layer's
//! attention output, feed-forward, layer norms and the next layer's query/key/value
//! projection, and the threads meet once a layer, because attention reads every row's keys and
//! values. The keys and values of a layer are in one buffer both threads read while each
//! writes its rows of the next layer's buffer (two buffers, swapped each layer).
//!
//! The threads are scoped: one is started for each layer and joined at its end (a panic in it
//! is raised again in the caller), so no thread is left waiting or spinning between queries.
//! Starting a thread costs tens of microseconds, against milliseconds of work a layer.

use std::ops::Range;

use super::{Layer, Transformer, add_norm};
use crate::kernels::{gemm, softmax};
use crate::linear::Activation;

/// One thread's working memory for its rows.
struct Scratch {
    context: Vec<f32>,
    tmp: Vec<f32>,
    up: Vec<f32>,
    scores: Vec<f32>,
}

impl Scratch {
    fn new(rows: usize, tokens: usize, hidden: usize, inter: usize) -> Scratch {
        Scratch {
            context: vec![0.0; rows * hidden],
            tmp: vec![0.0; rows * hidden],
            up: vec![0.0; rows * inter],
            scores: vec![0.0; rows * tokens],
        }
    }
}

impl Transformer {
    /// The last hidden state (`[tokens, hidden]`) of the one sequence `seq`, its rows split
    /// between this thread and one other.
    pub(super) fn hidden_split(&self, seq: &[u32]) -> Vec<f32> {
        let (h, n) = (self.hidden, seq.len());
        let inter = self.layers.first().map_or(0, |l| l.up.outputs);
        let mut x = self.embeddings(std::slice::from_ref(&seq.to_vec()));
        let mid = n / 2;
        let mut cur = vec![0.0f32; n * 3 * h];
        let mut next = vec![0.0f32; n * 3 * h];
        let mut scratch = [
            Scratch::new(mid, n, h, inter),
            Scratch::new(n - mid, n, h, inter),
        ];
        if let Some(first) = self.layers.first() {
            let (x0, x1) = x.split_at(mid * h);
            let (c0, c1) = cur.split_at_mut(mid * 3 * h);
            both(
                || first.qkv.apply(x0, mid, c0, Activation::None),
                || first.qkv.apply(x1, n - mid, c1, Activation::None),
            );
        }
        for (l, layer) in self.layers.iter().enumerate() {
            let following = self.layers.get(l + 1);
            let (x0, x1) = x.split_at_mut(mid * h);
            let (n0, n1) = next.split_at_mut(mid * 3 * h);
            let [s0, s1] = &mut scratch;
            let qkv = &cur;
            both(
                || self.rows(layer, following, qkv, 0..mid, x0, n0, s0),
                || self.rows(layer, following, qkv, mid..n, x1, n1, s1),
            );
            std::mem::swap(&mut cur, &mut next);
        }
        x
    }

    /// Layer `layer` for the token rows `rows` of a sequence whose every row's query, key and
    /// value is in `qkv` (`[tokens, 3 hidden]`): attention, its output, the feed-forward layer
    /// and the layer norms, into `x` (those rows' hidden states); then `following`'s query,
    /// key and value of these rows into `next`.
    #[allow(clippy::too_many_arguments)]
    fn rows(
        &self,
        layer: &Layer,
        following: Option<&Layer>,
        qkv: &[f32],
        rows: Range<usize>,
        x: &mut [f32],
        next: &mut [f32],
        s: &mut Scratch,
    ) {
        let h = self.hidden;
        let (m, n) = (rows.len(), qkv.len() / (3 * h));
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        for head in 0..self.heads {
            let q = &qkv[rows.start * 3 * h + head * d..];
            let k = &qkv[h + head * d..];
            let v = &qkv[2 * h + head * d..];
            // scores = scale Q K^T: [m, d] x [d, n].
            gemm(
                (m, d, n),
                scale,
                (q, 3 * h, 1),
                (k, 1, 3 * h),
                0.0,
                (&mut s.scores, n, 1),
            );
            for r in s.scores[..m * n].chunks_exact_mut(n) {
                softmax(r);
            }
            // context = P V: [m, n] x [n, d], into this head's columns.
            gemm(
                (m, n, d),
                1.0,
                (&s.scores, n, 1),
                (v, 3 * h, 1),
                0.0,
                (&mut s.context[head * d..], h, 1),
            );
        }
        layer
            .attention_out
            .apply(&s.context, m, &mut s.tmp, Activation::None);
        add_norm(x, &s.tmp[..m * h], &layer.attention_norm, self.eps);
        layer.up.apply(x, m, &mut s.up, Activation::Gelu);
        layer.down.apply(&s.up, m, &mut s.tmp, Activation::None);
        add_norm(x, &s.tmp[..m * h], &layer.output_norm, self.eps);
        if let Some(f) = following {
            f.qkv.apply(x, m, next, Activation::None);
        }
    }
}

/// Runs `a` here and `b` on a scoped thread, and returns when both are done (a panic in `b` is
/// raised again here).
fn both(a: impl FnOnce() + Send, b: impl FnOnce() + Send) {
    std::thread::scope(|scope| {
        let other = scope.spawn(b);
        a();
        if let Err(panic) = other.join() {
            std::panic::resume_unwind(panic);
        }
    });
}
