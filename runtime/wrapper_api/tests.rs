//! Host tests of the descriptors, the pull stream and the tensor API, over a fake
//! platform: translate maps fake framework addresses onto host buffers, and a fake
//! 16 KiB TCM pool tracks every block.

use super::*;
use crate::test_models::descriptor::{self as descriptor_model, le16, le32, le64};
use crate::test_models::platform;
use crate::test_models::pull_stream as pull_model;
use crate::translate::TranslateError;
use proptest::prelude::*;
use std::boxed::Box;
use std::string::ToString;
use std::vec;
use std::vec::Vec;

// ---------------------------------------------------------------- fake platform --
// `crate::test_models::platform`: translate over host windows, a TCM pool, call logs.

/// The fake device of one test (its state is thread-local; tests run on their own
/// threads).
struct Fake {
    next_base: u64,
}

impl Fake {
    fn new() -> Fake {
        platform::reset();
        Fake { next_base: 0x10_0000_0000 }
    }

    fn invocation(&self) -> Invocation {
        // SAFETY: the fake translate maps windows of live host buffers linearly
        // and never unmaps or moves one during the test (windows are only added, which
        // turns misses into hits, and a pull that meets a miss resolves it again); TCM
        // blocks are separate host buffers.
        unsafe { Invocation::with_platform(platform::PLATFORM) }
    }

    /// Maps `len` bytes at framework address `base`, `skew` bytes into an 8-aligned
    /// host buffer; returns the host address of `base`.
    fn map_at(&mut self, base: u64, len: usize, skew: usize) -> *mut u8 {
        platform::with(|fake| fake.map_at(base, len, skew))
    }

    /// A fresh window of `len` bytes; returns (framework address, host address).
    fn alloc(&mut self, len: usize) -> (u64, *mut u8) {
        let base = self.next_base;
        self.next_base += 0x1_0000_0000;
        (base, self.map_at(base, len, 0))
    }

    fn tensor<T: Element>(&mut self, shape: &[u32], values: &[T]) -> ArgTensor {
        let (addr, host) = self.alloc(size_of_val(values));
        // SAFETY: the window holds `values`.
        unsafe { core::ptr::copy_nonoverlapping(values.as_ptr().cast::<u8>(), host, size_of_val(values)) };
        ArgTensor::hbm_tensor(T::DTYPE, shape, addr).unwrap()
    }

    fn scalar<T: Element>(&mut self, kind: ScalarKind, value: T) -> ArgTensor {
        let (addr, host) = self.alloc(size_of::<T>());
        // SAFETY: the window holds one `T`.
        unsafe { host.cast::<T>().write_unaligned(value) };
        ArgTensor::hbm_scalar(kind, addr)
    }

    /// An output tensor of `numel` f32 zeros; returns it and its host address.
    fn output_f32(&mut self, shape: &[u32]) -> (ArgTensor, *mut f32) {
        let numel: u32 = shape.iter().product();
        let (addr, host) = self.alloc(numel as usize * 4);
        (ArgTensor::hbm_tensor(Dtype::Float32, shape, addr).unwrap(), host.cast())
    }

    fn live_tcm_blocks(&self) -> usize {
        platform::with(|fake| fake.tcm.len())
    }
}

fn read_host<T: Copy>(host: *const T, n: usize) -> Vec<T> {
    // SAFETY: `host` is a live window of at least `n` elements.
    (0..n).map(|i| unsafe { host.add(i).read_unaligned() }).collect()
}

/// Hands `args` and `result` to `inv` as the loader would.
fn hand_off(inv: &mut Invocation, args: &[ArgTensor], result: &mut ArgTensor) -> Status {
    // SAFETY: both point at live descriptors for the whole test.
    unsafe { inv.set_invocation(args.as_ptr(), args.len() as u32, result) }
}

// ------------------------------------------------------------- descriptor model --

/// Checks `validate` against the model, a valid view against the raw bytes, the
/// pull stream's fast path against the ordered checks (whatever it accepts, they accept
/// with the same result), and the common case's check against `check_any`.
fn check_against_model(bytes: &[u8; 48]) -> Result<(), TestCaseError> {
    let desc = ArgTensor::from_bytes(bytes);
    if let Some(fast) = desc.check_fast() {
        prop_assert_eq!(Ok(fast), desc.check_in_order());
    }
    // What setup.S accepts (the common case) `check_any`, setup's Rust resolver, accepts
    // with the same result.
    if let Some(common) = desc.check_common() {
        prop_assert_eq!(Some(common), desc.check_any());
    }
    let result = desc.validate();
    prop_assert_eq!(result.map(drop), descriptor_model::validate(bytes).map(drop));
    // The C accessors' reads of single fields: of a valid descriptor they read what the
    // check decoded (so any field they refuse makes the whole check fail, and the slow
    // path names an error).
    // SAFETY: a live descriptor.
    let fields = unsafe {
        let at = &raw const desc;
        [
            descriptor::fields::dtype(at),
            descriptor::fields::rank(at),
            descriptor::fields::numel(at),
            descriptor::fields::dim(at, 0, Some, || None),
            descriptor::fields::dim(at, 7, Some, || None),
        ]
    };
    if let Ok(view) = result {
        let dim = |i: usize| view.shape().get(i).map_or(0, |&d| u32::from(d));
        let decoded = [view.dtype() as u32, view.rank() as u32, view.num_elem(), dim(0), dim(7)];
        prop_assert_eq!(fields, decoded.map(Some));
    }
    if let Ok(view) = result {
        prop_assert_eq!(view.dtype() as u8, bytes[0]);
        prop_assert_eq!(view.arg_type() as u8, bytes[1]);
        prop_assert_eq!(view.rank(), bytes[3] as usize);
        for (d, &dim) in view.shape().iter().enumerate() {
            prop_assert_eq!(dim, le16(bytes, 8 + 2 * d));
        }
        let (addr, num_elem) = if bytes[4] == 0 {
            (u64::from(le32(bytes, 24)), le32(bytes, 28))
        } else {
            (le64(bytes, 24), le32(bytes, 32))
        };
        prop_assert_eq!(view.address(), addr);
        prop_assert_eq!(view.num_elem(), num_elem);
        prop_assert_eq!(view.byte_len(), u64::from(num_elem) * view.dtype().size() as u64);
    }
    Ok(())
}

fn any_dtype() -> impl Strategy<Value = Dtype> {
    proptest::sample::select(Dtype::ALL.to_vec())
}

fn any_scalar_kind() -> impl Strategy<Value = ScalarKind> {
    proptest::sample::select(vec![ScalarKind::Int, ScalarKind::LongLong, ScalarKind::Float])
}

/// A valid descriptor: a tensor (HBM or TPB, nonzero dims) or a scalar.
fn valid_descriptor() -> impl Strategy<Value = ArgTensor> {
    // Shapes whose element count fits in u32: many small dimensions or two large ones.
    let shape =
        prop_oneof![proptest::collection::vec(1u32..=12, 1..=8), proptest::collection::vec(1u32..=65535, 1..=2)];
    let tensor = (any_dtype(), shape, any::<u64>(), any::<bool>()).prop_map(|(dtype, shape, addr, tpb)| {
        if tpb {
            ArgTensor::tpb_tensor(dtype, &shape, addr as u32).unwrap()
        } else {
            ArgTensor::hbm_tensor(dtype, &shape, addr).unwrap()
        }
    });
    let scalar = (any_scalar_kind(), any::<u64>()).prop_map(|(kind, addr)| ArgTensor::hbm_scalar(kind, addr));
    prop_oneof![3 => tensor, 1 => scalar]
}

// ------------------------------------------------------------- descriptor tests --

#[test]
fn fields_sit_at_the_documented_byte_offsets() {
    let mut d = ArgTensor::ZEROED;
    d.dtype = 0x11;
    d.arg_type = 0x22;
    d.framework_shape_type = 0x33;
    d.num_dim = 0x44;
    d.storage_kind = 0x55;
    d.shape = [0x0102, 0, 0, 0, 0, 0, 0, 0x0708];
    d.storage = StorageDesc { hbm: HbmStorage { addr: 0x1122_3344_5566_7788, num_elem: 0x99aa_bbcc, reserved0: 0 } };
    d.reserved1[7] = 0xee;
    let b = d.to_bytes();
    assert_eq!(&b[..5], &[0x11, 0x22, 0x33, 0x44, 0x55]);
    assert_eq!((le16(&b, 8), le16(&b, 22)), (0x0102, 0x0708));
    assert_eq!((le64(&b, 24), le32(&b, 32), b[47]), (0x1122_3344_5566_7788, 0x99aa_bbcc, 0xee));
    d.storage = StorageDesc {
        tpb: TpbStorage { addr: 1, num_elem: 2, num_partitions: 3, reserved0: [4, 5, 6], num_elem_per_block: 7 },
    };
    let b = d.to_bytes();
    assert_eq!((le32(&b, 24), le32(&b, 28), b[32], &b[33..36], le32(&b, 36)), (1, 2, 3, &[4u8, 5, 6][..], 7));
    assert_eq!(ArgTensor::from_bytes(&b), d);
    assert_eq!(STREAM_BUFFER_BYTES, 4096);
}

#[test]
fn dtype_values_and_sizes_are_the_documented_ones() {
    let table = [(1, 4), (2, 2), (3, 2), (4, 4), (5, 1), (6, 8), (7, 2), (8, 1)];
    for (dtype, (raw, size)) in Dtype::ALL.iter().zip(table) {
        assert_eq!((*dtype as u8, dtype.size()), (raw, size));
        assert_eq!(Dtype::from_raw(raw), Some(*dtype));
    }
    assert_eq!(Dtype::from_raw(0), None);
    assert_eq!(Dtype::from_raw(9), None);
    assert_eq!([ArgType::Tensor, ArgType::Int, ArgType::LongLong, ArgType::Float].map(|t| t as u8), [1, 2, 3, 4]);
}

#[test]
fn encoders_produce_valid_descriptors() {
    for dtype in Dtype::ALL {
        let d = ArgTensor::hbm_tensor(dtype, &[3, 65535], 0xdead_0000_0000).unwrap();
        let v = d.validate().unwrap();
        assert_eq!((v.dtype(), v.shape(), v.num_elem()), (dtype, &[3u16, 65535][..], 3 * 65535));
        assert_eq!(v.storage(), Storage::Hbm { addr: 0xdead_0000_0000 });
        let t = ArgTensor::tpb_tensor(dtype, &[1, 2, 3, 4, 5, 6, 7, 8], 0x1234).unwrap().validate().unwrap();
        assert_eq!((t.num_elem(), t.storage(), t.address()), (40320, Storage::Tpb { addr: 0x1234 }, 0x1234));
    }
    for kind in [ScalarKind::Int, ScalarKind::LongLong, ScalarKind::Float] {
        let v = ArgTensor::hbm_scalar(kind, 8).validate().unwrap();
        assert_eq!((v.arg_type(), v.dtype(), v.num_elem()), (kind.arg_type(), kind.dtype(), 1));
    }
    // An empty tensor (a zero dimension) is valid.
    assert_eq!(ArgTensor::hbm_tensor(Dtype::Int8, &[4, 0], 0).unwrap().validate().unwrap().num_elem(), 0);
}

