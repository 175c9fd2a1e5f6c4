//! The memory checks: every load and store a library image's code makes while a kernel
//! runs, checked against what its op may touch.
//!
//! The loader writes a region table (`neuroncustomop_wire::checks::RegionTable`) into
//! its image before each kernel: the op's output and inputs, the core's scratch, its
//! DMA queues, the stack. The host names each core's table address and its library
//! image's window (and where that image's writable sections start) in the arguments.
//! At an op's start the table is read from guest memory; then every access of an
//! instruction inside a library image window is classified:
//!
//! - a store into an input, or outside every region the op may write (its own image's
//!   writable part included): `oob-store` or `input-store`; into another core's image
//!   window, stack, dataram or HBM scratch: `cross-core-store`, naming the core whose
//!   it is (`owner=`, and that core's region, from its region table as last read);
//!   into a loader's image outside its stack: `oob-store`, named by that image;
//! - a load outside what the op may read (every region, its own whole image): `oob-load`;
//! - a store to an output byte another core stored to in the same op: `race`, naming
//!   both cores and both PCs;
//! - a load of an output byte no core has stored to (itself or by a DMA transfer it
//!   queued) in this op: `uninit-read`, a warning (the race check's shadow says who wrote
//!   each byte in which op);
//! - a DMA transfer the kernel queues (`dma.rs`: its stores into its descriptors) is
//!   checked as the accesses it makes, over its whole range: its destination as
//!   stores, its source as loads, each at the PC of the store that completed the
//!   descriptor (`dma=1`); one into or out of the heaps' memory must lie in one live
//!   block (`heap.rs`), and one that moves a block's never-written bytes into the
//!   output is an `uninit` warning naming the output bytes they reached (`reached=`);
//! - a `simcall` (QEMU's semihosting, which reaches the host): `simcall`;
//! - the heap checks (`heap.rs`): an access into the core's heap memory outside its
//!   live blocks, a bad free, a leak, a read of a block's bytes never written.
//!
//! The runtime's `memcpy` and `memmove` (`word-loads=LO-HI`, runtime/arch/xtensa/mem.S)
//! copy a source that is not word-aligned with aligned word loads, each holding at
//! least one source byte and maybe up to 3 bytes just outside it, in the source's own
//! words: no fault on the device, and no finding here. Of such a load only the bytes
//! inside the heap block it starts in are checked, and it reads never-written bytes
//! (of a block or of the output) only when none of its bytes there was written. A
//! kernel's own word load past a block is checked as any other.
//!
//! Each finding carries its backtrace: the call sites of the core's shadow call stack
//! (`calls.rs`), innermost first, at most [`DEPTH`].
//!
//! Accesses of one kind, from one site, into one place are folded into one finding (a
//! loop writing 64 floats past an output is one finding of 64 stores over 256 bytes):
//! the site is the instruction, or for the runtime's `memcpy` and `memmove` (a copy's
//! every load is another PC) the copy's call site; the place is the region that names
//! it, the heap block, or the other core's region. A finding keeps the range from its
//! first byte to its last and the number of accesses. When the runtime's copy loads
//! only never-written bytes of a block and then stores into the output, the bytes it
//! stored join that `uninit-read` finding's `reached=`. At the op's end each core writes
//! its first [`SHOWN`] findings as `FINDING` lines, then one `CHECKED` line with how
//! many there were in all (`neuroncustomop_wire::plugin::Line`;
//! `qemu/machine/src/findings.rs` reads them).
//!
//! `watch=LO-HI` (hex) names output bytes whose last writer the host wants (`ncop run
//! --diff-tiers`): at the op's end, the core whose store last wrote the first of them
//! in this op writes a `WRITER` line with its PC (a DMA transfer's write is named by
//! the store that completed its descriptor).
//!
//! The loader's own code and the DMA engine's are not checked: the loader is the
//! device's firmware, and the engine moves only what the kernels queued, which is
//! checked when they queue it.
//!
//! # Cost
//!
//! Every load and store of library code goes through [`State::access`], so its common
//! case is kept short: an allowed access leaves the stretch of memory around it in which
//! every access of its kind is decided alike (`Quiet`: one piece of the region map, in
//! one live heap block), and the core's next access of that kind inside it skips the
//! region scan and the block lookup. A loop walking a tensor or a block pays the full
//! checks once per stretch; a journal store (the blocks change) and the op's end drop
//! them.
//!
//! A run of adjacent plain loads or stores off one base register (`groups.rs`: the
//! runtime's unrolled `memset` and `memcpy` loops, a structure written field by field)
//! is one callback, its first instruction's (the leader's): each other one (a member)
//! is at the leader's address plus a constant, and is checked by [`State::finish`]
//! exactly as `access` checks an access with a callback of its own, in program order,
//! with its own PC, address and width; a whole group inside the core's quiet stretch
//! is decided with one test. No member goes unchecked, for these reasons:
//! - **when**: the members are checked at the core's next event that a callback sees
//!   (its next access, a block or call callback, a `simcall`, the op's end, a stopped
//!   kernel, a returning exception), so before anything of the core's that follows
//!   them, and after they ran: the backtrace, the heap blocks and the stretches are
//!   those they ran under, and a store's value is read back from guest memory (a
//!   group's stores never overlap) where the checks need it (the heap journal, the DMA
//!   queues);
//! - **an exception in the middle of a group**: QEMU takes interrupts between blocks
//!   only, so only an exception raised by a member itself stops a group: a window
//!   overflow at its first use of a register, an `ICOUNT` wrap, a bus error. A handler
//!   that returns runs the member again, as the first of a new block, where it and the
//!   members after it are checked by their own callbacks (that block's groups): the
//!   plugin's `rerun` event (`count.rs`) names that instruction, and only the members
//!   before it are checked from the interrupted group ([`State::rerun`]; a per-vCPU
//!   scoreboard word, `fresh`, set by inline ops at each block's start and each leader,
//!   tells whether the pending group is the one that block was running). A fault that
//!   does not return (a bus error, the instruction budget) ends the kernel: the members
//!   after the faulting one, which did not run, are then checked as if they had (a
//!   finding may count an access the kernel did not make; none it made is left out);
//! - **the leader's own access** is checked as any other, in its own callback.
//!
//! `checks::a_memset_running_56_elements_past_the_output_is_56_stores_found_each_at_its_own_pc`
//! holds a group that is partly inside its output and partly past it to what
//! callbacks of their own found; the DMA and heap tests hold the stores checked with
//! their values read back (the runtime writes a DMA descriptor and the heap journal
//! with runs of stores).

use crate::calls::{CallStack, DEPTH, is_call};
use crate::count::Entry;
use crate::dma::{Descriptors, Side};
use crate::groups::{self, Member, Plain, Role};
use crate::guest_memory;
use crate::heap::{Found, Heaps, Misuse, Named, Site, Written};
use crate::{Arguments, Firmware, Lines, Module};
use neuroncustomop_wire::checks::{Region, RegionKind, RegionTable};
use neuroncustomop_wire::finding::FindingKind;
use neuroncustomop_wire::plugin::{self as wire, Argument, Line, List};
use qemu_plugin::sys::qemu_plugin_scoreboard_new;
use qemu_plugin::{
    CallbackFlags, Instruction, MemRW, MemValue, MemoryInfo, PluginCondition, PluginOp, PluginU64, TranslationBlock,
    VCPUIndex, qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu, qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu,
};
use std::cell::{RefCell, RefMut};
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

/// The heap journal's size in bytes (`heap.rs`).
const JOURNAL_BYTES: u32 = crate::heap::WORDS * 4;

/// Findings of one op on one core written out in full; the rest are counted.
pub const SHOWN: u32 = 10;

/// Largest output whose bytes the race check and the uninitialized-output check
/// follow (10.25 bytes of shadow per byte: [`Shadow`]).
const RACE_LIMIT: u32 = 64 << 20;

/// One core's library image, as the host describes it.
#[derive(Clone, Copy, Debug, Default)]
struct Image {
    /// The image's whole window (code included).
    window: (u32, u32),
    /// Where its writable sections start (up to the window's end: data, bss, heap, stack).
    writable: u32,
}

/// What went wrong, as the checks tell it apart ([`Kind::finding`] names it to the host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Store,
    InputStore,
    CrossCore,
    Load,
    Race,
    Simcall,
    Heap(Misuse),
}

