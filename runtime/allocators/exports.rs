//! The heaps' C ABI (the `neuron_*` pairs and the libc `malloc` family) and the Rust
//! global allocator: thin glue over the functions of [`super`].

use super::{
    GRANULE, HeapError, HeapId, allocate, allocate_zeroed, free_in, give_back_since_mark, mark_heaps, reallocate,
    with_core_memory, with_memory,
};
use core::alloc::{GlobalAlloc, Layout};
use core::ffi::{c_int, c_void};
use core::ptr::{self, NonNull};

/// `EINVAL`, as newlib numbers it.
const EINVAL: c_int = 22;
/// `ENOMEM`, as newlib numbers it.
const ENOMEM: c_int = 12;

fn or_null(block: Result<NonNull<u8>, HeapError>) -> *mut c_void {
    block.map_or(ptr::null_mut(), |block| block.as_ptr().cast())
}

/// [`or_null`] for the C library's allocators, which set `errno` to `ENOMEM` on failure
/// as glibc's do.
fn or_enomem(block: Result<NonNull<u8>, HeapError>) -> *mut c_void {
    if block.is_err() {
        // SAFETY: this core's errno, accessed only by the running kernel and the runtime.
        unsafe { crate::start_exit::__errno().write(ENOMEM) };
    }
    or_null(block)
}

/// C ABI `int neuron_heap_status(void)`: 0 after a heap, libc-allocator or TCM call that
/// succeeded, else the failed call's [`HeapError::code`].
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn neuron_heap_status() -> c_int {
    with_core_memory(|memory| memory.status)
}

/// What [`neuron_heaps_give_back`] freed, both heaps together: the loader's report of
/// a stopped kernel's heap (the `RECLAIMED` line).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeapsGivenBack {
    /// Bytes of the blocks freed.
    pub bytes: u32,
    /// Blocks freed.
    pub blocks: u32,
    /// Blocks the kernel took that stay taken (the heap's metadata was inconsistent).
    pub kept: u32,
    /// 1 when a heap was rebuilt empty because its metadata was inconsistent, else 0.
    pub rebuilt: u32,
}

const _: () = {
    assert!(size_of::<HeapsGivenBack>() == 16);
    assert!(core::mem::offset_of!(HeapsGivenBack, bytes) == 0);
    assert!(core::mem::offset_of!(HeapsGivenBack, blocks) == 4);
    assert!(core::mem::offset_of!(HeapsGivenBack, kept) == 8);
    assert!(core::mem::offset_of!(HeapsGivenBack, rebuilt) == 12);
};

/// C ABI `void neuron_heaps_mark(void)`, the loader's, before each kernel runs:
/// [`mark_heaps`].
#[cfg_attr(target_os = "none", unsafe(no_mangle))]
pub extern "C" fn neuron_heaps_mark() {
    mark_heaps();
}

/// C ABI `void neuron_heaps_give_back(HeapsGivenBack *out)`, the loader's, after a
/// kernel stopped without returning: [`give_back_since_mark`], totalled into `*out`.
/// First it ends the borrows of runtime state the stopped kernel's discarded frames
/// held ([`crate::global::abandon_borrows`]: a kernel stopped inside `malloc`, or a
/// Rust kernel inside its invocation), so the heaps, and after this call the
/// invocation's status, can be reached again.
///
/// # Safety
/// `out` is valid for a write; no kernel frame that borrowed runtime state will run
/// again (the loader discarded them).
#[cfg_attr(target_os = "none", unsafe(no_mangle))]
pub unsafe extern "C" fn neuron_heaps_give_back(out: *mut HeapsGivenBack) {
    crate::global::abandon_borrows();
    let mut total = HeapsGivenBack::default();
    for heap in give_back_since_mark() {
        let word = |count: usize| u32::try_from(count).unwrap_or(u32::MAX);
        total.bytes = total.bytes.saturating_add(word(heap.bytes));
        total.blocks = total.blocks.saturating_add(word(heap.blocks));
        total.kept = total.kept.saturating_add(word(heap.kept));
        total.rebuilt |= u32::from(heap.rebuilt);
    }
    // SAFETY: the caller passes a writable `HeapsGivenBack`.
    unsafe { out.write(total) };
}

