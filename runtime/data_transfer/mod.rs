//! Moving data: the C, vector and DMA `neuron_memcpy` backends.
//!
//! For now only the portable C backend exists; the vector and DMA backends and
//! run-time selection come with the data-movement work (issue 6).

/// Copies `len` bytes from `src` to `dst` through the active backend.
///
/// # Safety
/// `src` must be valid for `len` bytes of reads, `dst` for `len` bytes of writes, and
/// the two ranges must not overlap.
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: forwarded from this function's contract.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, len) }
}
