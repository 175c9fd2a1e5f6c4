//! The heap checks: every block a core's kernel takes from the runtime's heaps,
//! followed from its allocation to its free, and each of its accesses into heap memory
//! checked against the blocks live at that moment. Part of the memory checks
//! (`checks.rs` owns the callbacks and the findings; this file owns the blocks).
//!
//! # Where the blocks come from
//!
//! The runtime's allocators record each call in the *heap journal*, a `#[repr(C)]`
//! static of five words in the core's library image (`neuron_heap_journal`,
//! `runtime/allocators/journal.rs`, docs/abi/memory.md): `block`, `size`, `old`,
//! `status`, then `event`, stored last. Before a call touches heap memory it stores
//! `event = BUSY`; when it is done, the other four words, then the event. The host
//! names each core's journal (`heap-journal=CORE:ADDR`); the memory callback that
//! checks every store sees these stores too, and keeps their values
//! ([`Heaps::journal`]): no register and no memory read is needed (QEMU 10.0.2's
//! Xtensa target gives plugins no registers). So:
//! - between `BUSY` and the event, the core's accesses are the allocator's own (its
//!   metadata, a `calloc`'s zeroing, a `realloc`'s copy): not checked, however the
//!   allocator was inlined;
//! - each event updates the block table: a block taken, freed, resized; a free the
//!   runtime refused (`status` 4, 5, 6) is a `double-free` or an `invalid-free`; an
//!   emptied TCM pool, new heaps, a stopped op's blocks given back (`give back`).
//!
//! # What is checked
//!
//! An access of the kernel (outside the allocator) into the core's heap memory (its
//! HBM and data scratch regions, from the loader's region table) is:
//! - inside a live block: allowed; a load of bytes of a `malloc` block never written
//!   since it was allocated is an `uninit-read` warning (`calloc` blocks are written; TCM
//!   blocks and the runtime's own, such as an HBM stack, are not followed);
//! - inside a freed block no later block covers: `use-after-free`;
//! - anywhere else (past a block's end, between blocks, the heap's metadata):
//!   `heap-outside`, named by the nearest block below it.
//!
//! At an op's end every block it took (not TCM: the pool is emptied at each op) and
//! still holds is a `leak` warning. Blocks taken by an earlier op (a Rust static
//! allocated once) stay live for later ops.
//!
//! # Cost and limits
//!
//! - Memory: per block, 16 bytes and two sites of up to 17 PCs (150 bytes); per
//!   followed `malloc` block one bit per byte (1 MiB for a full 8 MiB HBM heap).
//!   Freed blocks are kept until a new block overlaps them or the heaps are reset.
//! - Time: a `BTreeMap` lookup per access into heap memory outside the block the core's
//!   previous access of its kind found live (`checks.rs`, `Quiet`); inside it, none (a
//!   `malloc` block's "written" map is shared with it).
//! - An overrun into the *next live* block is seen only through its red zone: in a
//!   checked session the runtime follows each block with one (`runtime/allocators/
//!   redzone.rs`), where no block is, so an access there is past the block's end. A
//!   block the runtime gave no red zone (no room for it) is packed against the next.
//! - A DMA transfer is checked over its whole range, which must lie in one live block;
//!   a transfer into a block marks its bytes written.

use crate::calls::DEPTH;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// `HeapJournal::event` while an allocator call runs.
const BUSY: u32 = 0xFFFF_FFFF;
/// The journal's words (`block`, `size`, `old`, `status`, `event`), by offset / 4.
pub(crate) const WORDS: u32 = 5;
/// The word stored last.
const EVENT: usize = 4;
/// `HeapError::code`s of a refused free.
const DOUBLE_FREE: u32 = 4;
const NOT_BLOCK_START: u32 = 5;
const FOREIGN_POINTER: u32 = 6;
/// The largest block whose bytes' "written" map is kept.
const WRITTEN_LIMIT: u32 = 16 << 20;

