//! The `limits:` section (rate limits, quotas, concurrency and fair queuing per principal and
//! per tool, shared through Redis when configured), and the `retries:` and `circuit_breaker:`
//! sections (what happens when a tool's source fails).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use super::{Position, here};
use crate::DiagnosticKind;
use crate::glob::Glob;
use crate::shape::de::checked;
use crate::shape::values::{self, Count, DurationText, GlobList, MAX_SAFE_INTEGER, names_only};

/// The `limits:` section. Absent = no limits.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(
    inline,
    deny_unknown_fields,
    extend("x-expected" = "a mapping with rates, requests, concurrency and redis")
)]
pub struct LimitsSettings {
    /// Rate limits and quotas, each a generic cell rate (GCRA) over the calls it matches: a
    /// call must pass every entry that matches it, and one that does not is answered
    /// rate_limited with the time after which it would pass.
    pub rates: Vec<RateLimit>,
    /// Limits on the HTTP requests each principal sends to toolgate serve --http, each a
    /// generic cell rate (GCRA) counted per principal: a POST to the MCP endpoint that an entry
    /// refuses is answered 429 Too Many Requests, with Retry-After and the reason, before any
    /// MCP message is read. Kept where the rates are (in Redis with limits.redis).
    pub requests: Vec<RequestLimit>,
    /// How many calls run at once, per principal and for the whole gateway, and how the calls
    /// beyond wait: in a queue served in turn across principals, and across the sessions of a
    /// principal. Every key is optional.
    pub concurrency: ConcurrencySettings,
    /// Keep the rate limits' state in Redis, so that every replica that names the same server
    /// and prefix shares them. Absent = in this process's memory.
    pub redis: Option<RedisSettings>,
}

/// What one rate-limit entry counts separately (`limits.rates[].per`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub enum LimitScope {
    /// One count for every call the entry matches, whoever calls which of its tools.
    All,
    /// One count per tool.
    Tool,
    /// One count per principal, over all the entry's tools.
    Principal,
    /// One count per principal and tool.
    #[default]
    PrincipalTool,
}

impl LimitScope {
    /// The name the policy writes.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitScope::All => "all",
            LimitScope::Tool => "tool",
            LimitScope::Principal => "principal",
            LimitScope::PrincipalTool => "principal_tool",
        }
    }
}

/// One rate limit or quota (`limits.rates[]`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(inline, deny_unknown_fields)]
pub struct RateLimit {
    /// Real tool names or globs the entry counts. Absent or empty = every tool.
    #[serde(default)]
    #[schemars(with = "GlobList")]
    pub tools: Vec<Glob>,
    /// Principal names or globs the entry applies to. Absent or empty = every principal
    /// (calls no credential proved, from the command line, stdio or HTTP without
    /// authentication, are the principal local).
    #[serde(default)]
    #[schemars(with = "GlobList")]
    pub principals: Vec<Glob>,
    /// Groups the entry applies to: a principal in any of them. Absent or empty = every
    /// principal.
    #[serde(default)]
    #[schemars(with = "Vec<values::Name>")]
    pub groups: Vec<String>,
    /// What is counted separately: all (one count for everything the entry matches), tool,
    /// principal, or principal_tool. Default principal_tool.
    #[serde(default)]
    pub per: LimitScope,
    /// The sustained rate: a number of calls per period, written N/s, N/m, N/h, N/d or
    /// N/DURATION (10/s, 100/m, 5000/d, 30/10s).
    #[schemars(with = "RateText")]
    pub rate: Rate,
    /// How many calls may come at once before the rate applies; over any stretch of time t
    /// at most burst + rate x t calls pass. Default: the rate's count (100/h lets 100 calls
    /// through at once, then one every 36 s).
    #[serde(default)]
    #[schemars(
        with = "Count",
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub burst: Option<u64>,
    /// Where the entry is in the policy file; `limits.rates[i]` names it in messages and keys.
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    pub position: Option<Position>,
}

impl RateLimit {
    /// The burst in force: the policy's, or the rate's count.
    pub fn burst(&self) -> u64 {
        self.burst.unwrap_or(self.rate.count).max(1)
    }
}

/// One limit on the HTTP requests of each principal (`limits.requests[]`, L8).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(inline, deny_unknown_fields)]
pub struct RequestLimit {
    /// Principal names or globs the entry applies to, each counted apart. Absent or empty =
    /// every principal (requests no credential proved, on loopback without authentication,
    /// are the principal local).
    #[serde(default)]
    #[schemars(with = "GlobList")]
    pub principals: Vec<Glob>,
    /// Groups the entry applies to: a principal in any of them. Absent or empty = every
    /// principal.
    #[serde(default)]
    #[schemars(with = "Vec<values::Name>")]
    pub groups: Vec<String>,
    /// The sustained rate of each principal's requests, written N/s, N/m, N/h, N/d or
    /// N/DURATION (10/s, 600/m).
    #[schemars(with = "RateText")]
    pub rate: Rate,
    /// How many requests may come at once before the rate applies. Default: the rate's count.
    #[serde(default)]
    #[schemars(
        with = "Count",
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub burst: Option<u64>,
    /// Where the entry is in the policy file; `limits.requests[i]` names it in answers and keys.
    #[serde(skip_deserializing, default = "here")]
    #[schemars(skip)]
    pub position: Option<Position>,
}

