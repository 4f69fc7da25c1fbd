//! Plugin tools: finds and loads plugin libraries (through `toolgate-plugin-api`'s host side)
//! and adapts each of their tools to [`Tool`].
//!
//! A plugin call is a blocking C call, so it runs on a thread of the plugin's own pool
//! ([`pool`]): the call is handed over a queue to a thread that is already there, and its
//! result comes back over a oneshot channel (the caller watches it for a short while first,
//! spinning, then yielding, when the plugin's calls are quick: [`wait`]). When the call is
//! cancelled (timeout, turn cancelled) its cancellation flag is set for the plugin to poll, and
//! the guard stops waiting at once: a plugin that ignores cancellation finishes on its own
//! thread and its late result is discarded. Libraries are never unloaded.
//!
//! Each plugin may hold at most `max_threads` threads at once, abandoned calls that still run
//! included, so stubborn calls cannot pile up threads. A call that finds them all taken waits
//! in a bounded queue (`max_queued`), served fairly across sessions ([`admission`]), within its
//! timeout; only a call that finds the queue full fails at once with `overloaded`. A call keeps
//! its thread (and its sequential group's lock) until the plugin really returns.
//!
//! Under `isolation: process` the same tools run in a worker process instead ([`worker`]);
//! `max_threads` then bounds the calls in flight on it. Either way a tool that streams
//! (`ctx.emit` in the SDK) becomes a [`ToolOutput::Stream`] the guard caps as it reads, and
//! dropping it stops the plugin. `sha256:` pins and the capabilities a manifest asks for are
//! checked here, at load; the grants reach the plugin in its configuration.

mod admission;
#[cfg(target_os = "linux")]
pub(crate) mod landlock;
mod locate;
mod pidfd;
mod pinned;
// Also the script pool's (`script::pool`).
mod output;
pub(crate) mod pool;
#[cfg(target_os = "linux")]
pub(crate) mod sandbox;
#[cfg(target_os = "linux")]
pub(crate) mod seccomp;
pub(crate) mod wait;
pub use pinned::hash_file;
pub(crate) mod worker;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolgate_plugin_api::worker::Confine;
use toolgate_plugin_api::{CancelFlag, Capabilities, LoadedPlugin, PluginOutcome};
use toolgate_policy::{Isolation, PluginSpec};

use crate::error::{At, BuildError, PluginError};
use crate::tool::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use output::{output_of_reply, spec_of};

/// The configuration a plugin receives: the policy's `config`, with the grants under
/// `"grants"` when the policy has `grants:` (into a mapping, or a missing configuration;
/// another kind of value is left as written).
fn config_with_grants(
    config: &serde_json::Value,
    grants: Option<&toolgate_policy::Grants>,
) -> serde_json::Value {
    let mut config = config.clone();
    if let Some(grants) = grants {
        if config.is_null() {
            config = serde_json::Value::Object(serde_json::Map::new());
        }
        if let Some(map) = config.as_object_mut() {
            map.insert("grants".to_string(), grants.to_json());
        }
    }
    config
}

/// The policy's grants in the manifest's terms.
fn granted(grants: Option<&toolgate_policy::Grants>) -> Capabilities {
    let Some(g) = grants else {
        return Capabilities::default();
    };
    let paths = |paths: &[PathBuf]| paths.iter().map(|p| p.display().to_string()).collect();
    Capabilities {
        fs_read: paths(&g.fs_read),
        fs_write: paths(&g.fs_write),
        env: g.env.clone(),
        net: g.net.clone(),
        subprocess: g.subprocess,
    }
}

/// A plugin loaded for the registry: its name, its library and its tools.
pub(crate) struct Loaded {
    pub name: String,
    pub path: PathBuf,
    pub tools: Vec<Arc<dyn Tool>>,
}

