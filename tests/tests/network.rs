//! `net` grants under `isolation: process`: a worker whose plugin has no `net` grant has no
//! network (a new network namespace); one with a grant, and any plugin in process, has. The
//! testkit's `connect` tool opens a TCP connection to a listener of this test on 127.0.0.1.

use std::net::TcpListener;
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate, toolgate_exe};

/// A listener on an ephemeral port of 127.0.0.1 that accepts (and drops) connections for as
/// long as the test process runs; its `ip:port`.
fn listener() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr").to_string();
    std::thread::spawn(move || for _ in listener.incoming() {});
    addr
}

/// `toolgate call connect` on testkit with `extra` lines under its entry.
fn connect(extra: &str) -> Run {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let library = toolgate_exe()
        .parent()
        .expect("the program is in a folder")
        .join(format!(
            "{}toolgate_plugin_testkit{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
    let policy = dir.path().join("net.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nplugins:\n  - path: {}\n{extra}",
            library.display()
        ),
    )
    .expect("policy written");
    let args = format!(r#"{{"addr": "{}"}}"#, listener());
    Toolgate::new(&[
        "call",
        "--policy",
        &policy.display().to_string(),
        "connect",
        &args,
    ])
    .run_within(Duration::from_secs(60))
}

/// Why this system will not let a process make a user and network namespace, if it will not:
/// then a worker cannot leave the network, and says that only its seccomp filter keeps it from
/// sockets.
fn namespaces_refused() -> Option<String> {
    use std::os::unix::process::CommandExt;
    let mut probe = std::process::Command::new("/bin/sh");
    probe.args(["-c", "exit 0"]);
    // SAFETY: unshare takes flags only; the child is single-threaded after fork.
    unsafe {
        probe.pre_exec(|| {
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    match probe.status() {
        Ok(status) if status.success() => None,
        Ok(status) => Some(format!("the probe ended with {status}")),
        Err(err) => Some(err.to_string()),
    }
}

#[test]
fn an_isolated_plugin_without_a_net_grant_cannot_connect() {
    if let Some(why) = namespaces_refused() {
        eprintln!(
            "skipped: this system refuses a new user and network namespace ({why}), so the worker keeps the network and says so"
        );
        return;
    }
    let run = connect("    isolation: process\n");
    run.assert_code(1);
    assert!(
        run.stdout.contains("cannot connect to 127.0.0.1:"),
        "{run:#?}"
    );
    // Refused at `socket()` by the worker's seccomp filter; where the kernel has none, the
    // network namespace leaves it no route.
    assert!(
        run.stdout.contains("Operation not permitted") || run.stdout.contains("unreachable"),
        "{run:#?}"
    );
}

#[test]
fn an_isolated_plugin_with_grants_but_no_net_grant_cannot_connect() {
    if let Some(why) = namespaces_refused() {
        eprintln!(
            "skipped: this system refuses a new user and network namespace ({why}), so the worker keeps the network and says so"
        );
        return;
    }
    let run = connect("    isolation: process\n    grants: {fs_read: [/etc]}\n");
    run.assert_code(1);
    assert!(
        run.stdout.contains("cannot connect to 127.0.0.1:"),
        "{run:#?}"
    );
}

#[test]
fn an_isolated_plugin_with_a_net_grant_connects() {
    let run = connect("    isolation: process\n    grants: {net: [127.0.0.1]}\n");
    run.assert_code(0);
    assert!(run.stdout.contains("connected to 127.0.0.1:"), "{run:#?}");
}

#[test]
fn an_in_process_plugin_without_a_net_grant_connects_as_the_grant_is_only_declared() {
    let run = connect("");
    run.assert_code(0);
    assert!(run.stdout.contains("connected to 127.0.0.1:"), "{run:#?}");
}

/// A server on an ephemeral port of 127.0.0.1 that answers every request `200 OK` with the
/// body `hello`, for as long as the test process runs; its port.
fn http_server() -> u16 {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local addr").port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
            );
        }
    });
    port
}

#[test]
fn an_isolated_plugin_with_a_net_grant_resolves_a_host_name() {
    let port = http_server();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let library = toolgate_exe()
        .parent()
        .expect("the program is in a folder")
        .join(format!(
            "{}toolgate_plugin_http{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
    let policy = dir.path().join("http.yaml");
    std::fs::write(
        &policy,
        format!(
            "version: 1\nplugins:\n  - path: {}\n    isolation: process\n    grants:\n      net: [localhost]\n",
            library.display()
        ),
    )
    .expect("policy written");
    let url = format!(r#"{{"url": "http://localhost:{port}/"}}"#);
    let run = Toolgate::new(&[
        "call",
        "--policy",
        &policy.display().to_string(),
        "http.get",
        &url,
    ])
    .run_within(Duration::from_secs(60));
    run.assert_code(0);
    assert!(run.stdout.contains("hello"), "{run:#?}");
}
