//! The device's QEMU TCG plugin (`qemu/plugin`) and the host that loads it: one typed
//! definition of the plugin's arguments ([`Argument`]) and of every line it writes
//! ([`Line`]), shared by the plugin, which writes with `Display`, and the host crates,
//! which write the arguments and parse the lines with `parse`, so the two sides cannot
//! drift apart.
//!
//! The arguments are QEMU's `-plugin FILE,key=value,...`; addresses in hex, without
//! `0x`. The lines are `KIND core=<vCPU> key=value ...`, one fact each, written when
//! the op of a core ends, closed by [`Line::End`]. Addresses are written `0x`-hex, lists
//! of addresses bare hex ([`List`]), counts in decimal.
//!
//! ```
//! use neuroncustomop_wire::plugin::{Argument, Line};
//!
//! let line = Line::Count { core: 3, instructions: 1234 };
//! let text = line.to_string();
//! assert_eq!(text, "COUNT core=3 instructions=1234");
//! assert_eq!(Line::parse(&text), Ok(line));
//!
//! let argument = Argument::Uncounted(0x8400_0100..0x8400_0180);
//! assert_eq!(argument.to_string(), "uncounted=84000100-84000180");
//! assert_eq!(Argument::parse("uncounted=84000100-84000180"), Ok(argument));
//! ```

use crate::checks::RegionKind;
use crate::finding::FindingKind;
pub use crate::list::{Item, List};
use crate::report::{Fields, Number, ParseError};
use core::fmt;
use core::ops::Range;

/// One `key=value` argument of the plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Argument<'a> {
    /// `out=FILE`: where the plugin writes its lines.
    Out(&'a str),
    /// `start=PC` (one per core's loader image): the loader's `icount_start`, called
    /// just before a kernel: an op begins on that core.
    Start(u32),
    /// `stop=PC` (likewise): the loader's `icount_read`, called when the kernel has
    /// returned or was stopped: the op ends.
    Stop(u32),
    /// `uncounted=LO-HI` (any number): instructions that are no kernel's (the debug
    /// vector and the loader's `ICOUNT` wrap handler, at the debug level).
    Uncounted(Range<u32>),
    /// `rerun=PC` (any number): an exception vector whose exception makes the
    /// interrupted instruction run again.
    Rerun(u32),
    /// `vector=PC` (any number): a vector whose exception returns to the excepting
    /// instruction (the counting module notes the block it cut short).
    Vector(u32),
    /// `profile=1`: the profiling module runs.
    Profile,
    /// `dma=HEX`: the SoC's DMA queue window (the profile's transfers).
    DmaWindow(u32),
    /// `tensors=LO-HI`: the tensor area (the profile's written ranges).
    Tensors(Range<u32>),
    /// `code=LO-HI` (any number): the code the profile instruments (none: all).
    Code(Range<u32>),
    /// `mark=PC` (any number): where an author's range marker takes effect (the
    /// profile's [`Line::Mark`]).
    Mark(u32),
    /// `check-table=CORE:ADDR`: core `core`'s loader region table.
    CheckTable {
        /// The core.
        core: u32,
        /// The table's address (`NEURON_CHECK_REGIONS`).
        table: u32,
    },
    /// `check-image=CORE:START:WRITABLE:END`: core `core`'s library image window, and
    /// where its writable sections start.
    CheckImage {
        /// The core.
        core: u32,
        /// The window's first byte.
        start: u32,
        /// Where its writable sections start.
        writable: u32,
        /// The window's end.
        end: u32,
    },
    /// `check-loader=CORE:START:END`: core `core`'s loader image window (an access
    /// there is named by it).
    CheckLoader {
        /// The core.
        core: u32,
        /// The window's first byte.
        start: u32,
        /// The window's end.
        end: u32,
    },
    /// `heap-journal=CORE:ADDR`: core `core`'s runtime heap journal.
    HeapJournal {
        /// The core.
        core: u32,
        /// The journal's address (`neuron_heap_journal`).
        journal: u32,
    },
    /// `word-loads=LO-HI` (any number): the runtime's `memcpy` or `memmove`, whose
    /// aligned word loads may hold bytes just outside their source.
    WordLoads(Range<u32>),
    /// `check-stopped=PC` (any number): where a loader carries on after a kernel
    /// stopped, then gives the op's heap blocks back (they are no leaks).
    CheckStopped(u32),
    /// `watch=LO-HI`: output bytes whose last writer each op reports ([`Line::Writer`]).
    Watch(Range<u32>),
}

