//! `neuron_translate`: framework addresses to device pointers through a five-region
//! software TLB.
//!
//! The loader describes, per op, up to [`TRANSLATE_REGIONS`] windows as 32-byte
//! [`TranslateRecord`]s (`neuron_translate_configure`). An address matches record `r`
//! when `(addr & r.mask) == r.ptr`; the first matching record, in configuration order,
//! wins, and the address becomes `r.device_base + (addr - r.ptr)`, plus
//! `core * r.core_stride` when the record is [`TRANSLATE_PER_CORE`] (the per-core SoC
//! remap: core i's view of a shared window is its own slice, `core` being
//! `crate::arch::prid()`). No match is a miss: an error (null and a status from C),
//! never a wild pointer.
//!
//! # Validation and the hot path
//! `configure` checks every record (mask a run of high ones, `ptr` inside the mask,
//! known flags, the whole device window of *this* core inside the address space and
//! not at address 0) and precomputes, per record, `delta = device window start - ptr`
//! in pointer arithmetic. Testing a window is then a masked compare of each 32-bit
//! half, and a hit one pointer-sized add. A rejected configuration leaves no record
//! configured (fail closed: a window of the previous op must not translate this op's
//! addresses).
//!
//! # One candidate per address
//! Testing the records in turn costs 4 to 8 instructions for each record before the
//! hit, which no start order keeps within the goal of 30 for a hit in any record. So
//! `configure` also picks a *field*: four address bits, within bits 12..=43
//! ([`FIELD_FLOOR`]), that separates the windows best. Each of the 16 values of the
//! field is a *bucket* with one *candidate* window; a lookup reads the field, tests
//! that one window, and on a hit is done (`neuron_translate`: 20 Xtensa instructions,
//! `entry` to `retw`, whichever record it is). A window whose mask does not cover the
//! whole field can be in several buckets. What a failed candidate test means depends
//! on the windows (`Fallback`):
//! - no bucket can hold two windows (the usual case: windows are far apart, so some
//!   four bits of their addresses tell them apart): a miss, at once;
//! - two disjoint windows share a bucket: every window is tested, and the hit becomes
//!   its bucket's candidate, so the window an op used last is found first again;
//! - two windows overlap: every window is tested in configuration order (first match
//!   wins), and candidates never move. Each bucket's candidate is the first window, in
//!   order, that can be in it, so when it matches it is the first match.
//!
//! On the device `neuron_translate` is `runtime/arch/xtensa/translate.S` (LLVM spends
//! two to three instructions more on the same steps, which is what 20 leaves no room
//! for); the Rust lookup here is the same algorithm, which `translate`, `translate_range`
//! and the host use.
//!
//! # State and soundness
//! The table is core-local state read on every tensor access, so it is not kept in a
//! `CoreLocal` (whose borrow flag would cost a load, a test and two stores per call).
//! It lives in an `UnsafeCell` read and written through its raw pointer: by
//! `configure`, by the outcome store of `neuron_translate` and
//! `neuron_translate_configure`, by the candidate store after a search, and by
//! `translate_range`'s store of its last hit. This is sound under the runtime's invariant
//! (`crate::global`): each core has its own copy of the table and runs one context at
//! a time, and none of these calls another, so no write overlaps a read. On the host,
//! where test threads stand in for cores, the table is thread-local for the same reason.

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void};
use core::mem::offset_of;
use core::ptr;

/// How many regions the software TLB holds.
pub const TRANSLATE_REGIONS: usize = 5;

/// [`TranslateRecord::flags`] bit: rebase the device window by `core * core_stride`.
pub const TRANSLATE_PER_CORE: u32 = 1 << 0;
const KNOWN_FLAGS: u32 = TRANSLATE_PER_CORE;

/// One region of the software TLB, as the loader writes it (32 bytes, C layout).
///
/// ```
/// use neuroncustomop::translate::{TranslateRecord, configure, translate};
/// // Framework addresses 0x7f00_0000_0000..+1 MiB live at device address 0x8000_0000.
/// let window = TranslateRecord::window(0x7f00_0000_0000, 1 << 20, 0x8000_0000);
/// configure(&[window]).unwrap();
/// assert_eq!(translate(0x7f00_0000_0040).unwrap() as usize, 0x8000_0040);
/// assert!(translate(0x7f00_0010_0000).is_err()); // one past the window
/// ```
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TranslateRecord {
    /// Match value: an address matches when `(addr & mask) == ptr`. Must have no bits
    /// outside `mask`, so it is also the window's first framework address.
    pub ptr: u64,
    /// Which address bits select the region: a run of high ones (`!(size - 1)` for a
    /// power-of-two window size); 0 matches every address.
    pub mask: u64,
    /// Device address of the window's first byte (for core 0 when per-core).
    pub device_base: u64,
    /// [`TRANSLATE_PER_CORE`] or 0.
    pub flags: u32,
    /// Bytes between consecutive cores' device windows; 0 unless per-core.
    pub core_stride: u32,
}

const _: () = {
    assert!(size_of::<TranslateRecord>() == 32);
    assert!(offset_of!(TranslateRecord, ptr) == 0);
    assert!(offset_of!(TranslateRecord, mask) == 8);
    assert!(offset_of!(TranslateRecord, device_base) == 16);
    assert!(offset_of!(TranslateRecord, flags) == 24);
    assert!(offset_of!(TranslateRecord, core_stride) == 28);
};

impl TranslateRecord {
    /// A plain (not per-core) record for the `size`-byte window at framework address
    /// `start` (`size` a power of two, `start` a multiple of it) at `device_base`.
    pub const fn window(start: u64, size: u64, device_base: u64) -> TranslateRecord {
        TranslateRecord { ptr: start, mask: !size.wrapping_sub(1), device_base, flags: 0, core_stride: 0 }
    }
}

