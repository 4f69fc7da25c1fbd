//! `toolgate validate` with a plugin `path:` that is not a usable library: a truncated copy of a
//! real plugin, a text file, a directory, a device, a FIFO, a library the loader refuses. Each is
//! exit 3 with a `file:line:col:` message naming the library and what is wrong, never a crash
//! by signal and never a hang.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use toolgate_e2e::{Run, Toolgate, toolgate_exe};

/// The fs plugin library of this build, beside the program.
fn fs_library() -> PathBuf {
    let file = format!(
        "{}toolgate_plugin_fs{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let path = toolgate_exe().with_file_name(file);
    assert!(
        path.is_file(),
        "{} does not exist: run `cargo build -p toolgate-plugin-fs` first",
        path.display()
    );
    path
}

/// Validates a policy loading the plugin at `plugin`, killing the program if it has not ended
/// within 20 s (a FIFO opened for reading blocks until a writer comes).
fn validate_plugin(plugin: &Path) -> (PathBuf, Run, tempfile::TempDir) {
    validate_policy(
        &format!(
            "version: 1\nplugins:\n  - path: {}\n",
            serde_json_string(plugin)
        ),
        &format!("plugin {}", plugin.display()),
    )
}

/// Validates the policy `text`, written to a fresh folder; fails if the program hangs (20 s)
/// or dies by a signal. `what` names the case.
fn validate_policy(text: &str, what: &str) -> (PathBuf, Run, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, text).expect("write policy");
    eprintln!("validating a policy with {what}");
    let run = Toolgate::new(&[OsStr::new("validate"), policy.as_os_str()])
        .run_within(Duration::from_secs(20));
    (policy, run, dir)
}

/// A YAML scalar for a path: a JSON string is valid YAML.
fn serde_json_string(path: &Path) -> String {
    toolgate_e2e::serde_json::Value::String(path.display().to_string()).to_string()
}

/// Exit 3, and the diagnostic line at the plugin entry names the library and the problem.
#[track_caller]
fn assert_refused(policy: &Path, run: &Run, plugin: &Path, problem: &str) {
    run.assert_code(3);
    run.assert_no_panic();
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with(&format!("{}:3:", policy.display())))
        .unwrap_or_else(|| panic!("no diagnostic at line 3 of the policy:\n{}", run.stderr));
    assert!(
        line.contains(&format!("{} {problem}", plugin.display())),
        "expected `{} {problem}` in {line:?}",
        plugin.display()
    );
}

#[test]
fn a_plugin_truncated_to_4_kib_is_refused_as_truncated_not_a_crash() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("libtruncated.so");
    let whole = std::fs::read(fs_library()).expect("read");
    std::fs::write(&plugin, &whole[..4096]).expect("write");
    let (policy, run, _d) = validate_plugin(&plugin);
    assert_refused(
        &policy,
        &run,
        &plugin,
        "is damaged or truncated (4096 bytes)",
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_plugin_cut_inside_a_segment_is_refused_as_truncated_not_a_crash() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("libcut.so");
    let mut bytes = std::fs::read(fs_library()).expect("read");
    assert_eq!(
        &bytes[..6],
        b"\x7fELF\x02\x01",
        "a 64-bit little-endian ELF file"
    );
    // Drop the section header table (the loader never reads it; it sits at the end of the
    // file), then cut the file in the middle of its largest loadable segment (the code), so
    // that the loader would map pages past the end of the file.
    bytes[0x28..0x30].fill(0);
    bytes[0x3c..0x40].fill(0);
    let le = |at: usize, n: usize| {
        bytes[at..at + n]
            .iter()
            .rev()
            .fold(0_u64, |acc, &b| (acc << 8) | u64::from(b))
    };
    let phoff = le(0x20, 8) as usize;
    let (phentsize, phnum) = (le(0x36, 2) as usize, le(0x38, 2) as usize);
    let (offset, filesz) = (0..phnum)
        .map(|i| phoff + i * phentsize)
        .filter(|&ph| le(ph, 4) == 1)
        .map(|ph| (le(ph + 8, 8), le(ph + 0x20, 8)))
        .max_by_key(|&(_, filesz)| filesz)
        .expect("a PT_LOAD segment");
    bytes.truncate((offset + filesz / 2) as usize);
    std::fs::write(&plugin, &bytes).expect("write");
    let (policy, run, _d) = validate_plugin(&plugin);
    assert_refused(
        &policy,
        &run,
        &plugin,
        "is truncated or damaged: a segment needs bytes",
    );
}

#[test]
fn a_text_file_as_plugin_is_refused_as_not_a_shared_library() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("libtext.so");
    std::fs::write(&plugin, "not a library\n").expect("write");
    let (policy, run, _d) = validate_plugin(&plugin);
    assert_refused(&policy, &run, &plugin, "is not a shared library");
}

#[test]
fn a_directory_as_plugin_is_refused_as_a_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("libdir.so");
    std::fs::create_dir(&plugin).expect("mkdir");
    let (policy, run, _d) = validate_plugin(&plugin);
    assert_refused(
        &policy,
        &run,
        &plugin,
        "is a directory, not a shared library file",
    );
}

#[cfg(unix)]
#[test]
fn dev_zero_as_plugin_is_refused_as_a_device() {
    let plugin = Path::new("/dev/zero");
    let (policy, run, _d) = validate_plugin(plugin);
    assert_refused(
        &policy,
        &run,
        plugin,
        "is a character device, not a shared library file",
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_as_plugin_is_refused_without_blocking() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("libfifo.so");
    let made = Command::new("mkfifo")
        .arg(&plugin)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let (policy, run, _d) = validate_plugin(&plugin);
    assert_refused(
        &policy,
        &run,
        &plugin,
        "is a FIFO (named pipe), not a shared library file",
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_plugin_with_a_missing_dependency_reports_the_loaders_own_message() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plugin = dir.path().join("libneeds.so");
    let mut bytes = std::fs::read(fs_library()).expect("read");
    let needle = b"libgcc_s.so.1\0";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the fs plugin depends on libgcc_s.so.1");
    bytes[at..at + 13].copy_from_slice(b"libgcc_x.so.1");
    std::fs::write(&plugin, &bytes).expect("write");
    let (policy, run, _d) = validate_plugin(&plugin);
    run.assert_code(3);
    assert!(
        run.stderr.contains(&format!(
            "{}:3:5: plugin {p}: cannot open plugin library {p}: libgcc_x.so.1: cannot open \
             shared object file: No such file or directory",
            policy.display(),
            p = plugin.display()
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn a_misnamed_plugin_names_the_file_it_looked_for_and_the_installed_plugin_like_it() {
    let (policy, run, _d) = validate_policy("version: 1\nplugins:\n  - name: fss\n", "name: fss");
    run.assert_code(3);
    let fs = fs_library();
    let expected_file = fs
        .file_name()
        .and_then(|f| f.to_str())
        .expect("a file name")
        .replace("toolgate_plugin_fs", "toolgate_plugin_fss");
    let program_dir = fs.parent().expect("a directory");
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with(&format!("{}:3:", policy.display())))
        .unwrap_or_else(|| panic!("no diagnostic at line 3:\n{}", run.stderr));
    assert!(
        line.contains(&format!(
            "plugin \"fss\" not found: no file {expected_file} in "
        )),
        "{line}"
    );
    assert!(line.contains(&program_dir.display().to_string()), "{line}");
    assert!(
        line.contains(&format!("did you mean `name: fs` ({})", fs.display())),
        "{line}"
    );
    assert!(!line.contains("cargo build"), "{line}");
}