#[test]
fn a_product_past_u32_before_a_zero_dimension_is_still_valid() {
    // 65535^3 overflows the fast path's u32 product; the ordered checks accept it.
    let d = ArgTensor::hbm_tensor(Dtype::Int8, &[65535, 65535, 65535, 0], 0x40).unwrap();
    assert_eq!(d.check_fast(), None);
    assert_eq!(d.validate().map(|v| v.num_elem()), Ok(0));
    let mut bad = d;
    bad.storage = StorageDesc { hbm: HbmStorage { addr: 0x40, num_elem: 1, reserved0: 0 } };
    assert_eq!(bad.validate(), Err(DescriptorError::ElementCountMismatch { shape_elems: 0, num_elem: 1 }));
}

#[test]
fn encoder_rejects_unrepresentable_shapes() {
    use DescriptorError as E;
    assert_eq!(ArgTensor::hbm_tensor(Dtype::Float32, &[], 0), Err(E::RankZero));
    assert_eq!(ArgTensor::hbm_tensor(Dtype::Float32, &[1; 9], 0), Err(E::RankTooLarge(9)));
    assert_eq!(ArgTensor::hbm_tensor(Dtype::Float32, &[2, 65536], 0), Err(E::DimTooLarge { dim: 1, value: 65536 }));
    assert_eq!(
        ArgTensor::tpb_tensor(Dtype::Int8, &[65535, 65535, 2], 0),
        Err(E::TooManyElements { shape_elems: 65535 * 65535 * 2 })
    );
}

/// One field of a valid descriptor changed, and the error that change must give.
#[derive(Debug, Clone)]
enum Mutation {
    ArgType(u8),
    Dtype(u8),
    ShapeType(u8),
    Rank(u8),
    UnusedDim { dim: usize, value: u16 },
    UsedDim { dim: usize, value: u16 },
    StorageKind(u8),
    Reserved { offset: usize, value: u8 },
    NumElem(u32),
    Partitions(u8),
    ElemPerBlock(u32),
    ScalarCount(u16),
    ScalarDtype(Dtype),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        prop_oneof![Just(0u8), 5u8..].prop_map(Mutation::ArgType),
        prop_oneof![Just(0u8), 9u8..].prop_map(Mutation::Dtype),
        (1u8..).prop_map(Mutation::ShapeType),
        prop_oneof![Just(0u8), 9u8..].prop_map(Mutation::Rank),
        (0usize..8, 1u16..).prop_map(|(dim, value)| Mutation::UnusedDim { dim, value }),
        (0usize..8, any::<u16>()).prop_map(|(dim, value)| Mutation::UsedDim { dim, value }),
        (2u8..).prop_map(Mutation::StorageKind),
        (proptest::sample::select(vec![5, 6, 7, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47]), 1u8..)
            .prop_map(|(offset, value)| Mutation::Reserved { offset, value }),
        any::<u32>().prop_map(Mutation::NumElem),
        any::<u8>().prop_map(Mutation::Partitions),
        any::<u32>().prop_map(Mutation::ElemPerBlock),
        (2u16..).prop_map(Mutation::ScalarCount),
        any_dtype().prop_map(Mutation::ScalarDtype),
    ]
}

/// Applies `m` to `d`; returns the expected error, or `None` when `m` does not apply
/// to this descriptor (or leaves it unchanged).
fn apply(d: &ArgTensor, m: &Mutation) -> Option<(ArgTensor, DescriptorError)> {
    use DescriptorError as E;
    let v = d.validate().unwrap();
    let rank = v.rank();
    let tpb = matches!(v.storage(), Storage::Tpb { .. });
    let scalar = v.arg_type() != ArgType::Tensor;
    let mut bytes = d.to_bytes();
    let num_elem_at = if tpb { 28 } else { 32 };
    let error = match *m {
        Mutation::ArgType(t) => {
            bytes[1] = t;
            E::UnknownArgType(t)
        }
        Mutation::Dtype(t) => {
            bytes[0] = t;
            E::UnknownDtype(t)
        }
        Mutation::ShapeType(t) => {
            bytes[2] = t;
            if t == 1 { E::OutOfLineShape } else { E::UnknownShapeType(t) }
        }
        Mutation::Rank(r) => {
            bytes[3] = r;
            if r == 0 { E::RankZero } else { E::RankTooLarge(r as usize) }
        }
        Mutation::UnusedDim { dim, value } if dim >= rank => {
            bytes[8 + 2 * dim..10 + 2 * dim].copy_from_slice(&value.to_le_bytes());
            E::UnusedDimNonZero { dim: dim as u8 }
        }
        Mutation::UsedDim { dim, value } if dim < rank && !scalar && value != v.shape()[dim] => {
            bytes[8 + 2 * dim..10 + 2 * dim].copy_from_slice(&value.to_le_bytes());
            let shape_elems = u64::from(v.num_elem()) / u64::from(v.shape()[dim]) * u64::from(value);
            E::ElementCountMismatch { shape_elems, num_elem: v.num_elem() }
        }
        Mutation::StorageKind(k) => {
            bytes[4] = k;
            E::UnknownStorageKind(k)
        }
        Mutation::Reserved { offset, value }
            if !(tpb && (36..40).contains(&offset) || !tpb && (33..36).contains(&offset)) =>
        {
            bytes[offset] = value;
            E::ReservedNonZero { offset: offset as u8 }
        }
        Mutation::NumElem(n) if n != v.num_elem() => {
            bytes[num_elem_at..num_elem_at + 4].copy_from_slice(&n.to_le_bytes());
            E::ElementCountMismatch { shape_elems: u64::from(v.num_elem()), num_elem: n }
        }
        Mutation::Partitions(p) if tpb && p != 1 => {
            bytes[32] = p;
            E::UnsupportedTpbLayout { num_partitions: p, num_elem_per_block: v.num_elem() }
        }
        Mutation::ElemPerBlock(n) if tpb && n != v.num_elem() => {
            bytes[36..40].copy_from_slice(&n.to_le_bytes());
            E::UnsupportedTpbLayout { num_partitions: 1, num_elem_per_block: n }
        }
        Mutation::ScalarCount(n) if scalar => {
            bytes[8..10].copy_from_slice(&n.to_le_bytes());
            bytes[num_elem_at..num_elem_at + 4].copy_from_slice(&u32::from(n).to_le_bytes());
            E::ScalarNotSingleElement { num_elem: u32::from(n) }
        }
        Mutation::ScalarDtype(t) if scalar && t != v.dtype() => {
            bytes[0] = t as u8;
            E::ScalarDtypeMismatch { arg_type: v.arg_type(), dtype: t }
        }
        _ => return None,
    };
    Some((ArgTensor::from_bytes(&bytes), error))
}

#[test]
fn each_malformed_field_has_its_own_error() {
    use DescriptorError as E;
    let good = ArgTensor::hbm_tensor(Dtype::Float32, &[2, 3], 0x100).unwrap();
    let sbuf = ArgTensor::tpb_tensor(Dtype::Int16, &[4], 0x100).unwrap();
    let int = ArgTensor::hbm_scalar(ScalarKind::Int, 0x100);
    let cases = [
        (good, Mutation::ArgType(0), E::UnknownArgType(0)),
        (good, Mutation::Dtype(9), E::UnknownDtype(9)),
        (good, Mutation::ShapeType(1), E::OutOfLineShape),
        (good, Mutation::ShapeType(7), E::UnknownShapeType(7)),
        (good, Mutation::Rank(0), E::RankZero),
        (good, Mutation::Rank(9), E::RankTooLarge(9)),
        (good, Mutation::UnusedDim { dim: 5, value: 1 }, E::UnusedDimNonZero { dim: 5 }),
        (good, Mutation::StorageKind(2), E::UnknownStorageKind(2)),
        (good, Mutation::Reserved { offset: 41, value: 1 }, E::ReservedNonZero { offset: 41 }),
        (good, Mutation::NumElem(7), E::ElementCountMismatch { shape_elems: 6, num_elem: 7 }),
        (sbuf, Mutation::Partitions(2), E::UnsupportedTpbLayout { num_partitions: 2, num_elem_per_block: 4 }),
        (int, Mutation::ScalarCount(3), E::ScalarNotSingleElement { num_elem: 3 }),
        (
            int,
            Mutation::ScalarDtype(Dtype::Float32),
            E::ScalarDtypeMismatch { arg_type: ArgType::Int, dtype: Dtype::Float32 },
        ),
    ];
    for (desc, mutation, expected) in cases {
        let (bad, error) = apply(&desc, &mutation).unwrap();
        assert_eq!((bad.validate(), error), (Err(expected), expected), "{mutation:?}");
    }
}

proptest! {
    // Miri interprets about 1000x slower: a few cases there, the full count natively.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 16 } else { 2048 }))]

    #[test]
    fn random_bytes_match_the_model(bytes in proptest::array::uniform32(any::<u8>()), tail in proptest::array::uniform16(any::<u8>())) {
        let mut all = [0u8; 48];
        all[..32].copy_from_slice(&bytes);
        all[32..].copy_from_slice(&tail);
        check_against_model(&all)?;
    }

    #[test]
    fn near_valid_bytes_match_the_model(
        desc in valid_descriptor(),
        edits in proptest::collection::vec((0usize..48, any::<u8>()), 0..3),
    ) {
        let mut bytes = desc.to_bytes();
        for (at, value) in edits {
            bytes[at] = value;
        }
        check_against_model(&bytes)?;
    }

    #[test]
    fn one_mutated_field_gives_its_exact_error(desc in valid_descriptor(), m in mutation()) {
        prop_assert!(desc.validate().is_ok());
        prop_assert!(desc.check_fast().is_some(), "a valid descriptor missed the fast path");
        if let Some((bad, expected)) = apply(&desc, &m) {
            prop_assert_eq!(bad.validate(), Err(expected));
            prop_assert_eq!(descriptor_model::validate(&bad.to_bytes()).map(drop), Err(expected));
        }
    }
}

// ------------------------------------------------------------ pull stream tests --

/// The (tensor x, int k, float alpha, tensor y) op with a [2, 3] f32 output.
struct FourArgs {
    fake: Fake,
    args: Vec<ArgTensor>,
    result: ArgTensor,
    out: *mut f32,
    x: Vec<f32>,
    y: Vec<f32>,
}