/// The journal's events (`runtime/allocators/journal.rs`, `Event`).
mod event {
    pub(super) const ALLOC: u32 = 1;
    pub(super) const ALLOC_ZEROED: u32 = 2;
    pub(super) const FREE: u32 = 3;
    pub(super) const REALLOC: u32 = 4;
    pub(super) const TCM_ALLOC: u32 = 5;
    pub(super) const TCM_FREE: u32 = 6;
    pub(super) const HEAPS_RESET: u32 = 7;
    pub(super) const TCM_RESET: u32 = 8;
    pub(super) const GIVE_BACK: u32 = 9;
    pub(super) const RUNTIME_ALLOC: u32 = 10;
}

/// Where something happened: a PC, then the call sites under it, innermost first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Site {
    pcs: [u32; DEPTH + 1],
    len: u8,
}

impl Site {
    /// `pc` under the call sites `backtrace` (innermost first).
    pub(crate) fn new(pc: u32, backtrace: &[u32]) -> Site {
        let mut site = Site::default();
        for (slot, pc) in site.pcs.iter_mut().zip(std::iter::once(&pc).chain(backtrace)) {
            *slot = *pc;
            site.len += 1;
        }
        site
    }

    /// The PC, then the call sites.
    pub(crate) fn pcs(&self) -> &[u32] {
        &self.pcs[..usize::from(self.len)]
    }
}

/// What a heap finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Misuse {
    UseAfterFree,
    Outside,
    DoubleFree,
    InvalidFree,
    Leak,
    Uninit,
}

/// The block a finding is named by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Named {
    pub(crate) start: u32,
    pub(crate) size: u32,
    /// A TCM pool block (`tcm_malloc`, a stream buffer), not a heap block.
    pub(crate) tcm: bool,
    pub(crate) alloc: Site,
    pub(crate) free: Option<Site>,
}

/// A finding of the heap checks, for `checks.rs` to record.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub(crate) misuse: Misuse,
    /// The bytes concerned (a free's pointer for a free).
    pub(crate) bytes: (u32, u32),
    pub(crate) block: Option<Named>,
    /// Where it happened, when not the access's own PC (a leak: where it was allocated).
    pub(crate) site: Option<Site>,
}

/// One block, live or freed.
#[derive(Clone, Debug)]
struct Block {
    size: u32,
    /// The core's op that took it, if taken while a kernel ran.
    op: Option<u32>,
    /// A TCM pool block.
    tcm: bool,
    /// Taken by the runtime for itself (an HBM stack): never a leak.
    runtime: bool,
    alloc: Site,
    free: Option<Site>,
    /// Which of its bytes were written; not followed: every byte.
    written: Written,
}

impl Block {
    fn named(&self, start: u32) -> Named {
        Named { start, size: self.size, tcm: self.tcm, alloc: self.alloc, free: self.free }
    }

    fn end(&self, start: u32) -> u32 {
        start.saturating_add(self.size.max(1))
    }

    fn is_written(&self, from: u32, to: u32) -> bool {
        self.written.all(from, to.min(self.size))
    }

    /// Whether any byte of `from..to` was written (a copy's word load: `checks.rs`).
    fn any_written(&self, from: u32, to: u32) -> bool {
        self.written.any(from, to.min(self.size))
    }

    fn write(&self, from: u32, to: u32) {
        self.written.set(from, to.min(self.size));
    }
}

/// A block's "written" map: one bit per byte, set once written; empty: not followed
/// (every byte counts as written). Shared with `checks.rs`, which keeps the map of the
/// block its core's accesses are in (`Quiet`) and reaches it with no lookup: only the
/// core's own callbacks touch it, one at a time, so its words need no atomic operation
/// (a relaxed load and store each).
#[derive(Clone, Debug, Default)]
pub(crate) struct Written(Arc<[AtomicU64]>);

impl Written {
    /// The map of a `malloc` block of `size` bytes, none of them written (not followed
    /// past [`WRITTEN_LIMIT`]).
    fn unwritten(size: u32) -> Written {
        let words = if size > WRITTEN_LIMIT { 0 } else { size.div_ceil(64).max(1) };
        Written((0..words).map(|_| AtomicU64::new(0)).collect())
    }

    /// Whether the block's bytes are followed.
    fn followed(&self) -> bool {
        !self.0.is_empty()
    }

