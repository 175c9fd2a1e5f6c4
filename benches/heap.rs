//! malloc+free pairs on a fragmented heap with 1,000 live blocks: this crate's [`Heap`]
//! against `linked_list_allocator` (the allocator the design names), same region size,
//! same 64-byte alignment, same random sequence, same run.
//!
//! `cargo bench --bench heap` prints a table of nanoseconds per pair. For deterministic
//! instruction counts, run the bench binary under callgrind with a smaller pair count:
//!
//! ```text
//! HEAP_BENCH_PAIRS=20000 valgrind --tool=callgrind --callgrind-out-file=heap.cg \
//!     --toggle-collect='*measure_*' target/release/deps/heap-<hash>
//! callgrind_annotate --inclusive=yes heap.cg | grep measure_
//! ```
//!
//! and divide each function's `Ir` by the pair count (the setup is not collected).
//!
//! Every scenario starts from the same fragmented heap: 2,000 blocks of log-uniform
//! random sizes in 16 B..64 KiB, then a random half freed (1,000 live blocks between
//! holes). Then, per pair:
//! - `churn`: free a random live block, allocate a new random size in its slot: the
//!   live count stays 1,000 and the frees land all over the heap. Sizes log-uniform
//!   (as many tiny blocks as huge ones) or uniform (mostly large blocks).
//! - `pair N`: allocate N bytes and free them at once. For `linked_list_allocator`
//!   this is the best case: the first hole that fits is near the head of its list,
//!   and the free walks only that far back.
//!
//! `HEAP_BENCH_PAIRS` sets the number of pairs (default 100,000), `HEAP_BENCH_ONLY`
//! (`ours`, `list`, `baseline`) and `HEAP_BENCH_SCENARIO` (part of a name) select what
//! runs; `baseline` runs the loops with no allocator, to subtract their own cost.

use linked_list_allocator::Heap as ListHeap;
use neuroncustomop::allocators::Heap;
use std::alloc::Layout;
use std::hint::black_box;
use std::ptr::NonNull;
use std::time::Instant;

const REGION: usize = 64 << 20;
const LIVE: usize = 1000;
const ALIGN: usize = 64;
const MIN_SIZE: usize = 16;
const MAX_SIZE: usize = 64 << 10;

/// A small deterministic generator (xorshift64*), so both heaps see the same sequence.
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

    /// Log-uniform in `MIN_SIZE..MAX_SIZE`: as many blocks of 16..32 B as of 32..64 KiB.
    fn size(&mut self) -> usize {
        let (low, high) = (MIN_SIZE.ilog2(), MAX_SIZE.ilog2());
        let bits = low + (self.next() % u64::from(high - low)) as u32;
        (1 << bits) + self.below(1 << bits)
    }

    /// Uniform in `MIN_SIZE..=MAX_SIZE`: mostly large blocks (32 KiB on average).
    fn uniform_size(&mut self) -> usize {
        MIN_SIZE + self.below(MAX_SIZE - MIN_SIZE + 1)
    }
}

/// What the bench needs of an allocator.
trait BenchHeap {
    fn alloc(&mut self, size: usize) -> NonNull<u8>;
    fn dealloc(&mut self, ptr: NonNull<u8>, size: usize);
}

impl BenchHeap for Heap {
    fn alloc(&mut self, size: usize) -> NonNull<u8> {
        self.allocate(size, ALIGN).expect("bench heap exhausted")
    }
    fn dealloc(&mut self, ptr: NonNull<u8>, _size: usize) {
        self.free(ptr.as_ptr()).expect("bench free");
    }
}

impl BenchHeap for ListHeap {
    fn alloc(&mut self, size: usize) -> NonNull<u8> {
        self.allocate_first_fit(Layout::from_size_align(size, ALIGN).unwrap()).expect("bench heap exhausted")
    }
    fn dealloc(&mut self, ptr: NonNull<u8>, size: usize) {
        // SAFETY: `ptr` came from `alloc` with this size and is freed once.
        unsafe { self.deallocate(ptr, Layout::from_size_align(size, ALIGN).unwrap()) }
    }
}

/// No allocator at all: what the timed loops cost by themselves (random numbers, the
/// live-block table), to subtract from the others' instruction counts.
struct Baseline;

impl BenchHeap for Baseline {
    fn alloc(&mut self, _size: usize) -> NonNull<u8> {
        NonNull::dangling()
    }
    fn dealloc(&mut self, ptr: NonNull<u8>, _size: usize) {
        black_box(ptr);
    }
}

/// A leaked, 4 KiB-aligned region, reused by every heap in turn.
fn region() -> *mut u8 {
    let layout = Layout::from_size_align(REGION, 4096).unwrap();
    // SAFETY: non-zero size; the region lives until the process exits.
    let region = unsafe { std::alloc::alloc(layout) };
    assert!(!region.is_null());
    region
}

/// 2,000 random blocks, then a random half freed: 1,000 live blocks between holes.
fn fragment(heap: &mut impl BenchHeap, rng: &mut Rng) -> Vec<(NonNull<u8>, usize)> {
    let mut blocks: Vec<_> = (0..2 * LIVE)
        .map(|_| {
            let size = rng.size();
            (heap.alloc(size), size)
        })
        .collect();
    for _ in 0..LIVE {
        let (ptr, size) = blocks.swap_remove(rng.below(blocks.len()));
        heap.dealloc(ptr, size);
    }
    blocks
}

