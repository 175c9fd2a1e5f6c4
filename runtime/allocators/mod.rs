//! Device memory: first-fit HBM and dataram heaps (64-byte aligned blocks), the per-op
//! TCM scratch pool, and the libc `malloc` family and Rust `#[global_allocator]` on top.
//!
//! Reference: `docs/abi/memory.md` (symbols, statuses, costs, limits).
//!
//! - [`Heap`] is the allocator: first fit (the lowest-address free block that fits),
//!   every block 64-byte aligned, an O(log n) address-ordered index instead of a free
//!   list walk, metadata inside the region. `linked_list_allocator` (the allocator the
//!   design names) walks its free list on every allocation *and* every free: with 1,000
//!   live fragmented blocks under churn a malloc+free pair costs it 10.4x the Xtensa
//!   instructions (`benches/heap.rs`, docs/PERFORMANCE.md), so it is not used.
//! - The core's two heaps play the vendor's `_hbm_heap_mgr` and `_dataram_heap_mgr`.
//!   [`init_heaps`] gives them the regions `entry_func` got from the host's
//!   `get_hbm_scratch` / `get_data_scratch`. Rust code uses [`allocate`], [`free`],
//!   [`reallocate`]; C code `neuron_hbm_malloc` / `neuron_hbm_free`,
//!   `neuron_dataram_malloc` / `neuron_dataram_free`, and the libc family (`malloc`,
//!   `calloc`, `realloc`, `memalign`, `posix_memalign`, `aligned_alloc`, `free`), which
//!   allocates from HBM (the large heap; dataram is small and faster, so it is only
//!   handed out on request) and frees into whichever heap owns the pointer.
//! - [`tcm`]: `tcm_malloc` / `tcm_free` over the op's 16 KiB TCM pool.
//!
//! Every failure is reported (a `Result` in Rust, null plus [`neuron_heap_status`] in C)
//! and leaves the heaps as they were.

pub mod exports;
mod heap;
pub mod journal;
pub mod redzone;
mod sanitize;
pub mod tcm;

pub use exports::{HeapsGivenBack, NeuronAllocator, neuron_heap_status, neuron_heaps_give_back, neuron_heaps_mark};
pub use heap::{GRANULE, GivenBack, Heap, HeapError, MAX_GRANULES, metadata_words};
pub use journal::{Event, HeapJournal};
use journal::{enter, leave, record, taken};
use sanitize::Pool;
#[cfg(feature = "host-asan")]
pub use sanitize::neuron_host_heap_observer;

use crate::global::CoreLocal;
use core::ptr::NonNull;

/// The status [`neuron_heap_status`] reports after a call that succeeded.
pub const HEAP_OK: i32 = 0;

/// One of the core's two heaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapId {
    /// The HBM scratch heap (`_hbm_heap_mgr`): large, slow; backs `malloc`.
    Hbm,
    /// The dataram scratch heap (`_dataram_heap_mgr`): small, fast.
    Dataram,
}

/// A snapshot of one heap's occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapStats {
    /// Bytes the arena spans (metadata excluded).
    pub arena_bytes: usize,
    /// Bytes in free blocks.
    pub free_bytes: usize,
    /// Size of the largest free block.
    pub largest_free: usize,
    /// Number of free blocks (1 when nothing is live: coalescing is complete).
    pub free_blocks: usize,
    /// Number of live blocks.
    pub live_blocks: usize,
}

impl HeapStats {
    fn of(heap: &Heap) -> HeapStats {
        HeapStats {
            arena_bytes: heap.arena_bytes(),
            free_bytes: heap.free_bytes(),
            largest_free: heap.largest_free(),
            free_blocks: heap.free_block_count(),
            live_blocks: heap.live_blocks(),
        }
    }
}

/// The core's allocators and the status of the last call into them.
struct DeviceMemory {
    /// Plays `_hbm_heap_mgr`.
    hbm: Heap,
    /// Plays `_dataram_heap_mgr`.
    dataram: Heap,
    tcm: tcm::TcmPool,
    /// [`HEAP_OK`] or the [`HeapError::code`] of the last call.
    status: i32,
}

impl DeviceMemory {
    /// Keeps `result`'s status for [`neuron_heap_status`] and passes it on.
    fn record<T>(&mut self, result: Result<T, HeapError>) -> Result<T, HeapError> {
        self.status = match &result {
            Ok(_) => HEAP_OK,
            Err(error) => error.code(),
        };
        result
    }

    fn heap(&mut self, id: HeapId) -> &mut Heap {
        match id {
            HeapId::Hbm => &mut self.hbm,
            HeapId::Dataram => &mut self.dataram,
        }
    }

