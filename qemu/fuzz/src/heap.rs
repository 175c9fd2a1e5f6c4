//! `allocators::Heap` operation sequences against a model: one flag per granule, the
//! live blocks with the byte each was filled with, and first fit searched the slow way.
//!
//! Input: the region (size, misalignment of its start, metadata inside or outside),
//! then a sequence of operations: allocations of any size and alignment, `calloc`s,
//! frees, reallocations, and bad frees (inside a block, of a freed block, outside the
//! arena).
//!
//! Checked after every operation:
//! - each allocation lands where first fit puts it (the lowest free run that fits: the
//!   high end of an indexed free block, the low end of the top block), aligned, with
//!   the usable size the model expects; or fails with the model's error;
//! - `calloc` memory is zero, and no live block's contents change under any operation;
//! - a reallocation grows or shrinks in place when the model says it can, else moves
//!   and keeps the contents;
//! - every bad free is refused with its own error and changes nothing;
//! - free bytes, free blocks, the largest free block and the live blocks match the
//!   model; when everything is freed, the arena is one free block again.

use std::alloc::{Layout, alloc_zeroed, dealloc};

use arbitrary::{Arbitrary, Unstructured};
use neuroncustomop::allocators::{GRANULE, Heap, HeapError, metadata_words};
use neuroncustomop::test_models::heap::Granules;

use crate::ensure_eq;

/// A zeroed, 4096-byte-aligned host buffer, freed on drop.
struct Region {
    ptr: *mut u8,
    layout: Layout,
}

impl Region {
    fn new(size: usize) -> Region {
        let layout = Layout::from_size_align(size.max(1), 4096).expect("a small size");
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "host allocation of {size} bytes failed");
        Region { ptr, layout }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// A size as the fuzzer picks it: mostly small, sometimes anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Size {
    Small(u8),
    Medium(u16),
    Any(usize),
}

