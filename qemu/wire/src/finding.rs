//! The memory checks' vocabulary: what a finding can be ([`FindingKind`]), its stable
//! short name and whether it fails the call ([`Severity`]).
//!
//! The plugin writes the short name in its `FINDING` lines
//! ([`crate::plugin::Line::Finding`]), the host parses it back, and the Python package
//! gets the table from its native module (`FINDING_KINDS`) to pick an exception class:
//! every side branches on the name, never on the English the host prints for a person
//! (that sentence lives with the host's presentation and can be reworded freely).
//!
//! Adding a kind is one line in the `kinds!` table below: its variant, its name and
//! its severity; [`FindingKind::ALL`], [`FindingKind::name`], [`FindingKind::parse`]
//! and [`FindingKind::severity`] follow from it.
//!
//! ```
//! use neuroncustomop_wire::finding::{FindingKind, Severity};
//!
//! assert_eq!(FindingKind::HeapOutside.name(), "heap-outside");
//! assert_eq!(FindingKind::parse("leak"), Some(FindingKind::Leak));
//! assert_eq!(FindingKind::Leak.severity(), Severity::Warning);
//! ```

use core::fmt;

/// Whether a finding fails the call: every front end (`ncop run`'s lines, the host
/// API's errors, Python's errors and warnings) decides by it, not by the kind's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The call fails for it.
    Error,
    /// Shown, but the call does not fail for it.
    Warning,
}

impl Severity {
    /// `error` or `warning`: the label `ncop run` prints before a warning, and Python's
    /// `Finding.severity`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
        }
    }
}

/// Declares [`FindingKind`] from one table, so that a kind's variant, name and
/// severity are written once, side by side.
macro_rules! kinds {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal, $severity:ident;)*) => {
        /// What a finding is. Its [`name`](FindingKind::name) is the stable word the
        /// plugin writes and every language branches on.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum FindingKind {
            $($(#[doc = $doc])* $variant,)*
        }

        impl FindingKind {
            /// Every kind, in the table's order.
            pub const ALL: &'static [FindingKind] = &[$(Self::$variant),*];

            /// Its row of the table: its name and its severity.
            const fn row(self) -> (&'static str, Severity) {
                match self {
                    $(Self::$variant => ($name, Severity::$severity),)*
                }
            }
        }
    };
}

kinds! {
    /// A store outside everything the op may write (past an output, into its own code,
    /// or anywhere else).
    OutOfBoundsStore = "oob-store", Error;
    /// A store into an input tensor (inputs are read-only).
    InputStore = "input-store", Error;
    /// A store into another core's memory: its image window, stack, dataram or HBM
    /// scratch (the finding names that core).
    CrossCoreStore = "cross-core-store", Error;
    /// A load outside everything the op may read.
    OutOfBoundsLoad = "oob-load", Error;
    /// A store to output bytes another core also stored to in the same op.
    Race = "race", Error;
    /// A semihosting call (`simcall`) of the kernel's own: a request to the host
    /// running the simulation, which a device does not have.
    Simcall = "simcall", Error;
    /// A load or store into a heap block freed earlier.
    UseAfterFree = "use-after-free", Error;
    /// A load or store into heap memory no live block covers: past a block's end,
    /// between blocks, the heap's own metadata.
    HeapOutside = "heap-outside", Error;
    /// A `free` of a block freed already.
    DoubleFree = "double-free", Error;
    /// A `free` of a pointer the heap did not give out: foreign, or inside a block.
    InvalidFree = "invalid-free", Error;
    /// A block the op allocated and still held when it ended.
    Leak = "leak", Warning;
    /// A load of bytes never written: of a heap block since it was allocated, or of
    /// the output in this op.
    UninitializedRead = "uninit-read", Warning;
}

impl FindingKind {
    /// Its stable short name: `oob-store`, `race`, `heap-outside`, ...
    pub const fn name(self) -> &'static str {
        self.row().0
    }

    /// Whether it fails the call.
    pub const fn severity(self) -> Severity {
        self.row().1
    }

    /// The kind named `name` ([`FindingKind::name`]).
    pub fn parse(name: &str) -> Option<FindingKind> {
        Self::ALL.iter().copied().find(|kind| kind.name() == name)
    }

    /// One of the heap checks' kinds (they name a heap block).
    pub const fn is_heap(self) -> bool {
        matches!(
            self,
            Self::UseAfterFree
                | Self::HeapOutside
                | Self::DoubleFree
                | Self::InvalidFree
                | Self::Leak
                | Self::UninitializedRead
        )
    }
}

impl fmt::Display for FindingKind {
    /// Its [`name`](FindingKind::name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_name_is_distinct_and_parses_back() {
        let names: HashSet<&str> = FindingKind::ALL.iter().map(|kind| kind.name()).collect();
        assert_eq!(names.len(), FindingKind::ALL.len());
        for &kind in FindingKind::ALL {
            assert_eq!(FindingKind::parse(kind.name()), Some(kind));
            // A word of the plugin's `key=value` lines: no space, no `=`.
            assert!(!kind.name().contains([' ', '=']), "{kind:?}");
        }
        assert_eq!(FindingKind::parse("out-of-bounds store"), None, "English is not a name");
    }

    #[test]
    fn only_leaks_and_uninitialized_reads_are_warnings() {
        let warnings: std::vec::Vec<FindingKind> =
            FindingKind::ALL.iter().copied().filter(|kind| kind.severity() == Severity::Warning).collect();
        assert_eq!(warnings, [FindingKind::Leak, FindingKind::UninitializedRead]);
    }
}
