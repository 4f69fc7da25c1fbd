//! The policy's `limits.requests` (L8): how many HTTP requests each principal may send to
//! `toolgate serve --http`. Each entry is a GCRA like those of `limits.rates`, counted per
//! principal, kept in the same store (this process's memory, or Redis with `limits.redis`,
//! under keys of their own). A host asks [`crate::Engine::admit_request`] before it handles a
//! request and answers a refusal itself: `serve --http` with 429 Too Many Requests.
//!
//! A request is checked against every entry that matches its principal at once: all pass and
//! all move, or none moves (the longest wait is reported), as for calls.

use std::time::Duration;

use toolgate_policy::{LimitsSettings, OnStoreError, RequestLimit};

use super::Store;
use super::gcra::{Cell, Verdict};
use crate::caller::Caller;
use crate::error::{BuildError, seconds};

/// Why `limits.requests` refused an HTTP request (L8).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestRefused {
    /// The principal sent more requests than an entry lets through.
    #[error(
        "rate limited: at most {count} requests by {principal} per {period} (burst {burst}; \
         {entry}); retry after {}",
        seconds(*.retry_after)
    )]
    Limited {
        /// The principal refused.
        principal: String,
        /// The entry's count of requests per period.
        count: u64,
        /// The entry's period, as the policy writes durations (`1m`).
        period: String,
        /// The entry's burst.
        burst: u64,
        /// Which entry: `limits.requests[i]`.
        entry: String,
        /// Where the entry is in the policy file (`team.yaml:12:7`), when known.
        at: Option<String>,
        /// When the request would pass.
        retry_after: Duration,
    },
    /// The store the limits are kept in (`limits.redis`) did not answer in time and the policy
    /// says `on_store_error: closed`.
    #[error("limits unavailable: {message}; retry after {}", seconds(*.retry_after))]
    Unavailable {
        /// What failed.
        message: String,
        /// A hint for when to try again (the store's timeout, at least a second).
        retry_after: Duration,
    },
}

impl RequestRefused {
    /// When the request would pass, or when to try again.
    pub fn retry_after(&self) -> Duration {
        match self {
            RequestRefused::Limited { retry_after, .. }
            | RequestRefused::Unavailable { retry_after, .. } => *retry_after,
        }
    }
}

/// One entry of `limits.requests`, ready to match principals.
struct Entry {
    index: usize,
    spec: RequestLimit,
    /// The time one request uses up, in microseconds (at least 1).
    interval_us: u64,
}

impl Entry {
    fn matches(&self, caller: &Caller) -> bool {
        let spec = &self.spec;
        (spec.principals.is_empty() || spec.principals.iter().any(|g| g.is_match(caller.name())))
            && (spec.groups.is_empty() || spec.groups.iter().any(|g| caller.in_group(g)))
    }

    fn refusal(&self, principal: &str, wait: Duration) -> RequestRefused {
        RequestRefused::Limited {
            principal: principal.to_owned(),
            count: self.spec.rate.count,
            period: toolgate_policy::format_duration(Some(self.spec.rate.period)),
            burst: self.spec.burst(),
            entry: format!("limits.requests[{}]", self.index),
            at: self.spec.position.as_ref().map(ToString::to_string),
            retry_after: wait,
        }
    }
}

/// The request limits of a policy.
pub(crate) struct RequestLimits {
    entries: Vec<Entry>,
    store: Store,
    on_store_error: OnStoreError,
    store_timeout: Duration,
}

impl RequestLimits {
    /// The request limits of `settings`; `None` when it has none.
    pub(crate) fn new(settings: &LimitsSettings) -> Result<Option<Self>, BuildError> {
        if settings.requests.is_empty() {
            return Ok(None);
        }
        let entries = settings
            .requests
            .iter()
            .enumerate()
            .map(|(index, spec)| Entry {
                index,
                interval_us: (spec.rate.interval().as_micros() as u64).max(1),
                spec: spec.clone(),
            })
            .collect();
        let (store, on_store_error, store_timeout) = super::store_for(settings)?;
        Ok(Some(RequestLimits {
            entries,
            store,
            on_store_error,
            store_timeout,
        }))
    }

    /// Checks (and, when every entry passes, counts) one request of `caller`.
    pub(crate) async fn admit(&self, caller: &Caller) -> Result<(), RequestRefused> {
        let matching: Vec<&Entry> = self.entries.iter().filter(|e| e.matches(caller)).collect();
        if matching.is_empty() {
            return Ok(());
        }
        let principal = caller.name();
        let cells: Vec<Cell> = matching
            .iter()
            .map(|e| Cell {
                // Apart from the rates' keys, which start with their index.
                key: format!("requests[{}]:{principal}", e.index),
                interval_us: e.interval_us,
                burst: e.spec.burst(),
            })
            .collect();
        let verdict = match &self.store {
            Store::Local(local) => local.take(&cells, tokio::time::Instant::now()),
            Store::Redis(redis) => redis.take(&cells).await,
        };
        match verdict {
            Ok(Verdict::Pass) => Ok(()),
            Ok(Verdict::Wait { cell, wait }) => match matching.get(cell) {
                Some(entry) => Err(entry.refusal(principal, wait)),
                None => Ok(()),
            },
            Err(failure) => match self.on_store_error {
                OnStoreError::Open => {
                    tracing::warn!(
                        principal,
                        "limits store: {failure}; the request goes on unlimited \
                         (limits.redis.on_store_error: open)"
                    );
                    Ok(())
                }
                OnStoreError::Closed => Err(RequestRefused::Unavailable {
                    message: failure.0,
                    retry_after: self.store_timeout.max(Duration::from_secs(1)),
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(principal: &str, rate: &str) -> RequestLimits {
        let settings = LimitsSettings {
            requests: vec![RequestLimit {
                principals: vec![toolgate_policy::glob::Glob::new(principal).unwrap()],
                groups: Vec::new(),
                rate: toolgate_policy::Rate::parse(rate).unwrap(),
                burst: None,
                position: None,
            }],
            ..LimitsSettings::default()
        };
        RequestLimits::new(&settings).unwrap().unwrap()
    }

    #[tokio::test]
    async fn l8_each_principal_has_its_own_count_and_a_refusal_names_the_entry() {
        let limits = limits("a*", "2/m");
        let alice = Caller::new("alice", Vec::new());
        let bob = Caller::new("bob", Vec::new());
        let anna = Caller::new("anna", Vec::new());
        assert_eq!(limits.admit(&alice).await, Ok(()));
        assert_eq!(limits.admit(&alice).await, Ok(()));
        let refused = limits.admit(&alice).await.unwrap_err();
        assert_eq!(
            refused.to_string(),
            "rate limited: at most 2 requests by alice per 1m (burst 2; limits.requests[0]); \
             retry after 30 s"
        );
        // Another principal the entry names counts apart; one it does not name is not limited.
        assert_eq!(limits.admit(&anna).await, Ok(()));
        for _ in 0..10 {
            assert_eq!(limits.admit(&bob).await, Ok(()));
        }
    }
}