/// C ABI `void *neuron_hbm_malloc(size_t size)`: 64-byte aligned, first fit, from HBM.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn neuron_hbm_malloc(size: usize) -> *mut c_void {
    or_null(allocate(HeapId::Hbm, size, GRANULE))
}

/// C ABI `void neuron_hbm_free(void *ptr)`: frees a block of the HBM heap only.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn neuron_hbm_free(ptr: *mut c_void) {
    let _ = free_in(HeapId::Hbm, ptr.cast());
}

/// C ABI `void *neuron_dataram_malloc(size_t size)`: 64-byte aligned, first fit, from
/// dataram.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn neuron_dataram_malloc(size: usize) -> *mut c_void {
    or_null(allocate(HeapId::Dataram, size, GRANULE))
}

/// C ABI `void neuron_dataram_free(void *ptr)`: frees a block of the dataram heap only.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn neuron_dataram_free(ptr: *mut c_void) {
    let _ = free_in(HeapId::Dataram, ptr.cast());
}

/// libc `malloc`: from the HBM heap, 64-byte aligned; null with `errno = ENOMEM` when it
/// does not fit.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    or_enomem(allocate(HeapId::Hbm, size, GRANULE))
}

/// libc `calloc`: zeroed, from the HBM heap; null with `errno = ENOMEM` when it does not
/// fit or `count * size` overflows.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    or_enomem(allocate_zeroed(HeapId::Hbm, count, size))
}

/// libc `realloc`: null `ptr` is `malloc(size)`; size 0 frees `ptr` and returns null
/// (glibc's choice); otherwise resizes within the owning heap, and on failure returns
/// null with `ptr` untouched and `errno = ENOMEM`.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    if ptr.is_null() {
        return malloc(size);
    }
    if size == 0 {
        let _ = super::free(ptr.cast());
        return ptr::null_mut();
    }
    or_enomem(reallocate(ptr.cast(), size, GRANULE))
}

/// libc `memalign`: from the HBM heap at a multiple of `align` (a power of two).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    or_null(allocate(HeapId::Hbm, size, align))
}

/// C11 `aligned_alloc`: [`memalign`].
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    memalign(align, size)
}

/// POSIX `posix_memalign`: 0 and `*out` set, or `EINVAL` (alignment not a power of two
/// multiple of `sizeof(void *)`, or null `out`) / `ENOMEM`, with `*out` untouched.
///
/// # Safety
/// `out` is null or valid for a pointer-sized write.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    if out.is_null() || !align.is_power_of_two() || !align.is_multiple_of(size_of::<*mut c_void>()) {
        let _ = with_memory(|_| Err::<(), _>(HeapError::InvalidAlignment));
        return EINVAL;
    }
    match allocate(HeapId::Hbm, size, align) {
        Ok(block) => {
            // SAFETY: `out` is not null and the caller makes it valid for this write.
            unsafe { out.write(block.as_ptr().cast()) };
            0
        }
        Err(_) => ENOMEM,
    }
}

/// libc `free`: into whichever heap owns `ptr` (HBM or dataram); null is a no-op; a
/// pointer no heap owns, an interior pointer or a double free changes nothing and
/// sets [`neuron_heap_status`].
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn free(ptr: *mut c_void) {
    let _ = super::free(ptr.cast());
}

/// The Rust global allocator on the device: the HBM heap, honouring any power-of-two
/// alignment. Registered with `#[global_allocator]` only on the device
/// (`target_os = "none"`), so host tests keep std's allocator.
#[derive(Debug, Clone, Copy, Default)]
pub struct NeuronAllocator;

// SAFETY: blocks come from the HBM heap, which never hands out overlapping live blocks,
// returns blocks of at least `layout.size()` bytes at a multiple of `layout.align()`,
// and reports failure as null; `realloc` keeps the alignment (in place, or a new block
// allocated with it).
unsafe impl GlobalAlloc for NeuronAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        or_null(allocate(HeapId::Hbm, layout.size(), layout.align())).cast()
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        let _ = super::free(ptr);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        or_null(reallocate(ptr, new_size, layout.align())).cast()
    }
}

#[cfg(target_os = "none")]
#[global_allocator]
static GLOBAL_ALLOCATOR: NeuronAllocator = NeuronAllocator;