/// Why a framework address has no device pointer, or a configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranslateError {
    /// No configured region matches the address.
    Miss,
    /// More than [`TRANSLATE_REGIONS`] records.
    TooManyRecords,
    /// A null record array with a non-zero count.
    NullRecords,
    /// A mask that is not a run of high ones.
    MaskNotContiguous,
    /// A `ptr` with bits outside its `mask`: the record could never match.
    PtrOutsideMask,
    /// Unknown flag bits, or a `core_stride` on a record that is not per-core.
    InvalidFlags,
    /// This core's device window wraps, does not fit a device pointer, or includes
    /// address 0 (null is how a miss is reported).
    WindowOutOfRange,
}

impl TranslateError {
    /// The status code the C ABI reports (`neuron_translate_status`); 0 is success.
    /// Stable: documented in `docs/abi/memory.md`.
    pub const fn code(self) -> i32 {
        match self {
            TranslateError::Miss => 1,
            TranslateError::TooManyRecords => 2,
            TranslateError::NullRecords => 3,
            TranslateError::MaskNotContiguous => 4,
            TranslateError::PtrOutsideMask => 5,
            TranslateError::InvalidFlags => 6,
            TranslateError::WindowOutOfRange => 7,
        }
    }
}

/// The status `neuron_translate_status` reports after a call that succeeded.
pub const TRANSLATE_OK: i32 = 0;

/// Why [`translate_range`] has no device pointer for a range of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeError {
    /// The first byte is in no window ([`TranslateError::Miss`]).
    Miss,
    /// The bytes run past the end of the window their first byte is in.
    OutsideWindow,
}

/// A validated record in the form the hot path wants: the 64-bit mask and match value
/// as 32-bit halves, so the 32-bit core tests the low half and branches at once. C
/// layout: `translate.S` reads it (offsets asserted below).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    mask_low: u32,
    ptr_low: u32,
    mask_high: u32,
    ptr_high: u32,
    /// Device window start minus `ptr`, modulo the pointer width.
    delta: usize,
    /// The window's size minus one (`!mask`): the offset of its last byte. Fits a
    /// pointer, as `configure` checked the whole device window does.
    last_offset: usize,
}

/// How many buckets the field selects: four bits.
const BUCKETS: usize = 16;

/// The lowest address bit a field can start at: a field lies in address bits
/// 12..=43 (`MAX_FIELD_SHIFT`). Windows are pages or larger, so lower bits seldom
/// tell two apart; windows that differ only below or above (user-space addresses
/// reach bit 46) share buckets, and a failed candidate costs a search.
pub const FIELD_FLOOR: u32 = 12;

/// The bucket of `value`'s field at `field_shift` (0..=[`MAX_FIELD_SHIFT`]) above
/// [`FIELD_FLOOR`]. `translate.S` shifts the address right by `field_shift` (one
/// funnel shift of its halves) and takes bits `FIELD_FLOOR..FIELD_FLOOR + 4`; this
/// takes the same bits from the 32 above `FIELD_FLOOR` (a constant funnel shift, then
/// a 32-bit one: LLVM's 64-bit shift by a variable is a dozen instructions).
#[inline(always)]
fn field(value: u64, field_shift: u32) -> usize {
    (((value >> FIELD_FLOOR) as u32) >> field_shift) as usize & (BUCKETS - 1)
}

/// The highest field position: the field's four bits stay within the 32 above
/// [`FIELD_FLOOR`], where [`field`] and `translate.S` take the same bits.
const MAX_FIELD_SHIFT: u32 = 32 - 4;

impl Window {
    /// Matches nothing: `ptr` has a bit outside `mask`, which `configure` never accepts.
    const UNUSED: Window = Window { mask_low: 0, ptr_low: 1, mask_high: 0, ptr_high: 0, delta: 0, last_offset: 0 };

    /// `(addr & mask) == ptr`.
    #[inline(always)]
    fn matches(&self, addr: u64) -> bool {
        (addr as u32 & self.mask_low) == self.ptr_low && ((addr >> 32) as u32 & self.mask_high) == self.ptr_high
    }

    fn ptr(&self) -> u64 {
        u64::from(self.ptr_high) << 32 | u64::from(self.ptr_low)
    }

    fn mask(&self) -> u64 {
        u64::from(self.mask_high) << 32 | u64::from(self.mask_low)
    }

    /// The hot-path form of `record` as `core` sees it, or why it is refused. Not
    /// inlined: `configure` is cold, and its loop unrolled with five inlined copies
    /// costs text the kernels' instruction cache needs.
    #[inline(never)]
    fn of(record: &TranslateRecord, core: u32) -> Result<Window, TranslateError> {
        let offsets = !record.mask;
        if offsets & offsets.wrapping_add(1) != 0 {
            return Err(TranslateError::MaskNotContiguous);
        }
        if record.ptr & offsets != 0 {
            return Err(TranslateError::PtrOutsideMask);
        }
        let per_core = record.flags & TRANSLATE_PER_CORE != 0;
        if record.flags & !KNOWN_FLAGS != 0 || (!per_core && record.core_stride != 0) {
            return Err(TranslateError::InvalidFlags);
        }
        let core_offset = if per_core { u64::from(core) * u64::from(record.core_stride) } else { 0 };
        let first = record.device_base.checked_add(core_offset).ok_or(TranslateError::WindowOutOfRange)?;
        let last = first.checked_add(offsets).ok_or(TranslateError::WindowOutOfRange)?;
        if first == 0 || usize::try_from(last).is_err() {
            return Err(TranslateError::WindowOutOfRange);
        }
        // Truncation is exact for `first`, which fits as `last` does; `ptr` wraps on
        // purpose: `addr + delta` then equals `first + (addr - ptr)` modulo the
        // pointer width, and that value fits, so it is exact.
        Ok(Window {
            mask_low: record.mask as u32,
            ptr_low: record.ptr as u32,
            mask_high: (record.mask >> 32) as u32,
            ptr_high: (record.ptr >> 32) as u32,
            delta: (first as usize).wrapping_sub(record.ptr as usize),
            last_offset: offsets as usize,
        })
    }
}

/// What a failed candidate test means (module docs, "One candidate per address").
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fallback {
    /// No bucket can hold two windows: the address is a miss.
    Miss = 0,
    /// Disjoint windows share a bucket: test every window; a hit becomes the bucket's
    /// candidate.
    Search = 1,
    /// Some windows overlap: test every window in configuration order; candidates stay.
    SearchInOrder = 2,
}

