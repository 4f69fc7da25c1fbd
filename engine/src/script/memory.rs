//! The memory a script run holds, counted where it is allocated.
//!
//! Rhai's size limits hold for each value, not for the run: a `map` over 10,000 elements whose
//! closure returns a fresh 1 MiB string builds 10 GB before the result is checked, and a
//! closure that assigns to `this` grows every element in place. So the program installs
//! [`ScriptMemory`] as its global allocator: on a thread that runs a script it adds up the
//! bytes allocated and freed during the run, and the run's progress check
//! (`limits::on_progress`) fails the run, before its next operation, once they pass
//! `ScriptLimits::max_memory`. On other threads, and outside a run, it only reads one
//! thread-local flag. A program that does not install it gets no memory limit on scripts (the
//! other limits hold).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Whether this thread runs a script now.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    /// Bytes allocated minus bytes freed on this thread since the run began.
    static HELD: Cell<isize> = const { Cell::new(0) };
}

/// The system allocator, counting what script runs hold. Install it with
/// `#[global_allocator] static ALLOCATOR: ScriptMemory = ScriptMemory;`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScriptMemory;

fn count(bytes: isize) {
    // `try_with`: never fails for these (const, no destructor), but an allocator must not
    // panic.
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = HELD.try_with(|h| h.set(h.get().saturating_add(bytes)));
    }
}

fn size(layout: Layout) -> isize {
    isize::try_from(layout.size()).unwrap_or(isize::MAX)
}

// SAFETY: every method hands the request to `System` unchanged and returns its answer; the
// counting around it touches only thread-local cells and never allocates.
unsafe impl GlobalAlloc for ScriptMemory {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(size(layout));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed` is passed on as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(size(layout));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on as is.
        unsafe { System.dealloc(ptr, layout) };
        count(-size(layout));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc` is passed on as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(isize::try_from(new_size).unwrap_or(isize::MAX) - size(layout));
        }
        p
    }
}

/// Starts counting this thread's allocations from zero.
pub(crate) fn start() {
    HELD.with(|h| h.set(0));
    COUNTING.with(|c| c.set(true));
}

/// Stops counting.
pub(crate) fn stop() {
    COUNTING.with(|c| c.set(false));
}

/// Bytes this thread's run holds now (0 when the program counts nothing).
pub(crate) fn held() -> usize {
    usize::try_from(HELD.with(Cell::get)).unwrap_or(0)
}
