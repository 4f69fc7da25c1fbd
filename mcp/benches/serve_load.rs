//! Throughput and latency of `toolgate serve` against FastMCP, and the time a policy reload
//! takes to serve. Not a criterion benchmark: the numbers come from real servers in other
//! processes, driven over stdio and Streamable HTTP by a load generator written for this (in
//! Rust, so that the generator is not what is measured). Run it with `bash scripts/bench-serve.sh`,
//! which builds the release program first.
//!
//! What is measured, for each server, transport and number of concurrent clients (1, 16, 256):
//! calls per second and p50/p99 latency of `tools/call echo {"text": "hello"}`, each client
//! sending its next call when the previous one is answered. Over stdio the clients share the
//! one connection a stdio server has (requests interleave, answers are matched by id); over
//! HTTP each client has its own MCP session and its own keep-alive connection.
//!
//! Servers: `toolgate serve` (the testkit plugin's echo behind the whole guard), a bare `rmcp`
//! server with the same echo and no guard (this program itself, `--bare-stdio`: the gateway
//! hop is toolgate minus this), the same bare server on stdio read and written by the event loop
//! (`--bare-stdio-pipes`; toolgate's stdio works that way, rmcp's `stdio()` runs each read and
//! write on a blocking thread), FastMCP serving an echo tool directly, and a FastMCP proxy in
//! front of that FastMCP server.
//!
//! `--also LABEL=PATH` (any number of times) measures other toolgate builds in the same run,
//! for before/after figures on one machine under one load; `--also-policy LABEL=POLICY`
//! measures this build serving another policy (`scripts/bench/echo-telemetry.yaml`: traces and
//! metrics on), and `--also-build-policy LABEL=PATH,POLICY` another build serving it.
//!
//! Authentication (issue 27): over HTTP, `toolgate serve, API key` and `toolgate serve, JWT`
//! run the same policy with an `auth:` section, each client sending `Authorization: Bearer` with
//! an API key or an EdDSA-signed JWT (checked against a JWKS file), beside `toolgate serve`
//! without authentication: the cost of authentication on the hop is the difference.
//!
//! `--clients 1,16` measures only those numbers of concurrent clients (default 1, 16, 256).
//!
//! Each row also gives the server's CPU time a call: the CPU time of the server process (all
//! its threads; not processes it starts, such as the FastMCP proxy's upstream) over the
//! measured window, read from `/proc/<pid>/stat`, divided by the calls answered in it. On a
//! small shared machine this says what a change costs the server more steadily than latency,
//! which also carries the scheduling of the client and the server on the same cores.
//!
//! Reload: the time from writing a new policy (an alias `say_N` for echo) to the first call of
//! `say_N` that succeeds, and the failed calls of 16 clients calling echo while the policy is
//! reloaded 1,000 times.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

type Error = Box<dyn std::error::Error + Send + Sync>;

const ECHO: &str = r#"{"name":"echo","arguments":{"text":"hello"}}"#;

fn initialize(id: u64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "serve-load", "version": "1"}}})
    .to_string()
}

const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn call(id: u64, params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
}

/// Whether a JSON-RPC answer is a tool result that is not an error.
fn succeeded(answer: &Value) -> bool {
    answer
        .get("result")
        .is_some_and(|r| r.get("isError") != Some(&Value::Bool(true)))
}

// ---------------------------------------------------------------------------------------------
// stdio: one connection, many requests in flight

struct StdioConn {
    out: mpsc::UnboundedSender<String>,
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>,
    ids: AtomicU64,
    _child: Child,
}