impl Kind {
    /// The kind in the vocabulary the host reads (`neuroncustomop_wire::finding`).
    fn finding(self) -> FindingKind {
        match self {
            Self::Store => FindingKind::OutOfBoundsStore,
            Self::InputStore => FindingKind::InputStore,
            Self::CrossCore => FindingKind::CrossCoreStore,
            Self::Load => FindingKind::OutOfBoundsLoad,
            Self::Race => FindingKind::Race,
            Self::Simcall => FindingKind::Simcall,
            Self::Heap(Misuse::UseAfterFree) => FindingKind::UseAfterFree,
            Self::Heap(Misuse::Outside) => FindingKind::HeapOutside,
            Self::Heap(Misuse::DoubleFree) => FindingKind::DoubleFree,
            Self::Heap(Misuse::InvalidFree) => FindingKind::InvalidFree,
            Self::Heap(Misuse::Leak) => FindingKind::Leak,
            Self::Heap(Misuse::Uninit) => FindingKind::UninitializedRead,
        }
    }
}

/// Where a wrong access landed when it is in none of the op's own regions: another
/// core's stack or scratch (from that core's region table), or a loader's image.
#[derive(Clone, Copy, Debug)]
struct Hit {
    /// The core whose region it is.
    core: u32,
    region: Region,
}

/// One finding, folded over every access of the same kind, made at the same site, into
/// the same place ([`Finding::key`]).
#[derive(Clone, Copy, Debug)]
struct Finding {
    kind: Kind,
    pc: u32,
    /// The bytes accessed, first to last plus one (over every access folded in).
    bytes: (u32, u32),
    accesses: u64,
    /// The other core of a race, or the core whose image a cross-core store hit.
    other: Option<u32>,
    /// The other core's PC in a race.
    other_pc: Option<u32>,
    /// Made by a DMA transfer the kernel queued at `pc`.
    dma: bool,
    /// The call sites under `pc`, innermost first: `backtrace[..depth]`.
    backtrace: [u32; DEPTH],
    depth: u8,
    /// The heap block a heap finding is named by.
    block: Option<Named>,
    /// Another core's region or a loader's image it landed in.
    hit: Option<Hit>,
    /// An uninitialized read by a DMA transfer: the bytes it wrote them to.
    reached: Option<(u32, u32)>,
    /// Where the accesses are made, for folding: `pc`, or for the runtime's copies
    /// (whose every load is another PC) the call site of the copy.
    site: u32,
}

/// What makes two accesses one finding: kind, site and place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    kind: Kind,
    site: u32,
    other: Option<u32>,
    other_pc: Option<u32>,
    dma: bool,
    block: Option<u32>,
    hit: Option<(u32, u32)>,
    /// The start of the op's region that names it ([`nearest`]).
    place: u32,
}

impl Finding {
    /// An uninitialized read whose bytes were also written to `bytes` of the output.
    fn reach(&mut self, bytes: (u32, u32)) {
        self.reached = Some(self.reached.map_or(bytes, |(lo, hi)| (lo.min(bytes.0), hi.max(bytes.1))));
    }

    fn key(&self, place: u32) -> Key {
        Key {
            kind: self.kind,
            site: self.site,
            other: self.other,
            other_pc: self.other_pc,
            dma: self.dma,
            block: self.block.map(|b| b.start),
            hit: self.hit.map(|hit| (hit.core, hit.region.start)),
            place,
        }
    }
}

/// Distinct findings an op keeps per core (folding into them as it goes); past these,
/// new ones are only counted.
const KEPT: usize = 4096;

/// One core's state: whether a kernel runs, the op's regions, its findings so far.
#[derive(Default)]
struct Core {
    running: bool,
    /// Ops this core has started in the session (the race check's op number).
    ops: u32,
    table: Option<RegionTable>,
    /// The op's findings, in the order first found, at most [`KEPT`].
    kept: Vec<Finding>,
    /// Where each finding of `kept` is, by its key.
    index: HashMap<Key, usize>,
    /// Findings past [`KEPT`], counted only.
    overflow: u32,
    /// Accesses of the op found wrong, over every finding.
    accesses: u64,
    /// The kernel's calls, for the backtraces.
    calls: CallStack,
    /// The DMA descriptors it is writing.
    descriptors: Descriptors,
    /// The source of the transfer whose read side was queued last: its write side
    /// follows (the runtime fills the m2s descriptor, then the s2m one).
    last_read: Option<(u32, u32)>,
    /// The `uninit` finding (in [`Core::kept`]) of the runtime copy's latest load, when
    /// it read only never-written bytes: the copy's next store into the output carries
    /// them there.
    carrying: Option<usize>,
    /// Its heaps' blocks: they outlive the op.
    heap: Heaps,
    /// The race shadow of the op's output, as the op began ([`State::follow`]): read
    /// without a lock on every output access.
    shadow: Arc<Shadow>,
    /// The kernel stopped (its loader carries on after it): the op's blocks are given
    /// back, so none is a leak.
    stopped: bool,
    /// Where the op's latest allowed load and store landed (`[load, store]`): the next
    /// access of that kind inside it is decided there (module docs, "Cost").
    quiet: [Quiet; 2],
    /// The group whose leader ran last, until its members are checked ([`State::finish`]).
    pending: Option<Pending>,
}

/// A group (`groups.rs`) whose leader has run and been checked; its members are checked
/// at the core's next event, when they have run ([`State::finish`]).
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// The leader's PC and address.
    leader: u32,
    address: u32,
    store: bool,
    copy: bool,
    members: &'static [Member],
}

/// Where a store's value is read: QEMU's record of the access, or guest memory (a group's
/// member, checked once the group has run; its bytes are its own: `groups.rs`).
#[derive(Clone, Copy)]
enum Stored<'a> {
    Info(&'a MemoryInfo<'a>),
    Memory,
}

impl Stored<'_> {
    /// The word a store of `size` bytes at `address` wrote (none for a narrower one).
    fn word(self, address: u32, size: u32) -> Option<u32> {
        match self {
            Stored::Info(info) => match info.value() {
                MemValue::U32(value) => Some(value),
                _ => None,
            },
            Stored::Memory => {
                let mut bytes = [0; 4];
                (size == 4 && guest_memory::read(u64::from(address), &mut bytes)).then(|| u32::from_le_bytes(bytes))
            }
        }
    }
}

impl Core {
    /// A finding of `kind` at `pc` over `bytes`, with the current backtrace.
    fn finding(&self, kind: Kind, pc: u32, bytes: (u32, u32), other: Option<u32>, other_pc: Option<u32>) -> Finding {
        let mut backtrace = [0; DEPTH];
        let mut depth = 0;
        for (slot, frame) in backtrace.iter_mut().zip(self.calls.frames().iter().rev()) {
            *slot = frame.site as u32;
            depth += 1;
        }
        Finding {
            kind,
            pc,
            bytes,
            accesses: 1,
            other,
            other_pc,
            dma: false,
            backtrace,
            depth,
            block: None,
            hit: None,
            reached: None,
            site: pc,
        }
    }

    /// Where the core is: `pc` under its current calls.
    fn site(&self, pc: u32) -> Site {
        let finding = self.finding(Kind::Store, pc, (0, 0), None, None);
        Site::new(pc, &finding.backtrace[..usize::from(finding.depth)])
    }

    /// A heap finding made at `pc` (or where `found` says it happened).
    fn heap_finding(&self, found: Found, pc: u32) -> Finding {
        let mut finding = self.finding(Kind::Heap(found.misuse), pc, found.bytes, None, None);
        if let Some(site) = found.site {
            let pcs = site.pcs();
            finding.pc = pcs.first().copied().unwrap_or(pc);
            finding.site = finding.pc;
            finding.depth = 0;
            for (slot, pc) in finding.backtrace.iter_mut().zip(pcs.iter().skip(1)) {
                *slot = *pc;
                finding.depth += 1;
            }
        }
        Finding { block: found.block, ..finding }
    }

    /// Folds `found` into the finding of its kind, site and place, or keeps it as a
    /// new one; which of [`Core::kept`] it is (none past [`KEPT`]).
    fn found(&mut self, found: Finding) -> Option<usize> {
        self.accesses += found.accesses;
        // The region that names it (the one holding it, or the closest tensor).
        let place = self.table.as_ref().and_then(|table| nearest(table, found.bytes.0, found.bytes.1));
        let key = found.key(place.map_or(0, |region| region.start));
        if let Some(&at) = self.index.get(&key) {
            let kept = &mut self.kept[at];
            kept.bytes = (kept.bytes.0.min(found.bytes.0), kept.bytes.1.max(found.bytes.1));
            kept.accesses += found.accesses;
            if let Some(reached) = found.reached {
                kept.reach(reached);
            }
            Some(at)
        } else if self.kept.len() < KEPT {
            self.index.insert(key, self.kept.len());
            self.kept.push(found);
            Some(self.kept.len() - 1)
        } else {
            self.overflow += 1;
            None
        }
    }
}

