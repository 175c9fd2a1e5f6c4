//! Benchmark of `neuron_translate` on the device: guest instructions per call for hits
//! and misses, next to a call of an empty function with the same signature (the
//! harness, to subtract). Run it with `cargo sim run bench_translate --count-instructions`.
//!
//! Prints `BENCH` lines and `TRANSLATE <case> <per call x100> <own x100>`: the loop's
//! count per call, and the instructions `neuron_translate` itself runs, from `entry` to
//! `retw`: the call's count minus the empty function's, plus the empty function's
//! own two instructions.
//!
//! The lookup tests one candidate window, picked by four address bits that tell the
//! windows apart (runtime/translate.rs), so where a record is in the table, and which
//! record the op used before, should not matter:
//! - `hit_<k>`: the same address of record k again and again;
//! - `switch_<d>`: calls alternating between record 1 and record 1 + d, each a hit in
//!   another record than the last (measured in pairs, against a pair of empty calls);
//! - `miss_high_word` matches the low half of the candidate its bucket picks and not
//!   the high half (the longest miss), `miss_low_word` fails the low half;
//! - `range_hit`: setup's lookup, `translate_range` of 16 bytes in record 3, again and
//!   again (through a wrapper with `neuron_translate`'s signature, counted with it).
//!
//! Two more tables, where a failed candidate means searching all windows: `shared_*`
//! (disjoint windows that differ only above the bits a field can use, so they share
//! buckets and the last hit becomes its bucket's candidate) and `overlap_*` (a fifth
//! window that holds the fourth: first match in configuration order, and
//! `overlap_away_4` is an address only the fifth holds).
#![no_std]
#![no_main]

use core::ffi::c_void;
use core::hint::black_box;
use neuroncustomop::translate::{TranslateRecord, configure, neuron_translate, translate_range};
use neuroncustomop_firmware::{bench, println};

neuroncustomop::kernels! {}

const CALLS: u32 = 20_000;
/// Instructions [`nothing`] runs: `entry` and `retw.n`.
const NOTHING_OWN: u64 = 2;

type Translate = extern "C" fn(u64) -> *mut c_void;

/// The harness alone: a call with `neuron_translate`'s signature that does nothing.
/// Its body is exactly `entry` and `retw.n`: the address's low half is already in the
/// return register.
#[inline(never)]
extern "C" fn nothing(addr: u64) -> *mut c_void {
    addr as usize as *mut c_void
}

/// Setup's lookup, `translate_range(addr, 16)`, behind `neuron_translate`'s signature
/// (the wrapper's `entry`, `retw` and null for an error are in its count).
#[inline(never)]
extern "C" fn range(addr: u64) -> *mut c_void {
    translate_range(addr, 16).map_or(core::ptr::null_mut(), |device| device.cast())
}

/// The empty calls' counts, one and two per repetition, x100.
struct Harness {
    single: u64,
    pair: u64,
}

/// Measures `neuron_translate(addr)` and prints its `TRANSLATE` row.
fn report(case: &str, addr: u64, harness: &Harness) {
    report_of(neuron_translate, case, addr, harness);
}

/// Measures `translate(addr)` and prints its `TRANSLATE` row.
fn report_of(translate: Translate, case: &str, addr: u64, harness: &Harness) {
    let per_call = bench::measure(case, CALLS, calls(translate, addr));
    let own = (per_call + NOTHING_OWN * 100).saturating_sub(harness.single);
    println!("TRANSLATE {case} {per_call} {own}");
}

/// Measures `neuron_translate` alternating between `first` and `second` and prints the
/// `TRANSLATE` row of one call.
fn report_switch(case: &str, first: u64, second: u64, harness: &Harness) {
    let per_pair = bench::measure(case, CALLS, pairs(neuron_translate, first, second));
    let own = (per_pair + 2 * NOTHING_OWN * 100).saturating_sub(harness.pair) / 2;
    println!("TRANSLATE {case} {} {own}", per_pair / 2);
}

/// One call of `translate(addr)` per repetition.
fn calls(translate: Translate, addr: u64) -> impl FnMut() {
    let translate = black_box(translate);
    move || {
        black_box(translate(black_box(addr)));
    }
}

/// Two calls per repetition, at `first` and then `second`.
fn pairs(translate: Translate, first: u64, second: u64) -> impl FnMut() {
    let translate = black_box(translate);
    move || {
        black_box(translate(black_box(first)));
        black_box(translate(black_box(second)));
    }
}

/// Five 1 MiB windows: record i at framework `0x7f00_0000_0000 + i << bit`, device
/// `0x6300_0000 + i MiB`.
fn windows(bit: u32) -> [TranslateRecord; 5] {
    core::array::from_fn(|i| TranslateRecord::window(0x7f00_0000_0000 + ((i as u64) << bit), 1 << 20, 0x6300_0000 + ((i as u64) << 20)))
}

/// An address 0x40 into each record.
fn addresses(records: &[TranslateRecord; 5]) -> [u64; 5] {
    records.map(|record| record.ptr + 0x40)
}

/// The `hit_<k>` and `switch_<d>` rows of `records`, named after `prefix`.
fn hits_and_switches(prefix: &str, records: &[TranslateRecord; 5], harness: &Harness) {
    let addresses = addresses(records);
    for (k, &addr) in addresses.iter().enumerate() {
        report(&format(prefix, "hit", k + 1), addr, harness);
    }
    for d in 1..5 {
        report_switch(&format(prefix, "switch", d), addresses[0], addresses[d], harness);
    }
}

/// `<prefix><name>_<n>`, e.g. `shared_hit_3`.
fn format(prefix: &str, name: &str, n: usize) -> heapless::String<32> {
    let mut text = heapless::String::new();
    let _ = core::fmt::write(&mut text, format_args!("{prefix}{name}_{n}"));
    text
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let harness = Harness {
        single: bench::measure("nothing", CALLS, calls(nothing, 0x7f00_0000_0040)),
        pair: bench::measure("nothing_pair", CALLS, pairs(nothing, 0x7f00_0000_0040, 0x7f01_0000_0040)),
    };
    println!("TRANSLATE nothing {} {}", harness.single, NOTHING_OWN * 100);

    // The windows differ only in the high half (bits 32..34): the worst case for a
    // search that compares the low half first.
    let records = windows(32);
    configure(&records).unwrap();
    hits_and_switches("", &records, &harness);
    report("miss_high_word", 0x1234_0000_0040, &harness);
    report("miss_low_word", 0x7f00_0010_0040, &harness);
    // Setup's lookup of a 16-byte tensor in record 3, again and again.
    report_of(range, "range_hit", records[2].ptr + 0x40, &harness);

    // Bits 48..50: above every field position, so the windows share buckets.
    let shared = windows(48);
    configure(&shared).unwrap();
    hits_and_switches("shared_", &shared, &harness);
    report("shared_miss", 0x7f05_0000_0040, &harness);

    // The fifth window, 4 MiB, holds the fourth: they overlap.
    let mut overlapping = records;
    overlapping[4] = TranslateRecord::window(0x7f03_0000_0000, 4 << 20, 0x6400_0000);
    configure(&overlapping).unwrap();
    let away = [
        ("overlap_away_0", 0x7f00_0000_0040),
        ("overlap_away_1", 0x7f01_0000_0040),
        ("overlap_away_2", 0x7f02_0000_0040),
        ("overlap_away_3", 0x7f03_0000_0040),
        ("overlap_away_4", 0x7f03_0020_0040),
    ];
    for (case, addr) in away {
        report(case, addr, &harness);
    }
    0
}
