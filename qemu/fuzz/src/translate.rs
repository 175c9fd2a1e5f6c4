//! `translate::configure` / `translate` and their C ABI against the record list searched
//! in order with exact (u128) arithmetic.
//!
//! Input: the core to run as, up to 7 records (each either built valid from a window
//! size, a start, a device base and a per-core stride, then perhaps broken in one field,
//! or near an earlier record's start, or 32 raw bytes), how to hand them over (Rust slice, or the C call with a null or
//! over-long array), and addresses to probe besides every record's edges.
//!
//! Checked, whatever the records:
//! - `configure` accepts exactly the record sets the rules allow, with the first broken
//!   record's error, and the C call reports the same status;
//! - after an accepted set, every probe translates to the first matching record's
//!   device address (core-rebased when per-core), whatever the probes before it made
//!   the lookup's bucket candidates; after a refused one, every probe misses (fail
//!   closed);
//! - `neuron_translate` returns null exactly on a miss and sets the status to match;
//! - `translate_range` of each probe, for lengths the fuzzer picks and the lengths that
//!   end at and one past the matched window's last byte, gives the first byte's device
//!   address exactly when every byte lies in the first byte's window, `Miss` when there
//!   is none, and `OutsideWindow` otherwise.

use arbitrary::{Arbitrary, Unstructured};
use neuroncustomop::arch::set_prid_for_test;
use neuroncustomop::translate::{
    TRANSLATE_OK, TRANSLATE_PER_CORE, TRANSLATE_REGIONS, TranslateError, TranslateRecord, configure, neuron_translate,
    neuron_translate_configure, neuron_translate_status, translate, translate_range,
};

use neuroncustomop::test_models::translate as reference;

use crate::ensure_eq;

/// A record as the fuzzer describes it.
#[derive(Arbitrary, Debug)]
enum RecordSpec {
    /// A window of 2^`size_log2` bytes (mod 65) at `start` (aligned down), perhaps
    /// per-core, then `broken` applied.
    Window { size_log2: u8, start: u64, device_base: u64, per_core: Option<u32>, broken: Option<(u8, u64)> },
    /// Any 32 bytes.
    Raw { ptr: u64, mask: u64, device_base: u64, flags: u32, core_stride: u32 },
    /// A window of 2^`size_log2` bytes (mod 65) near an earlier record's start (index
    /// `from`, wrapping): that start with `offset`'s low 3 bits xored in at bit `bit`
    /// (mod 61). Windows that share the lookup's buckets, overlap, or differ only in
    /// the few bits its field can use.
    Near { from: u8, bit: u8, offset: u8, size_log2: u8, device_base: u64 },
}

impl RecordSpec {
    fn record(&self, earlier: &[TranslateRecord]) -> TranslateRecord {
        match *self {
            RecordSpec::Near { from, bit, offset, size_log2, device_base } => {
                let base = earlier.get(usize::from(from) % earlier.len().max(1)).map_or(0, |record| record.ptr);
                let mask = u64::MAX.checked_shl(u32::from(size_log2 % 65)).unwrap_or(0);
                let start = base ^ u64::from(offset & 7) << (bit % 61);
                TranslateRecord { ptr: start & mask, mask, device_base, flags: 0, core_stride: 0 }
            }
            RecordSpec::Window { size_log2, start, device_base, per_core, broken } => {
                let mask = u64::MAX.checked_shl(u32::from(size_log2 % 65)).unwrap_or(0);
                let mut record = TranslateRecord {
                    ptr: start & mask,
                    mask,
                    device_base,
                    flags: if per_core.is_some() { TRANSLATE_PER_CORE } else { 0 },
                    core_stride: per_core.unwrap_or(0),
                };
                if let Some((field, noise)) = broken {
                    reference::break_field(&mut record, u32::from(field), noise);
                }
                record
            }
            RecordSpec::Raw { ptr, mask, device_base, flags, core_stride } => {
                TranslateRecord { ptr, mask, device_base, flags, core_stride }
            }
        }
    }
}

/// How the records reach the runtime.
#[derive(Arbitrary, Debug)]
enum HandOver {
    /// `configure(&records)`.
    Rust,
    /// `neuron_translate_configure(records, count)`.
    C,
    /// `neuron_translate_configure(null, count)`.
    CNull,
    /// `neuron_translate_configure(records, count + extra)` past the table size, which
    /// the call must refuse before reading.
    COverLong,
}

#[derive(Arbitrary, Debug)]
struct Case {
    core: u8,
    records: Vec<RecordSpec>,
    hand_over: HandOver,
    probes: Vec<u64>,
    lengths: Vec<u32>,
}

