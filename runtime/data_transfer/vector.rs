//! The `VEC_MEMCPY` backend: `vec_memcpy`, a second name of the libc `memcpy` in
//! `runtime/arch/xtensa/mem.S`.
//!
//! Unrolled zero-overhead `loop`s of aligned 32-bit words (the widest loads and stores
//! the core has), SSA8L/SRC funnel shifts when the source is not word-aligned after the
//! destination is, and byte loops for the head and tail. `docs/abi/data_transfer.md`
//! has the algorithm and its cost; `docs/PERFORMANCE.md` the measurements.
//!
//! On the host there is no Xtensa code to run: [`vec_memcpy`] is the C backend there, so
//! the rest of the runtime and its tests work unchanged. The assembly itself is tested
//! under QEMU (`qemu/firmware/src/bin/memcpy_check.rs`).

use core::ffi::c_void;

#[cfg(target_arch = "xtensa")]
unsafe extern "C" {
    /// `void *vec_memcpy(void *dst, const void *src, size_t n)`: copies `n` bytes, returns
    /// `dst` (mem.S: the libc `memcpy`).
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` bytes; the ranges do not overlap.
    pub fn vec_memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
}

/// The host's stand-in for `vec_memcpy` (mem.S): the C backend.
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes; the ranges do not overlap.
#[cfg(not(target_arch = "xtensa"))]
pub unsafe extern "C" fn vec_memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: forwarded from this function's contract.
    unsafe { crate::start_exit::memcpy(dst, src, n) }
}
