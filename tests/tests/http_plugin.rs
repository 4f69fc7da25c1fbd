//! The http plugin through `toolgate call`, against a server this test starts on 127.0.0.1: the
//! model cannot pick the virtual host of a granted address, and a port that is not a port is a
//! bad URL, never the default port.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate};

/// A server on an ephemeral port of 127.0.0.1 that answers each request with `200` and the
/// request's `Host` header as the body, for as long as the test process runs; its port.
fn host_echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
            let mut host = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("host")
                {
                    host = value.trim().to_string();
                }
                line.clear();
            }
            let body = format!("host={host}");
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// `toolgate call --json http.get ARGUMENTS` with `net` granting `grant`; fails the test if
/// the program has not ended within 30 s.
fn get(dir: &Path, grant: &str, arguments: &toolgate_e2e::serde_json::Value) -> Run {
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        format!("version: 1\nplugins:\n  - name: http\n    grants: {{net: [\"{grant}\"]}}\n"),
    )
    .expect("write policy");
    Toolgate::new(&[
        "call",
        "--policy",
        policy.to_str().expect("a UTF-8 path"),
        "--json",
        "http.get",
        &arguments.to_string(),
    ])
    .run_within(Duration::from_secs(30))
}

/// The call failed as a tool error whose message contains `expected`.
#[track_caller]
fn assert_tool_error(run: &Run, expected: &str) {
    run.assert_code(1);
    run.assert_no_panic();
    let outcome = run.json();
    assert_eq!(outcome["error_kind"], "tool_error", "{run:#?}");
    let content = outcome["content"].as_str().expect("text content");
    assert!(
        content.contains(expected),
        "expected {expected:?} in {content:?}"
    );
}

#[test]
fn the_host_header_comes_from_the_granted_url() {
    let port = host_echo_server();
    let dir = tempfile::tempdir().expect("temp dir");
    let run = get(
        dir.path(),
        "127.0.0.1",
        &toolgate_e2e::serde_json::json!({"url": format!("http://127.0.0.1:{port}/")}),
    );
    run.assert_code(0);
    let content = run.json()["content"].as_str().map(str::to_owned);
    assert!(
        content
            .as_deref()
            .is_some_and(|c| c.ends_with(&format!("host=127.0.0.1:{port}"))),
        "{run:#?}"
    );
}

#[test]
fn a_host_header_from_the_model_is_refused_as_a_bad_header() {
    let port = host_echo_server();
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["Host", "host", "HOST"] {
        let run = get(
            dir.path(),
            "127.0.0.1",
            &toolgate_e2e::serde_json::json!({
                "url": format!("http://127.0.0.1:{port}/"),
                "headers": {name: "internal.example"},
            }),
        );
        assert_tool_error(
            &run,
            &format!("bad_header: {name:?} cannot be given: the plugin sets it itself"),
        );
        assert!(!run.stdout.contains("host=internal.example"), "{run:#?}");
    }
}

#[test]
fn a_port_that_is_not_a_number_from_1_to_65535_is_a_bad_url() {
    let port = host_echo_server();
    let dir = tempfile::tempdir().expect("temp dir");
    // Only the server's port is granted: the default port 80 never is, so no spelling can reach
    // anything but this test's server.
    let grant = format!("127.0.0.1:{port}");
    for written in [format!("{port}x"), "99999".to_string(), "0".to_string()] {
        let run = get(
            dir.path(),
            &grant,
            &toolgate_e2e::serde_json::json!({"url": format!("http://127.0.0.1:{written}/")}),
        );
        assert_tool_error(
            &run,
            &format!(
                "bad_url: \"http://127.0.0.1:{written}/\" is not an absolute http:// or https:// URL (its port {written:?} is not a number from 1 to 65535)"
            ),
        );
    }
}
