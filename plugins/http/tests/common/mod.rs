//! A real HTTP/1.1 server on 127.0.0.1 (a std `TcpListener` and a thread per connection), and
//! the built http plugin library.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The size of the body `/big` sends: 2 MiB.
pub const BIG_BYTES: usize = 2 * 1024 * 1024;

/// A server on an ephemeral port of 127.0.0.1. Routes:
/// - `GET /hello`: 200, `text/plain`, `hello from the test server`
/// - `POST /echo`: 200, the request's method, content type, `x-test` header and body
/// - `GET /big`: 200, [`BIG_BYTES`] bytes of `a`
/// - `GET /slow`: waits 3 s before answering
/// - `GET /trickle`: sends the headers at once, then one body byte every 200 ms for 3 s
/// - `GET /redirect`: 302 to `/hello`
/// - anything else: 404 `no such page`
///
/// The thread serving it runs until the test process ends.
pub fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || handle(stream));
        }
    });
    port
}

/// A port on 127.0.0.1 that nothing listens on (bound, then closed).
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn respond(mut stream: &TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

fn handle(stream: TcpStream) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    let header = |name: &str| {
        request
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
            .to_string()
    };
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/hello") => respond(
            &stream,
            "200 OK",
            &[("content-type", "text/plain")],
            b"hello from the test server",
        ),
        ("POST", "/echo") => {
            let body = format!(
                "method={} content-type={} x-test={} body={}",
                request.method,
                header("content-type"),
                header("x-test"),
                String::from_utf8_lossy(&request.body)
            );
            respond(
                &stream,
                "200 OK",
                &[("content-type", "text/plain")],
                body.as_bytes(),
            );
        }
        ("GET", "/big") => respond(&stream, "200 OK", &[], &vec![b'a'; BIG_BYTES]),
        ("GET", "/slow") => {
            // Answers only once the client has gone (or after a minute): a client that waits
            // for the answer gets it a minute late.
            let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
            let mut rest = [0u8; 64];
            while matches!(std::io::Read::read(&mut &stream, &mut rest), Ok(n) if n > 0) {}
            respond(&stream, "200 OK", &[], b"late");
        }
        ("GET", "/trickle") => {
            // A byte every 200 ms for a minute, or until the client goes.
            let mut s = &stream;
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 300\r\n\r\n");
            for _ in 0..300 {
                std::thread::sleep(Duration::from_millis(200));
                if s.write_all(b"x").is_err() {
                    return;
                }
            }
        }
        ("GET", "/redirect") => respond(&stream, "302 Found", &[("location", "/hello")], b""),
        _ => respond(
            &stream,
            "404 Not Found",
            &[("content-type", "text/plain")],
            b"no such page",
        ),
    }
}

/// The directory cargo puts this profile's libraries in: the test executable lives in
/// `target/<profile>/deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/")
        .to_path_buf()
}

/// The built library of this crate (cargo builds it before the tests).
pub fn library() -> PathBuf {
    let file = toolgate_plugin_api::library_file_name("toolgate_plugin_http");
    let dir = profile_dir();
    // The newer of the two: `cargo test` refreshes the one in deps/, and only `cargo build`
    // the copy beside it, which a test must not load stale.
    [dir.join(&file), dir.join("deps").join(&file)]
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("{file} is not built in {}", dir.display()))
}
