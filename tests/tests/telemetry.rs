//! What watches `toolgate serve` sees (issue 28, O1-O8), through real components: an OTLP
//! receiver (HTTP, and gRPC on `grpcio`) decoding with the official `opentelemetry-proto`
//! definitions and service stubs, an upstream MCP server
//! and an agent on the official Python SDK (both exporting their own spans), a real Prometheus
//! (Debian's `prometheus`, started by `scripts/prometheus.sh`), and the JSON log lines. The
//! scenarios are in tests/mcp/telemetry.py; each test runs one.

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use toolgate_e2e::{repo_path, repo_root, toolgate_exe, venv_python};

/// Runs scenario `name` of tests/mcp/telemetry.py; fails with its output when it does not hold
/// or does not end within five minutes.
fn scenario(name: &str) {
    let script = repo_path("tests/mcp/telemetry.py");
    let child = Command::new(venv_python())
        .arg(&script)
        .arg("--toolgate")
        .arg(toolgate_exe())
        .arg(name)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the scenario starts");
    let pid = child.id();
    let (done, ended) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait_with_output());
    });
    let output = match ended.recv_timeout(Duration::from_secs(300)) {
        Ok(output) => output.expect("the scenario can be waited for"),
        Err(_) => {
            // The waiting thread has not reaped the child (it would have sent the output), so
            // the pid is still the scenario's.
            kill(pid);
            panic!("scenario {name} did not end within 300 s");
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.trim_end().ends_with("ok"),
        "scenario {name} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
}

/// Kills `pid`, a scenario that ran out of time.
fn kill(pid: u32) {
    let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
}

#[test]
fn o1_a_call_exports_a_span_with_the_genai_attributes_and_the_decision() {
    scenario("call_span_attributes");
}

#[test]
fn o2_o3_a_clients_trace_goes_on_through_toolgate_into_the_upstream_server() {
    scenario("trace_goes_on");
}

#[test]
fn o3_an_http_traceparent_header_continues_its_trace() {
    scenario("trace_from_header");
}

#[test]
fn o5_prometheus_scrapes_the_calls_made_over_http() {
    scenario("prometheus_scrapes_calls");
}

#[test]
fn o5_the_admin_address_serves_metrics_while_serving_stdio() {
    scenario("admin_address_over_stdio");
}

#[test]
fn o6_json_logs_are_one_object_a_line_with_the_trace_id() {
    scenario("json_logs");
}

#[test]
fn o7_metrics_exported_over_otlp_count_the_calls_made_as_metrics_shows_them() {
    scenario("otlp_metrics_match_the_calls");
}

#[test]
fn o7_the_otel_variables_turn_the_metric_export_on_and_serve_sends_the_rest_when_it_stops() {
    scenario("otlp_metrics_by_the_variables");
}

#[test]
fn o8_traces_and_metrics_go_over_grpc_when_the_protocol_says_so() {
    scenario("grpc_carries_traces_and_metrics");
}
