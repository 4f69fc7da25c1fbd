//! `fs.find`: the paths under a directory whose name matches a pattern.

use std::fs;

use serde::Deserialize;
use toolgate_plugin_api::{CallContext, ToolError, ToolOutput};

use crate::note::push_note;
use crate::root::FsState;

/// The most paths `fs.find` returns.
pub const MAX_FIND_RESULTS: usize = 1000;
/// How deep `fs.find` descends below its starting directory; deeper directories are not
/// searched, and the result says how many there were.
pub const MAX_FIND_DEPTH: usize = 64;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FindArgs {
    pattern: String,
    path: Option<String>,
}

pub(crate) fn find(ctx: &CallContext<FsState>, args: FindArgs) -> Result<ToolOutput, ToolError> {
    if args.pattern.is_empty() {
        return Err(ToolError::new(
            "pattern must not be empty; use * to match every name",
        ));
    }
    let pattern: Vec<char> = args.pattern.chars().collect();
    let start = ctx.state().resolve(args.path.as_deref().unwrap_or("."))?;
    if !start.path.is_dir() {
        return Err(ToolError::new(format!(
            "{} is not a directory",
            start.shown
        )));
    }
    let mut found = Vec::new();
    let mut truncated = false;
    // Directories left unsearched: below the depth bound (the first one, to name), unreadable.
    let mut too_deep = 0_usize;
    let mut first_too_deep: Option<String> = None;
    let mut unreadable = 0_usize;
    let mut stack = vec![(start.path.clone(), 0_usize)];
    'walk: while let Some((dir, depth)) = stack.pop() {
        ctx.check_cancelled()?;
        // A directory we cannot read is skipped, not fatal: the rest of the tree still counts.
        let Ok(read) = fs::read_dir(&dir) else {
            unreadable += 1;
            continue;
        };
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            // A denied entry is neither listed nor searched.
            if ctx.state().hides(&entry) {
                continue;
            }
            if glob_match(&pattern, &name) {
                if found.len() == MAX_FIND_RESULTS {
                    truncated = true;
                    break 'walk;
                }
                found.push(ctx.state().show(&path));
            }
            // `file_type` does not follow symbolic links, so the walk never leaves the root.
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                if depth < MAX_FIND_DEPTH {
                    stack.push((path, depth + 1));
                } else {
                    too_deep += 1;
                    first_too_deep.get_or_insert_with(|| ctx.state().show(&path));
                }
            }
        }
    }
    found.sort();
    let mut text = if found.is_empty() {
        format!("no names match {} under {}", args.pattern, start.shown)
    } else {
        found.join("\n")
    };
    if truncated {
        push_note(
            &mut text,
            &format!("[stopped at {MAX_FIND_RESULTS} matches; use a narrower pattern or path]"),
        );
    } else {
        if let Some(first) = first_too_deep {
            push_note(
                &mut text,
                &format!(
                    "[stopped at depth {MAX_FIND_DEPTH}: {} deeper not searched, such as \
                     {first}; search again with it as the path]",
                    directories(too_deep)
                ),
            );
        }
        if unreadable > 0 {
            push_note(
                &mut text,
                &format!(
                    "[{} could not be read and were not searched]",
                    directories(unreadable)
                ),
            );
        }
    }
    Ok(ToolOutput::text(text))
}

/// `1 directory`, `2 directories`.
fn directories(count: usize) -> String {
    if count == 1 {
        "1 directory".to_string()
    } else {
        format!("{count} directories")
    }
}

/// Whether `name` matches the glob `pattern`: `*` matches any run of characters (none
/// included), `?` exactly one, anything else itself.
pub(crate) fn glob_match(pattern: &[char], name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    // Where the last `*` was, and where in the name it started matching.
    let mut backtrack: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some('*') => {
                backtrack = Some((p, n));
                p += 1;
            }
            Some(&c) if c == '?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match backtrack {
                Some((star, from)) => {
                    p = star + 1;
                    n = from + 1;
                    backtrack = Some((star, from + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, name: &str) -> bool {
        glob_match(&pattern.chars().collect::<Vec<_>>(), name)
    }

    #[test]
    fn star_matches_any_run_of_characters_including_none() {
        assert!(matches("*.md", "README.md"));
        assert!(matches("*.md", ".md"));
        assert!(matches("a*b*c", "aXXbYYc"));
        assert!(!matches("*.md", "README.mdx"));
    }

    #[test]
    fn question_mark_matches_exactly_one_character() {
        assert!(matches("?.rs", "a.rs"));
        assert!(!matches("?.rs", "ab.rs"));
        assert!(!matches("?.rs", ".rs"));
    }

    #[test]
    fn literal_patterns_match_only_themselves() {
        assert!(matches("Cargo.toml", "Cargo.toml"));
        assert!(!matches("Cargo.toml", "cargo.toml"));
    }
}
