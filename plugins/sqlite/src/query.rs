//! One bounded, read-only query on a granted database: [`Databases::query`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusqlite::limits::Limit;
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags};
use toolgate_plugin_api::serde_json::{self, Value, json};
use toolgate_plugin_api::{ToolError, encode_base64};
use toolgate_plugin_grants::{GrantError, Grants};

/// How many SQLite virtual machine steps run between two looks at the clock.
const PROGRESS_STEPS: i32 = 1000;

/// Why a query failed. Its message, which starts with the kind (`not_granted:`, ...), is what
/// the model reads: it crosses the plugin ABI as text, so each message is complete and holds
/// its cause, and `source()` returns none (a cause is in the message or in `source()`, never
/// both).
#[derive(Debug, thiserror::Error)]
pub enum SqliteError {
    /// The database file does not exist or cannot be resolved.
    #[error("not_found: {path}: {error}")]
    NotFound {
        /// The path as given.
        path: PathBuf,
        /// Why it could not be resolved.
        error: std::io::Error,
    },
    /// The resolved path is not under a granted path.
    #[error("not_granted: {0}")]
    NotGranted(GrantError),
    /// The statement would write (`sqlite3_stmt_readonly` is false).
    #[error(
        "not_read_only: only read-only statements (SELECT) may run, and this one would change the database: {sql}"
    )]
    NotReadOnly {
        /// The statement.
        sql: String,
    },
    /// The query ran past the time bound and was interrupted.
    #[error("timeout: the query ran longer than {ms} ms and was interrupted")]
    Timeout {
        /// The bound, in milliseconds.
        ms: u128,
    },
    /// One value is longer than SQLite's length limit, which is set to `max_result_bytes`:
    /// SQLite refused to make or load it (`SQLITE_TOOBIG`), so it never reached memory.
    #[error(
        "too_large: a string or blob in the query is longer than {limit} bytes (max_result_bytes), the longest value SQLite may make or read here; select its length() instead"
    )]
    ValueTooLarge {
        /// The bound, in bytes.
        limit: u64,
    },
    /// The result, as JSON text, grew past the byte budget.
    #[error(
        "too_large: the result is longer than {limit} bytes (max_result_bytes) at row {row}; select fewer rows or columns, or shorter values (substr, length)"
    )]
    ResultTooLarge {
        /// The bound, in bytes.
        limit: u64,
        /// The row (from 1) whose values passed the bound.
        row: usize,
    },
    /// The host cancelled the call.
    #[error("cancelled")]
    Cancelled,
    /// A parameter that is not a string, number, boolean or null.
    #[error(
        "bad_param: parameter {index} is {value}; only strings, numbers, booleans and null can be bound"
    )]
    BadParam {
        /// Its position, from 1.
        index: usize,
        /// The value given.
        value: String,
    },
    /// SQLite refused the statement or failed running it.
    #[error("sql_error: {0}")]
    Sql(rusqlite::Error),
}

impl From<GrantError> for SqliteError {
    fn from(error: GrantError) -> SqliteError {
        SqliteError::NotGranted(error)
    }
}

impl From<rusqlite::Error> for SqliteError {
    fn from(error: rusqlite::Error) -> SqliteError {
        SqliteError::Sql(error)
    }
}

impl From<SqliteError> for ToolError {
    fn from(error: SqliteError) -> ToolError {
        match error {
            SqliteError::Cancelled => ToolError::cancelled(),
            other => ToolError::new(other.to_string()),
        }
    }
}

/// The plugin's state: the grants and the bounds. Each query opens its own connection.
pub(crate) struct Databases {
    pub(crate) grants: Grants,
    pub(crate) max_rows: u64,
    pub(crate) timeout: Duration,
    /// The byte budget of a result's JSON text, and SQLite's length limit for one value.
    pub(crate) max_result_bytes: u64,
}

