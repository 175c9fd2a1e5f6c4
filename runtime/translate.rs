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
//! in pointer arithmetic. A translation is then, per record, a masked compare of each
//! 32-bit half, and on a hit one pointer-sized add. A rejected configuration leaves
//! no record configured (fail closed: a window of the previous op must not translate
//! this op's addresses).
//!
//! # The last hit first
//! An op touches one or two windows over and over, so the search starts at the window
//! of the last hit: a hit there costs the same whatever its record's index
//! (`neuron_translate`: 18 Xtensa instructions, `entry` to `retw`), and each record
//! tested before the hit 4 to 8 more (one compare when the address's low half
//! already differs, two when it matches). That is only allowed when no two configured
//! windows overlap, so that an address matches at most one window and the order of the
//! search cannot change the answer; `configure` checks it, and with an overlap the
//! search always starts at the first record (first match wins). The windows are kept
//! twice over, in configuration order, so the five read from any start are the five
//! records with no index arithmetic, and a miss still tests each record once.
//!
//! # State and soundness
//! The table is core-local state read on every tensor access, so it is not kept in a
//! `CoreLocal` (whose borrow flag would cost a load, a test and two stores per call).
//! It lives in an `UnsafeCell` read through a shared reference in [`translate`] and
//! written only by `configure`, by the status store in `neuron_translate` and by the
//! search-start store at the end of a lookup, after its last read. This is sound under
//! the runtime's invariant (`crate::global`): each core has its own copy of the table
//! and runs one context at a time, and none of these calls another, so a write never
//! overlaps a live reference. On the host, where test threads stand in
//! for cores, the table is thread-local for the same reason.

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
/// as 32-bit halves, so the 32-bit core tests the low half and branches at once.
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

impl Window {
    /// Matches nothing: `ptr` has a bit outside `mask`, which `configure` never accepts.
    const UNUSED: Window = Window { mask_low: 0, ptr_low: 1, mask_high: 0, ptr_high: 0, delta: 0, last_offset: 0 };

    /// `(addr & mask) == ptr`.
    #[inline(always)]
    fn matches(&self, addr: u64) -> bool {
        (addr as u32 & self.mask_low) == self.ptr_low && ((addr >> 32) as u32 & self.mask_high) == self.ptr_high
    }

