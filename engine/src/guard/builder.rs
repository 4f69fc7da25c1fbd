//! The one place that owns the guard's layers: which there are, their order, and what each is
//! built from.
//!
//! Every call passes through the layers outermost first, and ends at the endpoint (the tool, or
//! the unknown-tool answer):
//!
//! ```text
//! after hook ─ reduce ─ concurrency ─ group ─ timeout ─ result cap ─ redact ─ arguments ─ visibility ─ rewrite ─ rules ─ before ─ rate limit ─ retry ─ breaker ─ (your layers) ─ endpoint
//! ```
//!
//! * **after hook** (G6, G7) sees the final outcome; its failure is an `error` event.
//! * **reduce** (R1, R2, R9; when reduction is on) offloads large results to the store.
//! * **concurrency** (L3; with `limits.concurrency`) holds the call until its principal and
//!   the gateway have a place for it, served fairly across principals and sessions; its wait
//!   is queue time, so it sits outside the timeout.
//! * **group** serialises calls that share a `sequential_group`; its wait is queue time, so it
//!   sits outside the timeout, and a member holds the lock until it really returns.
//! * **timeout** (G2) starts once the call runs (after any wait for a concurrency slot or group
//!   lock, reported as `queued`), covers everything inside, cancels the call's token and drops
//!   the tool's future at the deadline.
//! * **result cap** (G3-G5) reads streams and caps text by Unicode characters.
//! * **redact** (`redact:`) masks secrets in the result and in a failure's text; inside the
//!   cap and the offload, so the cut, the preview and the stored result are made from masked
//!   text.
//! * **arguments** (D2) parses the JSON arguments and renames argument aliases.
//! * **visibility** (S4) refuses catalog tools that were not found yet.
//! * **rewrite** (D2, D3) runs the rewrite script; its output is what the tool receives.
//! * **rules** (G1) checks the declarative allow/deny rules on those final arguments (path
//!   arguments in normalised form), so a rewrite cannot turn a denied call into an allowed one.
//!   Unknown names pass on to the unknown-tool answer; built-ins meet only rules naming them.
//! * **before** (G1) runs the before script, also on the final arguments.
//! * **rate limit** (L1, L2, L4; with `limits.rates`) counts the call against the rate limits
//!   and quotas that match it. After the rules and the before hook, so a denied call uses up
//!   no quota; outside the retries, so one call of the model counts once.
//! * **retry** (L5; with `retries:`) runs an idempotent tool's failed attempt again, with
//!   backoff and jitter, within the call's deadline.
//! * **breaker** (L6; with `circuit_breaker:`) refuses calls to a plugin or upstream server
//!   whose breaker is open, and counts each attempt's failure.
//! * **your layers** ([`crate::EngineBuilder::layer`]) run last, just before the tool.
//!
//! [`ORDER`] lists the stages outermost first (each [`Stage`] variant's docs say what it does);
//! [`Stage::needs`] says which stages must run outside a stage (before it on the way in, after
//! it on the way out), and why. The crate does not compile when [`ORDER`] breaks one of those
//! needs (the `const` assertion below), and [`GuardParts::build`] assembles the chain by walking
//! [`ORDER`], handing each layer the policy, so the order is stated once, in code.
//!
//! Each layer is a file of this folder, declared here beside its stage. Adding one: write its
//! file, then here its `mod` line, its [`Stage`] variant with what it needs, its place in
//! [`ORDER`] and its arm in [`GuardParts::build`].

// The layers' modules: files of this folder (`guard/`), declared here rather than in
// `mod.rs` so that a layer is its file and its lines in this one.
#[path = "after_hook.rs"]
mod after_hook;
#[path = "arguments.rs"]
pub(super) mod arguments;
#[path = "before.rs"]
mod before;
#[path = "breaker.rs"]
mod breaker;
#[path = "concurrency.rs"]
mod concurrency;
#[path = "group.rs"]
mod group;
#[path = "rate_limit.rs"]
mod rate_limit;
#[path = "redact.rs"]
pub(super) mod redact;
#[path = "reduce.rs"]
mod reduce;
#[path = "result_cap.rs"]
mod result_cap;
#[path = "retry.rs"]
mod retry;
#[path = "rewrite.rs"]
mod rewrite;
#[path = "rules.rs"]
mod rules;
#[path = "timeout.rs"]
mod timeout;
#[path = "visibility.rs"]
pub(super) mod visibility;

