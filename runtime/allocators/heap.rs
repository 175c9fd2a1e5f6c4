//! [`Heap`]: a first-fit allocator over one caller-given region, 64-byte granules,
//! with an address-ordered index that finds the lowest fitting free block in
//! O(log n) instead of walking a free list.
//!
//! # Design
//!
//! The arena is cut into [`GRANULE`]-byte granules (64 B), and blocks, live or free,
//! tile it; two free blocks are never adjacent (a free merges them). The free block
//! that reaches the arena's end, if any, is the *top* block (dlmalloc's "top chunk"):
//! it is just a granule index, `top`. Every other free block is *indexed*.
//!
//! Three bitmaps (one bit per granule, in `u32` words of 32 granules) mark the block
//! boundaries: `LiveStarts` (first granule of a live block), `LiveEnds` (last granule
//! of a live block, with a one-bit-per-word summary) and `FreeStarts` (first granule of
//! an indexed free block). An indexed free block also records its length in granules
//! in its own memory, in the first word of its first granule (header) and the second
//! word of its last granule (footer): that lets a free find and merge both neighbours
//! in O(1).
//!
//! Over the `FreeStarts` words sits a complete 4-ary max-tree: leaf w holds the length
//! of the longest free block starting in word w, an inner node the largest of its
//! children. The lowest indexed block of at least `k` granules is found top-down,
//! taking at each level the first child whose value is at least `k`: the leaf reached
//! is the first word in which such a block starts, and its free blocks are tried in
//! address order. When no indexed block fits, the top block, the highest of all, is
//! carved. Either way the block used is the lowest-address free block that fits: first
//! fit. The new block takes the *high* end of an indexed block (as K&R's `malloc`
//! does), so the free rest keeps its start and its leaf; it takes the low end of the
//! top block, which no tree node describes.
//!
//! | operation | cost (n granules, k granules in the block) |
//! |---|---|
//! | allocate | O(1) from the top block; else a descent of log4(n/32) levels (3 compares each at most) + the free blocks starting in one word + one leaf update |
//! | free | the block's end: its `LiveEnds` word, else the summary, O(1 + k/1024) words; O(1) merge; at most two leaf updates |
//! | leaf update | a rise climbs while above the parent (one load a level); a fall rescans the word's other free blocks (usually none, at most 15) and climbs while the old value was the parent's |
//! | statistics | `free_bytes`, `live_blocks`, `free_block_count`, `largest_free`: O(n/32), they read the bitmaps or the leaves (the hot paths keep no counters) |
//! | bad free | O(1) to refuse; naming it (double free or interior pointer) scans back to the enclosing block's start |
//! | metadata | 4 bits per granule (3 bitmaps + the mark's copy of `LiveStarts`) + 1 bit per 32 + 4/3 `u32` per tree leaf (a power of four >= n/32): 1.1–1.9 % of the arena |
//! | mark / give back | [`Heap::mark`]: O(1) on an empty heap, else a copy of n/32 words; [`Heap::give_back_since_mark`]: n/32 words read + one free per block taken since |
//!
//! # Freed and taken again
//! A kernel's scratch buffer is allocated, used and freed, and the next iteration asks
//! for the same size again. When a block is freed and the heap has not changed since it
//! was allocated, freeing it would restore exactly the state its allocation started
//! from, and the same request would then find the same block again (first fit is
//! deterministic). So such a free only *parks* the block: it stays marked live, and the
//! heap behaves as if it were free. The next allocation with the same size (in
//! granules) and alignment takes it back in a few instructions; any other operation
//! first gives it back for real (`return_parked`), so every result, error and
//! statistic is what the heap without parking gives. A second free of a parked block is
//! a [`HeapError::DoubleFree`], as it should be.
//!
//! With 1,000 live blocks of 16 B..64 KiB in a 64 MiB heap under churn a malloc+free
//! pair costs about 600 Xtensa instructions (QEMU), 10x fewer than
//! `linked_list_allocator`, which walks its free list on every allocation and every
//! free (`benches/heap.rs`); a block freed right after it was taken and asked for again
//! costs about 150 a pair, 2.3x to 10x fewer than that allocator (docs/PERFORMANCE.md).
//!
//! Limits: at most 2^26 granules (4 GiB) per heap; a larger region is used up to that
//! size. Free memory holds the free blocks' lengths: a write to a block after it was
//! freed can corrupt the heap. Such an overwrite is caught, as [`HeapError::Corrupted`],
//! when a header and footer disagree; not every overwrite can be.
//!
//! Errors never change the heap: every check runs before the first write.

use core::cmp::max;
use core::ptr::{self, NonNull};
use core::slice;

/// Every block starts on a multiple of this many bytes and spans whole granules.
pub const GRANULE: usize = 64;
/// Granules per bitmap word (the word is `u32`, the native width of the 32-bit core).
const WORD_BITS: u32 = u32::BITS;
/// The most granules one heap manages: 4 GiB. Keeps every length and granule index
/// comfortably inside `u32`.
pub const MAX_GRANULES: u32 = 1 << 26;

/// Why a heap operation failed. The heap is unchanged after any of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapError {
    /// No free block is large enough.
    OutOfMemory,
    /// The size is above `isize::MAX` (Rust's and C's object size limit), or `n * size`
    /// for `calloc`, or the size plus alignment slack, overflows.
    SizeOverflow,
    /// The alignment is not a power of two.
    InvalidAlignment,
    /// No live block starts at this address: it was freed already (double free) or
    /// never returned by this heap.
    DoubleFree,
    /// The address is inside the heap but not the first byte of a live block.
    NotBlockStart,
    /// The address is outside every heap that was asked.
    ForeignPointer,
    /// The region is null with a non-zero size, or wraps around the address space.
    InvalidRegion,
    /// The region cannot hold the metadata and one granule.
    RegionTooSmall,
    /// A free block's length, kept in free memory, was overwritten (a write after free).
    Corrupted,
}

impl HeapError {
    /// The status code the C ABI reports for this error (`neuron_heap_status`); 0 is
    /// success. Stable: documented in `docs/abi/memory.md`.
    pub const fn code(self) -> i32 {
        match self {
            HeapError::OutOfMemory => 1,
            HeapError::SizeOverflow => 2,
            HeapError::InvalidAlignment => 3,
            HeapError::DoubleFree => 4,
            HeapError::NotBlockStart => 5,
            HeapError::ForeignPointer => 6,
            HeapError::InvalidRegion => 7,
            HeapError::RegionTooSmall => 8,
            HeapError::Corrupted => 9,
        }
    }
}

/// The bitmaps: three of block boundaries, one bit per granule, and a summary of
/// `LiveEnds`, one bit per word (set when the word has a bit set), so that finding a
/// live block's end skips empty words 32 at a time; and `Held`, a copy of `LiveStarts`
/// taken by [`Heap::mark`], which [`Heap::give_back_since_mark`] compares against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bitmap {
    LiveStarts = 0,
    LiveEnds = 1,
    FreeStarts = 2,
    LiveEndWords = 3,
    Held = 4,
}