fn four_args() -> FourArgs {
    let mut fake = Fake::new();
    let x: Vec<f32> = (0..6).map(|i| i as f32 - 2.5).collect();
    let y: Vec<f32> = (0..6).map(|i| 100.0 * i as f32).collect();
    let args = vec![
        fake.tensor(&[2, 3], &x),
        fake.scalar(ScalarKind::Int, -7i32),
        fake.scalar(ScalarKind::Float, 2.5f32),
        fake.tensor(&[6], &y),
    ];
    let (result, out) = fake.output_f32(&[2, 3]);
    FourArgs { fake, args, result, out, x, y }
}

/// out = x * alpha + y + k: the Rust kernel of the four-argument op.
fn axpy_plus_k(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let k = args.int()?;
    let alpha = args.float()?;
    let y = args.tensor()?;
    let mut out = args.output()?;
    let (xs, ys) = (x.as_slice::<f32>()?, y.as_slice::<f32>()?);
    for (o, (a, b)) in out.as_mut_slice::<f32>()?.iter_mut().zip(xs.iter().zip(ys)) {
        *o = a * alpha + b + k as f32;
    }
    Ok(out)
}

fn axpy_reference(op: &FourArgs) -> Vec<f32> {
    op.x.iter().zip(&op.y).map(|(a, b)| a * 2.5 + b + -7.0).collect()
}

#[test]
fn rust_kernel_gets_tensor_int_float_tensor_in_order() {
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    assert_eq!(hand_off(&mut inv, &op.args, &mut op.result), Status::OK);
    let pre_shaped = op.result;
    assert_eq!(inv.run(axpy_plus_k), Status::OK);
    assert_eq!(read_host(op.out, 6), axpy_reference(&op));
    assert_eq!(op.result, pre_shaped, "the returned output is the pre-shaped descriptor");
    platform::with(|fake| assert_eq!((fake.begin_ops.as_slice(), fake.end_ops), (&[(true, 0)][..], 1)));
    // A second invocation is not the first call; the same arguments give the same result.
    assert_eq!(hand_off(&mut inv, &op.args, &mut op.result), Status::OK);
    assert_eq!(inv.run(axpy_plus_k), Status::OK);
    platform::with(|fake| assert_eq!((fake.begin_ops.as_slice(), fake.end_ops), (&[(true, 0), (false, 0)][..], 2)));
}

#[test]
fn c_path_gets_tensor_int_float_tensor_in_order() {
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    hand_off(&mut inv, &op.args, &mut op.result);
    assert_eq!(inv.setup(true), Ok(()));
    let x = *inv.next_tensor().unwrap();
    assert_eq!(x, op.args[0]);
    assert_eq!(inv.next_int(), Ok(-7));
    assert_eq!(inv.next_float(), Ok(2.5));
    let y = *inv.next_tensor().unwrap();
    assert_eq!(y, op.args[3]);
    let dst = *inv.dst_tensor().unwrap();
    assert_eq!(read_host(inv.tensor_data(&x).unwrap().cast::<f32>(), 6), op.x);
    let out = inv.tensor_data(&dst).unwrap().cast::<f32>();
    assert_eq!(out, op.out);
    assert_eq!(inv.return_tensor(&y), Ok(()));
    assert_eq!(op.result, y, "the result descriptor is the returned one");
    assert_eq!(inv.cleanup(), Status::OK);
    assert_eq!(inv.last_status(), Status::OK);
}

#[test]
fn a_failed_pull_consumes_nothing_and_sticks_as_the_invocation_status() {
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    hand_off(&mut inv, &op.args, &mut op.result);
    inv.setup(false).unwrap();
    assert_eq!(inv.next_int(), Err(ArgError::ExpectedScalar(ScalarKind::Int)));
    assert_eq!(inv.last_status(), Status::EXPECTED_SCALAR);
    assert!(inv.next_tensor().is_ok(), "the failed pull left argument 0 in place");
    assert_eq!(inv.next_float(), Err(ArgError::ScalarKindMismatch { wanted: ScalarKind::Float, found: ArgType::Int }));
    assert_eq!(inv.next_int(), Ok(-7));
    assert_eq!(inv.last_status(), Status::OK);
    assert_eq!(inv.invocation_status(), Status::EXPECTED_SCALAR, "the first failure sticks");
    assert_eq!(inv.cleanup(), Status::EXPECTED_SCALAR);
    // A new invocation starts clean.
    hand_off(&mut inv, &op.args, &mut op.result);
    assert_eq!(inv.invocation_status(), Status::OK);
}

/// The [`ArgFailure`] line `end_status` writes, parsed back; `None` when it wrote none.
fn reported_failure() -> Option<ArgFailure> {
    let printed = std::string::String::from_utf8(crate::start_exit::drain_this_thread()).unwrap();
    let mut lines = printed.lines();
    let failure = lines.next().map(|line| ArgFailure::parse_line(line).expect("an ARGFAIL line"));
    assert_eq!(lines.next(), None, "one line at most: {printed:?}");
    failure
}

#[test]
fn the_first_failing_pull_names_its_argument_and_is_reported_once_when_the_kernel_ends() {
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    hand_off(&mut inv, &op.args, &mut op.result);
    inv.setup(false).unwrap();
    inv.next_tensor().unwrap();
    inv.next_int().unwrap();
    // Argument 2 is a float; a later failure (argument 2 again, as a tensor) keeps the first.
    assert!(inv.next_int().is_err());
    assert!(inv.next_tensor().is_err());
    let expected = ArgFailure {
        status: Status::SCALAR_KIND_MISMATCH.0 as u8,
        argument: 2,
        pulled: ArgType::Int as u8,
        passed: ArgType::Float as u8,
    };
    assert_eq!(inv.arg_failure(), expected);
    assert!(expected.explains(inv.invocation_status()));
    assert_eq!(expected.to_string(), "argument 2: pulled as int, passed as float");
    assert_eq!(inv.cleanup(), Status::SCALAR_KIND_MISMATCH);
    assert_eq!(reported_failure(), None, "nothing is printed before the loader asks");
    assert_eq!(inv.end_status(), Status::SCALAR_KIND_MISMATCH);
    assert_eq!(reported_failure(), Some(expected));
    assert_eq!(inv.end_status(), Status::SCALAR_KIND_MISMATCH, "asked again");
    assert_eq!(reported_failure(), None, "reported once");
    // A new invocation has none; an OK one reports nothing.
    hand_off(&mut inv, &op.args, &mut op.result);
    assert_eq!(inv.arg_failure(), ArgFailure::NONE);
    inv.setup(false).unwrap();
    assert_eq!(inv.cleanup(), Status::OK);
    assert_eq!(inv.end_status(), Status::OK);
    assert_eq!(reported_failure(), None);
}

#[test]
fn each_argument_failure_says_what_was_pulled_and_passed() {
    /// The message a front end shows after `pulls` on a new invocation of `args`.
    fn failure_of(
        inv: &mut Invocation,
        args: &[ArgTensor],
        result: &mut ArgTensor,
        pulls: &dyn Fn(&Invocation),
    ) -> std::string::String {
        hand_off(inv, args, result);
        inv.setup(false).unwrap();
        pulls(inv);
        let failure = inv.arg_failure();
        assert!(failure.explains(inv.invocation_status()), "{failure:?}");
        inv.cleanup();
        inv.end_status();
        assert_eq!(reported_failure(), Some(failure));
        std::format!("{}: {failure}", inv.invocation_status())
    }
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    let (args, result) = (&op.args, &mut op.result);
    assert_eq!(
        failure_of(&mut inv, args, result, &|inv| assert!(inv.next_int().is_err())),
        "0x8 EXPECTED_SCALAR: argument 0: pulled as int, passed as a tensor"
    );
    assert_eq!(
        failure_of(&mut inv, args, result, &|inv| {
            inv.next_tensor().unwrap();
            assert!(inv.next_tensor().is_err());
        }),
        "0x7 EXPECTED_TENSOR: argument 1: pulled as a tensor, passed as int"
    );
    assert_eq!(
        failure_of(&mut inv, args, result, &|inv| {
            inv.next_tensor().unwrap();
            assert!(inv.next_longlong().is_err());
        }),
        "0x9 SCALAR_KIND_MISMATCH: argument 1: pulled as long long, passed as int"
    );
    assert_eq!(
        failure_of(&mut inv, args, result, &|inv| {
            inv.next_tensor().unwrap();
            inv.next_int().unwrap();
            inv.next_float().unwrap();
            inv.next_tensor().unwrap();
            assert!(inv.next_float().is_err());
        }),
        "0x6 NO_MORE_ARGS: argument 4: pulled as float, but 4 arguments were passed (0 to 3)"
    );
    // The output: a descriptor the loader passed as a scalar.
    let mut scalar_output = args[1];
    assert_eq!(
        failure_of(&mut inv, args, &mut scalar_output, &|inv| assert!(inv.dst_tensor().is_err())),
        "0x7 EXPECTED_TENSOR: the output: pulled as a tensor"
    );
}

#[test]
fn a_bad_descriptor_names_its_argument_and_field_and_other_failures_name_none() {
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    let mut args = op.args.clone();
    args[3].dtype = 0x77;
    hand_off(&mut inv, &args, &mut op.result);
    inv.setup(false).unwrap();
    inv.next_tensor().unwrap();
    inv.next_int().unwrap();
    inv.next_float().unwrap();
    assert!(inv.next_tensor().is_err());
    let failure = inv.arg_failure();
    assert!(failure.explains(Status::UNKNOWN_DTYPE));
    assert_eq!(failure.to_string(), "argument 3 (pulled as a tensor): its descriptor's dtype");
    // A kernel's own failure, or a tensor access, is no argument's.
    hand_off(&mut inv, &op.args, &mut op.result);
    inv.setup(false).unwrap();
    inv.fail(KernelError::Op(3));
    assert!(inv.next_int().is_err());
    assert_eq!(inv.arg_failure(), ArgFailure::NONE, "not the first failure");
    inv.cleanup();
    inv.end_status();
    assert_eq!(reported_failure(), None);
    // A Rust kernel's `?` on a failed pull: the pull's record stands.
    hand_off(&mut inv, &op.args, &mut op.result);
    assert_eq!(inv.run(|args| Err(KernelError::from(args.float().unwrap_err()))), Status::EXPECTED_SCALAR);
    assert_eq!(inv.end_status(), Status::EXPECTED_SCALAR);
    let failure = reported_failure().unwrap();
    assert_eq!(failure.to_string(), "argument 0: pulled as float, passed as a tensor");
}

