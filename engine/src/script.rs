//! Policy scripts in a sandboxed Rhai engine.
//!
//! Scripts are compiled once, when the engine is built; a script that does not compile fails the
//! build with its file and line. The engine starts from [`rhai::Engine::new_raw`] (no module
//! resolver, so no `import` of files; no output on stdout: `print` and `debug` go to `tracing`)
//! and has explicit limits on operations, call depth, expression depth, string, array and map
//! sizes, because Rhai's defaults differ between debug and release builds.
//!
//! A run starts on the caller's thread (a runtime worker) under a small budget of its own
//! (`INLINE_OPS` operations, `INLINE_TIME`, `INLINE_MEMORY` held, no `sleep`): most
//! hooks end well within it, without a hop to another thread. A script that needs more is
//! abandoned there and runs again from the start on a bounded pool of threads of its own
//! (`pool`), so a slow script holds a runtime worker for no longer than the inline budget and
//! holds up no other call. Scripts have no effects to repeat (no IO, no state shared between
//! runs; the `print`/`debug` lines of an abandoned run are dropped, not written), so the run
//! on the pool answers as the inline run would have. Each run has a wall-clock bound of its own
//! (`dispatch.script_timeout`, default 1 s) that counts from when the hook asked for it, also
//! when the call has no timeout; the call's deadline and cancellation are checked too. The
//! operation limit counts the whole run, callbacks (`sort` comparators, `map` closures)
//! included, and a limit once hit fails the run even where a native function swallowed the
//! error; native functions that would allocate past the size limits or block check first
//! (`limits`). A script past its bound ends with a `tool_policy_panic` that names the bound; a
//! script past the call's deadline makes the call a `timeout`.
//!
//! Every script sees these variables: `kind` (`"tool"`, or for a read or get through
//! [`crate::Engine::access`] `"resource"` or `"prompt"`, A1), `tool` (the real tool name; a
//! resource's URI in normal form; a prompt's `<server>.<prompt>`), `model_name` (the name the
//! model or client used), `args` (the arguments, a map: a resource's are `#{uri: ...}`),
//! `call_id`, `session` (`()` without one) and `caller` (who calls, C1: `#{name, groups,
//! claims}`, `name` being `"local"` for the CLI and stdio). The rewrite script runs for tool
//! calls only.
//! (`call` is a Rhai keyword, so the call's fields are variables of their own.)
//!
//! | hook | also sees | returns |
//! |---|---|---|
//! | `rewrite` | | a map of new arguments, or `()` for unchanged |
//! | `before` | | `()` or `true` to allow; `false` or a string (the reason) to deny |
//! | `after` | `outcome` = `#{duration_ms, queued_ms, is_error, error_kind, error, chars, truncated}` | ignored |
//! | `unknown_tool` | `suggestions` (array of names) | the text answer, or `()` for the default |

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rhai::{AST, Dynamic, Engine, EvalAltResult, ImmutableString, Scope};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use toolgate_policy::{Hook, ScriptSource, Scripts};

use crate::call::{Invocation, panic_message};
use crate::error::{BuildError, CallError, ScriptSyntaxError};

mod limits;
mod memory;
mod pool;

pub use memory::ScriptMemory;
#[cfg(test)]
mod tests;

use limits::Budget;
use pool::ScriptPool;

use crate::plugin::pool::Finishing;
use crate::plugin::wait;

/// Resource limits for policy scripts. The defaults are the same in debug and release builds.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptLimits {
    /// Operations one run may take.
    pub max_operations: u64,
    /// How deep functions may call each other.
    pub max_call_levels: usize,
    /// How deep expressions may nest at the top level.
    pub max_expr_depth: usize,
    /// How deep expressions may nest inside functions.
    pub max_function_expr_depth: usize,
    /// The longest string, in bytes.
    pub max_string_size: usize,
    /// The most elements of an array.
    pub max_array_size: usize,
    /// The most entries of a map.
    pub max_map_size: usize,
    /// The most variables in scope.
    pub max_variables: usize,
    /// The most functions a script may define.
    pub max_functions: usize,
    /// The most bytes one run may hold, counted by [`ScriptMemory`] when the program installs
    /// it as its global allocator (the `toolgate` program does).
    pub max_memory: usize,
}

