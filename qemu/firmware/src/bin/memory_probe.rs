//! A library image of memory kernels for `qemu/tests/memory.rs`
//! (docs/abi/memory.md): the heaps, the TCM pool and `neuron_translate` exercised on
//! the device, on the regions and windows the simulated loader hands out.
//!
//! Every kernel runs on every core of the job and reports in u32 words (the output is
//! an int32 tensor): core c writes its words at `c * CORE_WORDS`, through the bulk copy
//! that is valid when several cores share the output. Addresses are reported raw, so
//! the host checks them against the loader's regions (docs/simulation.md).
//!
//! - `hbm_exhaustion`, `dataram_exhaustion`, `tcm_exhaustion` (int `size`): see
//!   [`Exhaustion`]; through `malloc` / `free`, `neuron_dataram_malloc` /
//!   `neuron_dataram_free`, `tcm_malloc` / `tcm_free`.
//! - `misuse`: the documented statuses of bad calls, and that they corrupt nothing;
//!   see [`misuse`] for its words.
//! - `translate_probe` (int64 tensor of framework addresses): per address, what
//!   `neuron_translate` returned and `neuron_translate_status` then said.
#![no_std]
#![no_main]

extern crate alloc;

use core::alloc::Layout;
use core::ffi::{c_int, c_void};
use core::hint::black_box;
use core::ptr;
use neuroncustomop::allocators::exports::{
    calloc, free, malloc, memalign, neuron_dataram_free, neuron_dataram_malloc, neuron_hbm_free, neuron_hbm_malloc,
    neuron_heap_status, posix_memalign, realloc,
};
use neuroncustomop::allocators::tcm::{TCM_POOL_SIZE, tcm_free, tcm_malloc, tcm_stats};
use neuroncustomop::allocators::{GRANULE, HeapId, HeapStats, heap_stats};
use neuroncustomop::multicore::get_cpu_id;
use neuroncustomop::translate::{neuron_translate, neuron_translate_status};
use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};

/// Output words per core.
const CORE_WORDS: usize = 128;
/// The kernel's own failure: the output tensor is too small for this core's words.
const OUTPUT_TOO_SMALL: KernelError = KernelError::Op(1);
/// The kernel's own failure: a size argument out of range (an exhaustion block below
/// [`GRANULE`] has no room for the tags; a misuse guard must fit the TCM pool twice).
const BAD_SIZE: KernelError = KernelError::Op(2);
/// The kernel's own failure: more addresses than fit in this core's words.
const TOO_MANY_ADDRESSES: KernelError = KernelError::Op(3);

/// This core's words, written into `out` at `core * CORE_WORDS`.
struct Words {
    values: [i32; CORE_WORDS],
    len: usize,
}

impl Words {
    /// Word 0 will hold how many words follow it.
    fn new() -> Words {
        Words { values: [0; CORE_WORDS], len: 1 }
    }

    fn push(&mut self, value: u32) {
        if let Some(slot) = self.values.get_mut(self.len) {
            *slot = value as i32;
        }
        self.len += 1;
    }

    fn push_address<T>(&mut self, pointer: *const T) {
        self.push(pointer.addr() as u32);
    }

    /// `neuron_heap_status()`.
    fn status(&mut self) {
        self.push(neuron_heap_status() as u32);
    }

    /// Whether `block` is null, then `neuron_heap_status()`.
    fn allocation(&mut self, block: *mut c_void) {
        self.push(u32::from(block.is_null()));
        self.status();
    }

    fn write_to(mut self, out: &mut Tensor<'_>) -> Result<(), KernelError> {
        if self.len > CORE_WORDS {
            return Err(OUTPUT_TOO_SMALL);
        }
        self.values[0] = (self.len - 1) as i32;
        out.tcm_to_tensor(&self.values, get_cpu_id() as usize * CORE_WORDS)?;
        Ok(())
    }
}