/// Who last stored to each byte of the current output, as an entry
/// `op << 40 | (core + 1) << 32 | pc` (0: nobody yet).
///
/// A store that covers one of the output's 4-byte words whole (a tensor's element
/// stores, a copy's word stores) is recorded once, in `words`: one atomic swap, where
/// one per byte was a tenth of a checked call's time. Any other store (a byte, a half, a
/// word across two) is recorded byte by byte, in `bytes`. A byte's last writer is its
/// `bytes` entry when that entry is of the current op (a word store clears the current
/// entries of its bytes as it takes them over), else its word's entry.
///
/// A word none of whose bytes was ever stored to alone is not `split`: a word store
/// there reads no byte entry (a tensor's word stores touch 9 bytes of shadow, not 40).
///
/// Both sides swap their own entry, then read the other's (sequentially consistent; a
/// byte store marks its word split first): of two cores storing to one byte at once, at
/// least one sees the other, as with one entry per byte.
///
/// On a device with one checked core (`alone`) only that core's thread ever stores into
/// the shadow (the memory callbacks reach the shadow only through a checked core's
/// [`Core`], and there is one), so there is no other side: an entry is written with a
/// relaxed store and the one it replaces is not read (nobody's, as far as a race
/// goes), where the swap was a locked instruction that waited for the entry's line to
/// arrive from memory (perf: half of a checked 1-core call's race check, a seventh of
/// the plugin's time in `relu_forward` on [64, 4096]).
#[derive(Default)]
struct Shadow {
    start: u32,
    /// Bytes followed, from `start`.
    len: u32,
    /// One core stores into it (above): no entry needs an atomic swap.
    alone: bool,
    words: Vec<AtomicU64>,
    /// Per word: 1 once a store of part of it was recorded in `bytes`.
    split: Vec<AtomicU8>,
    bytes: Vec<AtomicU64>,
}