impl Default for ScriptLimits {
    fn default() -> Self {
        ScriptLimits {
            max_operations: 1_000_000,
            max_call_levels: 32,
            max_expr_depth: 64,
            max_function_expr_depth: 32,
            max_string_size: 1 << 20,
            max_array_size: 10_000,
            max_map_size: 10_000,
            max_variables: 1_000,
            max_functions: 256,
            max_memory: 64 << 20,
        }
    }
}

/// The most operations a run on the caller's thread may take before it is abandoned and
/// run again on a script thread. A hook of a few dozen lines takes a few hundred.
pub(crate) const INLINE_OPS: u64 = 5_000;

/// How long a run on the caller's thread may take before it is abandoned (checked every few
/// operations) and run again on a script thread: about what a hop to the script thread costs
/// on a loaded machine.
pub(crate) const INLINE_TIME: Duration = Duration::from_micros(100);

/// The most bytes a run on the caller's thread may hold before it is abandoned and run again
/// on a script thread: a single operation on values this large is quick.
pub(crate) const INLINE_MEMORY: usize = 256 << 10;

/// The default wall-clock bound of one script run.
pub(crate) const DEFAULT_SCRIPT_TIMEOUT: Duration = Duration::from_secs(1);

/// Builds the sandboxed engine.
fn sandbox(limits: &ScriptLimits) -> Engine {
    let mut engine = Engine::new_raw();
    engine.register_global_module(rhai::packages::Package::as_shared_module(
        &rhai::packages::StandardPackage::new(),
    ));
    engine
        .set_max_operations(limits.max_operations)
        .set_max_call_levels(limits.max_call_levels)
        .set_max_expr_depths(limits.max_expr_depth, limits.max_function_expr_depth)
        .set_max_string_size(limits.max_string_size)
        .set_max_array_size(limits.max_array_size)
        .set_max_map_size(limits.max_map_size)
        .set_max_variables(limits.max_variables)
        .set_max_functions(limits.max_functions)
        .set_max_modules(0);
    engine.disable_symbol("eval");
    limits::register_checked_natives(&mut engine);
    engine.on_print(limits::print);
    engine.on_debug(limits::debug);
    engine.on_progress(limits::on_progress);
    engine
}

struct Compiled {
    ast: AST,
    file: PathBuf,
    line_offset: u32,
    column_offset: u32,
}

impl Compiled {
    fn locate(&self, pos: rhai::Position) -> String {
        match pos.line() {
            Some(line) => format!(
                "{}:{}:{}",
                self.file.display(),
                line as u32 + self.line_offset - 1,
                pos.position().unwrap_or(1) as u32 + self.column_offset
            ),
            None => self.file.display().to_string(),
        }
    }
}

/// The view of a call that scripts get.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallView<'a> {
    pub(crate) kind: &'static str,
    pub(crate) tool: &'a str,
    pub(crate) model_name: &'a str,
    pub(crate) args: &'a serde_json::Value,
    pub(crate) call_id: &'a str,
    pub(crate) session: Option<&'a str>,
    pub(crate) caller: &'a crate::caller::Caller,
}

impl<'a> CallView<'a> {
    /// What the scripts see of `inv`.
    pub(crate) fn of(inv: &'a Invocation) -> Self {
        CallView {
            kind: inv.kind.as_str(),
            tool: &inv.tool_name,
            model_name: &inv.model_name,
            args: &inv.args,
            call_id: &inv.call_id,
            session: inv.session.as_ref().map(|s| s.as_str()),
            caller: &inv.caller,
        }
    }
}

/// The view of an outcome that the `after` script gets.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct OutcomeView<'a> {
    pub(crate) duration_ms: f64,
    pub(crate) queued_ms: f64,
    pub(crate) is_error: bool,
    pub(crate) error_kind: Option<&'a str>,
    pub(crate) error: Option<String>,
    pub(crate) chars: u64,
    pub(crate) truncated: bool,
}

