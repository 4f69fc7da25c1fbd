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

use crate::commands::{load_engine, ok, to_json_line};
use crate::error::CliError;
use crate::{
    Output, ResultsArgs, ResultsCommand, ResultsDeleteArgs, ResultsListArgs, ResultsPruneArgs,
    ResultsReadArgs, ResultsShowArgs, ScopeArgs,
};

/// `results read` asks the store for at most this many characters at a time.
const READ_CHUNK_CHARS: u64 = 1 << 20;

pub async fn run(args: ResultsArgs) -> Result<Output, CliError> {
    let (engine, name) = load_engine(args.policy.as_deref())?;
    let Some(store) = engine.result_store().cloned() else {
        return Err(CliError::Policy(format!(
            "{name}: the policy has no reduction: section, so it has no result store"
        )));
    };
    match args.command {
        ResultsCommand::List(a) => list(&store, a).await,
        ResultsCommand::Show(a) => show(&store, a).await,
        ResultsCommand::Read(a) => read(&store, a).await,
        ResultsCommand::Delete(a) => {
            let session = a.session.clone();
            let mut output = delete(&store, a).await?;
            // A session's found tools go with its results.
            if let Some(session) = session
                && crate::stored_session::forget(
                    &engine,
                    &session,
                    crate::commands::default_store_url,
                )
                .await?
            {
                output
                    .stdout
                    .push_str("deleted the session's state (the tools it found)\n");
            }
            Ok(output)
        }
        ResultsCommand::Prune(a) => prune(&store, a).await,
    }
}

type Store = Arc<dyn ResultStore>;

/// How a store error ends the command: what the operator typed is wrong (exit 4), or the store
/// itself failed (exit 6).
fn store_error(e: StoreError) -> CliError {
    match e {
        StoreError::NotFound { .. }
        | StoreError::OffsetOutOfRange { .. }
        | StoreError::InvalidId(_)
        | StoreError::InvalidSession(_) => CliError::Input(e.to_string()),
        StoreError::Config(_) => CliError::Policy(e.to_string()),
        StoreError::Corrupt {
            id: Some(ref id), ..
        } => CliError::Store(format!("{e}; `toolgate results delete {id}` removes it")),
        _ => CliError::Store(e.to_string()),
    }
}

/// The warnings for the results a listing skipped, one line each, for stderr.
fn skipped_warnings(unreadable: &[Unreadable]) -> String {
    let mut s = String::new();
    for u in unreadable {
        let _ = writeln!(
            s,
            "warning: skipped result {}: {}; `toolgate results delete {}` removes it",
            u.id,
            printable(&u.error.to_string()),
            u.id
        );
    }
    s
}

/// Standard output, with warnings on standard error; the command succeeds.
fn ok_with_warnings(stdout: String, warnings: String) -> Result<Output, CliError> {
    let mut out = ok(stdout)?;
    out.stderr = warnings;
    Ok(out)
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
        return Err(CliError::Input(format!(
            "the result id {:?} is not valid UTF-8",
            arg.to_string_lossy()
        )));
    };
    ResultId::parse(text).map_err(|e| CliError::Input(format!("not a result id: {e}")))
}

