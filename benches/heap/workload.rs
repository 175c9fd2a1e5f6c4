//! The heap benchmark's workload, shared by its host half (`benches/heap.rs`, time and
//! callgrind) and its device half (`qemu/firmware/src/bin/bench_heap.rs`, guest
//! instructions) through `#[path]`, so both measure the same sequence: the allocators,
//! the generator, the fragmented start and the scenarios. No `std`, no allocation.
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

use core::alloc::Layout;
use core::hint::black_box;
use core::ptr::NonNull;

use linked_list_allocator::Heap as ListHeap;
use neuroncustomop::allocators::Heap;

/// Bytes of the region each heap manages.
pub const REGION_BYTES: usize = 64 << 20;
/// Live blocks during the measured pairs.
pub const LIVE: usize = 1000;
/// Alignment of every block.
pub const ALIGN: usize = 64;
const MIN_SIZE: usize = 16;
const MAX_SIZE: usize = 64 << 10;
/// The generator's seed: every scenario of every allocator starts from it.
pub const SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// A block the workload holds: where, and the size it asked for.
pub type Block = (NonNull<u8>, usize);

/// A small deterministic generator (xorshift64*), so every allocator, on the host and
/// on the device, sees the same sequence.
pub struct Rng(pub u64);

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
    pub fn size(&mut self) -> usize {
        let (low, high) = (MIN_SIZE.ilog2(), MAX_SIZE.ilog2());
        let bits = low + (self.next() % u64::from(high - low)) as u32;
        (1 << bits) + self.below(1 << bits)
    }

    /// Uniform in `MIN_SIZE..=MAX_SIZE`: mostly large blocks (32 KiB on average).
    pub fn uniform_size(&mut self) -> usize {
        MIN_SIZE + self.below(MAX_SIZE - MIN_SIZE + 1)
    }
}

/// What the workload needs of an allocator.
pub trait BenchHeap {
    /// `size` bytes at [`ALIGN`]; the workload never exhausts the region.
    fn alloc(&mut self, size: usize) -> NonNull<u8>;
    /// Frees what `alloc(size)` returned.
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

/// No allocator at all: what the loops cost by themselves (random numbers, the
/// live-block table), to subtract from the others' counts.
pub struct Baseline;

impl BenchHeap for Baseline {
    fn alloc(&mut self, _size: usize) -> NonNull<u8> {
        NonNull::dangling()
    }
    fn dealloc(&mut self, ptr: NonNull<u8>, _size: usize) {
        black_box(ptr);
    }
}

/// Fills `blocks` (2 * [`LIVE`] of them) with random blocks, then frees a random half;
/// returns the [`LIVE`] live ones.
pub fn fragment<'a>(heap: &mut impl BenchHeap, rng: &mut Rng, blocks: &'a mut [Block]) -> &'a mut [Block] {
    assert_eq!(blocks.len(), 2 * LIVE);
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
    &mut blocks[..LIVE]
}

/// One churn pair: frees a random live block and allocates a block of `size(rng)`
/// bytes in its slot.
#[inline(always)]
pub fn churn_pair(heap: &mut impl BenchHeap, live: &mut [Block], rng: &mut Rng, size: fn(&mut Rng) -> usize) {
    let slot = rng.below(live.len());
    let (ptr, freed) = live[slot];
    heap.dealloc(ptr, freed);
    let new = size(rng);
    live[slot] = (black_box(heap.alloc(new)), new);
}

/// One pair: allocates `size` bytes and frees them at once.
#[inline(always)]
pub fn pair(heap: &mut impl BenchHeap, size: usize) {
    let ptr = black_box(heap.alloc(size));
    heap.dealloc(ptr, size);
}

/// What one scenario does per pair.
#[derive(Clone, Copy)]
pub enum Scenario {
    /// [`churn_pair`] with this size distribution.
    Churn(fn(&mut Rng) -> usize),
    /// [`pair`] of this many bytes.
    Pair(usize),
}

/// The scenarios: a short name (the device's `HEAP` lines), a title (the host's table,
/// docs/PERFORMANCE.md) and what each pair does.
pub const SCENARIOS: [(&str, &str, Scenario); 7] = [
    ("churn_log_uniform", "churn, 16 B..64 KiB log-uniform", Scenario::Churn(Rng::size)),
    ("churn_uniform", "churn, 16 B..64 KiB uniform", Scenario::Churn(Rng::uniform_size)),
    ("pair_16", "pair 16 B", Scenario::Pair(16)),
    ("pair_256", "pair 256 B", Scenario::Pair(256)),
    ("pair_4k", "pair 4 KiB", Scenario::Pair(4096)),
    ("pair_16k", "pair 16 KiB", Scenario::Pair(16384)),
    ("pair_64k", "pair 64 KiB", Scenario::Pair(65536)),
];
