//! `toolgate serve` over stdio, spoken to line by line as an MCP client would: for tests that
//! need one running server across several requests (and the Python SDK is more than they need).

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::toolgate_exe;

/// A running `toolgate serve` over stdio, initialized; killed when dropped.
pub struct StdioServe {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioServe {
    /// `toolgate serve ARGS` (no `RUST_LOG`, its stderr dropped) with `envs` set, after the
    /// `initialize` handshake.
    pub fn start<A, K, V>(args: &[A], envs: &[(K, V)]) -> StdioServe
    where
        A: AsRef<OsStr>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let mut command = Command::new(toolgate_exe());
        command.arg("serve").args(args).env_remove("RUST_LOG");
        for (k, v) in envs {
            command.env(k, v);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut serve = StdioServe {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        serve.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "e2e", "version": "0"}
            }),
        );
        serve.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    /// Writes one message.
    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("serve reads its stdin");
        self.stdin.flush().expect("serve reads its stdin");
    }

    /// Sends a request and returns its response (skipping notifications and other messages);
    /// `None` when serve's output ended.
    pub fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let message: Value = serde_json::from_str(&line).expect("serve writes JSON lines");
            if message["id"] == id {
                return Some(message);
            }
        }
    }

    /// `tools/call` of `name` with `arguments`; the response (`None` when serve's output ended).
    pub fn call(&mut self, name: &str, arguments: Value) -> Option<Value> {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Waits for the process to end (after its output ended, to say how it ended).
    pub fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait()
    }
}

impl Drop for StdioServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