    /// Word `at` of the map (past it: 0).
    fn word(&self, at: usize) -> u64 {
        self.0.get(at).map_or(0, |word| word.load(Ordering::Relaxed))
    }

    /// Whether byte `at` was written (followed blocks only).
    fn bit(&self, at: u32) -> bool {
        self.word(at as usize / 64) >> (at % 64) & 1 != 0
    }

    /// Whether every byte of `from..to` was written.
    #[inline]
    pub(crate) fn all(&self, from: u32, to: u32) -> bool {
        if let Some((at, mask)) = one_word(from, to) {
            return !self.followed() || self.word(at) & mask == mask;
        }
        !self.followed() || words(from, to).all(|(at, mask)| self.word(at) & mask == mask)
    }

    /// Whether any byte of `from..to` was written.
    #[inline]
    pub(crate) fn any(&self, from: u32, to: u32) -> bool {
        if let Some((at, mask)) = one_word(from, to) {
            return !self.followed() || self.word(at) & mask != 0;
        }
        !self.followed() || words(from, to).any(|(at, mask)| self.word(at) & mask != 0)
    }

    /// Bytes `from..to` are written.
    #[inline]
    pub(crate) fn set(&self, from: u32, to: u32) {
        let set = |(at, mask): (usize, u64)| {
            if let Some(word) = self.0.get(at) {
                word.store(word.load(Ordering::Relaxed) | mask, Ordering::Relaxed);
            }
        };
        match one_word(from, to) {
            Some(one) => set(one),
            None => words(from, to).for_each(set),
        }
    }
}

/// [`words`] of an access inside one word of the map (most are): that word and mask.
fn one_word(from: u32, to: u32) -> Option<(usize, u64)> {
    let (lo, len) = (from % 64, to.checked_sub(from)?);
    (len > 0 && lo + len <= 64 && len < 64).then(|| (from as usize / 64, ((1u64 << len) - 1) << lo))
}

/// The bits of bytes `from..to` in a map of one bit per byte: each word of the map they
/// touch, with the mask of theirs in it (an access takes one word, a transfer many).
fn words(from: u32, to: u32) -> impl Iterator<Item = (usize, u64)> {
    let word = |at: u32| at as usize / 64;
    (word(from)..word(to.max(from).saturating_add(63))).map(move |at| {
        let first = (at * 64) as u32;
        let lo = from.max(first) - first;
        let hi = to.min(first + 64).max(first + lo) - first;
        let mask = if hi - lo == 64 { u64::MAX } else { ((1u64 << (hi - lo)) - 1) << lo };
        (at, mask)
    })
}

/// One core's heaps as the journal told them.
#[derive(Default)]
pub(crate) struct Heaps {
    /// The journal's words as last stored.
    record: [u32; WORDS as usize],
    /// An allocator call is running: its accesses are its own.
    busy: bool,
    /// The heaps were set up since the plugin started (blocks are known).
    known: bool,
    /// Every block, live or freed, by start.
    blocks: BTreeMap<u32, Block>,
}

impl Heaps {
    /// Whether the core's accesses are to be checked against the blocks.
    pub(crate) fn watching(&self) -> bool {
        self.known && !self.busy
    }

    /// A kernel starts: an allocator call a stopped kernel left open is over.
    pub(crate) fn op_begin(&mut self) {
        self.busy = false;
    }

    /// The store of `value` into word `word` of the journal, at `site`, while op `op`
    /// runs (or none); a finding if the call it ends was a refused free.
    pub(crate) fn journal(&mut self, word: u32, value: u32, site: Site, op: Option<u32>) -> Option<Found> {
        let word = word as usize;
        if word >= WORDS as usize {
            return None;
        }
        self.record[word] = value;
        if word != EVENT {
            return None;
        }
        if value == BUSY {
            self.busy = true;
            return None;
        }
        self.busy = false;
        self.event(value, site, op)
    }

