//! TCM scratch: `tcm_malloc` / `tcm_free` over the op's TCM pool (16 KiB as op authors
//! are promised; stream accessors take their 4 KiB buffers from it too).
//!
//! The pool is a [`Heap`] whose metadata lives in a `static` here, not in the pool, so
//! all of the pool is handed out: four 4 KiB stream buffers fill 16 KiB exactly. The
//! loader says where the pool is ([`init_tcm`]: `entry_func` puts it at the start of the
//! dataram scratch the host hands out); the pull stream empties it at the start of
//! every op ([`tcm_reset`]), which rebuilds the heap only if a block was taken since the
//! last rebuild: most ops never touch TCM, and a rebuild costs hundreds of instructions.

use super::journal::{Event, enter, leave, record, taken};
use super::redzone;
use super::sanitize::{self, Pool};
use super::{GRANULE, Heap, HeapError, HeapStats, metadata_words, with_core_memory, with_memory};
use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::{self, NonNull};

/// The pool size op authors are promised.
pub const TCM_POOL_SIZE: usize = 16 * 1024;
/// The largest pool [`init_tcm`] accepts: the metadata static is sized for it.
pub const TCM_POOL_MAX: usize = 64 * 1024;

const METADATA_WORDS: usize = metadata_words(TCM_POOL_MAX);

/// The pool's metadata: a fixed static, so the pool itself stays whole.
struct TcmMetadata(UnsafeCell<[u32; METADATA_WORDS]>);

// SAFETY: only the TCM `Heap` inside `super::MEMORY` (a `CoreLocal`) reads or writes
// the buffer, through the raw pointer `metadata()` gives without forming a reference,
// so it is accessed from one context per core, like `MEMORY` itself. (On the host it is
// thread-local and never shared.)
unsafe impl Sync for TcmMetadata {}

#[cfg(target_os = "none")]
static METADATA: TcmMetadata = TcmMetadata(UnsafeCell::new([0; METADATA_WORDS]));

/// This core's pool metadata.
#[cfg(target_os = "none")]
fn metadata() -> *mut u32 {
    METADATA.0.get().cast()
}

// On the host each test thread is a core with its own pool (as `MEMORY` in `super`).
#[cfg(not(target_os = "none"))]
std::thread_local! {
    static METADATA: TcmMetadata = const { TcmMetadata(UnsafeCell::new([0; METADATA_WORDS])) };
}

/// This core's pool metadata: on the host, this thread's.
#[cfg(not(target_os = "none"))]
fn metadata() -> *mut u32 {
    METADATA.with(|metadata| metadata.0.get().cast())
}

/// The pool region and the heap over it.
pub(super) struct TcmPool {
    base: *mut u8,
    size: usize,
    heap: Heap,
    /// Whether the heap is exactly what a successful rebuild makes: built without an
    /// error, and no block taken since.
    fresh: bool,
    /// Blocks given a red zone since the last rebuild (at most
    /// [`TCM_REDZONES`](super::redzone::TCM_REDZONES): the pool's extra room).
    redzones: usize,
}

impl TcmPool {
    /// No pool: every allocation fails.
    pub(super) const EMPTY: TcmPool =
        TcmPool { base: ptr::null_mut(), size: 0, heap: Heap::empty(), fresh: false, redzones: 0 };

    /// Empties the pool: a new heap over the same region.
    fn rebuild(&mut self) -> Result<(), HeapError> {
        enter();
        let placement = Heap::place_with_metadata(self.base, self.size, metadata(), METADATA_WORDS);
        // SAFETY: `init_tcm`'s caller gave the region to the runtime; the metadata static
        // holds `metadata_words(TCM_POOL_MAX)` words, enough as `size <= TCM_POOL_MAX`,
        // and only this heap uses it; any previous heap over it is replaced right here.
        let result = unsafe { self.heap.build_in_place(placement) };
        sanitize::arena(self.heap.arena_start(), self.heap.arena_bytes());
        self.fresh = result.is_ok();
        self.redzones = 0;
        record(Event::TcmReset, self.base.addr(), self.size, 0, result);
        result
    }