impl StdioConn {
    async fn start(
        program: &Path,
        args: &[String],
        env: &[(String, String)],
    ) -> Result<Self, Error> {
        let mut child = Command::new(program)
            .args(args)
            .envs(env.iter().cloned())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (out, mut rx) = mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            while let Some(mut line) = rx.recv().await {
                line.push('\n');
                // Batch what is queued into one write.
                while let Ok(more) = rx.try_recv() {
                    line.push_str(&more);
                    line.push('\n');
                }
                if stdin.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
        let waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>> = Arc::default();
        let routes = Arc::clone(&waiting);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(value) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let Some(id) = value.get("id").and_then(Value::as_u64) else {
                    continue;
                };
                if value.get("method").is_some() {
                    continue; // a request from the server (none expected)
                }
                if let Some(tx) = routes.lock().ok().and_then(|mut m| m.remove(&id)) {
                    let _ = tx.send(value);
                }
            }
        });
        let conn = StdioConn {
            out,
            waiting,
            ids: AtomicU64::new(1),
            _child: child,
        };
        let init = conn.request_raw(initialize).await?;
        if init.get("result").is_none() {
            return Err(format!("initialize failed: {init}").into());
        }
        conn.out.send(INITIALIZED.to_owned())?;
        Ok(conn)
    }

    async fn request_raw(&self, make: impl FnOnce(u64) -> String) -> Result<Value, Error> {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().map_err(|_| "poisoned")?.insert(id, tx);
        self.out.send(make(id))?;
        Ok(tokio::time::timeout(Duration::from_secs(60), rx).await??)
    }

    async fn call(&self, params: &str) -> Result<Value, Error> {
        self.request_raw(|id| call(id, params)).await
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP: one session and one keep-alive connection per client

struct HttpConn {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    url: http::Uri,
    session: Option<String>,
    ids: u64,
    /// `Authorization: Bearer <this>` on every request, when the server asks for it.
    bearer: Option<String>,
}

impl HttpConn {
    async fn start(url: &str, bearer: Option<String>) -> Result<Self, Error> {
        let url: http::Uri = url.parse()?;
        let authority = url.authority().ok_or("no host")?.to_string();
        let stream = tokio::net::TcpStream::connect(&authority).await?;
        stream.set_nodelay(true)?;
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let mut this = HttpConn {
            sender,
            url,
            session: None,
            ids: 1,
            bearer,
        };
        let (init, session) = this.post(initialize(0)).await?;
        if init.as_ref().and_then(|v| v.get("result")).is_none() {
            return Err(format!("initialize failed: {init:?}").into());
        }
        this.session = session;
        this.post(INITIALIZED.to_owned()).await?;
        Ok(this)
    }

    /// Posts one message; answers the JSON-RPC answer in the body (plain JSON or an SSE event)
    /// and the session id the server gave.
    async fn post(&mut self, body: String) -> Result<(Option<Value>, Option<String>), Error> {
        let path = self.url.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let mut request = http::Request::post(path)
            .header(
                "host",
                self.url
                    .authority()
                    .map(|a| a.as_str())
                    .unwrap_or("127.0.0.1"),
            )
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(bearer) = &self.bearer {
            request = request.header("authorization", format!("Bearer {bearer}"));
        }
        self.sender.ready().await?;
        let response = self
            .sender
            .send_request(request.body(Full::new(Bytes::from(body)))?)
            .await?;
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&bytes)).into());
        }
        let text = String::from_utf8_lossy(&bytes);
        let answer = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .chain(std::iter::once(text.as_ref()))
            .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
            .find(|v| v.get("id").is_some());
        Ok((answer, session))
    }

    async fn call(&mut self, params: &str) -> Result<Value, Error> {
        self.ids += 1;
        let (answer, _) = self.post(call(self.ids, params)).await?;
        answer.ok_or_else(|| "no answer in the body".into())
    }
}

// ---------------------------------------------------------------------------------------------
// servers

#[derive(Clone)]
struct Paths {
    toolgate: PathBuf,
    /// Other toolgate builds to measure in the same run (`--also LABEL=PATH`), for before/after,
    /// or this build under another policy (`--also-policy LABEL=POLICY`), with that policy.
    others: Vec<(String, PathBuf, Option<PathBuf>)>,
    python: PathBuf,
    fastmcp: PathBuf,
    policy: PathBuf,
    results: PathBuf,
    /// The policy with an API key, and the key.
    key_policy: PathBuf,
    key: String,
    /// The policy with a JWT issuer (a JWKS file), and a token of it.
    jwt_policy: PathBuf,
    jwt: String,
    /// The API key policy with local rate limits, a concurrency gate and an audit file: the
    /// team gateway's whole hop (issue 27's goal: < 150 µs p50 over HTTP). Same key.
    team_policy: PathBuf,
}