/// The software TLB of one core. C layout: `translate.S` reads it (offsets asserted
/// below), and the fields the hot path reads come first, at single-load offsets.
#[repr(C)]
struct Tlb {
    /// Where the field starts, above [`FIELD_FLOOR`]: 0..=[`MAX_FIELD_SHIFT`], the hot
    /// path's shift.
    field_shift: u32,
    fallback: Fallback,
    /// Each bucket's candidate: one of `windows`, or [`nothing`] when no configured
    /// window can be in the bucket. Derived from [`tlb`]'s raw pointer, never from a
    /// reference, so writes to the table do not invalidate them.
    candidates: [*const Window; BUCKETS],
    /// The configured windows in configuration order, `UNUSED` where fewer were given.
    windows: [Window; TRANSLATE_REGIONS],
    /// The last C call's outcome: a window of this table when it was a hit (status
    /// [`TRANSLATE_OK`]; the window's address is what the hit path has at hand, where
    /// a 0 would cost it an instruction), else the status code.
    outcome: usize,
    /// The window of the last [`translate_range`] hit, tested before its bucket's
    /// candidate: setup's lookups, which mostly land in one window, cost one window's
    /// test, as before there were buckets.
    /// The first window after a change of windows (its match is always the first
    /// match), and kept so while windows overlap (another's need not be).
    range_last: *const Window,
    /// How many times the windows changed: equal generations, equal translations
    /// (what lets setup reuse a previous op's resolved arguments). 64 bits never wrap.
    generation: u64,
}

/// Offsets `runtime/arch/xtensa/translate.S` (and `setup.S`) use.
#[cfg(target_arch = "xtensa")]
const _: () = {
    assert!(size_of::<Window>() == 24);
    assert!(offset_of!(Window, mask_low) == 0);
    assert!(offset_of!(Window, ptr_low) == 4);
    assert!(offset_of!(Window, mask_high) == 8);
    assert!(offset_of!(Window, ptr_high) == 12);
    assert!(offset_of!(Window, delta) == 16);
    assert!(offset_of!(Tlb, field_shift) == 0);
    assert!(offset_of!(Tlb, fallback) == 4);
    assert!(offset_of!(Tlb, candidates) == 8);
    assert!(offset_of!(Tlb, windows) == 72);
    assert!(offset_of!(Tlb, outcome) == 192);
    // And `runtime/arch/xtensa/setup.S`, which tests `range_last` as `translate_range`.
    assert!(offset_of!(Tlb, range_last) == 196);
    assert!(offset_of!(Window, last_offset) == 20);
    assert!(TRANSLATE_REGIONS == 5 && FIELD_FLOOR == 12);
    assert!(Fallback::Miss as u32 == 0 && Fallback::Search as u32 == 1);
    assert!(TranslateError::Miss.code() == 1);
};

/// No window: the table before the first `configure` and after a refused one.
static UNCONFIGURED: [Window; TRANSLATE_REGIONS] = [Window::UNUSED; TRANSLATE_REGIONS];

/// The candidate of a bucket no configured window can be in: a window that matches
/// nothing.
const fn nothing() -> *const Window {
    UNCONFIGURED.as_ptr()
}

/// The bytes of `windows`, to compare them in one `memcmp` call (a `Window` has no
/// padding). The length is hidden from the optimizer, which would otherwise write the
/// comparison out as 30 pairs of loads in `configure`'s text.
fn bytes(windows: &[Window; TRANSLATE_REGIONS]) -> &[u8] {
    const _: () = assert!(size_of::<Window>() == 4 * size_of::<u32>() + 2 * size_of::<usize>());
    let len = core::hint::black_box(size_of_val(windows)).min(size_of_val(windows));
    // SAFETY: the array's bytes (at most all of them), all initialized (no padding),
    // borrowed as long as the array.
    unsafe { core::slice::from_raw_parts(ptr::from_ref(windows).cast::<u8>(), len) }
}

/// The TLB's cell; see "State and soundness" in the module docs. Transparent: on the
/// device its symbol is the table `translate.S` reads.
#[repr(transparent)]
struct TlbCell(UnsafeCell<Tlb>);

// SAFETY: each core has its own copy and one context at a time (module docs); on the
// host the cell is thread-local and never shared.
unsafe impl Sync for TlbCell {}

impl TlbCell {
    const fn new() -> TlbCell {
        TlbCell(UnsafeCell::new(Tlb {
            field_shift: 0,
            fallback: Fallback::Miss,
            candidates: [nothing(); BUCKETS],
            windows: UNCONFIGURED,
            outcome: TRANSLATE_OK as usize,
            range_last: nothing(),
            generation: 0,
        }))
    }
}

#[cfg(target_os = "none")]
#[unsafe(export_name = "__neuron_translate_tlb")]
static TLB: TlbCell = TlbCell::new();

/// This core's TLB.
#[cfg(target_os = "none")]
fn tlb() -> *mut Tlb {
    TLB.0.get()
}

#[cfg(not(target_os = "none"))]
std::thread_local! {
    static TLB: TlbCell = const { TlbCell::new() };
}

/// This core's TLB: on the host, this test thread's.
#[cfg(not(target_os = "none"))]
fn tlb() -> *mut Tlb {
    TLB.with(|cell| cell.0.get())
}

/// The first of this core's windows, from the TLB's raw pointer.
#[inline(always)]
fn windows_start() -> *const Window {
    // SAFETY: a place computation on this core's TLB; nothing is read.
    unsafe { (&raw const (*tlb()).windows).cast::<Window>() }
}

/// Replaces this core's regions with `records` (first match wins, in this order).
///
/// # Errors
/// [`TranslateError::TooManyRecords`] or the first invalid record's error; no region is
/// configured then, so every translation misses.
pub fn configure(records: &[TranslateRecord]) -> Result<(), TranslateError> {
    configure_for_core(records, crate::arch::prid())
}

