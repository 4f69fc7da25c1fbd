//! Why a command failed, and the exit code each failure maps to.
//!
//! The exit codes are a public contract (documented in `--help` and the README); keep them
//! stable.

use std::fmt;
use std::process::ExitCode;

/// Everything went well.
pub const EXIT_OK: u8 = 0;
/// `call` only: the call ran, and its outcome is an error result (timeout, denied, ...).
pub const EXIT_CALL_ERROR: u8 = 1;
/// Bad command-line usage (also used by clap for unknown flags and missing arguments).
pub const EXIT_USAGE: u8 = 2;
/// The policy could not be loaded, or the engine could not be built from it.
pub const EXIT_POLICY: u8 = 3;
/// An input could not be read or is not what it should be (a conversation file, bad JSON).
pub const EXIT_INPUT: u8 = 4;
/// `run` only: the turn was aborted under `on_error: fail`.
pub const EXIT_TURN_ABORTED: u8 = 5;
/// `results` only: the result store failed (unreachable, an I/O error, inconsistent data).
pub const EXIT_STORE: u8 = 6;

/// A failure that ends the command, with the message to print on stderr.
#[derive(Debug)]
pub enum CliError {
    /// A bad argument value that clap could not check (a blank session id, a bad duration).
    Usage(String),
    /// Already formatted as `file:line:col: message` lines where positions are known.
    Policy(String),
    Input(String),
    TurnAborted(String),
    Store(String),
}

impl CliError {
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            CliError::Usage(_) => EXIT_USAGE,
            CliError::Policy(_) => EXIT_POLICY,
            CliError::Input(_) => EXIT_INPUT,
            CliError::TurnAborted(_) => EXIT_TURN_ABORTED,
            CliError::Store(_) => EXIT_STORE,
        })
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Input(m) | CliError::Store(m) => write!(f, "error: {m}"),
            // Policy errors are compiler-style lines; print them as they are so editors and
            // CI annotators can jump to them.
            CliError::Policy(m) => f.write_str(m),
            CliError::TurnAborted(m) => write!(f, "error: turn aborted (on_error: fail): {m}"),
        }
    }
}