#[test]
fn argfailure_lines_round_trip_and_other_lines_are_not_one() {
    let failure = ArgFailure { status: 0x2c, argument: ArgFailure::OUTPUT, pulled: 1, passed: 4 };
    let line = std::format!("{}{:#010x}\n", ArgFailure::LINE_PREFIX, failure.to_word());
    assert_eq!(line, "ARGFAIL 0x0401ff2c\n");
    assert_eq!(ArgFailure::parse_line(&line), Some(failure));
    for other in ["ARGFAIL 0x1", "ARGFAIL 0x0401ff2c 0x2", "ARGFAIL 0401ff2c", "FAULT core=0", "ARGFAIL 0x0401ff2z"] {
        assert_eq!(ArgFailure::parse_line(other), None, "{other}");
    }
    assert_eq!(failure.to_string(), "the output (pulled as a tensor): its descriptor's dtype");
}

#[test]
fn wrong_argument_kinds_each_have_their_error() {
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    hand_off(&mut inv, &op.args, &mut op.result);
    inv.setup(false).unwrap();
    inv.next_tensor().unwrap();
    assert_eq!(inv.next_tensor(), Err(ArgError::ExpectedTensor(ArgType::Int)));
    assert_eq!(
        inv.next_longlong(),
        Err(ArgError::ScalarKindMismatch { wanted: ScalarKind::LongLong, found: ArgType::Int })
    );
    inv.next_int().unwrap();
    inv.next_float().unwrap();
    assert_eq!(inv.next_float(), Err(ArgError::ExpectedScalar(ScalarKind::Float)));
    inv.next_tensor().unwrap();
    assert_eq!(inv.next_tensor(), Err(ArgError::NoMoreArgs));
    assert_eq!(inv.next_int(), Err(ArgError::NoMoreArgs));
    assert_eq!(inv.last_status(), Status::NO_MORE_ARGS);
}

#[test]
fn longlong_scalars_read_all_eight_bytes() {
    let mut fake = Fake::new();
    let args = [fake.scalar(ScalarKind::LongLong, -0x1234_5678_9abc_def0i64)];
    let mut result = ArgTensor::ZEROED;
    let mut inv = fake.invocation();
    hand_off(&mut inv, &args, &mut result);
    inv.setup(false).unwrap();
    assert_eq!(inv.next_longlong(), Ok(-0x1234_5678_9abc_def0));
}

#[test]
fn state_errors_each_have_their_error() {
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    let out = op.args[0];
    assert_eq!(inv.setup(false), Err(ArgError::NoInvocation));
    assert_eq!(inv.next_tensor(), Err(ArgError::NotSetUp));
    assert_eq!(inv.next_int(), Err(ArgError::NotSetUp));
    assert_eq!(inv.dst_tensor(), Err(ArgError::NotSetUp));
    assert_eq!(inv.return_tensor(&out), Err(ArgError::NotSetUp), "return without setup");
    assert_eq!(inv.tensor_data(&out), Err(ArgError::NotSetUp));
    assert_eq!(inv.cleanup(), Status::NO_INVOCATION, "the first failure is what sticks");
    assert_eq!(inv.last_status(), Status::NOT_SET_UP);

    hand_off(&mut inv, &op.args, &mut op.result);
    assert_eq!(inv.return_tensor(&out), Err(ArgError::NotSetUp), "handed off but not set up");
    inv.setup(false).unwrap();
    assert_eq!(inv.setup(false), Err(ArgError::AlreadySetUp));
    assert!(inv.dst_tensor().is_ok());
    assert_eq!(inv.dst_tensor(), Err(ArgError::DstAlreadyTaken));
    assert_eq!(inv.cleanup(), Status::NOT_SET_UP);
    assert_eq!(inv.cleanup(), Status::NOT_SET_UP);
    assert_eq!(inv.last_status(), Status::NOT_SET_UP, "cleanup twice");
    assert_eq!(inv.setup(false), Err(ArgError::NoInvocation), "cleanup consumed the invocation");
    platform::with(|fake| assert_eq!(fake.end_ops, 1));
}

#[test]
fn too_many_args_fail_at_hand_off_and_at_setup() {
    let mut fake = Fake::new();
    let args: Vec<ArgTensor> = (0..11).map(|i| fake.scalar(ScalarKind::Int, i)).collect();
    let mut result = ArgTensor::ZEROED;
    let mut inv = fake.invocation();
    assert_eq!(hand_off(&mut inv, &args, &mut result), Status::TOO_MANY_ARGS);
    assert_eq!(inv.setup(false), Err(ArgError::TooManyArgs(11)));
    let mut called = false;
    let status = inv.run(|args| {
        called = true;
        args.output().map_err(KernelError::from)
    });
    assert_eq!((status, called), (Status::TOO_MANY_ARGS, false));
    // Ten is the maximum, and works.
    assert_eq!(hand_off(&mut inv, &args[..10], &mut result), Status::OK);
    inv.setup(false).unwrap();
    for i in 0..10 {
        assert_eq!(inv.next_int(), Ok(i));
    }
    // SAFETY: a null pointer with arguments is what is being rejected.
    assert_eq!(unsafe { inv.set_invocation(core::ptr::null(), 2, &mut result) }, Status::NULL_POINTER);
    assert_eq!(inv.setup(false), Err(ArgError::NullPointer));
}

/// Pulls a 2x2 f32 tensor changed by `edit` as the only argument; returns the error
/// and the invocation status.
fn pull_error(mut edit: impl FnMut(&mut Fake, &mut ArgTensor)) -> (ArgError, Status) {
    let mut fake = Fake::new();
    let mut bad = fake.tensor(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0]);
    edit(&mut fake, &mut bad);
    let args = [bad];
    let mut result = ArgTensor::ZEROED;
    let mut inv = fake.invocation();
    hand_off(&mut inv, &args, &mut result);
    inv.setup(false).unwrap();
    let error = inv.next_tensor().unwrap_err();
    assert_eq!(inv.next_tensor().unwrap_err(), error, "a failed pull consumes nothing");
    (error, inv.cleanup())
}

/// A change to a good descriptor (and the fake memory), and what pulling it must give.
type BadCase = (fn(&mut Fake, &mut ArgTensor), ArgError, Status);

#[test]
fn bad_descriptors_reach_the_loader_with_their_own_status() {
    use DescriptorError as E;
    let cases: [BadCase; 8] = [
        (|_, d| d.num_dim = 0, ArgError::Descriptor(E::RankZero), Status::RANK_ZERO),
        (|_, d| d.num_dim = 9, ArgError::Descriptor(E::RankTooLarge(9)), Status::RANK_TOO_LARGE),
        (
            |_, d| d.framework_shape_type = shape_type::OUT_OF_LINE,
            ArgError::Descriptor(E::OutOfLineShape),
            Status::OUT_OF_LINE_SHAPE,
        ),
        (|_, d| d.dtype = 200, ArgError::Descriptor(E::UnknownDtype(200)), Status::UNKNOWN_DTYPE),
        (
            |_, d| d.shape[1] = 3,
            ArgError::Descriptor(E::ElementCountMismatch { shape_elems: 6, num_elem: 4 }),
            Status::ELEMENT_COUNT_MISMATCH,
        ),
        (|_, d| d.arg_type = 0, ArgError::Descriptor(E::UnknownArgType(0)), Status::UNKNOWN_ARG_TYPE),
        // An address outside every window.
        (
            |_, d| d.storage.hbm = HbmStorage { addr: 0x42, ..d.storage.hbm() },
            ArgError::Translate(TranslateError::Miss),
            Status::TRANSLATE_MISS,
        ),
        // A window too small for the tensor's 16 bytes.
        (
            |fake, d| {
                fake.map_at(0x9_0000, 12, 0);
                d.storage.hbm = HbmStorage { addr: 0x9_0000, ..d.storage.hbm() };
            },
            ArgError::RangeOutsideWindow,
            Status::RANGE_OUTSIDE_WINDOW,
        ),
    ];
    for (edit, error, status) in cases {
        assert_eq!(pull_error(edit), (error, status));
    }
    // An address range that wraps the 64-bit space.
    let wrap = |fake: &mut Fake, d: &mut ArgTensor| {
        fake.map_at(u64::MAX - 7, 8, 0);
        d.storage.hbm = HbmStorage { addr: u64::MAX - 7, ..d.storage.hbm() };
    };
    assert_eq!(pull_error(wrap), (ArgError::RangeOutsideWindow, Status::RANGE_OUTSIDE_WINDOW));
}

#[test]
fn the_output_is_taken_once_and_needs_a_result_descriptor() {
    let mut fake = Fake::new();
    let args = [fake.scalar(ScalarKind::Float, 1.0f32)];
    let mut inv = fake.invocation();
    // SAFETY: `args` outlives the invocation; no result descriptor.
    unsafe { inv.set_invocation(args.as_ptr(), 1, core::ptr::null_mut()) };
    inv.setup(false).unwrap();
    assert_eq!(inv.dst_tensor(), Err(ArgError::NoOutput));
    assert_eq!(inv.return_tensor(&args[0]), Err(ArgError::NoOutput));
    assert_eq!(inv.cleanup(), Status::NO_OUTPUT);

    let (mut result, _) = fake.output_f32(&[4]);
    result.arg_type = ArgType::Int as u8;
    hand_off(&mut inv, &args, &mut result);
    inv.setup(false).unwrap();
    assert_eq!(
        inv.dst_tensor(),
        Err(ArgError::Descriptor(DescriptorError::ScalarNotSingleElement { num_elem: 4 })),
        "the output descriptor is validated like an argument"
    );
}

#[test]
fn return_writes_only_valid_tensor_descriptors() {
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    hand_off(&mut inv, &op.args, &mut op.result);
    inv.setup(false).unwrap();
    let before = op.result;
    let mut bad = op.args[0];
    bad.num_dim = 0;
    assert_eq!(inv.return_tensor(&bad), Err(ArgError::Descriptor(DescriptorError::RankZero)));
    assert_eq!(inv.return_tensor(&op.args[1]), Err(ArgError::ExpectedTensor(ArgType::Int)));
    assert_eq!(op.result, before, "nothing written on error");
    assert_eq!(inv.return_tensor(&op.args[3]), Ok(()));
    assert_eq!(op.result, op.args[3]);
}

#[test]
fn kernel_results_and_errors_reach_the_loader() {
    let mut op = four_args();
    let mut inv = op.fake.invocation();
    // Returning an input writes its descriptor.
    hand_off(&mut inv, &op.args, &mut op.result);
    assert_eq!(inv.run(|args| args.tensor().map_err(KernelError::from)), Status::OK);
    assert_eq!(op.result, op.args[0]);
    // The kernel's own code.
    hand_off(&mut inv, &op.args, &mut op.result);
    assert_eq!(inv.run(|_| Err(KernelError::Op(5))), Status(Status::KERNEL_BASE + 5));
    // A runtime error inside the kernel, propagated with `?`.
    hand_off(&mut inv, &op.args, &mut op.result);
    let status = inv.run(|args| {
        let x = args.tensor()?;
        x.as_slice::<i32>()?;
        Ok(x)
    });
    assert_eq!(status, Status::DTYPE_MISMATCH);
    platform::with(|fake| assert_eq!(fake.end_ops, 3, "cleanup ran after every kernel"));
}