/// [`configure`] as core `core` sees the per-core records.
fn configure_for_core(records: &[TranslateRecord], core: u32) -> Result<(), TranslateError> {
    // Copies of a static, not array expressions: those are written out window by
    // window, field by field, in this cold function's text.
    let mut windows = UNCONFIGURED;
    let checked = if records.len() > TRANSLATE_REGIONS {
        Err(TranslateError::TooManyRecords)
    } else {
        records.iter().zip(&mut windows).try_for_each(|(record, window)| {
            *window = Window::of(record, core)?;
            Ok(())
        })
    };
    let configured = if checked.is_ok() {
        records.len()
    } else {
        windows = UNCONFIGURED;
        0
    };
    let tlb = tlb();
    // A loader that configures the same windows before every op keeps the generation,
    // with it the argument resolutions setup may reuse, and the candidates, which
    // depend only on the windows (and, moved, are still windows of their buckets).
    // SAFETY: reads and writes of this core's TLB through its raw pointer while no
    // reference into it is live (module docs: one context per core, and no lookup
    // calls `configure`).
    unsafe {
        if bytes(&(*tlb).windows) == bytes(&windows) {
            return checked;
        }
        (*tlb).windows = windows;
        (*tlb).generation += 1;
    }
    let configured = &windows[..configured];
    // The field positions, as bits of a mask, that tell apart every pair of windows
    // taken so far; a pair that no position left can tell apart is skipped (it will
    // share a bucket). So when some position tells every pair apart, one is left.
    let mut positions = (1u32 << (MAX_FIELD_SHIFT + 1)) - 1;
    let (mut shared, mut disjoint) = (false, true);
    for (i, window) in configured.iter().enumerate() {
        // `take(i)`, not `[..i]`: a slice's bounds check would panic with numbers, which
        // would bring `core`'s integer formatting into every image.
        for earlier in configured.iter().take(i) {
            // Two windows differ where their `ptr`s do in a bit both masks cover (they
            // overlap when there is none), and a position tells them apart when one of
            // its four bits is such a bit.
            let differ = (window.ptr() ^ earlier.ptr()) & window.mask() & earlier.mask();
            disjoint &= differ != 0;
            let bits = differ >> FIELD_FLOOR;
            let apart_at = (bits | bits >> 1 | bits >> 2 | bits >> 3) as u32;
            if positions & apart_at == 0 {
                shared = true;
            } else {
                positions &= apart_at;
            }
        }
    }
    // The lowest position left. `positions` is never 0 (a position is dropped only by a
    // pair it tells apart), so this is at most MAX_FIELD_SHIFT. Its trailing zeros
    // counted by a loop, not `trailing_zeros`: this core has no count instruction, and
    // that expansion (a population count) is longer.
    let (mut field_shift, mut rest) = (0, positions);
    while rest & 1 == 0 && rest != 0 {
        rest >>= 1;
        field_shift += 1;
    }
    let fallback = match (shared, disjoint) {
        (false, _) => Fallback::Miss,
        (true, true) => Fallback::Search,
        (true, false) => Fallback::SearchInOrder,
    };
    let mut candidates = [nothing(); BUCKETS];
    // The last window first, so that each bucket ends with the first that can be in it:
    // the buckets whose field agrees with `ptr` on the bits the mask covers.
    for (index, window) in configured.iter().enumerate().rev() {
        let (fixed, free) = (field(window.ptr(), field_shift), !field(window.mask(), field_shift) & (BUCKETS - 1));
        let mut others = free;
        loop {
            candidates[fixed | others] = windows_start().wrapping_add(index);
            if others == 0 {
                break;
            }
            others = (others - 1) & free;
        }
    }
    // SAFETY: as above.
    unsafe {
        (*tlb).field_shift = field_shift;
        (*tlb).fallback = fallback;
        (*tlb).candidates = candidates;
        (*tlb).range_last = windows_start();
    }
    checked
}

/// This core's configuration generation: it changes whenever [`configure`] changes the
/// windows, so between two equal readings every translation gives the same answer.
#[inline(always)]
pub(crate) fn generation() -> u64 {
    // SAFETY: a plain read of this core's TLB; only `configure` writes the field, never
    // while this runs (module docs).
    unsafe { (*tlb()).generation }
}

/// The window `framework_addr` matches: the first in configuration order, which is the
/// only one when no two windows overlap. The candidate of the address's bucket first
/// (module docs); with `MOVE_CANDIDATE`, a hit found by searching becomes the bucket's
/// candidate when the windows allow it.
#[inline(always)]
fn find<const MOVE_CANDIDATE: bool>(framework_addr: u64) -> Option<*const Window> {
    let tlb = tlb();
    // SAFETY: the bucket index is below BUCKETS, so the slot is one of `candidates`;
    // only `configure` and `search` write the TLB, never during this read (module docs).
    let (slot, candidate) = unsafe {
        let slot = (&raw mut (*tlb).candidates).cast::<*const Window>().add(field(framework_addr, (*tlb).field_shift));
        (slot, *slot)
    };
    // SAFETY: a candidate is `nothing` or one of this TLB's windows (module docs).
    if unsafe { (*candidate).matches(framework_addr) } {
        return Some(candidate);
    }
    search(framework_addr, slot, MOVE_CANDIDATE)
}

/// [`find`] after its candidate failed: every window in configuration order, when the
/// [`Fallback`] says the candidate was not the only possible match. Out of line: rare,
/// and `translate_range` is inlined into setup.
#[inline(never)]
fn search(framework_addr: u64, slot: *mut *const Window, move_candidate: bool) -> Option<*const Window> {
    let tlb = tlb();
    // SAFETY: a plain read of this core's TLB (module docs).
    let fallback = unsafe { (*tlb).fallback };
    if fallback == Fallback::Miss {
        return None;
    }
    let windows = windows_start();
    // SAFETY: `windows` is the TLB's array of TRANSLATE_REGIONS windows.
    let hit = (0..TRANSLATE_REGIONS)
        .map(|index| windows.wrapping_add(index))
        .find(|&window| unsafe { (*window).matches(framework_addr) })?;
    if move_candidate && fallback == Fallback::Search {
        // SAFETY: `slot` is a candidate slot of this TLB (`find`); no reference into
        // the TLB is live. Disjoint windows: the hit is the only window of the address,
        // so it is a window its bucket can hold.
        unsafe { *slot = hit };
    }
    Some(hit)
}