    /// Whether some address matches both: windows are aligned power-of-two blocks, so
    /// they overlap exactly when their `ptr`s agree on the mask bits both have.
    fn overlaps(&self, other: &Window) -> bool {
        let (low, high) = (self.mask_low & other.mask_low, self.mask_high & other.mask_high);
        self.ptr_low & low == other.ptr_low & low && self.ptr_high & high == other.ptr_high & high
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

/// The software TLB of one core. C layout, so the fields the hot path reads are at
/// small offsets (single loads), not after the ring.
#[repr(C)]
struct Tlb {
    /// The first window the search reads: the window of the last hit when `rotates`,
    /// else the first; one of the first `TRANSLATE_REGIONS` windows of `ring`, or
    /// [`UNCONFIGURED`] before the first `configure`. A pointer rather than an index:
    /// one load on the hot path. Derived from [`tlb`]'s raw pointer, never from a
    /// reference, so writes to the table do not invalidate it.
    start: *const Window,
    /// No two configured windows overlap: the search may start anywhere (module docs).
    rotates: bool,
    /// The configured windows in configuration order, `UNUSED` where fewer were given,
    /// twice over: the search reads [`TRANSLATE_REGIONS`] windows from `start`.
    ring: [Window; 2 * TRANSLATE_REGIONS],
    /// [`TRANSLATE_OK`] or the code of the last failed C call.
    status: c_int,
    /// How many times the windows changed: equal generations, equal translations
    /// (what lets setup reuse a previous op's resolved arguments). 64 bits never wrap.
    generation: u64,
}

/// What the search reads before the first `configure`: no window.
static UNCONFIGURED: [Window; TRANSLATE_REGIONS] = [Window::UNUSED; TRANSLATE_REGIONS];

/// The TLB's cell; see "State and soundness" in the module docs.
struct TlbCell(UnsafeCell<Tlb>);

// SAFETY: each core has its own copy and one context at a time (module docs); on the
// host the cell is thread-local and never shared.
unsafe impl Sync for TlbCell {}

impl TlbCell {
    const fn new() -> TlbCell {
        TlbCell(UnsafeCell::new(Tlb {
            start: UNCONFIGURED.as_ptr(),
            rotates: false,
            ring: [Window::UNUSED; 2 * TRANSLATE_REGIONS],
            status: TRANSLATE_OK,
            generation: 0,
        }))
    }
}

#[cfg(target_os = "none")]
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
    let mut windows = [Window::UNUSED; TRANSLATE_REGIONS];
    let checked = if records.len() > TRANSLATE_REGIONS {
        Err(TranslateError::TooManyRecords)
    } else {
        records.iter().zip(&mut windows).try_for_each(|(record, window)| {
            *window = Window::of(record, core)?;
            Ok(())
        })
    };
    let (windows, configured) = if checked.is_ok() { (windows, records.len()) } else { ([Window::UNUSED; TRANSLATE_REGIONS], 0) };
    let configured = &windows[..configured];
    let disjoint = configured.iter().enumerate().all(|(i, window)| configured[..i].iter().all(|earlier| !earlier.overlaps(window)));
    // SAFETY: no reference into the TLB is live (module docs: one context per core and
    // `translate` does not call `configure`), so these writes are exclusive.
    let tlb = unsafe { &mut *tlb() };
    // A loader that configures the same windows before every op keeps the generation,
    // and with it the argument resolutions setup may reuse.
    if tlb.ring[..TRANSLATE_REGIONS] != windows {
        tlb.ring = core::array::from_fn(|i| windows[i % TRANSLATE_REGIONS]);
        tlb.generation += 1;
    }
    tlb.rotates = disjoint;
    set_search_start(ring_start());
    checked
}

/// The first window of this core's ring, from the TLB's raw pointer.
#[inline(always)]
fn ring_start() -> *const Window {
    // SAFETY: a place computation on this core's TLB; nothing is read.
    unsafe { (&raw const (*tlb()).ring).cast::<Window>() }
}

/// Makes the search start at `window`, one of the ring's first `TRANSLATE_REGIONS`.
#[inline(always)]
fn set_search_start(window: *const Window) {
    // SAFETY: a plain store to this core's TLB while no reference into it is live.
    unsafe { (*tlb()).start = window };
}

/// This core's configuration generation: it changes whenever [`configure`] changes the
/// windows, so between two equal readings every translation gives the same answer.
#[inline(always)]
pub(crate) fn generation() -> u64 {
    // SAFETY: a plain read of this core's TLB; only `configure` writes the field, never
    // while this runs (module docs).
    unsafe { (*tlb()).generation }
}

/// The window `framework_addr` matches: the first in configuration order, which is
/// the only one when the search may start at the last hit (module docs). With
/// `MOVE_START`, a hit makes the search start at its window from then on.
#[inline(always)]
fn find<const MOVE_START: bool>(framework_addr: u64) -> Option<Window> {
    // SAFETY: only `configure`, `record_status` and the store below write the TLB, never
    // while this shared borrow is live (module docs; its last use is before the store).
    let tlb = unsafe { &*tlb() };
    let start = tlb.start;
    // SAFETY: `start` is UNCONFIGURED or one of the ring's first TRANSLATE_REGIONS
    // windows (every store keeps it so), so TRANSLATE_REGIONS windows from it are
    // readable; only the stores of `configure` write them, never during this read.
    let [first, second, third, fourth, fifth] = unsafe { &*start.cast::<[Window; TRANSLATE_REGIONS]>() };
    // The five tests written out: a loop costs an index and a bound check per window.
    if first.matches(framework_addr) {
        return Some(*first);
    }
    let window = if second.matches(framework_addr) {
        second
    } else if third.matches(framework_addr) {
        third
    } else if fourth.matches(framework_addr) {
        fourth
    } else if fifth.matches(framework_addr) {
        fifth
    } else {
        return None;
    };
    // The hit's address with `start`'s provenance (the TLB's raw pointer): a pointer
    // derived from the reference `window` would only ever be valid for that one window.
    let (hit, window) = (start.with_addr(ptr::from_ref(window).addr()), *window);
    if MOVE_START && tlb.rotates {
        // `start` is in the ring (a configured table), and so is the hit, wrapped into
        // its first half. The shared borrow above is no longer used.
        let second_half = ring_start().wrapping_add(TRANSLATE_REGIONS);
        set_search_start(if hit >= second_half { hit.wrapping_sub(TRANSLATE_REGIONS) } else { hit });
    }
    Some(window)
}

/// Translates `framework_addr` through the regions the loader configured for this op.
///
/// # Errors
/// [`TranslateError::Miss`] when no region matches.
#[inline]
pub fn translate(framework_addr: u64) -> Result<*mut u8, TranslateError> {
    let window = find::<true>(framework_addr).ok_or(TranslateError::Miss)?;
    // Truncating the address is exact: `configure` checked the device window fits.
    Ok((framework_addr as usize).wrapping_add(window.delta) as *mut u8)
}

/// Translates the `len` bytes at `framework_addr` (`len` 0 counts as 1): the device
/// pointer of the first, when all of them lie in the window the first byte matches, so
/// they are contiguous device memory from there. Unlike [`translate`], it leaves the
/// search start where it is: setup translates every argument of an op with it, once,
/// and the op's own translations are what the start should follow. A tensor's bytes are one such range:
/// one window lookup and one compare, where translating the first and the last byte
/// would be two lookups.
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
    let window = find::<false>(framework_addr).ok_or(RangeError::Miss)?;
    // The first byte's offset in the window: the offset bits fit a pointer (see
    // `last_offset`), so truncating the address first is exact.
    let offset = framework_addr as usize & window.last_offset;
    if len.saturating_sub(1) > window.last_offset - offset {
        return Err(RangeError::OutsideWindow);
    }
    // As in `translate`; the device window is not at 0, so neither is this.
    Ok((framework_addr as usize).wrapping_add(window.delta) as *mut u8)
}