use std::collections::HashMap;
use std::sync::Arc;

use toolgate_policy::{Hook, Policy, ReductionSettings};
use toolgate_store::ResultStore;

use after_hook::AfterHookLayer;
use arguments::{ArgAliases, ArgumentsLayer};
use before::BeforeLayer;
pub(crate) use breaker::Breaker;
use breaker::BreakerLayer;
use concurrency::ConcurrencyLayer;
use group::GroupLayer;
use rate_limit::RateLimitLayer;
pub(crate) use redact::RedactLayer;
use reduce::ReduceLayer;
use result_cap::ResultCapLayer;
use retry::RetryLayer;
use rewrite::RewriteLayer;
use rules::RulesLayer;
use timeout::TimeoutLayer;
use visibility::VisibilityLayer;

use super::endpoint::Endpoint;
use super::layer::Layer;
use super::run::Guard;
use crate::events::Events;
use crate::limits::RateLimits;
use crate::limits::fair::FairGate;
use crate::script::ScriptSet;

/// One stage of the guard. Each variant's docs say what it does and what it needs from the
/// stages outside it ([`Stage::needs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The `after` script sees the final outcome, offloaded or capped, panics included (G6,
    /// G7). Needs nothing: it is the outermost stage.
    AfterHook,
    /// Offloads large results and error texts to the store (R1, R2, R9; when reduction is on).
    /// Needs the after hook outside, so that the hook sees what the model gets.
    Reduce,
    /// Holds the call until its principal and the gateway have a place to run it
    /// (`limits.concurrency`, L3). Needs the reduce stage outside, so that a slow store never
    /// holds a place.
    Concurrency,
    /// Serialises the calls of a `sequential_group`. Needs the reduce stage outside, so that a
    /// slow store never holds the group's lock.
    Group,
    /// The call's timeout (G2). Needs the group outside: the wait for the group's lock is queue
    /// time, and the timeout starts once the call runs. Needs the reduce stage outside: the
    /// offload is not cut by the call's deadline.
    Timeout,
    /// Reads streams and caps text by characters (G3-G5). Needs the timeout outside: a stream is
    /// read under the call's deadline.
    ResultCap,
    /// Masks secrets in results and failure texts (`redact:`). Needs the result cap and the
    /// reduce stage outside: the cap's cut, the offload's preview and the stored result (paged
    /// by `read_tool_result`) are made from masked text, so the model never sees a secret.
    Redact,
    /// Parses the JSON arguments and renames argument aliases (D2). Needs the result cap outside: the
    /// error it returns echoes the model's text, which the cap holds.
    Arguments,
    /// Refuses catalog tools not found yet (S4). Needs the result cap outside, for the same reason.
    Visibility,
    /// The rewrite script (D2, D3). Needs the parsed, renamed arguments and the deadline it
    /// runs under.
    Rewrite,
    /// The allow/deny rules (G1). Needs the rewrite outside: the rules judge the arguments the
    /// tool will receive, so a rewrite cannot turn a denied call into an allowed one unseen.
    Rules,
    /// The before script (G1). Needs the rules outside (a call the rules deny never reaches the
    /// script) and the final arguments.
    Before,
    /// The rate limits and quotas (`limits.rates`, L1, L2, L4). Needs the rules and the before
    /// hook outside: a call they deny uses up no quota.
    RateLimit,
    /// Retries of idempotent tools (`retries:`, L5). Needs the rate limit outside (one call of
    /// the model counts once, however many attempts it takes) and the timeout outside (the
    /// attempts share the call's deadline).
    Retry,
    /// The circuit breakers of plugins and upstream servers (`circuit_breaker:`, L6). Needs the
    /// retry outside: each attempt meets the breaker and counts in it.
    Breaker,
    /// The layers the program added ([`crate::EngineBuilder::layer`]): last, just before the
    /// tool, on the final, judged arguments.
    Custom,
}

