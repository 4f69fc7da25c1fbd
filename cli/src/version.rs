//! What `toolgate --version` says: the version, the git commit it was built from (when it was
//! built from a checkout, see `build.rs`), the plugin ABI it speaks, the cargo features it was
//! built with and its built-in plugins. `-V` says the first line only.

use toolgate_plugin_api::abi::{ABI_VERSION, VTABLE_SIZE};

/// The git commit of the build, if it was built from a git checkout.
const COMMIT: Option<&str> = option_env!("TOOLGATE_GIT_COMMIT");

/// The cargo features of this build that change what it can do. The CLI always turns on the
/// engine's `s3` (results on S3) and `semantic` (`search.embeddings`).
fn features() -> Vec<&'static str> {
    let mut features = Vec::new();
    if cfg!(feature = "builtin-plugins") {
        features.push("builtin-plugins");
    }
    if cfg!(feature = "builtin-testkit") {
        features.push("builtin-testkit");
    }
    features.extend(["s3", "semantic"]);
    features
}

/// `0.1.0 (commit 0123456789ab)`, or the bare version outside a checkout.
pub fn short() -> &'static str {
    match COMMIT {
        // Once per command definition, for the life of the process: clap wants `'static`.
        Some(commit) => String::leak(format!("{} (commit {commit})", env!("CARGO_PKG_VERSION"))),
        None => env!("CARGO_PKG_VERSION"),
    }
}

/// The version, then one line each for the commit, the plugin ABI, the features and the
/// built-in plugins.
pub fn long() -> &'static str {
    let builtins = crate::builtins::names();
    String::leak(format!(
        "{}\ncommit: {}\nplugin ABI: {ABI_VERSION} (table of {VTABLE_SIZE} bytes: streamed results; \
         older tables of ABI {ABI_VERSION} load too)\nfeatures: {}\nbuilt-in plugins: {}",
        env!("CARGO_PKG_VERSION"),
        COMMIT.unwrap_or("unknown (not built from a git checkout)"),
        features().join(", "),
        if builtins.is_empty() {
            "none".to_string()
        } else {
            builtins.join(", ")
        },
    ))
}
