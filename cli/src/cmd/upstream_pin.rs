//! `toolgate upstream pin POLICY`: records the hashes of what the policy's upstream MCP servers
//! offer in their pins files (see `toolgate_mcp::upstream` and `pins:` in `docs/policy.md`),
//! or, with `--check`, says what differs from them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toolgate_mcp::upstream::{
    Definitions, Pin, PinFile, PinsError, Problem, ServerPins, Upstreams,
};
use toolgate_policy::McpServerSpec;

use crate::args::{UpstreamCommand, UpstreamPinArgs};
use crate::error::{CliError, EXIT_OK, Input};
use crate::output::Out;

pub async fn upstream(command: UpstreamCommand, out: &mut Out<'_>) -> Result<u8, CliError> {
    match command {
        UpstreamCommand::Pin(args) => pin(args, out).await,
    }
}

async fn pin(args: UpstreamPinArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let name = args.policy.display().to_string();
    let policy = toolgate_policy::load_file(&args.policy)?;
    if policy.mcp_servers.is_empty() {
        return Err(CliError::NoSection {
            policy: name,
            section: "mcp_servers",
            what: "upstream servers to pin",
        });
    }
    if let Some(unknown) = args
        .servers
        .iter()
        .find(|wanted| !policy.mcp_servers.iter().any(|s| &s.name == *wanted))
    {
        return Err(CliError::UnknownServer {
            policy: name,
            server: unknown.clone(),
        });
    }
    let servers: Vec<McpServerSpec> = policy
        .mcp_servers
        .iter()
        .filter(|s| args.servers.is_empty() || args.servers.contains(&s.name))
        .cloned()
        .collect();

    let upstreams = Upstreams::start(&servers).await;
    let found = upstreams.definitions().await;
    upstreams.shutdown().await;
    let mut offered = Vec::new();
    let mut problems = Vec::new();
    for (spec, result) in servers.iter().zip(found) {
        match result {
            Ok(definitions) => offered.push((spec, definitions)),
            Err(problem) => problems.push(problem),
        }
    }
    if !problems.is_empty() {
        return Err(CliError::Upstreams {
            policy: name,
            problems,
        });
    }

    let default_file = default_pins_file(&args.policy);
    let file_of = |spec: &McpServerSpec| spec.pins.clone().unwrap_or_else(|| default_file.clone());
    if args.check {
        return check(&name, &offered, file_of, out);
    }

    let mut by_file: BTreeMap<PathBuf, Vec<&(&McpServerSpec, Definitions)>> = BTreeMap::new();
    for entry in &offered {
        by_file.entry(file_of(entry.0)).or_default().push(entry);
    }
    for (file, entries) in &by_file {
        let mut pins = match PinFile::read(file) {
            Ok(pins) => pins,
            Err(PinsError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                PinFile::default()
            }
            Err(error) => return Err(CliError::Pins(error)),
        };
        for (spec, definitions) in entries {
            pins.servers.insert(spec.name.clone(), definitions.pins());
        }
        pins.write(file).map_err(CliError::Pins)?;
        for (spec, definitions) in entries {
            writeln!(
                out,
                "pinned {} of MCP server {} in {}",
                summary(definitions),
                spec.name,
                file.display()
            )?;
        }
    }

    let unpinned: Vec<&McpServerSpec> = offered
        .iter()
        .map(|(spec, _)| *spec)
        .filter(|spec| spec.pins.is_none())
        .collect();
    if !unpinned.is_empty() {
        let line = add_pins_lines(&args.policy, &unpinned, &default_file)?;
        let names: Vec<&str> = unpinned.iter().map(|s| s.name.as_str()).collect();
        writeln!(
            out,
            "added `{line}` to the entries of {} in {name}",
            names.join(", ")
        )?;
    }
    Ok(EXIT_OK)
}

/// `3 tools, 2 prompts`.
fn summary(definitions: &Definitions) -> String {
    let count = |n: usize, one: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {one}s"),
    };
    let mut parts = vec![count(definitions.tools.len(), "tool")];
    for (n, one) in [
        (definitions.resources.len(), "resource"),
        (definitions.resource_templates.len(), "resource template"),
        (definitions.prompts.len(), "prompt"),
    ] {
        if n > 0 {
            parts.push(count(n, one));
        }
    }
    parts.join(", ")
}