impl Shadow {
    /// The shadow of `len` bytes from `start`, nobody's; stored into by one core only
    /// when `alone`.
    fn new(start: u32, len: u32, alone: bool) -> Shadow {
        let words = len.div_ceil(4) as usize;
        Shadow {
            start,
            len,
            alone,
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            split: (0..words).map(|_| AtomicU8::new(0)).collect(),
            bytes: (0..len).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The entry of the last store to byte `at` (from `start`, below `len`) in op `op`.
    fn last(&self, at: u32, op: u64) -> Option<u64> {
        let current = |slot: &AtomicU64| Some(slot.load(Ordering::SeqCst)).filter(|&entry| of_op(entry, op));
        let word = at as usize / 4;
        let byte = if self.split[word].load(Ordering::SeqCst) == 0 { None } else { current(&self.bytes[at as usize]) };
        byte.or_else(|| current(&self.words[word]))
    }

    /// Records the store `mine` (core `vcpu`'s, in op `op`) of bytes `from..to` (from
    /// `start`, the followed ones); another core's store to one of them in this op, if
    /// any: its core and PC.
    fn store(&self, from: u32, to: u32, mine: u64, op: u64, vcpu: u32) -> Option<(u32, u32)> {
        let to = to.min(self.len);
        let mut raced = None;
        let mut at = from;
        while at < to {
            let word = &self.words[at as usize / 4];
            let split = &self.split[at as usize / 4];
            if at.is_multiple_of(4) && to - at >= 4 {
                let before = self.swap(word, mine);
                if split.load(Ordering::SeqCst) == 0 {
                    raced = other(before, op, vcpu).or(raced);
                    at += 4;
                    continue;
                }
                for slot in &self.bytes[at as usize..at as usize + 4] {
                    let entry = slot.load(Ordering::SeqCst);
                    let last = if of_op(entry, op) {
                        // The word's entry is this byte's last writer from now on. (A core
                        // that stored to it since wrote the byte after this store: kept.)
                        let _ = slot.compare_exchange(entry, 0, Ordering::SeqCst, Ordering::Relaxed);
                        entry
                    } else {
                        before
                    };
                    raced = other(last, op, vcpu).or(raced);
                }
                at += 4;
            } else {
                split.store(1, Ordering::SeqCst);
                let before = self.swap(&self.bytes[at as usize], mine);
                let last = if of_op(before, op) { before } else { word.load(Ordering::SeqCst) };
                raced = other(last, op, vcpu).or(raced);
                at += 1;
            }
        }
        raced
    }

    /// Puts `entry` in `slot`; what was there, as far as a race goes: when `alone`,
    /// nobody's (0), unread, since every entry is this core's.
    fn swap(&self, slot: &AtomicU64, entry: u64) -> u64 {
        if self.alone {
            slot.store(entry, Ordering::Relaxed);
            0
        } else {
            slot.swap(entry, Ordering::SeqCst)
        }
    }
}

/// Whether the shadow `entry` is a store of op `op`.
fn of_op(entry: u64, op: u64) -> bool {
    entry >> 40 == op && entry >> 32 & 0xFF != 0
}

/// The core and PC of the store `entry` when it is another core's than `vcpu`, in op `op`.
fn other(entry: u64, op: u64, vcpu: u32) -> Option<(u32, u32)> {
    let owner = (entry >> 32 & 0xFF) as u32;
    (of_op(entry, op) && owner - 1 != vcpu).then_some((owner - 1, entry as u32))
}

/// A stretch of memory in which every load (or every store) of the core's kernel is
/// decided alike, found by the full checks of an allowed access: the same regions hold
/// each of its bytes, it lies in one place of the core's own image (code or writable)
/// and, in the heaps' memory while they are watched, in one live block. An access wholly
/// inside it needs no region scan and no block lookup, only what `then` says. Kept until
/// the op ends or a store into the heap journal changes the blocks.
#[derive(Clone, Debug, Default)]
struct Quiet {
    lo: u32,
    /// One past its last byte (`lo`: empty).
    hi: u32,
    /// It lies in the core's heap memory (a copy's word load there carries nothing).
    heap: bool,
    then: Then,
}

/// What an access inside a [`Quiet`] stretch still does.
#[derive(Clone, Debug, Default)]
enum Then {
    /// Nothing: it is allowed.
    #[default]
    Nothing,
    /// A store into the op's output: the race shadow records it.
    Output(Region),
    /// In the live `malloc` block starting at `start`: a store marks its bytes written,
    /// a load of bytes never written goes to the full checks, which name it.
    Block { start: u32, written: Written },
}

impl Quiet {
    /// Whether the `size` bytes at `address` lie wholly inside it.
    fn holds(&self, address: u32, size: u32) -> bool {
        address >= self.lo && u64::from(address) + u64::from(size) <= u64::from(self.hi)
    }
}

/// One vCPU's [`Core`], reached only by that vCPU's own callbacks ([`State::core`]).
///
/// QEMU runs every callback of a vCPU on the thread that runs that vCPU, one at a time
/// (a host thread per vCPU under MTTCG; otherwise one thread runs every vCPU in turn),
/// and the checks' callbacks reach only the `Core` of the vCPU they are called for. So a
/// `Core` is never touched by two threads at once and needs no lock: a `Mutex` cost two
/// atomics on every checked memory access, a quarter of a checked call's time (perf).
/// The `RefCell` turns a callback that reached its core twice into a panic, not aliasing.
#[derive(Default)]
struct VcpuCell(RefCell<Core>);

// SAFETY: each cell is borrowed only on its vCPU's thread, one callback at a time (the
// type's documentation): never from two threads at once.
unsafe impl Sync for VcpuCell {}

/// The checks' state, shared by the module and its memory callbacks.
struct State {
    /// Per vCPU: its loader's region table address.
    tables: Vec<Option<u32>>,
    /// Per vCPU: its library image.
    images: Vec<Image>,
    /// Per vCPU: its runtime's heap journal (`heap.rs`).
    journals: Vec<Option<u32>>,
    /// Per vCPU: its loader image's window (`check-loader=`), to name an access there.
    loaders: Vec<Option<(u32, u32)>>,
    /// The runtime's `memcpy` and `memmove` in every library image (module docs).
    word_loads: Vec<Range<u32>>,
    cores: Vec<VcpuCell>,
    /// Per vCPU: its region table as last read, to name another core's stack or scratch.
    known: RwLock<Vec<Option<RegionTable>>>,
    /// The shadow of the latest output: each op's cores take it at the op's start.
    shadow: RwLock<Arc<Shadow>>,
    /// The first output byte whose last writer the host asked for (`watch=`).
    watch: Option<u32>,
    /// Per vCPU (QEMU's scoreboard): 1 when the next block of library code may move
    /// its call stack, as it follows a call, a return or an indirect jump. Only then
    /// does the block's callback run (a condition in the generated code).
    moved: Entry,
    /// Per vCPU (QEMU's scoreboard): the PC of the group leader that ran last in the
    /// block now running (0: none yet), set by inline ops as each block starts and
    /// before each leader. An exception's handler that returns to an instruction of
    /// that block finds here whether the pending group is the one it cut ([`State::rerun`]).
    fresh: Entry,
    /// Per vCPU (QEMU's scoreboard): 1 when the pending group's stores are checked
    /// before the instruction after them runs (a condition in the generated code), as
    /// one of them may need its value read back: a store into the heap journal, or one
    /// outside the core's quiet stretch (the DMA queues, which the DMA engine may change
    /// once a later store has set it going) ([`State::group`]).
    flush: Entry,
}

/// The instructions that leave a function (the windowed and the call0 returns) or may
/// (`jx`, an indirect jump): the block after one may be a return address.
const LEAVES: [&str; 5] = ["retw", "retw.n", "ret", "ret.n", "jx"];

/// The memory checks module.
pub(crate) struct Checks {
    state: Arc<State>,
    /// The span of every library window: instructions inside it are checked (empty:
    /// the host asked for no checks).
    code: Range<u64>,
    /// Where the loaders carry on after a kernel stopped (`check-stopped=`).
    stopped: HashSet<u64>,
}

impl Checks {
    /// Takes `check-table=CORE:ADDR` (one per core: its loader's
    /// `NEURON_CHECK_REGIONS`) and `check-image=CORE:START:WRITABLE:END` (its library
    /// image's window and where its writable sections start), all hex. Without them
    /// the module checks nothing. `word-loads=LO-HI` (any number): the runtime's copies.
    /// `check-loader=CORE:START:END` (one per core): its loader image's window.
    /// `check-stopped=PC` (any number): where a loader carries on after a kernel
    /// stopped, then gives the op's blocks back (no leaks).
    pub(crate) fn install(args: &mut Arguments<'_>) -> Result<Box<dyn Module>, String> {
        let word_loads = args.take(|argument| match argument {
            Argument::WordLoads(range) => Some(range.clone()),
            _ => None,
        });
        let stopped = args.take(|argument| match *argument {
            Argument::CheckStopped(pc) => Some(u64::from(pc)),
            _ => None,
        });
        let mut tables = Vec::new();
        let mut images = Vec::new();
        let mut journals = Vec::new();
        let mut loaders = Vec::new();
        let per_core = args.take(|argument| match *argument {
            Argument::CheckTable { core, .. }
            | Argument::CheckImage { core, .. }
            | Argument::CheckLoader { core, .. }
            | Argument::HeapJournal { core, .. } => Some((core as usize, argument.clone())),
            _ => None,
        });
        for (core, argument) in per_core {
            if core >= 64 {
                return Err(format!("plugin argument `{argument}`: there is no core {core}"));
            }
            match argument {
                Argument::CheckTable { table, .. } => {
                    tables.resize(tables.len().max(core + 1), None);
                    tables[core] = Some(table);
                }
                Argument::CheckLoader { start, end, .. } => {
                    loaders.resize(loaders.len().max(core + 1), None);
                    loaders[core] = Some((start, end));
                }
                Argument::HeapJournal { journal, .. } => {
                    journals.resize(journals.len().max(core + 1), None);
                    journals[core] = Some(journal);
                }
                Argument::CheckImage { start, writable, end, .. } => {
                    images.resize(images.len().max(core + 1), Image::default());
                    images[core] = Image { window: (start, end), writable };
                }
                _ => {}
            }
        }
        let watch = args
            .take(|argument| match argument {
                Argument::Watch(range) => Some(range.start),
                _ => None,
            })
            .pop();
        let lo = images.iter().map(|i| i.window.0).min().unwrap_or(0);
        let hi = images.iter().map(|i| i.window.1).max().unwrap_or(0);
        let count = tables.len().max(images.len());
        let cores = (0..count).map(|_| VcpuCell::default()).collect();
        let known = RwLock::new(vec![None; count]);
        let shadow = RwLock::default();
        // SAFETY: allocates QEMU's zeroed per-vCPU u64; never freed, as `Entry` relies on.
        let moved = Entry(PluginU64 { score: unsafe { qemu_plugin_scoreboard_new(size_of::<u64>()) }, offset: 0 });
        // SAFETY: as for `moved`.
        let fresh = Entry(PluginU64 { score: unsafe { qemu_plugin_scoreboard_new(size_of::<u64>()) }, offset: 0 });
        // SAFETY: as for `moved`.
        let flush = Entry(PluginU64 { score: unsafe { qemu_plugin_scoreboard_new(size_of::<u64>()) }, offset: 0 });
        let state = Arc::new(State {
            tables,
            images,
            journals,
            loaders,
            word_loads,
            cores,
            known,
            shadow,
            watch,
            moved,
            fresh,
            flush,
        });
        Ok(Box::new(Checks { state, code: u64::from(lo)..u64::from(hi), stopped: stopped.into_iter().collect() }))
    }
}

/// The parts of [`Checks`]' `translate`, one kind of callback each. They run at
/// translation time only; the callbacks they register are the ones the checked run
/// pays for on every access, and are as they were written inline.
impl Checks {
    /// A block of the library images: its backtrace callback, when the block follows
    /// a call, a return or an indirect jump (`State::moved`), and its groups marked as
    /// not yet run (`State::fresh`).
    fn block(&self, tb: &TranslationBlock<'_>) {
        let (state, pc) = (Arc::clone(&self.state), tb.vaddr());
        tb.register_conditional_execute_callback_flags(
            move |vcpu| {
                state.moved.set(vcpu, 0);
                state.calls(vcpu, |calls| _ = calls.block(pc));
            },
            CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
            PluginCondition::QEMU_PLUGIN_COND_NE,
            self.state.moved.0,
            0,
        );
        // A new block: no group of it has run yet (`State::fresh`).
        qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(
            tb.clone(),
            PluginOp::QEMU_PLUGIN_INLINE_STORE_U64,
            self.state.fresh.0,
            0,
        );
    }

    /// The instruction after a group of stores: the group's members are checked before
    /// it runs, when they need their values (`State::flush`).
    fn flush_after(&self, insn: &Instruction<'_>) {
        let state = Arc::clone(&self.state);
        insn.register_conditional_execute_callback_flags(
            move |vcpu| {
                state.flush.set(vcpu, 0);
                drop(state.settled(vcpu));
            },
            CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
            PluginCondition::QEMU_PLUGIN_COND_NE,
            self.state.flush.0,
            0,
        );
    }

    /// The backtraces' callbacks on a call (the frame it pushes) and a return or an
    /// indirect jump (the next block looks itself up: `State::moved`), and the
    /// `simcall`'s.
    fn control(&self, insn: &Instruction<'_>) {
        let pc = insn.vaddr();
        let mnemonic = insn.disas().unwrap_or_default();
        let mnemonic = mnemonic.split_whitespace().next().unwrap_or_default();
        if is_call(mnemonic) {
            let (state, ret) = (Arc::clone(&self.state), pc + insn.size() as u64);
            insn.register_execute_callback_flags(
                move |vcpu| {
                    state.moved.set(vcpu, 1);
                    state.calls(vcpu, |calls| calls.call(pc, ret));
                },
                CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
            );
        }
        if LEAVES.contains(&mnemonic) {
            qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
                insn.clone(),
                PluginOp::QEMU_PLUGIN_INLINE_STORE_U64,
                self.state.moved.0,
                1,
            );
        }
        if mnemonic == "simcall" {
            let state = Arc::clone(&self.state);
            insn.register_execute_callback_flags(
                move |vcpu| state.simcall(vcpu, pc as u32),
                CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
            );
        }
    }

    /// A group's leader: one memory callback that checks its access and its members'.
    fn leader(&self, insn: &Instruction<'_>, members: Vec<Member>, plain: Plain, copy: bool) {
        let pc = insn.vaddr();
        // Its group is the one whose leader ran last in this block (`State::fresh`).
        qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
            insn.clone(),
            PluginOp::QEMU_PLUGIN_INLINE_STORE_U64,
            self.state.fresh.0,
            pc,
        );
        let state = Arc::clone(&self.state);
        // Leaked as the callback is (the qemu-plugin crate keeps every
        // callback for QEMU's lifetime): a pending group points at it.
        let members: &'static [Member] = Box::leak(members.into_boxed_slice());
        let (store, size) = (plain.store, plain.size);
        let rw = if store { MemRW::QEMU_PLUGIN_MEM_W } else { MemRW::QEMU_PLUGIN_MEM_R };
        insn.register_memory_access_callback_flags(
            move |vcpu, info: MemoryInfo, vaddr| {
                let access = Access { pc: pc as u32, address: vaddr as u32, size, store, copy };
                state.group(vcpu, access, members, &info);
            },
            rw,
            CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
        );
    }