#[derive(Clone, Copy, PartialEq)]
enum Target {
    Toolgate,
    /// `toolgate serve` whose policy asks for an API key (HTTP only).
    ToolgateKey,
    /// `toolgate serve` whose policy asks for a JWT (HTTP only).
    ToolgateJwt,
    /// `toolgate serve` with an API key, local limits and an audit file (HTTP only).
    ToolgateTeam,
    /// The `i`th of `Paths::others`.
    Other(usize),
    Bare,
    /// The bare server on stdin and stdout read and written by the event loop (as toolgate's
    /// stdio is), not tokio's stdin/stdout (a blocking thread per read and per write).
    BarePipes,
    Fastmcp,
    FastmcpProxy,
}

impl Target {
    fn name(self, p: &Paths) -> String {
        match self {
            Target::Toolgate => "toolgate serve".to_owned(),
            Target::ToolgateKey => "toolgate serve, API key".to_owned(),
            Target::ToolgateJwt => "toolgate serve, JWT".to_owned(),
            Target::ToolgateTeam => "toolgate serve, API key + limits + audit".to_owned(),
            Target::Other(i) => format!("toolgate serve ({})", p.others[i].0),
            _ => self.static_name().to_owned(),
        }
    }

    fn static_name(self) -> &'static str {
        match self {
            Target::Toolgate | Target::Other(_) => "toolgate serve",
            Target::ToolgateKey => "toolgate serve, API key",
            Target::ToolgateJwt => "toolgate serve, JWT",
            Target::ToolgateTeam => "toolgate serve, API key + limits + audit",
            Target::Bare => "rmcp, no guard",
            Target::BarePipes => "rmcp, no guard, event-loop stdio",
            Target::Fastmcp => "FastMCP",
            Target::FastmcpProxy => "FastMCP proxy",
        }
    }

    fn stdio_command(self, p: &Paths) -> (PathBuf, Vec<String>) {
        let s = |x: &str| x.to_owned();
        match self {
            Target::Toolgate
            | Target::Other(_)
            | Target::ToolgateKey
            | Target::ToolgateJwt
            | Target::ToolgateTeam => (
                self.program(p),
                vec![
                    s("serve"),
                    s("--policy"),
                    self.policy(p).0.display().to_string(),
                    s("-q"),
                ],
            ),
            Target::Bare => (
                std::env::current_exe().unwrap_or_default(),
                vec![s("--bare-stdio")],
            ),
            Target::BarePipes => (
                std::env::current_exe().unwrap_or_default(),
                vec![s("--bare-stdio-pipes")],
            ),
            Target::Fastmcp => (
                p.python.clone(),
                vec![p.fastmcp.display().to_string(), s("direct"), s("stdio")],
            ),
            Target::FastmcpProxy => (
                p.python.clone(),
                vec![p.fastmcp.display().to_string(), s("proxy"), s("stdio")],
            ),
        }
    }
}

impl Target {
    /// The toolgate binary this target runs.
    fn program(self, p: &Paths) -> PathBuf {
        match self {
            Target::Other(i) => p.others[i].1.clone(),
            _ => p.toolgate.clone(),
        }
    }

    /// The policy this toolgate target serves, and the credential its clients send.
    fn policy(self, p: &Paths) -> (PathBuf, Option<String>) {
        match self {
            Target::ToolgateKey => (p.key_policy.clone(), Some(p.key.clone())),
            Target::ToolgateJwt => (p.jwt_policy.clone(), Some(p.jwt.clone())),
            Target::ToolgateTeam => (p.team_policy.clone(), Some(p.key.clone())),
            Target::Other(i) => (
                p.others[i].2.clone().unwrap_or_else(|| p.policy.clone()),
                None,
            ),
            _ => (p.policy.clone(), None),
        }
    }
}

