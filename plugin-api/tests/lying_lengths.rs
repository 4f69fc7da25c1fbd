//! A plugin that reports a progress message of 1 TiB (two bytes, really): the host hands its
//! listener a note saying so instead of reading past the message.

mod common;

use common::{library, load};
use toolgate_plugin_api::{CancelFlag, PluginOutcome};

#[test]
fn a_progress_message_that_lies_about_its_length_reaches_the_listener_as_a_note() {
    // The library breaks the ABI only where the test looks: the lengths it reports are checked
    // against a limit before anything reads them.
    let plugin = load(
        &library("toolgate_test_lying_lengths"),
        &serde_json::Value::Null,
    )
    .unwrap_or_else(|err| panic!("the lying plugin loads: {err}"));
    let mut seen = Vec::new();
    let outcome = plugin.call("lie.progress", "{}", &CancelFlag::new(), &mut |message| {
        seen.push(message.to_string())
    });
    assert_eq!(outcome, PluginOutcome::Ok(Vec::new()));
    assert_eq!(
        seen,
        ["(a progress message of 1099511627776 bytes, over the limit of 65536 bytes, left out)"]
    );
}