    /// An instruction in no group (not a plain load or store): its accesses checked
    /// one by one.
    fn own_accesses(&self, insn: &Instruction<'_>, copy: bool) {
        let pc = insn.vaddr();
        // One callback for its loads and one for its stores: QEMU calls only
        // the one that matches, so the callback knows which without asking.
        // Each of the cores' load and store instructions moves one width,
        // asked of QEMU once.
        for (rw, store) in [(MemRW::QEMU_PLUGIN_MEM_R, false), (MemRW::QEMU_PLUGIN_MEM_W, true)] {
            let state = Arc::clone(&self.state);
            let width = AtomicU32::new(0);
            insn.register_memory_access_callback_flags(
                move |vcpu, info: MemoryInfo, vaddr| {
                    let mut size = width.load(Ordering::Relaxed);
                    if size == 0 {
                        size = 1 << info.size_shift();
                        width.store(size, Ordering::Relaxed);
                    }
                    let access = Access { pc: pc as u32, address: vaddr as u32, size, store, copy };
                    state.group(vcpu, access, &[], &info);
                },
                rw,
                CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
            );
        }
    }
}

/// Which instructions of a block (as [`groups::roles`] gave them roles) follow a group
/// of stores: each gets the callback that checks the group's members before it
/// (`State::flush`).
fn trails(roles: &[Role], decoded: &[(u32, Option<Plain>, bool)]) -> Vec<bool> {
    let mut trails = vec![false; roles.len()];
    for (at, role) in roles.iter().enumerate() {
        if let (Role::Leads(members), Some(plain)) = (role, decoded[at].1)
            && plain.store
            && !members.is_empty()
        {
            trails[at + 1 + members.len()] = true;
        }
    }
    trails
}

impl Module for Checks {
    /// A memory callback on every instruction of the library images but a group's
    /// members (module docs, "Cost"; with a conditional one after a group of stores);
    /// for the backtraces, a callback on each of their calls and on each of their
    /// blocks that follows a call, a return or an indirect jump (`State::moved`); one on
    /// each `simcall`.
    fn translate(&self, tb: &TranslationBlock<'_>, _: &Firmware) {
        if self.code.contains(&tb.vaddr()) {
            self.block(tb);
        }
        let instructions: Vec<_> = tb.instructions().collect();
        // Which of them one callback checks together (`groups.rs`).
        let decoded: Vec<_> = instructions
            .iter()
            .map(|insn| {
                let pc = insn.vaddr();
                let plain = self.code.contains(&pc).then(|| insn.disas().ok().as_deref().and_then(groups::decode));
                (pc as u32, plain.flatten(), self.state.copies(pc as u32))
            })
            .collect();
        let roles = groups::roles(&decoded);
        let trails = trails(&roles, &decoded);
        for (((insn, role), &(_, plain, copy)), trails) in instructions.iter().zip(roles).zip(&decoded).zip(trails) {
            let pc = insn.vaddr();
            if trails {
                self.flush_after(insn);
            }
            if self.stopped.contains(&pc) {
                let state = Arc::clone(&self.state);
                insn.register_execute_callback_flags(
                    move |vcpu| state.stopped(vcpu),
                    CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
                );
            }
            if !self.code.contains(&pc) {
                continue;
            }
            self.control(insn);
            match (role, plain) {
                (Role::Member, _) => {}
                (Role::Leads(members), Some(plain)) => self.leader(insn, members, plain, copy),
                _ => self.own_accesses(insn, copy),
            }
        }
    }

    /// Reads the op's regions from the loader's table.
    fn op_begin(&self, vcpu: VCPUIndex) {
        self.state.op_begin(vcpu);
    }

    /// Writes the op's findings.
    fn op_end(&self, vcpu: VCPUIndex, lines: &mut Lines) {
        self.state.op_end(vcpu, lines);
    }

    /// Checks the members of the pending group that ran before the exception.
    fn rerun(&self, vcpu: VCPUIndex, pc: u64) {
        self.state.rerun(vcpu, pc);
    }
}