fn session_id(text: &str) -> Result<SessionId, CliError> {
    SessionId::parse(text).map_err(|e| CliError::Usage(format!("--session: {e}")))
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

async fn list(store: &Store, args: ResultsListArgs) -> Result<Output, CliError> {
    let mut filter = ListFilter::scope(scope(&args.scope)?);
    if let Some(age) = args.older_than {
        filter = filter.created_before(cutoff(age.0));
    }
    let Listing {
        results: metas,
        unreadable,
    } = store.listing(&filter).await.map_err(store_error)?;
    tracing::info!(results = metas.len(), skipped = unreadable.len(), "listed");
    let warnings = skipped_warnings(&unreadable);
    if args.json {
        return ok_with_warnings(
            to_json_line(&Value::Array(metas.iter().map(meta_json).collect()), false),
            warnings,
        );
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
    ok_with_warnings(
        table(["ID", "SESSION", "TOOL", "CHARS", "SAVED"], &rows),
        warnings,
    )
}

async fn show(store: &Store, args: ResultsShowArgs) -> Result<Output, CliError> {
    let id = result_id(&args.id)?;
    let m = store.meta(&id).await.map_err(store_error)?;
    if args.json {
        return ok(to_json_line(&meta_json(&m), true));
    }
    let mut s = String::new();
    let _ = writeln!(s, "id:           {}", m.id);
    let _ = writeln!(
        s,
        "session:      {}",
        m.session
            .as_ref()
            .map_or("none (saved outside any session)".into(), |s| printable(
                s.as_str()
            ))
    );
    let _ = writeln!(
        s,
        "tool:         {}",
        m.tool.as_deref().map_or("unknown".into(), printable)
    );
    let _ = writeln!(s, "content type: {}", printable(&m.content_type));
    let _ = writeln!(s, "size:         {} characters, {} bytes", m.chars, m.bytes);
    let _ = writeln!(
        s,
        "saved:        {} ({})",
        utc(m.created_at_ms),
        age(now_ms(), m.created_at_ms)
    );
    ok(s)
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

async fn read(store: &Store, args: ResultsReadArgs) -> Result<Output, CliError> {
    let id = result_id(&args.id)?;
    let total = store.meta(&id).await.map_err(store_error)?.chars;
    if args.offset > total {
        return Err(store_error(StoreError::OffsetOutOfRange {
            id,
            offset: args.offset,
            total,
        }));
    }
    let end = match args.limit {
        Some(limit) => args.offset.saturating_add(limit).min(total),
        None => total,
    };
    let mut out = String::new();
    let mut at = args.offset;
    while at < end {
        let page = store
            .read_chars(&id, at, (end - at).min(READ_CHUNK_CHARS))
            .await
            .map_err(store_error)?;
        if page.end <= at {
            return Err(CliError::Store(format!(
                "the result store returned no characters at offset {at} of \"{id}\", which has {total}"
            )));
        }
        out.push_str(&page.text);
        at = page.end;
    }
    tracing::info!(id = %id, from = args.offset, to = end, of = total, "read");
    ok(out)
}

// ---------------------------------------------------------------------------------------------
// delete, prune

async fn delete(store: &Store, args: ResultsDeleteArgs) -> Result<Output, CliError> {
    if let Some(session) = &args.session {
        let session = session_id(session)?;
        let listing = store
            .listing(&ListFilter::scope(Scope::Session(session.clone())))
            .await
            .map_err(store_error)?;
        let n = store.delete_session(&session).await.map_err(store_error)?;
        let mut s = String::new();
        for m in &listing.results {
            let _ = writeln!(s, "deleted {}", m.id);
        }
        for u in &listing.unreadable {
            let _ = writeln!(s, "deleted {} (its record could not be read)", u.id);
        }
        let _ = writeln!(
            s,
            "deleted {n} result(s) of session {}",
            printable(session.as_str())
        );
        return ok(s);
    }
    let Some(arg) = &args.id else {
        return Err(CliError::Usage("give a result id or --session".into()));
    };
    let id = result_id(arg)?;
    let found = match store.meta(&id).await {
        Ok(_) => Some(None),
        Err(StoreError::NotFound { .. }) => None,
        // Nothing of it can be read; deleting it is the way out.
        Err(e @ StoreError::Corrupt { .. }) => Some(Some(e)),
        Err(e) => return Err(store_error(e)),
    };
    store.delete(&id).await.map_err(store_error)?;
    ok(match found {
        Some(None) => format!("deleted {id}\n"),
        Some(Some(e)) => format!(
            "deleted {id} (its record could not be read: {})\n",
            printable(&e.to_string())
        ),
        None => format!("{id} was not in the store; nothing to delete\n"),
    })
}

async fn prune(store: &Store, args: ResultsPruneArgs) -> Result<Output, CliError> {
    let before = cutoff(args.older_than.0);
    let scope = scope(&args.scope)?;
    let listing = store
        .listing(&ListFilter::scope(scope.clone()).created_before(before))
        .await
        .map_err(store_error)?;
    let removed: Vec<String> = listing.results.iter().map(|m| m.id.to_string()).collect();
    let (results, garbage, unreadable) = if args.dry_run {
        (removed.len() as u64, None, None)
    } else {
        let report = store.prune(before, &scope).await.map_err(store_error)?;
        (
            report.results,
            Some(report.garbage),
            Some(report.unreadable),
        )
    };
    // What a dry run cannot tell: whether an unreadable record is older than the cutoff.
    let warnings = if args.dry_run {
        skipped_warnings(&listing.unreadable)
    } else {
        String::new()
    };
    if args.json {
        return ok_with_warnings(
            to_json_line(
                &json!({
                    "dry_run": args.dry_run,
                    "removed": removed,
                    "results": results,
                    "garbage": garbage,
                    "unreadable": unreadable,
                }),
                false,
            ),
            warnings,
        );
    }
    let mut s = String::new();
    let verb = if args.dry_run {
        "would delete"
    } else {
        "deleted"
    };
    for id in &removed {
        let _ = writeln!(s, "{verb} {id}");
    }
    let _ = match (garbage, unreadable) {
        (Some(g), Some(u)) => writeln!(
            s,
            "pruned {results} result(s) saved before {}, {u} unreadable result(s) and {g} leftover(s) of interrupted saves",
            utc(before)
        ),
        _ => writeln!(
            s,
            "would prune {results} result(s) saved before {} (dry run: nothing deleted)",
            utc(before)
        ),
    };
    ok_with_warnings(s, warnings)
}

// ---------------------------------------------------------------------------------------------
// formatting

/// Left-aligned columns separated by two spaces; nothing at all for no rows.
fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut s = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut l = String::new();
        for (i, cell) in cells.enumerate() {
            if i + 1 == N {
                l.push_str(cell);
            } else {
                let _ = write!(l, "{cell:<w$}  ", w = widths[i]);
            }
        }
        s.push_str(l.trim_end());
        s.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    s
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
            assert!(matches!(err, CliError::Input(_)), "{bad:?}: {err}");
        }
        assert!(result_id(&OsString::from("h_0123abcd")).is_ok());
    }

    #[test]
    fn store_failures_and_operator_mistakes_exit_differently() {
        let id = ResultId::parse("abc").unwrap();
        assert!(matches!(
            store_error(StoreError::NotFound { id: id.clone() }),
            CliError::Input(_)
        ));
        assert!(matches!(
            store_error(StoreError::Corrupt {
                id: Some(id),
                what: "x".into()
            }),
            CliError::Store(_)
        ));
    }

    #[test]
    fn a_table_aligns_its_columns() {
        let t = table(
            ["ID", "N"],
            &[["a".into(), "1".into()], ["long-id".into(), "22".into()]],
        );
        assert_eq!(t, "ID       N\na        1\nlong-id  22\n");
        assert_eq!(table(["ID"], &[]), "");
    }
}