/// Starts `target` over HTTP; answers the process and its URL.
async fn start_http(target: Target, p: &Paths) -> Result<(Child, String), Error> {
    match target {
        Target::Toolgate
        | Target::Other(_)
        | Target::ToolgateKey
        | Target::ToolgateJwt
        | Target::ToolgateTeam => {
            let mut child = Command::new(target.program(p))
                .args(["serve", "--policy"])
                .arg(target.policy(p).0)
                .args(["--http", "127.0.0.1:0", "-q", "--max-sessions", "1024"])
                .env("TOOLGATE_RESULTS_DIR", &p.results)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()?;
            let mut lines = BufReader::new(child.stderr.take().ok_or("no stderr")?).lines();
            while let Some(line) = lines.next_line().await? {
                if let Some(at) = line.find("listening on ") {
                    let url = line[at + "listening on ".len()..].trim().to_owned();
                    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
                    return Ok((child, url));
                }
            }
            Err("toolgate serve did not listen".into())
        }
        Target::Fastmcp | Target::FastmcpProxy => {
            let port = free_port()?;
            let kind = if target == Target::Fastmcp {
                "direct"
            } else {
                "proxy"
            };
            let child = Command::new(&p.python)
                .arg(&p.fastmcp)
                .args([kind, "http", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()?;
            let url = format!("http://127.0.0.1:{port}/mcp");
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
                {
                    return Ok((child, url));
                }
                if Instant::now() > deadline {
                    return Err("FastMCP did not listen within 60 s".into());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Target::Bare | Target::BarePipes => Err("the bare server is stdio only".into()),
    }
}

fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

// ---------------------------------------------------------------------------------------------
// load

#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    failed: u64,
}

struct Figures {
    calls_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    failed: u64,
    calls: usize,
    /// The server process's CPU time (all its threads) in the measured window over the calls
    /// answered in it: what a call costs the server, which latency on two shared cores hides
    /// in scheduling noise. `None` when the server's `/proc` entry could not be read.
    server_cpu_us: Option<f64>,
}

/// CPU time the process `pid` has used so far, user and system, all its threads (those that
/// ended too), from `/proc/<pid>/stat`, in clock ticks of 1/100 s (Linux reports `/proc` times
/// in `USER_HZ`, 100 on every architecture it exposes to user space).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After "pid (comm) ": state is the first field, utime the 12th and stime the 13th.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The server's CPU ticks over `[start, end)`, read by a task that waits for both instants.
fn watch_cpu(
    pid: Option<u32>,
    start: Instant,
    end: Instant,
) -> tokio::task::JoinHandle<Option<u64>> {
    tokio::spawn(async move {
        let pid = pid?;
        tokio::time::sleep_until(start.into()).await;
        let before = cpu_ticks(pid)?;
        tokio::time::sleep_until(end.into()).await;
        Some(cpu_ticks(pid)?.saturating_sub(before))
    })
}

fn figures(mut tally: Tally, elapsed: Duration, cpu_ticks: Option<u64>) -> Figures {
    tally.latencies.sort_unstable();
    let at = |q: f64| {
        let n = tally.latencies.len();
        if n == 0 {
            return f64::NAN;
        }
        tally.latencies[((n as f64 * q) as usize).min(n - 1)].as_secs_f64() * 1e6
    };
    Figures {
        calls_per_s: tally.latencies.len() as f64 / elapsed.as_secs_f64(),
        p50_us: at(0.50),
        p99_us: at(0.99),
        failed: tally.failed,
        calls: tally.latencies.len(),
        server_cpu_us: cpu_ticks
            .filter(|_| !tally.latencies.is_empty())
            .map(|ticks| ticks as f64 * 10_000.0 / tally.latencies.len() as f64),
    }
}

async fn load_stdio(
    conn: Arc<StdioConn>,
    clients: usize,
    warmup: Duration,
    measure: Duration,
) -> Figures {
    let start = Instant::now() + warmup;
    let end = start + measure;
    let cpu = watch_cpu(conn._child.id(), start, end);
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let conn = Arc::clone(&conn);
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                let ok = conn
                    .call(ECHO)
                    .await
                    .map(|a| succeeded(&a))
                    .unwrap_or(false);
                if sent >= start {
                    if ok {
                        tally.latencies.push(sent.elapsed())
                    } else {
                        tally.failed += 1
                    }
                }
            }
            tally
        }));
    }
    gather(tasks, measure, cpu).await
}