impl State {
    /// `vcpu`'s core: called only from `vcpu`'s own callbacks ([`VcpuCell`]).
    fn core(&self, vcpu: VCPUIndex) -> Option<RefMut<'_, Core>> {
        Some(self.cores.get(vcpu as usize)?.0.borrow_mut())
    }

    /// `vcpu`'s core, its pending group's members checked (they ran before any event
    /// of the core's that a callback sees: [`State::finish`]).
    fn settled(&self, vcpu: VCPUIndex) -> Option<RefMut<'_, Core>> {
        let mut core = self.core(vcpu)?;
        if core.pending.is_some() {
            self.finish(&mut core, vcpu, None);
        }
        Some(core)
    }

    /// Whether `pc` is in the runtime's `memcpy` or `memmove` (module docs).
    fn copies(&self, pc: u32) -> bool {
        self.word_loads.iter().any(|range| range.contains(&pc))
    }

    /// Checks the pending group's members (`groups.rs`), in their order, as their own
    /// callbacks would have; with `cut`, only those before the member at `cut`, where
    /// an exception stopped the group.
    /// Not inlined: the callbacks that find no group pending stay short.
    #[inline(never)]
    fn finish(&self, core: &mut Core, vcpu: VCPUIndex, cut: Option<u32>) {
        let Some(pending) = core.pending.take() else { return };
        if cut.is_none() && self.quietly(core, vcpu, &pending) {
            return;
        }
        for member in pending.members.iter().take_while(|member| cut.is_none_or(|cut| member.pc < cut)) {
            let address = pending.address.wrapping_add(member.delta);
            let access = Access { pc: member.pc, address, size: member.size, store: pending.store, copy: pending.copy };
            self.access(core, vcpu, access, Stored::Memory);
        }
    }

    /// Checks a whole group's members at once when each lies in the core's quiet
    /// stretch of their kind (module docs, "Cost") and none is a store into the heap
    /// journal: what `access` does for each, with one test of the stretch's kind. False
    /// (nothing done) when one of them needs more: `finish` checks them one by one.
    fn quietly(&self, core: &mut Core, vcpu: VCPUIndex, pending: &Pending) -> bool {
        let Pending { address, store, copy, members, .. } = *pending;
        let at = |member: &Member| address.wrapping_add(member.delta);
        let quiet = &core.quiet[usize::from(store)];
        let quiet_loads = || members.iter().all(|member| quiet.holds(at(member), member.size));
        if !core.running || !(if store { self.quiet_stores(core, vcpu, pending) } else { quiet_loads() }) {
            return false;
        }
        let word_load = copy && !store;
        let output = match &quiet.then {
            Then::Nothing => None,
            Then::Block { start, written } => {
                let bytes = |member: &Member| (at(member) - start, at(member) - start + member.size);
                if store {
                    for member in members {
                        let (from, to) = bytes(member);
                        written.set(from, to);
                    }
                } else if !members
                    .iter()
                    .map(bytes)
                    .all(|(from, to)| if word_load { written.any(from, to) } else { written.all(from, to) })
                {
                    // Bytes never written: each member is checked alone.
                    return false;
                }
                None
            }
            Then::Output(region) => Some(*region),
        };
        if !copy || (word_load && quiet.heap) {
            core.carrying = None;
        }
        if let Some(region) = output {
            for member in members {
                let access = Access { pc: member.pc, address: at(member), size: member.size, store, copy };
                self.output_store(core, vcpu, access, Stored::Memory, &region);
            }
        }
        true
    }

    /// A handler returned to the instruction at `pc`, which starts again: if the
    /// pending group's leader is the last to have run in the block the exception
    /// interrupted (`fresh`) and `pc` is one of its members, the members from `pc` on
    /// did not run (they run again, in a new block, with callbacks of their own); any
    /// other pending group ran whole.
    fn rerun(&self, vcpu: VCPUIndex, pc: u64) {
        let Some(mut core) = self.core(vcpu) else { return };
        let cut = core
            .pending
            .filter(|pending| {
                u64::from(pending.leader) == self.fresh.get(vcpu)
                    && pending.members.iter().any(|member| u64::from(member.pc) == pc)
            })
            .map(|_| pc as u32);
        self.finish(&mut core, vcpu, cut);
    }

    /// The leader of a group (with `members`; none for an access that is no plain load
    /// or store) has made `first` (`info`: QEMU's record of it, for a store's value):
    /// checks it now, its members at the core's next event.
    fn group(&self, vcpu: VCPUIndex, first: Access, members: &'static [Member], info: &MemoryInfo) {
        let Some(mut core) = self.settled(vcpu) else { return };
        self.access(&mut core, vcpu, first, Stored::Info(info));
        if !members.is_empty() {
            let (leader, address, store, copy) = (first.pc, first.address, first.store, first.copy);
            let pending = Pending { leader, address, store, copy, members };
            if store && !self.quiet_stores(&core, vcpu, &pending) {
                self.flush.set(vcpu, 1);
            }
            core.pending = Some(pending);
        }
    }

    /// Whether every store of `pending`'s members lies in the core's quiet stretch of
    /// stores and none in the heap journal: checked, they need no value.
    fn quiet_stores(&self, core: &Core, vcpu: VCPUIndex, pending: &Pending) -> bool {
        let at = |member: &Member| pending.address.wrapping_add(member.delta);
        let journal = self.journals.get(vcpu as usize).copied().flatten();
        let quiet = &core.quiet[1];
        pending.members.iter().all(|member| {
            quiet.holds(at(member), member.size)
                && journal.is_none_or(|journal| at(member).wrapping_sub(journal) >= JOURNAL_BYTES)
        })
    }

    fn op_begin(&self, vcpu: VCPUIndex) {
        drop(self.settled(vcpu));
        let Some(address) = self.tables.get(vcpu as usize).copied().flatten() else { return };
        let mut bytes = vec![0u8; size_of::<RegionTable>()];
        let table =
            guest_memory::read(u64::from(address), &mut bytes).then(|| RegionTable::from_bytes(&bytes)).flatten();
        if let Some(slot) = self.known.write().unwrap_or_else(PoisonError::into_inner).get_mut(vcpu as usize) {
            *slot = table;
        }
        let output =
            table.as_ref().and_then(|t| t.regions().iter().find(|r| r.kind() == Some(RegionKind::Output)).copied());
        let shadow = match output {
            Some(output) => self.follow(&output),
            None => Arc::clone(&self.shadow.read().unwrap_or_else(PoisonError::into_inner)),
        };
        let Some(mut core) = self.core(vcpu) else { return };
        let ops = core.ops + 1;
        let mut heap = std::mem::take(&mut core.heap);
        heap.op_begin();
        *core = Core { running: true, ops, table, heap, shadow, ..Core::default() };
    }

    /// The shadow covering `output` (every core of the op asks; the first grows it).
    fn follow(&self, output: &Region) -> Arc<Shadow> {
        let len = output.len.min(RACE_LIMIT);
        {
            let shadow = self.shadow.read().unwrap_or_else(PoisonError::into_inner);
            if shadow.start == output.start && shadow.len >= len {
                return Arc::clone(&shadow);
            }
        }
        let mut shadow = self.shadow.write().unwrap_or_else(PoisonError::into_inner);
        if shadow.start != output.start || shadow.len < len {
            // Entries of earlier ops carry their op's number: a new output starts clean.
            *shadow = Arc::new(Shadow::new(output.start, len, self.cores.len() <= 1));
        }
        Arc::clone(&shadow)
    }

    fn op_end(&self, vcpu: VCPUIndex, lines: &mut Lines) {
        let Some(mut core) = self.settled(vcpu) else { return };
        if !core.running {
            return;
        }
        core.running = false;
        // A stopped kernel's blocks are given back right after: no leaks.
        let leaks = if core.stopped { Vec::new() } else { core.heap.leaks(core.ops) };
        for leak in leaks {
            let finding = core.heap_finding(leak, 0);
            core.found(finding);
        }
        self.wrote(&core, vcpu, lines);
        let total = core.kept.len() as u64 + u64::from(core.overflow);
        if total == 0 {
            return;
        }
        let op = core.ops - 1;
        for finding in core.kept.iter().take(SHOWN as usize) {
            describe(lines, vcpu, finding, op, core.table.as_ref());
        }
        lines.push(Line::Checked { core: vcpu, op, findings: total, accesses: core.accesses });
    }

    /// The `WRITER` line of the watched bytes (`watch=`), when `vcpu`'s store in this
    /// op was the last to write the first of them.
    fn wrote(&self, core: &Core, vcpu: VCPUIndex, lines: &mut Lines) {
        let Some(address) = self.watch else { return };
        let shadow = &core.shadow;
        let Some(at) = address.checked_sub(shadow.start).filter(|&at| at < shadow.len) else { return };
        if let Some(entry) = shadow.last(at, u64::from(core.ops))
            && (entry >> 32 & 0xFF) == u64::from(vcpu) + 1
        {
            lines.push(Line::Writer { core: vcpu, op: core.ops - 1, address, pc: entry as u32 });
        }
    }

    /// The kernel on `vcpu` stopped: its loader carries on and gives its blocks back.
    fn stopped(&self, vcpu: VCPUIndex) {
        if let Some(mut core) = self.settled(vcpu).filter(|core| core.running) {
            core.stopped = true;
        }
    }

    /// Runs `step` on `vcpu`'s call stack while its kernel runs.
    fn calls(&self, vcpu: VCPUIndex, step: impl FnOnce(&mut CallStack)) {
        if let Some(mut core) = self.settled(vcpu).filter(|core| core.running) {
            step(&mut core.calls);
        }
    }

    /// The kernel on `vcpu` is about to make a semihosting call at `pc`.
    fn simcall(&self, vcpu: VCPUIndex, pc: u32) {
        let Some(mut core) = self.settled(vcpu).filter(|core| core.running) else { return };
        let found = core.finding(Kind::Simcall, pc, (0, 0), None, None);
        core.found(found);
    }

    /// One access on `vcpu` (`stored`: where a store's value is read).
    fn access(&self, core: &mut Core, vcpu: VCPUIndex, access: Access, stored: Stored<'_>) {
        let Access { pc, address, size, store, copy } = access;
        if store
            && let Some(journal) = self.journals.get(vcpu as usize).copied().flatten()
            && address.wrapping_sub(journal) < JOURNAL_BYTES
        {
            self.journal(core, pc, stored, address, size, address.wrapping_sub(journal));
        }
        if !core.running {
            return;
        }
        let word_load = copy && !store;
        let quiet = &core.quiet[usize::from(store)];
        if quiet.holds(address, size) {
            let output = match &quiet.then {
                Then::Nothing => None,
                Then::Block { start, written } => {
                    let (from, to) = (address - start, address - start + size);
                    if store {
                        written.set(from, to);
                    } else if !(if word_load { written.any(from, to) } else { written.all(from, to) }) {
                        // Bytes never written: the full checks below name them.
                        return self.checked(core, vcpu, access, stored);
                    }
                    None
                }
                Then::Output(region) => Some(*region),
            };
            if !copy || (word_load && quiet.heap) {
                core.carrying = None;
            }
            if let Some(region) = output {
                self.output_store(core, vcpu, access, stored, &region);
            }
            return;
        }
        self.checked(core, vcpu, access, stored);
    }

    /// The full checks of one access of a kernel (`access` has found it outside the
    /// core's quiet stretches). Not inlined: `access`, called for every load and store,
    /// stays a short function with a small frame.
    #[inline(never)]
    fn checked(&self, core: &mut Core, vcpu: VCPUIndex, access: Access, stored: Stored<'_>) {
        let Access { pc, address, size, store, copy } = access;
        let word_load = copy && !store;
        let heap = in_heap(core, address);
        if !copy || (word_load && heap) {
            // Outside a copy, or a copy's load of bytes it may have written: carries nothing.
            core.carrying = None;
        }
        let mut block = None;
        if core.heap.watching() && heap {
            let found =
                if word_load { core.heap.word_load(address, size) } else { core.heap.access(address, size, store) };
            if let Some(found) = found {
                let uninit = found.misuse == Misuse::Uninit;
                let found = in_copy(core.heap_finding(found, pc), copy);
                let at = core.found(found);
                if word_load && uninit {
                    core.carrying = at;
                }
                return;
            }
            block = core.heap.live(address);
        }
        let bytes = (address, address.wrapping_add(size));
        let found = match self.classify(core, vcpu, address, store).0 {
            Verdict::Allowed => return self.settle(core, vcpu, address, store, heap, block, Then::Nothing),
            Verdict::Output(region) => {
                if region.kind() == Some(RegionKind::Output) {
                    self.settle(core, vcpu, address, store, heap, block, Then::Output(region));
                }
                return self.output_store(core, vcpu, access, stored, &region);
            }
            Verdict::OutputRead(region) => {
                if self.written(core, address, size, &region, word_load) {
                    return;
                }
                core.finding(Kind::Heap(Misuse::Uninit), pc, bytes, None, None)
            }
            Verdict::Wrong(kind, other, hit) => Finding { hit, ..core.finding(kind, pc, bytes, other, None) },
        };
        core.found(in_copy(found, copy));
    }

    /// A store of `size` bytes at `address` into the op's output `region` (or its DMA
    /// queues): the race shadow records it, a race is a finding, the bytes a copy
    /// carries from a block's never-written bytes join that finding, and a DMA transfer
    /// it completes is checked.
    fn output_store(&self, core: &mut Core, vcpu: VCPUIndex, access: Access, stored: Stored<'_>, region: &Region) {
        let Access { pc, address, size, copy, .. } = access;
        let bytes = (address, address.wrapping_add(size));
        if let Some((other, other_pc)) = self.race(core, vcpu, pc, address, size, region) {
            let found = core.finding(Kind::Race, pc, bytes, Some(other), Some(other_pc));
            core.found(in_copy(found, copy));
            return;
        }
        if let Some(at) = core.carrying.filter(|_| region.kind() == Some(RegionKind::Output)) {
            core.kept[at].reach(bytes);
        }
        self.queued(core, vcpu, access, stored, region);
    }

    /// An allowed access at `address` (`heap`: in the core's heap memory; `block`: the
    /// live block the heap checks found it in, with its end and whether its "written"
    /// map is kept): keeps the [`Quiet`] stretch around it, where every access of its
    /// kind is decided alike, for the accesses that follow.
    #[allow(clippy::too_many_arguments)] // the access and what its checks found
    fn settle(
        &self,
        core: &mut Core,
        vcpu: VCPUIndex,
        address: u32,
        store: bool,
        heap: bool,
        block: Option<(u32, u32, Option<Written>)>,
        then: Then,
    ) {
        // Between two neighbouring edges of the regions and of the image's parts, the
        // same regions hold every byte and `classify` decides alike.
        let (mut lo, mut hi) = (0, u32::MAX);
        let mut cut = |edge: u32| {
            if edge <= address {
                lo = lo.max(edge);
            } else {
                hi = hi.min(edge);
            }
        };
        for region in core.table.as_ref().map_or(&[][..], RegionTable::regions) {
            cut(region.start);
            cut(region.start.saturating_add(region.len));
        }
        if let Some(image) = self.images.get(vcpu as usize) {
            cut(image.window.0);
            cut(image.writable);
            cut(image.window.1);
        }
        let then = match (block, then) {
            (None, then) => then,
            (Some((start, end, written)), Then::Nothing) => {
                (lo, hi) = (lo.max(start), hi.min(end));
                written.map_or(Then::Nothing, |written| Then::Block { start, written })
            }
            // An output in the heaps' memory: each store takes the full checks.
            (Some(_), _) => return,
        };
        core.quiet[usize::from(store)] = Quiet { lo, hi, heap, then };
    }

    /// Whether every byte of a load of `size` bytes at `address` in `output` (for a
    /// copy's word load, any: module docs) was written in this op, by any core or a DMA
    /// transfer one queued: the race shadow holds each byte's last writer and op. Bytes
    /// the shadow does not follow (past [`RACE_LIMIT`]) count as written: the check
    /// says nothing it does not know.
    fn written(&self, core: &Core, address: u32, size: u32, output: &Region, any: bool) -> bool {
        let shadow = &core.shadow;
        let op = u64::from(core.ops);
        let written = |byte: u32| {
            byte.checked_sub(shadow.start).filter(|&at| at < shadow.len).is_none_or(|at| shadow.last(at, op).is_some())
        };
        let mut bytes = address..address.saturating_add(size).min(output.start.saturating_add(output.len));
        if any { bytes.any(written) } else { bytes.all(written) }
    }

    /// A store at `pc` into the core's heap journal, `offset` bytes into it (any
    /// other store when `offset` is past it): the heap checks follow the allocators.
    /// Not inlined, as [`State::checked`].
    #[inline(never)]
    #[allow(clippy::too_many_arguments)] // the store, as `access` has it
    fn journal(&self, core: &mut Core, pc: u32, stored: Stored<'_>, address: u32, size: u32, offset: u32) {
        if offset >= JOURNAL_BYTES || !offset.is_multiple_of(4) {
            return;
        }
        // The blocks may change: every stretch found quiet is checked again.
        core.quiet = Default::default();
        let Some(value) = stored.word(address, size) else { return };
        let site = core.site(pc);
        let op = core.running.then_some(core.ops);
        if let Some(found) = core.heap.journal(offset / 4, value, site, op)
            && core.running
        {
            let found = core.heap_finding(found, pc);
            core.found(found);
        }
    }

    /// A store the kernel made into its own DMA queues (`region`): a transfer it
    /// completes is checked as the engine's accesses will be.
    fn queued(&self, core: &mut Core, vcpu: VCPUIndex, access: Access, stored: Stored<'_>, region: &Region) {
        let Access { pc, address, size, .. } = access;
        if region.kind() != Some(RegionKind::DmaQueues) {
            return;
        }
        let Some(value) = stored.word(address, size) else { return };
        let Some(transfer) = core.descriptors.store(address - region.start, value) else { return };
        let (lo, hi) = (transfer.address, transfer.address.saturating_add(transfer.len));
        let store = transfer.side == Side::Write;
        let source = if store { core.last_read.take() } else { None };
        if !store {
            core.last_read = Some((lo, hi));
        }
        if core.heap.watching()
            && in_heap(core, lo)
            && let Some(found) = core.heap.transfer(lo, hi, store)
        {
            let found = core.heap_finding(found, pc);
            core.found(Finding { dma: true, ..found });
            return;
        }
        let mut at = lo;
        while at < hi {
            let (verdict, end) = self.classify(core, vcpu, at, store);
            let end = end.clamp(at + 1, hi);
            let found = match verdict {
                Verdict::Allowed => None,
                Verdict::Output(output) => {
                    let raced = self.race(core, vcpu, pc, at, end - at, &output);
                    let raced = raced
                        .map(|(other, other_pc)| core.finding(Kind::Race, pc, (at, end), Some(other), Some(other_pc)));
                    raced.or_else(|| self.carried(core, pc, source, (lo, hi), &output))
                }
                // A transfer out of the output: its source bytes are not followed.
                Verdict::OutputRead(_) => None,
                // The rest of the transfer: one finding for it.
                Verdict::Wrong(kind, other, hit) => {
                    Some(Finding { hit, ..core.finding(kind, pc, (at, hi), other, None) })
                }
            };
            if let Some(found) = found {
                core.found(Finding { dma: true, ..found });
                return;
            }
            at = end;
        }
    }

    /// A transfer into `output` writing `to` (device addresses) from `source`: an
    /// `uninit` warning if it moves bytes of a heap block never written, naming the
    /// block's bytes and the output bytes they reached.
    fn carried(
        &self,
        core: &Core,
        pc: u32,
        source: Option<(u32, u32)>,
        to: (u32, u32),
        output: &Region,
    ) -> Option<Finding> {
        let (from, _) = source.filter(|(from, _)| core.heap.watching() && in_heap(core, *from))?;
        let (lo, hi, block) = core.heap.unwritten(from, from.saturating_add(to.1 - to.0))?;
        let reached = (to.0 + (lo - from), (to.0 + (hi - from)).min(output.start.saturating_add(output.len)));
        let finding = core.finding(Kind::Heap(Misuse::Uninit), pc, (lo, hi), None, None);
        Some(Finding { block: Some(block), reached: Some(reached), ..finding })
    }

    /// What an access to `address` by `vcpu`'s kernel is, and where the place that
    /// decided it ends (the region's or image's end; for no place, the address space's).
    fn classify(&self, core: &Core, vcpu: VCPUIndex, address: u32, store: bool) -> (Verdict, u32) {
        if let Some(region) = core.table.as_ref().and_then(|t| t.regions().iter().find(|r| r.contains(address))) {
            let end = region.start.saturating_add(region.len);
            return match region.kind() {
                Some(RegionKind::Input) if store => (Verdict::Wrong(Kind::InputStore, None, None), end),
                Some(RegionKind::Output | RegionKind::DmaQueues) if store => (Verdict::Output(*region), end),
                Some(RegionKind::Output) => (Verdict::OutputRead(*region), end),
                _ => (Verdict::Allowed, end),
            };
        }
        if let Some(image) = self.images.get(vcpu as usize)
            && (image.window.0..image.window.1).contains(&address)
        {
            // Its own image: read anywhere, written past its code and constants.
            return if !store || address >= image.writable {
                (Verdict::Allowed, image.window.1)
            } else {
                (Verdict::Wrong(Kind::Store, Some(vcpu), None), image.writable)
            };
        }
        let owner = self.images.iter().position(|image| (image.window.0..image.window.1).contains(&address));
        if owner.is_none()
            && let Some(hit) = self.hit(vcpu, address)
        {
            let kind = match (store, hit.core == vcpu) {
                (true, false) => Kind::CrossCore,
                (true, true) => Kind::Store,
                (false, _) => Kind::Load,
            };
            return (Verdict::Wrong(kind, None, Some(hit)), hit.region.start.saturating_add(hit.region.len));
        }
        let end = owner.map_or(u32::MAX, |owner| self.images[owner].window.1);
        let verdict = match (owner, store) {
            (Some(owner), true) => Verdict::Wrong(Kind::CrossCore, Some(owner as u32), None),
            (owner, false) => Verdict::Wrong(Kind::Load, owner.map(|o| o as u32), None),
            (None, true) => Verdict::Wrong(Kind::Store, None, None),
        };
        (verdict, end)
    }

    /// The other core's stack or scratch, or the loader image (any core's), holding
    /// `address`, which is in none of `vcpu`'s own regions. A core whose table was not
    /// read yet (its first op has not begun) is read now.
    fn hit(&self, vcpu: VCPUIndex, address: u32) -> Option<Hit> {
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        for (core, slot) in known.iter_mut().enumerate() {
            if core == vcpu as usize {
                continue;
            }
            if slot.is_none()
                && let Some(table) = self.tables.get(core).copied().flatten()
            {
                let mut bytes = vec![0u8; size_of::<RegionTable>()];
                *slot =
                    guest_memory::read(u64::from(table), &mut bytes).then(|| RegionTable::from_bytes(&bytes)).flatten();
            }
            let theirs = slot.iter().flat_map(|table| table.regions()).find(|region| {
                matches!(
                    region.kind(),
                    Some(RegionKind::Stack | RegionKind::DataScratch | RegionKind::HbmScratch | RegionKind::DmaQueues)
                ) && region.contains(address)
            });
            if let Some(region) = theirs {
                return Some(Hit { core: core as u32, region: *region });
            }
        }
        let (core, (start, end)) = self.loaders.iter().enumerate().find_map(|(core, window)| {
            window.filter(|(start, end)| (*start..*end).contains(&address)).map(|w| (core, w))
        })?;
        Some(Hit { core: core as u32, region: Region::new(RegionKind::LoaderImage, 0, start, end - start) })
    }

    /// Records `vcpu`'s store of `size` bytes at `address` in `output`; the other core
    /// and its PC if another core stored to one of these bytes in this op (none for a
    /// store into the DMA queues, which are the core's own).
    fn race(
        &self,
        core: &Core,
        vcpu: VCPUIndex,
        pc: u32,
        address: u32,
        size: u32,
        output: &Region,
    ) -> Option<(u32, u32)> {
        if output.kind() != Some(RegionKind::Output) {
            return None;
        }
        let shadow = &core.shadow;
        let op = u64::from(core.ops);
        let mine = op << 40 | (u64::from(vcpu) + 1) << 32 | u64::from(pc);
        let from = address.checked_sub(shadow.start)?;
        let to = address.saturating_add(size).min(output.start.saturating_add(output.len)).saturating_sub(shadow.start);
        shadow.store(from, to, mine, op, vcpu)
    }
}