/// Frees a random live block and allocates a new one of `size(rng)` bytes in its slot,
/// `pairs` times.
fn churn<H: BenchHeap>(
    heap: &mut H,
    live: &mut [(NonNull<u8>, usize)],
    rng: &mut Rng,
    pairs: usize,
    size: fn(&mut Rng) -> usize,
) {
    for _ in 0..pairs {
        let slot = rng.below(live.len());
        let (ptr, size_freed) = live[slot];
        heap.dealloc(ptr, size_freed);
        let size = size(rng);
        live[slot] = (black_box(heap.alloc(size)), size);
    }
}

#[inline(never)]
fn measure_churn<H: BenchHeap>(heap: &mut H, live: &mut [(NonNull<u8>, usize)], rng: &mut Rng, pairs: usize) {
    churn(heap, live, rng, pairs, Rng::size);
}

#[inline(never)]
fn measure_churn_uniform<H: BenchHeap>(heap: &mut H, live: &mut [(NonNull<u8>, usize)], rng: &mut Rng, pairs: usize) {
    churn(heap, live, rng, pairs, Rng::uniform_size);
}

/// Allocates and frees `size` bytes `pairs` times.
fn pairs_of<H: BenchHeap>(heap: &mut H, size: usize, pairs: usize) {
    for _ in 0..pairs {
        let ptr = black_box(heap.alloc(size));
        heap.dealloc(ptr, size);
    }
}

/// One named function per pair size, so callgrind can count each on its own.
macro_rules! measure_pairs {
    ($($name:ident = $size:expr),*) => {$(
        #[inline(never)]
        fn $name<H: BenchHeap>(heap: &mut H, _: &mut [(NonNull<u8>, usize)], _: &mut Rng, pairs: usize) {
            pairs_of(heap, $size, pairs)
        }
    )*};
}

measure_pairs!(
    measure_pair_16 = 16,
    measure_pair_256 = 256,
    measure_pair_4k = 4096,
    measure_pair_16k = 16384,
    measure_pair_64k = 65536
);

const SCENARIOS: usize = 7;

/// A timed loop: the heap, its live blocks, the generator, the number of pairs.
type Measure<H> = fn(&mut H, &mut [(NonNull<u8>, usize)], &mut Rng, usize);

/// The scenarios, each its own function so callgrind can count it separately.
fn scenarios<H: BenchHeap>() -> [(&'static str, Measure<H>); SCENARIOS] {
    [
        ("churn, 16 B..64 KiB log-uniform", measure_churn::<H>),
        ("churn, 16 B..64 KiB uniform", measure_churn_uniform::<H>),
        ("pair 16 B", measure_pair_16::<H>),
        ("pair 256 B", measure_pair_256::<H>),
        ("pair 4 KiB", measure_pair_4k::<H>),
        ("pair 16 KiB", measure_pair_16k::<H>),
        ("pair 64 KiB", measure_pair_64k::<H>),
    ]
}

/// Nanoseconds per pair of each scenario: a fresh heap over `region`, fragmented with
/// the same seed every time, then `pairs` timed pairs.
fn bench<H: BenchHeap>(region: *mut u8, new_heap: fn(*mut u8) -> H, pairs: usize) -> [f64; SCENARIOS] {
    // HEAP_BENCH_SCENARIO=<part of a name> runs only the matching scenarios.
    let filter = std::env::var("HEAP_BENCH_SCENARIO").unwrap_or_default();
    scenarios::<H>().map(|(name, measure)| {
        if !name.contains(filter.as_str()) {
            return f64::NAN;
        }
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut heap = new_heap(region);
        let mut live = fragment(&mut heap, &mut rng);
        let start = Instant::now();
        measure(&mut heap, &mut live, &mut rng, pairs);
        start.elapsed().as_nanos() as f64 / pairs as f64
    })
}

fn main() {
    let pairs = std::env::var("HEAP_BENCH_PAIRS").ok().and_then(|pairs| pairs.parse().ok()).unwrap_or(100_000);
    let region = region();
    // SAFETY: the region is leaked memory that only the heap of the current scenario uses.
    let new_heap = |region| unsafe { Heap::new(region, REGION) }.unwrap();
    // SAFETY: as above.
    let new_list = |region| unsafe { ListHeap::new(region, REGION) };
    // HEAP_BENCH_ONLY=ours|list|baseline runs one (for callgrind, one at a time).
    let only = std::env::var("HEAP_BENCH_ONLY").unwrap_or_default();
    if only == "baseline" {
        bench(region, |_| Baseline, pairs);
        return;
    }
    let ours = if only == "list" { [f64::NAN; SCENARIOS] } else { bench(region, new_heap, pairs) };
    let list = if only == "ours" { [f64::NAN; SCENARIOS] } else { bench(region, new_list, pairs) };
    println!(
        "malloc+free pairs, {LIVE} live fragmented blocks, {} MiB region, align {ALIGN}, {pairs} pairs",
        REGION >> 20
    );
    println!("| scenario | Heap ns/pair | linked_list_allocator ns/pair | ratio |");
    println!("|---|---:|---:|---:|");
    for (((name, _), ours), list) in scenarios::<Heap>().iter().zip(ours).zip(list) {
        println!("| {name} | {ours:.0} | {list:.0} | {:.1}x |", list / ours);
    }
    if only.is_empty() {
        // What the heap looks like after the churn: how fragmented "fragmented" is.
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut heap = new_heap(region);
        let mut live = fragment(&mut heap, &mut rng);
        measure_churn(&mut heap, &mut live, &mut rng, pairs);
        let live_bytes: usize = live.iter().map(|&(_, size)| size).sum();
        println!(
            "after the log-uniform churn: {} live blocks ({} KiB), {} free blocks",
            heap.live_blocks(),
            live_bytes >> 10,
            heap.free_block_count()
        );
    }
}