#[test]
fn the_output_may_not_alias_an_input_in_rust_kernels() {
    let mut fake = Fake::new();
    let x = fake.tensor(&[4], &[1.0f32, -2.0, 3.0, -4.0]);
    let mut result = x; // the output is the input's storage
    let args = [x];
    let mut inv = fake.invocation();
    hand_off(&mut inv, &args, &mut result);
    assert_eq!(
        inv.run(|args| Ok(args.output().and_then(|out| args.tensor().map(|_| out))?)),
        Status::OUTPUT_ALIASES_INPUT
    );
    hand_off(&mut inv, &args, &mut result);
    assert_eq!(inv.run(|args| Ok(args.tensor().and_then(|_| args.output())?)), Status::OUTPUT_ALIASES_INPUT);
    // A scalar is copied out when pulled: the output may reuse its bytes.
    let k = fake.scalar(ScalarKind::Int, 3i32);
    let mut over_k = ArgTensor::hbm_tensor(Dtype::Int32, &[1], k.storage.hbm().addr).unwrap();
    let scalar_args = [k];
    hand_off(&mut inv, &scalar_args, &mut over_k);
    let status = inv.run(|args| {
        assert_eq!(args.int()?, 3);
        let mut out = args.output()?;
        out.as_mut_slice::<i32>()?[0] = 4;
        Ok(out)
    });
    assert_eq!(status, Status::OK);
    // C kernels may work in place.
    hand_off(&mut inv, &args, &mut result);
    inv.setup(false).unwrap();
    assert!(inv.next_tensor().is_ok() && inv.dst_tensor().is_ok());
}

// ------------------------------------------------------------ state machine model --
// The reference is `crate::test_models::pull_stream`, the fuzz target `pull_stream`'s
// too; these are its simple cases: well-formed arguments in windows of their own, an
// unknown dtype, an unmapped address, and an output, valid or not, to return.

#[derive(Debug, Clone)]
enum Spec {
    Tensor,
    Int(i32),
    LongLong(i64),
    Float(f32),
    BadDtype,
    Unmapped,
}

#[derive(Debug, Clone)]
enum Op {
    HandOff { specs: Vec<Spec>, eleven: bool, output: bool },
    Setup(bool),
    Tensor,
    Int,
    LongLong,
    Float,
    Dst,
    Return { valid: bool },
    Data,
    Cleanup,
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        Just(Spec::Tensor),
        any::<i32>().prop_map(Spec::Int),
        any::<i64>().prop_map(Spec::LongLong),
        (-1e6f32..1e6).prop_map(Spec::Float),
        Just(Spec::BadDtype),
        Just(Spec::Unmapped),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (proptest::collection::vec(spec(), 0..=10), proptest::bool::weighted(0.1), proptest::bool::weighted(0.8))
            .prop_map(|(specs, eleven, output)| Op::HandOff { specs, eleven, output }),
        2 => any::<bool>().prop_map(Op::Setup),
        3 => Just(Op::Tensor),
        2 => Just(Op::Int),
        2 => Just(Op::LongLong),
        2 => Just(Op::Float),
        2 => Just(Op::Dst),
        1 => any::<bool>().prop_map(|valid| Op::Return { valid }),
        1 => Just(Op::Data),
        1 => Just(Op::Cleanup),
    ]
}

/// The descriptors of `specs` in fake memory.
fn build_args(fake: &mut Fake, specs: &[Spec], eleven: bool) -> Vec<ArgTensor> {
    if eleven {
        return (0..11).map(|i| fake.scalar(ScalarKind::Int, i)).collect();
    }
    specs
        .iter()
        .map(|spec| match *spec {
            Spec::Tensor => fake.tensor(&[3], &[1i16, 2, 3]),
            Spec::Int(v) => fake.scalar(ScalarKind::Int, v),
            Spec::LongLong(v) => fake.scalar(ScalarKind::LongLong, v),
            Spec::Float(v) => fake.scalar(ScalarKind::Float, v),
            Spec::BadDtype => ArgTensor { dtype: 0, ..fake.tensor(&[1], &[0u8]) },
            Spec::Unmapped => ArgTensor::hbm_tensor(Dtype::Int8, &[5], 0x77).unwrap(),
        })
        .collect()
}

proptest! {
    // Miri interprets about 1000x slower: a few cases there, the full count natively.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 512 }))]

    #[test]
    fn random_call_orders_follow_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let mut fake = Fake::new();
        let mut inv = fake.invocation();
        let mut model = pull_model::Model::default();
        // Everything handed to the invocation stays alive (and in place) to the end.
        let mut arg_blocks: Vec<Vec<ArgTensor>> = Vec::new();
        let mut results: Vec<Box<ArgTensor>> = Vec::new();
        // The last hand-off's arguments: what a scalar pull must return.
        let mut handed: Vec<Spec> = Vec::new();
        let valid_return = fake.tensor(&[2], &[7i32, 8]);
        let invalid_return = ArgTensor { num_dim: 0, ..valid_return };
        for op in &ops {
            let (status, expected) = match op {
                Op::HandOff { specs, eleven, output } => {
                    arg_blocks.push(build_args(&mut fake, specs, *eleven));
                    handed.clone_from(specs);
                    let args = arg_blocks.last().unwrap();
                    let result = if *output {
                        results.push(Box::new(fake.tensor(&[2, 2], &[0f32; 4])));
                        &mut **results.last_mut().unwrap() as *mut ArgTensor
                    } else {
                        core::ptr::null_mut()
                    };
                    let count = args.len() as u32;
                    let expected = model.hand_off(Some(args), count, output.then(|| **results.last().unwrap()));
                    // SAFETY: `args` and `result` live until the end of the case.
                    (unsafe { inv.set_invocation(args.as_ptr(), count, result) }, expected)
                }
                Op::Setup(first) => (inv.setup(*first).map_or_else(Status::from, |()| Status::OK), model.setup(*first)),
                Op::Tensor => {
                    let (got, expected) = (inv.next_tensor(), model.pull(None));
                    if let (Ok(desc), Ok(resolved)) = (got, expected) {
                        prop_assert_eq!(desc.to_bytes(), resolved.desc.to_bytes());
                    }
                    (got.map_or_else(Status::from, |_| Status::OK), model.last)
                }
                Op::Int => {
                    let got = inv.next_int();
                    model.pull(Some(ScalarKind::Int)).ok();
                    if let Ok(v) = got {
                        prop_assert!(matches!(handed[model.pulled() - 1], Spec::Int(w) if w == v));
                    }
                    (got.map_or_else(Status::from, |_| Status::OK), model.last)
                }
                Op::LongLong => {
                    let got = inv.next_longlong();
                    model.pull(Some(ScalarKind::LongLong)).ok();
                    if let Ok(v) = got {
                        prop_assert!(matches!(handed[model.pulled() - 1], Spec::LongLong(w) if w == v));
                    }
                    (got.map_or_else(Status::from, |_| Status::OK), model.last)
                }
                Op::Float => {
                    let got = inv.next_float();
                    model.pull(Some(ScalarKind::Float)).ok();
                    if let Ok(v) = got {
                        prop_assert!(matches!(handed[model.pulled() - 1], Spec::Float(w) if w == v));
                    }
                    (got.map_or_else(Status::from, |_| Status::OK), model.last)
                }
                Op::Dst => {
                    let (got, expected) = (inv.dst_tensor(), model.dst());
                    if let (Ok(desc), Ok(resolved)) = (got, expected) {
                        prop_assert_eq!(desc.to_bytes(), resolved.desc.to_bytes());
                    }
                    (got.map_or_else(Status::from, |_| Status::OK), model.last)
                }
                Op::Return { valid } => {
                    let desc = if *valid { valid_return } else { invalid_return };
                    (inv.return_tensor(&desc).map_or_else(Status::from, |()| Status::OK), model.return_tensor(&desc))
                }
                Op::Data => {
                    let (got, expected) = (inv.tensor_data(&valid_return), model.tensor_data(&valid_return));
                    if let (Ok(data), Ok(resolved)) = (got, expected) {
                        prop_assert_eq!(data as usize, resolved.data);
                    }
                    (got.map_or_else(Status::from, |_| Status::OK), model.last)
                }
                Op::Cleanup => (inv.cleanup(), model.cleanup()),
            };
            prop_assert_eq!(status, expected, "{:?}", op);
            prop_assert_eq!(inv.last_status(), model.last);
            prop_assert_eq!(inv.invocation_status(), model.invocation);
            prop_assert_eq!(&pull_model::OpCalls::seen(), &model.op_calls);
            if model.has_output {
                prop_assert_eq!(results.last().map(|r| r.to_bytes()), model.result.map(|r| r.to_bytes()));
            }
        }
    }
}

// ------------------------------------------------------------ tensor API tests --

/// Runs `kernel` over one input tensor of `values` (shape `[len]`) and an output of
/// `out_len` elements of `T`; returns the status and the output's contents.
fn run_unary<T: Element, U: Element>(
    fake: &mut Fake,
    values: &[T],
    out_len: usize,
    kernel: impl for<'a> FnOnce(&'a Args) -> Result<Tensor<'a>, KernelError>,
) -> (Status, Vec<U>) {
    let x = fake.tensor(&shape_of(values.len()), values);
    let (out_addr, out_host) = fake.alloc(out_len * size_of::<U>());
    let mut result = ArgTensor::hbm_tensor(U::DTYPE, &shape_of(out_len), out_addr).unwrap();
    let args = [x];
    let mut inv = fake.invocation();
    hand_off(&mut inv, &args, &mut result);
    let status = inv.run(kernel);
    (status, read_host(out_host.cast::<U>(), out_len))
}

/// A shape of `n` elements with every dimension at most 65535.
fn shape_of(n: usize) -> Vec<u32> {
    if n <= 65535 { vec![n as u32] } else { vec![(n / 16) as u32, 16] }
}

