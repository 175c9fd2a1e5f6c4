//! Benchmark of `neuron_translate` on the device: guest instructions per call for a hit
//! in each of the five records and for a miss, next to a call of an empty function
//! with the same signature (the harness, to subtract). Run it with
//! `cargo sim run bench_translate --count-instructions`.
//!
//! Prints `BENCH` lines and `TRANSLATE <case> <per call x100> <own x100>`: the loop's
//! count per call, and the instructions `neuron_translate` itself runs, from `entry` to
//! `retw`: the call's count minus the empty function's, plus the empty function's
//! own two instructions.
//!
//! The search starts at the window of the last hit when no two windows overlap
//! (runtime/translate.rs), so `hit_<k>` (the same address again and again) is a hit in
//! the record used last, whatever its index. `away_<d>` is a hit `d` records after the
//! one the search starts at: measured with a fifth window that overlaps the fourth,
//! which keeps the search at the first record, so `away_<d>` hits record `d + 1`.
//!
//! The misses are the two extremes: `miss_high_word` matches every record's low half,
//! so all five records are tested in full; `miss_low_word` fails every record's first
//! compare.
#![no_std]
#![no_main]

use core::ffi::c_void;
use core::hint::black_box;
use neuroncustomop::translate::{TranslateRecord, configure, neuron_translate};
use neuroncustomop_firmware::{bench, println};

neuroncustomop::kernels! {}

const CALLS: u32 = 20_000;
/// Instructions [`nothing`] runs: `entry` and `retw.n`.
const NOTHING_OWN: u64 = 2;

/// The harness alone: a call with `neuron_translate`'s signature that does nothing.
/// Its body is exactly `entry` and `retw.n`: the address's low half is already in the
/// return register.
#[inline(never)]
extern "C" fn nothing(addr: u64) -> *mut c_void {
    addr as usize as *mut c_void
}

/// Measures `neuron_translate(addr)` and prints its `TRANSLATE` row.
fn report(case: &str, addr: u64, harness: u64) {
    let per_call = per_call_x100(case, addr, neuron_translate);
    let own = (per_call + NOTHING_OWN * 100).saturating_sub(harness);
    println!("TRANSLATE {case} {per_call} {own}");
}

/// Instructions per call of `translate(addr)`, in hundredths.
fn per_call_x100(case: &str, addr: u64, translate: extern "C" fn(u64) -> *mut c_void) -> u64 {
    let translate = black_box(translate);
    bench::measure(case, CALLS, || {
        black_box(translate(black_box(addr)));
    })
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    // Record i: framework [0x7f00_0000_0000 + i << 32, +1 MiB) at 0x6300_0000 + i MiB.
    let records: [TranslateRecord; 5] = core::array::from_fn(|i| {
        TranslateRecord::window(0x7f00_0000_0000 + ((i as u64) << 32), 1 << 20, 0x6300_0000 + ((i as u64) << 20))
    });
    configure(&records).unwrap();
    let harness = per_call_x100("nothing", 0x7f00_0000_0040, nothing);
    println!("TRANSLATE nothing {harness} {}", NOTHING_OWN * 100);
    let cases = [
        ("hit_1", 0x7f00_0000_0040),
        ("hit_2", 0x7f01_0000_0040),
        ("hit_3", 0x7f02_0000_0040),
        ("hit_4", 0x7f03_0000_0040),
        ("hit_5", 0x7f04_0000_0040),
        ("miss_high_word", 0x1234_0000_0040),
        ("miss_low_word", 0x7f00_0010_0040),
    ];
    for (case, addr) in cases {
        report(case, addr, harness);
    }
    // The fifth window, 4 MiB, holds the fourth: they overlap.
    let mut overlapping = records;
    overlapping[4] = TranslateRecord::window(0x7f03_0000_0000, 4 << 20, 0x6400_0000);
    configure(&overlapping).unwrap();
    let away = [
        ("away_0", 0x7f00_0000_0040),
        ("away_1", 0x7f01_0000_0040),
        ("away_2", 0x7f02_0000_0040),
        ("away_3", 0x7f03_0000_0040),
        ("away_4", 0x7f03_0020_0040),
    ];
    for (case, addr) in away {
        report(case, addr, harness);
    }
    0
}