impl OutcomeView<'_> {
    /// The outcome as the `after` script sees it: what `rhai::serde::to_dynamic` makes of it,
    /// built directly.
    fn to_dynamic(&self) -> Dynamic {
        let text = |s: Option<&str>| s.map_or(Dynamic::UNIT, |s| ImmutableString::from(s).into());
        let mut map = rhai::Map::new();
        map.insert("duration_ms".into(), Dynamic::from_float(self.duration_ms));
        map.insert("queued_ms".into(), Dynamic::from_float(self.queued_ms));
        map.insert("is_error".into(), Dynamic::from_bool(self.is_error));
        map.insert("error_kind".into(), text(self.error_kind));
        map.insert("error".into(), text(self.error.as_deref()));
        map.insert(
            "chars".into(),
            i64::try_from(self.chars).map_or_else(
                |_| Dynamic::from_float(self.chars as f64),
                Dynamic::from_int,
            ),
        );
        map.insert("truncated".into(), Dynamic::from_bool(self.truncated));
        Dynamic::from_map(map)
    }
}

/// What the `before` script decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Allow,
    Deny(String),
}

/// The compiled scripts of a policy.
pub(crate) struct ScriptSet {
    engine: Arc<Engine>,
    /// The wall-clock bound of one run.
    timeout: Duration,
    /// The operations one run may take, callbacks included.
    max_operations: u64,
    /// The bytes one run may hold.
    max_memory: usize,
    /// The threads the scripts run on.
    pool: ScriptPool,
    rewrite: Option<Compiled>,
    before: Option<Compiled>,
    after: Option<Compiled>,
    unknown_tool: Option<Compiled>,
}

impl std::fmt::Debug for ScriptSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptSet")
            .field("rewrite", &self.rewrite.is_some())
            .field("before", &self.before.is_some())
            .field("after", &self.after.is_some())
            .field("unknown_tool", &self.unknown_tool.is_some())
            .finish()
    }
}

impl ScriptSet {
    /// Compiles every script of the policy. The first one that does not compile fails with
    /// `file:line:col: rhai: <message> (in the <hook> script)`.
    pub(crate) fn compile(
        scripts: &Scripts,
        limits: &ScriptLimits,
    ) -> Result<ScriptSet, BuildError> {
        let engine = Arc::new(sandbox(limits));
        let compile =
            |hook: Hook, src: &Option<ScriptSource>| -> Result<Option<Compiled>, BuildError> {
                let Some(src) = src else { return Ok(None) };
                match engine.compile(&src.code) {
                    Ok(ast) => Ok(Some(Compiled {
                        ast,
                        file: src.file.clone(),
                        line_offset: src.line_offset.max(1),
                        column_offset: src.column_offset,
                    })),
                    Err(e) => {
                        let c = Compiled {
                            ast: AST::empty(),
                            file: src.file.clone(),
                            line_offset: src.line_offset.max(1),
                            column_offset: src.column_offset,
                        };
                        Err(BuildError::Script {
                            location: c.locate(e.1),
                            hook,
                            source: ScriptSyntaxError(e),
                        })
                    }
                }
            };
        Ok(ScriptSet {
            rewrite: compile(Hook::Rewrite, &scripts.rewrite)?,
            before: compile(Hook::Before, &scripts.before)?,
            after: compile(Hook::After, &scripts.after)?,
            unknown_tool: compile(Hook::UnknownTool, &scripts.unknown_tool)?,
            engine,
            timeout: DEFAULT_SCRIPT_TIMEOUT,
            max_operations: limits.max_operations,
            max_memory: limits.max_memory,
            pool: ScriptPool::new(),
        })
    }

    /// Sets the wall-clock bound of each run (`dispatch.script_timeout`); it must be above zero.
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Result<Self, BuildError> {
        if timeout.is_zero() {
            return Err(BuildError::Setting {
                message: "dispatch.script_timeout must be above zero: every script run needs a \
                          bound"
                    .into(),
                at: crate::error::At(None),
            });
        }
        self.timeout = timeout;
        Ok(self)
    }

    pub(crate) fn has(&self, hook: Hook) -> bool {
        self.get(hook).is_some()
    }

