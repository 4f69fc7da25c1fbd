//! GCRA over the cells of one call, in this process's memory; the types every store shares.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// At most this many keys are kept in memory by the local store; past it, keys whose TAT has
/// passed (the same as absent) are swept, and a new key finds no room only when every key is
/// live.
pub(crate) const MAX_LOCAL_KEYS: usize = 100_000;

/// One key to check: its entry's cost and burst.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub(crate) key: String,
    pub(crate) interval_us: u64,
    pub(crate) burst: u64,
}

/// The answer of a store: every cell passed (and moved), or the first one that did not and how
/// long until it would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    Wait { cell: usize, wait: Duration },
}

/// The store could not answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub(crate) struct StoreFailure(pub(crate) String);

/// The TATs in this process, for one engine.
#[derive(Default)]
pub(crate) struct LocalGcra {
    tats: Mutex<HashMap<String, tokio::time::Instant>>,
}

impl LocalGcra {
    /// GCRA over `cells` at `now`: all pass and move, or none moves.
    pub(crate) fn take(
        &self,
        cells: &[Cell],
        now: tokio::time::Instant,
    ) -> Result<Verdict, StoreFailure> {
        // Plain instants, changed without calling out: valid after any panic.
        let mut tats = self.tats.lock().unwrap_or_else(PoisonError::into_inner);
        let mut moved = Vec::with_capacity(cells.len());
        let mut worst: Option<(usize, Duration)> = None;
        for (i, cell) in cells.iter().enumerate() {
            let interval = Duration::from_micros(cell.interval_us);
            let tat = tats.get(&cell.key).copied().unwrap_or(now).max(now);
            let new_tat = tat + interval;
            let allow_at = new_tat
                .checked_sub(interval.saturating_mul(cell.burst.min(u32::MAX as u64) as u32))
                .unwrap_or(now);
            if allow_at > now {
                let wait = allow_at - now;
                if worst.is_none_or(|(_, w)| wait > w) {
                    worst = Some((i, wait));
                }
            }
            moved.push(new_tat);
        }
        if let Some((cell, wait)) = worst {
            return Ok(Verdict::Wait { cell, wait });
        }
        let new_keys = cells.iter().filter(|c| !tats.contains_key(&c.key)).count();
        if tats.len() + new_keys > MAX_LOCAL_KEYS {
            tats.retain(|_, tat| *tat > now);
            if tats.len() + new_keys > MAX_LOCAL_KEYS {
                return Err(StoreFailure(format!(
                    "the in-memory limits table holds {MAX_LOCAL_KEYS} live keys"
                )));
            }
        }
        for (cell, tat) in cells.iter().zip(moved) {
            tats.insert(cell.key.clone(), tat);
        }
        Ok(Verdict::Pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(key: &str, per_call_ms: u64, burst: u64) -> Cell {
        Cell {
            key: key.into(),
            interval_us: per_call_ms * 1000,
            burst,
        }
    }

    #[test]
    fn a_burst_passes_at_once_and_the_next_call_waits_one_interval() {
        let g = LocalGcra::default();
        let now = tokio::time::Instant::now();
        let c = [cell("k", 100, 3)];
        for _ in 0..3 {
            assert_eq!(g.take(&c, now).unwrap(), Verdict::Pass);
        }
        assert_eq!(
            g.take(&c, now).unwrap(),
            Verdict::Wait {
                cell: 0,
                wait: Duration::from_millis(100)
            }
        );
        assert_eq!(
            g.take(&c, now + Duration::from_millis(100)).unwrap(),
            Verdict::Pass
        );
    }

    #[test]
    fn a_call_refused_by_one_entry_uses_up_none_of_the_others() {
        let g = LocalGcra::default();
        let now = tokio::time::Instant::now();
        let wide = cell("wide", 100, 2);
        let narrow = cell("narrow", 1000, 1);
        assert_eq!(
            g.take(&[wide.clone(), narrow.clone()], now).unwrap(),
            Verdict::Pass
        );
        assert!(matches!(
            g.take(&[wide.clone(), narrow], now).unwrap(),
            Verdict::Wait { cell: 1, .. }
        ));
        // The refused call did not take the wide entry's second place.
        assert_eq!(g.take(&[wide], now).unwrap(), Verdict::Pass);
    }
}
