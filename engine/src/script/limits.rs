//! What bounds one script run, for everything the script can call.
//!
//! Rhai checks its size limits on the value a native function returns, after the function has
//! built it, and counts operations on a copy of its counter inside each callback (a `sort`
//! comparator, a `map` closure). So the limits are enforced here too, on this thread, for the
//! whole run:
//!
//! - operations are counted across the run, callbacks included ([`on_progress`]), and so is
//!   the memory the run holds (`memory`), checked before every operation;
//! - a limit that was hit stays hit: every later operation fails with the same reason, and the
//!   run fails even if a native function swallowed the error (Rhai's `sort` and `dedup` turn a
//!   failing comparator into an ordering) and the script went on to a verdict;
//! - the native functions whose result can be far larger than their inputs or that block
//!   ([`register_checked_natives`]: `replace`, `sleep`) are replaced by versions that check the
//!   size or the time before they allocate or wait;
//! - `print` and `debug` lines are cut and counted ([`log_line`]);
//! - a run on the caller's thread (an inline run, [`Inline`]) also has a small budget of its
//!   own: past it the run is abandoned ([`Budget::abandoned`]), not failed, so that it can run
//!   again from the start on a script thread under the full bound. Its `print`/`debug` lines
//!   wait until the run ends: they go to the log when it is not abandoned, so a run that starts
//!   again does not write them twice.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use rhai::{Dynamic, Engine, EvalAltResult, FLOAT, INT, ImmutableString, NativeCallContext};
use tokio_util::sync::CancellationToken;

use super::memory;

/// How many operations run between two looks at the clock: a single operation on a string of
/// the largest allowed size takes about a millisecond.
const CLOCK_EVERY_OPS: u64 = 16;

/// The longest `print`/`debug` line a script writes to the log, in bytes.
pub(crate) const MAX_LOG_LINE: usize = 1024;

/// How many `print`/`debug` lines one run writes to the log; later ones are dropped.
pub(crate) const MAX_LOG_LINES: u32 = 100;

/// The small budget of a run on the caller's thread (a runtime worker): past any of these the
/// run is abandoned, to be run again from the start on a script thread.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Inline {
    /// When the inline run must give up (checked with the clock, every [`CLOCK_EVERY_OPS`]
    /// operations).
    pub(crate) until: Instant,
    /// The most operations it may take.
    pub(crate) max_ops: u64,
    /// The most bytes it may hold.
    pub(crate) max_memory: usize,
}

/// A `print` or `debug` line of an inline run, held until the run ends.
enum Line {
    Print(String),
    Debug(String, Option<String>, rhai::Position),
}

impl Line {
    fn emit(self) {
        match self {
            Line::Print(line) => tracing::info!(target: "toolgate::script", "{line}"),
            Line::Debug(line, src, pos) => {
                tracing::debug!(target: "toolgate::script", ?src, %pos, "{line}")
            }
        }
    }
}

/// The most `print`/`debug` lines an inline run holds: [`MAX_LOG_LINES`] and the one that says
/// the rest are dropped.
const MAX_HELD_LINES: usize = MAX_LOG_LINES as usize + 1;

/// What bounds the script that runs on a thread.
struct Bounds {
    /// When the script's own bound passes.
    bound: Instant,
    /// The bound, for the message.
    bound_len: Duration,
    /// The call's deadline, if it has one.
    call: Option<Instant>,
    /// The call's cancellation (a clone of the call's token).
    cancel: CancellationToken,
    /// Operations of the run so far, callbacks included.
    ops: u64,
    /// The most operations the run may take.
    max_ops: u64,
    /// The most bytes the run may hold (counted by `memory::ScriptMemory`, when installed).
    max_memory: usize,
    /// The limit the run hit, once it hit one: every later operation fails with it.
    tripped: Option<String>,
    /// `print`/`debug` lines written so far.
    lines: u32,
    /// The inline budget, when the run is on the caller's thread.
    inline: Option<Inline>,
    /// Whether the run went past its inline budget (then `tripped` holds [`ABANDONED`]).
    abandoned: bool,
    /// The `print`/`debug` lines of an inline run, written when it ends (at most
    /// [`MAX_HELD_LINES`]).
    held_lines: Vec<Line>,
}

