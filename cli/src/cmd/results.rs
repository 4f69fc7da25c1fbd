//! `toolgate results`: the operator's side of the result store (listing, reading, deleting and
//! pruning offloaded results). The model's side is `read_tool_result`, scoped to its session;
//! these commands are not scoped: whoever can run them with the policy owns the store.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use toolgate::store::{
    ListFilter, Listing, ResultId, ResultMeta, ResultStore, Scope, SessionId, StoreError,
    Unreadable,
};

use crate::app::load_engine;
use crate::args::{
    ResultsArgs, ResultsCommand, ResultsDeleteArgs, ResultsListArgs, ResultsPruneArgs,
    ResultsReadArgs, ResultsShowArgs, ScopeArgs,
};
use crate::error::{CliError, EXIT_OK};
use crate::output::{Out, stderr_line};

/// `results read` asks the store for at most this many characters at a time.
const READ_CHUNK_CHARS: u64 = 1 << 20;

pub async fn results(args: ResultsArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let (engine, name) = load_engine(args.policy.as_deref())?;
    let Some(store) = engine.result_store().cloned() else {
        return Err(CliError::NoSection {
            policy: name,
            section: "reduction",
            what: "result store",
        });
    };
    match args.command {
        ResultsCommand::List(a) => list(&store, a, out).await,
        ResultsCommand::Show(a) => show(&store, a, out).await,
        ResultsCommand::Read(a) => read(&store, a, out).await,
        ResultsCommand::Delete(a) => {
            let session = a.session.clone();
            delete(&store, a, out).await?;
            // A session's found tools go with its results.
            if let Some(session) = session
                && crate::stored_session::forget(&engine, &session).await?
            {
                writeln!(out, "deleted the session's state (the tools it found)")?;
            }
            Ok(())
        }
        ResultsCommand::Prune(a) => {
            // Expired session state goes too (it is invisible already; this frees its space).
            let sessions = match a.dry_run {
                true => None,
                false => Some(crate::stored_session::prune_expired(&engine).await?),
            };
            prune(&store, a, sessions, out).await
        }
    }?;
    Ok(EXIT_OK)
}

type Store = Arc<dyn ResultStore>;

/// The warnings for the results a listing skipped, on standard error after the output.
fn warn_skipped(out: &mut Out<'_>, unreadable: &[Unreadable]) -> Result<(), CliError> {
    if unreadable.is_empty() {
        return Ok(());
    }
    out.flush()?;
    for u in unreadable {
        stderr_line(&format!(
            "warning: skipped result {}: {}; `toolgate results delete {}` removes it",
            u.id,
            printable(&toolgate::error::Chain(&u.error).to_string()),
            u.id
        ));
    }
    Ok(())
}

/// `text` for a terminal: control characters (and the invisible characters that reorder text)
/// are shown escaped, `\n`, `\t`, `\r` or `\u{1b}`, and a backslash is doubled, so that what
/// is printed cannot move the cursor, change colours, break a table's lines or pass for other
/// text. Session ids and tool names may hold any character; JSON output escapes them itself.
fn printable(text: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(|c| hidden(c) || c == '\\') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A result id argument; anything that is not one is an input error (exit 4), never a path.
fn result_id(arg: &OsString) -> Result<ResultId, CliError> {
    let Some(text) = arg.to_str() else {
        return Err(CliError::ResultIdNotUtf8(
            arg.to_string_lossy().into_owned(),
        ));
    };
    ResultId::parse(text).map_err(CliError::ResultId)
}

fn session_id(text: &str) -> Result<SessionId, CliError> {
    SessionId::parse(text).map_err(CliError::SessionId)
}

fn scope(args: &ScopeArgs) -> Result<Scope, CliError> {
    Ok(match (&args.session, args.unscoped) {
        (Some(s), _) => Scope::Session(session_id(s)?),
        (None, true) => Scope::Unscoped,
        (None, false) => Scope::All,
    })
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The cutoff for "older than `age`": saved strictly before now - age.
fn cutoff(age: Duration) -> u64 {
    now_ms().saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX))
}

// ---------------------------------------------------------------------------------------------
// list, show

async fn list(store: &Store, args: ResultsListArgs, out: &mut Out<'_>) -> Result<(), CliError> {
    let mut filter = ListFilter::scope(scope(&args.scope)?);
    if let Some(age) = args.older_than {
        filter = filter.created_before(cutoff(age.0));
    }
    let Listing {
        results: metas,
        unreadable,
    } = store.listing(&filter).await.map_err(CliError::Store)?;
    tracing::info!(results = metas.len(), skipped = unreadable.len(), "listed");
    if args.json {
        out.json(&Value::Array(metas.iter().map(meta_json).collect()), false)?;
        return warn_skipped(out, &unreadable);
    }
    let now = now_ms();
    let rows: Vec<[String; 5]> = metas
        .iter()
        .map(|m| {
            [
                m.id.to_string(),
                m.session
                    .as_ref()
                    .map_or("-".into(), |s| printable(s.as_str())),
                m.tool.as_deref().map_or("-".into(), printable),
                m.chars.to_string(),
                format!("{} ({})", utc(m.created_at_ms), age(now, m.created_at_ms)),
            ]
        })
        .collect();
    table(out, ["ID", "SESSION", "TOOL", "CHARS", "SAVED"], &rows)?;
    warn_skipped(out, &unreadable)
}