/// `finding` made by the runtime's `memcpy` or `memmove` (`copy`): folded by the copy's
/// call site, as each of its loads and stores is another PC.
fn in_copy(finding: Finding, copy: bool) -> Finding {
    match finding.backtrace.first() {
        Some(&caller) if copy && finding.depth > 0 => Finding { site: caller, ..finding },
        _ => finding,
    }
}

/// Writes `finding`'s `FINDING` line for core `core`, in op `op` with the op's `table`.
fn describe(lines: &mut Lines, core: u32, finding: &Finding, op: u32, table: Option<&RegionTable>) {
    let Finding {
        kind,
        pc,
        bytes: (lo, hi),
        accesses,
        other,
        other_pc,
        dma,
        backtrace,
        depth,
        block,
        hit,
        reached,
        ..
    } = *finding;
    let (alloc, free) = match &block {
        Some(named) => (named.alloc.pcs(), named.free.as_ref().map(Site::pcs)),
        None => (&[][..], None),
    };
    let (region, owner) = match (hit, reached) {
        (Some(hit), _) => (Some(hit.region), Some(hit.core)),
        (None, Some((from, to))) => (table.and_then(|table| nearest(table, from, to)), None),
        (None, None) => (table.and_then(|table| nearest(table, lo, hi)), None),
    };
    let finding = wire::Finding {
        op,
        kind: kind.finding(),
        pc,
        address: lo,
        bytes: hi.wrapping_sub(lo),
        accesses,
        other_core: other,
        other_pc,
        dma,
        backtrace: List::Raw(&backtrace[..usize::from(depth)]),
        block: block.map(|Named { start, size, tcm, .. }| wire::Block {
            start,
            size,
            tcm,
            alloc: List::Raw(alloc),
            free: free.map(List::Raw),
        }),
        reached: reached.map(|(from, to)| (from, to.wrapping_sub(from))),
        owner,
        region: region.as_ref().and_then(|region| {
            Some(wire::Place {
                kind: region.kind()?,
                index: region.index,
                start: region.start,
                len: region.len,
                dtype: region.dtype,
                shape: List::Raw(region.shape()),
            })
        }),
    };
    lines.push(Line::Finding { core, finding });
}

