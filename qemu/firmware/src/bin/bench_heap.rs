//! Benchmark of the heap on the device: guest instructions per malloc+free pair on a
//! heap fragmented with 1,000 live blocks of 16 B..64 KiB, `allocators::Heap` against
//! `linked_list_allocator` 0.10 in the same run, same 64 MiB region, same random
//! sequence: the device twin of `benches/heap.rs` (see there for the scenarios). Run
//! it with `cargo sim run bench_heap --count-instructions`.
//!
//! Each measurement prints a `BENCH` line (the harness's) and
//! `HEAP <allocator> <scenario> <instructions per pair x100>`; `baseline` runs the same
//! loops with no allocator (random numbers, the live-block table), to subtract.
#![no_std]
#![no_main]

use core::alloc::Layout;
use core::hint::black_box;
use core::ptr::NonNull;
use linked_list_allocator::Heap as ListHeap;
use neuroncustomop::allocators::Heap;
use neuroncustomop_firmware::{bench, println};

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

/// The tensor area (docs/simulation.md): RAM that no image uses and, in a boot without
/// a job, no tensor either. (0x70000000..0x7E000000 is the board's I/O window, not RAM.)
const REGION: usize = 0x6200_0000;
const REGION_SIZE: usize = 64 << 20;
const LIVE: usize = 1000;
const ALIGN: usize = 64;
const PAIRS: u32 = 4000;

/// xorshift64*, as on the host, so both allocators see the same sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound as u64) as usize
    }
    /// Log-uniform in 16 B..64 KiB.
    fn size(&mut self) -> usize {
        let bits = 4 + (self.next() % 12) as u32;
        (1 << bits) + self.below(1 << bits)
    }
    /// Uniform in 16 B..=64 KiB.
    fn uniform_size(&mut self) -> usize {
        16 + self.below(65536 - 16 + 1)
    }
}

trait BenchHeap {
    fn alloc(&mut self, size: usize) -> NonNull<u8>;
    fn dealloc(&mut self, ptr: NonNull<u8>, size: usize);
}

impl BenchHeap for Heap {
    fn alloc(&mut self, size: usize) -> NonNull<u8> {
        self.allocate(size, ALIGN).expect("heap exhausted")
    }
    fn dealloc(&mut self, ptr: NonNull<u8>, _size: usize) {
        self.free(ptr.as_ptr()).expect("free");
    }
}

impl BenchHeap for ListHeap {
    fn alloc(&mut self, size: usize) -> NonNull<u8> {
        self.allocate_first_fit(Layout::from_size_align(size, ALIGN).unwrap()).expect("heap exhausted")
    }
    fn dealloc(&mut self, ptr: NonNull<u8>, size: usize) {
        // SAFETY: from `alloc` with this size, freed once.
        unsafe { self.deallocate(ptr, Layout::from_size_align(size, ALIGN).unwrap()) }
    }
}

struct Baseline;

impl BenchHeap for Baseline {
    fn alloc(&mut self, _size: usize) -> NonNull<u8> {
        NonNull::dangling()
    }
    fn dealloc(&mut self, ptr: NonNull<u8>, _size: usize) {
        black_box(ptr);
    }
}

static mut BLOCKS: [(NonNull<u8>, usize); 2 * LIVE] = [(NonNull::dangling(), 0); 2 * LIVE];

enum Scenario {
    Churn(fn(&mut Rng) -> usize),
    Pair(usize),
}

const SCENARIOS: [(&str, Scenario); 7] = [
    ("churn_log_uniform", Scenario::Churn(Rng::size)),
    ("churn_uniform", Scenario::Churn(Rng::uniform_size)),
    ("pair_16", Scenario::Pair(16)),
    ("pair_256", Scenario::Pair(256)),
    ("pair_4k", Scenario::Pair(4096)),
    ("pair_16k", Scenario::Pair(16384)),
    ("pair_64k", Scenario::Pair(65536)),
];

/// Every scenario on a fresh heap, fragmented the same way each time: 2,000 blocks,
/// then a random half freed.
fn run<H: BenchHeap>(name: &str, new_heap: impl Fn() -> H) {
    for (scenario, kind) in &SCENARIOS {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut heap = new_heap();
        // SAFETY: this core is the only user of BLOCKS.
        let blocks = unsafe { &mut *core::ptr::addr_of_mut!(BLOCKS) };
        for block in blocks.iter_mut() {
            let size = rng.size();
            *block = (heap.alloc(size), size);
        }
        let mut live = 2 * LIVE;
        for _ in 0..LIVE {
            let victim = rng.below(live);
            let (ptr, size) = blocks[victim];
            heap.dealloc(ptr, size);
            live -= 1;
            blocks[victim] = blocks[live];
        }
        let live = &mut blocks[..LIVE];
        let per_pair_x100 = match kind {
            Scenario::Churn(size) => bench::measure(scenario, PAIRS, || {
                let slot = rng.below(LIVE);
                let (ptr, freed) = live[slot];
                heap.dealloc(ptr, freed);
                let new = size(&mut rng);
                live[slot] = (black_box(heap.alloc(new)), new);
            }),
            Scenario::Pair(size) => bench::measure(scenario, PAIRS, || {
                let ptr = black_box(heap.alloc(*size));
                heap.dealloc(ptr, *size);
            }),
        };
        println!("HEAP {name} {scenario} {per_pair_x100}");
    }
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let region = REGION as *mut u8;
    run("baseline", || Baseline);
    // SAFETY: the region is RAM no image uses; each heap takes it in turn.
    run("ours", || unsafe { Heap::new(region, REGION_SIZE) }.unwrap());
    // SAFETY: as above.
    run("linked_list_allocator", || unsafe { ListHeap::new(region, REGION_SIZE) });
    0
}
