//! Builds an index file from a JSON Lines catalog as `toolgate index build --catalog` does
//! (read the catalog, index it, write the file without putting it together in memory), for
//! `scripts/bench-search.sh`, which needs only this crate built in release, not the CLI:
//! `cargo run --release --example bench_build -- CATALOG.jsonl INDEX` prints
//! `{"build_write_s", "tools", "bytes"}`.

use std::time::Instant;

use toolgate_search::{Catalog, SearchIndex};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let usage = "usage: bench_build CATALOG.jsonl INDEX";
    let catalog = std::path::PathBuf::from(args.next().ok_or(usage)?);
    let index = std::path::PathBuf::from(args.next().ok_or(usage)?);
    let start = Instant::now();
    let written = SearchIndex::write_catalog(Catalog::read_jsonl(&catalog)?, &index)?;
    println!(
        "{}",
        serde_json::json!({
            "build_write_s": start.elapsed().as_secs_f64(),
            "tools": written.tools,
            "bytes": written.bytes,
        })
    );
    Ok(())
}
