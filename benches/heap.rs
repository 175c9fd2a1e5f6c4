//! malloc+free pairs on a fragmented heap with 1,000 live blocks: this crate's [`Heap`]
//! against `linked_list_allocator` (the allocator the design names), same region size,
//! same 64-byte alignment, same random sequence, same run. The workload (scenarios,
//! generator, fragmented start) is `heap/workload.rs`, shared with the device's
//! `bench_heap`.
//!
//! `cargo bench --bench heap` prints a table of nanoseconds per pair. For deterministic
//! instruction counts, run the bench binary under callgrind with a smaller pair count,
//! one scenario at a time:
//!
//! ```text
//! HEAP_BENCH_PAIRS=20000 HEAP_BENCH_SCENARIO='pair 4 KiB' valgrind --tool=callgrind \
//!     --callgrind-out-file=heap.cg --toggle-collect='*measure*' target/release/deps/heap-<hash>
//! callgrind_annotate --inclusive=yes heap.cg | grep measure
//! ```
//!
//! and divide each allocator's `measure` `Ir` by the pair count (the setup is not
//! collected).
//!
//! `HEAP_BENCH_PAIRS` sets the number of pairs (default 100,000), `HEAP_BENCH_ONLY`
//! (`ours`, `list`, `baseline`) and `HEAP_BENCH_SCENARIO` (part of a title) select what
//! runs; `baseline` runs the loops with no allocator, to subtract their own cost.

#[path = "heap/workload.rs"]
mod workload;

use linked_list_allocator::Heap as ListHeap;
use neuroncustomop::allocators::Heap;
use std::alloc::Layout;
use std::ptr::NonNull;
use std::time::Instant;
use workload::{ALIGN, Baseline, BenchHeap, Block, LIVE, REGION_BYTES, Rng, SCENARIOS, SEED, Scenario};

/// A leaked, 4 KiB-aligned region, reused by every heap in turn.
fn region() -> *mut u8 {
    let layout = Layout::from_size_align(REGION_BYTES, 4096).unwrap();
    // SAFETY: non-zero size; the region lives until the process exits.
    let region = unsafe { std::alloc::alloc(layout) };
    assert!(!region.is_null());
    region
}

/// The timed loop: `pairs` pairs of `scenario`.
#[inline(never)]
fn measure<H: BenchHeap>(heap: &mut H, live: &mut [Block], rng: &mut Rng, pairs: usize, scenario: Scenario) {
    match scenario {
        Scenario::Churn(size) => (0..pairs).for_each(|_| workload::churn_pair(heap, live, rng, size)),
        Scenario::Pair(size) => (0..pairs).for_each(|_| workload::pair(heap, size)),
    }
}

/// Nanoseconds per pair of each scenario: a fresh heap over `region`, fragmented with
/// the same seed every time, then `pairs` timed pairs.
fn bench<H: BenchHeap>(region: *mut u8, new_heap: fn(*mut u8) -> H, pairs: usize) -> [f64; SCENARIOS.len()] {
    // HEAP_BENCH_SCENARIO=<part of a title> runs only the matching scenarios.
    let filter = std::env::var("HEAP_BENCH_SCENARIO").unwrap_or_default();
    SCENARIOS.map(|(_, title, scenario)| {
        if !title.contains(filter.as_str()) {
            return f64::NAN;
        }
        let mut rng = Rng(SEED);
        let mut heap = new_heap(region);
        let mut blocks = vec![(NonNull::dangling(), 0); 2 * LIVE];
        let live = workload::fragment(&mut heap, &mut rng, &mut blocks);
        let start = Instant::now();
        measure(&mut heap, live, &mut rng, pairs, scenario);
        start.elapsed().as_nanos() as f64 / pairs as f64
    })
}

fn main() {
    let pairs = std::env::var("HEAP_BENCH_PAIRS").ok().and_then(|pairs| pairs.parse().ok()).unwrap_or(100_000);
    let region = region();
    // SAFETY: the region is leaked memory that only the heap of the current scenario uses.
    let new_heap = |region| unsafe { Heap::new(region, REGION_BYTES) }.unwrap();
    // SAFETY: as above.
    let new_list = |region| unsafe { ListHeap::new(region, REGION_BYTES) };
    // HEAP_BENCH_ONLY=ours|list|baseline runs one (for callgrind, one at a time).
    let only = std::env::var("HEAP_BENCH_ONLY").unwrap_or_default();
    if only == "baseline" {
        bench(region, |_| Baseline, pairs);
        return;
    }
    let none = [f64::NAN; SCENARIOS.len()];
    let ours = if only == "list" { none } else { bench(region, new_heap, pairs) };
    let list = if only == "ours" { none } else { bench(region, new_list, pairs) };
    println!(
        "malloc+free pairs, {LIVE} live fragmented blocks, {} MiB region, align {ALIGN}, {pairs} pairs",
        REGION_BYTES >> 20
    );
    println!("| scenario | Heap ns/pair | linked_list_allocator ns/pair | ratio |");
    println!("|---|---:|---:|---:|");
    for (((_, title, _), ours), list) in SCENARIOS.iter().zip(ours).zip(list) {
        println!("| {title} | {ours:.0} | {list:.0} | {:.1}x |", list / ours);
    }
    if only.is_empty() {
        // What the heap looks like after the churn: how fragmented "fragmented" is.
        let mut rng = Rng(SEED);
        let mut heap = new_heap(region);
        let mut blocks = vec![(NonNull::dangling(), 0); 2 * LIVE];
        let live = workload::fragment(&mut heap, &mut rng, &mut blocks);
        measure(&mut heap, live, &mut rng, pairs, SCENARIOS[0].2);
        let live_bytes: usize = live.iter().map(|&(_, size)| size).sum();
        println!(
            "after the log-uniform churn: {} live blocks ({} KiB), {} free blocks",
            heap.live_blocks(),
            live_bytes >> 10,
            heap.free_block_count()
        );
    }
}