thread_local! {
    /// The bounds of the script that runs on this thread.
    static BUDGET: RefCell<Option<Bounds>> = const { RefCell::new(None) };
}

/// The message of a run past the operation limit.
pub(crate) const TOO_MANY_OPERATIONS: &str =
    "the script ran too many operations (is there an endless loop?)";

/// What ends an inline run past its budget (never an answer: the run starts again).
const ABANDONED: &str = "the script needs more than an inline run";

/// The message of a run past the call's deadline or cancelled with its call.
const PAST_DEADLINE: &str = "the call's deadline passed while the script ran";

fn past_bound(bound: Duration) -> String {
    format!(
        "the script ran longer than its {} bound (dispatch.script_timeout)",
        toolgate_policy::format_duration(Some(bound))
    )
}

/// Sets this thread's script budget for the duration of one evaluation.
pub(crate) struct Budget(());

impl Budget {
    /// Starts a run whose bound (`bound` long, for the message) passes at `until` (it counts
    /// from when the run was asked for, so the wait for a thread counts too), also bounded by
    /// the call's `deadline`, `cancel`, `max_ops` operations and `max_memory` bytes held.
    pub(crate) fn enter_until(
        until: Instant,
        bound: Duration,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
        (max_ops, max_memory): (u64, usize),
        inline: Option<Inline>,
    ) -> Budget {
        let bounds = Bounds {
            bound: until,
            bound_len: bound,
            call: deadline,
            cancel: cancel.clone(),
            ops: 0,
            max_ops,
            max_memory,
            tripped: None,
            lines: 0,
            inline,
            abandoned: false,
            held_lines: Vec::new(),
        };
        BUDGET.with(|b| *b.borrow_mut() = Some(bounds));
        memory::start();
        Budget(())
    }

    /// The limit the run hit, if it hit one (also when the script went on after it).
    pub(crate) fn tripped(&self) -> Option<String> {
        BUDGET.with(|b| b.borrow().as_ref().and_then(|b| b.tripped.clone()))
    }

    /// Whether the inline run went past its inline budget: its result means nothing, and
    /// its `print`/`debug` lines are dropped.
    pub(crate) fn abandoned(&self) -> bool {
        BUDGET.with(|b| b.borrow().as_ref().is_some_and(|b| b.abandoned))
    }

    /// Writes the lines an inline run held to the log (nothing for a run not inline, whose
    /// lines went out as they came, or for an abandoned one).
    pub(crate) fn write_lines(&self) {
        let lines = BUDGET.with(|b| {
            b.borrow_mut()
                .as_mut()
                .filter(|b| !b.abandoned)
                .map(|b| std::mem::take(&mut b.held_lines))
        });
        lines.into_iter().flatten().for_each(Line::emit);
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        memory::stop();
        BUDGET.with(|b| *b.borrow_mut() = None);
    }
}

/// Rhai's progress callback: called before every operation, in callbacks too. `Some` ends the
/// run with that reason.
pub(crate) fn on_progress(_rhai_ops: u64) -> Option<Dynamic> {
    BUDGET.with(|b| {
        let mut b = b.borrow_mut();
        let b = b.as_mut()?;
        if let Some(reason) = &b.tripped {
            return Some(Dynamic::from(reason.clone()));
        }
        b.ops += 1;
        let reason = if b.ops > b.max_ops {
            Some(TOO_MANY_OPERATIONS.to_string())
        } else if memory::held() > b.max_memory {
            Some(format!(
                "the script held more than {} MiB of memory (is it building ever larger values?)",
                b.max_memory >> 20
            ))
        } else if let Some(inline) = b.inline
            && (b.ops > inline.max_ops || memory::held() > inline.max_memory)
        {
            return Some(b.abandon());
        } else if b.ops % CLOCK_EVERY_OPS == 0 {
            let reason = b.past_time();
            if reason.is_none() && b.inline.is_some_and(|i| Instant::now() >= i.until) {
                return Some(b.abandon());
            }
            reason
        } else {
            None
        }?;
        b.tripped = Some(reason.clone());
        Some(Dynamic::from(reason))
    })
}