/// One of the allocators under test, through its C ABI.
struct Allocator {
    alloc: extern "C" fn(usize) -> *mut c_void,
    free: extern "C" fn(*mut c_void),
    stats: fn() -> HeapStats,
}

fn hbm_stats() -> HeapStats {
    heap_stats(HeapId::Hbm)
}

fn dataram_stats() -> HeapStats {
    heap_stats(HeapId::Dataram)
}

/// The HBM heap through the libc pair op authors call.
const HBM: Allocator = Allocator { alloc: malloc, free, stats: hbm_stats };
/// The dataram heap through its own pair.
const DATARAM: Allocator = Allocator { alloc: neuron_dataram_malloc, free: neuron_dataram_free, stats: dataram_stats };
/// The op's TCM pool.
const TCM: Allocator = Allocator { alloc: tcm_malloc, free: tcm_free, stats: tcm_stats };

/// What a live block holds while the test owns it: the block allocated before it, a
/// tag from its index, its size; the tag's complement is in its last aligned word.
#[repr(C)]
struct Block {
    previous: *mut Block,
    tag: u32,
    size: usize,
}

fn tag(index: u32) -> u32 {
    0xC0DE_0000 ^ index.wrapping_mul(0x9E37_79B9)
}

/// The last 4-byte-aligned word inside a block of `size` (>= 64) bytes.
fn last_word(block: *mut Block, size: usize) -> *mut u32 {
    block.cast::<u8>().wrapping_add((size & !3) - 4).cast()
}

/// Every block allocated so far, linked through the blocks themselves (newest first),
/// and what their addresses looked like.
struct Chain {
    head: *mut Block,
    blocks: u32,
    lowest: usize,
    highest_end: usize,
    /// End of the previous block: where first fit on a fresh heap puts the next one.
    previous_end: usize,
    misaligned: u32,
    not_adjacent: u32,
}

impl Chain {
    const EMPTY: Chain = Chain {
        head: ptr::null_mut(),
        blocks: 0,
        lowest: usize::MAX,
        highest_end: 0,
        previous_end: 0,
        misaligned: 0,
        not_adjacent: 0,
    };

    /// Allocates `size` bytes until `allocator` returns null; returns how many blocks
    /// it gave, and `neuron_heap_status()` after the null.
    fn fill(&mut self, allocator: &Allocator, size: usize) -> (u32, u32) {
        let mut count = 0;
        loop {
            let block = (allocator.alloc)(size).cast::<Block>();
            if block.is_null() {
                return (count, neuron_heap_status() as u32);
            }
            self.add(block, size);
            count += 1;
        }
    }

    fn add(&mut self, block: *mut Block, size: usize) {
        let address = block.addr();
        self.misaligned += u32::from(!address.is_multiple_of(GRANULE));
        self.not_adjacent += u32::from(self.blocks > 0 && address != self.previous_end);
        self.previous_end = address + size.next_multiple_of(GRANULE);
        self.lowest = self.lowest.min(address);
        self.highest_end = self.highest_end.max(self.previous_end);
        let tag = tag(self.blocks);
        // SAFETY: the allocator just handed out `size` >= 64 bytes at `block`; unaligned
        // writes are fine at any address, so a misaligned block is reported, not a fault.
        unsafe {
            block.write_unaligned(Block { previous: self.head, tag, size });
            last_word(block, size).write_unaligned(!tag);
        }
        self.head = block;
        self.blocks += 1;
    }

    /// Whether `block`, the chain's block number `index`, still holds its tags.
    fn intact(block: *mut Block, index: u32) -> bool {
        // SAFETY: `block` is a live block of the chain (see `add`).
        unsafe {
            let header = block.read_unaligned();
            header.tag == tag(index) && last_word(block, header.size).read_unaligned() == !tag(index)
        }
    }

    /// The block allocated before `block`.
    fn previous(block: *mut Block) -> *mut Block {
        // SAFETY: `block` is a live block of the chain.
        unsafe { ptr::addr_of!((*block).previous).read_unaligned() }
    }