/// Loads the plugin of a spec, in this process or in a worker started from `program`
/// (`isolation: process`), and adapts its tools; together they hold at most `max_threads`
/// threads (or calls on the worker) at once.
pub(crate) fn load(spec: &PluginSpec, program: &Path) -> Result<Loaded, BuildError> {
    let located = locate::locate(spec)?;
    let path = located.path.clone();
    let fail = |source: PluginError| BuildError::Plugin {
        path: path.display().to_string(),
        source: Box::new(source),
        at: At(spec.position.clone()),
    };
    // A pinned library is read once; what loads is the bytes that were hashed (`pinned`).
    let pinned = match (&spec.sha256, located.builtin) {
        (Some(_), Some(builtin)) => {
            return Err(fail(PluginError::BuiltinPinned {
                plugin: builtin.name().to_string(),
            }));
        }
        (Some(expected), None) => Some(Arc::new(pinned::pin(&path, expected).map_err(fail)?)),
        (None, _) => None,
    };
    #[cfg(test)]
    tests::after_pin(&path);
    let config = config_with_grants(&spec.config, spec.grants.as_ref());
    // The policy's folder, absolute: the worker may run elsewhere (its own mount namespace),
    // and a policy not read from a file has none (its paths are the working directory's).
    let base_dir = std::path::absolute(if spec.base_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        spec.base_dir.as_path()
    })
    .unwrap_or_else(|_| spec.base_dir.clone());
    let grants = granted(spec.grants.as_ref());
    let max_threads = spec.max_threads.max(1);
    let (name, backend, specs, asked) = match spec.isolation {
        Isolation::InProcess => {
            let opened = match located.builtin {
                Some(builtin) => LoadedPlugin::open_builtin(builtin),
                None => {
                    let load_path = pinned.as_ref().map_or(path.as_path(), |p| p.load_path());
                    // SAFETY: a policy is trusted configuration, like a program's command
                    // line: the libraries it names are ones its author chose to run in this
                    // process (docs/policy.md, `plugins`). That promise is the `# Safety`
                    // contract of `LoadedPlugin::open`; `open` checks the rest.
                    unsafe { LoadedPlugin::open(load_path) }
                }
            }
            .map_err(|e| fail(e.into()))?;
            // Before `init`: a plugin asking for more than granted is never started.
            let missing = opened.manifest().capabilities.missing_from(&grants);
            if !missing.is_empty() {
                return Err(fail(PluginError::NotGranted {
                    plugin: opened.manifest().name.clone(),
                    missing,
                }));
            }
            if let Some(pinned) = pinned {
                pinned.keep_forever();
            }
            let mut config = config;
            toolgate_plugin_api::resolve_config_paths(
                &opened.manifest().config_paths,
                &mut config,
                &base_dir,
            )
            .map_err(|e| fail(e.into()))?;
            let plugin = opened
                .start(&config)
                .map(Arc::new)
                .map_err(|e| fail(e.into()))?;
            if !plugin.can_stream() {
                tracing::warn!(
                    "plugin {} ({}) was built for an older plugin ABI: the first table of ABI \
                     {}, without streamed results. It works, but its results arrive whole; \
                     rebuild it against the current toolgate-plugin-api",
                    plugin.name(),
                    path.display(),
                    toolgate_plugin_api::abi::ABI_VERSION
                );
            }
            let specs: Vec<ToolSpec> = plugin
                .tools()
                .iter()
                .map(|t| {
                    spec_of(
                        ToolSpec::new(t.name.clone(), t.description.clone(), t.parameters.clone()),
                        t.title.clone(),
                        t.annotations.clone(),
                        t.output_schema.clone(),
                    )
                })
                .collect();
            let pool = Arc::new(pool::Pool::new(plugin.name(), max_threads));
            let asked = plugin.capabilities().clone();
            (
                plugin.name().to_string(),
                Backend::InProcess { plugin, pool },
                specs,
                asked,
            )
        }
        Isolation::Process => {
            let (supervisor, manifest) = worker::Supervisor::start(worker::WorkerSpec {
                program: program.to_path_buf(),
                // A built-in is served by the program itself, which the worker may read.
                library: match located.builtin {
                    Some(_) => program.to_path_buf(),
                    None => path.clone(),
                },
                builtin: located.builtin.map(|b| b.name().to_string()),
                base_dir,
                pinned: pinned.clone(),
                deny_net: grants.net.is_empty(),
                grants: grants.clone(),
                config,
                memory_limit: spec.memory_limit,
                // Always confined: without `grants:`, nothing is granted.
                confine: Some(Confine {
                    fs_read: spec
                        .grants
                        .as_ref()
                        .map(|g| g.fs_read.clone())
                        .unwrap_or_default(),
                    fs_write: spec
                        .grants
                        .as_ref()
                        .map(|g| g.fs_write.clone())
                        .unwrap_or_default(),
                    net: !grants.net.is_empty(),
                    subprocess: grants.subprocess,
                }),
                env: spec
                    .grants
                    .as_ref()
                    .map(|g| g.env.clone())
                    .unwrap_or_default(),
            })
            .map_err(|e| {
                fail(match e {
                    crate::error::WorkerError::NotGranted { plugin, missing } => {
                        PluginError::NotGranted { plugin, missing }
                    }
                    e => e.into(),
                })
            })?;
            let specs = manifest
                .tools
                .into_iter()
                .map(|t| {
                    spec_of(
                        ToolSpec::new(t.name, t.description, t.parameters),
                        t.title,
                        t.annotations,
                        t.output_schema,
                    )
                })
                .collect();
            (
                manifest.name,
                Backend::Process(supervisor),
                specs,
                manifest.capabilities,
            )
        }
    };
    // Checked before `init` above (in process) or by the worker; this catches a worker program
    // that ignores hello's grants. Dropping the backend unloads an in-process instance, or
    // ends the worker.
    let missing = asked.missing_from(&grants);
    if !missing.is_empty() {
        return Err(fail(PluginError::NotGranted {
            plugin: name,
            missing,
        }));
    }
    let admission = Arc::new(admission::Admission::new(
        &name,
        max_threads,
        spec.max_queued,
    ));
    let tools = specs
        .into_iter()
        .map(|spec| {
            Arc::new(PluginTool {
                plugin_name: name.clone(),
                spec,
                admission: admission.clone(),
                backend: backend.clone(),
            }) as Arc<dyn Tool>
        })
        .collect();
    Ok(Loaded { name, path, tools })
}