#[test]
fn typed_access_checks_dtype_and_writability() {
    let mut fake = Fake::new();
    let (status, _) = run_unary::<i16, i16>(&mut fake, &[1, 2, 3], 3, |args| {
        let mut x = args.tensor()?;
        assert_eq!(x.as_slice::<i16>()?, &[1, 2, 3]);
        assert_eq!(
            x.as_slice::<u8>(),
            Err(TensorError::DtypeMismatch { tensor: Dtype::Int16, requested: Dtype::Uint8 })
        );
        assert_eq!(
            x.as_slice::<F16>().unwrap_err(),
            TensorError::DtypeMismatch { tensor: Dtype::Int16, requested: Dtype::Float16 }
        );
        assert_eq!(x.as_mut_slice::<i16>().unwrap_err(), TensorError::ReadOnly);
        assert_eq!(x.tcm_to_tensor(&[1i16], 0), Err(TensorError::ReadOnly));
        assert_eq!(x.write_stream::<i16>().err(), Some(TensorError::ReadOnly));
        assert!(!x.is_writable());
        let mut out = args.output()?;
        assert!(out.is_writable());
        out.as_mut_slice::<i16>()?.copy_from_slice(&[9, 8, 7]);
        Ok(out)
    });
    assert_eq!(status, Status::OK);
}

#[test]
fn metadata_describes_the_shape() {
    let mut fake = Fake::new();
    let handed = [fake.tensor(&[2, 3, 4], &[0u8; 24])];
    let mut result = ArgTensor::ZEROED;
    let mut inv = fake.invocation();
    hand_off(&mut inv, &handed, &mut result);
    let status = inv.run(|args| {
        let x = args.tensor()?;
        assert_eq!((x.dtype(), x.rank(), x.shape(), x.numel()), (Dtype::Uint8, 3, &[2u16, 3, 4][..], 24));
        assert_eq!(&*x.strides(), &[12, 4, 1]);
        assert_eq!(x.descriptor(), &handed[0]);
        assert_eq!(args.remaining(), 0);
        Err(KernelError::Op(0))
    });
    assert_eq!(status, Status(Status::KERNEL_BASE));
}

#[test]
fn misaligned_device_data_is_refused_for_slices_but_copies_work() {
    let mut fake = Fake::new();
    let host = fake.map_at(0x5000, 16, 1);
    let values = [1.5f32, -2.0, 3.25, 4.0];
    // SAFETY: the window holds 16 bytes at `host`.
    unsafe { core::ptr::copy_nonoverlapping(values.as_ptr().cast::<u8>(), host, 16) };
    let args = [ArgTensor::hbm_tensor(Dtype::Float32, &[4], 0x5000).unwrap()];
    let mut result = ArgTensor::ZEROED;
    let mut inv = fake.invocation();
    hand_off(&mut inv, &args, &mut result);
    let status = inv.run(|args| {
        let x = args.tensor()?;
        assert_eq!(x.as_slice::<f32>(), Err(TensorError::Misaligned));
        let mut buf = args.tcm_buffer::<f32>(4)?;
        x.tensor_to_tcm(&mut buf, 0)?;
        assert_eq!(&*buf, &values);
        assert_eq!(x.read_stream::<f32>()?.collect::<Vec<_>>(), values);
        Ok(x)
    });
    assert_eq!(status, Status::OK);
}

#[test]
fn empty_tensors_have_no_data_and_need_no_translation() {
    let fake = Fake::new();
    // Address 0 is in no window: an empty tensor is never translated.
    let args = [ArgTensor::hbm_tensor(Dtype::Float32, &[3, 0], 0).unwrap()];
    let mut result = args[0];
    let mut inv = fake.invocation();
    hand_off(&mut inv, &args, &mut result);
    let status = inv.run(|args| {
        let x = args.tensor()?;
        let mut out = args.output()?;
        assert_eq!((x.numel(), x.as_slice::<f32>()?.len(), out.as_mut_slice::<f32>()?.len()), (0, 0, 0));
        assert_eq!(x.read_stream::<f32>()?.next(), None);
        assert_eq!(out.write_stream::<f32>()?.write(1.0), Err(TensorError::StreamFull));
        x.tensor_to_tcm::<f32>(&mut [], 0)?;
        assert_eq!(x.tensor_to_tcm(&mut [0f32], 0), Err(TensorError::OutOfBounds { offset: 0, count: 1, numel: 0 }));
        Ok(out)
    });
    assert_eq!(status, Status::OK);
}

proptest! {
    // Miri interprets about 1000x slower: a few cases there, the full count natively.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

    #[test]
    fn tcm_accessor_copies_exactly_the_checked_range(
        numel in 0usize..3000,
        offset in 0usize..3200,
        count in 0usize..3200,
    ) {
        let mut fake = Fake::new();
        let values: Vec<i16> = (0..numel).map(|i| (i as i16).wrapping_mul(31)).collect();
        let in_bounds = offset + count <= numel;
        let (status, out) = run_unary::<i16, i16>(&mut fake, &values, numel, |args| {
            let x = args.tensor()?;
            let mut out = args.output()?;
            let mut buf = vec![-1i16; count];
            let read = x.tensor_to_tcm(&mut buf, offset);
            let write = out.tcm_to_tensor(&buf, offset);
            if in_bounds {
                assert_eq!((read, write), (Ok(()), Ok(())));
                assert_eq!(buf, values[offset..offset + count]);
            } else {
                let error = TensorError::OutOfBounds { offset, count, numel };
                assert_eq!((read, write), (Err(error), Err(error)));
                assert!(buf.iter().all(|&v| v == -1), "nothing copied out of bounds");
            }
            Ok(out)
        });
        prop_assert_eq!(status, Status::OK);
        for (i, &v) in out.iter().enumerate() {
            let copied = in_bounds && (offset..offset + count).contains(&i);
            prop_assert_eq!(v, if copied { values[i] } else { 0 });
        }
    }
}

#[test]
fn tcm_accessor_rejects_offsets_that_overflow() {
    let mut fake = Fake::new();
    let (status, _) = run_unary::<u8, u8>(&mut fake, &[1, 2, 3], 3, |args| {
        let x = args.tensor()?;
        let error = x.tensor_to_tcm(&mut [0u8; 2], usize::MAX).unwrap_err();
        assert_eq!(error, TensorError::OutOfBounds { offset: usize::MAX, count: 2, numel: 3 });
        Ok(x)
    });
    assert_eq!(status, Status::OK);
}

/// Streams `values` through a read stream and a write stream (`out = f(x)`), checks
/// the output and that every TCM block came back.
fn stream_round_trip<T: Element>(values: &[T], f: impl Fn(T) -> T, close: bool) {
    let mut fake = Fake::new();
    let expected: Vec<T> = values.iter().map(|&v| f(v)).collect();
    let (status, out) = run_unary::<T, T>(&mut fake, values, values.len(), |args| {
        let x = args.tensor()?;
        let mut out = args.output()?;
        let mut writer = out.write_stream::<T>()?;
        let mut reader = x.read_stream::<T>()?;
        assert_eq!(reader.remaining(), values.len());
        while let Some(v) = reader.read() {
            writer.write(f(v))?;
        }
        assert_eq!((reader.remaining(), writer.written()), (0, values.len()));
        assert_eq!(writer.write(T::default()), Err(TensorError::StreamFull));
        if close {
            writer.close();
            reader.close();
        } else {
            drop((writer, reader));
        }
        Ok(out)
    });
    assert_eq!(status, Status::OK);
    assert_eq!(out, expected);
    assert_eq!(fake.live_tcm_blocks(), 0, "stream buffers released");
    platform::with(|state| assert_eq!(state.tcm_allocs, 2));
}

#[test]
#[cfg_attr(
    miri,
    ignore = "Miri ICE (rust-lang/miri#5185, mixed-size atomic stores in weak-memory emulation); passes with -Zmiri-disable-weak-memory-emulation"
)]
fn streams_round_trip_more_than_one_buffer() {
    stream_round_trip(&(0..10_000).map(|i| i as f32 * 0.5).collect::<Vec<_>>(), |v| -v, true);
    stream_round_trip(&(0..9_001).map(|i| i as i8).collect::<Vec<_>>(), |v| v.wrapping_add(1), true);
    stream_round_trip(&(0..1_537).map(|i| i * 0x1_0000_0001i64).collect::<Vec<_>>(), |v| v ^ -1, true);
    stream_round_trip(&(0..4_097).map(|i| Bf16::from_bits(i as u16)).collect::<Vec<_>>(), |v| v, true);
    // Exactly one buffer, and one element.
    stream_round_trip(&(0..1024).collect::<Vec<i32>>(), |v| v * 3, true);
    stream_round_trip(&[7u8], |v| v + 1, true);
}

#[test]
fn write_streams_flush_on_drop() {
    stream_round_trip(&(0..5_000).map(|i| i as i16).collect::<Vec<_>>(), |v| v - 1, false);
}

#[test]
fn a_partial_write_stream_leaves_the_rest_untouched() {
    let mut fake = Fake::new();
    let (status, out) = run_unary::<u8, i32>(&mut fake, &[0], 3000, |args| {
        let mut out = args.output()?;
        let mut writer = out.write_stream::<i32>()?;
        for i in 0..1500 {
            writer.write(i + 1)?;
        }
        drop(writer);
        Ok(out)
    });
    assert_eq!(status, Status::OK);
    assert!(out[..1500].iter().enumerate().all(|(i, &v)| v == i as i32 + 1));
    assert!(out[1500..].iter().all(|&v| v == 0));
}

#[test]
fn four_streams_fill_the_tcm_pool() {
    let mut fake = Fake::new();
    let (status, _) = run_unary::<f32, f32>(&mut fake, &[1.0; 8], 8, |args| {
        let x = args.tensor()?;
        let streams: Vec<_> = (0..4).map(|_| x.read_stream::<f32>().unwrap()).collect();
        assert_eq!(x.read_stream::<f32>().err(), Some(TensorError::TcmExhausted));
        assert_eq!(args.tcm_buffer::<u8>(1).err(), Some(TensorError::TcmExhausted));
        drop(streams);
        let buffer = args.tcm_buffer::<f32>(4096)?;
        assert!(buffer.iter().all(|&v| v == 0.0), "TCM buffers start zeroed");
        assert_eq!(args.tcm_buffer::<f32>(1).err(), Some(TensorError::TcmExhausted));
        assert_eq!(args.tcm_buffer::<i64>(usize::MAX).err(), Some(TensorError::TcmExhausted));
        Ok(x)
    });
    assert_eq!(status, Status::OK);
    assert_eq!(fake.live_tcm_blocks(), 0);
}

// ------------------------------------------------------------------- C glue --

