//! Why each hit matched: which query word matched which term of which field, and how.

use std::collections::HashMap;

use crate::field::{FIELDS, Field};
use crate::fields::DocFields;
use crate::file::IndexFile;
use crate::hash::FxBuild;
use crate::hits::{Hit, Match, MatchKind};
use crate::lookup::{Expansion, Lookup};
use crate::terms::QueryTerm;
use crate::text;

/// Turns ranked tool numbers into hits, saying which fields matched each
/// query word and how. Rather than scanning the query terms' postings a
/// second time, the few returned tools are split into terms again (the
/// same way as when indexing), which gives the same answer: a tool is in
/// a stem's postings exactly when one of its terms has that stem.
pub(crate) fn explain(
    file: &IndexFile,
    terms: &[QueryTerm],
    lookups: &[Lookup],
    ranked: Vec<(f32, u32)>,
) -> Vec<Hit> {
    // What a match can be: a query term found by its stem, or one
    // expansion of a term, in the order the matches are listed.
    let mut wanted: Vec<(usize, Option<&Expansion>)> = Vec::new();
    for (i, lookup) in lookups.iter().enumerate() {
        match lookup {
            Lookup::Found(_) => wanted.push((i, None)),
            Lookup::Expanded(expansions) => wanted.extend(expansions.iter().map(|e| (i, Some(e)))),
            Lookup::Missing => {}
        }
    }
    let mut by_stem: HashMap<&str, Vec<usize>, FxBuild> = HashMap::default();
    for (k, (i, e)) in wanted.iter().enumerate() {
        let stem = e.map_or(terms[*i].stem.as_str(), |e| e.matched.as_str());
        by_stem.entry(stem).or_default().push(k);
    }
    // Per wanted match and field: 1 = a term with the stem, 2 = also a
    // term equal to the query word.
    let mut seen: Vec<[u8; FIELDS]> = vec![[0; FIELDS]; wanted.len()];
    let mut fields = DocFields::default();
    ranked
        .into_iter()
        .filter_map(|(score, d)| {
            let doc = file.doc(d as usize)?;
            // Every stored schema was written from a JSON value; one
            // that does not parse (a damaged file) only loses its terms.
            let parameters = doc.parameters().unwrap_or(serde_json::Value::Null);
            fields.fill_parts(
                doc.name,
                &doc.description,
                &parameters,
                doc.aliases.iter().map(|s| &**s),
                doc.keywords.iter().map(|s| &**s),
            );
            seen.iter_mut().for_each(|s| *s = [0; FIELDS]);
            for field in Field::ALL {
                let f = field as usize;
                for t in fields.terms(f) {
                    let Some(ks) = by_stem.get(&*text::stem(t)) else {
                        continue;
                    };
                    for &k in ks {
                        let (i, e) = wanted[k];
                        seen[k][f] |= if e.is_none() && t == terms[i].word {
                            3
                        } else {
                            1
                        };
                    }
                }
            }
            let mut why = Vec::new();
            for (k, &(i, e)) in wanted.iter().enumerate() {
                let term = &terms[i];
                for field in Field::ALL {
                    let s = seen[k][field as usize];
                    if s == 0 {
                        continue;
                    }
                    why.push(match e {
                        None => Match {
                            term: term.word.to_string(),
                            matched: term.stem.to_string(),
                            field,
                            kind: if s & 2 != 0 {
                                MatchKind::Exact
                            } else {
                                MatchKind::Stem
                            },
                        },
                        Some(e) => Match {
                            term: term.word.to_string(),
                            matched: e.matched.to_string(),
                            field,
                            kind: e.kind,
                        },
                    });
                }
            }
            Some(Hit {
                name: doc.name.to_string(),
                score,
                why,
            })
        })
        .collect()
}
