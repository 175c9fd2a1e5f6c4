//! Host stand-ins for the Xtensa helpers, so arch-independent code can be tested on x86_64.

use core::sync::atomic::{AtomicU32, Ordering, compiler_fence, fence};

static FAKE_PRID: AtomicU32 = AtomicU32::new(0);

/// The processor id: on the host, whatever [`set_prid_for_test`] last set (0 by default).
pub fn prid() -> u32 {
    FAKE_PRID.load(Ordering::Relaxed)
}

/// Host only: pretend to be core `id`.
pub fn set_prid_for_test(id: u32) {
    FAKE_PRID.store(id, Ordering::Relaxed);
}

/// The cycle counter: on the host a monotonic counter that advances by one per read.
pub fn get_cycle_count() -> u32 {
    static CYCLES: AtomicU32 = AtomicU32::new(0);
    CYCLES.fetch_add(1, Ordering::Relaxed)
}

/// A full memory barrier, the host's equivalent of `memw`.
pub fn memw() {
    fence(Ordering::SeqCst);
    compiler_fence(Ordering::SeqCst);
}
