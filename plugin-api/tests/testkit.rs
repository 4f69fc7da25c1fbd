//! The testkit plugin, loaded through the C ABI as the engine loads it: every tool, and what the
//! host sees of cancellation, panics, bad arguments, progress and concurrency.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use common::{call, error, testkit, text};
use toolgate_plugin_api::{CancelFlag, Part, PluginOutcome};

/// The 1x1 PNG the `multimodal` tool sends, base64-encoded by an independent encoder.
const PNG_PIXEL_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP438DwHwAGgAJ/EEwb4QAAAABJRU5ErkJggg==";

#[test]
fn testkit_reports_its_name_and_version() {
    assert_eq!(testkit().name(), "testkit");
    assert_eq!(testkit().version(), env!("CARGO_PKG_VERSION"));
    let file = toolgate_plugin_api::library_file_name("toolgate_plugin_testkit");
    assert_eq!(testkit().path().file_name(), Some(file.as_ref()));
}

#[test]
fn testkit_lists_exactly_its_contract_tools_in_order() {
    let names: Vec<&str> = testkit().tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "echo",
            "sleep",
            "stubborn_sleep",
            "panic",
            "fail",
            "big_output",
            "huge_output",
            "forge_frame",
            "multimodal",
            "progress",
            "stream",
            "crash",
            "connect",
            "escape"
        ]
    );
}

#[test]
fn every_testkit_tool_has_a_description_and_an_object_schema() {
    for tool in testkit().tools() {
        assert!(
            !tool.description.is_empty(),
            "{} has no description",
            tool.name
        );
        assert_eq!(tool.parameters["type"], "object", "{} schema", tool.name);
        assert_eq!(
            tool.parameters["additionalProperties"], false,
            "{} schema",
            tool.name
        );
    }
}

#[test]
fn echo_schema_requires_text() {
    let echo = &testkit().tools()[0];
    assert_eq!(echo.parameters["required"], serde_json::json!(["text"]));
    assert_eq!(echo.parameters["properties"]["text"]["type"], "string");
}

