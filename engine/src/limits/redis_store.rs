//! The rate limits' TATs in Redis (`limits.redis`, L4): one Lua script checks and moves every
//! cell of a call atomically, on the server's clock (`TIME`), so replicas share one limit even
//! when their own clocks disagree.
//!
//! One multiplexed connection is opened at the first call and shared by every call; each use
//! is bounded by `limits.redis.timeout` (connecting included). A connection that failed or
//! timed out is dropped, and the next call connects again: a server that comes back is used
//! again without a restart.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use tokio::sync::Mutex;
use toolgate_policy::RedisSettings;

use super::gcra::{Cell, StoreFailure, Verdict};
use crate::error::BuildError;

/// GCRA over every key of a call. KEYS: the cells; ARGV: per cell, its interval and its burst
/// (microseconds, count). Returns `{1, 0, 0}` when all passed (and moved), or `{0, i, wait}`
/// for the cell `i` (1-based) that waits longest and its wait in microseconds (nothing moved).
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local moved = {}
local worst, worst_i = 0, 0
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2 * i - 1])
  local burst = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i])) or now
  if tat < now then tat = now end
  local new_tat = tat + interval
  local wait = new_tat - interval * burst - now
  if wait > worst then worst, worst_i = wait, i end
  moved[i] = new_tat
end
if worst > 0 then return {0, worst_i, worst} end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], string.format('%d', moved[i]), 'PX', math.ceil((moved[i] - now) / 1000) + 1)
end
return {1, 0, 0}
";

/// The Redis store of one engine.
pub(crate) struct RedisGcra {
    client: redis::Client,
    prefix: String,
    timeout: Duration,
    script: Arc<redis::Script>,
    conn: Mutex<Option<MultiplexedConnection>>,
}

impl RedisGcra {
    /// The store of `settings`; nothing is connected until the first call.
    pub(crate) fn new(settings: &RedisSettings) -> Result<Self, BuildError> {
        let client =
            redis::Client::open(settings.url.as_str()).map_err(|e| BuildError::Setting {
                message: format!("limits.redis.url: {e}"),
                at: crate::error::At(None),
            })?;
        Ok(RedisGcra {
            client,
            prefix: settings.prefix.clone(),
            timeout: settings.timeout,
            script: Arc::new(redis::Script::new(GCRA)),
            conn: Mutex::new(None),
        })
    }

    /// GCRA over `cells`, bounded by the timeout.
    pub(crate) async fn take(&self, cells: &[Cell]) -> Result<Verdict, StoreFailure> {
        match tokio::time::timeout(self.timeout, self.take_unbounded(cells)).await {
            Ok(Ok(verdict)) => Ok(verdict),
            Ok(Err(e)) => {
                self.forget_connection().await;
                Err(StoreFailure(format!("Redis failed: {e}")))
            }
            Err(_) => {
                self.forget_connection().await;
                Err(StoreFailure(format!(
                    "Redis did not answer within {} (limits.redis.timeout)",
                    toolgate_policy::format_duration(Some(self.timeout))
                )))
            }
        }
    }

    async fn take_unbounded(&self, cells: &[Cell]) -> redis::RedisResult<Verdict> {
        let mut conn = self.connection().await?;
        let mut invocation = self.script.prepare_invoke();
        for cell in cells {
            invocation.key(format!("{}:{}", self.prefix, cell.key));
        }
        for cell in cells {
            invocation.arg(cell.interval_us).arg(cell.burst);
        }
        let (passed, cell, wait): (i64, i64, i64) = invocation.invoke_async(&mut conn).await?;
        if passed == 1 {
            return Ok(Verdict::Pass);
        }
        Ok(Verdict::Wait {
            cell: usize::try_from(cell - 1).unwrap_or(0),
            wait: Duration::from_micros(u64::try_from(wait).unwrap_or(0)),
        })
    }

    /// The shared connection, opened when there is none.
    async fn connection(&self) -> redis::RedisResult<MultiplexedConnection> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = &*slot {
            return Ok(conn.clone());
        }
        // The call's own bound (`take`) covers connecting and answering; the client's timeouts
        // would race it with another message.
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(None)
            .set_response_timeout(None);
        let conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        *slot = Some(conn.clone());
        Ok(conn)
    }

    /// Drops the shared connection, so the next call connects again. Waits for the slot only
    /// briefly: a call still connecting holds it, and will replace it anyway.
    async fn forget_connection(&self) {
        if let Ok(mut slot) = self.conn.try_lock() {
            *slot = None;
        }
    }
}