async fn load_http(
    url: &str,
    bearer: Option<String>,
    server: Option<u32>,
    clients: usize,
    warmup: Duration,
    measure: Duration,
) -> Result<Figures, Error> {
    let mut conns = Vec::new();
    for _ in 0..clients {
        conns.push(HttpConn::start(url, bearer.clone()).await?);
    }
    let start = Instant::now() + warmup;
    let end = start + measure;
    let cpu = watch_cpu(server, start, end);
    let mut tasks = Vec::new();
    for mut conn in conns {
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                let ok = conn
                    .call(ECHO)
                    .await
                    .map(|a| succeeded(&a))
                    .unwrap_or(false);
                if sent >= start {
                    if ok {
                        tally.latencies.push(sent.elapsed())
                    } else {
                        tally.failed += 1
                    }
                }
            }
            tally
        }));
    }
    Ok(gather(tasks, measure, cpu).await)
}

async fn gather(
    tasks: Vec<tokio::task::JoinHandle<Tally>>,
    measure: Duration,
    cpu: tokio::task::JoinHandle<Option<u64>>,
) -> Figures {
    let mut all = Tally::default();
    for t in tasks {
        if let Ok(t) = t.await {
            all.latencies.extend(t.latencies);
            all.failed += t.failed;
        }
    }
    figures(all, measure, cpu.await.ok().flatten())
}

// ---------------------------------------------------------------------------------------------
// reload

const RELOAD_POLICY: &str = "version: 1\ndispatch: {timeout: 30s}\nplugins:\n  - name: testkit\n";

fn write_policy(path: &Path, n: u64) -> std::io::Result<()> {
    // Written aside and renamed over, as editors save.
    let aside = path.with_extension("yaml.new");
    std::fs::write(
        &aside,
        format!("{RELOAD_POLICY}aliases:\n  echo: {{names: [say_{n}]}}\n"),
    )?;
    std::fs::rename(aside, path)
}

