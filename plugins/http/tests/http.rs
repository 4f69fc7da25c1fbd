//! The http plugin loaded through the C ABI, as the engine loads it, against a real HTTP server
//! on 127.0.0.1 started by the test.

mod common;

use std::net::TcpListener;

use common::{BIG_BYTES, closed_port, library, serve};
use serde_json::{Value, json};
use toolgate_plugin_api::{CancelFlag, LoadedPlugin, Part, PluginOutcome};

/// Loads this crate's plugin library with `config`.
fn plugin(config: Value) -> LoadedPlugin {
    // SAFETY: this workspace's own http plugin, built with the SDK.
    unsafe { LoadedPlugin::load(&library(), &config) }.unwrap_or_else(|e| panic!("loads: {e}"))
}

fn call(plugin: &LoadedPlugin, tool: &str, args: Value) -> PluginOutcome {
    plugin.call(tool, &args.to_string(), &CancelFlag::new(), &mut |_| {})
}

fn text(outcome: PluginOutcome) -> String {
    match outcome {
        PluginOutcome::Ok(parts) => match parts.as_slice() {
            [Part::Text(text)] => text.clone(),
            other => panic!("expected one text part, got {other:?}"),
        },
        other => panic!("expected success, got {other:?}"),
    }
}

fn error(outcome: PluginOutcome) -> String {
    match outcome {
        PluginOutcome::Error(message) => message,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// The plugin with `127.0.0.1:port` granted.
fn granted(port: u16) -> LoadedPlugin {
    plugin(json!({"grants": {"net": [format!("127.0.0.1:{port}")]}}))
}

#[test]
fn http_offers_get_and_post_under_dotted_names() {
    let names: Vec<String> = granted(1).tools().iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["http.get", "http.post"]);
}

#[test]
fn get_returns_the_status_the_content_type_and_the_body() {
    let port = serve();
    let out = text(call(
        &granted(port),
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/hello")}),
    ));
    assert_eq!(
        out,
        "HTTP 200 OK\ncontent-type: text/plain\n\nhello from the test server"
    );
}

#[test]
fn post_sends_the_body_its_content_type_and_the_headers() {
    let port = serve();
    let out = text(call(
        &granted(port),
        "http.post",
        json!({"url": format!("http://127.0.0.1:{port}/echo"), "body": "{\"a\":1}",
               "headers": {"x-test": "yes"}}),
    ));
    assert!(
        out.ends_with("method=POST content-type=application/json x-test=yes body={\"a\":1}"),
        "{out}"
    );
}

#[test]
fn post_uses_the_content_type_given() {
    let port = serve();
    let out = text(call(
        &granted(port),
        "http.post",
        json!({"url": format!("http://127.0.0.1:{port}/echo"), "body": "a=1",
               "content_type": "application/x-www-form-urlencoded"}),
    ));
    assert!(
        out.contains("content-type=application/x-www-form-urlencoded "),
        "{out}"
    );
}

#[test]
fn a_host_granted_without_a_port_allows_every_port() {
    let port = serve();
    let plugin = plugin(json!({"grants": {"net": ["127.0.0.1"]}}));
    let out = text(call(
        &plugin,
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/hello")}),
    ));
    assert!(out.starts_with("HTTP 200 OK"), "{out}");
}

#[test]
fn a_port_not_granted_is_refused_before_any_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let plugin = granted(closed_port());
    let message = error(call(
        &plugin,
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/hello")}),
    ));
    assert!(
        message.starts_with(&format!(
            "not_granted: host 127.0.0.1:{port} is not granted"
        )),
        "{message}"
    );
    assert_eq!(
        listener.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the plugin connected to a host it was not granted"
    );
}

#[test]
fn without_grants_every_request_is_refused() {
    let port = serve();
    let message = error(call(
        &plugin(json!({})),
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/hello")}),
    ));
    assert!(message.contains("(granted: nothing)"), "{message}");
}

#[test]
fn a_name_is_granted_only_as_written_not_by_its_address() {
    let port = serve();
    let plugin = granted(port);
    let message = error(call(
        &plugin,
        "http.get",
        json!({"url": format!("http://localhost:{port}/hello")}),
    ));
    assert!(
        message.starts_with("not_granted: host localhost:"),
        "{message}"
    );
}

#[test]
fn a_body_over_the_size_bound_fails_with_too_large() {
    let port = serve();
    let plugin = plugin(json!({"grants": {"net": [format!("127.0.0.1:{port}")]},
                               "max_response_bytes": 1000}));
    let message = error(call(
        &plugin,
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/big")}),
    ));
    assert!(message.starts_with("too_large: "), "{message}");
    assert!(message.contains("longer than 1000 bytes"), "{message}");
}

