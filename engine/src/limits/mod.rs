//! The policy's `limits:` (L1-L4): rate limits and quotas kept as a generic cell rate algorithm
//! (GCRA) in this process's memory or in Redis, and the concurrency gate with its fair queue;
//! and `limits.requests` (L8), the same GCRA over the HTTP requests of each principal.
//!
//! # GCRA
//!
//! Each counted thing (an entry of `limits.rates`, for one principal and one tool as its `per`
//! says) keeps one number, its *theoretical arrival time* (TAT): when the calls it let through
//! so far would have been spread out at the sustained rate. With `T` = period / count (the
//! time one call uses up) and `B` = burst, a call at `now` passes when
//! `max(TAT, now) + T - B·T <= now`, and then moves TAT to `max(TAT, now) + T`. Otherwise it
//! would pass at `max(TAT, now) + T - B·T`: the `retry after` the model reads. So at most
//! `B + t/T` calls pass in any stretch of time `t`, and one number is all a key stores.
//!
//! A call is checked against every entry that matches it at once: all pass and all move, or
//! none moves (the longest wait is reported). Redis does the same in one Lua script, on
//! Redis's own clock, so replicas whose clocks disagree still share one limit.

pub(crate) mod fair;
mod gcra;
mod redis_store;
mod requests;

pub(crate) use requests::RequestLimits;
pub use requests::RequestRefused;

use std::time::Duration;

use toolgate_policy::{LimitScope, LimitsSettings, OnStoreError, RateLimit};

use crate::caller::Caller;
use crate::error::BuildError;

use gcra::{Cell, LocalGcra, StoreFailure, Verdict};
use redis_store::RedisGcra;

/// One entry of `limits.rates`, ready to match calls.
#[derive(Debug)]
pub(crate) struct CompiledRate {
    /// Its index in `limits.rates`, which names it (`limits.rates[2]`).
    pub(crate) index: usize,
    pub(crate) spec: RateLimit,
    /// The time one call uses up, in microseconds (at least 1).
    pub(crate) interval_us: u64,
}

impl CompiledRate {
    fn matches(&self, caller: &Caller, tool: &str) -> bool {
        let spec = &self.spec;
        (spec.tools.is_empty() || spec.tools.iter().any(|g| g.is_match(tool)))
            && (spec.principals.is_empty()
                || spec.principals.iter().any(|g| g.is_match(caller.name())))
            && (spec.groups.is_empty() || spec.groups.iter().any(|g| caller.in_group(g)))
    }

    /// The key of what this entry counts for the call (without the store's prefix).
    fn key(&self, principal: &str, tool: &str) -> String {
        let i = self.index;
        match self.spec.per {
            LimitScope::All => format!("{i}"),
            LimitScope::Tool => format!("{i}:t:{tool}"),
            LimitScope::Principal => format!("{i}:p:{principal}"),
            LimitScope::PrincipalTool => format!("{i}:pt:{principal}\u{1f}{tool}"),
        }
    }

    /// What the model reads about this entry.
    fn describe(&self, principal: &str, tool: &str) -> String {
        let rate = &self.spec.rate;
        let of = match self.spec.per {
            LimitScope::All => match self.spec.tools.as_slice() {
                [] => "calls".to_owned(),
                tools => format!(
                    "calls to {}",
                    tools
                        .iter()
                        .map(|g| g.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
            LimitScope::Tool => format!("calls to {tool}"),
            LimitScope::Principal => format!("calls by {principal}"),
            LimitScope::PrincipalTool => format!("calls by {principal} to {tool}"),
        };
        format!(
            "at most {} {of} per {} (burst {}; limits.rates[{}])",
            rate.count,
            toolgate_policy::format_duration(Some(rate.period)),
            self.spec.burst(),
            self.index
        )
    }
}

/// Where the TATs are kept.
pub(crate) enum Store {
    Local(LocalGcra),
    /// Boxed: its client is several times the size of the local table's handle.
    Redis(Box<RedisGcra>),
}

/// The rate limits of a policy.
pub(crate) struct RateLimits {
    rates: Vec<CompiledRate>,
    store: Store,
    pub(crate) on_store_error: OnStoreError,
    /// The store's timeout, the hint of a `limits_unavailable` answer.
    pub(crate) store_timeout: Duration,
}

/// What the rate limits say about a call.
#[derive(Debug)]
pub(crate) enum Check {
    /// No entry matches, or all passed.
    Pass,
    /// An entry refused it: what it says, and when the call would pass.
    Limited { message: String, wait: Duration },
    /// The store failed.
    StoreFailed(StoreFailure),
}

/// Where the counts of `settings` live (Redis when it names one, else this process's memory),
/// what a store failure means, and how long a check may wait: one choice for the rates and
/// the request limits alike.
pub(crate) fn store_for(
    settings: &LimitsSettings,
) -> Result<(Store, OnStoreError, Duration), BuildError> {
    Ok(match &settings.redis {
        Some(redis) => (
            Store::Redis(Box::new(RedisGcra::new(redis)?)),
            redis.on_store_error,
            redis.timeout,
        ),
        None => (
            Store::Local(LocalGcra::default()),
            OnStoreError::Open,
            Duration::from_secs(1),
        ),
    })
}

impl RateLimits {
    /// The rate limits of `settings`; `None` when it has no rates.
    pub(crate) fn new(settings: &LimitsSettings) -> Result<Option<Self>, BuildError> {
        if settings.rates.is_empty() {
            return Ok(None);
        }
        let rates = settings
            .rates
            .iter()
            .enumerate()
            .map(|(index, spec)| CompiledRate {
                index,
                interval_us: (spec.rate.interval().as_micros() as u64).max(1),
                spec: spec.clone(),
            })
            .collect();
        let (store, on_store_error, store_timeout) = store_for(settings)?;
        Ok(Some(RateLimits {
            rates,
            store,
            on_store_error,
            store_timeout,
        }))
    }

    /// Checks (and, when every entry passes, counts) a call of `caller` to `tool`.
    pub(crate) async fn check(&self, caller: &Caller, tool: &str) -> Check {
        let matching: Vec<&CompiledRate> = self
            .rates
            .iter()
            .filter(|r| r.matches(caller, tool))
            .collect();
        let principal = caller.name();
        if matching.is_empty() {
            return Check::Pass;
        }
        let cells: Vec<Cell> = matching
            .iter()
            .map(|r| Cell {
                key: r.key(principal, tool),
                interval_us: r.interval_us,
                burst: r.spec.burst(),
            })
            .collect();
        let verdict = match &self.store {
            Store::Local(local) => local.take(&cells, tokio::time::Instant::now()),
            Store::Redis(redis) => redis.take(&cells).await,
        };
        match verdict {
            Ok(Verdict::Pass) => Check::Pass,
            Ok(Verdict::Wait { cell, wait }) => Check::Limited {
                message: matching
                    .get(cell)
                    .map(|r| r.describe(principal, tool))
                    .unwrap_or_default(),
                wait,
            },
            Err(failure) => Check::StoreFailed(failure),
        }
    }
}
