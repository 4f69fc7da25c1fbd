//! Writes the speed bench's 100,000-tool catalog and its queries as JSON Lines, for
//! `scripts/bench-search.sh` (toolgate, bm25s and tantivy on the same data):
//! `cargo run --release --example bench_corpus -- OUT_DIR [TOOLS]` writes `OUT_DIR/catalog.jsonl`
//! and `OUT_DIR/queries.jsonl` (`{"id", "query"}` per line).

#[path = "../benches/common/corpus.rs"]
mod corpus;

use std::io::{BufWriter, Write};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let out = PathBuf::from(args.next().ok_or("usage: bench_corpus OUT_DIR [TOOLS]")?);
    let tools: usize = match args.next() {
        Some(n) => n.to_str().ok_or("TOOLS is not a number")?.parse()?,
        None => 100_000,
    };
    std::fs::create_dir_all(&out)?;
    let (base, queries) = corpus::real();
    let docs = corpus::repeated(&base, tools);
    let mut w = BufWriter::new(std::fs::File::create(out.join("catalog.jsonl"))?);
    for d in &docs {
        serde_json::to_writer(
            &mut w,
            &serde_json::json!({
                "name": d.name,
                "description": d.description,
                "parameters": d.parameters,
            }),
        )?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    let mut w = BufWriter::new(std::fs::File::create(out.join("queries.jsonl"))?);
    for (i, q) in queries.iter().enumerate() {
        serde_json::to_writer(
            &mut w,
            &serde_json::json!({"id": format!("q{i}"), "query": q}),
        )?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    eprintln!(
        "{} tools, {} queries in {}",
        docs.len(),
        queries.len(),
        out.display()
    );
    Ok(())
}
