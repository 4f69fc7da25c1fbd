//! Standard output, written as a command goes rather than collected first.
//!
//! [`Out`] buffers writes and turns a failed write into [`CliError::Output`]; `main` treats a
//! closed pipe (`toolgate ... | head -1`) as a normal end. Use it with `write!`/`writeln!`:
//! `writeln!(out, "{name}")?` returns a `Result<(), CliError>`.

use std::fmt;
use std::io::{self, BufWriter, Write};

use serde_json::Value;

use crate::error::CliError;

/// Where a command prints its results.
pub struct Out<'a> {
    inner: BufWriter<Box<dyn Write + 'a>>,
}

impl<'a> Out<'a> {
    /// Output to `writer`, buffered.
    pub fn new(writer: impl Write + 'a) -> Out<'a> {
        Out {
            inner: BufWriter::with_capacity(64 * 1024, Box::new(writer)),
        }
    }

    /// Output to the process's standard output. (Not locked: a tool running in this process
    /// may print too, from another thread.)
    pub fn stdout() -> Out<'static> {
        Out::new(io::stdout())
    }

    /// For `write!` and `writeln!`.
    pub fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> Result<(), CliError> {
        self.inner.write_fmt(args).map_err(CliError::Output)
    }

    /// Text as it is.
    pub fn text(&mut self, text: &str) -> Result<(), CliError> {
        self.bytes(text.as_bytes())
    }

    /// Bytes as they are.
    pub fn bytes(&mut self, bytes: &[u8]) -> Result<(), CliError> {
        self.inner.write_all(bytes).map_err(CliError::Output)
    }

    /// A JSON value and a newline: indented with `pretty`, else on one line.
    pub fn json(&mut self, value: &Value, pretty: bool) -> Result<(), CliError> {
        let written = if pretty {
            serde_json::to_writer_pretty(&mut self.inner, value)
        } else {
            serde_json::to_writer(&mut self.inner, value)
        };
        // A `Value` always serializes; what can fail is the writing.
        written.map_err(|e| CliError::Output(e.into()))?;
        self.text("\n")
    }

    /// Sends what is buffered on its way: before writing to standard error, so that the two
    /// come out in order on a terminal, and when a command ends.
    pub fn flush(&mut self) -> Result<(), CliError> {
        self.inner.flush().map_err(CliError::Output)
    }
}

/// A line on standard error (a warning, a closing summary). A standard error that cannot be
/// written is not a reason to fail or panic.
pub fn stderr_line(text: &str) {
    let _ = writeln!(io::stderr().lock(), "{text}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_formatting_and_json_reach_the_writer_in_order() {
        let mut bytes = Vec::new();
        {
            let mut out = Out::new(&mut bytes);
            writeln!(out, "{} tools", 2).unwrap();
            out.json(&json!({"a": [1]}), false).unwrap();
            out.text("end").unwrap();
            out.flush().unwrap();
        }
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "2 tools\n{\"a\":[1]}\nend"
        );
    }

    /// A writer whose reader has gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
    }

    #[test]
    fn a_closed_pipe_comes_back_as_an_output_error() {
        let mut out = Out::new(Closed);
        let big = "x".repeat(200_000);
        let err = out.text(&big).unwrap_err();
        assert!(err.is_closed_pipe(), "{err:?}");
    }
}
