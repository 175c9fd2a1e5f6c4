//! Device memory: first-fit HBM and dataram heaps (64-byte aligned blocks), the per-op
//! TCM scratch pool, and the libc `malloc` family and Rust `#[global_allocator]` on top.
//!
//! STUB: owned by the memory work (issue 4). The signatures below are the contract other
//! modules already call; keep them.

/// Hands the heaps their regions, as `entry_func` got them from the host's
/// `get_hbm_scratch` / `get_data_scratch`. Called once per `entry_func`.
pub fn init_heaps(hbm_base: *mut u8, hbm_size: usize, dataram_base: *mut u8, dataram_size: usize) {
    let _ = (hbm_base, hbm_size, dataram_base, dataram_size);
}

/// TCM scratch (`tcm_malloc` / `tcm_free`).
pub mod tcm {
    /// Takes `size` bytes from this op's TCM pool; null when it cannot.
    pub fn tcm_alloc(size: usize) -> *mut u8 {
        let _ = size;
        core::ptr::null_mut()
    }
    /// Gives back a block from [`tcm_alloc`].
    pub fn tcm_release(ptr: *mut u8) {
        let _ = ptr;
    }
}