    /// Takes a block of `size` bytes from the heap, followed by a red zone if `zoned`
    /// and the pool's room for red zones is not used up (`redzone.rs`: the room makes it
    /// fit, so there is no retry without one). The heap is then no longer fresh (even
    /// if the attempt fails: only a heap nothing touched is known to equal a rebuilt one).
    fn allocate(&mut self, size: usize, zoned: bool) -> Result<NonNull<u8>, HeapError> {
        self.fresh = false;
        let zone = if zoned && self.redzones < redzone::TCM_REDZONES { redzone::bytes() } else { 0 };
        self.redzones += usize::from(zone != 0);
        let block = self.heap.allocate(size.saturating_add(zone), GRANULE)?;
        // The pool's room for red zones that no block has taken yet is no room for
        // blocks: a checked call takes no more of the pool than the same unchecked call
        // could (a 16 KiB + 4 `tcm_malloc` fails in both). 0 unless checked.
        let reserved = redzone::tcm_room().saturating_sub(self.redzones * redzone::bytes());
        if reserved > 0 && self.heap.free_bytes() < reserved {
            // Given back at once: the call fails as it would unchecked.
            let _ = self.heap.free(block.as_ptr());
            return Err(HeapError::OutOfMemory);
        }
        Ok(block)
    }
}

/// Sets where this core's TCM pool is and empties it.
///
/// # Errors
/// [`HeapError::InvalidRegion`] for a null region or one above [`TCM_POOL_MAX`],
/// [`HeapError::RegionTooSmall`] for one below 64 bytes; the pool is then empty.
///
/// # Safety
/// `base..base + size` is memory the runtime alone may use until the next `init_tcm`.
pub unsafe fn init_tcm(base: *mut u8, size: usize) -> Result<(), HeapError> {
    with_memory(|memory| {
        let pool = &mut memory.tcm;
        // A region above the limit leaves no pool: the (empty) heap of no region.
        let fits = size <= TCM_POOL_MAX;
        (pool.base, pool.size) = if fits { (base, size) } else { (ptr::null_mut(), 0) };
        let rebuilt = pool.rebuild();
        if fits { rebuilt } else { Err(HeapError::InvalidRegion) }
    })
}

/// Frees every TCM block: the start of a new op. Called by the pull stream's setup.
/// Costs a flag test when no block was taken since the last reset.
pub fn tcm_reset() {
    // The region was accepted by `init_tcm`, so rebuilding it again cannot fail (and if
    // it was refused, the pool is never fresh: the reset reports the error again).
    let _ = with_memory(|memory| if memory.tcm.fresh { Ok(()) } else { memory.tcm.rebuild() });
}

/// Takes `size` bytes (64-byte aligned) from this op's TCM pool; null when it cannot.
pub fn tcm_alloc(size: usize) -> *mut u8 {
    take(size, false)
}

/// A block of `size` usable bytes, followed by a red zone if `zoned` (`tcm_malloc`'s;
/// not the stream accessors' buffers, four of which fill the pool).
fn take(size: usize, zoned: bool) -> *mut u8 {
    enter();
    let block = with_memory(|memory| memory.tcm.allocate(size, zoned));
    taken(Event::TcmAlloc, &block, size, 0);
    sanitize::taken(block, size, Pool::Tcm).map_or(ptr::null_mut(), |block| block.as_ptr())
}

/// Gives back a block from [`tcm_alloc`]; null is a no-op, anything else that is not a
/// live TCM block is refused (see `neuron_heap_status`).
pub fn tcm_release(ptr: *mut u8) {
    enter();
    let freed = with_memory(|memory| {
        if ptr.is_null() {
            return Ok(());
        }
        memory.tcm.heap.free(ptr).map(|bytes| sanitize::given_back(ptr, bytes))
    });
    record(Event::TcmFree, ptr.addr(), 0, 0, freed);
}

/// Occupancy of the TCM pool (`largest_free` is the most `tcm_alloc` can return now).
pub fn tcm_stats() -> HeapStats {
    enter();
    let stats = with_core_memory(|memory| HeapStats::of(&memory.tcm.heap));
    leave();
    stats
}

/// C ABI `void *tcm_malloc(size_t size)`: [`tcm_alloc`], with a red zone after the
/// block under the host tier's ASan and in a checked session (`redzone.rs`).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn tcm_malloc(size: usize) -> *mut c_void {
    take(size, true).cast()
}

/// C ABI `void tcm_free(void *ptr)`: [`tcm_release`].
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn tcm_free(ptr: *mut c_void) {
    tcm_release(ptr.cast());
}