    fn event(&mut self, kind: u32, site: Site, op: Option<u32>) -> Option<Found> {
        let [block, size, old, status, _] = self.record;
        match kind {
            event::ALLOC | event::ALLOC_ZEROED | event::TCM_ALLOC | event::RUNTIME_ALLOC if block != 0 => {
                let written = if kind == event::ALLOC { Written::unwritten(size) } else { Written::default() };
                let (tcm, runtime) = (kind == event::TCM_ALLOC, kind == event::RUNTIME_ALLOC);
                self.take(block, Block { size, op, tcm, runtime, alloc: site, free: None, written });
            }
            event::FREE | event::TCM_FREE if block != 0 => return self.free(block, status, site),
            event::REALLOC if status == 0 && block != 0 => self.resize(old, block, size, site, op),
            event::REALLOC if old != 0 && matches!(status, DOUBLE_FREE | NOT_BLOCK_START | FOREIGN_POINTER) => {
                return self.free(old, status, site);
            }
            event::HEAPS_RESET => {
                self.blocks.retain(|_, b| b.tcm);
                self.known = true;
            }
            event::TCM_RESET => self.blocks.retain(|_, b| !b.tcm),
            event::GIVE_BACK => {
                // The blocks the stopped op took: the loader freed them all at once.
                if let Some(op) = op.or(self.last_op()) {
                    self.blocks.retain(|_, b| b.tcm || b.free.is_some() || b.op != Some(op));
                }
            }
            _ => {}
        }
        None
    }

    /// The latest op a live block was taken in (a give back comes after its op ended).
    fn last_op(&self) -> Option<u32> {
        self.blocks.values().filter(|b| b.free.is_none()).filter_map(|b| b.op).max()
    }

    /// A block taken at `start`: whatever it overlaps is gone (freed and reused).
    fn take(&mut self, start: u32, block: Block) {
        let end = block.end(start);
        let overlapped: Vec<u32> = self
            .blocks
            .range(..end)
            .rev()
            .take_while(|(s, b)| b.end(**s) > start || **s >= start)
            .map(|(s, _)| *s)
            .collect();
        for old in overlapped {
            self.blocks.remove(&old);
        }
        self.blocks.insert(start, block);
    }

    /// A free of `pointer` at `site`, with the runtime's `status`.
    fn free(&mut self, pointer: u32, status: u32, site: Site) -> Option<Found> {
        let found = |misuse, block: Option<Named>| Found { misuse, bytes: (pointer, pointer), block, site: None };
        match self.blocks.get_mut(&pointer) {
            Some(block) if block.free.is_some() => Some(found(Misuse::DoubleFree, Some(block.named(pointer)))),
            Some(block) if status == 0 => {
                block.free = Some(site);
                block.written = Written::default();
                None
            }
            _ if status == 0 => None,
            _ => {
                let inside = self.block_at(pointer).map(|(start, b)| b.named(start));
                Some(found(Misuse::InvalidFree, inside))
            }
        }
    }

    /// `old` resized into `new` of `size` bytes (in place when they are equal).
    fn resize(&mut self, old: u32, new: u32, size: u32, site: Site, op: Option<u32>) {
        let Some(previous) = self.blocks.get(&old).cloned() else {
            // A block the table never saw (taken before the heaps were known).
            let block =
                Block { size, op, tcm: false, runtime: false, alloc: site, free: None, written: Written::default() };
            self.take(new, block);
            return;
        };
        let written = if previous.written.followed() { Written::unwritten(size) } else { Written::default() };
        if written.followed() {
            (0..previous.size.min(size)).filter(|&at| previous.written.bit(at)).for_each(|at| written.set(at, at + 1));
        }
        if new != old
            && let Some(block) = self.blocks.get_mut(&old)
        {
            block.free = Some(site);
            block.written = Written::default();
        }
        let alloc = if new == old { previous.alloc } else { site };
        let op = if new == old { previous.op } else { op };
        self.take(new, Block { size, op, alloc, free: None, written, ..previous });
    }

    /// The block whose start is at or below `address`, if it spans `address`.
    fn block_at(&self, address: u32) -> Option<(u32, &Block)> {
        let (&start, block) = self.blocks.range(..=address).next_back()?;
        (address < block.end(start)).then_some((start, block))
    }