/// Where a plugin's calls run.
#[derive(Clone)]
enum Backend {
    /// Loaded here; calls run on the plugin's own threads.
    InProcess {
        plugin: Arc<LoadedPlugin>,
        pool: Arc<pool::Pool>,
    },
    /// Loaded by a worker process.
    Process(Arc<worker::Supervisor>),
}

/// One tool of a plugin.
pub(crate) struct PluginTool {
    plugin_name: String,
    spec: ToolSpec,
    /// The plugin's threads (or calls on its worker) and the calls waiting for them, shared
    /// by its tools.
    admission: Arc<admission::Admission>,
    backend: Backend,
}

/// Sets the flag when the waiting future is dropped (a timeout drops it).
struct CancelOnDrop(CancelFlag);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Tool for PluginTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        ctx: ToolContext,
        args: serde_json::Value,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        // The place is taken before the future exists: the order of the calls is the order
        // they asked in.
        let ticket = match self.admission.admit(ctx.session.as_ref()) {
            Ok(ticket) => ticket,
            Err(full) => {
                return Box::pin(async move { Err(ToolError::overloaded(full.message)) });
            }
        };
        let plugin_name = self.plugin_name.clone();
        let name = self.spec.name.clone();
        let backend = self.backend.clone();
        Box::pin(async move {
            let thread = match ticket {
                admission::Ticket::Now(permit) => permit,
                admission::Ticket::Queued(queued) => {
                    let _waiting = ctx.waited.start();
                    tokio::select! {
                        permit = queued.turn() => permit.ok_or_else(|| {
                            ToolError::new(format!("the queue of the plugin {plugin_name:?} closed"))
                        })?,
                        () = ctx.cancel.cancelled() => return Err(ToolError::new("cancelled")),
                    }
                }
            };
            let (chunk_tx, chunks) = mpsc::unbounded_channel();
            let cancel = ctx.cancel.clone();
            let (answer, guard): (BoxFuture<'static, Reply>, Box<dyn Send>) = match backend {
                Backend::InProcess { plugin, pool } => {
                    in_process(plugin, pool, name, thread, ctx, args, chunk_tx).map_err(|err| {
                        ToolError::new(format!(
                            "could not start a thread for the plugin {plugin_name:?}: {err}"
                        ))
                    })?
                }
                Backend::Process(supervisor) => {
                    let keep_chars = ctx.keep_chars;
                    // Both are held until the worker answers, or dies (or is killed for
                    // running past the deadline), not only until the timeout.
                    let keep = Box::new((thread, ctx.hold.clone()));
                    let call = async move {
                        supervisor
                            .call(
                                &name,
                                args.to_string(),
                                ctx.progress.clone(),
                                keep,
                                chunk_tx,
                                keep_chars,
                            )
                            .await
                    };
                    (Box::pin(call), Box::new(()))
                }
            };
            collect(chunks, answer, guard, cancel, plugin_name).await
        })
    }
}

/// What a plugin call answers at its end.
type Reply = Result<PluginOutcome, ToolError>;