/// Index of the lowest set bit of `bits` (not 0).
///
/// LLVM 22 does not select the Xtensa NSA option's `nsau`: it expands `trailing_zeros`
/// to a population count of 15 instructions. On Xtensa the index therefore comes from
/// [`lowest_set_bit_by_remainder`] (7 instructions); elsewhere `trailing_zeros` is one.
#[inline(always)]
fn lowest_set_bit(bits: u32) -> u32 {
    debug_assert!(bits != 0);
    if cfg!(target_arch = "xtensa") { lowest_set_bit_by_remainder(bits) } else { bits.trailing_zeros() }
}

/// Index of the lowest set bit of `bits` (not 0): `2^i mod 37` differs for every `i`
/// below 32, so the isolated bit's remainder (one `remu`, the DIV32 option) indexes a
/// table. (The classic de Bruijn multiply is recognised by LLVM and turned back into
/// the slow `trailing_zeros`.)
#[inline(always)]
fn lowest_set_bit_by_remainder(bits: u32) -> u32 {
    /// `INDEX[2^i % 37] == i`.
    static INDEX: [u8; 37] = {
        let mut index = [0; 37];
        let mut bit = 0;
        while bit < 32 {
            index[((1u64 << bit) % 37) as usize] = bit as u8;
            bit += 1;
        }
        index
    };
    u32::from(INDEX[((bits & bits.wrapping_neg()) % 37) as usize])
}

/// The bits of a word at positions `from..=to` (`from <= to < 32`).
fn bits_between(from: u32, to: u32) -> u32 {
    (u32::MAX << from) & (u32::MAX >> (WORD_BITS - 1 - to))
}

/// The sizes of the metadata of a heap of `granules` granules.
///
/// The max-tree is 4-ary (half the levels of a binary tree, for a few more compares
/// per level) and complete: `leaves` is a power of four >= `words`, node 0 the root,
/// node i's children `4i + 1 ..= 4i + 4`, leaf w at `first_leaf + w`.
#[derive(Debug, Clone, Copy)]
struct MetadataLayout {
    /// Words in each bitmap.
    words: u32,
    /// Leaves of the tree, 0 for no words (the empty heap has no metadata at all).
    leaves: u32,
    /// Index of leaf 0: the number of inner nodes, `(leaves - 1) / 3`.
    first_leaf: u32,
}

impl MetadataLayout {
    const fn for_granules(granules: u32) -> MetadataLayout {
        let words = granules.div_ceil(WORD_BITS);
        let mut leaves = 1;
        while leaves < words {
            leaves *= 4;
        }
        let leaves = if words == 0 { 0 } else { leaves };
        MetadataLayout { words, leaves, first_leaf: leaves.saturating_sub(1) / 3 }
    }

    /// Nodes in the tree.
    const fn nodes(self) -> usize {
        self.first_leaf as usize + self.leaves as usize
    }

    /// Words in the `LiveEndWords` summary.
    const fn summary_words(self) -> usize {
        self.words.div_ceil(WORD_BITS) as usize
    }

    /// Size of the metadata in `u32` words: the bitmaps, the summary and the tree.
    const fn u32_words(self) -> usize {
        4 * self.words as usize + self.summary_words() + self.nodes()
    }
}

/// `u32` words of external metadata [`Heap::with_metadata`] needs for an arena of
/// `arena_bytes` (counted in whole granules, at most [`MAX_GRANULES`]). `const` so it
/// can size a `static` buffer.
pub const fn metadata_words(arena_bytes: usize) -> usize {
    let granules = arena_bytes / GRANULE;
    let granules = if granules > MAX_GRANULES as usize { MAX_GRANULES } else { granules as u32 };
    MetadataLayout::for_granules(granules).u32_words()
}

/// What [`Heap::give_back_since_mark`] freed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GivenBack {
    /// Bytes of the blocks freed.
    pub bytes: usize,
    /// Blocks freed.
    pub blocks: usize,
    /// Blocks taken since the mark that are still live: the metadata was found
    /// inconsistent before they could be freed.
    pub kept: usize,
    /// The metadata was inconsistent and no block was held at the mark, so the heap was
    /// rebuilt empty (the blocks freed before that are counted; the rest were dropped
    /// with the old metadata).
    pub rebuilt: bool,
}

/// What follows a range being freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RightNeighbour {
    /// A live block, or the arena's end.
    Live,
    /// An indexed free block of this many granules.
    Free(u32),
    /// The top block.
    Top,
}

/// How a freed range merges with its free neighbours, checked before anything changes.
#[derive(Debug, Clone, Copy)]
struct Merge {
    /// First granule of the merged free block (the left neighbour's, if merged).
    first: u32,
    /// First granule of the range being freed.
    released: u32,
    /// One past the range being freed: where the right neighbour starts.
    end: u32,
    /// Whether the left neighbour is a free block that absorbs the range.
    left: bool,
    /// What follows the range.
    right: RightNeighbour,
}

/// Where a heap's arena and metadata go, `(arena, granules, metadata)`, as its
/// constructor checked them; `None` for the empty heap.
pub(super) type Placement = Option<(*mut u8, u32, *mut u32)>;

/// A first-fit heap of 64-byte-aligned blocks over one region. See the module docs.
///
/// ```
/// use neuroncustomop::allocators::Heap;
/// let mut region = vec![0u8; 64 * 1024];
/// // SAFETY: `region` outlives `heap` and nothing else touches it meanwhile.
/// let mut heap = unsafe { Heap::new(region.as_mut_ptr(), region.len()) }.unwrap();
/// let a = heap.allocate(100, 64).unwrap();
/// let b = heap.allocate(100, 64).unwrap();
/// assert_eq!(a.as_ptr() as usize % 64, 0);
/// assert_eq!(b.as_ptr() as usize - a.as_ptr() as usize, 128); // first fit: right after `a`
/// heap.free(a.as_ptr()).unwrap();
/// heap.free(b.as_ptr()).unwrap();
/// assert_eq!(heap.free_block_count(), 1);
/// ```
#[derive(Debug)]
pub struct Heap {
    /// Granule 0.
    arena: *mut u8,
    /// Granules in the arena.
    granules: u32,
    layout: MetadataLayout,
    /// The bitmaps, in `Bitmap` order (`layout.words` words each, the summary
    /// `layout.summary_words()`), then the tree (`layout.nodes()` words), as consecutive
    /// `u32` arrays.
    bitmaps: [*mut u32; 5],
    tree: *mut u32,
    /// First granule of the top block; `granules` when there is none.
    top: u32,
    /// The block the last operation allocated, while nothing else has changed since:
    /// freeing it parks it (module docs, "Freed and taken again").
    /// Null when the last change was something else. (Raw pointers with null for none,
    /// not `Option`s: one load and one compare on the hot paths.)
    last_taken: *mut u8,
    /// A parked block: free for every purpose but still marked live; or null. Never
    /// set together with `last_taken`.
    parked: *mut u8,
    /// The alignment asked for when `last_taken` or `parked` was allocated.
    taken_align: usize,
    /// The parked block's granules (set when it is parked).
    parked_count: u32,
    /// No block was live at the last [`Heap::mark`] (or there was none), so the `Held`
    /// bitmap is not consulted: marking an empty heap costs no copy.
    held_none: bool,
}