    fn set_previous(block: *mut Block, previous: *mut Block) {
        // SAFETY: `block` is a live block of the chain.
        unsafe { ptr::addr_of_mut!((*block).previous).write_unaligned(previous) }
    }

    /// Frees every block, so that frees merge on both sides: first every other block
    /// (leaving live blocks between holes), then the rest, each between two holes.
    /// Returns how many blocks had lost their tags and how many frees were refused.
    fn free_all(&mut self, allocator: &Allocator) -> (u32, u32) {
        let (mut damaged, mut refused) = (0, 0);
        let mut release = |block: *mut Block| {
            (allocator.free)(block.cast());
            refused += u32::from(neuron_heap_status() != 0);
        };
        // Pass 1: free every second block, from the one before the newest, linking the
        // chain over each.
        let mut keep = self.head;
        let mut index = self.blocks.wrapping_sub(1);
        while !keep.is_null() {
            damaged += u32::from(!Chain::intact(keep, index));
            let victim = Chain::previous(keep);
            if victim.is_null() {
                break;
            }
            damaged += u32::from(!Chain::intact(victim, index - 1));
            let next = Chain::previous(victim);
            release(victim);
            Chain::set_previous(keep, next);
            keep = next;
            index = index.wrapping_sub(2);
        }
        // Pass 2: the kept blocks, checked again after their neighbours were freed.
        let mut block = self.head;
        let mut index = self.blocks.wrapping_sub(1);
        while !block.is_null() {
            damaged += u32::from(!Chain::intact(block, index));
            let previous = Chain::previous(block);
            release(block);
            block = previous;
            index = index.wrapping_sub(2);
        }
        *self = Chain::EMPTY;
        (damaged, refused)
    }
}

/// The words an exhaustion kernel reports, in this order.
struct Exhaustion {
    /// Blocks of `size` bytes allocated until the first null.
    blocks: u32,
    /// `neuron_heap_status()` after that null (1: out of memory).
    status: u32,
    /// Then 64-byte blocks until the next null: the rest of the heap, granule by granule.
    small_blocks: u32,
    /// `neuron_heap_status()` after that null.
    small_status: u32,
    /// The lowest block's address.
    lowest: u32,
    /// One past the highest block's last granule.
    highest_end: u32,
    /// Blocks not on a 64-byte boundary (both rounds).
    misaligned: u32,
    /// Blocks not right after the previous one (first fit on a fresh heap packs them;
    /// both rounds).
    not_adjacent: u32,
    /// Blocks whose tags changed before they were freed (overlap or corruption; both
    /// rounds).
    damaged: u32,
    /// Frees refused (a non-zero status; both rounds).
    refused: u32,
    /// Heap statistics once everything was freed: live blocks, free blocks (1 when it
    /// coalesced back), free bytes, arena bytes.
    after: HeapStats,
    /// Recovery: blocks of `size` bytes allocated again until the first null.
    blocks_again: u32,
    /// The lowest of those blocks.
    lowest_again: u32,
    /// Live blocks once those were freed too.
    live_at_end: u32,
}

impl Exhaustion {
    /// Exhausts `allocator` with `size`-byte blocks, then with 64-byte blocks; frees
    /// everything; checks the heap coalesced; exhausts and frees it again.
    fn run(allocator: &Allocator, size: usize) -> Exhaustion {
        let mut chain = Chain::EMPTY;
        let (blocks, status) = chain.fill(allocator, size);
        let (small_blocks, small_status) = chain.fill(allocator, GRANULE);
        let (lowest, highest_end) = (chain.lowest as u32, chain.highest_end as u32);
        let (misaligned, not_adjacent) = (chain.misaligned, chain.not_adjacent);
        let (damaged, refused) = chain.free_all(allocator);
        let after = (allocator.stats)();
        let (blocks_again, _) = chain.fill(allocator, size);
        let lowest_again = chain.lowest as u32;
        let (misaligned_again, not_adjacent_again) = (chain.misaligned, chain.not_adjacent);
        let (damaged_again, refused_again) = chain.free_all(allocator);
        Exhaustion {
            blocks,
            status,
            small_blocks,
            small_status,
            lowest,
            highest_end,
            misaligned: misaligned + misaligned_again,
            not_adjacent: not_adjacent + not_adjacent_again,
            damaged: damaged + damaged_again,
            refused: refused + refused_again,
            after,
            blocks_again,
            lowest_again,
            live_at_end: (allocator.stats)().live_blocks as u32,
        }
    }

