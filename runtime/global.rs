//! `CoreLocal<T>`: the one way runtime state is kept in a `static`.
//!
//! Invariant: every core runs its own linked image, so each core has its own copy of
//! every `static`; within a core, runtime entry points run one at a time (the loader
//! calls `entry_func` and then one kernel at a time, and no interrupt handler touches
//! runtime state). A `CoreLocal` therefore never sees two live borrows, which
//! `with` enforces at run time anyway, at the cost of one flag test.
//!
//! One exception ends borrows early: a kernel that panics, aborts, exits or takes an
//! exception hands the core back to the host, which discards the kernel's stack instead
//! of returning into it, as an RTOS kills a task. The borrows its frames held will never
//! be used again; [`abandon_borrows`], called when the loader starts the next op
//! (`customop_set_invocation`), ends them all at once by moving to a new epoch. (What
//! the abandoned frames owned is leaked, never freed twice.)

use core::cell::{Cell, UnsafeCell};
use core::sync::atomic::{AtomicU32, Ordering};

/// The tag a borrow taken now carries (the current epoch): never 0, which means "not
/// borrowed". A borrow tagged with an older one is abandoned.
static EPOCH: AtomicU32 = AtomicU32::new(1);

/// Ends every `CoreLocal` borrow on this core: for when the host starts a new op, and
/// any borrow still recorded belongs to a kernel whose stack it discarded.
pub fn abandon_borrows() {
    let tag = EPOCH.load(Ordering::Relaxed);
    // After 2^32 - 1 ops the tags repeat: a borrow abandoned that long ago would block
    // again, which takes that many ops each abandoning one, never in practice.
    EPOCH.store(tag.checked_add(1).unwrap_or(1), Ordering::Relaxed);
}

/// The tag a borrow taken now carries. Inlined: every `CoreLocal::with` pays for it, on
/// hot paths such as `neuron_memcpy`; one load.
#[inline(always)]
fn borrow_tag() -> u32 {
    EPOCH.load(Ordering::Relaxed)
}

/// A value owned by the one execution context of this core. See the module invariant.
///
/// `repr(C)`, the flag first: at the static's address, one `l32r` and one load for
/// every borrow's check (after a large value, its offset takes two more instructions).
#[repr(C)]
pub struct CoreLocal<T> {
    /// 0, or the tag of the epoch in which the value was borrowed.
    borrowed: Cell<u32>,
    value: UnsafeCell<T>,
}

// SAFETY: the runtime never shares a `CoreLocal` between threads: each core has its own
// copy (its own image) and runs one context at a time; `with` refuses re-entry.
unsafe impl<T> Sync for CoreLocal<T> {}

impl<T> CoreLocal<T> {
    /// Wraps `value`; `const` so it can initialise a `static`.
    pub const fn new(value: T) -> Self {
        Self { borrowed: Cell::new(0), value: UnsafeCell::new(value) }
    }

    /// Runs `f` with exclusive access to the value.
    ///
    /// # Panics
    /// If called again from inside `f` (a re-entrant runtime call), which would
    /// otherwise alias a `&mut`.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let tag = borrow_tag();
        if self.borrowed.replace(tag) == tag {
            reentered();
        }
        // SAFETY: no borrow of this epoch is live, so no other reference to `value` is
        // used again on this core (an older epoch's was abandoned with its frames, see
        // the module docs), and no other core can reach this copy (module invariant).
        let result = f(unsafe { &mut *self.value.get() });
        self.borrowed.set(0);
        result
    }
}

impl<T> CoreLocal<T> {
    /// Runs `f` with shared access to the value, unless it is marked borrowed (`None`
    /// then: a live borrow, or one an abandoned op left, which the next `with` clears):
    /// one load and a branch, where [`with`](Self::with) also reads the epoch and writes
    /// the flag twice. For a fast path that reads the value and sets `Cell`s in it.
    ///
    /// # Safety
    /// `f` does not reach this `CoreLocal` again (through `with` or `peek`): nothing
    /// marks the value borrowed while `f` runs.
    #[inline(always)]
    pub unsafe fn peek<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        if self.borrowed.get() != 0 {
            return None;
        }
        // SAFETY: no borrow is live (checked), `f` takes none (the caller's contract), and no
        // other core can reach this copy (module invariant): no `&mut` to `value` is
        // used while this shared reference is.
        Some(f(unsafe { &*self.value.get() }))
    }
}