impl Bounds {
    /// Gives the inline run up: every later operation fails, and the run's result is dropped.
    fn abandon(&mut self) -> Dynamic {
        self.abandoned = true;
        self.held_lines.clear();
        self.tripped = Some(ABANDONED.to_string());
        Dynamic::from(ABANDONED)
    }

    /// Why the run must end now, if its time is up.
    fn past_time(&self) -> Option<String> {
        let now = Instant::now();
        if self.cancel.is_cancelled() || self.call.is_some_and(|d| now >= d) {
            Some(PAST_DEADLINE.to_string())
        } else if now >= self.bound {
            Some(past_bound(self.bound_len))
        } else {
            None
        }
    }

    /// How long the run may still go on: up to its bound or the call's deadline.
    fn remaining(&self) -> Duration {
        let now = Instant::now();
        let end = self.call.map_or(self.bound, |d| d.min(self.bound));
        end.saturating_duration_since(now)
    }
}

/// Ends the run with `reason` (kept, so later operations fail with it too).
fn trip(reason: String) -> Box<EvalAltResult> {
    BUDGET.with(|b| {
        if let Some(b) = b.borrow_mut().as_mut() {
            b.tripped.get_or_insert_with(|| reason.clone());
        }
    });
    EvalAltResult::ErrorTerminated(Dynamic::from(reason), rhai::Position::NONE).into()
}

/// Rhai's `print`: the line goes to the log (at `info`), or is held until an inline run ends.
pub(crate) fn print(text: &str) {
    if let Some(line) = log_line(text) {
        write(Line::Print(line));
    }
}

/// Rhai's `debug`: the line goes to the log (at `debug`), or is held until an inline run ends.
pub(crate) fn debug(text: &str, src: Option<&str>, pos: rhai::Position) {
    if let Some(line) = log_line(text) {
        write(Line::Debug(line, src.map(str::to_string), pos));
    }
}

fn write(line: Line) {
    let line = BUDGET.with(|b| match b.borrow_mut().as_mut() {
        Some(b) if b.inline.is_some() => {
            if b.held_lines.len() < MAX_HELD_LINES {
                b.held_lines.push(line);
            }
            None
        }
        _ => Some(line),
    });
    if let Some(line) = line {
        line.emit();
    }
}

/// A `print`/`debug` line as it goes to the log: cut at [`MAX_LOG_LINE`] bytes; `None` past
/// [`MAX_LOG_LINES`] lines a run (the first line past it says so).
pub(crate) fn log_line(text: &str) -> Option<String> {
    let n = BUDGET.with(|b| {
        b.borrow_mut().as_mut().map_or(0, |b| {
            b.lines = b.lines.saturating_add(1);
            b.lines
        })
    });
    if n > MAX_LOG_LINES + 1 {
        return None;
    }
    if n == MAX_LOG_LINES + 1 {
        return Some(format!(
            "(the script's further print/debug lines of this run are dropped: at most \
             {MAX_LOG_LINES} a run)"
        ));
    }
    if text.len() <= MAX_LOG_LINE {
        return Some(text.to_string());
    }
    let mut cut = MAX_LOG_LINE;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(format!("{}... ({} bytes in all)", &text[..cut], text.len()))
}

