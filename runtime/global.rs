//! `CoreLocal<T>`: the one way runtime state is kept in a `static`.
//!
//! Invariant: every core runs its own linked image, so each core has its own copy of
//! every `static`; within a core, runtime entry points run one at a time (the loader
//! calls `entry_func` and then one kernel at a time, and no interrupt handler touches
//! runtime state). A `CoreLocal` therefore never sees two live borrows, which
//! `with` enforces at run time anyway, at the cost of one flag test.

use core::cell::{Cell, UnsafeCell};

/// A value owned by the one execution context of this core. See the module invariant.
pub struct CoreLocal<T> {
    borrowed: Cell<bool>,
    value: UnsafeCell<T>,
}

// SAFETY: the runtime never shares a `CoreLocal` between threads: each core has its own
// copy (its own image) and runs one context at a time; `with` refuses re-entry.
unsafe impl<T> Sync for CoreLocal<T> {}

impl<T> CoreLocal<T> {
    /// Wraps `value`; `const` so it can initialise a `static`.
    pub const fn new(value: T) -> Self {
        Self { borrowed: Cell::new(false), value: UnsafeCell::new(value) }
    }

    /// Runs `f` with exclusive access to the value.
    ///
    /// # Panics
    /// If called again from inside `f` (a re-entrant runtime call), which would
    /// otherwise alias a `&mut`.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        assert!(!self.borrowed.replace(true), "re-entrant access to core-local runtime state");
        // SAFETY: `borrowed` was false, so no other reference to `value` is live on this
        // core, and no other core can reach this copy (module invariant).
        let result = f(unsafe { &mut *self.value.get() });
        self.borrowed.set(false);
        result
    }
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
}
pub(crate) use core_local_state;

#[cfg(test)]
mod tests {
    use super::CoreLocal;

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
}
