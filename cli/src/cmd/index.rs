//! `toolgate index build`: write the memory-mappable search index file.

use std::path::Path;
use std::time::{Duration, Instant};

use toolgate_search::SearchIndex;
use toolgate_search_semantic::SemanticIndex;

use crate::app::load_engine;
use crate::args::{IndexArgs, IndexBuildArgs, IndexCommand};
use crate::catalog::{policy_catalog, with_embeddings_counted, write_from_catalogs};
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;

pub fn index(args: IndexArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    match args.command {
        IndexCommand::Build(a) => index_build(a, out),
    }
}

fn index_build(args: IndexBuildArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let started = Instant::now();
    if !args.catalog.is_empty() {
        let Some(output) = args.output else {
            return Err(CliError::Missing("the index file to write with -o INDEX"));
        };
        // Only written: the index is not put together in memory (and a catalog has no
        // semantic stage to write vectors for).
        let (written, took) = write_from_catalogs(&args.catalog, &output)?;
        return wrote(out, &output, written.tools, written.bytes, took, started);
    }
    let (engine, name) = load_engine(args.policy.as_deref())?;
    let (docs, index_file) = policy_catalog(&engine, &name)?;
    let Some(output) = args.output.or(index_file) else {
        return Err(CliError::NoIndexFile { policy: name });
    };
    let building = Instant::now();
    let index = SearchIndex::build(docs).map_err(|e| CliError::IndexPolicyCatalog {
        policy: name.clone(),
        source: e.into(),
    })?;
    // With `search.embeddings`, the tool vectors are computed now and written beside: those of
    // the tools whose text did not change are taken from the vectors written last time.
    let (index, counts) = with_embeddings_counted(index, &engine, &name, Some(&output))?;
    let build_time = building.elapsed();
    index.write(&output).map_err(CliError::WriteIndex)?;
    if let Some(semantic) = index.semantic() {
        let vectors = toolgate::search::vectors_path(&output);
        semantic
            .vectors()
            .write(&vectors)
            .map_err(CliError::WriteVectors)?;
        let counts = counts.unwrap_or_default();
        writeln!(
            out,
            "wrote {}: {} tool vectors of {} dimensions ({} embedded, {} reused from the previous vectors)",
            vectors.display(),
            semantic.vectors().len(),
            semantic.vectors().dims(),
            counts.embedded,
            counts.reused
        )?;
    }
    let size = std::fs::metadata(&output)
        .map(|m| m.len())
        .unwrap_or(index.size_bytes() as u64);
    wrote(out, &output, index.len(), size, build_time, started)
}

/// Prints what was written: the index file, its tools and size, how long indexing took
/// (`took`) and the whole command (since `started`).
fn wrote(
    out: &mut Out<'_>,
    output: &Path,
    tools: usize,
    size: u64,
    took: Duration,
    started: Instant,
) -> Result<u8, CliError> {
    writeln!(
        out,
        "wrote {}: {} tools, {} ({size} bytes), indexed in {} ms ({} ms in all)",
        output.display(),
        tools,
        human_size(size),
        took.as_millis(),
        started.elapsed().as_millis(),
    )?;
    Ok(EXIT_OK)
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_shown_in_binary_units() {
        assert_eq!(human_size(10), "10 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MiB");
    }
}