impl Databases {
    /// The canonical path of the database `path` names. An absolute path is itself; a
    /// relative one is looked up under each granted folder in turn (`grants.fs_read`, in the
    /// policy's order) and the first that holds it is used: never the working directory,
    /// which is wherever the host was started (an MCP host may start it in `/`).
    fn resolve(&self, path: &Path) -> Result<PathBuf, SqliteError> {
        if path.is_absolute() {
            return std::fs::canonicalize(path).map_err(|error| SqliteError::NotFound {
                path: path.to_path_buf(),
                error,
            });
        }
        let mut folders = self.grants.fs_read.iter().filter(|root| root.is_dir());
        match folders.find_map(|root| std::fs::canonicalize(root.join(path)).ok()) {
            Some(found) => Ok(found),
            None => Err(SqliteError::NotFound {
                path: path.to_path_buf(),
                error: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!(
                        "a relative path is looked up in the granted folders, and none holds it (granted for reading: {})",
                        granted_list(&self.grants)
                    ),
                ),
            }),
        }
    }

    /// Runs `sql` on the granted database at `path`, read-only, within the row, time and byte
    /// bounds, and returns the result as JSON text. `cancelled` is polled between rows.
    pub(crate) fn query(
        &self,
        path: &Path,
        sql: &str,
        params: &[Value],
        max_rows: Option<u64>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<String, SqliteError> {
        let params = params
            .iter()
            .enumerate()
            .map(|(i, value)| bind_value(i + 1, value))
            .collect::<Result<Vec<_>, _>>()?;
        let canonical = self.resolve(path)?;
        self.grants.check_read(&canonical)?;
        let max_rows = max_rows.map_or(self.max_rows, |asked| asked.min(self.max_rows));

        // No SQLITE_OPEN_URI and an absolute path: the name is a file name, never a URI.
        let mut conn = Connection::open_with_flags(
            &canonical,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
        // No string or blob longer than the result may hold: SQLite refuses to make one
        // (`SQLITE_TOOBIG`) instead of allocating it, whatever the query computes.
        let length_limit = i32::try_from(self.max_result_bytes).unwrap_or(i32::MAX);
        conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, length_limit)?;
        let timed_out = Arc::new(AtomicBool::new(false));
        let deadline = Instant::now() + self.timeout;
        let flag = Arc::clone(&timed_out);
        conn.progress_handler(
            PROGRESS_STEPS,
            Some(move || {
                let late = Instant::now() >= deadline;
                if late {
                    flag.store(true, Ordering::Relaxed);
                }
                late
            }),
        )?;
        let interrupted = |error: rusqlite::Error| match error.sqlite_error_code() {
            Some(ErrorCode::OperationInterrupted) if timed_out.load(Ordering::Relaxed) => {
                SqliteError::Timeout {
                    ms: self.timeout.as_millis(),
                }
            }
            Some(ErrorCode::TooBig) => SqliteError::ValueTooLarge {
                limit: self.max_result_bytes,
            },
            _ => SqliteError::Sql(error),
        };

        let mut statement = conn.prepare(sql).map_err(interrupted)?;
        if !statement.readonly() {
            return Err(SqliteError::NotReadOnly {
                sql: sql.to_string(),
            });
        }
        let columns: Vec<String> = statement.column_names().map(str::to_owned).collect();
        let mut rows = statement
            .query(rusqlite::params_from_iter(params))
            .map_err(interrupted)?;
        let mut out = ResultText::new(&columns, self.max_result_bytes);
        let mut count: u64 = 0;
        let mut truncated = false;
        while let Some(row) = rows.next().map_err(interrupted)? {
            if cancelled() {
                return Err(SqliteError::Cancelled);
            }
            if count >= max_rows {
                truncated = true;
                break;
            }
            count += 1;
            out.start_row();
            for i in 0..columns.len() {
                let value = row.get_ref(i).map_err(interrupted)?;
                out.push_value(&json_value(value))?;
            }
            out.end_row();
        }
        Ok(out.finish(truncated))
    }
}

/// The result's JSON text, `{"columns":[...],"rows":[[...],...],"truncated":bool}`, written as
/// the rows come and held to a byte budget: no more than one value past it is ever held.
struct ResultText {
    text: String,
    limit: u64,
    rows: usize,
    values_in_row: usize,
}

