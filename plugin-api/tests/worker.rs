//! The worker side of `isolation: process` ([`serve_pipe_confined`], as the engine's worker
//! runs it, and [`serve`]) driven over real pipes, with the testkit plugin: the threads that
//! read the host's frames also run its calls, and still answer `cancel`, run calls side by
//! side and end with the input.

mod common;

use std::io::{PipeReader, PipeWriter};
use std::sync::mpsc;
use std::time::Duration;

use common::library;
use toolgate_plugin_api::worker::{
    HostFrame, ServeError, WireOutcome, WorkerFrame, read_frame, serve, serve_pipe_confined,
    write_frame,
};

/// Generous: how long a test waits for something that should come at once.
const WAIT: Duration = Duration::from_secs(20);

/// A worker serving the testkit on a thread of this process: the host's ends of its pipes,
/// and what `serve` returned once it returns.
struct Worker {
    to_worker: Option<PipeWriter>,
    from_worker: PipeReader,
    ended: mpsc::Receiver<Result<(), ServeError>>,
}

impl Worker {
    /// A worker that watches its input pipe between back-to-back calls, as the engine's.
    fn start() -> Worker {
        Worker::start_with(true)
    }

    /// `on_pipe`: served by `serve_pipe_confined` (else by `serve`, which reads the input
    /// without knowing it is a pipe).
    fn start_with(on_pipe: bool) -> Worker {
        let (input, to_worker) = std::io::pipe().expect("a pipe");
        let (mut from_worker, output) = std::io::pipe().expect("a pipe");
        let (done, ended) = mpsc::channel();
        std::thread::spawn(move || {
            // SAFETY: the testkit plugin of this workspace, built with the SDK.
            let served = unsafe {
                if on_pipe {
                    serve_pipe_confined(input, output, |_, _| Ok(()))
                } else {
                    serve(input, output)
                }
            };
            let _ = done.send(served);
        });
        let mut to_worker = to_worker;
        write_frame(
            &mut to_worker,
            &HostFrame::Hello {
                library: library("toolgate_plugin_testkit"),
                config: serde_json::Value::Null,
                confine: None,
                grants: None,
                builtin: None,
                base_dir: None,
            },
        )
        .expect("hello sent");
        let manifest = read_frame::<WorkerFrame>(&mut from_worker).expect("manifest read");
        assert!(
            matches!(manifest, Some(WorkerFrame::Manifest { ref name, .. }) if name == "testkit"),
            "{manifest:?}"
        );
        Worker {
            to_worker: Some(to_worker),
            from_worker,
            ended,
        }
    }

    fn send(&mut self, frame: &HostFrame) {
        let to_worker = self.to_worker.as_mut().expect("the input is open");
        write_frame(to_worker, frame).expect("frame sent");
    }

    fn call(&mut self, id: u64, tool: &str, args: &str) {
        self.send(&HostFrame::Call {
            id,
            tool: tool.into(),
            args: args.into(),
            deadline_ms: None,
            keep_chars: None,
        });
    }

    /// The next result frame (progress and chunks skipped).
    fn result(&mut self) -> (u64, WireOutcome) {
        loop {
            match read_frame::<WorkerFrame>(&mut self.from_worker) {
                Ok(Some(WorkerFrame::Result { id, outcome })) => return (id, outcome),
                Ok(Some(_)) => {}
                other => panic!("expected a result, got {other:?}"),
            }
        }
    }
}

#[test]
fn a_call_answers_while_an_earlier_call_on_the_same_worker_still_runs() {
    let mut worker = Worker::start();
    worker.call(1, "sleep", r#"{"ms":60000}"#);
    worker.call(2, "echo", r#"{"text":"meanwhile"}"#);
    let (id, outcome) = worker.result();
    assert_eq!(id, 2);
    assert!(
        matches!(outcome, WireOutcome::Ok { ref parts } if parts.len() == 1),
        "{outcome:?}"
    );
    worker.send(&HostFrame::Cancel { id: 1 });
    assert_eq!(worker.result().0, 1);
}

#[test]
fn a_call_that_keeps_some_characters_gets_only_those_back() {
    let mut worker = Worker::start();
    worker.send(&HostFrame::Call {
        id: 3,
        tool: "big_output".into(),
        args: r#"{"bytes":1000000}"#.into(),
        deadline_ms: None,
        keep_chars: Some(10),
    });
    let (id, outcome) = worker.result();
    assert_eq!(id, 3);
    let WireOutcome::Ok { parts } = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        parts,
        [toolgate_plugin_api::Part::Text("line 00000".into())]
    );
}

#[test]
fn a_cancel_frame_reaches_a_running_call() {
    let mut worker = Worker::start();
    worker.call(7, "sleep", r#"{"ms":60000}"#);
    worker.send(&HostFrame::Cancel { id: 7 });
    let (id, outcome) = worker.result();
    assert_eq!(id, 7);
    assert!(
        matches!(outcome, WireOutcome::Error { ref message } if message.contains("cancelled")),
        "{outcome:?}"
    );
}

#[test]
fn the_worker_ends_with_its_input_even_while_a_call_never_returns() {
    let mut worker = Worker::start();
    worker.call(1, "stubborn_sleep", r#"{"ms":600000}"#);
    // The call is running (another one answers), then the host closes the pipe.
    worker.call(2, "echo", r#"{"text":"up"}"#);
    assert_eq!(worker.result().0, 2);
    worker.to_worker.take();
    let ended = worker.ended.recv_timeout(WAIT).expect("serve returned");
    assert!(ended.is_ok(), "{ended:?}");
}

#[test]
fn calls_one_after_another_all_answer() {
    let mut worker = Worker::start();
    for id in 0..50 {
        worker.call(id, "echo", r#"{"text":"again"}"#);
        assert_eq!(worker.result().0, id);
    }
}

#[test]
fn calls_one_after_another_all_answer_on_an_input_without_a_descriptor() {
    let mut worker = Worker::start_with(false);
    for id in 0..50 {
        worker.call(id, "echo", r#"{"text":"again"}"#);
        assert_eq!(worker.result().0, id);
    }
}

#[test]
fn a_call_after_back_to_back_calls_and_a_pause_answers() {
    let mut worker = Worker::start();
    for id in 0..50 {
        worker.call(id, "echo", r#"{"text":"again"}"#);
        assert_eq!(worker.result().0, id);
    }
    // Past any watch: the reader sleeps in `read` and is woken by the call.
    std::thread::sleep(Duration::from_millis(50));
    worker.call(50, "echo", r#"{"text":"later"}"#);
    assert_eq!(worker.result().0, 50);
}