#[test]
fn echo_returns_the_text() {
    assert_eq!(text(call("echo", r#"{"text": "hello"}"#)), "hello");
}

#[test]
fn echo_returns_non_ascii_text_unchanged() {
    assert_eq!(
        text(call("echo", r#"{"text": "héllo 世界 🦀"}"#)),
        "héllo 世界 🦀"
    );
}

#[test]
fn sleep_runs_to_the_end_when_not_cancelled() {
    let start = Instant::now();
    assert_eq!(text(call("sleep", r#"{"ms": 30}"#)), "slept 30 ms");
    assert!(start.elapsed() >= Duration::from_millis(30));
}

/// Runs `f` on its own thread and returns its answer; panics if it has not answered within a
/// minute (a guard against a hang, not a measure of speed).
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(Duration::from_secs(60))
        .expect("answered within a minute")
}

#[test]
fn sleep_returns_cancelled_soon_after_the_flag_is_set_from_another_thread() {
    let cancel = CancelFlag::new();
    let canceller = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            // Most likely while the tool sleeps; the outcome is the same if it is set before.
            std::thread::sleep(Duration::from_millis(50));
            cancel.cancel();
        })
    };
    // Ten minutes of sleep: only the flag ends it within the guard's minute.
    let outcome =
        within_a_minute(move || testkit().call("sleep", r#"{"ms": 600000}"#, &cancel, &mut |_| {}));
    canceller.join().expect("canceller thread");
    assert_eq!(outcome, PluginOutcome::Error("cancelled".into()));
}

#[test]
fn sleep_with_the_flag_already_set_returns_cancelled_at_once() {
    let cancel = CancelFlag::new();
    cancel.cancel();
    let outcome =
        within_a_minute(move || testkit().call("sleep", r#"{"ms": 600000}"#, &cancel, &mut |_| {}));
    assert_eq!(outcome, PluginOutcome::Error("cancelled".into()));
}

#[test]
fn stubborn_sleep_ignores_cancellation() {
    let cancel = CancelFlag::new();
    cancel.cancel();
    let outcome = testkit().call("stubborn_sleep", r#"{"ms": 200}"#, &cancel, &mut |_| {});
    assert_eq!(text(outcome), "slept 200 ms, ignoring cancellation");
}

#[test]
fn stubborn_sleep_until_closed_returns_when_the_other_end_closes() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let args = format!(
        r#"{{"ms": 600000, "until_closed": "{}"}}"#,
        listener.local_addr().unwrap()
    );
    let cancel = CancelFlag::new();
    cancel.cancel();
    let call =
        std::thread::spawn(move || testkit().call("stubborn_sleep", &args, &cancel, &mut |_| {}));
    // Connected: the tool runs, and keeps running, cancelled, until the test closes.
    let (peer, _) = listener.accept().unwrap();
    drop(peer);
    let outcome = within_a_minute(move || call.join().expect("caller thread"));
    assert!(text(outcome).ends_with(" closed, ignoring cancellation"));
}

#[test]
fn panic_is_caught_in_the_plugin_and_reported_as_a_panic_with_its_message() {
    assert_eq!(
        call("panic", "{}"),
        PluginOutcome::Panic("deliberate panic from the testkit `panic` tool".into())
    );
}

#[test]
fn the_plugin_keeps_working_after_a_panic() {
    for _ in 0..3 {
        assert!(matches!(call("panic", "{}"), PluginOutcome::Panic(_)));
        assert_eq!(
            text(call("echo", r#"{"text": "still here"}"#)),
            "still here"
        );
    }
}

#[test]
fn fail_returns_an_error_with_the_message() {
    assert_eq!(
        error(call("fail", r#"{"message": "disk on fire"}"#)),
        "disk on fire"
    );
}

#[test]
fn arguments_that_are_not_json_are_invalid_arguments_naming_the_tool() {
    let PluginOutcome::InvalidArguments(message) = call("echo", "{not json") else {
        panic!("expected invalid arguments");
    };
    assert!(
        message.starts_with("invalid arguments for tool `echo`: key must be a string"),
        "{message}"
    );
}

#[test]
fn arguments_of_the_wrong_type_are_invalid_arguments_saying_what_was_expected() {
    let PluginOutcome::InvalidArguments(message) = call("echo", r#"{"text": 5}"#) else {
        panic!("expected invalid arguments");
    };
    assert!(
        message.starts_with(
            "invalid arguments for tool `echo`: invalid type: integer `5`, expected a string"
        ),
        "{message}"
    );
}

#[test]
fn a_missing_argument_is_invalid_arguments_naming_the_field() {
    let PluginOutcome::InvalidArguments(message) = call("sleep", "{}") else {
        panic!("expected invalid arguments");
    };
    assert!(
        message.starts_with("invalid arguments for tool `sleep`: missing field `ms`"),
        "{message}"
    );
}

#[test]
fn an_unexpected_argument_is_invalid_arguments_naming_the_field() {
    let PluginOutcome::InvalidArguments(message) = call("echo", r#"{"text": "a", "loud": true}"#)
    else {
        panic!("expected invalid arguments");
    };
    assert!(message.contains("unknown field `loud`"), "{message}");
}

#[test]
fn blank_arguments_count_as_an_empty_object() {
    assert!(matches!(call("multimodal", ""), PluginOutcome::Ok(_)));
    assert!(matches!(
        call("echo", "  "),
        PluginOutcome::InvalidArguments(_)
    ));
}

#[test]
fn an_unknown_tool_is_an_error_listing_the_plugins_tools() {
    assert_eq!(
        error(call("nope", "{}")),
        "plugin `testkit` has no tool named `nope`; its tools are: echo, sleep, stubborn_sleep, \
         panic, fail, big_output, huge_output, forge_frame, multimodal, progress, stream, crash, \
         connect, escape"
    );
}

#[test]
fn big_output_returns_exactly_the_requested_number_of_bytes() {
    for bytes in [0_usize, 1, 63, 64, 65, 100_000, 1_000_003] {
        let out = text(call("big_output", &format!(r#"{{"bytes": {bytes}}}"#)));
        assert_eq!(out.len(), bytes);
        assert!(out.is_ascii());
    }
}

#[test]
fn big_output_is_deterministic_numbered_lines() {
    let first = text(call("big_output", r#"{"bytes": 1000}"#));
    let second = text(call("big_output", r#"{"bytes": 1000}"#));
    assert_eq!(first, second);
    let lines: Vec<&str> = first.lines().collect();
    assert_eq!(lines.len(), 16);
    assert!(lines[0].starts_with("line 000001 "));
    assert!(lines[14].starts_with("line 000015 "));
}

#[test]
fn big_output_over_64_mib_is_refused() {
    let message = error(call("big_output", r#"{"bytes": 67108865}"#));
    assert_eq!(message, "bytes must be at most 67108864, got 67108865");
}

#[test]
fn multimodal_returns_text_then_a_png_then_text() {
    let PluginOutcome::Ok(parts) = call("multimodal", "{}") else {
        panic!("expected success");
    };
    assert_eq!(
        parts,
        vec![
            Part::Text("Here is a one-pixel image:".into()),
            Part::Image {
                mime_type: "image/png".into(),
                data_base64: PNG_PIXEL_BASE64.into()
            },
            Part::Text("That was the image.".into()),
        ]
    );
}

#[test]
fn progress_messages_arrive_in_order_before_the_result() {
    let mut seen = Vec::new();
    let outcome = testkit().call(
        "progress",
        r#"{"steps": 5}"#,
        &CancelFlag::new(),
        &mut |m| seen.push(m.to_string()),
    );
    assert_eq!(text(outcome), "done: 5 steps");
    assert_eq!(
        seen,
        [
            "step 1 of 5",
            "step 2 of 5",
            "step 3 of 5",
            "step 4 of 5",
            "step 5 of 5"
        ]
    );
}

#[test]
fn progress_with_zero_steps_sends_no_message() {
    let mut count = 0;
    let outcome = testkit().call(
        "progress",
        r#"{"steps": 0}"#,
        &CancelFlag::new(),
        &mut |_| count += 1,
    );
    assert_eq!(text(outcome), "done: 0 steps");
    assert_eq!(count, 0);
}

#[test]
fn a_panic_in_the_hosts_progress_callback_resurfaces_in_the_host_after_the_call() {
    let result = catch_unwind(AssertUnwindSafe(|| {
        testkit().call(
            "progress",
            r#"{"steps": 3}"#,
            &CancelFlag::new(),
            &mut |_| panic!("listener broke"),
        )
    }));
    let payload = result.expect_err("the listener's panic comes back");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"listener broke"));
    assert_eq!(text(call("echo", r#"{"text": "fine"}"#)), "fine");
}

#[test]
fn eight_threads_can_call_the_same_plugin_at_once() {
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..100 {
                    let want = format!("thread {t} call {i}");
                    let args = serde_json::json!({"text": want}).to_string();
                    assert_eq!(text(call("echo", &args)), want);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("caller thread");
    }
}

#[test]
fn calls_from_eight_threads_run_in_parallel_not_one_at_a_time() {
    // Each call stays connected until the test closes: one at a time, the second would never
    // connect while the first waits.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let args = format!(
        r#"{{"ms": 600000, "until_closed": "{}"}}"#,
        listener.local_addr().unwrap()
    );
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let args = args.clone();
            std::thread::spawn(move || text(call("stubborn_sleep", &args)))
        })
        .collect();
    let peers = within_a_minute(move || {
        (0..8)
            .map(|_| listener.accept().unwrap().0)
            .collect::<Vec<_>>()
    });
    assert_eq!(peers.len(), 8, "all eight run at once");
    drop(peers);
    for thread in threads {
        assert!(
            thread
                .join()
                .expect("caller thread")
                .ends_with("closed, ignoring cancellation")
        );
    }
}

#[test]
fn stream_sends_its_chunks_then_returns_its_result() {
    let mut chunks = Vec::new();
    let outcome = testkit().call_streaming(
        "stream",
        r#"{"count": 3}"#,
        &CancelFlag::new(),
        &mut |_| {},
        &mut |chunk| {
            chunks.push(chunk.to_string());
            true
        },
        None,
    );
    assert_eq!(chunks, ["chunk 1\n", "chunk 2\n", "chunk 3\n"]);
    assert_eq!(text(outcome), "streamed 3 chunks");
}

#[test]
fn a_host_that_wants_no_more_chunks_stops_the_stream() {
    let mut chunks = 0;
    let outcome = testkit().call_streaming(
        "stream",
        r#"{"count": 1000000}"#,
        &CancelFlag::new(),
        &mut |_| {},
        &mut |_| {
            chunks += 1;
            chunks < 3
        },
        None,
    );
    assert_eq!(chunks, 3, "no chunk after the host said stop");
    assert_eq!(error(outcome), "cancelled");
}

#[test]
fn a_streaming_tool_called_without_chunks_returns_its_text_whole() {
    let outcome = call("stream", r#"{"count": 2}"#);
    assert_eq!(text(outcome), "chunk 1\nchunk 2\nstreamed 2 chunks");
}