impl Heap {
    /// A heap with no memory: every allocation fails with [`HeapError::OutOfMemory`].
    pub const fn empty() -> Heap {
        Heap {
            arena: ptr::null_mut(),
            granules: 0,
            layout: MetadataLayout::for_granules(0),
            bitmaps: [NonNull::dangling().as_ptr(); 5],
            tree: NonNull::dangling().as_ptr(),
            top: 0,
            last_taken: ptr::null_mut(),
            parked: ptr::null_mut(),
            taken_align: 0,
            parked_count: 0,
            held_none: true,
        }
    }

    /// A heap over `size` bytes at `region`, keeping its metadata at the region's start
    /// (1.1–1.9 % of it). A `size` of 0 gives [`Heap::empty`].
    ///
    /// # Errors
    /// [`HeapError::InvalidRegion`] for a null region or one that wraps around,
    /// [`HeapError::RegionTooSmall`] when not even one granule fits beside the metadata.
    ///
    /// # Safety
    /// `region..region + size` is memory this heap alone may read and write for as long
    /// as it (or any block it handed out) is used.
    pub unsafe fn new(region: *mut u8, size: usize) -> Result<Heap, HeapError> {
        let mut heap = Heap::empty();
        // SAFETY: forwarded from this function's contract.
        unsafe { heap.build_in_place(Heap::place_in_region(region, size)) }?;
        Ok(heap)
    }

    /// A heap whose arena is exactly the granules of `arena..arena + size` (rounded
    /// inwards to 64 bytes) and whose metadata lives in `metadata`, so the arena loses
    /// nothing to bookkeeping. Size `metadata` with [`metadata_words`].
    ///
    /// # Errors
    /// As [`Heap::new`]; [`HeapError::RegionTooSmall`] also when `metadata` is null or
    /// `metadata_len` is smaller than [`metadata_words`] of the arena,
    /// [`HeapError::InvalidRegion`] when `metadata` is not 4-byte aligned.
    ///
    /// # Safety
    /// As [`Heap::new`] for the arena; `metadata..metadata + metadata_len` is 4-byte
    /// aligned memory this heap alone uses, as long as the heap lives.
    pub unsafe fn with_metadata(
        arena: *mut u8,
        size: usize,
        metadata: *mut u32,
        metadata_len: usize,
    ) -> Result<Heap, HeapError> {
        let mut heap = Heap::empty();
        let placement = Heap::place_with_metadata(arena, size, metadata, metadata_len);
        // SAFETY: forwarded from this function's contract.
        unsafe { heap.build_in_place(placement) }?;
        Ok(heap)
    }

    /// Where [`Heap::new`] puts the arena and the metadata of a heap over `size` bytes
    /// at `region`: the checks, without building anything. Out of line: `init_heaps`
    /// places two heaps.
    #[inline(never)]
    pub(super) fn place_in_region(region: *mut u8, size: usize) -> Result<Placement, HeapError> {
        if size == 0 {
            return Ok(None);
        }
        let (first, total) = granule_span(region, size)?;
        let total = total.min(MAX_GRANULES);
        let metadata_granules = metadata_granules(total);
        let granules = total.saturating_sub(metadata_granules);
        if granules == 0 {
            return Err(HeapError::RegionTooSmall);
        }
        // `first` is `region` rounded up to a granule, and the metadata plus `granules`
        // granules fit in `total` granules from there, all inside the region
        // (`granule_span`), because the metadata of `granules <= total` granules is no
        // larger than that of `total`.
        let arena = first.wrapping_add(metadata_granules as usize * GRANULE);
        Ok(Some((arena, granules, first.cast::<u32>())))
    }

    /// Where [`Heap::with_metadata`] puts the arena: its checks, without building
    /// anything.
    pub(super) fn place_with_metadata(
        arena: *mut u8,
        size: usize,
        metadata: *mut u32,
        metadata_len: usize,
    ) -> Result<Placement, HeapError> {
        if size == 0 {
            return Ok(None);
        }
        let (first, granules) = granule_span(arena, size)?;
        let granules = granules.min(MAX_GRANULES);
        if !metadata.is_aligned() {
            return Err(HeapError::InvalidRegion);
        }
        if granules == 0 || metadata.is_null() || metadata_len < MetadataLayout::for_granules(granules).u32_words() {
            return Err(HeapError::RegionTooSmall);
        }
        // `granule_span` keeps `granules` granules from `first` inside the arena, and the
        // metadata buffer holds the layout (checked above).
        Ok(Some((first, granules, metadata)))
    }

    /// Makes this heap the one `placement` describes, in place (a `Heap` is 18 words,
    /// which every move of one copies): for `Some((arena, granules, metadata))`, the
    /// metadata initialised for `granules` (> 0) granules at `arena`, the whole arena the
    /// top block (the arena is not written); for `None` or an error, the empty heap, and
    /// the error returned.
    ///
    /// # Safety
    /// A placement from [`Heap::place_in_region`] or [`Heap::place_with_metadata`], whose
    /// memory (the arena's granules, the metadata's words) this heap alone may use for as
    /// long as it (or any block it handed out) is used.
    #[inline(never)]
    pub(super) unsafe fn build_in_place(&mut self, placement: Result<Placement, HeapError>) -> Result<(), HeapError> {
        let (arena, granules, metadata) = match placement {
            Ok(Some(placement)) => placement,
            refused => {
                *self = Heap::empty();
                return refused.map(drop);
            }
        };
        let layout = MetadataLayout::for_granules(granules);
        // SAFETY: the caller gives us these words.
        unsafe { slice::from_raw_parts_mut(metadata, layout.u32_words()) }.fill(0);
        let words = layout.words as usize;
        // Offsets inside the metadata buffer, so `wrapping_add` stays in bounds.
        let summary = layout.summary_words();
        let bitmaps = [0, words, 2 * words, 3 * words, 3 * words + summary].map(|at| metadata.wrapping_add(at));
        let tree = metadata.wrapping_add(4 * words + summary);
        *self = Heap {
            arena,
            granules,
            layout,
            bitmaps,
            tree,
            top: 0,
            last_taken: ptr::null_mut(),
            parked: ptr::null_mut(),
            taken_align: 0,
            parked_count: 0,
            held_none: true,
        };
        Ok(())
    }