/// The stages, outermost first; the endpoint (the tool, or the unknown-tool answer) follows.
pub(crate) const ORDER: [Stage; 16] = [
    Stage::AfterHook,
    Stage::Reduce,
    Stage::Concurrency,
    Stage::Group,
    Stage::Timeout,
    Stage::ResultCap,
    Stage::Redact,
    Stage::Arguments,
    Stage::Visibility,
    Stage::Rewrite,
    Stage::Rules,
    Stage::Before,
    Stage::RateLimit,
    Stage::Retry,
    Stage::Breaker,
    Stage::Custom,
];

impl Stage {
    /// The stages that must run outside this one (see each variant's docs for why).
    const fn needs(self) -> &'static [Stage] {
        match self {
            Stage::AfterHook => &[],
            Stage::Reduce => &[Stage::AfterHook],
            Stage::Concurrency => &[Stage::Reduce],
            Stage::Group => &[Stage::Reduce],
            Stage::Timeout => &[Stage::Group, Stage::Reduce, Stage::Concurrency],
            Stage::ResultCap => &[Stage::Timeout],
            Stage::Redact => &[Stage::ResultCap, Stage::Reduce],
            Stage::Arguments => &[Stage::ResultCap],
            Stage::Visibility => &[Stage::ResultCap],
            Stage::Rewrite => &[Stage::Arguments, Stage::Timeout],
            Stage::Rules => &[Stage::Rewrite, Stage::Arguments],
            Stage::Before => &[Stage::Rules, Stage::Rewrite],
            Stage::RateLimit => &[Stage::Rules, Stage::Before],
            Stage::Retry => &[Stage::RateLimit, Stage::Timeout],
            Stage::Breaker => &[Stage::Retry],
            Stage::Custom => &[Stage::Before],
        }
    }
}

/// Where `stage` is in [`ORDER`] (`ORDER.len()` if it is not there).
const fn position(stage: Stage) -> usize {
    let mut i = 0;
    while i < ORDER.len() {
        if ORDER[i] as usize == stage as usize {
            return i;
        }
        i += 1;
    }
    ORDER.len()
}

/// Whether every stage of [`ORDER`] runs inside the stages it needs.
const fn order_meets_needs() -> bool {
    let mut i = 0;
    while i < ORDER.len() {
        let needs = ORDER[i].needs();
        let mut k = 0;
        while k < needs.len() {
            if position(needs[k]) >= i {
                return false;
            }
            k += 1;
        }
        i += 1;
    }
    true
}

const _: () = assert!(
    order_meets_needs(),
    "the guard's ORDER puts a stage outside a stage it needs outside it"
);

/// The order in which a call's arguments are changed and judged, for `toolgate explain` and
/// the docs: the rules and the before hook see exactly what the tool will receive. It follows
/// the order of the guard's layers (a test checks that).
pub const CHECK_ORDER: &str =
    "argument aliases -> rewrite script -> rules (paths normalised) -> before hook -> tool";

/// Offloading large results to the store.
pub(crate) struct Reduction {
    pub(crate) store: Arc<dyn ResultStore>,
    pub(crate) settings: ReductionSettings,
    /// The dispatch cap, used for the fallback text when the store fails (R9).
    pub(crate) fallback_chars: Option<u64>,
}

/// What the guard is assembled from; [`GuardParts::build`] puts each part in its place.
pub(crate) struct GuardParts {
    pub(crate) scripts: Arc<ScriptSet>,
    pub(crate) events: Events,
    /// `Some` while reduction is on.
    pub(crate) reduction: Option<Reduction>,
    /// The names of the sequential groups, when any tool is in one.
    pub(crate) groups: Vec<String>,
    pub(crate) arg_aliases: ArgAliases,
    /// `Some` while search gates catalog tools (S4).
    pub(crate) visibility: Option<VisibilityLayer>,
    pub(crate) custom: Vec<Arc<dyn Layer>>,
    /// `Some` while `limits.rates` has entries.
    pub(crate) rate_limits: Option<RateLimits>,
    /// Real tool name -> its source's breaker (tools of plugins and upstream servers), while
    /// `circuit_breaker:` is on.
    pub(crate) breakers: HashMap<String, Arc<Breaker>>,
    pub(crate) endpoint: Endpoint,
}

