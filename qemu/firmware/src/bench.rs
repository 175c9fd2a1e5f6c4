//! The instruction-count harness.
//!
//! QEMU's CCOUNT follows virtual time at the core's 40 MHz clock (one tick per 25 ns).
//! Under `-icount shift=0` virtual time advances exactly 1 ns per guest instruction, so
//! a CCOUNT delta times 25 is an instruction count: deterministic, to within one tick
//! (25 instructions). To measure a short path precisely, run it many times and divide:
//! [`measure`] takes a repetition count and reports instructions per repetition in
//! hundredths.
//!
//! Each measurement prints one line the host side parses:
//!
//! ```text
//! BENCH <name> <total instructions> <repetitions> <instructions per repetition x 100>
//! ```

use neuroncustomop::arch::get_cycle_count;

/// Guest instructions per CCOUNT tick under `-icount shift=0` (1 ns per instruction,
/// CCOUNT at the de233_fpu core's 40 MHz, as QEMU configures it).
pub const INSTRUCTIONS_PER_TICK: u64 = 25;

unsafe extern "C" {
    /// Exactly `count` nops (board.S).
    fn board_nops(count: u32);
}

/// Instructions `f` takes, to within [`INSTRUCTIONS_PER_TICK`].
pub fn count(f: impl FnOnce()) -> u64 {
    let start = get_cycle_count();
    f();
    let end = get_cycle_count();
    u64::from(end.wrapping_sub(start)) * INSTRUCTIONS_PER_TICK
}

/// Runs `f` `repetitions` times and reports the count as a `BENCH` line; returns
/// instructions per repetition, in hundredths.
pub fn measure(name: &str, repetitions: u32, mut f: impl FnMut()) -> u64 {
    let total = count(|| {
        for _ in 0..repetitions {
            f();
        }
    });
    let per_repetition_x100 = total * 100 / u64::from(repetitions.max(1));
    crate::println!("BENCH {name} {total} {repetitions} {per_repetition_x100}");
    per_repetition_x100
}

/// A workload of exactly `count` instructions plus a call, for calibration.
pub fn nops(count: u32) {
    // SAFETY: board_nops only executes nops; count >= 1 is its only precondition.
    unsafe { board_nops(count.max(1)) }
}