/// Why a plugin argument was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgumentError<'a> {
    /// The argument as given.
    pub argument: &'a str,
    /// What the value should have been, or why the key is not known.
    pub expected: &'static str,
}

impl fmt::Display for ArgumentError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "plugin argument `{}`: {}", self.argument, self.expected)
    }
}

/// `text` in hex, with or without `0x`.
fn hex32(text: &str) -> Option<u32> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if digits.starts_with('+') {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// `LO-HI` in hex.
fn hex_range(text: &str) -> Option<Range<u32>> {
    let (lo, hi) = text.split_once('-')?;
    Some(hex32(lo)?..hex32(hi)?)
}

/// `N:N:...` in hex, exactly `N` fields.
fn hex_fields<const N: usize>(text: &str) -> Option<[u32; N]> {
    let mut fields = [0; N];
    let mut parts = text.split(':');
    for field in &mut fields {
        *field = hex32(parts.next()?)?;
    }
    parts.next().is_none().then_some(fields)
}

impl<'a> Argument<'a> {
    /// Its key.
    pub const fn key(&self) -> &'static str {
        match self {
            Self::Out(_) => "out",
            Self::Start(_) => "start",
            Self::Stop(_) => "stop",
            Self::Uncounted(_) => "uncounted",
            Self::Rerun(_) => "rerun",
            Self::Vector(_) => "vector",
            Self::Profile => "profile",
            Self::DmaWindow(_) => "dma",
            Self::Tensors(_) => "tensors",
            Self::Code(_) => "code",
            Self::Mark(_) => "mark",
            Self::CheckTable { .. } => "check-table",
            Self::CheckImage { .. } => "check-image",
            Self::CheckLoader { .. } => "check-loader",
            Self::HeapJournal { .. } => "heap-journal",
            Self::WordLoads(_) => "word-loads",
            Self::CheckStopped(_) => "check-stopped",
            Self::Watch(_) => "watch",
        }
    }

    /// Parses one `key=value`.
    ///
    /// # Errors
    /// [`ArgumentError`] for text that is not `key=value`, a key no module takes, or a
    /// value not of its key's form.
    pub fn parse(argument: &'a str) -> Result<Self, ArgumentError<'a>> {
        let error = |expected| ArgumentError { argument, expected };
        let (key, value) = argument.split_once('=').ok_or(error("not key=value"))?;
        let pc = || hex32(value).ok_or(error("not a hex address"));
        let range = || hex_range(value).ok_or(error("not LO-HI in hex"));
        Ok(match key {
            "out" => Self::Out(value),
            "start" => Self::Start(pc()?),
            "stop" => Self::Stop(pc()?),
            "uncounted" => Self::Uncounted(range()?),
            "rerun" => Self::Rerun(pc()?),
            "vector" => Self::Vector(pc()?),
            "profile" if value == "1" => Self::Profile,
            "profile" => return Err(error("not profile=1")),
            "dma" => Self::DmaWindow(pc()?),
            "tensors" => Self::Tensors(range()?),
            "code" => Self::Code(range()?),
            "mark" => Self::Mark(pc()?),
            "word-loads" => Self::WordLoads(range()?),
            "check-stopped" => Self::CheckStopped(pc()?),
            "watch" => Self::Watch(range()?),
            "check-table" => {
                let [core, table] = hex_fields(value).ok_or(error("not CORE:ADDR in hex"))?;
                Self::CheckTable { core, table }
            }
            "heap-journal" => {
                let [core, journal] = hex_fields(value).ok_or(error("not CORE:ADDR in hex"))?;
                Self::HeapJournal { core, journal }
            }
            "check-loader" => {
                let [core, start, end] = hex_fields(value).ok_or(error("not CORE:START:END in hex"))?;
                Self::CheckLoader { core, start, end }
            }
            "check-image" => {
                let [core, start, writable, end] =
                    hex_fields(value).ok_or(error("not CORE:START:WRITABLE:END in hex"))?;
                Self::CheckImage { core, start, writable, end }
            }
            _ => return Err(error("no module of the plugin takes this key")),
        })
    }
}

impl fmt::Display for Argument<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=", self.key())?;
        match self {
            Self::Out(path) => f.write_str(path),
            Self::Start(pc)
            | Self::Stop(pc)
            | Self::Rerun(pc)
            | Self::Vector(pc)
            | Self::DmaWindow(pc)
            | Self::Mark(pc)
            | Self::CheckStopped(pc) => {
                write!(f, "{pc:x}")
            }
            Self::Uncounted(range)
            | Self::Tensors(range)
            | Self::Code(range)
            | Self::WordLoads(range)
            | Self::Watch(range) => {
                write!(f, "{:x}-{:x}", range.start, range.end)
            }
            Self::Profile => f.write_str("1"),
            Self::CheckTable { core, table } => write!(f, "{core:x}:{table:x}"),
            Self::HeapJournal { core, journal } => write!(f, "{core:x}:{journal:x}"),
            Self::CheckImage { core, start, writable, end } => write!(f, "{core:x}:{start:x}:{writable:x}:{end:x}"),
            Self::CheckLoader { core, start, end } => write!(f, "{core:x}:{start:x}:{end:x}"),
        }
    }
}

