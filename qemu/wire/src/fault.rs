//! The `FAULT` line: how a core that cannot go on says where it stopped, in one format
//! for both tiers. The device's runtime writes it (`runtime/arch/xtensa/fault.rs`,
//! with its own allocation-free writer: the device formats no numbers with `core::fmt`),
//! the host tier's loader writes it for a signal in a kernel (through [`Fault`]'s
//! `Display`), and the host's symbolizer parses it ([`Fault::parse`]) to name the
//! function and source line of each frame.
//!
//! ```text
//! FAULT core=<c> kind=<kind> cause=<n> pc=<hex> vaddr=<hex> depth=<n> frames=<hex>,<hex>,...
//! ```
//!
//! `frames` starts with the PC the fault stopped at, then the return addresses of the
//! frames that called it, innermost first; `depth` is how many frames the walk found in
//! all (more than `frames` lists when it is long). Addresses are `0x`-hex: 32-bit on the
//! device, 64-bit on the host tier.
//!
//! ```
//! use neuroncustomop_wire::fault::{Fault, FaultKind};
//! use neuroncustomop_wire::list::List;
//!
//! let line = "FAULT core=0 kind=exception cause=28 pc=0x840012a4 vaddr=0x00000000 depth=1 frames=0x840012a4";
//! let fault = Fault::parse(line).unwrap();
//! assert_eq!((fault.kind, fault.cause), (FaultKind::Exception, 28));
//! assert_eq!(fault.frames, List::Raw(&[0x8400_12a4]));
//! assert_eq!(fault.to_string(), line);
//! ```

use crate::list::{Item, List};
use crate::report::{Fields, ParseError};
use core::fmt;

/// What stopped the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// A CPU exception (`cause` is EXCCAUSE, `vaddr` EXCVADDR).
    Exception,
    /// The stack ran past its limit (`vaddr` is the stack pointer found below it).
    StackOverflow,
    /// The kernel panicked.
    Panic,
    /// It panicked while panicking.
    DoublePanic,
    /// It called `abort`.
    Abort,
    /// A signal in a kernel on the host tier (`cause` is the signal number, `vaddr`
    /// the faulting address).
    Signal,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 6] =
        [Self::Exception, Self::StackOverflow, Self::Panic, Self::DoublePanic, Self::Abort, Self::Signal];

    /// Its word in the line.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Exception => "exception",
            Self::StackOverflow => "stack-overflow",
            Self::Panic => "panic",
            Self::DoublePanic => "double-panic",
            Self::Abort => "abort",
            Self::Signal => "signal",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<FaultKind> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// One `FAULT` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault<'a> {
    /// The core that faulted.
    pub core: u32,
    /// What stopped it.
    pub kind: FaultKind,
    /// EXCCAUSE of an exception, the signal number of a signal; for a stack overflow,
    /// the return address into the oldest live frame; else 0.
    pub cause: u32,
    /// The PC it stopped at.
    pub pc: u64,
    /// The faulting address (see [`FaultKind`]), else 0.
    pub vaddr: u64,
    /// Frames the walk found in all.
    pub depth: u32,
    /// The PC, then the return addresses of its callers, innermost first.
    pub frames: List<'a, u64>,
}

impl fmt::Display for Fault<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { core, kind, cause, pc, vaddr, depth, frames } = self;
        write!(
            f,
            "FAULT core={core} kind={} cause={cause} pc={pc:#010x} vaddr={vaddr:#010x} depth={depth} frames={frames}",
            kind.name()
        )
    }
}

impl<'a> Fault<'a> {
    /// Parses one line (surrounding spaces allowed).
    ///
    /// # Errors
    /// [`ParseError`] for anything [`Fault`]'s `Display` does not print.
    pub fn parse(line: &'a str) -> Result<Self, ParseError> {
        let rest = line.trim().strip_prefix("FAULT ").ok_or(ParseError)?;
        let f = Fields::new(rest);
        let address = |key| f.text(key).ok().and_then(u64::read).ok_or(ParseError);
        Ok(Fault {
            core: f.number("core")?,
            kind: FaultKind::parse(f.text("kind")?).ok_or(ParseError)?,
            cause: f.number("cause")?,
            pc: address("pc")?,
            vaddr: address("vaddr")?,
            depth: f.number("depth")?,
            frames: List::parse(f.text("frames")?)?,
        })
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn every_kind_parses_back_to_itself_on_both_word_sizes() {
        for kind in FaultKind::ALL {
            let device = Fault {
                core: 3,
                kind,
                cause: 2_214_593_012,
                pc: 0x8400_0123,
                vaddr: 0x851f_07f0,
                depth: 4000,
                frames: List::Raw(&[0x8400_0123, 0x8400_011a]),
            };
            let host = Fault { pc: 0x7f12_3456_789a, vaddr: 0, frames: List::Raw(&[0x7f12_3456_789a]), ..device };
            for fault in [device, host] {
                let text = fault.to_string();
                assert_eq!(Fault::parse(&text), Ok(fault), "{text}");
            }
        }
    }

    #[test]
    fn the_runtimes_line_reads_and_other_text_does_not() {
        // As runtime/arch/xtensa/fault.rs writes it (its `hex` is always 8 digits).
        let line = "FAULT core=3 kind=stack-overflow cause=2214593012 pc=0x84000123 vaddr=0x851f07f0 depth=4000 frames=0x84000123,0x8400011a";
        let fault = Fault::parse(line).unwrap();
        assert_eq!((fault.kind, fault.vaddr, fault.depth), (FaultKind::StackOverflow, 0x851f_07f0, 4000));
        assert_eq!(fault.to_string(), line);
        for other in [
            "FAULT core=0 kind=panic cause=0 pc=0x1 vaddr=0x0 depth=1 frames=0x1,zz",
            "FAULT core=0 kind=meltdown cause=0 pc=0x1 vaddr=0x0 depth=1 frames=0x1",
            "FAULT core=0 kind=panic cause=0 pc=1 vaddr=0x0 depth=1 frames=0x1",
            "OP 0 core=0 function=f status=0",
        ] {
            assert_eq!(Fault::parse(other), Err(ParseError), "{other}");
        }
    }
}
