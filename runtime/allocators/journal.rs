//! The heap journal: the record of the last allocator call, kept where a debugger or
//! the simulator can read it (`docs/abi/memory.md`, "The heap journal").
//!
//! Every call of this module's allocators that reads or writes heap memory (their
//! metadata or a block) is bracketed by two steps:
//! - `enter` stores [`Event::Busy`] into [`HeapJournal::event`]: from here on, the
//!   core's accesses are the allocator's own;
//! - `record` (or `leave`) stores what the call did (the block, its size, the old
//!   block of a `realloc`, the status) and then, last, the event: the call is over.
//!
//! The simulated device's memory checks (`qemu/plugin/src/heap.rs`) watch the stores
//! into `event`: from them they follow every block from its allocation to its free,
//! and know which of the core's accesses are the allocator's. The runtime does not
//! know whether it is watched: the journal is written the same way on every device,
//! checked or not, so a kernel's instruction count is the same with checks and without.
//! It costs 6 stores (and the address of the journal) per call.
//!
//! On the device the journal is the `static` `neuron_heap_journal`, one per core
//! (each core runs its own image); on the host each thread, a core there, has its own.

use super::HeapError;
use core::cell::UnsafeCell;
use core::ptr::NonNull;
use core::sync::atomic::{Ordering, compiler_fence};

/// What the last allocator call did: [`HeapJournal::event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Event {
    /// A call that changed no block (a query, a refused argument).
    Query = 0,
    /// `block` of `size` bytes was taken from the HBM or dataram heap (`malloc`,
    /// `memalign`, `neuron_*_malloc`, C++ `new`, Rust's global allocator).
    Alloc = 1,
    /// As [`Event::Alloc`], the block zeroed (`calloc`, `__rust_alloc_zeroed`).
    AllocZeroed = 2,
    /// `block` was given to a heap's `free`; `status` says whether it was freed.
    Free = 3,
    /// `old` was resized into `block` (the same block when resized in place) of `size`
    /// bytes; `status` says whether it was.
    Realloc = 4,
    /// `block` of `size` bytes was taken from the op's TCM pool.
    TcmAlloc = 5,
    /// `block` was given to the TCM pool's free.
    TcmFree = 6,
    /// The heaps were set up anew (`entry_func`): every block of them is forgotten.
    HeapsReset = 7,
    /// The TCM pool at `block` (`size` bytes) was emptied: every TCM block is forgotten.
    TcmReset = 8,
    /// The blocks taken since the heaps were marked (before the op) were given back:
    /// a stopped kernel's (`neuron_heaps_give_back`).
    GiveBack = 9,
    /// As [`Event::Alloc`], a block the runtime takes for itself and frees before the
    /// op ends (an HBM stack, `runtime/stack_switch.rs`).
    RuntimeAlloc = 10,
    /// An allocator call is running (stored by `enter`).
    Busy = 0xFFFF_FFFF,
}

/// The record of the last allocator call. `repr(C)`: its layout is the runtime's ABI
/// (`docs/abi/memory.md`); on the device, pointers and sizes are 32-bit, so it is five
/// words at offsets 0, 4, 8, 12 and 16.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapJournal {
    /// The block taken, resized or freed (0 for none, or when the call failed).
    pub block: usize,
    /// Its size in bytes as asked for (for a reset, the region's size).
    pub size: usize,
    /// The block a `realloc` resized (else 0).
    pub old: usize,
    /// 0, or the call's `HeapError::code` (`neuron_heap_status`).
    pub status: u32,
    /// What the call did ([`Event`]); [`Event::Busy`] while a call runs. Stored last.
    pub event: u32,
}

const WORD: usize = size_of::<usize>();
const _: () = {
    assert!(core::mem::offset_of!(HeapJournal, block) == 0);
    assert!(core::mem::offset_of!(HeapJournal, size) == WORD);
    assert!(core::mem::offset_of!(HeapJournal, old) == 2 * WORD);
    assert!(core::mem::offset_of!(HeapJournal, status) == 3 * WORD);
    assert!(core::mem::offset_of!(HeapJournal, event) == 3 * WORD + 4);
    assert!(size_of::<HeapJournal>() == (3 * WORD + 8).next_multiple_of(WORD));
};

/// The empty journal: no call yet.
const EMPTY: HeapJournal = HeapJournal { block: 0, size: 0, old: 0, status: 0, event: Event::Query as u32 };

/// The journal's cell. Written only through a raw pointer to it, with volatile
/// stores, by the one context of its core (as `super::MEMORY`).
pub struct JournalCell(UnsafeCell<HeapJournal>);

// SAFETY: each core has its own copy (its own image) and runs one context at a time;
// on the host the cell is thread-local. No reference to the value is ever formed.
unsafe impl Sync for JournalCell {}

/// The heap journal of this core (C: `extern const HeapJournal neuron_heap_journal`,
/// read-only for anyone but the runtime).
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
#[allow(non_upper_case_globals, reason = "a C symbol, named as the runtime's other C symbols are")]
pub static neuron_heap_journal: JournalCell = JournalCell(UnsafeCell::new(EMPTY));

