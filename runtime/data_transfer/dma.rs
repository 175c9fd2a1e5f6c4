//! The `DMA` backend slot.
//!
//! PLACEHOLDER: the DMA engine path (descriptors into the m2s/s2m queues the host gives
//! `entry_func`, start, wait for completion) is not written yet. Until it is, [`copy`]
//! is a synchronous copy by the C backend, so `DMA`, the default method, already copies
//! correctly and the dispatch table has its final shape: the engine path replaces this
//! function's body and nothing else.

use core::ffi::c_void;

/// Copies `n` bytes from `src` to `dst` and returns `dst`, as every backend of the
/// dispatch table. For now synchronously, with the C backend (see the module
/// documentation); it returns when the copy is complete, as the DMA path will once it
/// has waited for the engine's completion.
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes; the ranges do not overlap.
pub unsafe extern "C" fn copy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: forwarded from this function's contract.
    unsafe { crate::start_exit::copy_forward(dst.cast(), src.cast(), n) };
    dst
}