/// Starts a call on the plugin's own threads: its end, and what cancels it when dropped; fails
/// only if no thread could be started for it.
fn in_process(
    plugin: Arc<LoadedPlugin>,
    pool: Arc<pool::Pool>,
    name: String,
    thread: admission::Permit,
    ctx: ToolContext,
    args: serde_json::Value,
    chunk_tx: mpsc::UnboundedSender<String>,
) -> std::io::Result<(BoxFuture<'static, Reply>, Box<dyn Send>)> {
    let flag = CancelFlag::new();
    let on_drop = CancelOnDrop(flag.clone());
    let thread_flag = flag.clone();
    let progress = ctx.progress.clone();
    let hold = ctx.hold.clone();
    let args = args.to_string();
    let keep = ctx.keep_chars;
    let (done, outcome) = oneshot::channel();
    let job = Box::new(move |finishing: &pool::Finishing| {
        // Both are released when the plugin really returns, not at the timeout.
        let _thread = thread;
        let _hold = hold;
        let mut report = |m: &str| {
            if let Some(p) = &progress {
                p(m);
            }
        };
        // More only while someone reads and the call is not cancelled.
        let mut chunk =
            |text: &str| chunk_tx.send(text.to_string()).is_ok() && !thread_flag.is_cancelled();
        let result = catch_unwind(AssertUnwindSafe(|| {
            plugin.call_streaming(&name, &args, &thread_flag, &mut report, &mut chunk, keep)
        }));
        let result = result.map_err(|payload| crate::call::panic_message(payload.as_ref()));
        finishing.now();
        // Nobody waits any more after a timeout: the late result is dropped.
        let _ = done.send(result);
    });
    pool.submit(job)?;
    let quick = pool.ran_within(wait::CALLER_WAIT);
    let answer = async move {
        match wait::answer(outcome, quick.then(|| pool.caller_spin())).await {
            Some(Ok(outcome)) => Ok(outcome),
            Some(Err(message)) => Err(ToolError::panic(message)),
            None => Err(ToolError::panic(
                "the plugin call's thread ended without an answer",
            )),
        }
    };
    Ok((Box::pin(answer), Box::new(on_drop)))
}

