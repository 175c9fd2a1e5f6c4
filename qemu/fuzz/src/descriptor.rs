//! `ArgTensor::from_bytes` + `validate` against a validator written over raw byte
//! offsets (`docs/abi/descriptors.md` §1), and the encoders against the bytes they must
//! produce.
//!
//! Input: byte 0 picks the mode. Raw mode reads the next 48 bytes as a descriptor
//! (zero-padded). Edit mode builds a valid descriptor with an encoder from the fuzzer's
//! choices, then applies up to four byte edits, so every validation step is reached.
//!
//! Checked, whatever the bytes:
//! - `from_bytes` then `to_bytes` gives the same 48 bytes;
//! - `validate` never panics and returns exactly the model's error, or a view whose
//!   every field is the one at its documented offset;
//! - an accepted descriptor re-encodes to the same bytes through the encoder of its
//!   form (`hbm_tensor`, `tpb_tensor`, `hbm_scalar`);
//! - every error maps to its documented status, and displays.

use arbitrary::{Arbitrary, Unstructured};
use neuroncustomop::test_models::descriptor::{Accepted, Bytes, validate as validate_model};
use neuroncustomop::wrapper_api::{
    ARG_TENSOR_SIZE, ArgTensor, ArgType, DescriptorError, Dtype, MAX_RANK, ScalarKind, Status, Storage,
};

use crate::ensure_eq;

/// Element size of raw dtype `raw` (1..=8), from the table in §1.1.
fn dtype_size(raw: u8) -> u64 {
    [4, 2, 2, 4, 1, 8, 2, 1][usize::from(raw - 1)]
}

/// The status §1.4 documents for each error.
fn documented_status(error: &DescriptorError) -> u32 {
    use DescriptorError as E;
    match error {
        E::UnknownArgType(_) => 0x20,
        E::UnknownDtype(_) => 0x21,
        E::UnknownShapeType(_) => 0x22,
        E::OutOfLineShape => 0x23,
        E::RankZero => 0x24,
        E::RankTooLarge(_) => 0x25,
        E::UnusedDimNonZero { .. } => 0x26,
        E::UnknownStorageKind(_) => 0x27,
        E::ReservedNonZero { .. } => 0x28,
        E::ElementCountMismatch { .. } => 0x29,
        E::UnsupportedTpbLayout { .. } => 0x2a,
        E::ScalarNotSingleElement { .. } => 0x2b,
        E::ScalarDtypeMismatch { .. } => 0x2c,
        E::DimTooLarge { .. } => 0x2d,
        E::TooManyElements { .. } => 0x2e,
    }
}

fn check_error_reporting(error: &DescriptorError) {
    ensure_eq!(Status::from(*error).0, documented_status(error), "status of {error:?}");
    assert!(!error.to_string().is_empty(), "{error:?} displays as nothing");
}

/// Checks one descriptor's bytes against the model; returns whether it was accepted.
pub fn check_bytes(bytes: &Bytes) -> bool {
    let desc = ArgTensor::from_bytes(bytes);
    ensure_eq!(desc.to_bytes(), *bytes, "from_bytes/to_bytes round trip");
    let got = desc.validate();
    match (&got, validate_model(bytes)) {
        (Err(error), Err(expected)) => {
            ensure_eq!(*error, expected, "validate's error");
            check_error_reporting(error);
            false
        }
        (Ok(view), Ok(expected)) => {
            let storage_is_tpb = matches!(view.storage(), Storage::Tpb { .. });
            let seen = Accepted {
                arg_type: view.arg_type() as u8,
                dtype: view.dtype() as u8,
                shape: view.shape().to_vec(),
                num_elem: view.num_elem(),
                tpb: storage_is_tpb,
                address: view.address(),
            };
            ensure_eq!(seen, expected, "the accepted view");
            ensure_eq!(view.rank(), expected.shape.len(), "rank");
            ensure_eq!(view.byte_len(), u64::from(expected.num_elem) * dtype_size(expected.dtype), "byte_len");
            ensure_eq!(view.dtype().size() as u64, dtype_size(expected.dtype), "dtype size");
            check_reencoding(&desc, view.arg_type(), view.dtype(), &expected);
            true
        }
        (got, expected) => panic!("validate gave {got:?}, the model {expected:?} for {bytes:?}"),
    }
}

/// An accepted descriptor is exactly what the encoder of its form writes.
fn check_reencoding(desc: &ArgTensor, arg_type: ArgType, dtype: Dtype, accepted: &Accepted) {
    let shape: Vec<u32> = accepted.shape.iter().map(|&d| u32::from(d)).collect();
    let encoded = match (arg_type, accepted.tpb) {
        (ArgType::Tensor, false) => ArgTensor::hbm_tensor(dtype, &shape, accepted.address),
        (ArgType::Tensor, true) => ArgTensor::tpb_tensor(dtype, &shape, accepted.address as u32),
        (scalar, false) if shape == [1] => Ok(ArgTensor::hbm_scalar(scalar_kind(scalar), accepted.address)),
        _ => return, // a scalar in the SBUF form or of rank > 1: no encoder writes it
    };
    let encoded = encoded.unwrap_or_else(|error| panic!("the encoder refuses an accepted descriptor: {error:?}"));
    ensure_eq!(encoded.to_bytes(), desc.to_bytes(), "re-encoding");
    assert!(encoded == *desc, "ArgTensor's PartialEq disagrees with its bytes");
}

