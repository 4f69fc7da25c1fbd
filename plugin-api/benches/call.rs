//! The raw cost of one host -> plugin call through the C ABI: `echo` with a 1 KB payload on
//! the testkit plugin (JSON in, JSON parts out, buffers freed by the plugin). Nothing of the
//! engine (guard, hooks, async) is included.
//!
//! Run `cargo build --workspace --release` (or `--profile bench`) first so the plugin library
//! exists next to this bench, then `cargo bench -p toolgate-plugin-api --features host`.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate_plugin_api::{CancelFlag, LoadedPlugin, PluginOutcome, library_file_name};

/// The testkit library of the profile this bench was built with (`target/<profile>/`).
fn testkit_path() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench executable has a path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the bench executable lives in target/<profile>/deps/");
    let file = library_file_name("toolgate_plugin_testkit");
    [dir.join(&file), dir.join("deps").join(&file)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{file} is not in {}: run `cargo build --workspace --release` first",
                dir.display()
            )
        })
}

fn echo_1kb(c: &mut Criterion) {
    // SAFETY: the testkit plugin of this workspace, built with the SDK.
    let plugin = unsafe { LoadedPlugin::load(&testkit_path(), &serde_json::Value::Null) }
        .unwrap_or_else(|err| panic!("testkit loads: {err}"));
    let payload = "x".repeat(1024);
    let arguments = serde_json::json!({ "text": payload }).to_string();
    let cancel = CancelFlag::new();
    c.bench_function("plugin_call_echo_1kb", |b| {
        b.iter(|| {
            let outcome = plugin.call("echo", black_box(&arguments), &cancel, &mut |_| {});
            assert!(matches!(outcome, PluginOutcome::Ok(_)));
            black_box(outcome)
        })
    });
}

criterion_group!(benches, echo_1kb);
criterion_main!(benches);
