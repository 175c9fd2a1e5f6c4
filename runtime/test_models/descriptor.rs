//! The reference for `ArgTensor::validate`: docs/abi/descriptors.md §1.4's checks, in
//! order, over the raw byte offsets of §1 (not the Rust struct).

use std::vec::Vec;

use crate::wrapper_api::{ARG_TENSOR_SIZE, ArgType, DescriptorError, Dtype};

/// A descriptor's 48 bytes.
pub type Bytes = [u8; ARG_TENSOR_SIZE];

/// The little-endian `u16` at `at`.
pub fn le16(b: &Bytes, at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The little-endian `u32` at `at`.
pub fn le32(b: &Bytes, at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The little-endian `u64` at `at`.
pub fn le64(b: &Bytes, at: usize) -> u64 {
    u64::from(le32(b, at)) | u64::from(le32(b, at + 4)) << 32
}

/// What the model reads from an accepted descriptor.
#[derive(Debug, PartialEq)]
pub struct Accepted {
    /// Raw arg type (1..=4).
    pub arg_type: u8,
    /// Raw dtype (1..=8).
    pub dtype: u8,
    /// The `rank` used dimensions.
    pub shape: Vec<u16>,
    /// The storage's element count.
    pub num_elem: u32,
    /// TPB (SBUF) form rather than HBM.
    pub tpb: bool,
    /// The storage's address (32 bits in TPB form).
    pub address: u64,
}

/// `validate`'s answer for `b`: the first failing check's error, or what it reads.
pub fn validate(b: &Bytes) -> Result<Accepted, DescriptorError> {
    use DescriptorError as E;
    let (dtype, arg_type, shape_type, rank, kind) = (b[0], b[1], b[2], usize::from(b[3]), b[4]);
    if !(1..=4).contains(&arg_type) {
        return Err(E::UnknownArgType(arg_type));
    }
    if !(1..=8).contains(&dtype) {
        return Err(E::UnknownDtype(dtype));
    }
    match shape_type {
        0 => {}
        1 => return Err(E::OutOfLineShape),
        other => return Err(E::UnknownShapeType(other)),
    }
    if rank == 0 {
        return Err(E::RankZero);
    }
    if rank > 8 {
        return Err(E::RankTooLarge(rank));
    }
    if let Some(dim) = (rank..8).find(|&dim| le16(b, 8 + 2 * dim) != 0) {
        return Err(E::UnusedDimNonZero { dim: dim as u8 });
    }
    let tpb = match kind {
        0 => true,
        1 => false,
        other => return Err(E::UnknownStorageKind(other)),
    };
    let live_reserved = if tpb { 33..36 } else { 36..40 };
    if let Some(offset) = (5..8).chain(live_reserved).chain(40..48).find(|&at| b[at] != 0) {
        return Err(E::ReservedNonZero { offset: offset as u8 });
    }
    let num_elem = if tpb { le32(b, 28) } else { le32(b, 32) };
    let shape: Vec<u16> = (0..rank).map(|dim| le16(b, 8 + 2 * dim)).collect();
    let shape_elems = shape.iter().fold(1u128, |acc, &d| acc * u128::from(d)).min(u128::from(u64::MAX)) as u64;
    if shape_elems != u64::from(num_elem) {
        return Err(E::ElementCountMismatch { shape_elems, num_elem });
    }
    if tpb && (b[32] != 1 || le32(b, 36) != num_elem) {
        return Err(E::UnsupportedTpbLayout { num_partitions: b[32], num_elem_per_block: le32(b, 36) });
    }
    if arg_type != 1 {
        if num_elem != 1 {
            return Err(E::ScalarNotSingleElement { num_elem });
        }
        // INT: INT32, LONGLONG: INT64, FLOAT: FLOAT32 (§1.2).
        let wanted = [4, 6, 1][usize::from(arg_type - 2)];
        if dtype != wanted {
            let arg_type = ArgType::from_raw(arg_type).expect("1..=4");
            let dtype = Dtype::from_raw(dtype).expect("1..=8");
            return Err(E::ScalarDtypeMismatch { arg_type, dtype });
        }
    }
    let address = if tpb { u64::from(le32(b, 24)) } else { le64(b, 24) };
    Ok(Accepted { arg_type, dtype, shape, num_elem, tpb, address })
}
