//! The specification (`docs/spec.md`) and the code agree on statement ids: every id the code
//! or a test cites is defined there, and every test the specification lists still exists.
//!
//! A citation is an id such as `G2`, or a range such as `N1-N6`, written in a comment as
//! `(G2)`, `(D1, D6, D7)`, `(R1-R4, R9)` or `SPEC G1`, or a test named `g2_...` with at least
//! three words after the id. "S3" the storage service is not a citation: it is cited only
//! where an id would stand, so `s3://bucket` or "an S3 bucket" are not read as one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use toolgate_e2e::repo_root;

/// The letters that start a statement id: the specification's groups.
const GROUPS: &[char] = &[
    'A', 'C', 'D', 'E', 'G', 'L', 'N', 'O', 'P', 'R', 'S', 'V', 'W',
];

/// Crate folders whose sources are searched for citations.
const CRATES: &[&str] = &[
    "engine",
    "policy",
    "store",
    "search",
    "search-semantic",
    "search-eval",
    "plugin-api",
    "plugins",
    "mcp",
    "telemetry",
    "cli",
    "tests",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name == "node_modules" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Reads one id (`G2`) at the start of `s`: its group letter, number and length in bytes.
fn id_at(s: &str) -> Option<(char, u32, usize)> {
    let mut chars = s.char_indices();
    let (_, letter) = chars.next()?;
    if !GROUPS.contains(&letter) {
        return None;
    }
    let digits: String = s[1..].chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() || digits.len() > 2 {
        return None;
    }
    Some((letter, digits.parse().ok()?, 1 + digits.len()))
}

/// The ids a line cites, ranges expanded.
fn citations(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in line.char_indices() {
        let before = &line[..at];
        let opens = before.ends_with('(')
            || before.ends_with(", ")
            || before.ends_with("; ")
            || before.ends_with("SPEC ");
        if !opens {
            continue;
        }
        let rest = &line[at..];
        let Some((letter, first, len)) = id_at(rest) else {
            continue;
        };
        let mut last = first;
        let mut end = len;
        if let Some(range) = rest[len..].strip_prefix('-') {
            let range_at = if range.starts_with(letter) { 1 } else { 0 };
            let digits: String = range[range_at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse::<u32>() {
                last = n;
                end = len + 1 + range_at + digits.len();
            }
        }
        // An id ends the list item: `)`, `,`, `;`, `:`, or a space before "(fix)".
        let after = &rest[end..];
        let closes = after.starts_with(')')
            || after.starts_with(',')
            || after.starts_with(';')
            || after.starts_with(':')
            || after.starts_with(" (fix)");
        if closes && first <= last {
            found.extend((first..=last).map(|n| format!("{letter}{n}")));
        }
    }
    found
}

/// The id a test's name cites: `g2_a_call_times_out` cites `G2`.
fn test_name_citation(name: &str) -> Option<String> {
    let (head, rest) = name.split_once('_')?;
    let (letter, number, len) = id_at(&head.to_ascii_uppercase())?;
    (len == head.len() && rest.matches('_').count() >= 2).then(|| format!("{letter}{number}"))
}

/// The names of the functions defined in a line (`fn name(` / `fn name<`).
fn function_names(line: &str) -> Vec<&str> {
    line.match_indices("fn ")
        .filter(|(at, _)| *at == 0 || !line.as_bytes()[at - 1].is_ascii_alphanumeric())
        .filter_map(|(at, _)| {
            let rest = &line[at + 3..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
        .collect()
}

/// The statement ids `docs/spec.md` defines (its `### ID title` headings), and the test names
/// it lists.
fn the_specification() -> (BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(repo_root().join("docs/spec.md"))
        .expect("docs/spec.md is in the repository");
    let mut ids = BTreeSet::new();
    let mut tests = BTreeSet::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("### ")
            && let Some((letter, number, len)) = id_at(heading)
            && heading[len..].starts_with(' ')
        {
            ids.insert(format!("{letter}{number}"));
        }
        if line.starts_with("- `") {
            for (i, quoted) in line.split('`').enumerate() {
                if i % 2 == 1 && test_name_citation(quoted).is_some() {
                    tests.insert(quoted.to_string());
                }
            }
        }
    }
    (ids, tests)
}

/// Every citation in the workspace's Rust sources (`id -> [file:line]`) and every function
/// name defined there.
fn the_sources() -> (BTreeMap<String, Vec<String>>, BTreeSet<String>) {
    let root = repo_root();
    let this_file = Path::new(file!())
        .file_name()
        .expect("this test has a file name");
    let mut files = Vec::new();
    for krate in CRATES {
        rust_files(&root.join(krate), &mut files);
    }
    let mut cited: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut functions = BTreeSet::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let is_this_file = file.file_name() == Some(this_file);
        for (n, line) in text.lines().enumerate() {
            for name in function_names(line) {
                functions.insert(name.to_string());
                if let Some(id) = test_name_citation(name).filter(|_| !is_this_file) {
                    cited
                        .entry(id)
                        .or_default()
                        .push(format!("{shown}:{}", n + 1));
                }
            }
            if is_this_file {
                continue;
            }
            for id in citations(line) {
                cited
                    .entry(id)
                    .or_default()
                    .push(format!("{shown}:{}", n + 1));
            }
        }
    }
    (cited, functions)
}

#[test]
fn every_statement_id_the_code_and_tests_cite_is_defined_in_the_specification() {
    let (defined, _) = the_specification();
    let (cited, _) = the_sources();
    assert!(
        cited.len() >= 40,
        "the citation finder found only {} ids: is it still reading the sources?",
        cited.len()
    );
    let missing: Vec<String> = cited
        .iter()
        .filter(|(id, _)| !defined.contains(*id))
        .map(|(id, places)| format!("{id}, cited at {}", places.join(", ")))
        .collect();
    assert!(
        missing.is_empty(),
        "ids cited but not defined in docs/spec.md (add a `### ID title` statement):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_test_the_specification_lists_exists() {
    let (_, listed) = the_specification();
    let (_, functions) = the_sources();
    assert!(!listed.is_empty(), "docs/spec.md lists no tests");
    let gone: Vec<&String> = listed.difference(&functions).collect();
    assert!(
        gone.is_empty(),
        "docs/spec.md lists tests that no longer exist (rename or remove them there): {gone:?}"
    );
}

#[test]
fn the_citation_finder_reads_lists_ranges_and_spec_prefixes() {
    assert_eq!(
        citations("/// Runs calls (D1, D6, D7): in order"),
        ["D1", "D6", "D7"]
    );
    assert_eq!(
        citations("//! rules (N1-N3, N6)."),
        ["N1", "N2", "N3", "N6"]
    );
    assert_eq!(
        citations("//! storage (SPEC R1-R2, R7-R8)"),
        ["R1", "R2", "R7", "R8"]
    );
    assert_eq!(citations("//! SPEC G1 (fix), D4: rules"), ["G1", "D4"]);
}

#[test]
fn the_citation_finder_does_not_take_the_storage_service_for_a_statement() {
    assert!(citations("/// the s3://bucket/prefix store").is_empty());
    assert!(citations("/// an S3 bucket (needs the S3 feature)").is_empty());
    assert!(citations("/// (see S3 docs)").is_empty());
}

#[test]
fn a_test_name_cites_its_leading_id_only_when_it_reads_as_a_sentence() {
    assert_eq!(
        test_name_citation("g2_a_call_times_out").as_deref(),
        Some("G2")
    );
    assert_eq!(test_name_citation("s3_options"), None);
    assert_eq!(test_name_citation("s3_store_opens"), None);
    assert_eq!(test_name_citation("x1_a_b_c"), None);
}