    fn words(&self) -> Words {
        let mut words = Words::new();
        let after = &self.after;
        for value in [
            self.blocks,
            self.status,
            self.small_blocks,
            self.small_status,
            self.lowest,
            self.highest_end,
            self.misaligned,
            self.not_adjacent,
            self.damaged,
            self.refused,
            after.live_blocks as u32,
            after.free_blocks as u32,
            after.free_bytes as u32,
            after.arena_bytes as u32,
            self.blocks_again,
            self.lowest_again,
            self.live_at_end,
        ] {
            words.push(value);
        }
        words
    }
}

/// (int size) -> this core's [`Exhaustion`] words for `allocator`.
fn exhaustion<'a>(args: &'a Args, allocator: &Allocator) -> Result<Tensor<'a>, KernelError> {
    let size = usize::try_from(args.int()?).map_err(|_| BAD_SIZE)?;
    let mut out = args.output()?;
    if size < GRANULE {
        return Err(BAD_SIZE);
    }
    // Opaque, as `CAbi`: the test's blocks must really be allocated.
    Exhaustion::run(black_box(allocator), size).words().write_to(&mut out)?;
    Ok(out)
}

fn hbm_exhaustion(args: &Args) -> Result<Tensor<'_>, KernelError> {
    exhaustion(args, &HBM)
}

fn dataram_exhaustion(args: &Args) -> Result<Tensor<'_>, KernelError> {
    exhaustion(args, &DATARAM)
}

fn tcm_exhaustion(args: &Args) -> Result<Tensor<'_>, KernelError> {
    exhaustion(args, &TCM)
}

/// The allocators' C ABI through opaque function pointers.
///
/// Called by name, `malloc`, `calloc`, `realloc` and `free` are library functions to
/// LLVM: it deletes `free(NULL)`, a second `free` of a pointer, and a `malloc` whose
/// block is only written and freed, all legal for a correct program. The misuse tests
/// are not correct programs on purpose, so they call the runtime through pointers
/// LLVM cannot see through.
struct CAbi {
    malloc: extern "C" fn(usize) -> *mut c_void,
    calloc: extern "C" fn(usize, usize) -> *mut c_void,
    realloc: extern "C" fn(*mut c_void, usize) -> *mut c_void,
    memalign: extern "C" fn(usize, usize) -> *mut c_void,
    posix_memalign: unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> c_int,
    free: extern "C" fn(*mut c_void),
    neuron_hbm_malloc: extern "C" fn(usize) -> *mut c_void,
    neuron_hbm_free: extern "C" fn(*mut c_void),
    neuron_dataram_malloc: extern "C" fn(usize) -> *mut c_void,
    neuron_dataram_free: extern "C" fn(*mut c_void),
    tcm_malloc: extern "C" fn(usize) -> *mut c_void,
    tcm_free: extern "C" fn(*mut c_void),
}

impl CAbi {
    fn opaque() -> CAbi {
        black_box(CAbi {
            malloc,
            calloc,
            realloc,
            memalign,
            posix_memalign,
            free,
            neuron_hbm_malloc,
            neuron_hbm_free,
            neuron_dataram_malloc,
            neuron_dataram_free,
            tcm_malloc,
            tcm_free,
        })
    }
}

/// Fills `len` bytes at `block` with `byte`.
fn fill(block: *mut c_void, len: usize, byte: u8) {
    // SAFETY: callers pass a live block of at least `len` bytes.
    unsafe { block.cast::<u8>().write_bytes(byte, len) }
}