    /// The heap whose arena holds `block`.
    fn owner(&mut self, block: *const u8) -> Result<&mut Heap, HeapError> {
        if self.hbm.owns(block) {
            Ok(&mut self.hbm)
        } else if self.dataram.owns(block) {
            Ok(&mut self.dataram)
        } else {
            Err(HeapError::ForeignPointer)
        }
    }
}

impl DeviceMemory {
    const EMPTY: DeviceMemory =
        DeviceMemory { hbm: Heap::empty(), dataram: Heap::empty(), tcm: tcm::TcmPool::EMPTY, status: HEAP_OK };
}

#[cfg(target_os = "none")]
static MEMORY: CoreLocal<DeviceMemory> = CoreLocal::new(DeviceMemory::EMPTY);

/// Runs `f` on this core's allocators.
#[cfg(target_os = "none")]
fn with_core_memory<R>(f: impl FnOnce(&mut DeviceMemory) -> R) -> R {
    MEMORY.with(f)
}

// On the host, test threads stand in for cores: each gets its own allocators, so tests
// of every module can allocate in parallel without sharing (or racing on) one state.
#[cfg(not(target_os = "none"))]
std::thread_local! {
    static MEMORY: CoreLocal<DeviceMemory> = const { CoreLocal::new(DeviceMemory::EMPTY) };
}

/// Runs `f` on this core's allocators: on the host, this thread's.
#[cfg(not(target_os = "none"))]
fn with_core_memory<R>(f: impl FnOnce(&mut DeviceMemory) -> R) -> R {
    MEMORY.with(|memory| memory.with(f))
}

/// Runs `f` on the core's allocators, keeping the status of its result.
fn with_memory<T>(f: impl FnOnce(&mut DeviceMemory) -> Result<T, HeapError>) -> Result<T, HeapError> {
    with_core_memory(|memory| {
        let result = f(memory);
        memory.record(result)
    })
}

/// Hands the heaps their regions, as `entry_func` got them from the host's
/// `get_hbm_scratch` / `get_data_scratch`. Called once per `entry_func`; every block of
/// the previous regions is forgotten. A zero size gives an empty heap (every
/// allocation fails with [`HeapError::OutOfMemory`]).
///
/// # Errors
/// The first region's error ([`HeapError::InvalidRegion`], [`HeapError::RegionTooSmall`]);
/// a heap whose region is rejected is left empty, the other one still set up.
///
/// # Safety
/// Each region is memory the runtime alone may use until the next `init_heaps`.
pub unsafe fn init_heaps(
    hbm_base: *mut u8,
    hbm_size: usize,
    dataram_base: *mut u8,
    dataram_size: usize,
) -> Result<(), HeapError> {
    enter();
    let result = with_memory(|memory| {
        // Both are set up, whatever the first one's result.
        // SAFETY: the caller hands over both regions.
        let hbm = unsafe { memory.hbm.build_in_place(Heap::place_in_region(hbm_base, hbm_size)) };
        // SAFETY: as above.
        let dataram = unsafe { memory.dataram.build_in_place(Heap::place_in_region(dataram_base, dataram_size)) };
        for heap in [&memory.hbm, &memory.dataram] {
            sanitize::arena(heap.arena_start(), heap.arena_bytes());
        }
        hbm.and(dataram)
    });
    record(Event::HeapsReset, hbm_base.addr(), hbm_size, 0, result);
    result
}

/// Allocates `size` bytes aligned to `align` (at least 64) from heap `id`, first fit.
///
/// # Errors
/// [`HeapError::OutOfMemory`], [`HeapError::SizeOverflow`], [`HeapError::InvalidAlignment`].
pub fn allocate(id: HeapId, size: usize, align: usize) -> Result<NonNull<u8>, HeapError> {
    allocate_as(Event::Alloc, id, size, align)
}

/// [`allocate`] for the runtime's own use, journaled as such ([`Event::RuntimeAlloc`]:
/// a block it frees before the op ends, which a checker leaves alone).
///
/// # Errors
/// As [`allocate`].
pub fn allocate_for_runtime(id: HeapId, size: usize, align: usize) -> Result<NonNull<u8>, HeapError> {
    allocate_as(Event::RuntimeAlloc, id, size, align)
}

fn allocate_as(event: Event, id: HeapId, size: usize, align: usize) -> Result<NonNull<u8>, HeapError> {
    enter();
    let block = with_memory(|memory| redzone::allocate(size, |ask| memory.heap(id).allocate(ask, align)).0);
    taken(event, &block, size, 0);
    sanitize::taken(block, size, Pool::Heap)
}

