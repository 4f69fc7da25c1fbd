//! A caught plugin panic is reported once, through the outcome and the host's log, not also
//! printed raw by the plugin's own standard library.

use toolgate_e2e::*;

#[test]
fn g6_a_plugin_panic_is_reported_without_the_plugins_raw_panic_output() {
    let run = toolgate(&[
        "call",
        "--policy",
        &testkit_policy(),
        "--json",
        "panic",
        "{}",
    ]);
    run.assert_code(1);
    assert_eq!(run.json()["error_kind"], "tool_execution_panic");
    assert!(
        !run.stderr.contains("panicked at"),
        "raw panic output on stderr:\n{}",
        run.stderr
    );
    assert!(!run.stderr.contains("stack backtrace"), "{}", run.stderr);
}