/// How many of the `len` bytes at `block` are not `byte`.
fn differing(block: *const c_void, len: usize, byte: u8) -> u32 {
    // SAFETY: callers pass a live block of at least `len` bytes.
    let bytes = unsafe { core::slice::from_raw_parts(block.cast::<u8>(), len) };
    bytes.iter().filter(|&&b| b != byte).count() as u32
}

/// A fixed sequence on the HBM heap whose addresses first fit dictates: 100, 5000 and
/// 64 bytes, free the 5000, then 1000 bytes (into the hole's high end). Pushes the four
/// addresses, frees everything and returns the first (on an empty heap: the arena's
/// start).
fn reference_pattern(c: &CAbi, words: &mut Words) -> *mut c_void {
    let first = (c.malloc)(100);
    let hole = (c.malloc)(5000);
    let third = (c.malloc)(64);
    (c.free)(hole);
    let fourth = (c.malloc)(1000);
    for block in [first, hole, third, fourth] {
        words.push_address(block);
    }
    for block in [first, third, fourth] {
        (c.free)(block);
    }
    first
}

/// Pushes whether `stats` is an empty heap: no live block, one free block spanning the
/// arena.
fn push_coalesced(words: &mut Words, stats: HeapStats) {
    words.push(u32::from(stats.live_blocks == 0 && stats.free_blocks == 1 && stats.free_bytes == stats.arena_bytes));
}

