//! `isolation: process` against a hostile plugin: the testkit's `escape` tool tries what a
//! plugin that wants out of its worker would try (signal or trace the host and other processes,
//! connect to Unix sockets, read files it was not granted or other processes' environments,
//! start processes that outlive it), and the sandbox refuses, whatever the grants (Linux).

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use toolgate_e2e::{Run, Toolgate, toolgate_exe};

/// No `grants:` at all.
const NO_GRANTS: &str = "";

/// Everything a policy can grant that could open a way out: the network, every file for
/// reading (`/proc` included) and starting processes.
const ALL_GRANTS: &str =
    "    grants:\n      fs_read: [/]\n      net: [127.0.0.1]\n      subprocess: true\n";

/// The grant sets every escape is tried under.
const GRANT_SETS: [&str; 2] = [NO_GRANTS, ALL_GRANTS];

fn testkit_library() -> PathBuf {
    toolgate_exe()
        .parent()
        .expect("the program is in a folder")
        .join(format!(
            "{}toolgate_plugin_testkit{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ))
}

/// A policy in `dir` that runs testkit in a worker with `grants` (lines under its entry).
fn policy(dir: &Path, grants: &str) -> String {
    let path = dir.join("escape.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\ndispatch:\n  timeout: 30s\nplugins:\n  - path: {}\n    isolation: process\n{grants}",
            testkit_library().display()
        ),
    )
    .expect("policy written");
    path.display().to_string()
}

/// `toolgate call --json escape ARGS` under `grants`; the host must end by itself (no signal)
/// within a minute.
fn escape(grants: &str, args: &serde_json::Value) -> Run {
    escape_with(grants, args, |t| t)
}

fn escape_with(
    grants: &str,
    args: &serde_json::Value,
    setup: impl FnOnce(Toolgate) -> Toolgate,
) -> Run {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let policy = policy(dir.path(), grants);
    let run = setup(Toolgate::new(&[
        "call",
        "--policy",
        &policy,
        "--json",
        "escape",
        &args.to_string(),
    ]))
    .run_within(Duration::from_secs(60));
    run.assert_no_panic();
    run
}

/// The attempt failed: the call is an error, with the system's answer in it.
#[track_caller]
fn assert_refused(run: &Run) {
    run.assert_code(1);
    assert_eq!(run.json()["is_error"], true, "{run:#?}");
}

/// A process of this test (so, of the same user as the worker) that sleeps until killed.
struct Bystander(std::process::Child);

impl Bystander {
    fn start() -> Self {
        Bystander(
            std::process::Command::new("sleep")
                .arg("120")
                .spawn()
                .expect("sleep starts"),
        )
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    #[track_caller]
    fn assert_alive(&mut self) {
        let status = self.0.try_wait().expect("sleep can be waited for");
        assert_eq!(status, None, "the bystander was killed");
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_tool_that_kills_its_parent_does_not_kill_the_host() {
    for grants in GRANT_SETS {
        // Before the sandbox, the host died of SIGKILL here (exit 137), which fails the run.
        let run = escape(grants, &serde_json::json!({"how": "kill_parent"}));
        assert_refused(&run);
    }
}

#[test]
fn a_tool_cannot_signal_another_process_of_the_same_user() {
    for grants in GRANT_SETS {
        let mut bystander = Bystander::start();
        let run = escape(
            grants,
            &serde_json::json!({"how": "kill", "pid": bystander.pid()}),
        );
        bystander.assert_alive();
        assert_refused(&run);
    }
}

/// A Unix socket listening at a path in `dir`, and whether anyone connected to it.
fn unix_listener(dir: &Path) -> (String, std::os::unix::net::UnixListener) {
    let path = dir.join("socket");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind a Unix socket");
    listener.set_nonblocking(true).expect("non-blocking");
    (path.display().to_string(), listener)
}

#[track_caller]
fn assert_nobody_connected(listener: &std::os::unix::net::UnixListener) {
    let accepted = listener.accept();
    assert!(
        accepted
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "someone connected: {accepted:?}"
    );
}

#[test]
fn without_a_net_grant_a_tool_cannot_connect_to_a_unix_socket() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (path, listener) = unix_listener(dir.path());
    let run = escape(
        "    grants:\n      subprocess: true\n",
        &serde_json::json!({"how": "unix_connect", "path": path}),
    );
    assert_refused(&run);
    assert_nobody_connected(&listener);
}

#[test]
fn with_a_net_grant_a_tool_cannot_connect_to_a_unix_socket() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (path, listener) = unix_listener(dir.path());
    let run = escape(
        ALL_GRANTS,
        &serde_json::json!({"how": "unix_connect", "path": path}),
    );
    assert_refused(&run);
    assert_nobody_connected(&listener);
}

#[test]
fn with_a_net_grant_a_tool_cannot_connect_to_an_abstract_unix_socket() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("toolgate-escape-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
        .expect("an abstract name");
    let listener =
        std::os::unix::net::UnixListener::bind_addr(&addr).expect("bind an abstract socket");
    listener.set_nonblocking(true).expect("non-blocking");
    let run = escape(
        ALL_GRANTS,
        &serde_json::json!({"how": "abstract_connect", "name": name}),
    );
    assert_refused(&run);
    assert_nobody_connected(&listener);
}

#[test]
fn no_grant_lets_a_tool_read_the_environment_of_the_host_or_other_processes() {
    let needle = format!("needle-{}-{:?}", std::process::id(), Instant::now());
    for grants in GRANT_SETS {
        let run = escape_with(
            grants,
            &serde_json::json!({"how": "scan_environ", "needle": needle}),
            |t| t.env("TOOLGATE_TEST_SECRET", &needle),
        );
        // Refused outright (`/proc` cannot be listed), or listed with nothing found.
        let text = run.json()["content"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let found = text
            .split_once("found the needle in: [")
            .is_some_and(|(_, pids)| !pids.starts_with(']'));
        assert!(!found, "the host's environment was read: {run:#?}");
        assert!(
            text.contains("found the needle in: []") || text.contains("Permission denied"),
            "{run:#?}"
        );
    }
}

#[test]
fn without_grants_a_tool_cannot_read_a_file() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "not for plugins").expect("secret written");
    let run = escape(
        NO_GRANTS,
        &serde_json::json!({"how": "read", "path": secret.display().to_string()}),
    );
    assert_refused(&run);
    assert!(run.stdout.contains("Permission denied"), "{run:#?}");
}

#[test]
fn without_grants_a_tool_cannot_read_shared_memory_of_other_processes() {
    let segment = PathBuf::from(format!("/dev/shm/toolgate-escape-{}", std::process::id()));
    std::fs::write(&segment, "shared secret").expect("a segment in /dev/shm");
    let run = escape(
        NO_GRANTS,
        &serde_json::json!({"how": "read", "path": segment.display().to_string()}),
    );
    let _ = std::fs::remove_file(&segment);
    assert_refused(&run);
    assert!(run.stdout.contains("Permission denied"), "{run:#?}");
}

/// A process name that no other test uses.
fn tag(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .subsec_nanos();
    let mut tag = format!("tg{test}{:x}", nanos ^ std::process::id());
    tag.truncate(15);
    tag
}

/// The processes named `tag` (`/proc/PID/comm`).
fn named(tag: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
            (comm.trim_end() == tag).then_some(pid)
        })
        .collect()
}