/// Call sites or a call path: PCs, bare hex, `;` between two.
pub type Pcs<'a> = List<'a, u32>;
/// A tensor's shape: `16x64`.
pub type Shape<'a> = List<'a, u16>;
/// Byte ranges: `lo-hi,lo-hi`.
pub type Ranges<'a> = List<'a, (u64, u64)>;

/// The heap block a heap finding is named by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block<'a> {
    /// Its first byte.
    pub start: u32,
    /// Its size as asked for.
    pub size: u32,
    /// A block of the op's TCM pool (`tcm_malloc`, a stream buffer), not of a heap.
    pub tcm: bool,
    /// Where it was allocated: the allocator's PC, then the call sites under it.
    pub alloc: Pcs<'a>,
    /// Where it was freed, likewise; `None` while it is live.
    pub free: Option<Pcs<'a>>,
}

/// The region a finding is named by: the one holding its address, else the closest
/// tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place<'a> {
    /// What it is.
    pub kind: RegionKind,
    /// Which output or input.
    pub index: u8,
    /// Its first byte.
    pub start: u32,
    /// Its length in bytes.
    pub len: u32,
    /// A tensor's `Dtype` byte (0 for the others).
    pub dtype: u8,
    /// A tensor's dimensions, outermost first.
    pub shape: Shape<'a>,
}

/// One finding of the memory checks in one op on one core, as the plugin writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finding<'a> {
    /// The op, counted on its core from 0 in the session.
    pub op: u32,
    /// What it is.
    pub kind: FindingKind,
    /// The instruction (for a DMA transfer: the store that completed its descriptor).
    pub pc: u32,
    /// The first byte accessed.
    pub address: u32,
    /// Bytes from the first accessed to the last (every access folded into it).
    pub bytes: u32,
    /// Accesses folded into it.
    pub accesses: u64,
    /// A race's other core, or the core whose image a store hit.
    pub other_core: Option<u32>,
    /// A race's other core's instruction.
    pub other_pc: Option<u32>,
    /// Made by a DMA transfer the kernel queued.
    pub dma: bool,
    /// The call sites under `pc`, innermost first.
    pub backtrace: Pcs<'a>,
    /// The heap block a heap finding is named by.
    pub block: Option<Block<'a>>,
    /// An uninitialized read whose bytes a copy or DMA transfer moved into the output:
    /// the first output byte they reached, and how many.
    pub reached: Option<(u32, u32)>,
    /// The core whose memory `region` is, when it is not the op's own region: another
    /// core's stack, dataram, HBM scratch, or a loader's image.
    pub owner: Option<u32>,
    /// The region it is named by.
    pub region: Option<Place<'a>>,
}

/// What a timeline event is ([`Line::Event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The op, from the kernel's call to its return.
    Op,
    /// The core asleep (`waiti`) until an interrupt woke it.
    Wait,
    /// A DMA transfer queued.
    Dma,
}

impl EventKind {
    /// `op`, `wait` or `dma`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Op => "op",
            Self::Wait => "wait",
            Self::Dma => "dma",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [Self::Op, Self::Wait, Self::Dma].into_iter().find(|kind| kind.name() == text)
    }
}