/// The panic of a re-entrant [`CoreLocal::with`], out of line: `with` is inlined into
/// every runtime entry point (some thirty in a library image), and one call with no
/// arguments is a third of the bytes of setting up a panic's message and location there.
#[cold]
#[inline(never)]
fn reentered() -> ! {
    panic!("re-entrant access to core-local runtime state")
}

/// Declares `$vis fn $with<R>(f: impl FnOnce(&mut $ty) -> R) -> R` over one piece of
/// per-core state: a `CoreLocal` static on the device, and one per thread on the host,
/// where test threads stand in for cores, so parallel tests never share it.
macro_rules! core_local_state {
    ($(#[$meta:meta])* $vis:vis fn $with:ident: $ty:ty = $init:expr;) => {
        $(#[$meta])*
        $vis fn $with<R>(f: impl FnOnce(&mut $ty) -> R) -> R {
            #[cfg(target_os = "none")]
            {
                static STATE: $crate::global::CoreLocal<$ty> =
                    $crate::global::CoreLocal::new($init);
                STATE.with(f)
            }
            #[cfg(not(target_os = "none"))]
            {
                std::thread_local! {
                    static STATE: $crate::global::CoreLocal<$ty> =
                        const { $crate::global::CoreLocal::new($init) };
                }
                STATE.with(|state| state.with(f))
            }
        }
    };
    // The same with `$peek` too, [`CoreLocal::peek`] of the state (once per module: the
    // state is a module-level static).
    ($(#[$meta:meta])* $vis:vis fn $with:ident; $(#[$peek_meta:meta])* fn $peek:ident: $ty:ty = $init:expr;) => {
        #[cfg(target_os = "none")]
        static CORE_LOCAL_STATE: $crate::global::CoreLocal<$ty> = $crate::global::CoreLocal::new($init);
        #[cfg(not(target_os = "none"))]
        std::thread_local! {
            static CORE_LOCAL_STATE: $crate::global::CoreLocal<$ty> =
                const { $crate::global::CoreLocal::new($init) };
        }

        $(#[$meta])*
        $vis fn $with<R>(f: impl FnOnce(&mut $ty) -> R) -> R {
            #[cfg(target_os = "none")]
            {
                CORE_LOCAL_STATE.with(f)
            }
            #[cfg(not(target_os = "none"))]
            {
                CORE_LOCAL_STATE.with(|state| state.with(f))
            }
        }

        $(#[$peek_meta])*
        ///
        /// # Safety
        /// As [`CoreLocal::peek`](crate::global::CoreLocal::peek).
        #[inline(always)]
        unsafe fn $peek<R>(f: impl FnOnce(&$ty) -> R) -> Option<R> {
            #[cfg(target_os = "none")]
            {
                // SAFETY: forwarded from this function's contract.
                unsafe { CORE_LOCAL_STATE.peek(f) }
            }
            #[cfg(not(target_os = "none"))]
            {
                // SAFETY: forwarded from this function's contract.
                CORE_LOCAL_STATE.with(|state| unsafe { state.peek(f) })
            }
        }
    };
}
pub(crate) use core_local_state;

#[cfg(test)]
mod tests {
    use super::{CoreLocal, abandon_borrows};
    use std::panic::AssertUnwindSafe;

    #[test]
    fn with_gives_exclusive_mutable_access() {
        let cell = CoreLocal::new(41);
        cell.with(|v| *v += 1);
        assert_eq!(cell.with(|v| *v), 42);
    }

    #[test]
    #[should_panic(expected = "re-entrant")]
    fn reentry_is_refused() {
        let cell = CoreLocal::new(0);
        cell.with(|_| cell.with(|_| ()));
    }

    #[test]
    fn an_abandoned_borrow_no_longer_blocks() {
        let cell = CoreLocal::new(1);
        // A kernel that dies inside `with`: its frames are gone (unwound here, discarded
        // by the host on the device) and its borrow is still recorded. Nesting the calls
        // instead would keep the outer `&mut` live beside the inner one (UB under Miri).
        // (Unwind-safe to assert: what the dead kernel left behind is what is tested.)
        let died = std::panic::catch_unwind(AssertUnwindSafe(|| cell.with(|_| panic!("the kernel dies"))));
        assert!(died.is_err());
        abandon_borrows();
        cell.with(|v| *v = 2);
        assert_eq!(cell.with(|v| *v), 2);
    }
}
