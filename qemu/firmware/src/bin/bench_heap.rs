//! Benchmark of the heap on the device: guest instructions per malloc+free pair on a
//! heap fragmented with 1,000 live blocks of 16 B..64 KiB, `allocators::Heap` against
//! `linked_list_allocator` 0.10 in the same run, same 64 MiB region, same random
//! sequence: the device twin of `benches/heap.rs`, running the same workload
//! (`benches/heap/workload.rs`: the scenarios). Run it with
//! `cargo sim run bench_heap --count-instructions`.
//!
//! Each measurement prints a `BENCH` line (the harness's) and
//! `HEAP <allocator> <scenario> <instructions per pair x100>`; `baseline` runs the same
//! loops with no allocator (random numbers, the live-block table), to subtract.
#![no_std]
#![no_main]

use linked_list_allocator::Heap as ListHeap;
use neuroncustomop::allocators::Heap;
use neuroncustomop_firmware::{bench, println};

#[path = "../../../../benches/heap/workload.rs"]
mod workload;

use workload::{Baseline, BenchHeap, Block, LIVE, REGION_BYTES, Rng, SCENARIOS, SEED, Scenario};

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

/// The tensor area (docs/simulation.md): RAM that no image uses and, in a boot without
/// a job, no tensor either. (0x70000000..0x7E000000 is the board's I/O window, not RAM.)
const REGION: usize = 0x6200_0000;
const PAIRS: u32 = 4000;

static mut BLOCKS: [Block; 2 * LIVE] = [(core::ptr::NonNull::dangling(), 0); 2 * LIVE];

/// Every scenario on a fresh heap, fragmented the same way each time.
fn run<H: BenchHeap>(name: &str, new_heap: impl Fn() -> H) {
    for (scenario, _, kind) in SCENARIOS {
        let mut rng = Rng(SEED);
        let mut heap = new_heap();
        // SAFETY: this core is the only user of BLOCKS.
        let blocks = unsafe { &mut *core::ptr::addr_of_mut!(BLOCKS) };
        let live = workload::fragment(&mut heap, &mut rng, blocks);
        let per_pair_x100 = match kind {
            Scenario::Churn(size) => bench::measure(scenario, PAIRS, || workload::churn_pair(&mut heap, live, &mut rng, size)),
            Scenario::Pair(size) => bench::measure(scenario, PAIRS, || workload::pair(&mut heap, size)),
        };
        println!("HEAP {name} {scenario} {per_pair_x100}");
    }
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let region = REGION as *mut u8;
    run("baseline", || Baseline);
    // SAFETY: the region is RAM no image uses; each heap takes it in turn.
    run("ours", || unsafe { Heap::new(region, REGION_BYTES) }.unwrap());
    // SAFETY: as above.
    run("linked_list_allocator", || unsafe { ListHeap::new(region, REGION_BYTES) });
    0
}