    /// Allocates at least `size` bytes at a multiple of `align` (and always of 64):
    /// the lowest-address free block that fits. `size` 0 takes one granule, so the
    /// pointer is unique and can be freed.
    ///
    /// For `align` above 64 the search asks for `size + align - 64` bytes so that an
    /// aligned start is guaranteed inside the block found; the slack stays free.
    ///
    /// Within the block found, the new block takes the high end (as K&R's `malloc`
    /// does), so the free block keeps its start and its place in the index; only the
    /// top block is used from its low end.
    ///
    /// # Errors
    /// [`HeapError::InvalidAlignment`], [`HeapError::SizeOverflow`],
    /// [`HeapError::OutOfMemory`], [`HeapError::Corrupted`].
    pub fn allocate(&mut self, size: usize, align: usize) -> Result<NonNull<u8>, HeapError> {
        if !self.parked.is_null() {
            return self.allocate_with_parked(size, align);
        }
        if !align.is_power_of_two() {
            return Err(HeapError::InvalidAlignment);
        }
        let count = granules_for(size)?;
        // A failed allocation changes nothing, so `last_taken` may stay; a successful one
        // replaces it below.
        let align_granules = (align / GRANULE).max(1);
        let search = count.checked_add(align_granules - 1).ok_or(HeapError::SizeOverflow)?;
        if search > self.largest_free_granules() as usize {
            return Err(HeapError::OutOfMemory);
        }
        let (count, search) = (count as u32, search as u32);
        let first = if search <= self.largest_indexed() {
            let (free, length) = self.find_free_block(search)?;
            // The high end of the block: its start, where the index keeps it, stays.
            let last_fit = free + length - count;
            let first = if align > GRANULE { last_fit - self.misalignment(last_fit, align) } else { last_fit };
            self.claim(free, length, first, count);
            first
        } else {
            self.claim_top(align, count)
        };
        self.set_bit(Bitmap::LiveStarts, first);
        self.set_live_end(first + count - 1);
        let block = self.granule_ptr(first);
        (self.last_taken, self.taken_align) = (block.as_ptr(), align);
        Ok(block)
    }

    /// [`Heap::allocate`] with a block parked: the same request takes it back, any
    /// other gives it back first. Out of line, so that the call in it does not cost the
    /// search registers.
    #[inline(never)]
    fn allocate_with_parked(&mut self, size: usize, align: usize) -> Result<NonNull<u8>, HeapError> {
        if !align.is_power_of_two() {
            return Err(HeapError::InvalidAlignment);
        }
        if self.parked_count as usize == granules_for(size)? && self.taken_align == align {
            // The same request in the same state: the same block (module docs).
            self.last_taken = core::mem::replace(&mut self.parked, ptr::null_mut());
            // SAFETY: a block this heap returned: inside the arena, not null.
            return Ok(unsafe { NonNull::new_unchecked(self.last_taken) });
        }
        self.return_parked()?;
        self.allocate(size, align)
    }

    /// Allocates `count * size` bytes, zeroed, at 64-byte alignment (`calloc`).
    ///
    /// # Errors
    /// [`HeapError::SizeOverflow`] when `count * size` overflows, else as [`Heap::allocate`].
    pub fn allocate_zeroed(&mut self, count: usize, size: usize) -> Result<NonNull<u8>, HeapError> {
        let bytes = count.checked_mul(size).ok_or(HeapError::SizeOverflow)?;
        let block = self.allocate(bytes, GRANULE)?;
        // SAFETY: the block is live, exclusively ours, and spans at least `bytes` bytes.
        unsafe { block.as_ptr().write_bytes(0, bytes) };
        Ok(block)
    }

    /// Frees the live block starting at `block` and returns its size in bytes.
    ///
    /// # Errors
    /// [`HeapError::ForeignPointer`] outside the arena, [`HeapError::NotBlockStart`]
    /// inside a live block, [`HeapError::DoubleFree`] in free space,
    /// [`HeapError::Corrupted`] when a neighbour's length was overwritten.
    pub fn free(&mut self, block: *mut u8) -> Result<usize, HeapError> {
        if block == self.last_taken {
            return self.park(block);
        }
        let parked = self.parked;
        if !parked.is_null() {
            return self.free_with_parked(block);
        }
        // Null, as `parked` is (a register already holding zero).
        self.last_taken = parked;
        let first = self.live_block_at(block)?;
        let end = self.live_block_end(first);
        let merge = self.plan_merge(first, end, true)?;
        self.clear_bit(Bitmap::LiveStarts, first);
        self.clear_live_end(end - 1);
        self.release(merge);
        Ok((end - first) as usize * GRANULE)
    }

    /// [`Heap::free`] of the block allocated last, with nothing changed since: parks it
    /// (module docs). Out of line, like every path that is not the search.
    #[inline(never)]
    fn park(&mut self, block: *mut u8) -> Result<usize, HeapError> {
        if block.is_null() {
            // No block was taken last: a null pointer is foreign.
            return Err(HeapError::ForeignPointer);
        }
        let first = self.granule_of(block);
        self.parked_count = self.live_block_end(first) - first;
        self.parked = core::mem::replace(&mut self.last_taken, ptr::null_mut());
        Ok(self.parked_count as usize * GRANULE)
    }

    /// [`Heap::free`] with a block parked: gives it back first, then frees `block` as if
    /// nothing had been parked.
    #[inline(never)]
    fn free_with_parked(&mut self, block: *mut u8) -> Result<usize, HeapError> {
        self.return_parked()?;
        self.free(block)
    }

    /// Gives the parked block (there is one) back to the free blocks, as its `free`
    /// would have: with nothing parked or last taken, `free` frees it for real. Out of
    /// line: the hot paths only test for a parked block.
    ///
    /// # Errors
    /// [`HeapError::Corrupted`] when a neighbour's length was overwritten since the
    /// block was parked (a write after free); the block then stays allocated.
    #[cold]
    #[inline(never)]
    fn return_parked(&mut self) -> Result<(), HeapError> {
        let parked = core::mem::replace(&mut self.parked, ptr::null_mut());
        self.free(parked).map(|_| ())
    }