    fn get(&self, hook: Hook) -> Option<&Compiled> {
        match hook {
            Hook::Rewrite => self.rewrite.as_ref(),
            Hook::Before => self.before.as_ref(),
            Hook::After => self.after.as_ref(),
            Hook::UnknownTool => self.unknown_tool.as_ref(),
        }
    }

    /// Runs a hook's script with the variables `scope` gives: first on this thread under the
    /// inline budget, and if it needs more, again from the start on the script pool. `None`
    /// when there is no such script. The run's bound counts from now; the caller has its
    /// answer by then (plus `pool::GRACE`). If the caller stops waiting, the script still
    /// stops at its bound or at the call's cancellation.
    async fn run(
        self: &Arc<Self>,
        hook: Hook,
        scope: impl Fn() -> Scope<'static>,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
    ) -> Option<Result<Dynamic, CallError>> {
        self.get(hook)?;
        let now = Instant::now();
        let until = now + self.timeout;
        let inline = limits::Inline {
            until: now + INLINE_TIME,
            max_ops: INLINE_OPS,
            max_memory: INLINE_MEMORY,
        };
        if let Some(done) = self.run_here(hook, scope(), until, deadline, cancel, Some(inline)) {
            return Some(done);
        }
        tracing::trace!(target: "toolgate::script", ?hook, "the script needs more than an inline run");
        Some(
            self.run_on_pool(hook, scope(), until, deadline, cancel)
                .await,
        )
    }

    /// Runs a hook's script on the script pool, bounded by `until`.
    async fn run_on_pool(
        self: &Arc<Self>,
        hook: Hook,
        scope: Scope<'static>,
        until: Instant,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
    ) -> Result<Dynamic, CallError> {
        let policy_panic = |message: String| CallError::ToolPolicyPanic { hook, message };
        let Some(slot) = self.pool.slot() else {
            return Err(policy_panic(format!(
                "the script did not run: {} scripts already wait for one of the {} script \
                 threads",
                self.pool.max_queued(),
                self.pool.threads()
            )));
        };
        let (done, answer) = oneshot::channel();
        let set = self.clone();
        let cancel = cancel.clone();
        let job = Box::new(move |finishing: &Finishing| {
            let _slot = slot;
            if done.is_closed() {
                // Nobody waits for it any more.
                return;
            }
            let result = if Instant::now() >= until {
                Err(set.waited_past_bound(hook))
            } else {
                // Not inline, so never abandoned.
                set.run_here(hook, scope, until, deadline, &cancel, None)
                    .unwrap_or(Ok(Dynamic::UNIT))
            };
            finishing.now();
            let _ = done.send(result);
        });
        if let Err(e) = self.pool.submit(job) {
            return Err(policy_panic(format!(
                "could not start a thread for the script: {e}"
            )));
        }
        let answer = wait::answer(answer, self.pool.caller_spin());
        match tokio::time::timeout_at((until + pool::GRACE).into(), answer).await {
            Ok(Some(result)) => result,
            Ok(None) => Err(policy_panic(
                "the script's thread ended without an answer".into(),
            )),
            Err(_) => Err(self.waited_past_bound(hook)),
        }
    }

    /// The answer for a run that did not start or end within its bound.
    fn waited_past_bound(&self, hook: Hook) -> CallError {
        CallError::ToolPolicyPanic {
            hook,
            message: format!(
                "the script did not finish within its {} bound (dispatch.script_timeout): all \
                 {} script threads were busy",
                toolgate_policy::format_duration(Some(self.timeout)),
                self.pool.threads()
            ),
        }
    }

