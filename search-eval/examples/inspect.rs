//! Prints the queries of a data set's tune half that rank their relevant
//! tool below first place, with what ranked above it.
//! `cargo run --release --example inspect -- bfcl 40`.

use toolgate_search::SearchIndex;
use toolgate_search_eval::{self as eval, Half, Ranker};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("bfcl", String::as_str);
    let limit: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(30);
    let data = eval::load_dataset(&eval::datasets_dir(), name)?;
    let index = SearchIndex::build(data.catalog.clone())?;
    let mut shown = 0;
    for q in data
        .queries
        .iter()
        .filter(|q| eval::half_of(&q.id) == Half::Tune)
        .step_by(7)
    {
        let ranked = index.rank(&q.query, 5);
        if ranked.first().is_some_and(|n| q.relevant.contains(n)) {
            continue;
        }
        println!("Q {}\n  want {:?}", q.query, q.relevant);
        for r in &q.relevant {
            if let Some(d) = index.get(r) {
                println!(
                    "  = {}: {}",
                    d.name,
                    d.description.chars().take(150).collect::<String>()
                );
            }
        }
        for n in &ranked {
            let d = index
                .get(n)
                .map(|d| d.description.chars().take(100).collect::<String>());
            println!("  - {n}: {}", d.unwrap_or_default());
        }
        shown += 1;
        if shown >= limit {
            break;
        }
    }
    Ok(())
}