impl RequestLimit {
    /// The burst in force: the policy's, or the rate's count.
    pub fn burst(&self) -> u64 {
        self.burst.unwrap_or(self.rate.count).max(1)
    }
}

/// A rate: `count` calls per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Calls per period, at least 1.
    pub count: u64,
    /// The period, above zero.
    pub period: Duration,
}

impl Rate {
    /// Parses `N/s`, `N/m`, `N/h`, `N/d` or `N/DURATION` (`30/10s`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolgate_policy::Rate;
    ///
    /// assert_eq!(Rate::parse("10/s").unwrap().period, Duration::from_secs(1));
    /// assert_eq!(Rate::parse("30/10s").unwrap().count, 30);
    /// assert!(Rate::parse("0/s").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Rate, String> {
        let (count, per) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?} is not a rate like 10/s or 100/h"))?;
        let count: u64 = count
            .trim()
            .parse()
            .map_err(|_| format!("{count:?} is not a whole number of calls"))?;
        if count == 0 {
            return Err("a rate lets at least 1 call through: use a rule to deny a tool".into());
        }
        let per = per.trim();
        let period = match per {
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            "d" => Duration::from_secs(86_400),
            other => match other.strip_suffix('d') {
                Some(days) if days.chars().all(|c| c.is_ascii_digit()) && !days.is_empty() => {
                    let days: u64 = days.parse().map_err(|_| format!("{other:?} is too long"))?;
                    Duration::from_secs(days.saturating_mul(86_400))
                }
                _ => crate::duration::parse_duration(other)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| "the period cannot be none".to_string())?,
            },
        };
        if period.is_zero() {
            return Err("the period must be above zero".into());
        }
        Ok(Rate { count, period })
    }

    /// The time one call uses up: the period divided by the count.
    pub fn interval(&self) -> Duration {
        self.period / u32::try_from(self.count).unwrap_or(u32::MAX)
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}",
            self.count,
            crate::format_duration(Some(self.period))
        )
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(
            checked(Rate::parse(&text), DiagnosticKind::Duration)?.unwrap_or(Rate {
                count: 1,
                period: Duration::from_secs(1),
            }),
        )
    }
}

// `N/s`, `N/10s`, `N/d`.
#[derive(JsonSchema)]
#[expect(dead_code, reason = "a schema only: never read")]
#[schemars(
    rename = "rate",
    extend("x-expected" = "a rate like 10/s, 100/m, 5000/d or 30/10s")
)]
struct RateText(
    #[schemars(regex(pattern = r"^[0-9]{1,12}/([0-9]{0,12}(ms|s|m|h|d)|[0-9hms]{2,40})$"))] String,
);

/// `limits.concurrency`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct ConcurrencySettings {
    /// At most this many calls of one principal run at once. Absent = no cap of its own.
    #[schemars(
        with = "Count",
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub per_principal: Option<usize>,
    /// At most this many calls run at once in the whole gateway (every principal together).
    /// Absent = no cap.
    #[schemars(
        with = "Count",
        range(min = 1, max = MAX_SAFE_INTEGER),
        extend("x-expected" = "a whole number from 1 to 9007199254740991")
    )]
    pub total: Option<usize>,
    /// Calls that may wait for a place at once, all principals together; the call beyond is
    /// answered rate_limited at once. Default 1000.
    #[schemars(with = "Count", range(min = 0, max = MAX_SAFE_INTEGER))]
    pub max_queued: usize,
    /// How long a call waits for a place before it is answered rate_limited. The wait is queue
    /// time: the call's timeout starts when it runs. Default 30s.
    #[serde(deserialize_with = "values::positive_duration")]
    #[schemars(with = "DurationText")]
    pub max_wait: Duration,
}

impl Default for ConcurrencySettings {
    fn default() -> Self {
        ConcurrencySettings {
            per_principal: None,
            total: None,
            max_queued: 1000,
            max_wait: Duration::from_secs(30),
        }
    }
}

/// What a call does when the limits' store cannot answer in time (`limits.redis.on_store_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline, transform = names_only)]
pub enum OnStoreError {
    /// The call goes on unlimited (an `error` event says so).
    #[default]
    Open,
    /// The call is refused, with the error kind limits_unavailable.
    Closed,
}

