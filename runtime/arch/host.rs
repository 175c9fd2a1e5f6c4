//! Host stand-ins for the Xtensa helpers, so arch-independent code can be tested on x86_64.

use core::sync::atomic::{AtomicU32, Ordering, compiler_fence, fence};

static FAKE_PRID: AtomicU32 = AtomicU32::new(0);

/// The processor id: on the host, whatever [`set_prid_for_test`] last set (0 by default).
pub fn prid() -> u32 {
    FAKE_PRID.load(Ordering::Relaxed)
}

/// Host only: pretend to be core `id` (every thread of this copy of the runtime).
pub fn set_prid_for_test(id: u32) {
    FAKE_PRID.store(id, Ordering::Relaxed);
}

/// The cycle counter: on the host, a 40 MHz clock (the device core's) since first use,
/// so timeouts written in CCOUNT ticks last as long as on the device.
pub fn get_cycle_count() -> u32 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let elapsed = START.get_or_init(std::time::Instant::now).elapsed();
    (elapsed.as_nanos() / 25) as u32
}

/// A full memory barrier, the host's equivalent of `memw`.
pub fn memw() {
    fence(Ordering::SeqCst);
    compiler_fence(Ordering::SeqCst);
}

/// Where `abort` was called from: on the device, a `FAULT` line with the backtrace; the
/// host has no windowed frames to walk, and its tests' aborts report nothing.
pub fn report_abort() {}
/// On the host: yields the thread (a waiting loop's stand-in for `waiti`).
pub fn wait_for_interrupt(_ticks: u32) {
    std::thread::yield_now();
}

/// The host tier's way in (feature `host-tier`): its loader (qemu/hosttier) loads one
/// copy of an author's library per core, as the device links one image per core, and
/// tells each copy which core it is, as PRID tells each device core.
#[cfg(feature = "host-tier")]
#[unsafe(no_mangle)]
pub extern "C" fn neuron_host_set_core(id: u32) {
    set_prid_for_test(id);
}