/// One line the plugin writes: one fact about the op that just ended on `core`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// The kernel's exact instruction count, the loader's instructions between the
    /// markers included (the counting module).
    Count {
        /// The core (vCPU).
        core: u32,
        /// Instructions from the start marker to the stop marker.
        instructions: u64,
    },
    /// One of the first findings of the op (the checks module).
    Finding {
        /// The core whose kernel did it.
        core: u32,
        /// What it found.
        finding: Finding<'a>,
    },
    /// The op's totals over every finding, shown or not (the checks module).
    Checked {
        /// The core.
        core: u32,
        /// The op.
        op: u32,
        /// Findings in all.
        findings: u64,
        /// Accesses found wrong in all.
        accesses: u64,
    },
    /// Instructions run at one PC (the profile module).
    Profile {
        /// The core.
        core: u32,
        /// The instruction.
        pc: u32,
        /// Times it ran.
        count: u64,
        /// Its mnemonic.
        mnemonic: &'a str,
    },
    /// Instructions run while a call path was on top (the profile module).
    Stack {
        /// The core.
        core: u32,
        /// Instructions.
        count: u64,
        /// Function entries, outermost first (`0`: the loader).
        frames: Pcs<'a>,
    },
    /// Loads and stores into one 16 MiB page (the profile module).
    Memory {
        /// The core.
        core: u32,
        /// The address's top byte.
        page: u8,
        /// Loads.
        loads: u64,
        /// Stores.
        stores: u64,
    },
    /// Loads and stores of one instruction into one 16 MiB page (the profile module).
    Access {
        /// The core.
        core: u32,
        /// The instruction.
        pc: u32,
        /// The address's top byte.
        page: u8,
        /// Loads.
        loads: u64,
        /// Stores.
        stores: u64,
    },
    /// What the core queued on its DMA queues (the profile module).
    Dma {
        /// The core.
        core: u32,
        /// Bytes in all.
        bytes: u64,
        /// Transfers.
        transfers: u64,
    },
    /// The byte ranges the core stored to in the tensor area, merged (the profile
    /// module); `None`: too many to keep.
    Wrote {
        /// The core.
        core: u32,
        /// The ranges.
        ranges: Option<Ranges<'a>>,
    },
    /// The store that last wrote the first watched output byte in this op, when this
    /// core's was (the checks module, [`Argument::Watch`]).
    Writer {
        /// The core whose store it was.
        core: u32,
        /// The op, counted on its core from 0 in the session.
        op: u32,
        /// The watched byte.
        address: u32,
        /// The store (for a DMA transfer: the store that completed its descriptor).
        pc: u32,
    },
    /// One timeline event (the profile module).
    Event {
        /// The core.
        core: u32,
        /// What it is.
        kind: EventKind,
        /// Host nanoseconds from the plugin's start.
        ns: u64,
        /// Its length in host nanoseconds (0 for a DMA transfer queued).
        dur: u64,
        /// A DMA transfer's bytes.
        bytes: u64,
        /// The core's instructions since the op started.
        at: u64,
    },
    /// Events past the profile module's limit, dropped.
    Events {
        /// The core.
        core: u32,
        /// How many.
        dropped: u64,
    },
    /// One call of a function, from its entry to its return (the profile module): the
    /// calls down to [`Line::Frames`]' depth.
    Frame {
        /// The core.
        core: u32,
        /// The function's entry.
        pc: u32,
        /// Its depth in the call stack: 1 for a function the loader called.
        depth: u32,
        /// The core's instructions since the op started, at its entry.
        at: u64,
        /// Instructions from its entry to its return, its callees' included.
        len: u64,
    },
    /// How deep the op's [`Line::Frame`]s go, and the calls left out below it (the
    /// profile module keeps the top frames whole: past its limit it drops the
    /// deepest level).
    Frames {
        /// The core.
        core: u32,
        /// The deepest [`Line::Frame`] depth kept.
        depth: u32,
        /// Calls deeper than that, not written.
        dropped: u64,
    },
    /// The core reached an author's range marker ([`Argument::Mark`]; the profile module).
    Mark {
        /// The core.
        core: u32,
        /// The marker's PC.
        pc: u32,
        /// The core's instructions since the op started, before the one at `pc`.
        at: u64,
    },
    /// The op's lines are complete.
    End {
        /// The core.
        core: u32,
    },
}