/// Translates `framework_addr` through the regions the loader configured for this op.
///
/// # Errors
/// [`TranslateError::Miss`] when no region matches.
#[inline]
pub fn translate(framework_addr: u64) -> Result<*mut u8, TranslateError> {
    let window = find::<true>(framework_addr).ok_or(TranslateError::Miss)?;
    Ok(device_pointer(framework_addr, window))
}

/// The device pointer of `framework_addr` in `window`, which it matches.
#[inline(always)]
fn device_pointer(framework_addr: u64, window: *const Window) -> *mut u8 {
    // SAFETY: `window` is one of this TLB's windows (`find`).
    let delta = unsafe { (*window).delta };
    // Truncating the address is exact: `configure` checked the device window fits.
    (framework_addr as usize).wrapping_add(delta) as *mut u8
}

/// Translates the `len` bytes at `framework_addr` (`len` 0 counts as 1): the device
/// pointer of the first, when all of them lie in the window the first byte matches, so
/// they are contiguous device memory from there. Unlike [`translate`], it never makes a
/// window its bucket's candidate: setup translates every argument of an op with it,
/// once, and the op's own translations are what the candidates should follow. It
/// tests the window of its own last hit first instead. A tensor's bytes are one such
/// range: one window lookup and one compare, where translating the first and the last
/// byte would be two lookups.
///
/// ```
/// use neuroncustomop::translate::{RangeError, TranslateRecord, configure, translate_range};
/// configure(&[TranslateRecord::window(0x7f00_0000_0000, 0x1000, 0x8000_0000)]).unwrap();
/// assert_eq!(translate_range(0x7f00_0000_0f00, 0x100).unwrap() as usize, 0x8000_0f00);
/// assert_eq!(translate_range(0x7f00_0000_0f00, 0x101), Err(RangeError::OutsideWindow));
/// assert_eq!(translate_range(0x7f00_0000_1000, 1), Err(RangeError::Miss));
/// ```
///
/// # Errors
/// [`RangeError::Miss`] when the first byte matches no region,
/// [`RangeError::OutsideWindow`] when the last byte is past the end of its window.
#[inline]
pub fn translate_range(framework_addr: u64, len: usize) -> Result<*mut u8, RangeError> {
    let tlb = tlb();
    // SAFETY: a plain read of this core's TLB; `range_last` is `nothing` or one of its
    // windows.
    let last = unsafe { (*tlb).range_last };
    // SAFETY: as above.
    let window = if unsafe { (*last).matches(framework_addr) } {
        last
    } else {
        range_window(framework_addr).ok_or(RangeError::Miss)?
    };
    // SAFETY: `window` is one of this TLB's windows (`find`).
    let last_offset = unsafe { (*window).last_offset };
    // The first byte's offset in the window: the offset bits fit a pointer (see
    // `last_offset`), so truncating the address first is exact.
    let offset = framework_addr as usize & last_offset;
    if len.saturating_sub(1) > last_offset - offset {
        return Err(RangeError::OutsideWindow);
    }
    // The device window is not at 0, so neither is this.
    Ok(device_pointer(framework_addr, window))
}

/// [`translate_range`]'s lookup after `range_last` failed: [`find`], without moving a
/// candidate; the hit becomes `range_last` unless windows overlap.
#[inline(never)]
fn range_window(framework_addr: u64) -> Option<*const Window> {
    let hit = find::<false>(framework_addr)?;
    let tlb = tlb();
    // SAFETY: a read and a store of this core's TLB while no reference into it is
    // live; disjoint windows: the hit is the address's only window.
    unsafe {
        if (*tlb).fallback != Fallback::SearchInOrder {
            (*tlb).range_last = hit;
        }
    }
    Some(hit)
}

/// Keeps the last C call's outcome ([`Tlb::outcome`]).
fn record_outcome(outcome: usize) {
    // SAFETY: a plain store to this core's TLB while no reference into it is live.
    unsafe { (*tlb()).outcome = outcome };
}

fn status_of<T>(result: &Result<T, TranslateError>) -> c_int {
    result.as_ref().map_or_else(|error| error.code(), |_| TRANSLATE_OK)
}

#[cfg(target_arch = "xtensa")]
unsafe extern "C" {
    /// C ABI `void *neuron_translate(uint64_t framework_addr)`: the device pointer, or
    /// null on a miss; `neuron_translate_status` says which. On the device:
    /// `runtime/arch/xtensa/translate.S`, [`find`] and [`translate`] in assembly.
    pub safe fn neuron_translate(framework_addr: u64) -> *mut c_void;
}

/// C ABI `void *neuron_translate(uint64_t framework_addr)`: the device pointer, or null
/// on a miss; `neuron_translate_status` says which. The host's stand-in for
/// `runtime/arch/xtensa/translate.S`: the same lookup and the same outcome.
#[cfg(not(target_arch = "xtensa"))]
pub extern "C" fn neuron_translate(framework_addr: u64) -> *mut c_void {
    match find::<true>(framework_addr) {
        Some(window) => {
            record_outcome(window.addr());
            device_pointer(framework_addr, window).cast()
        }
        None => {
            record_outcome(TranslateError::Miss.code() as usize);
            ptr::null_mut()
        }
    }
}

/// C ABI `int neuron_translate_status(void)`: 0, or the [`TranslateError::code`] of the
/// last `neuron_translate` / `neuron_translate_configure`.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn neuron_translate_status() -> c_int {
    // SAFETY: a plain load from this core's TLB while no `&mut` into it is live.
    let outcome = unsafe { (*tlb()).outcome };
    let hit = outcome.wrapping_sub(windows_start().addr()) < size_of::<[Window; TRANSLATE_REGIONS]>();
    if hit { TRANSLATE_OK } else { outcome as c_int }
}