/// Waits for a plugin call: a call that ends before it streams anything gives its output
/// whole; one that streams first becomes a [`ToolOutput::Stream`] (its chunks, then the text
/// of its result), which the guard reads under the result cap, dropping it (and with it
/// `guard`, which cancels the call) once the cap is reached.
async fn collect(
    mut chunks: mpsc::UnboundedReceiver<String>,
    mut answer: BoxFuture<'static, Reply>,
    guard: Box<dyn Send>,
    cancel: CancellationToken,
    plugin_name: String,
) -> Result<ToolOutput, ToolError> {
    let first = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(ToolError::new("cancelled")),
        reply = &mut answer => {
            // Chunks sent before the end are already queued.
            let mut text = String::new();
            while let Ok(chunk) = chunks.try_recv() {
                text.push_str(&chunk);
            }
            return output_of_reply(reply, text, &plugin_name);
        }
        chunk = chunks.recv() => match chunk {
            Some(chunk) => chunk,
            // The sender is gone: the end is there, or comes at once.
            None => return output_of_reply(answer.await, String::new(), &plugin_name),
        },
    };
    struct State {
        first: Option<String>,
        chunks: mpsc::UnboundedReceiver<String>,
        answer: Option<BoxFuture<'static, Reply>>,
        _guard: Box<dyn Send>,
        plugin_name: String,
    }
    let state = State {
        first: Some(first),
        chunks,
        answer: Some(answer),
        _guard: guard,
        plugin_name,
    };
    let stream = futures::stream::unfold(state, |mut state| async move {
        if let Some(first) = state.first.take() {
            return Some((Ok(first), state));
        }
        let mut answer = state.answer.take()?;
        let reply = tokio::select! {
            biased;
            chunk = state.chunks.recv() => match chunk {
                Some(chunk) => {
                    state.answer = Some(answer);
                    return Some((Ok(chunk), state));
                }
                None => answer.await,
            },
            reply = &mut answer => reply,
        };
        let mut text = String::new();
        while let Ok(chunk) = state.chunks.try_recv() {
            text.push_str(&chunk);
        }
        let last = match output_of_reply(reply, text, &state.plugin_name) {
            Ok(ToolOutput::Text(text)) if text.is_empty() => return None,
            Ok(ToolOutput::Text(text)) => Ok(text),
            Ok(_) => Err(ToolError::new(
                "the plugin streamed text, then returned an image; a streamed result can only be text",
            )),
            Err(err) => Err(err),
        };
        Some((last, state))
    });
    Ok(ToolOutput::Stream(Box::pin(stream)))
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::path::{Path, PathBuf};

    use toolgate_plugin_api::library_file_name;
    use toolgate_policy::{Isolation, PluginLocation, PluginSpec};

    use super::*;

    /// What a test runs on a library's path.
    type Hook = Box<dyn Fn(&Path)>;

    thread_local! {
        /// Runs in `load` on this thread right after a pin is checked, before the library loads.
        static AFTER_PIN: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    pub(super) fn after_pin(path: &Path) {
        AFTER_PIN.with(|hook| {
            if let Some(hook) = hook.borrow().as_ref() {
                hook(path);
            }
        });
    }

    /// The built workspace's folder (target/debug): the test binary is in its `deps`.
    fn target_dir() -> PathBuf {
        let exe = std::env::current_exe().expect("current_exe");
        let deps = exe.parent().expect("deps folder");
        deps.parent().expect("profile folder").to_path_buf()
    }

    fn built_plugin(name: &str) -> PathBuf {
        let path = target_dir().join(library_file_name(&format!("toolgate_plugin_{name}")));
        assert!(
            path.is_file(),
            "{} is missing: run `cargo build --workspace` first",
            path.display()
        );
        path
    }

    /// A copy of the `name` plugin in `dir`, pinned to its hash.
    fn pinned_copy(dir: &Path, name: &str, isolation: Isolation) -> PluginSpec {
        let path = dir.join(library_file_name(&format!("pinned_{name}")));
        std::fs::copy(built_plugin(name), &path).expect("copied");
        let mut spec = PluginSpec::new(PluginLocation::Path(path.clone()));
        spec.sha256 = Some(hash_file(&path).expect("hashed"));
        spec.isolation = isolation;
        spec
    }

    /// Loads `spec` while the hook replaces its library with the `fs` plugin right after the
    /// pin was checked.
    fn load_swapped_after_pin(spec: &PluginSpec) -> Loaded {
        let fs = built_plugin("fs");
        AFTER_PIN.with(|hook| {
            *hook.borrow_mut() = Some(Box::new(move |path: &Path| {
                // A new file renamed over the old one, as an attacker (or an update) would.
                let swap = path.with_extension("swap");
                std::fs::copy(&fs, &swap).expect("copied");
                std::fs::rename(&swap, path).expect("renamed");
            }));
        });
        let loaded = load(spec, &target_dir().join("toolgate"));
        AFTER_PIN.with(|hook| hook.borrow_mut().take());
        loaded.unwrap_or_else(|e| panic!("the pinned library loads: {e:?}"))
    }

    // Elsewhere the file is loaded by its path after the check (docs/plugins.md).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_pinned_library_swapped_after_its_check_still_loads_the_checked_bytes_in_process() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let spec = pinned_copy(dir.path(), "testkit", Isolation::InProcess);
        let loaded = load_swapped_after_pin(&spec);
        assert_eq!(loaded.name, "testkit");
    }

    // Elsewhere the file is loaded by its path after the check (docs/plugins.md).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_pinned_library_swapped_after_its_check_still_loads_the_checked_bytes_in_a_worker() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let spec = pinned_copy(dir.path(), "testkit", Isolation::Process);
        let loaded = load_swapped_after_pin(&spec);
        assert_eq!(loaded.name, "testkit");
    }

    /// The text of a call to `tool` of `loaded`.
    async fn call_text(loaded: &Loaded, tool: &str, args: serde_json::Value) -> String {
        let tool = loaded
            .tools
            .iter()
            .find(|t| t.spec().name == tool)
            .unwrap_or_else(|| panic!("testkit has {tool}"));
        match tool.call(ToolContext::detached("c"), args).await {
            Ok(ToolOutput::Text(text)) => text,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_result_that_comes_after_the_callers_wait_on_a_multi_thread_runtime_still_arrives() {
        let spec = PluginSpec::new(PluginLocation::Path(built_plugin("testkit")));
        let loaded = load(&spec, &target_dir().join("toolgate")).expect("testkit loads");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let texts = rt.block_on(async move {
            tokio::spawn(async move {
                // A quick call first: the next caller waits for its result before it sleeps.
                let quick = call_text(&loaded, "echo", serde_json::json!({"text": "hi"})).await;
                let slow = call_text(&loaded, "sleep", serde_json::json!({"ms": 20})).await;
                (quick, slow)
            })
            .await
            .expect("the task ends")
        });
        assert_eq!(texts, ("hi".to_string(), "slept 20 ms".to_string()));
    }

    #[test]
    fn two_pinned_libraries_in_process_each_load_as_themselves() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let program = target_dir().join("toolgate");
        let first = load(
            &pinned_copy(dir.path(), "testkit", Isolation::InProcess),
            &program,
        )
        .expect("testkit loads");
        let mut fs = pinned_copy(dir.path(), "fs", Isolation::InProcess);
        fs.config = serde_json::json!({"root": dir.path()});
        let second = load(&fs, &program).expect("fs loads");
        assert_eq!(
            (first.name.as_str(), second.name.as_str()),
            ("testkit", "fs")
        );
    }
}