    /// Runs a hook's script on this thread, bounded by `until`, and by `inline` when given:
    /// `None` when the run went past that and was abandoned.
    fn run_here(
        &self,
        hook: Hook,
        mut scope: Scope<'static>,
        until: Instant,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
        inline: Option<limits::Inline>,
    ) -> Option<Result<Dynamic, CallError>> {
        let policy_panic = |message: String| CallError::ToolPolicyPanic { hook, message };
        let Some(compiled) = self.get(hook) else {
            return Some(Ok(Dynamic::UNIT));
        };
        let budget = Budget::enter_until(
            until,
            self.timeout,
            deadline,
            cancel,
            (self.max_operations, self.max_memory),
            inline,
        );
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.engine
                .eval_ast_with_scope::<Dynamic>(&mut scope, &compiled.ast)
        }));
        if budget.abandoned() {
            return None;
        }
        budget.write_lines();
        Some(match result {
            // A limit hit inside a native function that swallowed the error (a `sort`
            // comparator) fails the run all the same.
            Ok(Ok(_)) if let Some(reason) = budget.tripped() => Err(policy_panic(format!(
                "{}: {reason}",
                compiled.file.display()
            ))),
            Ok(Ok(v)) => Ok(v),
            // The limit, however Rhai wrapped it (a callback's error inside its caller's).
            Ok(Err(e)) if let Some(reason) = budget.tripped() => Err(policy_panic(format!(
                "{}: {reason}",
                compiled.locate(e.position())
            ))),
            Ok(Err(e)) => Err(policy_panic(describe(&e, compiled))),
            Err(panic) => Err(policy_panic(format!(
                "the script engine panicked: {}",
                panic_message(&*panic)
            ))),
        })
    }

    /// Runs the `rewrite` script. `Ok(None)`: no script, or the script kept the arguments.
    pub(crate) async fn rewrite(
        self: &Arc<Self>,
        call: CallView<'_>,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
    ) -> Result<Option<serde_json::Value>, CallError> {
        if !self.has(Hook::Rewrite) {
            return Ok(None);
        }
        let scope = || scope_for(call);
        let Some(r) = self.run(Hook::Rewrite, scope, deadline, cancel).await else {
            return Ok(None);
        };
        let v = r?;
        if v.is_unit() {
            return Ok(None);
        }
        if !v.is_map() {
            return Err(CallError::ToolPolicyPanic {
                hook: Hook::Rewrite,
                message: format!(
                    "the rewrite script must return a map of arguments or (), not a {}",
                    v.type_name()
                ),
            });
        }
        rhai::serde::from_dynamic::<serde_json::Value>(&v)
            .map(Some)
            .map_err(|e| CallError::ToolPolicyPanic {
                hook: Hook::Rewrite,
                message: format!("the rewrite script returned arguments that are not JSON: {e}"),
            })
    }

    /// Runs the `before` script.
    pub(crate) async fn before(
        self: &Arc<Self>,
        call: CallView<'_>,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
    ) -> Result<Verdict, CallError> {
        if !self.has(Hook::Before) {
            return Ok(Verdict::Allow);
        }
        let scope = || scope_for(call);
        let Some(r) = self.run(Hook::Before, scope, deadline, cancel).await else {
            return Ok(Verdict::Allow);
        };
        let v = r?;
        if v.is_unit() {
            return Ok(Verdict::Allow);
        }
        if let Ok(b) = v.as_bool() {
            return Ok(if b {
                Verdict::Allow
            } else {
                Verdict::Deny("the before hook denied this call".into())
            });
        }
        if v.is_string() {
            return Ok(Verdict::Deny(v.to_string()));
        }
        Err(CallError::ToolPolicyPanic {
            hook: Hook::Before,
            message: format!(
                "the before script must return (), true, false or a reason string, not a {}",
                v.type_name()
            ),
        })
    }

    /// Runs the `after` script. Its failure is reported as an error event by the caller; the
    /// result stands (G6).
    /// It has no call deadline, only its own bound.
    pub(crate) async fn after(
        self: &Arc<Self>,
        call: CallView<'_>,
        outcome: &OutcomeView<'_>,
    ) -> Result<(), CallError> {
        if !self.has(Hook::After) {
            return Ok(());
        }
        let outcome = outcome.to_dynamic();
        let scope = || {
            let mut scope = scope_for(call);
            scope.push_constant("outcome", outcome.clone());
            scope
        };
        let never = CancellationToken::new();
        match self.run(Hook::After, scope, None, &never).await {
            Some(r) => r.map(|_| ()),
            None => Ok(()),
        }
    }

    /// Runs the `unknown_tool` script. `Ok(None)`: no script, or it returned `()`.
    pub(crate) async fn unknown_tool(
        self: &Arc<Self>,
        call: CallView<'_>,
        suggestions: &[String],
        deadline: Option<Instant>,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, CallError> {
        if !self.has(Hook::UnknownTool) {
            return Ok(None);
        }
        let suggestions: rhai::Array = suggestions
            .iter()
            .map(|s| Dynamic::from(s.clone()))
            .collect();
        let scope = || {
            let mut scope = scope_for(call);
            scope.push_constant("suggestions", suggestions.clone());
            scope
        };
        let Some(r) = self.run(Hook::UnknownTool, scope, deadline, cancel).await else {
            return Ok(None);
        };
        let v = r?;
        if v.is_unit() {
            Ok(None)
        } else if v.is_string() {
            Ok(Some(v.to_string()))
        } else {
            Err(CallError::ToolPolicyPanic {
                hook: Hook::UnknownTool,
                message: format!(
                    "the unknown_tool script must return a string or (), not a {}",
                    v.type_name()
                ),
            })
        }
    }
}

