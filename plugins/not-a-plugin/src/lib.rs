//! A valid shared library that is not a toolgate plugin: it exports a function, but not
//! `toolgate_plugin_entry`. A host must say so instead of crashing.

#![warn(missing_docs)]

/// Some unrelated exported function, so the library has a reason to exist.
#[unsafe(no_mangle)]
pub extern "C" fn toolgate_test_not_a_plugin_answer() -> u32 {
    42
}