impl Line<'_> {
    /// The core the line is about.
    pub const fn core(&self) -> u32 {
        match *self {
            Self::Count { core, .. }
            | Self::Finding { core, .. }
            | Self::Checked { core, .. }
            | Self::Profile { core, .. }
            | Self::Stack { core, .. }
            | Self::Memory { core, .. }
            | Self::Access { core, .. }
            | Self::Dma { core, .. }
            | Self::Wrote { core, .. }
            | Self::Writer { core, .. }
            | Self::Event { core, .. }
            | Self::Events { core, .. }
            | Self::Frame { core, .. }
            | Self::Frames { core, .. }
            | Self::Mark { core, .. }
            | Self::End { core } => core,
        }
    }

    /// Its first word.
    pub const fn tag(&self) -> &'static str {
        match self {
            Self::Count { .. } => "COUNT",
            Self::Finding { .. } => "FINDING",
            Self::Checked { .. } => "CHECKED",
            Self::Profile { .. } => "PROFILE",
            Self::Stack { .. } => "STACK",
            Self::Memory { .. } => "MEMORY",
            Self::Access { .. } => "ACCESS",
            Self::Dma { .. } => "DMA",
            Self::Wrote { .. } => "WROTE",
            Self::Writer { .. } => "WRITER",
            Self::Event { .. } => "EVENT",
            Self::Events { .. } => "EVENTS",
            Self::Frame { .. } => "FRAME",
            Self::Frames { .. } => "FRAMES",
            Self::Mark { .. } => "MARK",
            Self::End { .. } => "END",
        }
    }
}

impl fmt::Display for Finding<'_> {
    /// The fields after `core=`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            op,
            kind,
            pc,
            address,
            bytes,
            accesses,
            other_core,
            other_pc,
            dma,
            backtrace,
            block,
            reached,
            owner,
            region,
        } = self;
        write!(f, "op={op} kind={kind} pc={pc:#x} address={address:#x} bytes={bytes} accesses={accesses}")?;
        if let Some(other) = other_core {
            write!(f, " other={other}")?;
        }
        if let Some(other_pc) = other_pc {
            write!(f, " other_pc={other_pc:#x}")?;
        }
        if *dma {
            f.write_str(" dma=1")?;
        }
        if let Some(Block { start, size, tcm, alloc, free }) = block {
            write!(f, " block={start:#x} size={size} alloc={alloc}")?;
            if *tcm {
                f.write_str(" tcm=1")?;
            }
            if let Some(free) = free {
                write!(f, " free={free}")?;
            }
        }
        if !backtrace.is_empty() {
            write!(f, " backtrace={backtrace}")?;
        }
        if let Some((at, bytes)) = reached {
            write!(f, " reached={at:#x} reached_bytes={bytes}")?;
        }
        if let Some(owner) = owner {
            write!(f, " owner={owner}")?;
        }
        if let Some(Place { kind, index, start, len, dtype, shape }) = region {
            let key = kind.key();
            write!(f, " region={key} index={index} start={start:#x} len={len} dtype={dtype} shape={shape}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} core={}", self.tag(), self.core())?;
        match self {
            Self::Count { instructions, .. } => write!(f, " instructions={instructions}"),
            Self::Finding { finding, .. } => write!(f, " {finding}"),
            Self::Checked { op, findings, accesses, .. } => {
                write!(f, " op={op} findings={findings} accesses={accesses}")
            }
            Self::Profile { pc, count, mnemonic, .. } => write!(f, " pc={pc:#x} n={count} insn={mnemonic}"),
            Self::Stack { count, frames, .. } => write!(f, " n={count} frames={frames}"),
            Self::Memory { page, loads, stores, .. } => write!(f, " page={page:#04x} loads={loads} stores={stores}"),
            Self::Access { pc, page, loads, stores, .. } => {
                write!(f, " pc={pc:#x} page={page:#04x} loads={loads} stores={stores}")
            }
            Self::Dma { bytes, transfers, .. } => write!(f, " bytes={bytes} transfers={transfers}"),
            Self::Wrote { ranges: Some(ranges), .. } => write!(f, " ranges={ranges}"),
            Self::Wrote { ranges: None, .. } => f.write_str(" ranges=?"),
            Self::Writer { op, address, pc, .. } => write!(f, " op={op} address={address:#x} pc={pc:#x}"),
            Self::Event { kind, ns, dur, bytes, at, .. } => {
                write!(f, " kind={} ns={ns} dur={dur} bytes={bytes} at={at}", kind.name())
            }
            Self::Events { dropped, .. } => write!(f, " dropped={dropped}"),
            Self::Frame { pc, depth, at, len, .. } => write!(f, " pc={pc:#x} depth={depth} at={at} len={len}"),
            Self::Frames { depth, dropped, .. } => write!(f, " depth={depth} dropped={dropped}"),
            Self::Mark { pc, at, .. } => write!(f, " pc={pc:#x} at={at}"),
            Self::End { .. } => Ok(()),
        }
    }
}

