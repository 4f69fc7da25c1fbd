//! Finding the plugin libraries the workspace builds, and loading them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use toolgate_plugin_api::{CancelFlag, LoadError, LoadedPlugin, PluginOutcome, library_file_name};

/// The directory cargo puts this profile's libraries in: the test executable lives in
/// `target/<profile>/deps/`, the libraries one level up.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/")
        .to_path_buf()
}

/// The path of a library built by this workspace, such as `toolgate_plugin_testkit`. Fails the
/// test with instructions when it has not been built.
pub fn library(lib_name: &str) -> PathBuf {
    let file = library_file_name(lib_name);
    let dir = profile_dir();
    for candidate in [dir.join(&file), dir.join("deps").join(&file)] {
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "the plugin library {file} is not in {dir}: these tests load the libraries the \
         workspace builds, so run `cargo build --workspace` first (same profile and target \
         directory as the tests)",
        dir = dir.display()
    );
}

/// [`LoadedPlugin::load`] for the tests.
///
/// They load only what keeps the contract of its `# Safety` section: this workspace's own
/// libraries (the testkit and fs plugins, built with the SDK; `toolgate_test_broken_abi`, whose
/// entry returns a static header; `toolgate_test_not_a_plugin`, which exports no entry;
/// `toolgate_test_lying_lengths`, which reports lengths its static buffers do not have, where
/// the host checks each length against a limit before reading), damaged
/// or patched copies of them that `load` or the system loader refuses before any of their code
/// runs, and files that are no library at all.
pub fn load(path: &Path, config: &serde_json::Value) -> Result<LoadedPlugin, LoadError> {
    // SAFETY: see above.
    unsafe { LoadedPlugin::load(path, config) }
}

/// The testkit plugin, loaded once for the whole test binary.
pub fn testkit() -> &'static LoadedPlugin {
    static TESTKIT: OnceLock<LoadedPlugin> = OnceLock::new();
    TESTKIT.get_or_init(|| {
        load(
            &library("toolgate_plugin_testkit"),
            &serde_json::Value::Null,
        )
        .unwrap_or_else(|err| panic!("testkit loads: {err}"))
    })
}

/// Calls a testkit tool with a fresh flag and no progress listener.
pub fn call(tool: &str, arguments: &str) -> PluginOutcome {
    testkit().call(tool, arguments, &CancelFlag::new(), &mut |_| {})
}

/// Calls a tool of `plugin` with a fresh flag and no progress listener.
pub fn call_on(plugin: &LoadedPlugin, tool: &str, arguments: serde_json::Value) -> PluginOutcome {
    plugin.call(
        tool,
        &arguments.to_string(),
        &CancelFlag::new(),
        &mut |_| {},
    )
}

/// The text of an outcome that must be a single text part.
pub fn text(outcome: PluginOutcome) -> String {
    match outcome {
        PluginOutcome::Ok(parts) => match parts.as_slice() {
            [toolgate_plugin_api::Part::Text(text)] => text.clone(),
            other => panic!("expected one text part, got {other:?}"),
        },
        other => panic!("expected success, got {other:?}"),
    }
}

/// The message of an outcome that must be an error.
pub fn error(outcome: PluginOutcome) -> String {
    match outcome {
        PluginOutcome::Error(message) => message,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// Damaged copies of a real ELF library (64-bit, little-endian: Linux on x86-64 or AArch64).
#[cfg(target_os = "linux")]
pub mod elf {
    use std::path::Path;

    /// The dependency [`with_missing_dependency`] asks for, which no system has.
    pub const MISSING_DEPENDENCY: &str = "libgcc_x.so.1";

    fn read(path: &Path) -> Vec<u8> {
        let bytes = std::fs::read(path).expect("read the library");
        assert_eq!(
            &bytes[..6],
            b"\x7fELF\x02\x01",
            "a 64-bit little-endian ELF file"
        );
        bytes
    }

    fn u16_at(bytes: &[u8], at: usize) -> usize {
        u16::from_le_bytes(bytes[at..at + 2].try_into().expect("2 bytes")).into()
    }

    fn u64_at(bytes: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
    }

    /// The library without its section header table (the loader never needs it), cut in the
    /// middle of its largest loadable segment (the code); and the offset where that segment
    /// should end. Loading it maps pages past the end of the file: SIGBUS when touched.
    pub fn cut_inside_largest_segment(path: &Path) -> (Vec<u8>, u64) {
        let mut bytes = read(path);
        // e_shoff, e_shnum, e_shstrndx: no section headers.
        bytes[0x28..0x30].fill(0);
        bytes[0x3c..0x40].fill(0);
        let phoff = usize::try_from(u64_at(&bytes, 0x20)).expect("fits");
        let (phentsize, phnum) = (u16_at(&bytes, 0x36), u16_at(&bytes, 0x38));
        let (offset, filesz) = (0..phnum)
            .map(|i| phoff + i * phentsize)
            .filter(|&ph| u32::from_le_bytes(bytes[ph..ph + 4].try_into().expect("4")) == 1)
            .map(|ph| (u64_at(&bytes, ph + 8), u64_at(&bytes, ph + 0x20)))
            .max_by_key(|&(_, filesz)| filesz)
            .expect("a PT_LOAD segment");
        assert!(filesz > 2, "the segment has bytes to cut");
        let cut = usize::try_from(offset + filesz / 2).expect("fits");
        bytes.truncate(cut);
        (bytes, offset + filesz)
    }

    /// The library with its `libgcc_s.so.1` dependency renamed to [`MISSING_DEPENDENCY`].
    pub fn with_missing_dependency(path: &Path) -> Vec<u8> {
        let mut bytes = read(path);
        let needle = b"libgcc_s.so.1\0";
        let at = bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .expect("the library depends on libgcc_s.so.1");
        bytes[at..at + needle.len() - 1].copy_from_slice(MISSING_DEPENDENCY.as_bytes());
        bytes
    }

    /// The library with its machine field set to another architecture, and that
    /// architecture's name as `object` spells it.
    pub fn for_another_machine(path: &Path) -> (Vec<u8>, &'static str) {
        let mut bytes = read(path);
        // EM_X86_64 = 62, EM_AARCH64 = 183.
        let (machine, name) = if u16_at(&bytes, 0x12) == 62 {
            (183_u16, "Aarch64")
        } else {
            (62_u16, "X86_64")
        };
        bytes[0x12..0x14].copy_from_slice(&machine.to_le_bytes());
        (bytes, name)
    }
}