fn scalar_kind(arg_type: ArgType) -> ScalarKind {
    match arg_type {
        ArgType::Int => ScalarKind::Int,
        ArgType::LongLong => ScalarKind::LongLong,
        ArgType::Float => ScalarKind::Float,
        ArgType::Tensor => unreachable!("tensors are not scalars"),
    }
}

/// An encoder call, as the fuzzer chooses it.
#[derive(Arbitrary, Debug)]
enum Encoding {
    Hbm { dtype: u8, shape: Vec<u32>, addr: u64 },
    Tpb { dtype: u8, shape: Vec<u32>, addr: u32 },
    Scalar { kind: u8, addr: u64 },
}

/// The encoders' own rules (§1.4, last paragraph): rank 1..=8, dimensions ≤ 65535,
/// at most `u32::MAX` elements.
fn model_encode(shape: &[u32]) -> Result<(), DescriptorError> {
    if shape.is_empty() {
        return Err(DescriptorError::RankZero);
    }
    if shape.len() > MAX_RANK {
        return Err(DescriptorError::RankTooLarge(shape.len()));
    }
    if let Some((dim, &value)) = shape.iter().enumerate().find(|&(_, &d)| d > 0xFFFF) {
        return Err(DescriptorError::DimTooLarge { dim: dim as u8, value });
    }
    let shape_elems = shape.iter().fold(1u128, |acc, &d| acc * u128::from(d)).min(u128::from(u64::MAX)) as u64;
    if shape_elems > u64::from(u32::MAX) {
        return Err(DescriptorError::TooManyElements { shape_elems });
    }
    Ok(())
}

/// Runs an encoder call; its output, when it succeeds, must validate.
fn encode(encoding: &Encoding) -> Option<Bytes> {
    let dtype_of = |raw: u8| Dtype::ALL[usize::from(raw) % Dtype::ALL.len()];
    let (result, shape) = match encoding {
        Encoding::Hbm { dtype, shape, addr } => {
            (ArgTensor::hbm_tensor(dtype_of(*dtype), shape, *addr), shape.as_slice())
        }
        Encoding::Tpb { dtype, shape, addr } => {
            (ArgTensor::tpb_tensor(dtype_of(*dtype), shape, *addr), shape.as_slice())
        }
        Encoding::Scalar { kind, addr } => {
            let kind = [ScalarKind::Int, ScalarKind::LongLong, ScalarKind::Float][usize::from(*kind) % 3];
            (Ok(ArgTensor::hbm_scalar(kind, *addr)), &[1][..])
        }
    };
    ensure_eq!(result.as_ref().map(|_| ()).map_err(|e| *e), model_encode(shape), "encoder for {encoding:?}");
    match result {
        Ok(desc) => {
            let bytes = desc.to_bytes();
            assert!(check_bytes(&bytes), "the encoder wrote a descriptor validate refuses: {encoding:?}");
            Some(bytes)
        }
        Err(error) => {
            check_error_reporting(&error);
            None
        }
    }
}

/// The whole target.
pub fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode & 1 == 0 {
        let mut bytes = [0u8; ARG_TENSOR_SIZE];
        let len = rest.len().min(ARG_TENSOR_SIZE);
        bytes[..len].copy_from_slice(&rest[..len]);
        check_bytes(&bytes);
        return;
    }
    let mut input = Unstructured::new(rest);
    let Ok(encoding) = Encoding::arbitrary(&mut input) else { return };
    let Some(mut bytes) = encode(&encoding) else { return };
    let Ok(edits) = <[(u8, u8); 4]>::arbitrary(&mut input) else { return };
    for (at, value) in edits.into_iter().take(usize::from(mode >> 1) % 5) {
        bytes[usize::from(at) % ARG_TENSOR_SIZE] = value;
    }
    check_bytes(&bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_random_inputs_pass() {
        crate::smoke::check_inputs(check, 20_000, 96);
    }

    #[test]
    fn the_model_accepts_what_the_encoders_write_and_catches_a_changed_byte() {
        let desc = ArgTensor::hbm_tensor(Dtype::Float32, &[2, 3], 0x4000_0000).unwrap();
        assert!(check_bytes(&desc.to_bytes()));
        let mut bytes = desc.to_bytes();
        bytes[3] = 0;
        assert_eq!(validate_model(&bytes), Err(DescriptorError::RankZero));
    }
}
