//! The plugins built into this program (feature `builtin-plugins`, on by default: `fs`, `http`,
//! `sqlite`; `builtin-testkit` adds the test plugin), installed first thing in `main` so that
//! every engine and every plugin worker of the process finds them by name
//! (`toolgate_plugin_api::builtin`). A library of the same name on `TOOLGATE_PLUGIN_PATH`,
//! beside the program, or given with `path:` wins over a built-in.

use std::sync::LazyLock;

use toolgate_plugin_api::Builtin;

/// The built-ins this build links in.
static BUILTINS: LazyLock<Vec<&'static Builtin>> = LazyLock::new(|| {
    #[allow(unused_mut)]
    let mut builtins: Vec<&'static Builtin> = Vec::new();
    #[cfg(feature = "builtin-plugins")]
    builtins.extend([
        &toolgate_plugin_fs::TOOLGATE_BUILTIN,
        &toolgate_plugin_http::TOOLGATE_BUILTIN,
        &toolgate_plugin_sqlite::TOOLGATE_BUILTIN,
    ]);
    #[cfg(feature = "builtin-testkit")]
    builtins.push(&toolgate_plugin_testkit::TOOLGATE_BUILTIN);
    builtins
});

/// Makes this build's built-ins the process's.
pub fn install() {
    // The first call of the process: nothing was installed before.
    let _ = toolgate_plugin_api::builtin::install(BUILTINS.as_slice());
}

/// The names of this build's built-ins, in the order they are listed.
pub fn names() -> Vec<&'static str> {
    BUILTINS.iter().map(|b| b.name()).collect()
}