/// Allocates `count * size` zeroed bytes from heap `id`, 64-byte aligned (`calloc`).
///
/// # Errors
/// [`HeapError::SizeOverflow`] when `count * size` overflows, else as [`allocate`].
pub fn allocate_zeroed(id: HeapId, count: usize, size: usize) -> Result<NonNull<u8>, HeapError> {
    enter();
    let block = with_memory(|memory| {
        let heap = memory.heap(id);
        match count.checked_mul(size) {
            // One element of `count * size` bytes and the red zone.
            Some(bytes) => redzone::allocate(bytes, |ask| heap.allocate_zeroed(1, ask)).0,
            // The heap reports the overflow.
            None => heap.allocate_zeroed(count, size),
        }
    });
    taken(Event::AllocZeroed, &block, count.wrapping_mul(size), 0);
    sanitize::taken(block, count.wrapping_mul(size), Pool::Heap)
}

/// Frees `block` into whichever heap owns it; null is a no-op.
///
/// # Errors
/// [`HeapError::ForeignPointer`] when no heap owns it, [`HeapError::DoubleFree`],
/// [`HeapError::NotBlockStart`]; nothing changes.
pub fn free(block: *mut u8) -> Result<(), HeapError> {
    enter();
    let freed = with_memory(|memory| {
        if block.is_null() {
            return Ok(());
        }
        memory.owner(block)?.free(block).map(|bytes| sanitize::given_back(block, bytes))
    });
    record(Event::Free, block.addr(), 0, 0, freed);
    freed
}

/// Frees `block` into heap `id` only (the `neuron_*_free` pairs); null is a no-op.
///
/// # Errors
/// As [`free`]; a block of the other heap is [`HeapError::ForeignPointer`].
pub fn free_in(id: HeapId, block: *mut u8) -> Result<(), HeapError> {
    enter();
    let freed = with_memory(|memory| {
        if block.is_null() {
            return Ok(());
        }
        memory.heap(id).free(block).map(|bytes| sanitize::given_back(block, bytes))
    });
    record(Event::Free, block.addr(), 0, 0, freed);
    freed
}

/// Resizes `block` within the heap that owns it (see [`Heap::reallocate`]).
///
/// # Errors
/// As [`free`] for `block`, as [`allocate`] for the new size; `block` is untouched.
pub fn reallocate(block: *mut u8, size: usize, align: usize) -> Result<NonNull<u8>, HeapError> {
    enter();
    let moved = with_memory(|memory| {
        let heap = memory.owner(block)?;
        let old_bytes = sanitize::block_bytes(heap, block);
        let moved = redzone::allocate(size, |ask| heap.reallocate(block, ask, align)).0?;
        // Under ASan the old block is poisoned, then the new one unpoisoned (in place,
        // the same bytes: what remains poisoned is past the new size).
        sanitize::given_back(block, old_bytes);
        Ok(moved)
    });
    taken(Event::Realloc, &moved, size, block.addr());
    sanitize::taken(moved, size, Pool::Heap)
}

/// Usable size of the live block at `block`, in whichever heap owns it.
///
/// # Errors
/// As [`free`].
pub fn block_size(block: *mut u8) -> Result<usize, HeapError> {
    enter();
    let size = with_memory(|memory| memory.owner(block)?.block_size(block));
    leave();
    size
}

/// Marks both heaps before a kernel runs ([`Heap::mark`]): what is live now is the
/// library's to keep; what is taken after it, [`give_back_since_mark`] can free.
pub fn mark_heaps() {
    enter();
    with_core_memory(|memory| {
        memory.hbm.mark();
        memory.dataram.mark();
    });
    leave();
}

/// Frees every block of both heaps taken since [`mark_heaps`] ([`Heap::give_back_since_mark`]):
/// after a kernel stopped without returning (a panic, an exception, its instruction
/// budget), so the next op finds the heaps as the stopped one found them. Per heap,
/// HBM first.
pub fn give_back_since_mark() -> [GivenBack; 2] {
    enter();
    let given = with_core_memory(|memory| [memory.hbm.give_back_since_mark(), memory.dataram.give_back_since_mark()]);
    record(Event::GiveBack, 0, 0, 0, Ok(()));
    given
}

/// Occupancy of heap `id` (for tests and diagnostics; O(arena / 2 KiB)).
pub fn heap_stats(id: HeapId) -> HeapStats {
    enter();
    let stats = with_core_memory(|memory| HeapStats::of(memory.heap(id)));
    leave();
    stats
}

#[cfg(test)]
mod tests;