    /// Resizes the live block at `block` to at least `size` bytes, keeping its
    /// contents up to the smaller size (`realloc`). Shrinks in place; grows in place
    /// when the next block is free and large enough; otherwise moves to a new block
    /// aligned to `align` and frees the old one.
    ///
    /// # Errors
    /// As [`Heap::free`] for `block` and [`Heap::allocate`] for the new size; the old
    /// block is untouched on any error.
    pub fn reallocate(&mut self, block: *mut u8, size: usize, align: usize) -> Result<NonNull<u8>, HeapError> {
        if !self.parked.is_null() {
            self.return_parked()?;
        }
        self.last_taken = ptr::null_mut();
        let first = self.live_block_at(block)?;
        let count = granules_for(size)?;
        let end = self.live_block_end(first);
        let old_count = end - first;
        if count <= old_count as usize {
            let new_end = first + count as u32;
            if new_end < end {
                // The tail's left neighbour is the block itself: live.
                let merge = self.plan_merge(new_end, end, false)?;
                self.clear_live_end(end - 1);
                self.set_live_end(new_end - 1);
                self.release(merge);
            }
            return Ok(self.granule_ptr(first));
        }
        let grow = count - old_count as usize;
        if end == self.top && grow <= self.top_length() as usize {
            self.top += grow as u32;
            self.clear_live_end(end - 1);
            self.set_live_end(end + grow as u32 - 1);
            return Ok(self.granule_ptr(first));
        }
        if end < self.top && self.bit(Bitmap::FreeStarts, end) {
            let next = self.free_block_at(end)?;
            if next as usize >= grow {
                self.claim(end, next, end, grow as u32);
                self.clear_live_end(end - 1);
                self.set_live_end(end + grow as u32 - 1);
                return Ok(self.granule_ptr(first));
            }
        }
        let moved = self.allocate(size, align)?;
        // SAFETY: both blocks are live and distinct; the old one holds `old_count`
        // granules and the new one at least `size > old_count * GRANULE` bytes.
        unsafe {
            ptr::copy_nonoverlapping(self.granule_ptr(first).as_ptr(), moved.as_ptr(), old_count as usize * GRANULE)
        };
        if let Err(error) = self.free(block) {
            // Only a corrupted neighbour stops the old block's free: undo the move.
            let _ = self.free(moved.as_ptr());
            return Err(error);
        }
        Ok(moved)
    }

    /// Remembers which blocks are live now, so that [`Heap::give_back_since_mark`] can
    /// free every block taken after this (the loader marks before each kernel runs). A
    /// parked block counts as free, as everywhere. O(1) when the heap is empty, else
    /// one copy of the `LiveStarts` bitmap (n/32 words); nothing else changes, so the
    /// next operation costs what it would have. Out of line and cold: once per op, from
    /// the loader, never on a kernel's path (its bytes count in every image).
    #[cold]
    #[inline(never)]
    pub fn mark(&mut self) {
        // The top block starting at granule 0 is the whole arena: nothing is live.
        self.held_none = self.top == 0 || self.granules == 0;
        if self.held_none {
            return;
        }
        let words = self.layout.words as usize;
        // SAFETY: both bitmaps are `words` words of this heap's metadata, apart.
        unsafe {
            ptr::copy_nonoverlapping(
                self.bitmaps[Bitmap::LiveStarts as usize],
                self.bitmaps[Bitmap::Held as usize],
                words,
            )
        };
        if !self.parked.is_null() {
            let parked = self.granule_of(self.parked);
            self.clear_bit(Bitmap::Held, parked);
        }
    }

    /// Frees every block live now that was not live at the last [`Heap::mark`]: what a
    /// kernel that stopped (a panic, an exception, its instruction budget) took and
    /// never gave back. A block freed and taken again at the same address since the
    /// mark counts as held (it keeps its memory).
    ///
    /// A kernel stopped inside the allocator may have left the metadata half changed;
    /// a free that finds it inconsistent stops the walk. When no block was held at the
    /// mark the heap is then rebuilt empty, so it is whole either way; otherwise the
    /// rest stays taken and [`GivenBack::kept`] counts the blocks known left.
    #[cold]
    #[inline(never)]
    pub fn give_back_since_mark(&mut self) -> GivenBack {
        let mut given = GivenBack::default();
        if self.granules == 0 {
            return given;
        }
        // A parked block is free already; giving it back first makes `LiveStarts` exact.
        let parked_back = self.parked.is_null() || self.return_parked().is_ok();
        self.last_taken = ptr::null_mut();
        let mut failed = !parked_back;
        for word in 0..self.layout.words as usize {
            let held = if self.held_none { 0 } else { self.word(Bitmap::Held, word) };
            let mut stray = self.word(Bitmap::LiveStarts, word) & !held;
            while stray != 0 && !failed {
                let first = word as u32 * WORD_BITS + lowest_set_bit(stray);
                stray &= stray - 1;
                match self.free(self.granule_ptr(first).as_ptr()) {
                    Ok(bytes) => {
                        given.bytes += bytes;
                        given.blocks += 1;
                    }
                    Err(_) => failed = true,
                }
            }
            given.kept += stray.count_ones() as usize;
        }
        if failed && self.held_none {
            // Nothing was held: the whole arena is the op's, so start it afresh.
            given.kept = 0;
            given.rebuilt = true;
            let placement = Ok(Some((self.arena, self.granules, self.bitmaps[0])));
            // SAFETY: the heap's own arena and metadata, as it was built over them.
            let _ = unsafe { self.build_in_place(placement) };
        }
        self.held_none = true;
        given
    }

    /// Whether `address` lies in this heap's arena.
    pub fn owns(&self, address: *const u8) -> bool {
        let offset = address.addr().wrapping_sub(self.arena.addr());
        offset < self.arena_bytes()
    }

    /// Size in bytes of the live block starting at `block` (its usable size).
    ///
    /// # Errors
    /// As [`Heap::free`].
    pub fn block_size(&self, block: *mut u8) -> Result<usize, HeapError> {
        if block == self.parked && !block.is_null() {
            return Err(HeapError::DoubleFree);
        }
        let first = self.live_block_at(block)?;
        Ok((self.live_block_end(first) - first) as usize * GRANULE)
    }

    /// The arena's first byte (64-byte aligned): where the lowest block can start.
    pub fn arena_start(&self) -> *mut u8 {
        self.arena
    }

    /// Bytes the arena spans (metadata excluded).
    pub fn arena_bytes(&self) -> usize {
        self.granules as usize * GRANULE
    }

    /// Free bytes, in all free blocks together. O(n/32): it reads the bitmaps.
    pub fn free_bytes(&self) -> usize {
        let mut free = self.top_length() as usize + self.parked_granules() as usize;
        for word in 0..self.layout.words {
            let mut starts = self.word(Bitmap::FreeStarts, word as usize);
            while starts != 0 {
                free += self.header(word * WORD_BITS + lowest_set_bit(starts)) as usize;
                starts &= starts - 1;
            }
        }
        free * GRANULE
    }

    /// Number of live blocks. O(n/32): it reads the bitmaps.
    pub fn live_blocks(&self) -> usize {
        let marked: usize =
            (0..self.layout.words).map(|word| self.word(Bitmap::LiveStarts, word as usize).count_ones() as usize).sum();
        marked - usize::from(!self.parked.is_null())
    }

    /// Size in bytes of the largest free block.
    pub fn largest_free(&self) -> usize {
        let parked = self.parked_merge().map_or(0, |(_, length)| length);
        max(self.largest_free_granules(), parked) as usize * GRANULE
    }

    /// Granules of the parked block; 0 when there is none.
    fn parked_granules(&self) -> u32 {
        if self.parked.is_null() { 0 } else { self.parked_count }
    }

    /// The granule a block (in the arena, granule-aligned) starts at.
    fn granule_of(&self, block: *mut u8) -> u32 {
        ((block.addr() - self.arena.addr()) / GRANULE) as u32
    }