/// Failure paths of the C glue (this test thread's invocation, which is the device's
/// per-core one on the host) that never reach the device platform.
#[test]
fn c_abi_reports_null_or_zero_and_a_status() {
    let args = [ArgTensor::hbm_scalar(ScalarKind::Int, 0); 11];
    let mut result = ArgTensor::ZEROED;
    // SAFETY: 11 readable descriptors and one writable one.
    assert_eq!(unsafe { customop_set_invocation(args.as_ptr(), 11, &mut result) }, Status::TOO_MANY_ARGS.0);
    assert_eq!(customop_setup(false), Status::TOO_MANY_ARGS.0);
    assert!(customop_next_tensor().is_null());
    assert_eq!(customop_last_status(), Status::NOT_SET_UP.0);
    assert_eq!((customop_next_int(), customop_next_longlong(), customop_next_float()), (0, 0, 0.0));
    assert!(get_dst_tensor().is_null());
    // SAFETY: null is allowed; `args[0]` is a readable descriptor.
    unsafe {
        assert_eq!(customop_return_tensor(core::ptr::null()), Status::NULL_POINTER.0);
        assert_eq!(customop_return_tensor(&args[0]), Status::NOT_SET_UP.0);
        assert!(customop_tensor_data(core::ptr::null()).is_null());
        assert_eq!(customop_last_status(), Status::NULL_POINTER.0);
    }
    assert_eq!(customop_cleanup(), Status::TOO_MANY_ARGS.0);
    assert_eq!(customop_invocation_status(), Status::TOO_MANY_ARGS.0);
    assert_eq!(run_kernel(|args| Ok(args.output()?)), Status::TOO_MANY_ARGS);
}

#[test]
fn c_shape_accessors_read_valid_descriptors_and_report_the_rest() {
    let desc = ArgTensor::hbm_tensor(Dtype::Int16, &[3, 0, 7], 0x1000).unwrap();
    let scalar = ArgTensor::hbm_scalar(ScalarKind::Float, 0x2000);
    // SAFETY: every pointer is null or a live descriptor.
    unsafe {
        assert_eq!(customop_tensor_numel(&desc), 0, "a valid empty tensor");
        assert_eq!(customop_last_status(), Status::OK.0);
        assert_eq!(customop_tensor_dtype(&desc), Dtype::Int16 as u32);
        assert_eq!(customop_tensor_rank(&desc), 3);
        let dims: Vec<u32> = (0..5).map(|i| customop_tensor_dim(&desc, i)).collect();
        assert_eq!(dims, [3, 0, 7, 0, 0]);
        assert_eq!(customop_tensor_dim(&desc, u32::MAX), 0);
        assert_eq!(customop_last_status(), Status::OK.0);
        assert_eq!(
            (customop_tensor_numel(&scalar), customop_tensor_dtype(&scalar), customop_tensor_rank(&scalar)),
            (1, Dtype::Float32 as u32, 1)
        );

        // Each accessor checks the fields it reads: a bad one gives 0 and the
        // descriptor's first error; the others still read theirs.
        let last = || Status(customop_last_status());
        let bad_rank = ArgTensor { num_dim: 9, ..desc };
        assert_eq!((customop_tensor_rank(&bad_rank), last()), (0, Status::RANK_TOO_LARGE));
        assert_eq!((customop_tensor_dim(&bad_rank, 0), last()), (0, Status::RANK_TOO_LARGE));
        assert_eq!((customop_tensor_dtype(&bad_rank), last()), (Dtype::Int16 as u32, Status::OK));
        let bad_dtype = ArgTensor { dtype: 0, ..desc };
        assert_eq!((customop_tensor_dtype(&bad_dtype), last()), (0, Status::UNKNOWN_DTYPE));
        assert_eq!((customop_tensor_rank(&bad_dtype), last()), (3, Status::OK));
        let out_of_line = ArgTensor { framework_shape_type: shape_type::OUT_OF_LINE, ..desc };
        assert_eq!((customop_tensor_dim(&out_of_line, 0), last()), (0, Status::OUT_OF_LINE_SHAPE));
        let matrix = ArgTensor::tpb_tensor(Dtype::Float32, &[4, 5], 0x100).unwrap();
        assert_eq!((customop_tensor_numel(&matrix), last()), (20, Status::OK));
        let bad_kind = ArgTensor { storage_kind: 2, ..matrix };
        assert_eq!((customop_tensor_numel(&bad_kind), last()), (0, Status::UNKNOWN_STORAGE_KIND));
        let mut bad_reserved = matrix;
        bad_reserved.reserved0[2] = 1;
        assert_eq!((customop_tensor_numel(&bad_reserved), last()), (0, Status::RESERVED_NON_ZERO));
        assert_eq!((customop_tensor_rank(core::ptr::null()), last()), (0, Status::NULL_POINTER));
        assert_eq!((customop_tensor_numel(core::ptr::null()), last()), (0, Status::NULL_POINTER));
        // Any alignment: the descriptor at an odd address (the whole check, on a copy).
        let mut bytes = [0u8; 49];
        bytes[1..].copy_from_slice(&desc.to_bytes());
        assert_eq!(customop_tensor_dim(bytes[1..].as_ptr().cast(), 2), 7);
        bytes[1..].copy_from_slice(&matrix.to_bytes());
        assert_eq!((customop_tensor_numel(bytes[1..].as_ptr().cast()), last()), (20, Status::OK));
    }
}

#[test]
fn customop_fail_reports_the_kernels_own_code_as_a_rust_kernel_would() {
    let args = [ArgTensor::hbm_scalar(ScalarKind::Int, 0)];
    let mut result = ArgTensor::ZEROED;
    // SAFETY: one readable descriptor and one writable one.
    unsafe { customop_set_invocation(args.as_ptr(), 1, &mut result) };
    assert_eq!(customop_fail(7), Status::KERNEL_BASE + 7);
    assert_eq!(customop_fail(9), Status::KERNEL_BASE + 9);
    assert_eq!(customop_last_status(), Status::KERNEL_BASE + 9);
    assert_eq!(customop_invocation_status(), Status::KERNEL_BASE + 7, "the first failure stays");
    // SAFETY: as above.
    unsafe { customop_set_invocation(args.as_ptr(), 1, &mut result) };
    assert_eq!(run_kernel(|_| Err(KernelError::Op(7))), Status(Status::KERNEL_BASE + 7));
}

/// Found by the `pull_stream` fuzz target in a version that resolved the output in
/// place: a `return_tensor` before `get_dst_tensor` changed what it handed out. The
/// output is the pre-shaped descriptor setup copied, whatever is returned meanwhile.
#[test]
fn get_dst_tensor_after_a_return_still_hands_out_the_pre_shaped_output() {
    let mut fake = Fake::new();
    let x = fake.tensor(&[4], &[1.0f32, 2.0, 3.0, 4.0]);
    let out = fake.tensor(&[2, 2], &[0.0f32; 4]);
    let mut result = out;
    let args = [x];
    let mut inv = fake.invocation();
    hand_off(&mut inv, &args, &mut result);
    inv.setup(false).unwrap();
    inv.return_tensor(&x).unwrap();
    assert_eq!(result.to_bytes(), x.to_bytes(), "the return reached the loader");
    let dst = inv.dst_tensor().expect("the output");
    assert_eq!(dst.to_bytes(), out.to_bytes());
    assert_eq!(inv.cleanup(), Status::OK);
}

// ------------------------------------------------------------ resolution reuse --

fn translations() -> usize {
    platform::with(|fake| fake.translations)
}

/// A Rust kernel over (tensor x, int k, float alpha): out[i] = x[i] * alpha + k.
fn scale_add(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let k = args.int()?;
    let alpha = args.float()?;
    let mut out = args.output()?;
    for (o, v) in out.as_mut_slice::<f32>()?.iter_mut().zip(x.as_slice::<f32>()?) {
        *o = v * alpha + k as f32;
    }
    Ok(out)
}

#[test]
fn setup_reuses_what_it_resolved_for_unchanged_arguments_only() {
    let mut fake = Fake::new();
    let x = fake.tensor(&[4], &[1.0f32, 2.0, 3.0, 4.0]);
    let k = fake.scalar(ScalarKind::Int, 10i32);
    let half = fake.scalar(ScalarKind::Float, 0.5f32);
    let double = fake.scalar(ScalarKind::Float, 2.0f32);
    let (out, host) = fake.output_f32(&[4]);
    let mut inv = fake.invocation();
    let mut dispatch = |args: Vec<ArgTensor>, expected: [f32; 4], translated: usize| {
        let mut result = out;
        let before = translations();
        hand_off(&mut inv, &args, &mut result);
        assert_eq!(inv.run(scale_add), Status::OK);
        assert_eq!(read_host(host, 4), expected);
        assert_eq!(translations() - before, translated, "translations of {args:?}");
    };
    dispatch(vec![x, k, half], [10.5, 11.0, 11.5, 12.0], 4);
    // The same bytes in a new block: nothing to translate.
    dispatch(vec![x, k, half], [10.5, 11.0, 11.5, 12.0], 0);
    // One argument changed: that one.
    dispatch(vec![x, k, double], [12.0, 14.0, 16.0, 18.0], 1);
    dispatch(vec![x, k, double], [12.0, 14.0, 16.0, 18.0], 0);

    // A descriptor block at an address that is not word-aligned is copied and resolved
    // afresh. (A byte vector may itself start anywhere, as under Miri: the block starts
    // 1 byte in when the vector is word-aligned, else at its start.)
    let args = [x, k, half];
    let mut bytes = vec![0u8; 1 + size_of_val(&args)];
    let start = usize::from(bytes.as_ptr().addr().is_multiple_of(4));
    for (i, arg) in args.iter().enumerate() {
        bytes[start + i * 48..][..48].copy_from_slice(&arg.to_bytes());
    }
    let mut result = out;
    let before = translations();
    // SAFETY: three descriptors at `bytes + start`, live to the end; any alignment.
    unsafe { inv.set_invocation(bytes[start..].as_ptr().cast(), 3, &mut result) };
    assert_eq!(inv.run(scale_add), Status::OK);
    assert_eq!(read_host(host, 4), [10.5, 11.0, 11.5, 12.0]);
    assert_eq!(translations() - before, 3, "the output's own block is aligned: reused");
}

#[test]
fn c_writes_through_handed_descriptors_change_nothing_setup_reuses() {
    let mut fake = Fake::new();
    let x = fake.tensor(&[4], &[1.0f32, 2.0, 3.0, 4.0]);
    let y = fake.tensor(&[4], &[5.0f32, 6.0, 7.0, 8.0]);
    let k = fake.scalar(ScalarKind::Int, 1i32);
    let (out, _) = fake.output_f32(&[4]);
    let (other_out, _) = fake.output_f32(&[4]);
    let mut inv = fake.invocation();
    let mut result = out;
    let first_args = [x, k];
    hand_off(&mut inv, &first_args, &mut result);
    inv.setup(false).unwrap();
    // C may write through the pointers it is given: make them describe `y` and
    // `other_out`.
    let handed = inv.next_tensor_for_c().unwrap();
    // SAFETY: a descriptor the runtime handed out, live until the next setup.
    unsafe { handed.write(y) };
    assert_eq!(inv.next_int(), Ok(1));
    let handed_dst = inv.dst_tensor_for_c().unwrap();
    // SAFETY: as above.
    unsafe { handed_dst.write(other_out) };
    assert_eq!(inv.cleanup(), Status::OK);

    let mut dispatch = |args: [ArgTensor; 2], output: ArgTensor, data: [f32; 4], translated: usize| {
        let mut result = output;
        let before = translations();
        hand_off(&mut inv, &args, &mut result);
        let status = inv.run(|args| {
            assert_eq!(args.tensor()?.as_slice::<f32>()?, data);
            assert_eq!(args.int()?, 1);
            Ok(args.output()?)
        });
        assert_eq!(status, Status::OK);
        assert_eq!(translations() - before, translated);
    };
    // The loader passes what it passed before: nothing the runtime holds was changed.
    dispatch([x, k], out, [1.0, 2.0, 3.0, 4.0], 0);
    // And what C wrote, which the runtime resolves as new arguments.
    dispatch([y, k], other_out, [5.0, 6.0, 7.0, 8.0], 2);
}