/// This core's journal.
#[cfg(target_os = "none")]
#[inline(always)]
fn journal() -> *mut HeapJournal {
    neuron_heap_journal.0.get()
}

#[cfg(not(target_os = "none"))]
std::thread_local! {
    static JOURNAL: JournalCell = const { JournalCell(UnsafeCell::new(EMPTY)) };
}

/// This thread's journal (a core on the host).
#[cfg(not(target_os = "none"))]
fn journal() -> *mut HeapJournal {
    JOURNAL.with(|journal| journal.0.get())
}

/// A copy of this core's journal: what the last allocator call did.
pub fn last() -> HeapJournal {
    // SAFETY: the journal is this core's, valid for its whole life; a volatile read
    // of a plain-data struct.
    unsafe { journal().read_volatile() }
}

/// An allocator call begins: its accesses are the allocator's until [`record`].
#[inline(always)]
pub(super) fn enter() {
    // SAFETY: this core's journal, written by this context only (module docs).
    unsafe { (&raw mut (*journal()).event).write_volatile(Event::Busy as u32) };
    // The call's own accesses stay after the store that marks them.
    compiler_fence(Ordering::SeqCst);
}

/// The call entered with [`enter`] is over, having done `event`. Not inlined: its
/// five stores at each of a dozen call sites would cost the runtime's text size more
/// than the call costs instructions (docs/PERFORMANCE.md, "The heap journal").
#[inline(never)]
pub(super) fn record(event: Event, block: usize, size: usize, old: usize, status: Result<(), HeapError>) {
    // ... and before the stores that end it.
    compiler_fence(Ordering::SeqCst);
    let journal = journal();
    // SAFETY: as in `enter`; the event goes last: a reader that sees it sees the rest.
    unsafe {
        (&raw mut (*journal).block).write_volatile(block);
        (&raw mut (*journal).size).write_volatile(size);
        (&raw mut (*journal).old).write_volatile(old);
        (&raw mut (*journal).status).write_volatile(status.err().map_or(0, HeapError::code) as u32);
        (&raw mut (*journal).event).write_volatile(event as u32);
    }
    #[cfg(feature = "host-tier")]
    host_tier::observe(event, block, size, old, status.err().map_or(0, HeapError::code) as u32);
}

/// The call entered with [`enter`] is over and changed no block.
#[inline(always)]
pub(super) fn leave() {
    compiler_fence(Ordering::SeqCst);
    // SAFETY: as in `enter`.
    unsafe { (&raw mut (*journal()).event).write_volatile(Event::Query as u32) };
}

/// [`record`] of an allocation's result: the block (0 when it failed) and `size`.
#[inline(always)]
pub(super) fn taken(event: Event, result: &Result<NonNull<u8>, HeapError>, size: usize, old: usize) {
    let block = result.as_ref().map_or(0, |block| block.as_ptr().addr());
    record(event, block, size, old, result.map(|_| ()));
}

/// The host tier's heap checks (feature `host-tier` only: the device and the runtime's
/// own tests have none of it). On the device the memory checks read the journal's
/// stores as they happen; on the host tier nothing watches memory, so the loader asks
/// each library copy to call it with every record (`neuron_host_journal_observer`),
/// and judges the calls as the device's checks do (a refused free, a block still held
/// when the op ended).
#[cfg(feature = "host-tier")]
pub use host_tier::neuron_host_journal_observer;

#[cfg(feature = "host-tier")]
mod host_tier {
    use super::Event;
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// `void observer(uint32_t event, uintptr_t block, size_t size, uintptr_t old,
    /// uint32_t status)`: a record's words.
    type Observer = unsafe extern "C" fn(u32, usize, usize, usize, u32);

    /// The loader's observer, or 0. One per library copy, so per core.
    static OBSERVER: AtomicUsize = AtomicUsize::new(0);

    /// Hands the record just stored to the loader's observer, if it set one.
    pub(super) fn observe(event: Event, block: usize, size: usize, old: usize, status: u32) {
        let observer = OBSERVER.load(Ordering::Acquire);
        if observer != 0 {
            // SAFETY: only `neuron_host_journal_observer` stores here, an `Observer`.
            let observer = unsafe { core::mem::transmute::<usize, Observer>(observer) };
            // SAFETY: the loader's function of that signature; it only records.
            unsafe { observer(event as u32, block, size, old, status) };
        }
    }

    /// C ABI `void neuron_host_journal_observer(observer)`, the host tier loader's:
    /// `observer` is called with every heap journal record this copy stores, on the
    /// thread of the call that made it.
    #[unsafe(no_mangle)]
    pub extern "C" fn neuron_host_journal_observer(observer: Option<Observer>) {
        OBSERVER.store(observer.map_or(0, |f| f as usize), Ordering::Release);
    }
}
