//! `toolgate completions SHELL`: a completion script, generated from the command line's
//! definition so it always knows every command and option.

use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs};
use crate::error::{CliError, EXIT_OK};
use crate::output::Out;

pub fn completions(args: CompletionsArgs, out: &mut Out<'_>) -> Result<u8, CliError> {
    let mut cli = Cli::command();
    let name = cli.get_name().to_string();
    // clap_complete panics when its writer fails; write into memory (a script is a few tens of
    // kilobytes), then to the output, where a closed pipe is a normal end.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, name, &mut script);
    out.bytes(&script)?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap_complete::Shell;

    #[test]
    fn a_completion_script_names_every_command() {
        let mut bytes = Vec::new();
        let mut out = Out::new(&mut bytes);
        completions(CompletionsArgs { shell: Shell::Bash }, &mut out).unwrap();
        out.flush().unwrap();
        drop(out);
        let script = String::from_utf8(bytes).unwrap();
        for command in Cli::command().get_subcommands() {
            assert!(
                script.contains(command.get_name()),
                "{}",
                command.get_name()
            );
        }
    }
}