/// `limits.redis`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(inline, deny_unknown_fields)]
pub struct RedisSettings {
    /// The server, as a redis:// URL (redis://host:port/db, redis://:password@host:port/).
    /// ${NAME} takes the value of an environment variable.
    #[serde(deserialize_with = "redis_url")]
    #[schemars(
        with = "String",
        regex(pattern = "^(redis|rediss)://"),
        extend("x-expected" = "a URL like redis://127.0.0.1:6379/")
    )]
    pub url: String,
    /// Keys are this prefix, then the entry and what it counts. Replicas that share limits use
    /// the same prefix. Default toolgate:limits.
    #[schemars(length(min = 1), extend("x-expected" = "a non-empty key prefix"))]
    pub prefix: String,
    /// The longest a call waits for the store's answer (connecting included) before
    /// on_store_error decides. Default 100ms.
    #[serde(deserialize_with = "values::positive_duration")]
    #[schemars(with = "DurationText")]
    pub timeout: Duration,
    /// What a call does when the store cannot be reached or does not answer within timeout:
    /// open (it goes on, unlimited, and an error event says so) or closed (it is refused with
    /// limits_unavailable). Default open.
    pub on_store_error: OnStoreError,
}

impl Default for RedisSettings {
    fn default() -> Self {
        RedisSettings {
            url: "redis://127.0.0.1:6379/".to_owned(),
            prefix: "toolgate:limits".to_owned(),
            timeout: Duration::from_millis(100),
            on_store_error: OnStoreError::Open,
        }
    }
}

/// The URL with `${NAME}` replaced from the environment.
fn redis_url<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let text = String::deserialize(deserializer)?;
    let expanded = crate::EnvTemplate::parse(&text)
        .map_err(|e| e.to_string())
        .and_then(|t| t.expand_env().map_err(|e| e.to_string()));
    Ok(checked(expanded, DiagnosticKind::Template)?.unwrap_or(text))
}

/// The `retries:` section: calls of idempotent tools that fail in a way worth trying again are
/// run again, with exponential backoff and jitter, within the call's timeout. Absent = no
/// retries.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(
    inline,
    deny_unknown_fields,
    extend("x-expected" = "a mapping (write retries: {} for every default)")
)]
pub struct RetrySettings {
    /// Attempts in all, the first included. Default 3.
    #[schemars(with = "Count", range(min = 1, max = 100))]
    pub attempts: u32,
    /// The wait before the second attempt; each later wait doubles, up to max_backoff, and
    /// each is drawn at random between half of it and all of it (jitter). Default 100ms.
    #[serde(deserialize_with = "values::positive_duration")]
    #[schemars(with = "DurationText")]
    pub initial_backoff: Duration,
    /// The longest wait between two attempts. Default 2s.
    #[serde(deserialize_with = "values::positive_duration")]
    #[schemars(with = "DurationText")]
    pub max_backoff: Duration,
    /// The error kinds worth another attempt. Default upstream_unavailable, upstream_error,
    /// overloaded, tool_execution_panic.
    pub on: Vec<String>,
    /// Real tool names or globs retried as idempotent, whatever their annotations say. Tools
    /// not named here (or in not_idempotent) are retried when their idempotentHint annotation
    /// is true.
    #[schemars(with = "GlobList")]
    pub idempotent: Vec<Glob>,
    /// Real tool names or globs never retried, whatever their annotations say; wins over
    /// idempotent.
    #[schemars(with = "GlobList")]
    pub not_idempotent: Vec<Glob>,
}

impl Default for RetrySettings {
    fn default() -> Self {
        RetrySettings {
            attempts: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            on: default_failure_kinds(),
            idempotent: Vec::new(),
            not_idempotent: Vec::new(),
        }
    }
}

/// The error kinds that say a tool's source failed rather than the call's arguments: what
/// retries retry and what circuit breakers count, unless the policy says otherwise.
pub fn default_failure_kinds() -> Vec<String> {
    [
        "upstream_unavailable",
        "upstream_error",
        "overloaded",
        "tool_execution_panic",
    ]
    .map(String::from)
    .to_vec()
}

/// The `circuit_breaker:` section: one breaker per upstream MCP server and per plugin. After
/// `failures` failures in a row it opens and calls to that source are refused at once
/// (circuit_open); after cool_down it half-opens and lets one trial call through, which closes
/// it on success or opens it again on failure. Absent = no breakers.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(
    inline,
    deny_unknown_fields,
    extend("x-expected" = "a mapping (write circuit_breaker: {} for every default)")
)]
pub struct BreakerSettings {
    /// Failures in a row that open a source's breaker. Default 5.
    #[schemars(with = "Count", range(min = 1, max = 1000000))]
    pub failures: u32,
    /// How long a breaker stays open before it lets a trial call through. Default 30s.
    #[serde(deserialize_with = "values::positive_duration")]
    #[schemars(with = "DurationText")]
    pub cool_down: Duration,
    /// The error kinds that count as a failure of the source (a timeout always counts).
    /// Default upstream_unavailable, upstream_error, overloaded, tool_execution_panic.
    pub on: Vec<String>,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        BreakerSettings {
            failures: 5,
            cool_down: Duration::from_secs(30),
            on: default_failure_kinds(),
        }
    }
}