    /// The free block the parked block would be part of once given back, and how many
    /// of the free blocks marked now it would absorb: `(neighbours merged, length)`.
    fn parked_merge(&self) -> Option<(usize, u32)> {
        if self.parked.is_null() {
            return None;
        }
        let first = self.granule_of(self.parked);
        let end = first + self.parked_granules();
        // A neighbour overwritten since the park: counted as no merge (the free that
        // gives the block back reports it).
        let merge = self.plan_merge(first, end, true).ok()?;
        let (right, merged_end) = match merge.right {
            RightNeighbour::Live => (0, end),
            RightNeighbour::Free(length) => (1, end + length),
            // The top block, or, when it is empty (`top == granules`), the arena's end:
            // only a top block that exists is a free block absorbed.
            RightNeighbour::Top => (usize::from(self.top < self.granules), self.granules),
        };
        Some((usize::from(merge.left) + right, merged_end - merge.first))
    }

    /// Number of free blocks: 1 for a heap with nothing live (coalescing is complete),
    /// 0 for a full or empty heap. Free blocks are never adjacent. O(n/32).
    pub fn free_block_count(&self) -> usize {
        let indexed: usize =
            (0..self.layout.words).map(|word| self.word(Bitmap::FreeStarts, word as usize).count_ones() as usize).sum();
        let marked = indexed + usize::from(self.top < self.granules);
        match self.parked_merge() {
            Some((absorbed, _)) => marked + 1 - absorbed,
            None => marked + usize::from(!self.parked.is_null()),
        }
    }

    /// The granule where the live block at `block` starts.
    #[inline(always)]
    fn live_block_at(&self, block: *mut u8) -> Result<u32, HeapError> {
        if !self.owns(block) {
            return Err(HeapError::ForeignPointer);
        }
        let offset = block.addr() - self.arena.addr();
        if !offset.is_multiple_of(GRANULE) {
            return Err(HeapError::NotBlockStart);
        }
        let granule = (offset / GRANULE) as u32;
        if self.bit(Bitmap::LiveStarts, granule) {
            Ok(granule)
        } else if self.enclosing_block_is_free(granule) {
            Err(HeapError::DoubleFree)
        } else {
            Err(HeapError::NotBlockStart)
        }
    }

    /// Whether the block holding `granule` is free: the block starting at the closest
    /// start, live or free, at or below it.
    fn enclosing_block_is_free(&self, granule: u32) -> bool {
        if granule >= self.top {
            return true;
        }
        let mut word = (granule / WORD_BITS) as usize;
        let mut below = bits_between(0, granule % WORD_BITS);
        loop {
            let live_here = self.word(Bitmap::LiveStarts, word) & below;
            let free_here = self.word(Bitmap::FreeStarts, word) & below;
            if live_here | free_here != 0 {
                // The highest start wins. The two never share a bit, so the word with
                // the highest bit is the larger (a compare: `leading_zeros` is a long
                // expansion on this core, see `lowest_set_bit`).
                return free_here > live_here;
            }
            if word == 0 {
                return false;
            }
            word -= 1;
            below = u32::MAX;
        }
    }

    /// One past the last granule of the live block starting at `first`: its `LiveEnds`
    /// bit, in the same word or, through the summary, in the next word that has one.
    #[inline(always)]
    fn live_block_end(&self, first: u32) -> u32 {
        let word = first / WORD_BITS;
        let here = self.word(Bitmap::LiveEnds, word as usize) & (u32::MAX << (first % WORD_BITS));
        if here != 0 {
            return word * WORD_BITS + lowest_set_bit(here) + 1;
        }
        let next = word + 1;
        let mut summary = next / WORD_BITS;
        let mut from = u32::MAX << (next % WORD_BITS);
        while (summary as usize) < self.layout.summary_words() {
            let words = self.word(Bitmap::LiveEndWords, summary as usize) & from;
            if words != 0 {
                let word = summary * WORD_BITS + lowest_set_bit(words);
                return word * WORD_BITS + lowest_set_bit(self.word(Bitmap::LiveEnds, word as usize)) + 1;
            }
            summary += 1;
            from = u32::MAX;
        }
        unreachable!("a live block always has an end bit")
    }

    /// Granules to skip from `granule` so the block starts at a multiple of `align` bytes.
    #[inline(always)]
    fn align_skip(&self, granule: u32, align: usize) -> u32 {
        // `align` is a power of two: the bytes to its next multiple are `-address mod align`.
        let address = self.arena.addr() + granule as usize * GRANULE;
        (address.wrapping_neg() & (align - 1)) as u32 / GRANULE as u32
    }

    /// Granules `granule` lies above the multiple of `align` bytes at or below it.
    #[inline(always)]
    fn misalignment(&self, granule: u32, align: usize) -> u32 {
        let address = self.arena.addr() + granule as usize * GRANULE;
        (address & (align - 1)) as u32 / GRANULE as u32
    }

    #[inline(always)]
    fn largest_free_granules(&self) -> u32 {
        max(self.largest_indexed(), self.top_length())
    }

    /// Granules in the top block.
    #[inline(always)]
    fn top_length(&self) -> u32 {
        self.granules - self.top
    }

    /// Length of the longest indexed free block.
    #[inline(always)]
    fn largest_indexed(&self) -> u32 {
        if self.layout.leaves == 0 { 0 } else { self.node(0) }
    }

    /// The first granule and length of the lowest indexed free block of at least
    /// `count` granules, which the caller has checked exists (`count <= largest_indexed`).
    #[inline(always)]
    fn find_free_block(&self, count: u32) -> Result<(u32, u32), HeapError> {
        let first_leaf = self.layout.first_leaf as usize;
        let mut node = 0;
        while node < first_leaf {
            let child = 4 * node + 1;
            node = if self.node(child) >= count {
                child
            } else if self.node(child + 1) >= count {
                child + 1
            } else if self.node(child + 2) >= count {
                child + 2
            } else {
                child + 3
            };
        }
        let word = (node - first_leaf) as u32;
        let mut starts = self.word(Bitmap::FreeStarts, word as usize);
        while starts != 0 {
            let first = word * WORD_BITS + lowest_set_bit(starts);
            let length = self.header(first);
            if length >= count {
                // Checked against the footer, as `free_block_at` does.
                let fits = length <= self.top - first;
                return if fits && self.footer(first + length - 1) == length {
                    Ok((first, length))
                } else {
                    Err(HeapError::Corrupted)
                };
            }
            starts &= starts - 1;
        }
        // The leaf promised a block here: a length in free memory was overwritten.
        Err(HeapError::Corrupted)
    }

    /// Length of the indexed free block starting at `first` (which the caller knows is
    /// one), checked against its footer.
    #[inline(always)]
    fn free_block_at(&self, first: u32) -> Result<u32, HeapError> {
        debug_assert!(first < self.top && self.bit(Bitmap::FreeStarts, first));
        let length = self.header(first);
        if length != 0 && length <= self.top - first && self.footer(first + length - 1) == length {
            Ok(length)
        } else {
            Err(HeapError::Corrupted)
        }
    }