impl GuardParts {
    /// The guard: the stages of [`ORDER`] that `policy` uses, in that order, then the
    /// endpoint. A stage with nothing to do is left out.
    pub(crate) fn build(self, policy: &Policy) -> Guard {
        let GuardParts {
            scripts,
            events,
            mut reduction,
            groups,
            mut arg_aliases,
            mut visibility,
            mut custom,
            mut rate_limits,
            mut breakers,
            endpoint,
        } = self;
        let mut layers: Vec<Arc<dyn Layer>> = Vec::new();
        for stage in ORDER {
            match stage {
                Stage::AfterHook if scripts.has(Hook::After) => {
                    layers.push(Arc::new(AfterHookLayer {
                        scripts: scripts.clone(),
                        events: events.clone(),
                    }));
                }
                Stage::Reduce => {
                    if let Some(r) = reduction.take() {
                        layers.push(Arc::new(ReduceLayer {
                            store: r.store,
                            settings: r.settings,
                            fallback_chars: r.fallback_chars,
                            events: events.clone(),
                        }));
                    }
                }
                Stage::Concurrency => {
                    let c = policy.limits.as_ref().map(|l| &l.concurrency);
                    if let Some(c) = c.filter(|c| c.per_principal.is_some() || c.total.is_some()) {
                        layers.push(Arc::new(ConcurrencyLayer {
                            gate: FairGate::new(c.per_principal, c.total, c.max_queued),
                            max_wait: c.max_wait,
                        }));
                    }
                }
                Stage::Group if !groups.is_empty() => {
                    layers.push(Arc::new(GroupLayer::new(groups.iter().map(String::as_str))));
                }
                Stage::Timeout => layers.push(Arc::new(TimeoutLayer)),
                // Every result is capped by characters, but while reduction is on (R2).
                Stage::ResultCap => layers.push(Arc::new(ResultCapLayer {
                    reduction: policy.reduction.is_some(),
                })),
                Stage::Redact => {
                    if let Some(r) = policy.redact.as_ref().and_then(RedactLayer::new) {
                        layers.push(Arc::new(r));
                    }
                }
                Stage::Arguments => layers.push(Arc::new(ArgumentsLayer {
                    aliases: std::mem::take(&mut arg_aliases),
                })),
                Stage::Visibility => {
                    if let Some(v) = visibility.take() {
                        layers.push(Arc::new(v));
                    }
                }
                Stage::Rewrite if scripts.has(Hook::Rewrite) => {
                    layers.push(Arc::new(RewriteLayer {
                        scripts: scripts.clone(),
                    }));
                }
                Stage::Rules => layers.push(Arc::new(RulesLayer)),
                Stage::Before if scripts.has(Hook::Before) => {
                    layers.push(Arc::new(BeforeLayer {
                        scripts: scripts.clone(),
                    }));
                }
                Stage::RateLimit => {
                    if let Some(limits) = rate_limits.take() {
                        layers.push(Arc::new(RateLimitLayer {
                            limits,
                            events: events.clone(),
                        }));
                    }
                }
                Stage::Retry => {
                    if let Some(settings) = &policy.retries {
                        layers.push(Arc::new(RetryLayer {
                            settings: settings.clone(),
                            events: events.clone(),
                        }));
                    }
                }
                Stage::Breaker => {
                    if let Some(settings) = &policy.circuit_breaker
                        && !breakers.is_empty()
                    {
                        layers.push(Arc::new(BreakerLayer {
                            settings: settings.clone(),
                            breakers: std::mem::take(&mut breakers),
                            events: events.clone(),
                        }));
                    }
                }
                Stage::Custom => layers.append(&mut custom),
                Stage::AfterHook | Stage::Group | Stage::Rewrite | Stage::Before => {}
            }
        }
        Guard::new(layers, endpoint, events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_order_names_the_argument_stages_in_the_order_of_the_chain() {
        let named = [
            (Stage::Arguments, "argument aliases"),
            (Stage::Rewrite, "rewrite script"),
            (Stage::Rules, "rules"),
            (Stage::Before, "before hook"),
        ];
        let text_at = |words: &str| {
            CHECK_ORDER
                .find(words)
                .unwrap_or_else(|| panic!("CHECK_ORDER does not name {words:?}"))
        };
        for pair in named.windows(2) {
            let [(first, first_words), (second, second_words)] = pair else {
                continue;
            };
            assert!(text_at(first_words) < text_at(second_words));
            assert!(position(*first) < position(*second), "{first:?} {second:?}");
        }
    }
}