/// (int guard) -> every bad call of docs/abi/memory.md §1.5 and §2, between guard
/// blocks on all three allocators (`4 * guard` bytes of HBM, `guard` bytes of dataram
/// and of TCM, the first blocks of each), on a heap first and last put through the same
/// [`reference_pattern`]. Every call goes through [`CAbi`]. Words, in order (`null`: 1
/// when the call returned null; `status`: `neuron_heap_status()` after the call):
///
/// 1. the reference pattern's four addresses;
/// 2. calloc(0x10000, 0x10001): null, status; calloc(usize::MAX, 2): null, status;
///    calloc(0, 16): null, status; malloc(usize::MAX), malloc(isize::MAX + 1),
///    malloc(isize::MAX), malloc(8 MiB): null, status each; memalign(96, 64): null,
///    status;
/// 3. posix_memalign with alignment 2: return value, status, `*out` untouched (1);
///    with size usize::MAX: the same three; with alignment 4096 and 100 bytes: return
///    value, status, `*out` a multiple of 4096 (1);
/// 4. double free: status after the first free, after the second;
/// 5. interior pointers of a live block: free(p + 64), free(p + 1),
///    neuron_hbm_free(p + 4): status each; bytes of p changed; free(p): status;
/// 6. foreign pointers: free(a stack address), free(the HBM arena start - 64, in the
///    metadata), free(the output tensor's data), free(the HBM arena's end): status
///    each; free(null) right after a failure: status;
/// 7. never allocated: free(the arena start + 4 MiB, in free space): status;
/// 8. the wrong heap: neuron_hbm_free(dataram block), neuron_dataram_free(HBM block),
///    tcm_free(HBM block), tcm_free(dataram block), free(dataram block), free(HBM
///    block): status each;
/// 9. TCM: tcm_malloc(100): null, status; tcm_free it twice: status each;
///    tcm_malloc(usize::MAX), tcm_malloc(pool - guard + 1), tcm_malloc(pool - guard):
///    null, status each; tcm_free of the last: status;
/// 10. realloc(p, usize::MAX): null, status; bytes of p changed; realloc(p, 300):
///    null, status; bytes of its first 100 changed; free: status;
/// 11. calloc reuses a dirty block: whether calloc(8, 64) returned the 512-byte block
///    just freed (1); its non-zero bytes;
/// 12. corruption: free(x) while its free right neighbour's length was overwritten:
///    status; x's bytes changed; once restored, free(x), free(z): status each;
/// 13. the global allocator: the address of a 100-byte block aligned to 4096;
/// 14. the guards: bytes changed in the HBM, dataram and TCM guards; then each heap
///    and the TCM pool coalesced back to one free block (1 each);
/// 15. the reference pattern's four addresses again.
fn misuse(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let guard = usize::try_from(args.int()?).map_err(|_| BAD_SIZE)?;
    let mut out = args.output()?;
    if !(GRANULE..=TCM_POOL_SIZE / 2).contains(&guard) {
        return Err(BAD_SIZE);
    }
    let output_data = out.data_ptr();
    let c = CAbi::opaque();
    let mut words = Words::new();
    // 1.
    let arena_start = reference_pattern(&c, &mut words);
    let (hbm_guard, dataram_guard, tcm_guard) = ((c.malloc)(4 * guard), (c.neuron_dataram_malloc)(guard), (c.tcm_malloc)(guard));
    for (block, len, byte) in [(hbm_guard, 4 * guard, 0x11), (dataram_guard, guard, 0x22), (tcm_guard, guard, 0x33)] {
        fill(block, len, byte);
    }
    // 2.
    words.allocation((c.calloc)(0x1_0000, 0x1_0001));
    words.allocation((c.calloc)(usize::MAX, 2));
    let empty = (c.calloc)(0, 16);
    words.allocation(empty);
    (c.free)(empty);
    for size in [usize::MAX, isize::MAX as usize + 1, isize::MAX as usize, 8 << 20] {
        words.allocation((c.malloc)(size));
    }
    words.allocation((c.memalign)(96, 64));
    // 3.
    let sentinel = 0x5E17_1E00 as *mut c_void;
    for (align, size) in [(2, 64), (64, usize::MAX)] {
        let mut block = sentinel;
        // SAFETY: `block` is a valid out-parameter.
        words.push(unsafe { (c.posix_memalign)(&mut block, align, size) } as u32);
        words.status();
        words.push(u32::from(block == sentinel));
    }
    let mut block = sentinel;
    // SAFETY: as above.
    words.push(unsafe { (c.posix_memalign)(&mut block, 4096, 100) } as u32);
    words.status();
    words.push(u32::from(block.addr().is_multiple_of(4096)));
    (c.free)(block);
    // 4.
    let block = (c.malloc)(200);
    (c.free)(block);
    words.status();
    (c.free)(block);
    words.status();
    // 5.
    let block = (c.malloc)(256);
    fill(block, 256, 0x44);
    for (interior, release) in [(64, c.free), (1, c.free), (4, c.neuron_hbm_free)] {
        release(block.cast::<u8>().wrapping_add(interior).cast());
        words.status();
    }
    words.push(differing(block, 256, 0x44));
    (c.free)(block);
    words.status();
    // 6.
    let arena_end = arena_start.cast::<u8>().wrapping_add(hbm_stats().arena_bytes);
    let local = 0u32;
    for foreign in [
        ptr::addr_of!(local).cast_mut().cast::<u8>(),
        arena_start.cast::<u8>().wrapping_sub(64),
        output_data,
        arena_end,
    ] {
        (c.free)(foreign.cast());
        words.status();
    }
    (c.free)(ptr::null_mut());
    words.status();
    // 7.
    (c.free)(arena_start.cast::<u8>().wrapping_add(4 << 20).cast());
    words.status();
    // 8.
    let (dataram_block, hbm_block) = ((c.neuron_dataram_malloc)(128), (c.neuron_hbm_malloc)(128));
    (c.neuron_hbm_free)(dataram_block);
    words.status();
    (c.neuron_dataram_free)(hbm_block);
    words.status();
    (c.tcm_free)(hbm_block);
    words.status();
    (c.tcm_free)(dataram_block);
    words.status();
    (c.free)(dataram_block);
    words.status();
    (c.free)(hbm_block);
    words.status();
    // 9.
    let block = (c.tcm_malloc)(100);
    words.allocation(block);
    (c.tcm_free)(block);
    words.status();
    (c.tcm_free)(block);
    words.status();
    words.allocation((c.tcm_malloc)(usize::MAX));
    words.allocation((c.tcm_malloc)(TCM_POOL_SIZE - guard + 1));
    let rest = (c.tcm_malloc)(TCM_POOL_SIZE - guard);
    words.allocation(rest);
    (c.tcm_free)(rest);
    words.status();
    // 10.
    let block = (c.malloc)(100);
    fill(block, 100, 0x55);
    words.allocation((c.realloc)(block, usize::MAX));
    words.push(differing(block, 100, 0x55));
    let grown = (c.realloc)(block, 300);
    words.allocation(grown);
    words.push(differing(grown, 100, 0x55));
    (c.free)(grown);
    words.status();
    // 11.
    let dirty = (c.malloc)(512);
    fill(dirty, 512, 0xFF);
    (c.free)(dirty);
    let zeroed = (c.calloc)(8, 64);
    words.push(u32::from(zeroed == dirty));
    words.push(differing(zeroed, 512, 0));
    (c.free)(zeroed);
    // 12. Three adjacent one-granule blocks; the middle one freed, its length (the
    // first word of a free block) overwritten, as a write after free would.
    let [x, y, z] = [(c.malloc)(64), (c.malloc)(64), (c.malloc)(64)];
    fill(x, 64, 0x66);
    (c.free)(y);
    let length = y.cast::<u32>();
    // SAFETY: `y` was a 64-byte block of the HBM heap, which is RAM; this is the write
    // after free the heap must catch, and it is undone below.
    let kept = unsafe { length.read() };
    // SAFETY: as above.
    unsafe { length.write(kept ^ 0xDEAD) };
    (c.free)(x);
    words.status();
    words.push(differing(x, 64, 0x66));
    // SAFETY: as above.
    unsafe { length.write(kept) };
    (c.free)(x);
    words.status();
    (c.free)(z);
    words.status();
    // 13.
    let layout = Layout::from_size_align(100, 4096).map_err(|_| BAD_SIZE)?;
    // SAFETY: a non-zero size; the block is freed with the same layout.
    let aligned = black_box(unsafe { alloc::alloc::alloc(layout) });
    words.push_address(aligned);
    // SAFETY: from `alloc` with `layout`.
    unsafe { alloc::alloc::dealloc(aligned, layout) };
    // 14.
    words.push(differing(hbm_guard, 4 * guard, 0x11));
    words.push(differing(dataram_guard, guard, 0x22));
    words.push(differing(tcm_guard, guard, 0x33));
    (c.free)(hbm_guard);
    (c.neuron_dataram_free)(dataram_guard);
    (c.tcm_free)(tcm_guard);
    push_coalesced(&mut words, hbm_stats());
    push_coalesced(&mut words, dataram_stats());
    push_coalesced(&mut words, tcm_stats());
    // 15.
    reference_pattern(&c, &mut words);
    words.write_to(&mut out)?;
    Ok(out)
}

/// (int64 tensor of framework addresses) -> per address, the device pointer
/// `neuron_translate` returned (0 for null) and `neuron_translate_status()` after it.
fn translate_probe(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let addresses = args.tensor()?;
    let mut out = args.output()?;
    let mut words = Words::new();
    let mut buffer = [0i64; (CORE_WORDS - 1) / 2];
    let buffer = buffer.get_mut(..addresses.numel()).ok_or(TOO_MANY_ADDRESSES)?;
    addresses.tensor_to_tcm(buffer, 0)?;
    for &address in buffer.iter() {
        words.push_address(neuron_translate(address as u64));
        words.push(neuron_translate_status() as u32);
    }
    words.write_to(&mut out)?;
    Ok(out)
}

neuroncustomop::kernels! {
    fn hbm_exhaustion,
    fn dataram_exhaustion,
    fn tcm_exhaustion,
    fn misuse,
    fn translate_probe,
}