    /// Start of the free block ending at `last`, checked against its header.
    #[inline(always)]
    fn free_block_ending_at(&self, last: u32) -> Result<u32, HeapError> {
        let length = self.footer(last);
        if length == 0 || length > last + 1 {
            return Err(HeapError::Corrupted);
        }
        let first = last + 1 - length;
        if self.bit(Bitmap::FreeStarts, first) && self.header(first) == length {
            Ok(first)
        } else {
            Err(HeapError::Corrupted)
        }
    }

    /// Takes `count` granules, aligned to `align`, from the start of the top block,
    /// which the caller has checked is large enough; the alignment slack becomes an
    /// indexed free block. Returns the first granule taken.
    fn claim_top(&mut self, align: usize, count: u32) -> u32 {
        let slack = self.align_skip(self.top, align);
        let first = self.top + slack;
        if slack != 0 {
            self.add_free_block(self.top, slack);
            self.raise_leaf(self.top / WORD_BITS, slack);
        }
        self.top = first + count;
        first
    }

    /// Takes `first..first + count` out of the indexed free block `free..free + length`;
    /// the parts before and after stay free.
    #[inline(always)]
    fn claim(&mut self, free: u32, length: u32, first: u32, count: u32) {
        let (end, free_end) = (first + count, free + length);
        debug_assert!(free <= first && end <= free_end);
        if first > free {
            self.write_lengths(free, first - free);
        } else {
            self.clear_bit(Bitmap::FreeStarts, free);
        }
        if end < free_end {
            self.add_free_block(end, free_end - end);
        }
        self.lower_leaf(free, length, first - free);
        if end < free_end {
            self.raise_leaf(end / WORD_BITS, free_end - end);
        }
    }

    /// How freeing `first..end` merges with the free blocks around it; `left_may_be_free`
    /// is false when the granule before `first` is known to be live.
    #[inline(always)]
    fn plan_merge(&self, first: u32, end: u32, left_may_be_free: bool) -> Result<Merge, HeapError> {
        let left_free = left_may_be_free && first > 0 && !self.bit(Bitmap::LiveEnds, first - 1);
        let merged_first = if left_free { self.free_block_ending_at(first - 1)? } else { first };
        let right = if end == self.top {
            RightNeighbour::Top
        } else if end < self.top && !self.bit(Bitmap::LiveStarts, end) {
            RightNeighbour::Free(self.free_block_at(end)?)
        } else {
            RightNeighbour::Live
        };
        Ok(Merge { first: merged_first, released: first, end, left: left_free, right })
    }

    /// Frees the range `merge` describes, whose live bits the caller has cleared.
    #[inline(always)]
    fn release(&mut self, merge: Merge) {
        let right = match merge.right {
            RightNeighbour::Top => {
                // The top block takes the range, and the left neighbour with it.
                self.top = merge.first;
                if merge.left {
                    self.clear_bit(Bitmap::FreeStarts, merge.first);
                    self.lower_leaf(merge.first, merge.released - merge.first, 0);
                }
                return;
            }
            RightNeighbour::Free(length) => {
                self.clear_bit(Bitmap::FreeStarts, merge.end);
                length
            }
            RightNeighbour::Live => 0,
        };
        let length = merge.end + right - merge.first;
        if merge.left {
            // The left neighbour absorbs the range: same start, longer.
            self.write_lengths(merge.first, length);
        } else {
            self.add_free_block(merge.first, length);
        }
        if right != 0 {
            self.lower_leaf(merge.end, right, 0);
        }
        self.raise_leaf(merge.first / WORD_BITS, length);
    }

    /// Records `first..first + length` as a free block (its leaf is refreshed by the
    /// caller).
    #[inline(always)]
    fn add_free_block(&mut self, first: u32, length: u32) {
        self.write_lengths(first, length);
        self.set_bit(Bitmap::FreeStarts, first);
    }

    /// Writes the header and footer of the free block `first..first + length`.
    #[inline(always)]
    fn write_lengths(&mut self, first: u32, length: u32) {
        // SAFETY: the block's granules are inside the arena and free: the heap's to
        // use; the header is word 0 of the first granule and the footer word 1 of the
        // last, distinct even for a one-granule block.
        unsafe {
            self.granule_word(first, 0).write(length);
            self.granule_word(first + length - 1, 1).write(length);
        }
    }

    /// Records that a free block of `length` granules now starts in word `word` (new,
    /// or grown): the leaf and its ancestors rise to `length` where they are below.
    #[inline(always)]
    fn raise_leaf(&mut self, word: u32, length: u32) {
        let mut node = (self.layout.first_leaf + word) as usize;
        loop {
            if self.node(node) >= length {
                return;
            }
            self.set_node(node, length);
            if node == 0 {
                return;
            }
            node = (node - 1) / 4;
        }
    }

    /// Records that the free block at `first` shrank from `old_length` granules to
    /// `new_length` (0: it went). Only if it was its word's longest does the leaf
    /// change: then it is recomputed, and so are the ancestors that change. A node is the max of its
    /// children, so a rise needs no sibling: it climbs while it beats the parent; a
    /// fall only matters where the old value was the parent's, and then the other
    /// children decide.
    #[inline(always)]
    fn lower_leaf(&mut self, first: u32, old_length: u32, new_length: u32) {
        let word = first / WORD_BITS;
        if old_length < self.node((self.layout.first_leaf + word) as usize) {
            return;
        }
        let mut starts = self.word(Bitmap::FreeStarts, word as usize) & !(1 << (first % WORD_BITS));
        // Usually the block is alone in its word (32 granules): nothing to rescan.
        let mut new = new_length;
        while starts != 0 {
            new = max(new, self.header(word * WORD_BITS + lowest_set_bit(starts)));
            starts &= starts - 1;
        }
        let mut node = (self.layout.first_leaf + word) as usize;
        let mut old = self.node(node);
        if new == old {
            return;
        }
        self.set_node(node, new);
        while node > 0 {
            node = (node - 1) / 4;
            let parent = self.node(node);
            let updated = if new > old {
                if new <= parent {
                    return;
                }
                new
            } else {
                if old < parent {
                    return;
                }
                let child = 4 * node + 1;
                max(max(self.node(child), self.node(child + 1)), max(self.node(child + 2), self.node(child + 3)))
            };
            if updated == parent {
                return;
            }
            self.set_node(node, updated);
            (old, new) = (parent, updated);
        }
    }

    #[inline(always)]
    fn header(&self, first: u32) -> u32 {
        // SAFETY: `first` is an arena granule (callers pass free-block starts or checked
        // granules), readable heap memory, aligned for `u32`.
        unsafe { self.granule_word(first, 0).read() }
    }

    #[inline(always)]
    fn footer(&self, last: u32) -> u32 {
        // SAFETY: as `header`.
        unsafe { self.granule_word(last, 1).read() }
    }

