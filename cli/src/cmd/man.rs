//! `toolgate man`: the manual pages, in roff, generated from the command line's definition:
//! toolgate(1), and one page per command named like git's (toolgate-results-list(1)).

use clap::CommandFactory;
use clap_mangen::Man;

use crate::args::{Cli, ManArgs};
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;

/// The NAME line of toolgate(1) (`toolgate - ...`).
const ABOUT: &str = "run an LLM agent's tool calls through a policy";

/// The DESCRIPTION of toolgate(1); the commands' pages use their help text.
const DESCRIPTION: &str = "toolgate sits between an LLM agent and its tools. A YAML policy says \
how tool calls run: name and argument aliases, allow and deny rules, sandboxed Rhai hooks, \
timeouts that really cancel, result caps, panic isolation and events. The toolgate program runs \
a model's tool calls through a policy from the command line, lists the tools a model would see, \
prepares a conversation for the next request, looks after offloaded results and searches tool \
catalogs. Each command has its own page, listed under SUBCOMMANDS.";

/// Prints the page of toolgate or of the command named, or writes every page into `--dir`.
pub fn man(args: ManArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let mut cli = Cli::command().about(ABOUT).long_about(DESCRIPTION);
    // Gives each command its display name (`toolgate-results-list`), the page's title.
    cli.build();
    if let Some(dir) = args.dir {
        let mut pages = vec![&cli];
        let mut written = 0;
        while let Some(page) = pages.pop() {
            let path = dir.join(format!("{}.1", title(page)));
            let write_error = |source| CliError::WriteMan {
                dir: dir.clone(),
                source,
            };
            std::fs::write(&path, render(page).map_err(write_error)?).map_err(write_error)?;
            written += 1;
            pages.extend(page.get_subcommands());
        }
        writeln!(out, "wrote {written} manual pages into {}", dir.display())?;
        return Ok(EXIT_OK);
    }
    let mut page = &cli;
    for (i, word) in args.command.iter().enumerate() {
        page = page
            .find_subcommand(word)
            .ok_or_else(|| CliError::UnknownCommand(args.command[..=i].join(" ")))?;
    }
    let roff = render(page).map_err(CliError::Output)?;
    out.bytes(&roff)?;
    Ok(EXIT_OK)
}

/// `toolgate`, `toolgate-results-list`.
fn title(page: &clap::Command) -> &str {
    page.get_display_name().unwrap_or_else(|| page.get_name())
}

/// The page of one command: clap_mangen's sections, then the help's examples, notes and exit
/// codes as they are laid out in `--help` (clap_mangen would fill them into paragraphs).
fn render(page: &clap::Command) -> std::io::Result<Vec<u8>> {
    let man = Man::new(page.clone())
        .source(format!("toolgate {}", env!("CARGO_PKG_VERSION")))
        .manual("toolgate manual");
    let mut roff = Vec::new();
    man.render_title(&mut roff)?;
    man.render_name_section(&mut roff)?;
    man.render_synopsis_section(&mut roff)?;
    man.render_description_section(&mut roff)?;
    man.render_options_section(&mut roff)?;
    if page.has_subcommands() {
        man.render_subcommands_section(&mut roff)?;
    }
    if let Some(help) = page.get_after_help() {
        roff.extend(help_sections(&help.to_string()).into_bytes());
    }
    man.render_version_section(&mut roff)?;
    Ok(roff)
}

/// The after-help text as man sections: its `Examples:` block under EXAMPLES, its `Exit
/// codes:` block under EXIT STATUS, any other paragraph under NOTES; each shown line for line.
fn help_sections(help: &str) -> String {
    let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
    for block in help.split("\n\n") {
        let (name, lines): (&str, Vec<&str>) = match block.split_once('\n') {
            Some(("Examples:", rest)) => ("EXAMPLES", rest.lines().collect()),
            Some(("Exit codes:", rest)) => ("EXIT STATUS", rest.lines().collect()),
            _ => ("NOTES", block.lines().collect()),
        };
        match sections.iter_mut().find(|(n, _)| *n == name) {
            Some((_, existing)) => {
                existing.push("");
                existing.extend(lines);
            }
            None => sections.push((name, lines)),
        }
    }
    let mut roff = String::new();
    for (name, lines) in sections {
        roff.push_str(&format!(".SH \"{name}\"\n.nf\n"));
        for line in lines {
            roff.push_str(&escape(line));
            roff.push('\n');
        }
        roff.push_str(".fi\n");
    }
    roff
}

/// A line of text for roff's no-fill mode: backslashes and hyphens kept as typed, and a line
/// starting with `.` or `'` not taken for a request.
fn escape(line: &str) -> String {
    let mut text = line.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with('.') || text.starts_with('\'') {
        text.insert_str(0, "\\&");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_blocks_become_examples_exit_status_and_notes() {
        let roff = help_sections("Examples:\n  toolgate x\n\nSome note.\n\nExit codes:\n  0  ok");
        assert_eq!(
            roff,
            ".SH \"EXAMPLES\"\n.nf\n  toolgate x\n.fi\n\
             .SH \"NOTES\"\n.nf\nSome note.\n.fi\n\
             .SH \"EXIT STATUS\"\n.nf\n  0  ok\n.fi\n"
        );
    }

    #[test]
    fn a_line_that_looks_like_a_request_is_escaped() {
        assert_eq!(escape(".hidden -v \\n"), "\\&.hidden \\-v \\en");
    }
}