/// Whether `address` is in the core's heap memory: its HBM or data scratch.
fn in_heap(core: &Core, address: u32) -> bool {
    core.table.as_ref().is_some_and(|table| {
        table
            .regions()
            .iter()
            .any(|r| matches!(r.kind(), Some(RegionKind::HbmScratch | RegionKind::DataScratch)) && r.contains(address))
    })
}

/// One load or store of library code.
#[derive(Clone, Copy, Debug)]
struct Access {
    /// The instruction's.
    pc: u32,
    address: u32,
    /// Bytes.
    size: u32,
    store: bool,
    /// `pc` is in the runtime's `memcpy` or `memmove` (module docs).
    copy: bool,
}

/// What an access is.
enum Verdict {
    Allowed,
    /// A store into the op's output: allowed, unless another core wrote those bytes;
    /// or into its DMA queues: allowed, and a transfer is checked when queued.
    Output(Region),
    /// A load from the op's output: allowed, a warning for bytes not yet written in
    /// this op.
    OutputRead(Region),
    /// Wrong, the core whose image it hit (if any), and which other core's region or
    /// loader image it hit (if any).
    Wrong(Kind, Option<u32>, Option<Hit>),
}

/// The region a finding over `lo..hi` is named by: the one holding it, else the
/// closest tensor (output or input), else none.
fn nearest(table: &RegionTable, lo: u32, hi: u32) -> Option<Region> {
    let regions = table.regions();
    if let Some(holding) = regions.iter().find(|r| r.contains(lo)) {
        return Some(*holding);
    }
    let distance = |r: &Region| {
        let end = r.start.saturating_add(r.len);
        if lo >= end { lo - end } else { r.start.saturating_sub(hi) }
    };
    regions
        .iter()
        .filter(|r| matches!(r.kind(), Some(RegionKind::Output | RegionKind::Input)))
        .min_by_key(|r| distance(r))
        .copied()
}