/// C ABI `int neuron_translate_configure(const TranslateRecord *records, uint32_t
/// count)`: [`configure`] from the loader; returns the status (0 or an error code).
///
/// # Safety
/// `records` is null or points to `count` readable records.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn neuron_translate_configure(records: *const TranslateRecord, count: u32) -> c_int {
    let result = match (records.is_null(), count) {
        (_, 0) => configure(&[]),
        (true, _) => configure(&[]).and(Err(TranslateError::NullRecords)),
        (false, count) if count as usize <= TRANSLATE_REGIONS => {
            // SAFETY: the caller makes `records` valid for `count` records; the count is
            // checked against the table size before the slice is formed.
            configure(unsafe { core::slice::from_raw_parts(records, count as usize) })
        }
        (false, _) => configure(&[]).and(Err(TranslateError::TooManyRecords)),
    };
    let status = status_of(&result);
    record_outcome(status as usize);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_models::translate as reference;
    use proptest::prelude::*;
    use std::vec::Vec;

    /// Mostly valid records: a power-of-two window at an aligned address, sometimes
    /// per-core, sometimes with one field broken.
    fn record() -> impl Strategy<Value = TranslateRecord> {
        let valid = (0u32..=64, any::<u64>(), 1u64..=u64::from(u32::MAX), any::<bool>(), 0u32..=0x10_0000).prop_map(
            |(size_log2, start, device_base, per_core, stride)| {
                let mask = u64::MAX.checked_shl(size_log2).unwrap_or(0);
                TranslateRecord {
                    ptr: start & mask,
                    mask,
                    device_base,
                    flags: if per_core { TRANSLATE_PER_CORE } else { 0 },
                    core_stride: if per_core { stride } else { 0 },
                }
            },
        );
        let broken = (valid.clone(), 0..6u32, any::<u64>()).prop_map(|(mut record, field, noise)| {
            reference::break_field(&mut record, field, noise);
            record
        });
        prop_oneof![6 => valid, 1 => broken]
    }

    /// Up to five valid windows near each other: a shared base, each one at a small
    /// offset `<< bit` and of at most that size, so that windows share buckets (a `bit`
    /// outside the field's reach), overlap (a size above it) or are told apart by a field.
    fn clustered_records() -> impl Strategy<Value = Vec<TranslateRecord>> {
        let window = (0u64..8, 0u32..=8, 1u64..=u64::from(u32::MAX >> 1));
        (any::<u64>(), 0u32..56, proptest::collection::vec(window, 1..=5)).prop_map(|(base, bit, windows)| {
            windows
                .into_iter()
                .map(|(offset, extra_log2, device_base)| {
                    let size_log2 = (bit + extra_log2).saturating_sub(4).min(31);
                    let mask = u64::MAX << size_log2;
                    TranslateRecord::window((base ^ (offset << bit)) & mask, 1 << size_log2, device_base)
                })
                .collect()
        })
    }

    /// Addresses at and around every record's edges, plus random ones.
    fn probes(records: &[TranslateRecord], random: &[u64]) -> Vec<u64> {
        let mut probes = random.to_vec();
        for record in records {
            let last = record.ptr | !record.mask;
            probes.extend([
                record.ptr,
                last,
                record.ptr.wrapping_sub(1),
                last.wrapping_add(1),
                record.ptr | (!record.mask >> 1),
            ]);
        }
        probes
    }

    proptest! {
        // Miri interprets about 1000x slower: a few cases there, the full count natively.
        #![proptest_config(if cfg!(miri) { ProptestConfig::with_cases(8) } else { ProptestConfig::default() })]

        #[test]
        fn translate_range_matches_reference(
            records in proptest::collection::vec(record(), 1..=5),
            core in 0u32..8,
            lens in proptest::collection::vec(prop_oneof![0u64..=64, any::<u32>().prop_map(u64::from)], 6),
        ) {
            prop_assume!(configure_for_core(&records, core).is_ok());
            for addr in probes(&records, &[]) {
                for &len in &lens {
                    // Lengths that end exactly at the window's last byte, and one past it.
                    let to_end = (addr | !records[0].mask).wrapping_sub(addr).wrapping_add(1);
                    for len in [len, to_end, to_end.wrapping_add(1)] {
                        let Ok(len_usize) = usize::try_from(len) else { continue };
                        let expected = reference::translate_range(&records, core, addr, len);
                        let got = translate_range(addr, len_usize).map(|device| device as usize as u128);
                        prop_assert_eq!(got, expected, "addr {:#x} len {:#x}", addr, len);
                    }
                }
            }
        }

        #[test]
        fn lookups_in_any_order_match_the_reference_whichever_fallback(
            records in clustered_records(),
            order in proptest::collection::vec(any::<proptest::sample::Index>(), 1..40),
            random in proptest::collection::vec(any::<u64>(), 4),
        ) {
            prop_assert_eq!(configure(&records), Ok(()));
            let probes = probes(&records, &random);
            // Hits in one window after another move candidates (when the windows share
            // buckets); every answer stays the first match's.
            for index in order {
                let addr = probes[index.index(probes.len())];
                let expected = reference::translate(&records, 0, addr);
                prop_assert_eq!(translate(addr).map(|device| device as usize as u128).ok(), expected, "translate({:#x})", addr);
                let device = neuron_translate(addr);
                prop_assert_eq!((!device.is_null()).then_some(device as usize as u128), expected, "neuron_translate({:#x})", addr);
                let status = if expected.is_some() { TRANSLATE_OK } else { TranslateError::Miss.code() };
                prop_assert_eq!(neuron_translate_status(), status);
                let range = reference::translate_range(&records, 0, addr, 1);
                prop_assert_eq!(translate_range(addr, 1).map(|device| device as usize as u128), range);
            }
        }

        #[test]
        fn translate_matches_reference(
            records in proptest::collection::vec(record(), 0..=6),
            core in 0u32..8,
            random in proptest::collection::vec(any::<u64>(), 8),
        ) {
            let accepted = configure_for_core(&records, core);
            prop_assert_eq!(accepted, reference::accepts(&records, core));
            for addr in probes(&records, &random) {
                let expected = if accepted.is_ok() { reference::translate(&records, core, addr) } else { None };
                let got = translate(addr).map(|device| device as usize as u128).ok();
                prop_assert_eq!(got, expected, "addr {:#x}", addr);
            }
        }
    }

    #[test]
    fn window_edges_hit_and_miss() {
        let record = TranslateRecord::window(0x1_0000_0000, 0x1000, 0x4000_0000);
        configure(&[record]).unwrap();
        assert_eq!(translate(0x1_0000_0000), Ok(0x4000_0000 as *mut u8));
        assert_eq!(translate(0x1_0000_0fff), Ok(0x4000_0fff as *mut u8));
        assert_eq!(translate(0x0_ffff_ffff), Err(TranslateError::Miss));
        assert_eq!(translate(0x1_0000_1000), Err(TranslateError::Miss));
        assert_eq!(translate(0x0_0000_0000), Err(TranslateError::Miss)); // same low bits, other high word
    }

    #[test]
    fn the_generation_changes_exactly_when_the_windows_do() {
        let one = TranslateRecord::window(0x1_0000_0000, 0x1000, 0x4000_0000);
        let other = TranslateRecord::window(0x2_0000_0000, 0x1000, 0x4000_0000);
        configure(&[one]).unwrap();
        let start = generation();
        configure(&[one]).unwrap();
        assert_eq!(generation(), start, "the same windows again");
        configure(&[one, other]).unwrap();
        assert_eq!(generation(), start + 1);
        configure(&[one, other]).unwrap();
        configure(&[other, one]).unwrap();
        assert_eq!(generation(), start + 2, "the order decides which window wins");
        assert!(configure(&[TranslateRecord { mask: 1, ..one }]).is_err());
        assert_eq!(generation(), start + 3, "a refused configuration leaves no window");
        assert!(configure(&[TranslateRecord { mask: 1, ..other }]).is_err());
        assert_eq!(generation(), start + 3, "still none");
    }

    #[test]
    fn first_configured_record_wins_on_overlap() {
        let narrow = TranslateRecord::window(0x8000, 0x100, 0x10_0000);
        let wide = TranslateRecord::window(0x0, 0x1_0000, 0x20_0000);
        configure(&[narrow, wide]).unwrap();
        assert_eq!(translate(0x8010), Ok(0x10_0010 as *mut u8));
        assert_eq!(translate(0x9000), Ok(0x20_9000 as *mut u8));
        // A hit in the second window does not make it a candidate: it overlaps.
        assert_eq!(translate(0x8010), Ok(0x10_0010 as *mut u8));
        configure(&[wide, narrow]).unwrap();
        assert_eq!(translate(0x8010), Ok(0x20_8010 as *mut u8));
    }

    /// This thread's field position, fallback and candidates, as window indices
    /// (`None` for `nothing`).
    fn buckets() -> (u32, Fallback, [Option<usize>; BUCKETS]) {
        // SAFETY: plain reads of this thread's TLB; no reference into it is live.
        unsafe {
            let tlb = tlb();
            let index = |candidate: *const Window| {
                (candidate != nothing()).then(|| candidate.offset_from(windows_start()) as usize)
            };
            ((*tlb).field_shift, (*tlb).fallback, (*tlb).candidates.map(index))
        }
    }

    /// Five 1 MiB windows whose addresses differ in bits `bit..bit + 3` only.
    fn five_windows(bit: u32) -> [TranslateRecord; 5] {
        core::array::from_fn(|i| {
            TranslateRecord::window(0x7f00_0000_0000 + ((i as u64) << bit), 1 << 20, 0x6300_0000 + ((i as u64) << 20))
        })
    }

    #[test]
    fn windows_a_field_tells_apart_have_one_bucket_each_and_a_failed_candidate_is_a_miss() {
        // The benchmark's windows: they differ in address bits 32..34.
        let records = five_windows(32);
        configure(&records).unwrap();
        let (field_shift, fallback, candidates) = buckets();
        assert_eq!(fallback, Fallback::Miss);
        for (i, record) in records.iter().enumerate() {
            assert_eq!(candidates[field(record.ptr, field_shift)], Some(i), "record {i}");
        }
        assert_eq!(candidates.iter().flatten().count(), 5, "one bucket per window");
        for i in [4, 4, 1, 0, 3, 2] {
            assert_eq!(translate(records[i].ptr + 0x40), Ok((records[i].device_base + 0x40) as usize as *mut u8));
        }
        assert_eq!(buckets().2, candidates, "hits never move a candidate here");
        assert_eq!(translate(0x7f05_0000_0000), Err(TranslateError::Miss));
        assert_eq!(translate(records[2].ptr | 0x10_0000), Err(TranslateError::Miss), "past a window's end");
    }

    #[test]
    fn disjoint_windows_sharing_buckets_make_the_last_hit_the_candidate() {
        // Bits 50..52: above every field position.
        let records = five_windows(50);
        configure(&records).unwrap();
        let (field_shift, fallback, first) = buckets();
        assert_eq!(fallback, Fallback::Search);
        let bucket = field(records[0].ptr + 0x40, field_shift);
        assert_eq!(first[bucket], Some(0), "the first window that can be in the bucket");
        for i in [3, 3, 1, 0, 4, 2] {
            let addr = records[i].ptr + 0x40;
            assert_eq!(translate(addr), Ok((records[i].device_base + 0x40) as usize as *mut u8), "record {i}");
            assert_eq!(buckets().2[bucket], Some(i), "after a hit in record {i}");
        }
        assert_eq!(translate(0x7f05_0000_0000), Err(TranslateError::Miss));
        assert_eq!(translate_range(records[4].ptr + 0x40, 16), Ok((records[4].device_base + 0x40) as usize as *mut u8));
        assert_eq!(buckets().2[bucket], Some(2), "a miss and a range lookup (setup's) keep the candidate");
        configure(&records).unwrap();
        assert_eq!(buckets().2[bucket], Some(2), "the same windows again keep it too");
        configure(&five_windows(49)).unwrap();
        assert_eq!(buckets().2[bucket], Some(0), "new windows start from the first");
    }

    #[test]
    fn overlapping_windows_keep_the_first_match_and_their_candidates() {
        let records = five_windows(32);
        // A 1 MiB window inside a 1 GiB one.
        let wide = TranslateRecord { mask: !0x3FFF_FFFF, ..records[4] };
        let narrow = TranslateRecord { ptr: records[4].ptr + 0x1000_0000, ..records[3] };
        for (order, expected) in
            [([narrow, wide], narrow.device_base), ([wide, narrow], wide.device_base + 0x1000_0000)]
        {
            configure(&[records[0], order[0], order[1]]).unwrap();
            let before = buckets();
            assert_eq!(before.1, Fallback::SearchInOrder);
            for _ in 0..2 {
                assert_eq!(translate(narrow.ptr), Ok(expected as usize as *mut u8));
                assert_eq!(translate(wide.ptr), Ok(wide.device_base as usize as *mut u8));
                assert_eq!(translate(records[0].ptr), Ok(records[0].device_base as usize as *mut u8));
            }
            assert_eq!(buckets().2, before.2, "candidates never move");
        }
    }

    #[test]
    fn per_core_records_give_each_core_its_own_slice() {
        let shared = TranslateRecord {
            flags: TRANSLATE_PER_CORE,
            core_stride: 0x4000,
            ..TranslateRecord::window(0x7000_0000, 0x4000, 0x3FFE_0000)
        };
        for core in 0..8u32 {
            configure_for_core(&[shared], core).unwrap();
            let expected = 0x3FFE_0000 + core as usize * 0x4000 + 0x10;
            assert_eq!(translate(0x7000_0010), Ok(expected as *mut u8));
        }
        // `configure` itself uses this core's PRID.
        configure(&[shared]).unwrap();
        let expected = 0x3FFE_0000 + crate::arch::prid() as usize * 0x4000;
        assert_eq!(translate(0x7000_0000), Ok(expected as *mut u8));
    }

    #[test]
    fn invalid_configurations_are_refused_and_fail_closed() {
        let good = TranslateRecord::window(0x1000, 0x1000, 0x9000);
        let cases = [
            (TranslateRecord { mask: 0xFFFF_FFFF_FFFF_F0F0, ..good }, TranslateError::MaskNotContiguous),
            (TranslateRecord { ptr: 0x1800, ..good }, TranslateError::PtrOutsideMask),
            (TranslateRecord { flags: 2, ..good }, TranslateError::InvalidFlags),
            (TranslateRecord { core_stride: 64, ..good }, TranslateError::InvalidFlags),
            (TranslateRecord { device_base: 0, ..good }, TranslateError::WindowOutOfRange),
            (TranslateRecord { device_base: u64::MAX - 0x10, ..good }, TranslateError::WindowOutOfRange),
            (TranslateRecord::window(0, 0, 1), TranslateError::WindowOutOfRange), // mask 0: all 2^64 addresses
        ];
        for (bad, error) in cases {
            configure(&[good]).unwrap();
            assert_eq!(configure(&[good, bad]), Err(error), "{bad:?}");
            assert_eq!(translate(0x1000), Err(TranslateError::Miss), "a refused set must leave nothing configured");
        }
        assert_eq!(configure(&[good; TRANSLATE_REGIONS + 1]), Err(TranslateError::TooManyRecords));
        assert_eq!(configure(&[good; TRANSLATE_REGIONS]), Ok(()));
    }

    #[test]
    fn c_abi_reports_null_and_status() {
        let records = [TranslateRecord::window(0x2000, 0x1000, 0x5000)];
        // SAFETY: `records` holds one record; the other calls pass null or too many.
        unsafe {
            assert_eq!(neuron_translate_configure(records.as_ptr(), 1), TRANSLATE_OK);
            assert_eq!(neuron_translate_status(), TRANSLATE_OK);
            assert_eq!(neuron_translate(0x2004) as usize, 0x5004);
            assert_eq!(neuron_translate_status(), TRANSLATE_OK);
            assert!(neuron_translate(0x3000).is_null());
            assert_eq!(neuron_translate_status(), TranslateError::Miss.code());
            assert_eq!(neuron_translate_configure(records.as_ptr(), 6), TranslateError::TooManyRecords.code());
            assert!(neuron_translate(0x2004).is_null());
            assert_eq!(neuron_translate_configure(records.as_ptr(), 1), TRANSLATE_OK);
            assert_eq!(neuron_translate_configure(core::ptr::null(), 1), TranslateError::NullRecords.code());
            assert_eq!(neuron_translate_status(), TranslateError::NullRecords.code());
            assert!(neuron_translate(0x2004).is_null());
            assert_eq!(neuron_translate_configure(core::ptr::null(), 0), TRANSLATE_OK);
        }
    }

    #[test]
    fn range_edges_hit_and_miss() {
        let narrow = TranslateRecord::window(0x8000, 0x100, 0x10_0000);
        let wide = TranslateRecord::window(0x0, 0x1_0000, 0x20_0000);
        configure(&[narrow, wide]).unwrap();
        assert_eq!(translate_range(0x8000, 0x100), Ok(0x10_0000 as *mut u8));
        assert_eq!(translate_range(0x80ff, 1), Ok(0x10_00ff as *mut u8));
        assert_eq!(translate_range(0x80ff, 0), Ok(0x10_00ff as *mut u8)); // 0 counts as 1
        // Starts in the narrow window (first match) and runs out of it, even though the
        // wide window holds every byte: a tensor's bytes are in one window.
        assert_eq!(translate_range(0x8000, 0x101), Err(RangeError::OutsideWindow));
        assert_eq!(translate_range(0x7f00, 0x1000), Ok(0x20_7f00 as *mut u8));
        assert_eq!(translate_range(0xffff, 2), Err(RangeError::OutsideWindow));
        assert_eq!(translate_range(0x1_0000, 1), Err(RangeError::Miss));
        assert_eq!(translate_range(0, usize::MAX), Err(RangeError::OutsideWindow));
    }

    #[test]
    fn unconfigured_table_misses_everything() {
        for addr in [0, 1, u64::MAX, 0x8000_0000] {
            assert_eq!(translate(addr), Err(TranslateError::Miss));
        }
    }
}