#[test]
fn output_overlaps_are_tracked_across_ops_with_fewer_arguments() {
    let mut fake = Fake::new();
    let a = fake.tensor(&[4], &[1.0f32; 4]);
    let k = fake.scalar(ScalarKind::Int, 3i32);
    let b = fake.tensor(&[4], &[2.0f32; 4]);
    let (apart, _) = fake.output_f32(&[4]);
    let over_b = b;
    fn three(args: &Args) -> Result<Tensor<'_>, KernelError> {
        args.tensor()?;
        args.int()?;
        args.tensor()?;
        Ok(args.output()?)
    }
    fn one(args: &Args) -> Result<Tensor<'_>, KernelError> {
        args.tensor()?;
        Ok(args.output()?)
    }
    let mut inv = fake.invocation();
    let mut result = apart;
    let (three_args, one_arg) = ([a, k, b], [a]);
    hand_off(&mut inv, &three_args, &mut result);
    assert_eq!(inv.run(three), Status::OK);
    // One argument, and an output over `b`'s bytes (which this op does not pass).
    result = over_b;
    hand_off(&mut inv, &one_arg, &mut result);
    assert_eq!(inv.run(one), Status::OK);
    // `b` again, unchanged since the first op, with that output: they overlap.
    hand_off(&mut inv, &three_args, &mut result);
    assert_eq!(inv.run(three), Status::OUTPUT_ALIASES_INPUT);
}

/// Host memory behind two real translate windows, and three ways to map them.
struct Windows {
    buffers: [Vec<u64>; 3],
}

const WINDOW_A: u64 = 0x20_0000_0000;
const WINDOW_B: u64 = 0x20_0000_1000;
const WINDOW_SIZE: usize = 4096;

impl Windows {
    /// Three 4 KiB buffers, each word `buffer << 32 | index`, so that a moved window
    /// reads different values.
    fn new() -> Windows {
        Windows {
            buffers: core::array::from_fn(|b| (0..WINDOW_SIZE as u64 / 8).map(|i| (b as u64) << 32 | i).collect()),
        }
    }

    /// Layout 0: A on buffer 0, B on buffer 1; 1: A moved to buffer 2; 2: B unmapped.
    fn configure(&self, layout: u8) {
        let window = |base, buffer: usize| {
            TranslateRecord::window(base, WINDOW_SIZE as u64, self.buffers[buffer].as_ptr() as u64)
        };
        let records = match layout % 3 {
            0 => vec![window(WINDOW_A, 0), window(WINDOW_B, 1)],
            1 => vec![window(WINDOW_A, 2), window(WINDOW_B, 1)],
            _ => vec![window(WINDOW_A, 0)],
        };
        crate::translate::configure(&records).unwrap();
    }
}

use crate::translate::TranslateRecord;

/// The runtime's own translate (governed by `translate::configure`) over the fake TCM.
const REAL_TRANSLATE: Platform = Platform { translate: None, ..platform::PLATFORM };

/// The arguments the reuse property draws from: tensors and scalars in windows A and B
/// (two of them overlapping), a malformed one and an unmapped one.
fn argument_pool() -> [ArgTensor; 9] {
    let tensor = |dtype, shape: &[u32], addr| ArgTensor::hbm_tensor(dtype, shape, addr).unwrap();
    [
        tensor(Dtype::Float32, &[4], WINDOW_A),
        tensor(Dtype::Float32, &[2, 4], WINDOW_A + 64),
        ArgTensor::hbm_scalar(ScalarKind::Int, WINDOW_A + 256),
        ArgTensor::hbm_scalar(ScalarKind::Float, WINDOW_A + 260),
        ArgTensor::hbm_scalar(ScalarKind::LongLong, WINDOW_A + 264),
        tensor(Dtype::Int16, &[3], WINDOW_B),
        ArgTensor { dtype: 0, ..tensor(Dtype::Int8, &[4], WINDOW_A) },
        tensor(Dtype::Int8, &[5], 0x77),
        tensor(Dtype::Float32, &[4], WINDOW_B + 4),
    ]
}

/// The outputs the reuse property draws from: apart from every argument, over two of
/// window B's tensors, over most of window A.
fn output_pool() -> [ArgTensor; 3] {
    let tensor = |shape: &[u32], addr| ArgTensor::hbm_tensor(Dtype::Float32, shape, addr).unwrap();
    [tensor(&[4], WINDOW_B + 512), tensor(&[4], WINDOW_B), tensor(&[64], WINDOW_A)]
}

#[derive(Debug, Clone, Copy)]
enum Pull {
    Tensor,
    Int,
    LongLong,
    Float,
    Output,
}

#[derive(Debug, Clone)]
enum Step {
    /// The loader configures layout `n` of [`Windows`].
    Configure(u8),
    /// A dispatch of pool arguments `args` and pool output `output`; a Rust kernel or
    /// C calls make `pulls`; a C kernel writes pool argument `scribble` through the
    /// first tensor pointer it gets.
    Dispatch { args: Vec<usize>, output: Option<usize>, rust: bool, pulls: Vec<Pull>, scribble: Option<usize> },
}

fn step() -> impl Strategy<Value = Step> {
    let pull =
        prop_oneof![Just(Pull::Tensor), Just(Pull::Int), Just(Pull::LongLong), Just(Pull::Float), Just(Pull::Output)];
    prop_oneof![
        1 => (0u8..3).prop_map(Step::Configure),
        6 => (
            proptest::collection::vec(0usize..9, 0..5),
            proptest::option::weighted(0.9, 0usize..3),
            any::<bool>(),
            proptest::collection::vec(pull, 0..7),
            proptest::option::weighted(0.3, 0usize..9),
        )
            .prop_map(|(args, output, rust, pulls, scribble)| Step::Dispatch { args, output, rust, pulls, scribble }),
    ]
}

/// What one pull gave: the device bytes and shape of a tensor, a scalar's bits, or the
/// failure.
type Seen = Result<(usize, usize, u64), Status>;

/// Runs a dispatch step on `inv`: everything its pulls saw, the invocation status and
/// the result descriptor's bytes after it.
fn dispatch(inv: &mut Invocation, step: &Step) -> (Vec<Seen>, Status, [u8; 48]) {
    let Step::Dispatch { args, output, rust, pulls, scribble } = step else { unreachable!() };
    let pool = argument_pool();
    let args: Vec<ArgTensor> = args.iter().map(|&i| pool[i]).collect();
    let mut result = output.map(|i| output_pool()[i]);
    let result_ptr = result.as_mut().map_or(core::ptr::null_mut(), core::ptr::from_mut);
    // SAFETY: `args` and `result` live until the end of this function.
    unsafe { inv.set_invocation(args.as_ptr(), args.len() as u32, result_ptr) };
    let mut seen = Vec::new();
    let status = if *rust {
        inv.run(|args| {
            let mut taken = None;
            for pull in pulls {
                let tensor = match pull {
                    Pull::Tensor => args.tensor(),
                    Pull::Output => args.output(),
                    scalar => {
                        let bits = match scalar {
                            Pull::Int => args.int().map(|v| v as u64),
                            Pull::LongLong => args.longlong().map(|v| v as u64),
                            _ => args.float().map(|v| u64::from(v.to_bits())),
                        };
                        seen.push(bits.map(|bits| (0, 0, bits)).map_err(Status::from));
                        continue;
                    }
                };
                seen.push(tensor.as_ref().map(|t| (t.data_ptr() as usize, t.numel(), 0)).map_err(|&e| e.into()));
                if let (Pull::Output, Ok(out)) = (pull, tensor) {
                    taken = Some(out);
                }
            }
            taken.ok_or(KernelError::Op(1))
        })
    } else {
        let mut scribble = *scribble;
        if inv.setup(false).is_ok() {
            for pull in pulls {
                let got = match pull {
                    Pull::Tensor => inv.next_tensor_for_c().map(|handed| {
                        // SAFETY: a handed-out descriptor, live until the next
                        // setup, which C may write.
                        let data = inv.tensor_data(unsafe { &*handed }).map_or(0, |p| p as usize);
                        if let Some(i) = scribble.take() {
                            // SAFETY: as above.
                            unsafe { handed.write(pool[i]) };
                        }
                        (data, 0, 0)
                    }),
                    Pull::Int => inv.next_int().map(|v| (0, 0, v as u64)),
                    Pull::LongLong => inv.next_longlong().map(|v| (0, 0, v as u64)),
                    Pull::Float => inv.next_float().map(|v| (0, 0, u64::from(v.to_bits()))),
                    Pull::Output => inv
                        .dst_tensor()
                        .map(|desc| (0, 0, u64::from_le_bytes(desc.to_bytes()[..8].try_into().unwrap()))),
                };
                seen.push(got.map_err(Status::from));
            }
        }
        inv.cleanup()
    };
    (seen, status, result.map_or([0; 48], |r| r.to_bytes()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

    /// Reuse is invisible: an invocation that has run earlier ops behaves, op for op,
    /// as a new one, whatever the ops, the arguments, the C writes through the
    /// pointers it hands out and the reconfigurations of translation in between.
    #[test]
    fn reused_resolutions_are_never_stale(steps in proptest::collection::vec(step(), 1..24)) {
        let _fake = Fake::new();
        let windows = Windows::new();
        windows.configure(0);
        // SAFETY: the real translate maps the windows onto `windows`' buffers,
        // live to the end; TCM blocks are separate host buffers.
        let mut inv = unsafe { Invocation::with_platform(REAL_TRANSLATE) };
        for step in &steps {
            match step {
                Step::Configure(layout) => windows.configure(*layout),
                Step::Dispatch { .. } => {
                    // SAFETY: as above.
                    let mut fresh = unsafe { Invocation::with_platform(REAL_TRANSLATE) };
                    prop_assert_eq!(dispatch(&mut inv, step), dispatch(&mut fresh, step), "{:?}", step);
                }
            }
        }
    }
}