/// `--check`: every difference between what the servers offer and their pins, as problems.
fn check(
    policy: &str,
    offered: &[(&McpServerSpec, Definitions)],
    file_of: impl Fn(&McpServerSpec) -> PathBuf,
    out: &mut Out<'_>,
) -> Result<u8, CliError> {
    let mut problems = Vec::new();
    for (spec, definitions) in offered {
        let problem = |message: String| Problem {
            server: spec.name.clone(),
            position: spec.position.clone(),
            message,
        };
        let file = file_of(spec);
        let pinned = match PinFile::read(&file) {
            Ok(mut pins) => pins.servers.remove(&spec.name),
            Err(error) => {
                problems.push(problem(toolgate::error::Chain(&error).to_string()));
                continue;
            }
        };
        let Some(pinned) = pinned else {
            problems.push(problem(format!("it has no pins in {}", file.display())));
            continue;
        };
        problems.extend(
            differences(&pinned, &definitions.pins())
                .into_iter()
                .map(problem),
        );
    }
    if !problems.is_empty() {
        return Err(CliError::Upstreams {
            policy: policy.to_owned(),
            problems,
        });
    }
    let names: Vec<&str> = offered.iter().map(|(s, _)| s.name.as_str()).collect();
    writeln!(
        out,
        "what {} offer{} matches the pins",
        names.join(", "),
        if names.len() == 1 { "s" } else { "" }
    )?;
    Ok(EXIT_OK)
}

/// One kind of definitions' pins, by name.
type Pins = BTreeMap<String, Pin>;

/// One line per definition that differs: changed (and which fields), new, or gone.
fn differences(pinned: &ServerPins, now: &ServerPins) -> Vec<String> {
    let mut lines = Vec::new();
    let lists: [(&str, &Pins, &Pins); 4] = [
        ("tool", &pinned.tools, &now.tools),
        ("resource", &pinned.resources, &now.resources),
        (
            "resource template",
            &pinned.resource_templates,
            &now.resource_templates,
        ),
        ("prompt", &pinned.prompts, &now.prompts),
    ];
    for (kind, pinned, now) in lists {
        for (name, pin) in now {
            match pinned.get(name) {
                None => lines.push(format!("its {kind} {name:?} is not pinned (it is new)")),
                Some(old) => {
                    let changed = toolgate_mcp::upstream::changed_fields(old, pin);
                    if !changed.is_empty() {
                        lines.push(format!(
                            "its {kind} {name:?} changed since it was pinned ({} changed)",
                            changed.join(", ")
                        ));
                    }
                }
            }
        }
        for name in pinned.keys().filter(|name| !now.contains_key(*name)) {
            lines.push(format!(
                "its {kind} {name:?} is pinned but no longer offered"
            ));
        }
    }
    lines
}

/// `policy.pins.json` beside `policy.yaml`, as the policy's `pins: policy.pins.json` names it
/// once loaded (resolved against the policy's directory).
fn default_pins_file(policy: &Path) -> PathBuf {
    let stem = policy
        .file_stem()
        .map_or_else(|| "policy".into(), |s| s.to_string_lossy().into_owned());
    let dir = match policy.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    dir.join(format!("{stem}.pins.json"))
}