async fn show(store: &Store, args: ResultsShowArgs, out: &mut Out<'_>) -> Result<(), CliError> {
    let id = result_id(&args.id)?;
    let m = store.meta(&id).await.map_err(CliError::Store)?;
    if args.json {
        return out.json(&meta_json(&m), true);
    }
    writeln!(out, "id:           {}", m.id)?;
    writeln!(
        out,
        "session:      {}",
        m.session
            .as_ref()
            .map_or("none (saved outside any session)".into(), |s| printable(
                s.as_str()
            ))
    )?;
    writeln!(
        out,
        "tool:         {}",
        m.tool.as_deref().map_or("unknown".into(), printable)
    )?;
    writeln!(out, "content type: {}", printable(&m.content_type))?;
    writeln!(
        out,
        "size:         {} characters, {} bytes",
        m.chars, m.bytes
    )?;
    writeln!(
        out,
        "saved:        {} ({})",
        utc(m.created_at_ms),
        age(now_ms(), m.created_at_ms)
    )
}

fn meta_json(m: &ResultMeta) -> Value {
    json!({
        "id": m.id.to_string(),
        "session": m.session.as_ref().map(ToString::to_string),
        "tool": m.tool,
        "content_type": m.content_type,
        "bytes": m.bytes,
        "chars": m.chars,
        "created_at_ms": m.created_at_ms,
    })
}

// ---------------------------------------------------------------------------------------------
// read

/// Prints the pages as they come from the store: a store that fails half-way leaves the part
/// already printed, and exits 6.
async fn read(store: &Store, args: ResultsReadArgs, out: &mut Out<'_>) -> Result<(), CliError> {
    let id = result_id(&args.id)?;
    let total = store.meta(&id).await.map_err(CliError::Store)?.chars;
    if args.offset > total {
        return Err(CliError::Store(StoreError::OffsetOutOfRange {
            id,
            offset: args.offset,
            total,
        }));
    }
    let end = match args.limit {
        Some(limit) => args.offset.saturating_add(limit).min(total),
        None => total,
    };
    let mut at = args.offset;
    while at < end {
        let page = store
            .read_chars(&id, at, (end - at).min(READ_CHUNK_CHARS))
            .await
            .map_err(CliError::Store)?;
        if page.end <= at {
            return Err(CliError::EmptyPage { id, at, total });
        }
        out.text(&page.text)?;
        at = page.end;
    }
    tracing::info!(id = %id, from = args.offset, to = end, of = total, "read");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// delete, prune

async fn delete(store: &Store, args: ResultsDeleteArgs, out: &mut Out<'_>) -> Result<(), CliError> {
    if let Some(session) = &args.session {
        let session = session_id(session)?;
        let listing = store
            .listing(&ListFilter::scope(Scope::Session(session.clone())))
            .await
            .map_err(CliError::Store)?;
        let n = store
            .delete_session(&session)
            .await
            .map_err(CliError::Store)?;
        for m in &listing.results {
            writeln!(out, "deleted {}", m.id)?;
        }
        for u in &listing.unreadable {
            writeln!(out, "deleted {} (its record could not be read)", u.id)?;
        }
        return writeln!(
            out,
            "deleted {n} result(s) of session {}",
            printable(session.as_str())
        );
    }
    let Some(arg) = &args.id else {
        return Err(CliError::Missing("a result id or --session"));
    };
    let id = result_id(arg)?;
    let found = match store.meta(&id).await {
        Ok(_) => Some(None),
        Err(StoreError::NotFound { .. }) => None,
        // Nothing of it can be read; deleting it is the way out.
        Err(e @ StoreError::Corrupt { .. }) => Some(Some(e)),
        Err(e) => return Err(CliError::Store(e)),
    };
    store.delete(&id).await.map_err(CliError::Store)?;
    match found {
        Some(None) => writeln!(out, "deleted {id}"),
        Some(Some(e)) => writeln!(
            out,
            "deleted {id} (its record could not be read: {})",
            printable(&toolgate::error::Chain(&e).to_string())
        ),
        None => writeln!(out, "{id} was not in the store; nothing to delete"),
    }
}

/// `sessions`: how many expired session states were deleted (none on a dry run).
async fn prune(
    store: &Store,
    args: ResultsPruneArgs,
    sessions: Option<u64>,
    out: &mut Out<'_>,
) -> Result<(), CliError> {
    let before = cutoff(args.older_than.0);
    let scope = scope(&args.scope)?;
    let listing = store
        .listing(&ListFilter::scope(scope.clone()).created_before(before))
        .await
        .map_err(CliError::Store)?;
    let removed: Vec<String> = listing.results.iter().map(|m| m.id.to_string()).collect();
    let (results, garbage, unreadable) = if args.dry_run {
        (removed.len() as u64, None, None)
    } else {
        let report = store.prune(before, &scope).await.map_err(CliError::Store)?;
        (
            report.results,
            Some(report.garbage),
            Some(report.unreadable),
        )
    };
    // What a dry run cannot tell: whether an unreadable record is older than the cutoff.
    let skipped: &[Unreadable] = if args.dry_run {
        &listing.unreadable
    } else {
        &[]
    };
    if args.json {
        out.json(
            &json!({
                "dry_run": args.dry_run,
                "removed": removed,
                "results": results,
                "garbage": garbage,
                "unreadable": unreadable,
                "expired_sessions": sessions,
            }),
            false,
        )?;
        return warn_skipped(out, skipped);
    }
    let verb = if args.dry_run {
        "would delete"
    } else {
        "deleted"
    };
    for id in &removed {
        writeln!(out, "{verb} {id}")?;
    }
    match (garbage, unreadable) {
        (Some(g), Some(u)) => writeln!(
            out,
            "pruned {results} result(s) saved before {}, {u} unreadable result(s) and {g} leftover(s) of interrupted saves; {} expired session state(s)",
            utc(before),
            sessions.unwrap_or(0)
        )?,
        _ => writeln!(
            out,
            "would prune {results} result(s) saved before {} (dry run: nothing deleted)",
            utc(before)
        )?,
    }
    warn_skipped(out, skipped)
}

// ---------------------------------------------------------------------------------------------
// formatting

/// Left-aligned columns separated by two spaces; nothing at all for no rows.
fn table<const N: usize>(
    out: &mut Out<'_>,
    header: [&str; N],
    rows: &[[String; N]],
) -> Result<(), CliError> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (i, cell) in cells.enumerate() {
            if i + 1 == N {
                l.push_str(cell);
            } else {
                let _ = write!(l, "{cell:<w$}  ", w = widths[i]);
            }
        }
        writeln!(out, "{}", l.trim_end())
    };
    line(&mut header.iter().copied())?;
    for row in rows {
        line(&mut row.iter().map(String::as_str))?;
    }
    Ok(())
}

