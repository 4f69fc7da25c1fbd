//! A toolgate plugin written in C, the proof that the plugin ABI is plain C and stable across
//! compilers.
//!
//! - `include/toolgate_plugin.h` is the C spelling of `toolgate_plugin_api::abi` (ABI
//!   version 1). A plugin in C (or any language with a C FFI) includes it and exports
//!   `toolgate_plugin_entry`.
//! - `c/plugin.c` is such a plugin, with no Rust in it. Its tests (`tests/c_abi.rs`) compile it
//!   with the system C compiler (`cc`, or `$CC`), load it with `LoadedPlugin` and through the
//!   engine, and call every tool: the manifest, the configuration, text results, errors, the
//!   progress callback and the cancellation flag all cross the boundary.
//! - `c/layout.c` prints the size of every ABI type and the offset of every field as the C
//!   compiler lays them out; the tests compare them with Rust's `#[repr(C)]` layout, so the
//!   header and `abi.rs` cannot drift apart.
//!
//! This crate has no Rust code of its own.