/// Waits until no process is named `tag`, for `limit` at most; the ones still there.
fn left_after(tag: &str, limit: Duration) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let left = named(tag);
        if left.is_empty() || start.elapsed() > limit {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn without_a_subprocess_grant_a_tool_cannot_start_a_process() {
    let tag = tag("nosub");
    let run = escape(
        "    grants:\n      net: [127.0.0.1]\n",
        &serde_json::json!({"how": "fork", "count": 300, "tag": tag}),
    );
    assert_refused(&run);
    assert!(
        run.stdout.contains("fork failed after 0 processes"),
        "{run:#?}"
    );
    assert_eq!(named(&tag), Vec::<u32>::new(), "processes were started");
}

#[test]
fn processes_a_tool_starts_end_with_its_worker() {
    let tag = tag("tree");
    let run = escape(
        ALL_GRANTS,
        &serde_json::json!({"how": "fork", "count": 5, "tag": tag}),
    );
    run.assert_code(0);
    // They left the worker's session; the host has ended, and with it the worker.
    let left = left_after(&tag, Duration::from_secs(10));
    assert_eq!(left, Vec::<u32>::new(), "outlived the host: {run:#?}");
}

/// `toolgate call --json escape ARGS` under `grants`, as a user other than root: as `nobody`
/// through `setpriv` when this test runs as root (the kernel does not count root's processes).
fn escape_as_a_user(grants: &str, args: &serde_json::Value) -> (i32, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("the folder opened to everyone");
    let policy = policy(dir.path(), grants);
    let call = [
        "call",
        "--policy",
        &policy,
        "--json",
        "escape",
        &args.to_string(),
    ];
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mut command = if root {
        let mut setpriv = std::process::Command::new("setpriv");
        setpriv
            .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(toolgate_exe());
        setpriv
    } else {
        std::process::Command::new(toolgate_exe())
    };
    let output = command
        .args(call)
        .current_dir(dir.path())
        .env("TOOLGATE_RESULTS_DIR", dir.path())
        .output()
        .expect("toolgate starts");
    (
        output.status.code().expect("toolgate ends by itself"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn with_a_subprocess_grant_a_fork_bomb_stops_at_the_task_limit() {
    let tag = tag("bomb");
    let (code, stdout) = escape_as_a_user(
        ALL_GRANTS,
        &serde_json::json!({"how": "fork", "count": 1000, "tag": tag}),
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("fork failed after"), "{stdout}");
    let started: u32 = stdout
        .split("fork failed after ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(started < 512, "{started} processes started");
    assert_eq!(left_after(&tag, Duration::from_secs(10)), Vec::<u32>::new());
}

#[test]
fn without_a_subprocess_grant_a_tool_cannot_run_a_program() {
    let run = escape(
        "    grants:\n      net: [127.0.0.1]\n",
        &serde_json::json!({"how": "run", "program": "/usr/bin/true"}),
    );
    assert_refused(&run);
    assert!(run.stdout.contains("cannot run /usr/bin/true"), "{run:#?}");
}

#[test]
fn with_a_subprocess_grant_a_tool_runs_a_program() {
    let run = escape(
        "    grants:\n      subprocess: true\n",
        &serde_json::json!({"how": "run", "program": "/usr/bin/true"}),
    );
    run.assert_code(0);
    assert!(
        run.stdout.contains("/usr/bin/true ended: exit status: 0"),
        "{run:#?}"
    );
}