/// `2025-03-01T09:30:00Z`, from milliseconds since the Unix epoch.
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm, for days since 1970-01-01 (no time zone, no
/// dependency).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// `5m ago`, `3d 4h ago`, `just now`.
fn age(now_ms: u64, then_ms: u64) -> String {
    let secs = now_ms.saturating_sub(then_ms) / 1000;
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3600, secs % 3600 / 60);
    match (d, h, m) {
        (0, 0, 0) if secs == 0 => "just now".into(),
        (0, 0, 0) => format!("{secs}s ago"),
        (0, 0, m) => format!("{m}m ago"),
        (0, h, m) => format!("{h}h {m}m ago"),
        (d, h, _) => format!("{d}d {h}h ago"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::EXIT_INPUT;

    #[test]
    fn times_are_shown_in_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_735_689_599_999), "2024-12-31T23:59:59Z");
    }

    #[test]
    fn ages_are_short() {
        assert_eq!(age(10_000, 10_000), "just now");
        assert_eq!(age(42_000, 0), "42s ago");
        assert_eq!(age(3_600_000 + 120_000, 0), "1h 2m ago");
        assert_eq!(age(3 * 86_400_000 + 4 * 3_600_000, 0), "3d 4h ago");
        assert_eq!(
            age(0, 5_000),
            "just now",
            "a clock that went back is not negative"
        );
    }

    #[test]
    fn a_path_is_not_a_result_id() {
        for bad in ["../x", "", "  ", " a", "a/b", "a\\b"] {
            let err = result_id(&OsString::from(bad)).unwrap_err();
            assert_eq!(err.code(), EXIT_INPUT, "{bad:?}: {err}");
        }
        assert!(result_id(&OsString::from("h_0123abcd")).is_ok());
    }

    #[test]
    fn a_table_aligns_its_columns() {
        let shown = |rows: &[[String; 2]]| {
            let mut bytes = Vec::new();
            let mut out = Out::new(&mut bytes);
            table(&mut out, ["ID", "N"], rows).unwrap();
            out.flush().unwrap();
            drop(out);
            String::from_utf8(bytes).unwrap()
        };
        let rows = [["a".into(), "1".into()], ["long-id".into(), "22".into()]];
        assert_eq!(shown(&rows), "ID       N\na        1\nlong-id  22\n");
        assert_eq!(shown(&[]), "");
    }
}