/// Adds `pins: FILE` to the entries of `servers` in the policy file, as text: the rest of the
/// file, comments included, stays as written. Checks that the policy then loads with those
/// pins before writing it. Returns the line added.
fn add_pins_lines(
    policy: &Path,
    servers: &[&McpServerSpec],
    file: &Path,
) -> Result<String, CliError> {
    let file_name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let plain = !file_name.is_empty()
        && file_name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !file_name.starts_with(['.', '-']);
    let value = if plain {
        file_name
    } else {
        serde_json::to_string(&file_name).unwrap_or_default()
    };
    let key = format!("pins: {value}");

    let text = std::fs::read_to_string(policy).map_err(|source| CliError::Read {
        input: Input::File(policy.to_path_buf()),
        source,
    })?;
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    // From the last entry up, so that the positions of the others stay true.
    let mut entries: Vec<&McpServerSpec> = servers.to_vec();
    entries.sort_by_key(|s| s.position.as_ref().map(|p| (p.line, p.column)));
    for spec in entries.into_iter().rev() {
        let by_hand = |why: &str| CliError::PinsEdit {
            policy: policy.to_path_buf(),
            server: spec.name.clone(),
            line: key.clone(),
            why: why.to_owned(),
        };
        let at = spec
            .position
            .as_ref()
            .ok_or_else(|| by_hand("its entry has no position"))?;
        let line = usize::try_from(at.line)
            .ok()
            .and_then(|l| l.checked_sub(1))
            .and_then(|l| lines.get(l))
            .ok_or_else(|| by_hand("its entry is not where the policy says"))?;
        let column = usize::try_from(at.column.saturating_sub(1)).unwrap_or(usize::MAX);
        let offset = line
            .char_indices()
            .nth(column)
            .map(|(i, _)| i)
            .ok_or_else(|| by_hand("its entry is not where the policy says"))?;
        let index = usize::try_from(at.line).unwrap_or(usize::MAX) - 1;
        let after_first_line = one_line_value(&line[offset..])
            && next_indent(&lines[index + 1..]).is_none_or(|n| n <= column);
        let line = &mut lines[index];
        match line[offset..].chars().next() {
            // A flow mapping: `- {name: time, command: [...]}`.
            Some('{') => line.insert_str(offset + 1, &format!("{key}, ")),
            // An alias, or something else this edit does not know.
            Some('*' | '&' | '!' | '\n' | '\r') | None => {
                return Err(by_hand("its entry is not a mapping written in place"));
            }
            // A block mapping whose first key's value is on its line (`- name: time`): the
            // new key is the next line, at the same column.
            Some(_) if after_first_line => {
                if !line.ends_with('\n') {
                    line.push('\n');
                }
                lines.insert(index + 1, format!("{}{key}\n", " ".repeat(column)));
            }
            // Another block mapping: the new key takes the first key's place, which moves to
            // the next line, at the same column.
            Some(_) => {
                let indent = " ".repeat(column);
                line.insert_str(offset, &format!("{key}\n{indent}"));
            }
        }
    }
    let edited = lines.concat();
    let loaded = toolgate_policy::load_str(&edited, policy);
    // The edit added the pins and changed nothing else of the servers.
    let before = toolgate_policy::load_str(&text, policy);
    let same_but_pinned = |was: &McpServerSpec, now: &McpServerSpec| {
        let wanted = servers.iter().any(|s| s.name == was.name);
        let pins = if wanted {
            Some(file.to_path_buf())
        } else {
            was.pins.clone()
        };
        McpServerSpec {
            pins,
            position: None,
            ..was.clone()
        } == McpServerSpec {
            position: None,
            ..now.clone()
        }
    };
    let pinned = match (&before, &loaded) {
        (Ok(before), Ok(after)) => {
            before.mcp_servers.len() == after.mcp_servers.len()
                && before
                    .mcp_servers
                    .iter()
                    .zip(&after.mcp_servers)
                    .all(|(was, now)| same_but_pinned(was, now))
        }
        _ => false,
    };
    if !pinned {
        let problem = match loaded {
            Err(e) => format!("the edited policy does not load: {e}"),
            Ok(_) => "the edit would change more than the pins".to_owned(),
        };
        return Err(CliError::PinsEdit {
            policy: policy.to_path_buf(),
            server: servers
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            line: key,
            why: problem,
        });
    }
    std::fs::write(policy, edited).map_err(|source| CliError::Write {
        path: policy.to_path_buf(),
        source,
    })?;
    Ok(key)
}

/// Whether `entry` (from a mapping's first key to the end of its line) holds the key's whole
/// value: `name: time`, `name: "time"  # a comment`; not `command:` (the value is below) nor a
/// block scalar, flow collection or anchor that may go on.
fn one_line_value(entry: &str) -> bool {
    let Some((key, value)) = entry.split_once(':') else {
        return false;
    };
    let value = value.split(" #").next().unwrap_or_default().trim();
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !value.is_empty()
        && !value.starts_with(['|', '>', '[', '{', '&', '*', '!', '#'])
}

/// The indentation of the first line of `lines` that holds more than a comment.
fn next_indent(lines: &[String]) -> Option<usize> {
    lines.iter().find_map(|line| {
        let text = line.trim_start_matches(' ');
        let blank = text.trim().is_empty() || text.starts_with('#');
        (!blank).then(|| line.len() - text.len())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pins_file_is_beside_the_policy() {
        assert_eq!(
            default_pins_file(Path::new("dir/policy.yaml")),
            Path::new("dir/policy.pins.json")
        );
        assert_eq!(
            default_pins_file(Path::new("policy.yaml")),
            Path::new("./policy.pins.json")
        );
    }

    #[test]
    fn a_changed_and_a_new_and_a_gone_tool_are_each_a_line() {
        let pin =
            |text: &str| toolgate_mcp::upstream::pin_of(&serde_json::json!({"description": text}));
        let mut pinned = ServerPins::default();
        pinned.tools.insert("a".into(), pin("adds"));
        pinned.tools.insert("gone".into(), pin("x"));
        let mut now = ServerPins::default();
        now.tools
            .insert("a".into(), pin("adds, and mails the result"));
        now.tools.insert("new".into(), pin("y"));
        assert_eq!(
            differences(&pinned, &now),
            [
                "its tool \"a\" changed since it was pinned (description changed)",
                "its tool \"new\" is not pinned (it is new)",
                "its tool \"gone\" is pinned but no longer offered",
            ]
        );
    }
}