impl ResultText {
    fn new(columns: &[String], limit: u64) -> ResultText {
        let columns = serde_json::to_string(columns).unwrap_or_else(|_| "[]".to_string());
        ResultText {
            text: format!("{{\"columns\":{columns},\"rows\":["),
            limit,
            rows: 0,
            values_in_row: 0,
        }
    }

    fn start_row(&mut self) {
        if self.rows > 0 {
            self.text.push(',');
        }
        self.rows += 1;
        self.values_in_row = 0;
        self.text.push('[');
    }

    /// Appends one value of the current row, or fails once the text would pass the budget.
    fn push_value(&mut self, value: &Value) -> Result<(), SqliteError> {
        let json = value.to_string();
        let comma = usize::from(self.values_in_row > 0);
        // The closing `]]` of the row and rows, and the `truncated` key, count too.
        let tail = r#"]],"truncated":false}"#.len();
        let total = self.text.len() + comma + json.len() + tail;
        if total as u64 > self.limit {
            return Err(SqliteError::ResultTooLarge {
                limit: self.limit,
                row: self.rows,
            });
        }
        if comma == 1 {
            self.text.push(',');
        }
        self.text.push_str(&json);
        self.values_in_row += 1;
        Ok(())
    }

    fn end_row(&mut self) {
        self.text.push(']');
    }

    fn finish(mut self, truncated: bool) -> String {
        self.text
            .push_str(&format!("],\"truncated\":{truncated}}}"));
        self.text
    }
}

/// A JSON argument as an SQLite value.
fn bind_value(index: usize, value: &Value) -> Result<ToSqlOutput<'static>, SqliteError> {
    let value = match value {
        Value::Null => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::String(s) => SqlValue::Text(s.clone()),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => SqlValue::Integer(i),
            (None, Some(f)) => SqlValue::Real(f),
            (None, None) => {
                return Err(SqliteError::BadParam {
                    index,
                    value: n.to_string(),
                });
            }
        },
        other => {
            return Err(SqliteError::BadParam {
                index,
                value: serde_json::to_string(other).unwrap_or_else(|_| "not JSON".to_string()),
            });
        }
    };
    Ok(ToSqlOutput::Owned(value))
}

/// An SQLite value as JSON.
fn json_value(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) if f.is_finite() => Value::from(f),
        ValueRef::Real(f) if f > 0.0 => Value::from("inf"),
        ValueRef::Real(_) => Value::from("-inf"),
        ValueRef::Text(bytes) => Value::from(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Blob(bytes) => json!({"blob_base64": encode_base64(bytes)}),
    }
}

/// The `fs_read` entries, comma-separated, or `nothing`.
fn granted_list(grants: &Grants) -> String {
    if grants.fs_read.is_empty() {
        return "nothing".to_owned();
    }
    grants
        .fs_read
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error's messages and its sources' messages, walked without skipping anything.
    fn chain(error: &(dyn std::error::Error + 'static)) -> String {
        let mut out = error.to_string();
        let mut next = error.source();
        while let Some(e) = next {
            out.push_str(": ");
            out.push_str(&e.to_string());
            next = e.source();
        }
        out
    }

    #[test]
    fn an_error_for_the_model_says_its_cause_once_and_returns_no_source() {
        let grant = || GrantError::PathNotGranted {
            path: "/x.db".into(),
            granted: "nothing".into(),
        };
        let errors = [
            (
                SqliteError::NotFound {
                    path: "/x.db".into(),
                    error: std::io::Error::other("disk on fire"),
                },
                "disk on fire".to_string(),
            ),
            (SqliteError::from(grant()), grant().to_string()),
            (
                SqliteError::from(rusqlite::Error::InvalidQuery),
                rusqlite::Error::InvalidQuery.to_string(),
            ),
        ];
        for (error, cause) in errors {
            assert!(std::error::Error::source(&error).is_none(), "{error:?}");
            assert_eq!(chain(&error).matches(&cause).count(), 1, "{error}");
        }
    }
}