fn record_status(status: c_int) {
    // SAFETY: a plain store to this core's TLB while no reference into it is live.
    unsafe { (*tlb()).status = status };
}

fn status_of<T>(result: &Result<T, TranslateError>) -> c_int {
    result.as_ref().map_or_else(|error| error.code(), |_| TRANSLATE_OK)
}

/// C ABI `void *neuron_translate(uint64_t framework_addr)`: the device pointer, or null
/// on a miss; `neuron_translate_status` says which.
#[cfg_attr(target_os = "none", unsafe(no_mangle))]
pub extern "C" fn neuron_translate(framework_addr: u64) -> *mut c_void {
    let result = translate(framework_addr);
    record_status(status_of(&result));
    result.map_or(ptr::null_mut(), |device| device.cast())
}

/// C ABI `int neuron_translate_status(void)`: 0, or the [`TranslateError::code`] of the
/// last `neuron_translate` / `neuron_translate_configure`.
#[cfg_attr(target_os = "none", unsafe(no_mangle))]
pub extern "C" fn neuron_translate_status() -> c_int {
    // SAFETY: a plain load from this core's TLB while no `&mut` into it is live.
    unsafe { (*tlb()).status }
}

/// C ABI `int neuron_translate_configure(const TranslateRecord *records, uint32_t
/// count)`: [`configure`] from the loader; returns the status (0 or an error code).
///
/// # Safety
/// `records` is null or points to `count` readable records.
#[cfg_attr(target_os = "none", unsafe(no_mangle))]
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
    record_status(status);
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
        // A hit in the second window does not make it searched first: it overlaps.
        assert_eq!(translate(0x8010), Ok(0x10_0010 as *mut u8));
        configure(&[wide, narrow]).unwrap();
        assert_eq!(translate(0x8010), Ok(0x20_8010 as *mut u8));
    }

    /// Where this thread's search starts, as a record index.
    fn search_start() -> usize {
        // SAFETY: a plain read of this thread's TLB; no reference into it is live.
        unsafe { (*tlb()).start.offset_from(ring_start()) as usize }
    }

    #[test]
    fn the_search_starts_at_the_last_hit_only_when_no_windows_overlap() {
        let records: [TranslateRecord; 5] = core::array::from_fn(|i| {
            TranslateRecord::window(0x7f00_0000_0000 + ((i as u64) << 32), 1 << 20, 0x6300_0000 + ((i as u64) << 20))
        });
        configure(&records).unwrap();
        for i in [4, 4, 1, 0, 3, 2, 4, 0] {
            let addr = records[i].ptr + 0x40;
            assert_eq!(translate(addr), Ok((records[i].device_base + 0x40) as usize as *mut u8), "record {i}");
            assert_eq!(search_start(), i, "after a hit in record {i}");
        }
        translate(records[2].ptr).unwrap();
        assert_eq!(translate(0x7f05_0000_0000), Err(TranslateError::Miss));
        assert_eq!(search_start(), 2, "a miss keeps the start");
        assert_eq!(translate_range(records[4].ptr, 16), Ok(records[4].device_base as usize as *mut u8));
        assert_eq!(search_start(), 2, "a range lookup (setup's) keeps the start");
        configure(&records).unwrap();
        assert_eq!(search_start(), 0, "configure restarts at the first record");
        // Records 1 and 3 overlap (3 lies inside 1): the search never moves.
        let overlapping = [records[0], records[1], records[2], TranslateRecord { ptr: records[1].ptr + 0x1000, mask: !0xFFF, ..records[3] }];
        configure(&overlapping).unwrap();
        assert_eq!(translate(records[2].ptr), Ok(records[2].device_base as usize as *mut u8));
        assert_eq!(search_start(), 0);
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