    /// An access of `size` bytes at `address`, inside the core's heap memory.
    pub(crate) fn access(&mut self, address: u32, size: u32, store: bool) -> Option<Found> {
        let end = address.wrapping_add(size);
        let found = |misuse, block: Option<Named>| Found { misuse, bytes: (address, end), block, site: None };
        let Some((start, block)) = self.block_at(address) else {
            let below = self.blocks.range(..=address).next_back().map(|(&s, b)| b.named(s));
            return Some(found(Misuse::Outside, below));
        };
        if block.free.is_some() {
            return Some(found(Misuse::UseAfterFree, Some(block.named(start))));
        }
        if end > block.end(start) {
            return Some(found(Misuse::Outside, Some(block.named(start))));
        }
        if store {
            block.write(address - start, end - start);
            return None;
        }
        (!block.is_written(address - start, end - start)).then(|| found(Misuse::Uninit, Some(block.named(start))))
    }

    /// A word load by the runtime's `memcpy` or `memmove` at `address`, inside the
    /// core's heap memory (`checks.rs`, module docs): of its bytes only those inside the
    /// block it starts in are checked, and they read unwritten memory only when none
    /// of them was written.
    pub(crate) fn word_load(&mut self, address: u32, size: u32) -> Option<Found> {
        let Some((start, block)) = self.block_at(address).filter(|(_, block)| block.free.is_none()) else {
            return self.access(address, size, false);
        };
        let end = address.wrapping_add(size).min(block.end(start));
        (!block.any_written(address - start, end - start)).then(|| Found {
            misuse: Misuse::Uninit,
            bytes: (address, end),
            block: Some(block.named(start)),
            site: None,
        })
    }

    /// The live block holding `address`: its start, its end, and its "written" map if
    /// it is followed (a `malloc` block). An access wholly inside it is allowed;
    /// `checks.rs` keeps it for the accesses that follow until the next journal event
    /// (its map then tells a load of never-written bytes, which goes to
    /// [`Heaps::access`] or [`Heaps::word_load`] to be named).
    pub(crate) fn live(&self, address: u32) -> Option<(u32, u32, Option<Written>)> {
        let (start, block) = self.block_at(address).filter(|(_, block)| block.free.is_none())?;
        Some((start, block.end(start), Some(block.written.clone()).filter(Written::followed)))
    }

    /// A DMA transfer of `lo..hi`, checked over its whole range as one access: it must
    /// lie in one live block (a copy moves one buffer). A store marks the bytes it
    /// writes inside that block written. Unwritten source bytes are no finding here:
    /// the engine moves what it was told to, and the kernel may move a partial buffer;
    /// [`Heaps::unwritten`] says which of them were never written.
    pub(crate) fn transfer(&mut self, lo: u32, hi: u32, store: bool) -> Option<Found> {
        // A store wholly inside its block is marked written by `access`.
        let found = self.access(lo, hi.wrapping_sub(lo).max(1), store)?;
        if store
            && let Some((start, block)) = self.block_at(lo)
            && block.free.is_none()
        {
            block.write(lo - start, hi.min(block.end(start)) - start);
        }
        Some(found).filter(|found| found.misuse != Misuse::Uninit)
    }

    /// The bytes of `lo..hi` inside a followed live block that were never written
    /// (first to last plus one), with the block: a DMA transfer's source that moves
    /// them carries nothing the kernel wrote.
    pub(crate) fn unwritten(&self, lo: u32, hi: u32) -> Option<(u32, u32, Named)> {
        let (start, block) = self.block_at(lo).filter(|(_, block)| block.free.is_none() && block.written.followed())?;
        let end = hi.min(block.end(start));
        let mut never = (lo - start..end - start).filter(|&at| !block.written.bit(at));
        let first = never.next()?;
        let last = never.next_back().unwrap_or(first);
        Some((start + first, start + last + 1, block.named(start)))
    }

    /// The blocks op `op` took and still holds, not TCM: leaks.
    pub(crate) fn leaks(&self, op: u32) -> Vec<Found> {
        self.blocks
            .iter()
            .filter(|(_, b)| b.op == Some(op) && b.free.is_none() && !b.tcm && !b.runtime)
            .map(|(&start, b)| Found {
                misuse: Misuse::Leak,
                bytes: (start, start.saturating_add(b.size)),
                block: Some(b.named(start)),
                site: Some(b.alloc),
            })
            .collect()
    }
}
