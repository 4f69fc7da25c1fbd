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

/// `items` sorted, its two halves each on a thread of its own when `workers` allow and there
/// are enough items to pay for it, then merged. The build sorts only distinct items (names or
/// terms with their numbers), whose order is then the one a single sort gives.
pub(super) fn sorted<T: Ord + Send>(mut items: Vec<T>, workers: usize) -> Vec<T> {
    if workers < 2 || items.len() < 4096 {
        items.sort_unstable();
        return items;
    }
    let mut second = items.split_off(items.len() / 2);
    let mut first = items;
    std::thread::scope(|scope| {
        let other = scope.spawn(|| second.sort_unstable());
        first.sort_unstable();
        crate::threads::join_resuming(vec![other]);
    });
    let mut out = Vec::with_capacity(first.len() + second.len());
    let mut second = second.into_iter().peekable();
    for item in first {
        while let Some(next) = second.next_if(|next| *next < item) {
            out.push(next);
        }
        out.push(item);
    }
    out.extend(second);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sorted_in_two_halves_come_out_as_one_sort_gives() {
        let names: Vec<String> = (0..10_000)
            .map(|i| format!("t{}", (i * 7919) % 10_007))
            .collect();
        let pairs: Vec<(&str, u32)> = names.iter().map(String::as_str).zip(0..).collect();
        let mut want = pairs.clone();
        want.sort_unstable();
        for workers in [1, 2, 8] {
            assert_eq!(sorted(pairs.clone(), workers), want, "{workers} workers");
        }
    }
}