/// Replaces the native functions of Rhai's standard package that allocate far more than their
/// inputs or block, with versions that check first. Functions registered on the engine take
/// precedence over the package's.
pub(crate) fn register_checked_natives(engine: &mut Engine) {
    engine
        .register_fn(
            "replace",
            |ctx: NativeCallContext, s: &mut ImmutableString, find: &str, with: &str| {
                replace_checked(&ctx, s, find, with)
            },
        )
        .register_fn(
            "replace",
            |ctx: NativeCallContext, s: &mut ImmutableString, find: &str, with: char| {
                replace_checked(&ctx, s, find, with.encode_utf8(&mut [0; 4]))
            },
        )
        .register_fn(
            "replace",
            |ctx: NativeCallContext, s: &mut ImmutableString, find: char, with: &str| {
                replace_checked(&ctx, s, find.encode_utf8(&mut [0; 4]), with)
            },
        )
        .register_fn(
            "replace",
            |ctx: NativeCallContext, s: &mut ImmutableString, find: char, with: char| {
                replace_checked(
                    &ctx,
                    s,
                    find.encode_utf8(&mut [0; 4]),
                    with.encode_utf8(&mut [0; 4]),
                )
            },
        )
        .register_fn("sleep", |seconds: INT| {
            sleep_checked(u64::try_from(seconds).map_or(Duration::ZERO, Duration::from_secs))
        })
        .register_fn("sleep", |seconds: FLOAT| {
            sleep_checked(
                Duration::try_from_secs_f64(seconds).unwrap_or(if seconds > 0.0 {
                    Duration::MAX
                } else {
                    Duration::ZERO
                }),
            )
        });
}

/// `string.replace(find, with)`, refused before it allocates when the result would be over
/// `max_string_size` (Rhai's own builds the result first: a 1 MB string with each of its
/// characters replaced by 1 MB asks for 1 TB).
fn replace_checked(
    ctx: &NativeCallContext,
    s: &mut ImmutableString,
    find: &str,
    with: &str,
) -> Result<(), Box<EvalAltResult>> {
    if s.is_empty() {
        return Ok(());
    }
    let max = ctx.engine().max_string_size();
    if max > 0 && with.len() > find.len() {
        // An empty `find` matches before every character and at the end.
        let matches = if find.is_empty() {
            s.chars().count() + 1
        } else {
            s.matches(find).count()
        };
        let grows = (with.len() - find.len()).saturating_mul(matches);
        let len = s.len().saturating_add(grows);
        if len > max {
            return Err(EvalAltResult::ErrorDataTooLarge(
                // Shown as "<this> too large".
                format!("The result of replace ({len} bytes; max_string_size is {max}) is"),
                ctx.call_position(),
            )
            .into());
        }
    }
    *s = s.replace(find, with).into();
    Ok(())
}

/// `sleep(seconds)`, refused when it would pass the run's bound or the call's deadline (Rhai's
/// own blocks the thread for as long as it is asked, past every bound).
fn sleep_checked(wanted: Duration) -> Result<(), Box<EvalAltResult>> {
    if wanted.is_zero() {
        return Ok(());
    }
    let checked = BUDGET.with(|b| {
        let mut b = b.borrow_mut();
        let b = b.as_mut()?;
        Some(if wanted >= b.remaining() {
            Err(b.past_time().unwrap_or_else(|| {
                format!(
                    "sleep({}) would run past the script's {} bound (dispatch.script_timeout) \
                     or the call's deadline",
                    toolgate_policy::format_duration(Some(wanted)),
                    toolgate_policy::format_duration(Some(b.bound_len))
                )
            }))
        } else if b.inline.is_some() {
            // Never on the caller's thread: the run starts again on a script thread.
            Err(b.abandon().to_string())
        } else {
            Ok(())
        })
    });
    match checked {
        Some(Ok(())) => {
            std::thread::sleep(wanted);
            Ok(())
        }
        Some(Err(reason)) => Err(trip(reason)),
        // Outside a run there is no bound to keep: no sleep either.
        None => Err(trip(
            "sleep is only available to a bounded script run".into(),
        )),
    }
}