    /// Word `index` (0 or 1) of arena granule `granule`.
    #[inline(always)]
    fn granule_word(&self, granule: u32, index: usize) -> *mut u32 {
        debug_assert!(granule < self.granules && index < 2);
        self.arena.wrapping_add(granule as usize * GRANULE).cast::<u32>().wrapping_add(index)
    }

    fn granule_ptr(&self, granule: u32) -> NonNull<u8> {
        debug_assert!(granule < self.granules);
        // SAFETY: the granule is inside the arena (all callers pass a live block's first
        // granule), so the offset stays in bounds and the arena pointer is not null.
        unsafe { NonNull::new_unchecked(self.arena.add(granule as usize * GRANULE)) }
    }

    // The metadata accessors below are on every path, so they skip bounds checks: every
    // caller passes a granule of the arena (`< granules`, so its word is `< words`) or a
    // tree node (`< layout.nodes()`), which the debug assertions (on in tests) check.

    /// Word `word` of `bitmap`.
    #[inline(always)]
    fn bitmap_word(&self, bitmap: Bitmap, word: usize) -> *mut u32 {
        debug_assert!(if bitmap == Bitmap::LiveEndWords {
            word < self.layout.summary_words()
        } else {
            word < self.layout.words as usize
        });
        self.bitmaps[bitmap as usize].wrapping_add(word)
    }

    #[inline(always)]
    fn word(&self, bitmap: Bitmap, word: usize) -> u32 {
        // SAFETY: the word is inside the metadata (see above), which the heap owns.
        unsafe { self.bitmap_word(bitmap, word).read() }
    }

    #[inline(always)]
    fn bit(&self, bitmap: Bitmap, granule: u32) -> bool {
        (self.word(bitmap, (granule / WORD_BITS) as usize) >> (granule % WORD_BITS)) & 1 == 1
    }

    #[inline(always)]
    fn set_bit(&mut self, bitmap: Bitmap, granule: u32) {
        let word = self.bitmap_word(bitmap, (granule / WORD_BITS) as usize);
        // SAFETY: as `word`, and `&mut self` makes the access exclusive.
        unsafe { *word |= 1 << (granule % WORD_BITS) };
    }

    #[inline(always)]
    fn clear_bit(&mut self, bitmap: Bitmap, granule: u32) {
        let word = self.bitmap_word(bitmap, (granule / WORD_BITS) as usize);
        // SAFETY: as `word`, and `&mut self` makes the access exclusive.
        unsafe { *word &= !(1 << (granule % WORD_BITS)) };
    }

    /// Marks `last` as the last granule of a live block.
    #[inline(always)]
    fn set_live_end(&mut self, last: u32) {
        let word = last / WORD_BITS;
        self.set_bit(Bitmap::LiveEnds, last);
        self.set_bit(Bitmap::LiveEndWords, word);
    }

    /// Unmarks `last` as the last granule of a live block.
    #[inline(always)]
    fn clear_live_end(&mut self, last: u32) {
        let word = last / WORD_BITS;
        self.clear_bit(Bitmap::LiveEnds, last);
        if self.word(Bitmap::LiveEnds, word as usize) == 0 {
            self.clear_bit(Bitmap::LiveEndWords, word);
        }
    }

    /// Tree node `node` (`0..layout.nodes()`).
    #[inline(always)]
    fn node(&self, node: usize) -> u32 {
        debug_assert!(node < self.layout.nodes());
        // SAFETY: the tree has `layout.nodes()` words (`build`).
        unsafe { self.tree.add(node).read() }
    }

    #[inline(always)]
    fn set_node(&mut self, node: usize, value: u32) {
        debug_assert!(node < self.layout.nodes());
        // SAFETY: as `node`, and `&mut self` makes the access exclusive.
        unsafe { self.tree.add(node).write(value) }
    }
}

/// The first granule-aligned address in `region..region + size` and how many whole
/// granules follow it inside the region.
fn granule_span(region: *mut u8, size: usize) -> Result<(*mut u8, u32), HeapError> {
    // A region may end exactly at the top of the address space (docs/abi/entry.md), but
    // no Rust object may contain the address space's last byte: such a region gives up
    // that byte, and so its last granule.
    let below_last_byte = usize::MAX - region.addr();
    if region.is_null() || size.checked_sub(1).is_some_and(|last| last > below_last_byte) {
        return Err(HeapError::InvalidRegion);
    }
    let size = size.min(below_last_byte);
    let skip = region.addr().next_multiple_of(GRANULE) - region.addr();
    let granules = size.saturating_sub(skip) / GRANULE;
    let granules = u32::try_from(granules).unwrap_or(u32::MAX);
    // Keep the pointer's provenance: step from `region` rather than casting an integer.
    Ok((region.wrapping_add(skip), granules))
}

/// Granules the metadata of a `granules`-granule arena takes when kept in the region.
fn metadata_granules(granules: u32) -> u32 {
    let bytes = MetadataLayout::for_granules(granules).u32_words() * size_of::<u32>();
    bytes.div_ceil(GRANULE) as u32
}

/// Granules a block of `size` bytes needs (at least one). No object may exceed
/// `isize::MAX` bytes (Rust's limit, and C's `PTRDIFF_MAX`).
fn granules_for(size: usize) -> Result<usize, HeapError> {
    if size > isize::MAX as usize {
        return Err(HeapError::SizeOverflow);
    }
    Ok(size.div_ceil(GRANULE).max(1))
}

#[cfg(test)]
mod tests {
    use super::{GRANULE, HeapError, granule_span, lowest_set_bit_by_remainder};
    use proptest::prelude::*;

    #[test]
    fn a_region_ending_at_the_top_of_the_address_space_gives_up_only_its_last_granule() {
        // [2^N - 4096, 2^N) does not wrap; its last granule holds the address space's last
        // byte, which no Rust object may contain. Nothing is dereferenced.
        let top = core::ptr::without_provenance_mut::<u8>(usize::MAX - 0xFFF);
        assert_eq!(granule_span(top, 0x1000), Ok((top, (0x1000 / GRANULE - 1) as u32)));
        assert_eq!(granule_span(top, 0x1001), Err(HeapError::InvalidRegion));
        let below = top.wrapping_sub(0x1000);
        assert_eq!(granule_span(below, 0x1000), Ok((below, (0x1000 / GRANULE) as u32)));
    }

    proptest! {
        // Miri interprets about 1000x slower: a few cases there, the full count natively.
        #![proptest_config(if cfg!(miri) { ProptestConfig::with_cases(16) } else { ProptestConfig::default() })]

        #[test]
        fn remainder_lookup_is_trailing_zeros(bits in 1..=u32::MAX, shift in 0..32u32) {
            let bits = bits << shift | 1 << shift;
            prop_assert_eq!(lowest_set_bit_by_remainder(bits), bits.trailing_zeros());
        }
    }
}