fn scope_for(call: CallView<'_>) -> Scope<'static> {
    let mut scope = Scope::with_capacity(8);
    scope.push_constant("kind", ImmutableString::from(call.kind.to_string()));
    scope.push_constant("tool", ImmutableString::from(call.tool));
    scope.push_constant("model_name", ImmutableString::from(call.model_name));
    scope.push_constant("args", json_to_dynamic(call.args));
    scope.push_constant("call_id", ImmutableString::from(call.call_id));
    scope.push_constant(
        "session",
        call.session
            .map_or(Dynamic::UNIT, |s| ImmutableString::from(s).into()),
    );
    scope.push_constant("caller", caller_to_dynamic(call.caller));
    scope
}

/// The caller as scripts see it (C1): `#{name, groups, claims}`.
fn caller_to_dynamic(caller: &crate::caller::Caller) -> Dynamic {
    let mut map = rhai::Map::new();
    map.insert("name".into(), ImmutableString::from(caller.name()).into());
    map.insert(
        "groups".into(),
        Dynamic::from_array(
            caller
                .groups()
                .iter()
                .map(|g| ImmutableString::from(g.as_str()).into())
                .collect(),
        ),
    );
    map.insert(
        "claims".into(),
        Dynamic::from_map(
            caller
                .claims()
                .iter()
                .map(|(k, v)| (k.as_str().into(), json_to_dynamic(v)))
                .collect(),
        ),
    );
    Dynamic::from_map(map)
}

/// A JSON value as scripts see it: what `rhai::serde::to_dynamic` makes of it (an integer
/// past `INT` becomes a float), built directly rather than through serde's visitor.
fn json_to_dynamic(value: &serde_json::Value) -> Dynamic {
    use serde_json::Value;
    match value {
        Value::Null => Dynamic::UNIT,
        Value::Bool(b) => Dynamic::from_bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Dynamic::from_int(i),
            None => Dynamic::from_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => ImmutableString::from(s.as_str()).into(),
        Value::Array(items) => {
            Dynamic::from_array(items.iter().map(json_to_dynamic).collect::<rhai::Array>())
        }
        Value::Object(entries) => Dynamic::from_map(
            entries
                .iter()
                .map(|(k, v)| (k.as_str().into(), json_to_dynamic(v)))
                .collect::<rhai::Map>(),
        ),
    }
}

fn describe(e: &EvalAltResult, compiled: &Compiled) -> String {
    let what = match e {
        EvalAltResult::ErrorTooManyOperations(_) => limits::TOO_MANY_OPERATIONS.to_string(),
        EvalAltResult::ErrorStackOverflow(_) => {
            "the script called functions too deeply (is there endless recursion?)".to_string()
        }
        EvalAltResult::ErrorTerminated(reason, _) => reason.to_string(),
        EvalAltResult::ErrorRuntime(v, _) => format!("the script threw: {v}"),
        other => other.to_string(),
    };
    let what = what.split(" (line ").next().unwrap_or(&what).to_string();
    format!("{}: {what}", compiled.locate(e.position()))
}