impl Number for u8 {
    fn parse(text: &str) -> Option<Self> {
        u32::parse(text)?.try_into().ok()
    }
}

impl<'a> Finding<'a> {
    /// The finding in the fields of a `FINDING` line.
    fn parse(f: &Fields<'a>) -> Result<Self, ParseError> {
        let optional = |key| f.text(key).ok().map(|_| f.number(key)).transpose();
        let flag = |key| match f.text(key) {
            Ok("1") => Ok(true),
            Ok(_) => Err(ParseError),
            Err(_) => Ok(false),
        };
        let block = match f.text("block") {
            Ok(_) => Some(Block {
                start: f.number("block")?,
                size: f.number("size")?,
                tcm: flag("tcm")?,
                alloc: List::parse(f.text("alloc")?)?,
                free: f.text("free").ok().map(List::parse).transpose()?,
            }),
            Err(_) => None,
        };
        let region = match f.text("region") {
            Ok(key) => Some(Place {
                kind: RegionKind::from_key(key).ok_or(ParseError)?,
                index: f.number("index")?,
                start: f.number("start")?,
                len: f.number("len")?,
                dtype: f.number("dtype")?,
                shape: List::parse(f.text("shape")?)?,
            }),
            Err(_) => None,
        };
        Ok(Finding {
            op: f.number("op")?,
            kind: FindingKind::parse(f.text("kind")?).ok_or(ParseError)?,
            pc: f.number("pc")?,
            address: f.number("address")?,
            bytes: f.number("bytes")?,
            accesses: f.number("accesses")?,
            other_core: optional("other")?,
            other_pc: optional("other_pc")?,
            dma: flag("dma")?,
            backtrace: f.text("backtrace").map_or(Ok(List::EMPTY), List::parse)?,
            block,
            reached: match optional("reached")? {
                Some(at) => Some((at, f.number("reached_bytes")?)),
                None => None,
            },
            owner: optional("owner")?,
            region,
        })
    }
}