impl Size {
    fn bytes(self) -> usize {
        match self {
            Size::Small(n) => usize::from(n),
            Size::Medium(n) => usize::from(n),
            Size::Any(n) => n,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// `allocate(size, align)`: `align` is `1 << log2` when below 64, else raw.
    Allocate {
        size: Size,
        align_log2: u8,
        raw_align: Option<usize>,
    },
    AllocateZeroed {
        count: Size,
        size: Size,
    },
    Free {
        pick: u16,
    },
    Reallocate {
        pick: u16,
        size: Size,
    },
    FreeInterior {
        pick: u16,
        offset: u16,
    },
    FreeStale {
        pick: u16,
    },
    FreeForeign {
        below: bool,
    },
}

#[derive(Arbitrary, Debug)]
struct Case {
    /// Region size in granules, minus one: mod 256 (16 KiB, a two-level tree), or
    /// with the top bit set mod 2048 (128 KiB, four levels; slower to model).
    granules: u16,
    /// Bytes the region starts past a 4096-byte boundary (mod 64).
    skew: u8,
    /// Keep the metadata outside the arena (`Heap::with_metadata`).
    external_metadata: bool,
    ops: Vec<Op>,
}

/// A live block: first granule, granules, alignment asked, fill byte.
#[derive(Debug, Clone, Copy)]
struct Live {
    first: usize,
    count: usize,
    align: usize,
    fill: u8,
}

/// The reference (`neuroncustomop::test_models::heap`), and the live blocks.
struct Model {
    granules: Granules,
    live: Vec<Live>,
}

/// The heap's observable state, which a refused operation must leave as it was.
fn summary(heap: &Heap) -> (usize, usize, usize, usize) {
    (heap.free_bytes(), heap.free_block_count(), heap.largest_free(), heap.live_blocks())
}

fn granule(heap: &Heap, index: usize) -> *mut u8 {
    heap.arena_start().wrapping_add(index * GRANULE)
}

fn block_bytes<'a>(heap: &Heap, first: usize, count: usize) -> &'a mut [u8] {
    // SAFETY: the model says granules `first..first + count` are one live block, which
    // this harness owns and of which no other slice is live.
    unsafe { core::slice::from_raw_parts_mut(granule(heap, first), count * GRANULE) }
}

fn check_contents(heap: &Heap, block: &Live) {
    // Granule by granule: a slice compare is one memcmp, where a byte loop would pay the
    // fuzzer's per-comparison hook 64 times.
    let filled = [block.fill; GRANULE];
    let bytes = block_bytes(heap, block.first, block.count);
    if let Some(at) = bytes.chunks_exact(GRANULE).position(|granule| granule != filled) {
        panic!("granule {at} of the block at granule {} changed (fill {:#x})", block.first, block.fill);
    }
}

/// The harness's state around one heap.
struct Run {
    heap: Heap,
    model: Model,
    base: usize,
    stale: Vec<usize>,
    fill: u8,
}

impl Run {
    fn fill_new(&mut self, first: usize, count: usize, align: usize) -> Live {
        self.fill = self.fill.wrapping_add(1).max(1);
        block_bytes(&self.heap, first, count).fill(self.fill);
        Live { first, count, align, fill: self.fill }
    }

    fn pick(&self, pick: u16) -> Option<usize> {
        (!self.model.live.is_empty()).then(|| usize::from(pick) % self.model.live.len())
    }

    /// An allocation's outcome against the model's placement.
    fn allocated(&mut self, got: Result<core::ptr::NonNull<u8>, HeapError>, size: usize, align: usize, zeroed: bool) {
        let expected = self.model.granules.place(self.base, size, align);
        match got {
            Ok(block) => {
                let first = (block.as_ptr() as usize - self.base) / GRANULE;
                ensure_eq!(Ok(first), expected, "first-fit granule of allocate({size}, {align})");
                assert!((block.as_ptr() as usize).is_multiple_of(align.max(GRANULE)), "misaligned block");
                let count = size.div_ceil(GRANULE).max(1);
                ensure_eq!(self.heap.block_size(block.as_ptr()), Ok(count * GRANULE), "block_size");
                if zeroed {
                    assert!(block_bytes(&self.heap, first, count)[..size].iter().all(|&b| b == 0), "calloc not zeroed");
                }
                self.model.granules.set(first, count, true);
                let live = self.fill_new(first, count, align.max(GRANULE));
                self.model.live.push(live);
            }
            Err(error) => ensure_eq!(Err(error), expected.map(drop), "allocate({size}, {align})"),
        }
    }

    fn step(&mut self, op: &Op) {
        let before = summary(&self.heap);
        match *op {
            Op::Allocate { size, align_log2, raw_align } => {
                let align = raw_align.unwrap_or(1 << (align_log2 % 13));
                let got = self.heap.allocate(size.bytes(), align);
                self.allocated(got, size.bytes(), align, false);
            }
            Op::AllocateZeroed { count, size } => {
                let got = self.heap.allocate_zeroed(count.bytes(), size.bytes());
                match count.bytes().checked_mul(size.bytes()) {
                    Some(bytes) => self.allocated(got, bytes, GRANULE, true),
                    None => ensure_eq!(got, Err(HeapError::SizeOverflow), "calloc overflow"),
                }
            }
            Op::Free { pick } => {
                let Some(index) = self.pick(pick) else { return };
                let block = self.model.live.swap_remove(index);
                check_contents(&self.heap, &block);
                ensure_eq!(self.heap.free(granule(&self.heap, block.first)), Ok(block.count * GRANULE), "free");
                self.model.granules.set(block.first, block.count, false);
                self.stale.push(block.first);
            }
            Op::Reallocate { pick, size } => {
                let Some(index) = self.pick(pick) else { return };
                self.reallocate(index, size.bytes());
            }
            Op::FreeInterior { pick, offset } => {
                let Some(index) = self.pick(pick) else { return };
                let block = self.model.live[index];
                let offset = 1 + usize::from(offset) % (block.count * GRANULE - 1);
                let interior = granule(&self.heap, block.first).wrapping_add(offset);
                ensure_eq!(self.heap.free(interior), Err(HeapError::NotBlockStart), "free inside a block");
                ensure_eq!(self.heap.block_size(interior), Err(HeapError::NotBlockStart), "block_size inside");
            }
            Op::FreeStale { pick } => {
                if self.stale.is_empty() {
                    return;
                }
                let first = self.stale[usize::from(pick) % self.stale.len()];
                let expected = match self.model.live.iter().find(|b| (b.first..b.first + b.count).contains(&first)) {
                    Some(block) if block.first == first => return, // reused: a legal free now
                    Some(_) => HeapError::NotBlockStart,
                    None => HeapError::DoubleFree,
                };
                ensure_eq!(self.heap.free(granule(&self.heap, first)), Err(expected), "free of a freed block");
            }
            Op::FreeForeign { below } => {
                let outside = if below { self.base.wrapping_sub(GRANULE) } else { self.base + self.heap.arena_bytes() };
                ensure_eq!(self.heap.free(outside as *mut u8), Err(HeapError::ForeignPointer), "foreign free");
                assert!(!self.heap.owns(outside as *const u8), "owns a foreign pointer");
            }
        }
        let (free, runs, longest) = self.model.granules.free_summary();
        let expected = (free * GRANULE, runs, longest * GRANULE, self.model.live.len());
        let now = summary(&self.heap);
        ensure_eq!(now, expected, "heap summary after {op:?} (before: {before:?})");
    }

    fn reallocate(&mut self, index: usize, size: usize) {
        let block = self.model.live[index];
        let before = summary(&self.heap);
        let got = self.heap.reallocate(granule(&self.heap, block.first), size, block.align);
        if size > isize::MAX as usize {
            ensure_eq!(got, Err(HeapError::SizeOverflow), "realloc past isize::MAX");
            return;
        }
        let new_count = size.div_ceil(GRANULE).max(1);
        let in_place = self.model.granules.resizes_in_place(block.first, block.count, new_count);
        let expected = if in_place { Ok(block.first) } else { self.model.granules.place(self.base, size, block.align) };
        match got {
            Ok(moved) => {
                let first = (moved.as_ptr() as usize - self.base) / GRANULE;
                ensure_eq!(Ok(first), expected, "realloc's granule");
                check_contents(&self.heap, &Live { first, count: block.count.min(new_count), ..block });
                self.model.granules.set(block.first, block.count, false);
                self.model.granules.set(first, new_count, true);
                if first != block.first {
                    self.stale.push(block.first);
                }
                self.model.live[index] = self.fill_new(first, new_count, block.align);
            }
            Err(error) => {
                ensure_eq!(Err(error), expected.map(drop), "realloc's error");
                ensure_eq!(summary(&self.heap), before, "a refused realloc changed the heap");
                check_contents(&self.heap, &block);
            }
        }
    }
}

/// Regions the heap must refuse without touching them.
fn check_bad_regions() {
    // SAFETY: each call must fail before touching memory: a null region, and one that
    // wraps past the end of the address space.
    unsafe {
        ensure_eq!(Heap::new(core::ptr::null_mut(), 4096).map(drop), Err(HeapError::InvalidRegion), "null region");
        let wraps = core::ptr::without_provenance_mut::<u8>(usize::MAX - 100);
        ensure_eq!(Heap::new(wraps, 200).map(drop), Err(HeapError::InvalidRegion), "wrapping region");
    }
}

/// The whole target.
pub fn check(data: &[u8]) {
    let Ok(case) = Case::arbitrary(&mut Unstructured::new(data)) else { return };
    check_bad_regions();
    let granules = if case.granules & 0x8000 != 0 { case.granules % 2048 } else { case.granules % 256 };
    let size = (usize::from(granules) + 1) * GRANULE;
    let skew = usize::from(case.skew % 64);
    let region = Region::new(size + skew);
    let mut metadata: Vec<u32> = Vec::new();
    // SAFETY: `region` (and `metadata`) outlive the heap, and only the heap and this
    // harness (through blocks it was handed) touch them.
    let heap = unsafe {
        let start = region.ptr.add(skew);
        if case.external_metadata {
            metadata = vec![0; metadata_words(size)];
            Heap::with_metadata(start, size, metadata.as_mut_ptr(), metadata.len())
        } else {
            Heap::new(start, size)
        }
    };
    // The arena the documented layout gives: the region's whole granules, less (when
    // the metadata is inside) the granules `metadata_words` of them take at its start.
    let region_start = region.ptr as usize + skew;
    let whole = (region_start + size - region_start.next_multiple_of(GRANULE)) / GRANULE;
    let metadata_granules =
        if case.external_metadata { 0 } else { (metadata_words(whole * GRANULE) * size_of::<u32>()).div_ceil(GRANULE) };
    let expected_granules = whole.saturating_sub(metadata_granules);
    let heap = match heap {
        Ok(heap) => heap,
        Err(error) => {
            ensure_eq!(error, HeapError::RegionTooSmall, "a region of {size} bytes refused");
            ensure_eq!(expected_granules, 0, "granules left in a region refused as too small");
            return;
        }
    };
    ensure_eq!(heap.arena_bytes(), expected_granules * GRANULE, "arena of a {size}-byte region (skew {skew})");
    let base = heap.arena_start() as usize;
    assert!(base.is_multiple_of(GRANULE), "arena start {base:#x}");
    assert!(base >= region_start && base + heap.arena_bytes() <= region_start + size, "arena outside the region");
    let granules = heap.arena_bytes() / GRANULE;
    ensure_eq!(summary(&heap), (heap.arena_bytes(), 1, heap.arena_bytes(), 0), "a new heap");
    let mut run = Run {
        heap,
        model: Model { granules: Granules::new(granules), live: Vec::new() },
        base,
        stale: Vec::new(),
        fill: 0,
    };
    for op in &case.ops {
        run.step(op);
    }
    for block in std::mem::take(&mut run.model.live) {
        check_contents(&run.heap, &block);
        ensure_eq!(run.heap.free(granule(&run.heap, block.first)), Ok(block.count * GRANULE), "final free");
    }
    ensure_eq!(summary(&run.heap), (run.heap.arena_bytes(), 1, run.heap.arena_bytes(), 0), "the emptied heap");
    drop(metadata);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_random_inputs_pass() {
        crate::smoke::check_inputs(check, 3_000, 512);
    }
}