async fn reload_figures(
    p: &Paths,
    rounds: u64,
    clients: usize,
) -> Result<(Vec<Duration>, u64, u64), Error> {
    let dir = p.results.join("reload");
    std::fs::create_dir_all(&dir)?;
    let policy = dir.join("policy.yaml");
    write_policy(&policy, 0)?;
    let args = vec![
        "serve".to_owned(),
        "--policy".to_owned(),
        policy.display().to_string(),
        "-q".to_owned(),
    ];
    let env = vec![(
        "TOOLGATE_RESULTS_DIR".to_owned(),
        p.results.display().to_string(),
    )];
    let conn = Arc::new(StdioConn::start(&p.toolgate, &args, &env).await?);
    // The load: clients calling echo for as long as the reloads go on.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut load = Vec::new();
    for _ in 0..clients {
        let (conn, stop) = (Arc::clone(&conn), Arc::clone(&stop));
        load.push(tokio::spawn(async move {
            let (mut ok, mut failed) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                match conn.call(ECHO).await {
                    Ok(a) if succeeded(&a) => ok += 1,
                    _ => failed += 1,
                }
            }
            (ok, failed)
        }));
    }
    let mut times = Vec::new();
    for n in 1..=rounds {
        let params = format!(r#"{{"name":"say_{n}","arguments":{{"text":"hello"}}}}"#);
        let written = Instant::now();
        write_policy(&policy, n)?;
        loop {
            if succeeded(&conn.call(&params).await?) {
                times.push(written.elapsed());
                break;
            }
            if written.elapsed() > Duration::from_secs(30) {
                return Err(format!("reload {n} never served").into());
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let (mut ok, mut failed) = (0, 0);
    for t in load {
        let (o, f) = t.await?;
        ok += o;
        failed += f;
    }
    Ok((times, ok, failed))
}

// ---------------------------------------------------------------------------------------------
// the bare rmcp server (the baseline without toolgate)

mod bare {
    use rmcp::ErrorData as McpError;
    use rmcp::ServiceExt;
    use rmcp::handler::server::ServerHandler;
    use rmcp::model::*;
    use rmcp::service::{RequestContext, RoleServer};
    use std::sync::Arc;

    pub struct Echo;

    impl ServerHandler for Echo {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn list_tools(
            &self,
            _r: Option<PaginatedRequestParams>,
            _c: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, McpError> {
            let schema =
                serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}});
            let serde_json::Value::Object(schema) = schema else {
                unreachable!()
            };
            Ok(ListToolsResult::with_all_items(vec![Tool::new(
                "echo",
                "Echo.",
                Arc::new(schema),
            )]))
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _c: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, McpError> {
            let text = request
                .arguments
                .and_then(|a| a.get("text").and_then(|t| t.as_str().map(str::to_owned)))
                .unwrap_or_default();
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        }
    }

    pub async fn serve() -> Result<(), Box<dyn std::error::Error>> {
        let running = Echo.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        Ok(())
    }

    /// The same on stdin and stdout as pipes the event loop watches (they must be pipes).
    pub async fn serve_pipes() -> Result<(), Box<dyn std::error::Error>> {
        use std::os::fd::AsFd;
        use tokio::net::unix::pipe;
        let stdin = pipe::Receiver::from_owned_fd(std::io::stdin().as_fd().try_clone_to_owned()?)?;
        let stdout = pipe::Sender::from_owned_fd(std::io::stdout().as_fd().try_clone_to_owned()?)?;
        let running = Echo.serve((stdin, stdout)).await?;
        running.waiting().await?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------

fn main() -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if std::env::args().any(|a| a == "--bare-stdio-pipes") {
        return runtime
            .block_on(bare::serve_pipes())
            .map_err(|e| e.to_string().into());
    }
    if std::env::args().any(|a| a == "--bare-stdio") {
        return runtime
            .block_on(bare::serve())
            .map_err(|e| e.to_string().into());
    }
    runtime.block_on(run())
}

/// `--also LABEL=PATH`, any number of times: other toolgate binaries measured beside this
/// tree's, each row named `toolgate serve (LABEL)`.
/// `--also-policy LABEL=POLICY`: this tree's toolgate serving POLICY (the telemetry figures:
/// the same build with `telemetry:` on and off).
/// `--also-build-policy LABEL=PATH,POLICY`: another build serving POLICY (the telemetry
/// figures of a build before a change, beside this one's).
fn also(toolgate: &Path) -> Vec<(String, PathBuf, Option<PathBuf>)> {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2)
        .filter_map(|w| {
            let (label, path) = w[1].split_once('=')?;
            match w[0].as_str() {
                "--also" => Some((label.to_owned(), PathBuf::from(path), None)),
                "--also-policy" => Some((
                    label.to_owned(),
                    toolgate.to_path_buf(),
                    Some(PathBuf::from(path)),
                )),
                "--also-build-policy" => {
                    let (build, policy) = path.split_once(',')?;
                    Some((
                        label.to_owned(),
                        PathBuf::from(build),
                        Some(PathBuf::from(policy)),
                    ))
                }
                _ => None,
            }
        })
        .collect()
}

/// What [`auth_policies`] writes: the API key policy and its key, the JWT policy and a token,
/// and the team policy (the API key's, with limits and audit).
struct AuthPolicies {
    key_policy: PathBuf,
    key: String,
    jwt_policy: PathBuf,
    jwt: String,
    team_policy: PathBuf,
}

/// The benchmark's policy with an API key, with a JWT issuer (a JWKS file), and with the API
/// key plus local limits and an audit file, written into `dir`; with the key and a token
/// (valid for an hour) the clients send. The team policy's limits never refuse a call of the
/// benchmark (a rate far above what one machine serves, a concurrency gate as wide as the
/// most clients): what is measured is their checks, not their refusals.
fn auth_policies(policy: &Path, dir: &Path) -> Result<AuthPolicies, Error> {
    use jsonwebtoken::jwk::{Jwk, JwkSet};
    use jsonwebtoken::{Algorithm, EncodingKey, Header};

    let base = std::fs::read_to_string(policy)?;
    let (key, sha256) = toolgate_mcp::serve::new_api_key()?;
    let key_policy = dir.join("echo-key.yaml");
    std::fs::write(
        &key_policy,
        format!("{base}\nauth:\n  api_keys:\n    - {{principal: bench, sha256: {sha256}}}\n"),
    )?;
    // An Ed25519 key as PKCS#8 v1: the fixed prefix, then a random 32-byte seed.
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)?;
    der.extend_from_slice(&seed);
    let signing = EncodingKey::from_ed_der(&der);
    let mut jwk = Jwk::from_encoding_key(&signing, Algorithm::EdDSA)?;
    jwk.common.key_id = Some("bench".to_owned());
    let jwks = dir.join("jwks.json");
    std::fs::write(&jwks, serde_json::to_string(&JwkSet { keys: vec![jwk] })?)?;
    let jwt_policy = dir.join("echo-jwt.yaml");
    std::fs::write(
        &jwt_policy,
        format!(
            "{base}\nauth:\n  jwt:\n    issuer: https://issuer.bench\n    audience: bench\n    jwks_file: {}\n",
            jwks.display()
        ),
    )?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("bench".to_owned());
    let claims = json!({"iss": "https://issuer.bench", "aud": "bench", "sub": "bench",
        "exp": now + 3600, "iat": now, "groups": ["bench"]});
    let jwt = jsonwebtoken::encode(&header, &claims, &signing)?;
    let team_policy = dir.join("echo-team.yaml");
    std::fs::write(
        &team_policy,
        format!(
            "{base}\nauth:\n  api_keys:\n    - {{principal: bench, sha256: {sha256}}}\n\
             limits:\n  rates:\n    - {{tools: [echo], rate: 10000000/s}}\n\
             \x20 concurrency:\n    per_principal: 256\n    total: 256\n\
             audit:\n  path: {}\n",
            dir.join("audit.jsonl").display()
        ),
    )?;
    Ok(AuthPolicies {
        key_policy,
        key,
        jwt_policy,
        jwt,
        team_policy,
    })
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

async fn run() -> Result<(), Error> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no repository root")?
        .to_path_buf();
    let results = tempfile::tempdir()?;
    let policy = root.join("scripts/bench/echo.yaml");
    let AuthPolicies {
        key_policy,
        key,
        jwt_policy,
        jwt,
        team_policy,
    } = auth_policies(&policy, results.path())?;
    let toolgate = root.join("target/release/toolgate");
    let paths = Paths {
        others: also(&toolgate),
        toolgate,
        python: root.join(".tools/venv/bin/python"),
        fastmcp: root.join("scripts/bench/fastmcp_echo.py"),
        policy,
        results: results.path().to_path_buf(),
        key_policy,
        key,
        jwt_policy,
        jwt,
        team_policy,
    };
    let others = paths.others.iter().map(|(_, p, _)| p);
    for needed in [&paths.toolgate, &paths.python].into_iter().chain(others) {
        if !needed.is_file() {
            return Err(format!(
                "{} is missing: run scripts/bench-serve.sh",
                needed.display()
            )
            .into());
        }
    }
    let seconds: f64 = arg("--seconds").and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let warmup = Duration::from_secs(1);
    let measure = Duration::from_secs_f64(seconds);
    let reloads: u64 = arg("--reloads")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let only = arg("--only");
    // `--clients 1,16`: only these numbers of concurrent clients (default 1, 16 and 256).
    let client_counts: Vec<usize> = arg("--clients")
        .map(|list| {
            list.split(',')
                .filter_map(|n| n.trim().parse().ok())
                .collect()
        })
        .filter(|counts: &Vec<usize>| !counts.is_empty())
        .unwrap_or_else(|| vec![1, 16, 256]);
    let mut rows: Vec<Value> = Vec::new();
    println!(
        "| server | transport | clients | calls/s | p50 µs | p99 µs | failed | server CPU µs/call |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    let targets: Vec<Target> = [
        Target::Toolgate,
        Target::ToolgateKey,
        Target::ToolgateJwt,
        Target::ToolgateTeam,
    ]
    .into_iter()
    .chain((0..paths.others.len()).map(Target::Other))
    .chain([
        Target::Bare,
        Target::BarePipes,
        Target::Fastmcp,
        Target::FastmcpProxy,
    ])
    .collect();
    for transport in ["stdio", "http"] {
        for &target in &targets {
            if transport == "http" && matches!(target, Target::Bare | Target::BarePipes) {
                continue;
            }
            if transport == "stdio"
                && matches!(
                    target,
                    Target::ToolgateKey | Target::ToolgateJwt | Target::ToolgateTeam
                )
            {
                continue;
            }
            if only
                .as_deref()
                .is_some_and(|o| !target.name(&paths).contains(o))
            {
                continue;
            }
            for &clients in &client_counts {
                let result = match transport {
                    "stdio" => {
                        let (program, args) = target.stdio_command(&paths);
                        let env = vec![(
                            "TOOLGATE_RESULTS_DIR".to_owned(),
                            paths.results.display().to_string(),
                        )];
                        match StdioConn::start(&program, &args, &env).await {
                            Ok(conn) => {
                                Ok(load_stdio(Arc::new(conn), clients, warmup, measure).await)
                            }
                            Err(e) => Err(e),
                        }
                    }
                    _ => match start_http(target, &paths).await {
                        Ok((child, url)) => {
                            let bearer = target.policy(&paths).1;
                            load_http(&url, bearer, child.id(), clients, warmup, measure).await
                        }
                        Err(e) => Err(e),
                    },
                };
                match result {
                    Ok(f) => {
                        let cpu = f
                            .server_cpu_us
                            .map_or_else(|| "-".to_owned(), |us| format!("{us:.1}"));
                        println!(
                            "| {} | {transport} | {clients} | {:.0} | {:.0} | {:.0} | {} | {cpu} |",
                            target.name(&paths),
                            f.calls_per_s,
                            f.p50_us,
                            f.p99_us,
                            f.failed
                        );
                        rows.push(json!({"server": target.name(&paths), "transport": transport, "clients": clients,
                            "calls_per_s": f.calls_per_s, "p50_us": f.p50_us, "p99_us": f.p99_us,
                            "failed": f.failed, "calls": f.calls,
                            "server_cpu_us_per_call": f.server_cpu_us}));
                    }
                    Err(e) => println!(
                        "| {} | {transport} | {clients} | error: {e} | | | | |",
                        target.name(&paths)
                    ),
                }
            }
        }
    }
    if reloads > 0 && only.is_none() {
        let (mut times, ok, failed) = reload_figures(&paths, reloads, 16).await?;
        times.sort_unstable();
        let q = |q: f64| {
            times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * 1e3
        };
        println!(
            "\nreload, file written to new policy serving ({} reloads under load of 16 clients): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; calls during the reloads: {ok} ok, {failed} failed",
            times.len(),
            q(0.5),
            q(0.99),
            q(1.0)
        );
        rows.push(
            json!({"reload": {"reloads": times.len(), "p50_ms": q(0.5), "p99_ms": q(0.99),
            "max_ms": q(1.0), "calls_ok": ok, "calls_failed": failed}}),
        );
    }
    let out = root.join("target/bench-serve.json");
    std::fs::write(&out, serde_json::to_string_pretty(&rows)?)?;
    println!("\nwritten to {}", out.display());
    Ok(())
}