impl<'a> Line<'a> {
    /// Parses one line (without its newline).
    ///
    /// # Errors
    /// [`ParseError`] for anything [`Line`]'s `Display` does not print.
    pub fn parse(line: &'a str) -> Result<Self, ParseError> {
        let (tag, rest) = line.split_once(' ').ok_or(ParseError)?;
        let f = Fields::new(rest);
        let core = f.number("core")?;
        Ok(match tag {
            "COUNT" => Self::Count { core, instructions: f.number("instructions")? },
            "FINDING" => Self::Finding { core, finding: Finding::parse(&f)? },
            "CHECKED" => Self::Checked {
                core,
                op: f.number("op")?,
                findings: f.number("findings")?,
                accesses: f.number("accesses")?,
            },
            "PROFILE" => Self::Profile { core, pc: f.number("pc")?, count: f.number("n")?, mnemonic: f.text("insn")? },
            "STACK" => Self::Stack { core, count: f.number("n")?, frames: List::parse(f.text("frames")?)? },
            "MEMORY" => {
                Self::Memory { core, page: f.number("page")?, loads: f.number("loads")?, stores: f.number("stores")? }
            }
            "ACCESS" => Self::Access {
                core,
                pc: f.number("pc")?,
                page: f.number("page")?,
                loads: f.number("loads")?,
                stores: f.number("stores")?,
            },
            "DMA" => Self::Dma { core, bytes: f.number("bytes")?, transfers: f.number("transfers")? },
            "WROTE" => Self::Wrote {
                core,
                ranges: match f.text("ranges")? {
                    "?" => None,
                    ranges => Some(List::parse(ranges)?),
                },
            },
            "WRITER" => Self::Writer { core, op: f.number("op")?, address: f.number("address")?, pc: f.number("pc")? },
            "EVENT" => Self::Event {
                core,
                kind: EventKind::parse(f.text("kind")?).ok_or(ParseError)?,
                ns: f.number("ns")?,
                dur: f.number("dur")?,
                bytes: f.number("bytes")?,
                at: f.number("at")?,
            },
            "EVENTS" => Self::Events { core, dropped: f.number("dropped")? },
            "FRAME" => Self::Frame {
                core,
                pc: f.number("pc")?,
                depth: f.number("depth")?,
                at: f.number("at")?,
                len: f.number("len")?,
            },
            "FRAMES" => Self::Frames { core, depth: f.number("depth")?, dropped: f.number("dropped")? },
            "MARK" => Self::Mark { core, pc: f.number("pc")?, at: f.number("at")? },
            "END" => Self::End { core },
            _ => return Err(ParseError),
        })
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;
    use std::vec::Vec;

    fn round_trip(line: Line<'_>) {
        let text = line.to_string();
        assert_eq!(Line::parse(&text), Ok(line), "{text}");
    }

    #[test]
    fn every_line_parses_back_to_itself() {
        round_trip(Line::Count { core: 1, instructions: 10_000_000_000 });
        let finding = Finding {
            op: 0,
            kind: FindingKind::OutOfBoundsStore,
            pc: 0x8400_0123,
            address: 0x6200_0100,
            bytes: 256,
            accesses: 64,
            other_core: None,
            other_pc: None,
            dma: false,
            backtrace: List::EMPTY,
            block: None,
            reached: None,
            owner: None,
            region: None,
        };
        round_trip(Line::Finding { core: 0, finding });
        let shape = [16, 64];
        round_trip(Line::Finding {
            core: 7,
            finding: Finding {
                kind: FindingKind::Race,
                other_core: Some(3),
                other_pc: Some(0x8460_0010),
                dma: true,
                backtrace: List::Raw(&[0x8400_0200, 0x8400_0300]),
                region: Some(Place {
                    kind: RegionKind::Input,
                    index: 1,
                    start: 0x6200_0000,
                    len: 4096,
                    dtype: 1,
                    shape: List::Raw(&shape),
                }),
                ..finding
            },
        });
        for kind in FindingKind::ALL.iter().copied() {
            let block =
                Block { start: 0x6a00_0100, size: 64, tcm: false, alloc: List::Raw(&[0x8400_0010]), free: None };
            round_trip(Line::Finding { core: 2, finding: Finding { kind, block: Some(block), ..finding } });
            let free = Some(List::Raw(&[0x8400_0020, 0x8400_0030][..]));
            round_trip(Line::Finding {
                core: 2,
                finding: Finding { kind, block: Some(Block { free, ..block }), ..finding },
            });
        }
        let block = Block { start: 0x7f80_0000, size: 1024, tcm: true, alloc: List::Raw(&[0x8400_0020]), free: None };
        let reached = Some((0x6200_0000, 64));
        let uninit = Finding { kind: FindingKind::UninitializedRead, block: Some(block), reached, ..finding };
        round_trip(Line::Finding { core: 0, finding: uninit });
        round_trip(Line::Finding { core: 0, finding: Finding { owner: Some(1), ..finding } });
        for kind in RegionKind::ALL {
            let place = Place { kind, index: 0, start: 0x6a00_0000, len: 1 << 20, dtype: 0, shape: List::EMPTY };
            round_trip(Line::Finding { core: 0, finding: Finding { region: Some(place), ..finding } });
        }
        round_trip(Line::Checked { core: 5, op: 2, findings: 11, accesses: 1 << 40 });
        round_trip(Line::Profile { core: 1, pc: 0x8400_0010, count: 5, mnemonic: "l32i.n" });
        round_trip(Line::Stack { core: 1, count: 7, frames: List::Raw(&[0, 0x8400_0010]) });
        round_trip(Line::Memory { core: 1, page: 0x7f, loads: 3, stores: 2 });
        round_trip(Line::Memory { core: 1, page: 0, loads: 0, stores: 1 });
        round_trip(Line::Access { core: 1, pc: 0x8400_0010, page: 0x62, loads: 3, stores: 2 });
        round_trip(Line::Dma { core: 1, bytes: 4096, transfers: 1 });
        round_trip(Line::Wrote {
            core: 2,
            ranges: Some(List::Raw(&[(0x6200_0000, 0x6200_0010), (0x6200_0040, 0x6200_0044)])),
        });
        round_trip(Line::Wrote { core: 2, ranges: Some(List::EMPTY) });
        round_trip(Line::Wrote { core: 2, ranges: None });
        round_trip(Line::Writer { core: 3, op: 1, address: 0x6200_0010, pc: 0x8400_0123 });
        for kind in [EventKind::Op, EventKind::Wait, EventKind::Dma] {
            round_trip(Line::Event { core: 0, kind, ns: 100, dur: 50, bytes: 4096, at: 7 });
        }
        round_trip(Line::Events { core: 3, dropped: 12 });
        round_trip(Line::Frame { core: 1, pc: 0x8400_0100, depth: 2, at: 35, len: 1 << 33 });
        round_trip(Line::Frames { core: 1, depth: 4, dropped: 65_536 });
        round_trip(Line::Mark { core: 7, pc: 0x84e0_0104, at: 120 });
        round_trip(Line::End { core: 8 });
    }

    #[test]
    fn a_finding_reads_as_the_plugin_wrote_it() {
        let text = "FINDING core=2 op=1 kind=input-store pc=0x84400010 address=0x62000244 bytes=4 accesses=1 \
                    backtrace=84400100;84400200 region=input index=1 start=0x62000000 len=4096 dtype=1 shape=16x64";
        let Ok(Line::Finding { core: 2, finding }) = Line::parse(text) else { panic!("{text}") };
        assert_eq!(finding.kind, FindingKind::InputStore);
        assert_eq!(finding.backtrace.iter().collect::<Vec<u32>>(), [0x8440_0100, 0x8440_0200]);
        let region = finding.region.expect("a region");
        assert_eq!(
            (region.kind, region.index, region.shape.iter().collect::<Vec<u16>>()),
            (RegionKind::Input, 1, std::vec![16, 64])
        );
        assert_eq!(Line::Finding { core: 2, finding }.to_string(), text);
    }

    #[test]
    fn other_text_is_refused() {
        for text in [
            "",
            "END",
            "COUNT core=x instructions=1",
            "COUNT core=0",
            "NOPE core=0",
            "FINDING core=0 op=0 kind=out-of-bounds-store pc=0x1 address=0x2 bytes=1 accesses=1",
            "FINDING core=0 op=0 kind=race pc=0x1 address=0x2 bytes=1 accesses=1 backtrace=zz",
            "FINDING core=0 op=0 kind=race pc=0x1 address=0x2 bytes=1 accesses=1 dma=2",
            "FINDING core=0 op=0 kind=race pc=0x1 address=0x2 bytes=1 accesses=1 region=nowhere index=0 start=0x0 len=1 dtype=0 shape=",
            "STACK core=0 n=1 frames=0x84000000",
            "WROTE core=0 ranges=1-",
            "EVENT core=0 kind=sleep ns=1 dur=1 bytes=0 at=1",
            "MEMORY core=0 page=0x100 loads=0 stores=0",
        ] {
            assert_eq!(Line::parse(text), Err(ParseError), "{text:?}");
        }
    }

    #[test]
    fn every_argument_parses_back_to_itself() {
        for argument in [
            Argument::Out("/tmp/neuroncustomop-plugin-1-0.txt"),
            Argument::Start(0x8400_0100),
            Argument::Stop(0x8400_0200),
            Argument::Uncounted(0x8400_0300..0x8400_0340),
            Argument::Rerun(0x8400_0400),
            Argument::Vector(0x8400_0000),
            Argument::Profile,
            Argument::DmaWindow(0x7000_0000),
            Argument::Tensors(0x6200_0000..0x6a00_0000),
            Argument::Code(0x8400_0000..0x8410_0000),
            Argument::Mark(0x8400_0104),
            Argument::CheckTable { core: 7, table: 0x8460_1000 },
            Argument::CheckImage { core: 3, start: 0x8460_0000, writable: 0x8461_0000, end: 0x8480_0000 },
            Argument::HeapJournal { core: 0, journal: 0x8402_0000 },
            Argument::CheckLoader { core: 2, start: 0x84c0_0000, end: 0x84c1_0000 },
            Argument::WordLoads(0x8400_1000..0x8400_1100),
            Argument::CheckStopped(0x8500_26e0),
            Argument::Watch(0x6200_0010..0x6200_0018),
        ] {
            let text = argument.to_string();
            assert_eq!(Argument::parse(&text), Ok(argument.clone()), "{text}");
            assert!(text.starts_with(argument.key()), "{text}");
        }
    }

    #[test]
    fn a_wrong_argument_says_what_was_expected() {
        let error = Argument::parse("check-image=3:8460000").unwrap_err();
        assert_eq!(error.to_string(), "plugin argument `check-image=3:8460000`: not CORE:START:WRITABLE:END in hex");
        assert_eq!(Argument::parse("colour=red").unwrap_err().expected, "no module of the plugin takes this key");
        assert_eq!(Argument::parse("start").unwrap_err().expected, "not key=value");
        assert_eq!(Argument::parse("start=+1").unwrap_err().expected, "not a hex address");
    }
}
