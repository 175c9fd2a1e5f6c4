//! What the heaps tell AddressSanitizer in the host tier's sanitizer build (feature
//! `host-asan`, which only qemu/hosttier's `--sanitize address` build turns on).
//!
//! The heaps are the runtime's own allocator over the simulated device memory, which
//! ASan knows nothing of: so the arenas are poisoned when they are set up, every block
//! handed out is unpoisoned (its requested bytes only) and poisoned again when it is
//! freed, through ASan's public `__asan_poison_memory_region` /
//! `__asan_unpoison_memory_region`. Heap blocks tile the arena with no gap, so each is
//! followed by a poisoned red zone of one granule (`redzone.rs`): an overrun of a block
//! lands there, not in its neighbour. The host tier's loader watches the blocks
//! (`neuron_host_heap_observer`) to say which one a bad address is in or near, and
//! where it was allocated and freed.
//!
//! Without the feature every function here is an inlined no-op: the device build and
//! the plain host tier are unchanged.

use super::HeapError;
use core::ptr::NonNull;

/// Which allocator handed a block out, for the observer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(super) enum Pool {
    /// The HBM or dataram heap (the observer tells them apart by address).
    Heap = 0,
    /// The op's TCM pool.
    Tcm = 1,
}

/// `block`, just allocated with `size` usable bytes from `pool`: unpoisoned and
/// observed. Returns `block` as it came.
#[inline(always)]
pub(super) fn taken(block: Result<NonNull<u8>, HeapError>, size: usize, pool: Pool) -> Result<NonNull<u8>, HeapError> {
    #[cfg(feature = "host-asan")]
    if let Ok(start) = block {
        // SAFETY: the heap just handed out at least `size` bytes at `start`; unpoisoning
        // only marks ASan's shadow of them.
        unsafe { asan::__asan_unpoison_memory_region(start.as_ptr(), size) };
        asan::observe(asan::TAKEN + pool as u32, start.as_ptr(), size);
    }
    #[cfg(not(feature = "host-asan"))]
    let _ = (size, pool);
    block
}

/// `block` (`bytes` long, its redzone included) was just freed: poisoned and observed.
#[inline(always)]
pub(super) fn given_back(block: *mut u8, bytes: usize) {
    #[cfg(feature = "host-asan")]
    {
        // SAFETY: the block's bytes are the heap's again; poisoning only marks ASan's
        // shadow (the heap itself is not instrumented, so it may still write them).
        unsafe { asan::__asan_poison_memory_region(block, bytes) };
        asan::observe(asan::GIVEN_BACK, block, bytes);
    }
    #[cfg(not(feature = "host-asan"))]
    let _ = (block, bytes);
}

/// A new or emptied arena, `bytes` at `start`: all of it poisoned (no block is live).
#[inline(always)]
pub(super) fn arena(start: *mut u8, bytes: usize) {
    #[cfg(feature = "host-asan")]
    if !start.is_null() {
        // SAFETY: as in `given_back`: the arena is the heap's, only its shadow changes.
        unsafe { asan::__asan_poison_memory_region(start, bytes) };
        asan::observe(asan::EMPTIED, start, bytes);
    }
    #[cfg(not(feature = "host-asan"))]
    let _ = (start, bytes);
}

/// The heap's size of a live block (its redzone included), for poisoning it when a
/// `realloc` moves or shrinks it; 0 without ASan (nothing is poisoned).
#[inline(always)]
pub(super) fn block_bytes(heap: &super::Heap, block: *mut u8) -> usize {
    #[cfg(feature = "host-asan")]
    return heap.block_size(block).unwrap_or(0);
    #[cfg(not(feature = "host-asan"))]
    {
        let _ = (heap, block);
        0
    }
}

#[cfg(feature = "host-asan")]
mod asan {
    use core::ffi::c_void;
    use core::sync::atomic::{AtomicUsize, Ordering};

    unsafe extern "C" {
        // ASan's public interface (sanitizer/asan_interface.h), from its runtime, which
        // the host tier preloads into the loader's process.
        pub(super) fn __asan_poison_memory_region(addr: *const u8, size: usize);
        pub(super) fn __asan_unpoison_memory_region(addr: *const u8, size: usize);
    }

    /// Observer events: a block taken (`TAKEN + Pool`), given back, an arena emptied.
    pub(super) const TAKEN: u32 = 0;
    pub(super) const GIVEN_BACK: u32 = 2;
    pub(super) const EMPTIED: u32 = 3;

    /// `void observer(uint32_t event, const void *block, size_t bytes)`.
    type Observer = unsafe extern "C" fn(u32, *const c_void, usize);

    /// The loader's observer, or 0. One per library copy, so per core.
    static OBSERVER: AtomicUsize = AtomicUsize::new(0);

    pub(super) fn observe(event: u32, block: *const u8, bytes: usize) {
        let observer = OBSERVER.load(Ordering::Acquire);
        if observer != 0 {
            // SAFETY: only `neuron_host_heap_observer` stores here, an `Observer`.
            let observer = unsafe { core::mem::transmute::<usize, Observer>(observer) };
            // SAFETY: the loader's function of that signature; it only records.
            unsafe { observer(event, block.cast(), bytes) };
        }
    }

    /// C ABI `void neuron_host_heap_observer(observer)`, the host tier loader's (only
    /// in the `host-asan` build): `observer` is told of every block taken (event 0 from
    /// a heap, 1 from the TCM pool: its start and usable bytes), given back (event 2:
    /// its start and bytes) and every arena emptied (event 3), so a sanitizer report
    /// can name the block a bad address is in or near.
    #[unsafe(no_mangle)]
    pub extern "C" fn neuron_host_heap_observer(observer: Option<Observer>) {
        OBSERVER.store(observer.map_or(0, |f| f as usize), Ordering::Release);
    }
}

#[cfg(feature = "host-asan")]
pub use asan::neuron_host_heap_observer;
