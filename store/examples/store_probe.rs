//! A second process for the multi-process tests of toolgate-store, and a small example of the API.
//!
//! ```text
//! store_probe write <store-url> <id> <session|-> <megabytes>   # save a result of that size
//! store_probe read  <store-url> <id> <session|->               # page through it, print a summary
//! ```
//!
//! `write` prints `saving` before it starts and `saved` when the result is committed. `read` prints
//! `bytes=B chars=C fnv=H` (FNV-1a 64 of the content) or `error=<kind>`. For `s3://` URLs the options
//! come from the `TOOLGATE_TEST_S3_*` variables printed by `scripts/s3-server.sh`.

use std::collections::BTreeMap;
use std::io::Write;

use toolgate_store::{
    ForeignResult, NewResult, ObjectResultStore, ResultId, SessionId, read_scoped,
};

/// The text `write` saves: this pattern, repeated.
const PATTERN: &str = "probe Grüße 中文 😀\n";

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn options(url: &str) -> BTreeMap<String, String> {
    if !url.starts_with("s3://") {
        return BTreeMap::new();
    }
    [
        ("endpoint", "TOOLGATE_TEST_S3_ENDPOINT"),
        ("access_key_id", "TOOLGATE_TEST_S3_ACCESS_KEY_ID"),
        ("secret_access_key", "TOOLGATE_TEST_S3_SECRET_ACCESS_KEY"),
        ("region", "TOOLGATE_TEST_S3_REGION"),
    ]
    .into_iter()
    .filter_map(|(key, var)| Some((key.to_owned(), std::env::var(var).ok()?)))
    .chain([("allow_http".to_owned(), "true".to_owned())])
    .collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: store_probe write <url> <id> <session|-> <megabytes> | read <url> <id> <session|->";
    let (command, url, id, session) = match args.as_slice() {
        [c, u, i, s, ..] => (c.as_str(), u.as_str(), ResultId::parse(i)?, s.as_str()),
        _ => return Err(usage.into()),
    };
    let session = if session == "-" {
        None
    } else {
        Some(SessionId::parse(session)?)
    };
    let store = ObjectResultStore::from_url_opts(url, options(url))?;
    let mut out = std::io::stdout();
    match (command, args.get(4)) {
        ("write", Some(mb)) => {
            let mb: usize = mb.parse()?;
            let text = PATTERN.repeat(mb * (1 << 20) / PATTERN.len());
            writeln!(out, "saving")?;
            out.flush()?;
            use toolgate_store::ResultStore;
            store
                .save(NewResult::new(session).with_id(id), &text)
                .await?;
            writeln!(out, "saved")?;
        }
        ("read", None) => {
            let mut content = String::new();
            let mut offset = 0;
            loop {
                match read_scoped(
                    &store,
                    session.as_ref(),
                    &id,
                    offset,
                    20_000,
                    ForeignResult::Deny,
                )
                .await
                {
                    Ok(page) => {
                        content.push_str(&page.text);
                        match page.next_offset() {
                            Some(next) => offset = next,
                            None => break,
                        }
                    }
                    Err(e) => {
                        writeln!(out, "error={}", e.kind())?;
                        return Ok(());
                    }
                }
            }
            let chars = content.chars().count();
            writeln!(
                out,
                "bytes={} chars={chars} fnv={:016x}",
                content.len(),
                fnv1a(content.as_bytes())
            )?;
        }
        _ => return Err(usage.into()),
    }
    Ok(())
}