#[test]
fn a_body_within_the_default_size_bound_arrives_whole() {
    let port = serve();
    let plugin = plugin(json!({"grants": {"net": [format!("127.0.0.1:{port}")]},
                               "max_response_bytes": BIG_BYTES}));
    let out = text(call(
        &plugin,
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/big")}),
    ));
    assert_eq!(out.len(), "HTTP 200 OK\n\n".len() + BIG_BYTES);
}

#[test]
fn a_server_slower_than_the_time_bound_fails_with_timeout() {
    let port = serve();
    let plugin = plugin(json!({"grants": {"net": [format!("127.0.0.1:{port}")]},
                               "timeout_ms": 300}));
    // The server answers only once the plugin has gone: a timeout is the plugin's own.
    let message = error(call(
        &plugin,
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/slow")}),
    ));
    assert!(message.starts_with("timeout: "), "{message}");
    assert!(message.contains("within 300 ms"), "{message}");
}

#[test]
fn a_body_that_trickles_past_the_time_bound_fails_with_timeout() {
    let port = serve();
    let plugin = plugin(json!({"grants": {"net": [format!("127.0.0.1:{port}")]},
                               "timeout_ms": 500}));
    // 300 bytes, 200 ms apart: a minute, unless the plugin stops at its bound.
    let message = error(call(
        &plugin,
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/trickle")}),
    ));
    assert!(message.starts_with("timeout: "), "{message}");
}

#[test]
fn a_status_of_400_or_more_is_an_error_with_the_status_and_the_body() {
    let port = serve();
    let message = error(call(
        &granted(port),
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/nowhere")}),
    ));
    assert_eq!(
        message,
        "status: HTTP 404 Not Found\ncontent-type: text/plain\n\nno such page"
    );
}

#[test]
fn a_redirect_is_returned_with_its_location_not_followed() {
    let port = serve();
    let out = text(call(
        &granted(port),
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/redirect")}),
    ));
    assert_eq!(out, "HTTP 302 Found\nlocation: /hello\n\n");
}

#[test]
fn a_closed_port_fails_with_connection_failed() {
    let port = closed_port();
    let message = error(call(
        &granted(port),
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/hello")}),
    ));
    assert!(message.starts_with("connection_failed: "), "{message}");
}

#[test]
#[cfg(not(feature = "tls"))]
fn https_without_the_tls_feature_fails_with_tls_unavailable() {
    let message = error(call(
        &plugin(json!({"grants": {"net": ["example.com"]}})),
        "http.get",
        json!({"url": "https://example.com/"}),
    ));
    assert!(message.starts_with("tls_unavailable: "), "{message}");
}

#[test]
fn a_url_with_another_scheme_is_a_bad_url() {
    let message = error(call(
        &plugin(json!({"grants": {"net": ["localhost"]}})),
        "http.get",
        json!({"url": "file:///etc/passwd"}),
    ));
    assert!(message.starts_with("bad_url: "), "{message}");
}

#[test]
fn a_relative_url_is_a_bad_url() {
    let message = error(call(
        &plugin(json!({"grants": {"net": ["localhost"]}})),
        "http.get",
        json!({"url": "/hello"}),
    ));
    assert!(message.starts_with("bad_url: "), "{message}");
}

#[test]
fn a_header_name_http_does_not_allow_fails_with_bad_header() {
    let port = serve();
    let message = error(call(
        &granted(port),
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}/hello"), "headers": {"bad name": "x"}}),
    ));
    assert_eq!(
        message,
        "bad_header: \"bad name\" cannot be sent as a request header"
    );
}

#[test]
fn a_misspelt_grant_stops_the_plugin_at_load() {
    // SAFETY: this workspace's own http plugin, built with the SDK.
    let err = unsafe { LoadedPlugin::load(&library(), &json!({"grants": {"nett": ["x"]}})) }
        .expect_err("refused");
    assert!(err.to_string().contains("unknown field `nett`"), "{err}");
}

#[test]
fn a_url_with_user_info_is_judged_by_the_host_after_the_at_sign() {
    let port = serve();
    let message = error(call(
        &granted(port),
        "http.get",
        json!({"url": format!("http://127.0.0.1:{port}@192.0.2.1/hello")}),
    ));
    assert!(
        message.starts_with("not_granted: host 192.0.2.1:80 is not granted"),
        "{message}"
    );
}