/// The whole target.
pub fn check(data: &[u8]) {
    let Ok(case) = Case::arbitrary(&mut Unstructured::new(data)) else { return };
    let core = u32::from(case.core % 8);
    set_prid_for_test(core);
    let records = case.records.iter().fold(Vec::new(), |mut records: Vec<TranslateRecord>, spec| {
        records.push(spec.record(&records));
        records
    });

    let (accepted, expected) = match case.hand_over {
        HandOver::Rust => (configure(&records), reference::accepts(&records, core)),
        HandOver::C => {
            // SAFETY: `records` holds `records.len()` records (the count fits: it came
            // from a Vec the fuzzer built from fewer bytes than u32::MAX).
            let status = unsafe { neuron_translate_configure(records.as_ptr(), records.len() as u32) };
            let expected = reference::accepts(&records, core);
            ensure_eq!(status, expected.map_or_else(TranslateError::code, |()| TRANSLATE_OK), "C status");
            (expected, expected)
        }
        HandOver::CNull => {
            // SAFETY: a null array; the call must not read it.
            let status = unsafe { neuron_translate_configure(core::ptr::null(), records.len() as u32) };
            let expected = if records.is_empty() { Ok(()) } else { Err(TranslateError::NullRecords) };
            ensure_eq!(status, expected.map_or_else(TranslateError::code, |()| TRANSLATE_OK), "C null status");
            (expected, expected)
        }
        HandOver::COverLong => {
            let count = records.len().max(TRANSLATE_REGIONS + 1) as u32;
            // SAFETY: the count is above the table size, which the call refuses before
            // it forms a slice; `records` itself is a live (shorter) array.
            let status = unsafe { neuron_translate_configure(records.as_ptr(), count) };
            let expected = Err(TranslateError::TooManyRecords);
            ensure_eq!(status, TranslateError::TooManyRecords.code(), "C over-long status");
            (expected, expected)
        }
    };
    ensure_eq!(accepted, expected, "configure's answer for core {core}, {records:?}");
    if !matches!(case.hand_over, HandOver::Rust) {
        // Only the C calls keep a status.
        ensure_eq!(neuron_translate_status(), accepted.map_or_else(TranslateError::code, |()| TRANSLATE_OK), "status");
    }
    // The records in force: none after a refused set.
    let in_force: &[TranslateRecord] =
        if accepted.is_ok() && matches!(case.hand_over, HandOver::Rust | HandOver::C) { &records } else { &[] };

    let edges = records.iter().flat_map(|record| {
        let last = record.ptr | !record.mask;
        [record.ptr, last, record.ptr.wrapping_sub(1), last.wrapping_add(1), record.ptr | (!record.mask >> 1)]
    });
    for addr in case.probes.iter().copied().chain(edges) {
        let expected = reference::translate(in_force, core, addr);
        let got = translate(addr).map(|device| device as usize as u128);
        ensure_eq!(got.ok(), expected, "translate({addr:#x})");
        if let Err(error) = got {
            ensure_eq!(error, TranslateError::Miss, "translate's error");
        }
        let device = neuron_translate(addr);
        ensure_eq!((!device.is_null()).then_some(device as usize as u128), expected, "neuron_translate({addr:#x})");
        let status = if expected.is_some() { TRANSLATE_OK } else { TranslateError::Miss.code() };
        ensure_eq!(neuron_translate_status(), status, "status after neuron_translate");

        let window_end =
            in_force.iter().find(|record| addr & record.mask == record.ptr).map(|record| record.ptr | !record.mask);
        let to_end = window_end.map(|last| last - addr + 1);
        let lengths = case.lengths.iter().map(|&len| u64::from(len)).chain(to_end).chain(to_end.map(|len| len + 1));
        for len in lengths {
            let Ok(len_usize) = usize::try_from(len) else { continue };
            let expected = reference::translate_range(in_force, core, addr, len);
            let got = translate_range(addr, len_usize).map(|device| device as usize as u128);
            ensure_eq!(got, expected, "translate_range({addr:#x}, {len:#x})");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_random_inputs_pass() {
        crate::smoke::check_inputs(check, 20_000, 256);
    }

    #[test]
    fn the_model_translates_a_per_core_window() {
        let record = TranslateRecord {
            flags: TRANSLATE_PER_CORE,
            core_stride: 0x100,
            ..TranslateRecord::window(0x1000, 0x100, 0x8000)
        };
        assert_eq!(reference::accepts(&[record], 3), Ok(()));
        assert_eq!(reference::translate(&[record], 3, 0x1010), Some(0x8000 + 0x300 + 0x10));
        assert_eq!(reference::translate(&[record], 3, 0x1100), None);
    }
}
