//! The reference for `translate`: the record list searched in order, with exact (u128)
//! arithmetic, so no overflow of the runtime's can hide behind the model's.

use crate::translate::{RangeError, TRANSLATE_PER_CORE, TRANSLATE_REGIONS, TranslateError, TranslateRecord};

/// Whether `configure` must accept `records` on core `core`: at most
/// [`TRANSLATE_REGIONS`] records, each with a mask that is a run of high ones, `ptr`
/// inside the mask, flags 0 or per-core (a stride only when per-core), and a device
/// window for this core that neither starts at 0 nor leaves the address space.
pub fn accepts(records: &[TranslateRecord], core: u32) -> Result<(), TranslateError> {
    if records.len() > TRANSLATE_REGIONS {
        return Err(TranslateError::TooManyRecords);
    }
    for record in records {
        if record.mask != 0 && record.mask.leading_ones() + record.mask.trailing_zeros() != 64 {
            return Err(TranslateError::MaskNotContiguous);
        }
        if record.ptr & !record.mask != 0 {
            return Err(TranslateError::PtrOutsideMask);
        }
        let per_core = record.flags == TRANSLATE_PER_CORE;
        if !(per_core || record.flags == 0 && record.core_stride == 0) {
            return Err(TranslateError::InvalidFlags);
        }
        let first = u128::from(record.device_base)
            + if per_core { u128::from(core) * u128::from(record.core_stride) } else { 0 };
        let last = first + u128::from(!record.mask);
        if first == 0 || last > usize::MAX as u128 {
            return Err(TranslateError::WindowOutOfRange);
        }
    }
    Ok(())
}

/// The device address of `addr` on core `core`: through the first record that matches.
pub fn translate(records: &[TranslateRecord], core: u32, addr: u64) -> Option<u128> {
    let record = records.iter().find(|record| addr & record.mask == record.ptr)?;
    let per_core =
        if record.flags & TRANSLATE_PER_CORE != 0 { u128::from(core) * u128::from(record.core_stride) } else { 0 };
    Some(u128::from(record.device_base) + per_core + u128::from(addr - record.ptr))
}

/// The device address of the `len` bytes at `addr` (0 counts as 1): the first byte's,
/// when the last byte is inside the window of the record the first one matches.
pub fn translate_range(records: &[TranslateRecord], core: u32, addr: u64, len: u64) -> Result<u128, RangeError> {
    let record = records.iter().find(|record| addr & record.mask == record.ptr).ok_or(RangeError::Miss)?;
    if u128::from(addr) + u128::from(len.max(1)) - 1 > u128::from(record.ptr | !record.mask) {
        return Err(RangeError::OutsideWindow);
    }
    Ok(translate(records, core, addr).expect("the record matches"))
}

/// Breaks field `field % 6` of `record` with `noise`: the mask (one bit flipped), `ptr`
/// (bits outside the mask), the flags, the stride, the device base, or a device base
/// near the top of the address space. How the tests and the fuzz target make the
/// records `configure` must refuse (or, by chance, still accept).
pub fn break_field(record: &mut TranslateRecord, field: u32, noise: u64) {
    match field % 6 {
        0 => record.mask ^= 1 << (noise % 64),
        1 => record.ptr |= !record.mask & noise,
        2 => record.flags = noise as u32,
        3 => record.core_stride = noise as u32,
        4 => record.device_base = noise,
        _ => record.device_base = u64::MAX - (noise % 4096),
    }
}
