//! Work split over threads, with a result that does not depend on how many.

/// Splits `items` into at most `workers` contiguous runs, calls `f` with
/// each run and the position of its first item on a thread of its own, and
/// returns the results in run order. A panic in `f` is resumed here.
pub(super) fn in_runs<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(usize, &[T]) -> R + Sync,
) -> Vec<R> {
    in_aligned_runs(items, workers, 1, f)
}

/// [`in_runs`] with every run but the last a multiple of `align` items long, so that each
/// starts at a multiple of `align`.
pub(super) fn in_aligned_runs<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    align: usize,
    f: impl Fn(usize, &[T]) -> R + Sync,
) -> Vec<R> {
    let align = align.max(1);
    let run = items.len().div_ceil(workers.max(1)).div_ceil(align).max(1) * align;
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(run)
            .enumerate()
            .map(|(i, chunk)| scope.spawn(move || f(i * run, chunk)))
            .collect();
        crate::threads::join_resuming(handles)
    })
}
