//! The wire records: the 48-byte `NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR` descriptor, its
//! enums, and the 504-byte `ArgExtractor` / 512-byte `ArgParser` that hold one
//! invocation's arguments. `docs/abi/descriptors.md` is the byte-level reference.
//!
//! Every enum on the wire is a raw `u8` that is validated by [`ArgTensor::validate`],
//! never a Rust enum read out of memory, so any 48 bytes are a valid [`ArgTensor`] and
//! parsing arbitrary bytes cannot be undefined behaviour.

use core::fmt;
use core::mem::offset_of;

/// Maximum number of dimensions of a tensor.
pub const MAX_RANK: usize = 8;
/// Largest size of one dimension (dimensions are `u16` on the wire).
pub const MAX_DIM: u32 = u16::MAX as u32;
/// Maximum number of arguments of one invocation.
pub const MAX_ARGS: usize = 10;
/// Size in bytes of one descriptor, and the stride of a descriptor array.
pub const ARG_TENSOR_SIZE: usize = 48;

/// Element type of a tensor: the 1-byte `NEURON_ISA_TPB_DTYPE` at descriptor offset 0.
///
/// Raw value 0 is never valid, so a zeroed descriptor is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Dtype {
    /// `NEURON_ISA_TPB_DTYPE_FLOAT32`, IEEE binary32.
    Float32 = 1,
    /// `NEURON_ISA_TPB_DTYPE_BFLOAT16`, the upper half of a binary32.
    Bfloat16 = 2,
    /// `NEURON_ISA_TPB_DTYPE_FLOAT16`, IEEE binary16.
    Float16 = 3,
    /// `NEURON_ISA_TPB_DTYPE_INT32`.
    Int32 = 4,
    /// `NEURON_ISA_TPB_DTYPE_INT8`.
    Int8 = 5,
    /// `NEURON_ISA_TPB_DTYPE_INT64`.
    Int64 = 6,
    /// `NEURON_ISA_TPB_DTYPE_INT16`.
    Int16 = 7,
    /// `NEURON_ISA_TPB_DTYPE_UINT8`.
    Uint8 = 8,
}

impl Dtype {
    /// Every dtype, in raw-value order.
    pub const ALL: [Dtype; 8] = [
        Dtype::Float32,
        Dtype::Bfloat16,
        Dtype::Float16,
        Dtype::Int32,
        Dtype::Int8,
        Dtype::Int64,
        Dtype::Int16,
        Dtype::Uint8,
    ];

    /// Decodes a raw wire byte; `None` for an unknown value.
    pub const fn from_raw(raw: u8) -> Option<Dtype> {
        Some(match raw {
            1 => Dtype::Float32,
            2 => Dtype::Bfloat16,
            3 => Dtype::Float16,
            4 => Dtype::Int32,
            5 => Dtype::Int8,
            6 => Dtype::Int64,
            7 => Dtype::Int16,
            8 => Dtype::Uint8,
            _ => return None,
        })
    }

    /// The short name the tools and reports use: NumPy's (`float32`, `int8`, ...) and
    /// `bfloat16`, which NumPy lacks.
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::Float32 => "float32",
            Dtype::Bfloat16 => "bfloat16",
            Dtype::Float16 => "float16",
            Dtype::Int32 => "int32",
            Dtype::Int8 => "int8",
            Dtype::Int64 => "int64",
            Dtype::Int16 => "int16",
            Dtype::Uint8 => "uint8",
        }
    }

    /// Size of one element in bytes.
    pub const fn size(self) -> usize {
        1 << self.size_log2()
    }

    /// Base-2 logarithm of [`size`](Self::size): byte lengths are shifts, not multiplies.
    pub(crate) const fn size_log2(self) -> u32 {
        match self {
            Dtype::Int8 | Dtype::Uint8 => 0,
            Dtype::Bfloat16 | Dtype::Float16 | Dtype::Int16 => 1,
            Dtype::Float32 | Dtype::Int32 => 2,
            Dtype::Int64 => 3,
        }
    }
}

/// What an argument is: the 1-byte `NEURON_ISA_TPB_CUSTOM_OP_ARG_TYPE` at offset 1 (and
/// in `ArgExtractor::arg_types`). Scalars travel as one-element tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ArgType {
    /// A tensor of any dtype.
    Tensor = 1,
    /// A C `int` scalar: a one-element [`Dtype::Int32`] tensor.
    Int = 2,
    /// A C `long long` scalar: a one-element [`Dtype::Int64`] tensor.
    LongLong = 3,
    /// A C `float` scalar: a one-element [`Dtype::Float32`] tensor.
    Float = 4,
}

impl ArgType {
    /// Decodes a raw wire byte; `None` for an unknown value.
    pub const fn from_raw(raw: u8) -> Option<ArgType> {
        Some(match raw {
            1 => ArgType::Tensor,
            2 => ArgType::Int,
            3 => ArgType::LongLong,
            4 => ArgType::Float,
            _ => return None,
        })
    }

    /// The dtype a scalar of this type must have; `None` for [`ArgType::Tensor`].
    pub const fn scalar_dtype(self) -> Option<Dtype> {
        match self {
            ArgType::Tensor => None,
            ArgType::Int => Some(Dtype::Int32),
            ArgType::LongLong => Some(Dtype::Int64),
            ArgType::Float => Some(Dtype::Float32),
        }
    }
}

/// Raw values of `framework_shape_type` (offset 2).
pub mod shape_type {
    /// The shape is the inline `u16` array at offset 8: the only form the device accepts.
    pub const INLINE: u8 = 0;
    /// The shape lives in framework memory (host-only); the device rejects it.
    pub const OUT_OF_LINE: u8 = 1;
}

/// Raw values of `storage_kind` (offset 4): which member of the storage union is live.
pub mod storage_kind {
    /// [`TpbStorage`](super::TpbStorage): a 32-bit address in the SBUF window.
    pub const TPB: u8 = 0;
    /// [`HbmStorage`](super::HbmStorage): a 64-bit SoC address.
    pub const HBM: u8 = 1;
}

/// `NEURON_ISA_TPB_CUSTOM_OP_TPB_TENSOR_STORAGE_DESC`: a tensor in SBUF, 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct TpbStorage {
    /// Address in the per-partition SBUF window (a framework address).
    pub addr: u32,
    /// Number of elements.
    pub num_elem: u32,
    /// Number of SBUF partitions the tensor spans (the runtime accepts only 1).
    pub num_partitions: u8,
    /// Must be zero.
    pub reserved0: [u8; 3],
    /// Elements per partition block (the runtime requires `num_elem`).
    pub num_elem_per_block: u32,
}

/// `NEURON_ISA_TPB_CUSTOM_OP_HBM_TENSOR_STORAGE_DESC`: a tensor in HBM, 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct HbmStorage {
    /// Full SoC address (a framework address).
    pub addr: u64,
    /// Number of elements.
    pub num_elem: u32,
    /// Must be zero.
    pub reserved0: u32,
}

/// The storage union; `ArgTensor::storage_kind` says which member is live. Both members
/// are plain integers without padding, so every 16 bytes are valid as either.
#[derive(Clone, Copy)]
#[repr(C)]
pub union StorageDesc {
    /// The SBUF form.
    pub tpb: TpbStorage,
    /// The HBM form.
    pub hbm: HbmStorage,
}

impl StorageDesc {
    /// The 16 bytes read as the SBUF form.
    pub const fn tpb(&self) -> TpbStorage {
        // SAFETY: both members are 16 bytes of plain integers with no padding, so every
        // bit pattern of the union is a valid `TpbStorage`.
        unsafe { self.tpb }
    }

    /// The 16 bytes read as the HBM form.
    pub const fn hbm(&self) -> HbmStorage {
        // SAFETY: as in `tpb`: every bit pattern is a valid `HbmStorage`.
        unsafe { self.hbm }
    }
}

impl fmt::Debug for StorageDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StorageDesc").field("tpb", &self.tpb()).field("hbm", &self.hbm()).finish()
    }
}

/// `NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR`: one argument (or the output) on the wire.
///
/// 48 bytes, little-endian, 8-byte aligned, no implicit padding: every byte is a named
/// field, so any 48 bytes form a valid value and [`validate`](Self::validate) decides
/// whether they describe a tensor.
///
/// ```
/// use neuroncustomop::wrapper_api::{ArgTensor, Dtype, DescriptorError};
///
/// let desc = ArgTensor::hbm_tensor(Dtype::Float32, &[2, 3], 0x4000_0000)?;
/// let view = desc.validate()?;
/// assert_eq!((view.shape(), view.num_elem()), (&[2u16, 3][..], 6));
///
/// let mut bad = desc;
/// bad.num_dim = 0;
/// assert_eq!(bad.validate(), Err(DescriptorError::RankZero));
/// # Ok::<(), DescriptorError>(())
/// ```
#[doc(alias = "NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR")]
#[derive(Debug, Clone, Copy)]
#[repr(C, align(8))]
pub struct ArgTensor {
    /// Raw [`Dtype`].
    pub dtype: u8,
    /// Raw [`ArgType`].
    pub arg_type: u8,
    /// Raw [`shape_type`] value.
    pub framework_shape_type: u8,
    /// Rank, `1..=8`.
    pub num_dim: u8,
    /// Raw [`storage_kind`] value.
    pub storage_kind: u8,
    /// Must be zero.
    pub reserved0: [u8; 3],
    /// Dimensions, outermost first; entries at and past `num_dim` must be zero.
    pub shape: [u16; MAX_RANK],
    /// Where the elements are.
    pub storage: StorageDesc,
    /// Must be zero.
    pub reserved1: [u8; 8],
}

/// Byte offset of the storage union in the descriptor.
const STORAGE_OFFSET: usize = 24;

/// Descriptor byte offsets of the fields [`ArgTensor::check`] reads as words.
mod wire {
    use super::{ArgTensor, HbmStorage, STORAGE_OFFSET, TpbStorage};
    use core::mem::offset_of;

    pub(super) const TPB_ADDR: usize = STORAGE_OFFSET + offset_of!(TpbStorage, addr);
    pub(super) const TPB_NUM_ELEM: usize = STORAGE_OFFSET + offset_of!(TpbStorage, num_elem);
    pub(super) const TPB_NUM_PARTITIONS: usize = STORAGE_OFFSET + offset_of!(TpbStorage, num_partitions);
    pub(super) const TPB_RESERVED: usize = STORAGE_OFFSET + offset_of!(TpbStorage, reserved0);
    pub(super) const TPB_NUM_ELEM_PER_BLOCK: usize = STORAGE_OFFSET + offset_of!(TpbStorage, num_elem_per_block);
    pub(super) const HBM_ADDR: usize = STORAGE_OFFSET + offset_of!(HbmStorage, addr);
    pub(super) const HBM_NUM_ELEM: usize = STORAGE_OFFSET + offset_of!(HbmStorage, num_elem);
    pub(super) const HBM_RESERVED: usize = STORAGE_OFFSET + offset_of!(HbmStorage, reserved0);
    pub(super) const RESERVED1: usize = offset_of!(ArgTensor, reserved1);
}

/// What the C shape accessors read of a descriptor that is not a copy the runtime
/// handed out (`customop_tensor_dtype` and the others, docs/abi/descriptors.md §4): only
/// the fields the accessor's answer comes from, each checked as
/// [`ArgTensor::check_in_order`] checks it, straight from the caller's memory (no copy,
/// nothing else checked). `None` (for [`fields::dim`], its `refused()`) when one of
/// them is not valid, or the pointer is null or not aligned for the reads: the accessor
/// then runs the whole check, which names the descriptor's first error.
///
/// Each function's contract: `tensor` is null or valid for reads of one descriptor (any
/// alignment).
pub(super) mod fields {
    use super::{ArgTensor, Dtype, MAX_RANK, shape_type, storage_kind, wire};
    use core::mem::offset_of;

    /// Byte `offset` of the descriptor at `tensor`, not null.
    ///
    /// # Safety
    /// `tensor` is valid for reads of one descriptor; `offset` is below 48.
    #[inline(always)]
    unsafe fn byte(tensor: *const ArgTensor, offset: usize) -> u8 {
        // SAFETY: inside the readable descriptor (the contract); a byte is always aligned.
        unsafe { tensor.cast::<u8>().add(offset).read() }
    }

    /// The `dtype` byte, a [`Dtype`]'s raw value.
    ///
    /// # Safety
    /// See the module.
    #[inline(always)]
    pub(in super::super) unsafe fn dtype(tensor: *const ArgTensor) -> Option<u32> {
        if tensor.is_null() {
            return None;
        }
        // SAFETY: not null, so readable (the contract); offset 0.
        let raw = u32::from(unsafe { byte(tensor, offset_of!(ArgTensor, dtype)) });
        // Dtype's raw values are 1..=8 (`Dtype::ALL`), compared as a word: a byte's
        // arithmetic costs masks.
        const _: () = assert!(Dtype::ALL[0] as u8 == 1 && Dtype::ALL[7] as u8 == Dtype::ALL.len() as u8);
        (raw.wrapping_sub(1) < Dtype::ALL.len() as u32).then_some(raw)
    }

    /// The rank, 1 to [`MAX_RANK`].
    ///
    /// # Safety
    /// See the module.
    #[inline(always)]
    pub(in super::super) unsafe fn rank(tensor: *const ArgTensor) -> Option<u32> {
        if tensor.is_null() {
            return None;
        }
        // SAFETY: not null, so readable (the contract); offset 3.
        let rank = u32::from(unsafe { byte(tensor, offset_of!(ArgTensor, num_dim)) });
        (rank.wrapping_sub(1) < MAX_RANK as u32).then_some(rank)
    }

    /// Dimension `index` of an inline shape, 0 at and past the rank, given to `found`;
    /// the rank checked as [`rank`]'s. `refused()` where the others give `None`.
    ///
    /// Written for LLVM 22's Xtensa code (the accessor's own instructions, its
    /// goal of 20, `hot_paths::accessors_*`): the two answers go to `found` apart, not as one `Option`, whose tag
    /// LLVM materialises where `None` and `Some(0)` meet past the rank (4 instructions
    /// on every path); and the rank's bounds are tested apart, not as one range
    /// (`rank - 1 < 8`), which LLVM narrows to the loaded byte's 8 bits and widens again
    /// (a mask, 2 instructions).
    ///
    /// # Safety
    /// See the module.
    #[inline(always)]
    pub(in super::super) unsafe fn dim<R>(
        tensor: *const ArgTensor,
        index: u32,
        found: impl FnOnce(u32) -> R,
        refused: impl FnOnce() -> R,
    ) -> R {
        if tensor.is_null() {
            return refused();
        }
        // SAFETY: not null, so readable (the contract); offset 2.
        let shape_type = u32::from(unsafe { byte(tensor, offset_of!(ArgTensor, framework_shape_type)) });
        if shape_type != u32::from(shape_type::INLINE) {
            return refused();
        }
        // SAFETY: as above; offset 3.
        let rank = u32::from(unsafe { byte(tensor, offset_of!(ArgTensor, num_dim)) });
        if rank > MAX_RANK as u32 {
            return refused();
        }
        if index >= rank {
            // Past the rank: rare (a kernel asks for the dimensions it has), so out of line.
            core::hint::cold_path();
            // Rank 0 is not valid either (below the rank, `index < rank` says it is not 0).
            return if rank == 0 { refused() } else { found(0) };
        }
        let offset = offset_of!(ArgTensor, shape) + 2 * index as usize;
        // SAFETY: entry `index` < 8 of the shape, inside the readable descriptor; read
        // as two bytes, so the pointer needs no alignment test (which costs what the
        // second byte does).
        let dim = unsafe { tensor.cast::<u8>().add(offset).cast::<u16>().read_unaligned() };
        found(u32::from(u16::from_le(dim)))
    }

    /// The storage's element count, at the offset of the form the storage kind names;
    /// the kind's word (the kind and the three reserved bytes after it) checked.
    ///
    /// # Safety
    /// See the module.
    #[inline(always)]
    pub(in super::super) unsafe fn numel(tensor: *const ArgTensor) -> Option<u32> {
        const _: () =
            assert!(wire::HBM_NUM_ELEM == wire::TPB_NUM_ELEM + 4 && storage_kind::HBM == storage_kind::TPB + 1);
        if tensor.is_null() || !tensor.cast::<u32>().is_aligned() {
            return None;
        }
        let word = |offset: usize| {
            // SAFETY: a word inside the readable descriptor (both offsets below are), and
            // 4-aligned (the descriptor is, checked, and so are the offsets).
            u32::from_le(unsafe { tensor.cast::<u8>().add(offset).cast::<u32>().read() })
        };
        let kind_word = word(offset_of!(ArgTensor, storage_kind));
        if kind_word > u32::from(storage_kind::HBM) {
            return None;
        }
        Some(word(wire::TPB_NUM_ELEM + 4 * kind_word as usize))
    }
}

/// The vendor's C name for [`ArgTensor`].
#[allow(non_camel_case_types)]
pub type NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR = ArgTensor;

const _: () = {
    assert!(size_of::<TpbStorage>() == 16);
    assert!(offset_of!(TpbStorage, addr) == 0);
    assert!(offset_of!(TpbStorage, num_elem) == 4);
    assert!(offset_of!(TpbStorage, num_partitions) == 8);
    assert!(offset_of!(TpbStorage, reserved0) == 9);
    assert!(offset_of!(TpbStorage, num_elem_per_block) == 12);
    assert!(size_of::<HbmStorage>() == 16);
    assert!(offset_of!(HbmStorage, addr) == 0);
    assert!(offset_of!(HbmStorage, num_elem) == 8);
    assert!(offset_of!(HbmStorage, reserved0) == 12);
    assert!(size_of::<StorageDesc>() == 16);
    assert!(size_of::<ArgTensor>() == ARG_TENSOR_SIZE);
    assert!(align_of::<ArgTensor>() == 8);
    assert!(offset_of!(ArgTensor, dtype) == 0);
    assert!(offset_of!(ArgTensor, arg_type) == 1);
    assert!(offset_of!(ArgTensor, framework_shape_type) == 2);
    assert!(offset_of!(ArgTensor, num_dim) == 3);
    assert!(offset_of!(ArgTensor, storage_kind) == 4);
    assert!(offset_of!(ArgTensor, reserved0) == 5);
    assert!(offset_of!(ArgTensor, shape) == 8);
    assert!(offset_of!(ArgTensor, storage) == STORAGE_OFFSET);
    assert!(offset_of!(ArgTensor, reserved1) == 40);
};

/// Why 48 bytes are not a usable descriptor. Each malformed field has its own variant;
/// [`ArgTensor::validate`] reports the first one in the order of the variants' docs
/// (also in `docs/abi/descriptors.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescriptorError {
    /// 1. `arg_type` is not an [`ArgType`].
    UnknownArgType(u8),
    /// 2. `dtype` is not a [`Dtype`].
    UnknownDtype(u8),
    /// 3a. `framework_shape_type` is neither inline nor out-of-line.
    UnknownShapeType(u8),
    /// 3b. The shape is out-of-line (host-only memory), which the device rejects.
    OutOfLineShape,
    /// 4a. `num_dim` is 0: tensors have rank 1 or more.
    RankZero,
    /// 4b. `num_dim` (or the encoder's shape length) is above [`MAX_RANK`].
    RankTooLarge(usize),
    /// 5. A shape entry at or past `num_dim` is not zero.
    UnusedDimNonZero {
        /// Index of the first such entry.
        dim: u8,
    },
    /// 6. `storage_kind` is neither TPB nor HBM.
    UnknownStorageKind(u8),
    /// 7. A reserved byte is not zero.
    ReservedNonZero {
        /// Descriptor byte offset of the first non-zero reserved byte.
        offset: u8,
    },
    /// 8. The storage's `num_elem` is not the product of the shape.
    ElementCountMismatch {
        /// Product of the dimensions.
        shape_elems: u64,
        /// `num_elem` of the storage.
        num_elem: u32,
    },
    /// 9. A TPB tensor spans several partitions, or `num_elem_per_block != num_elem`:
    ///    only single-partition SBUF tensors are contiguous in the core's window.
    UnsupportedTpbLayout {
        /// `num_partitions`.
        num_partitions: u8,
        /// `num_elem_per_block`.
        num_elem_per_block: u32,
    },
    /// 10a. A scalar argument does not hold exactly one element.
    ScalarNotSingleElement {
        /// Its element count.
        num_elem: u32,
    },
    /// 10b. A scalar's dtype is not the one its arg type needs ([`ArgType::scalar_dtype`]).
    ScalarDtypeMismatch {
        /// The scalar's arg type.
        arg_type: ArgType,
        /// The dtype the descriptor carries.
        dtype: Dtype,
    },
    /// Encoder only: a dimension above [`MAX_DIM`] (unrepresentable on the wire).
    DimTooLarge {
        /// Index of the dimension.
        dim: u8,
        /// Its size.
        value: u32,
    },
    /// Encoder only: the shape has more than `u32::MAX` elements.
    TooManyElements {
        /// Product of the dimensions (saturated).
        shape_elems: u64,
    },
}

impl fmt::Display for DescriptorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::UnknownArgType(v) => write!(f, "unknown arg type {v}"),
            Self::UnknownDtype(v) => write!(f, "unknown dtype {v}"),
            Self::UnknownShapeType(v) => write!(f, "unknown shape type {v}"),
            Self::OutOfLineShape => f.write_str("out-of-line shape (the device needs inline shapes)"),
            Self::RankZero => f.write_str("rank 0 (tensors have at least one dimension)"),
            Self::RankTooLarge(r) => write!(f, "rank {r} above {MAX_RANK}"),
            Self::UnusedDimNonZero { dim } => write!(f, "shape[{dim}] past the rank is not zero"),
            Self::UnknownStorageKind(v) => write!(f, "unknown storage kind {v}"),
            Self::ReservedNonZero { offset } => write!(f, "reserved byte {offset} is not zero"),
            Self::ElementCountMismatch { shape_elems, num_elem } => {
                write!(f, "num_elem {num_elem} differs from the shape's {shape_elems} elements")
            }
            Self::UnsupportedTpbLayout { num_partitions, num_elem_per_block } => write!(
                f,
                "SBUF layout of {num_partitions} partitions x {num_elem_per_block} elements is not contiguous"
            ),
            Self::ScalarNotSingleElement { num_elem } => {
                write!(f, "scalar with {num_elem} elements")
            }
            Self::ScalarDtypeMismatch { arg_type, dtype } => {
                write!(f, "{arg_type:?} scalar with dtype {dtype:?}")
            }
            Self::DimTooLarge { dim, value } => {
                write!(f, "dimension {dim} is {value}, above {MAX_DIM}")
            }
            Self::TooManyElements { shape_elems } => {
                write!(f, "{shape_elems} elements do not fit in u32")
            }
        }
    }
}

/// Where a validated tensor's elements are (framework addresses, not yet translated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// A single-partition tensor in the SBUF window.
    Tpb {
        /// 32-bit SBUF window address.
        addr: u32,
    },
    /// A tensor in HBM.
    Hbm {
        /// 64-bit SoC address.
        addr: u64,
    },
}

/// A validated descriptor: every field known-good, the storage decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorDesc {
    arg_type: ArgType,
    dtype: Dtype,
    rank: u8,
    shape: [u16; MAX_RANK],
    num_elem: u32,
    storage: Storage,
}

impl TensorDesc {
    /// What the argument is.
    pub const fn arg_type(&self) -> ArgType {
        self.arg_type
    }
    /// Element type.
    pub const fn dtype(&self) -> Dtype {
        self.dtype
    }
    /// Number of dimensions, `1..=8`.
    pub const fn rank(&self) -> usize {
        self.rank as usize
    }
    /// The dimensions, outermost first.
    pub fn shape(&self) -> &[u16] {
        &self.shape[..self.rank as usize]
    }
    /// Number of elements (the product of the shape).
    pub const fn num_elem(&self) -> u32 {
        self.num_elem
    }
    /// The storage form and its address.
    pub const fn storage(&self) -> Storage {
        self.storage
    }
    /// The framework address of the first element (SBUF addresses zero-extended).
    pub const fn address(&self) -> u64 {
        match self.storage {
            Storage::Tpb { addr } => addr as u64,
            Storage::Hbm { addr } => addr,
        }
    }
    /// Size of the elements in bytes (at most `u32::MAX * 8`, so no overflow).
    pub const fn byte_len(&self) -> u64 {
        self.num_elem as u64 * self.dtype.size() as u64
    }
}

/// Product of `dims`, saturated at `u64::MAX` (what [`DescriptorError`] reports).
fn element_count(dims: impl Iterator<Item = u64>) -> u64 {
    dims.fold(1u64, |acc, d| acc.saturating_mul(d))
}

/// `product * dim`, or `None` above `u32::MAX`: in 16-bit halves, as the core has no
/// 32x32->64 multiply and a `u64` product is a software `__muldi3` call per dimension.
#[inline(always)]
fn mul_dim(product: u32, dim: u16) -> Option<u32> {
    let dim = u32::from(dim);
    // Both halves are below 2^16, so neither product overflows.
    let high = (product >> 16) * dim;
    let low = (product & 0xFFFF) * dim;
    if high > 0xFFFF { None } else { (high << 16).checked_add(low) }
}

/// The product of `dims` if it fits in `u32` (a zero dimension makes it 0 whatever came
/// before it). A plain loop: at `opt-level = "s"` iterator adapters stay calls.
#[inline(always)]
fn shape_product(dims: &[u16]) -> Option<u32> {
    let mut product = Some(1);
    let mut i = 0;
    while i < dims.len() {
        product = match (product, dims[i]) {
            (_, 0) => Some(0),
            (Some(p), dim) => mul_dim(p, dim),
            (None, _) => None,
        };
        i += 1;
    }
    product
}

/// For each rank `1..=8`, the bits of the four little-endian shape words that belong to
/// dimensions at and past the rank (which must be zero). Row 0 is unused.
const UNUSED_DIM_BITS: [[u32; 4]; MAX_RANK + 1] = {
    let mut masks = [[0u32; 4]; MAX_RANK + 1];
    let mut rank = 0;
    while rank <= MAX_RANK {
        let mut dim = rank;
        while dim < MAX_RANK {
            masks[rank][dim / 2] |= 0xFFFF << (16 * (dim % 2));
            dim += 1;
        }
        rank += 1;
    }
    masks
};

/// [`ArgType::scalar_dtype`] of each raw arg type below 8, as a raw dtype (0, which no
/// dtype is, for tensors and unknown values): a load, where the match is a jump table.
/// Eight entries, so that any three bits index it without a bounds check.
const SCALAR_DTYPES: [u8; 8] = {
    let mut dtypes = [0; 8];
    let mut raw = 0;
    while raw < dtypes.len() {
        if let Some(arg_type) = ArgType::from_raw(raw as u8)
            && let Some(dtype) = arg_type.scalar_dtype()
        {
            dtypes[raw] = dtype as u8;
        }
        raw += 1;
    }
    dtypes
};

/// `SCALAR_DTYPES` for `runtime/arch/xtensa/setup.S`.
#[cfg(target_os = "none")]
#[unsafe(export_name = "__neuron_scalar_dtypes")]
static SCALAR_DTYPES_EXPORTED: [u8; 8] = SCALAR_DTYPES;

/// [`Dtype::size_log2`] of each raw dtype (0 for the raw 0, which no dtype is), for
/// `runtime/arch/xtensa/setup.S`.
#[cfg(target_os = "none")]
#[unsafe(export_name = "__neuron_size_log2")]
static SIZE_LOG2: [u8; 9] = {
    let mut log2 = [0; 9];
    let mut raw = 0;
    while raw < log2.len() {
        if let Some(dtype) = Dtype::from_raw(raw as u8) {
            log2[raw] = dtype.size_log2() as u8;
        }
        raw += 1;
    }
    log2
};

/// [`ArgTensor::check_common`] of the descriptor whose little-endian word `i` is
/// `word(i)`: each of the 12 words read once, then one decision, the tests
/// `runtime/arch/xtensa/setup.S` runs as it copies a descriptor.
#[inline(always)]
fn check_common_words(mut word: impl FnMut(usize) -> u32) -> Option<Checked> {
    const fn index(offset: usize) -> usize {
        offset / 4
    }
    // Bytes 0..4 at once: dtype 1..=8, arg type 1..=4, an inline shape (0), rank 1..=8.
    // Less one from the three 1-based bytes, only their low bits may be set; a zero byte
    // borrows and sets its own high bits, so a wrong byte never passes.
    let header = word(0);
    // Storage kind HBM, and its three reserved bytes zero.
    let kind = word(index(offset_of!(ArgTensor, storage_kind)));
    let shape = index(offset_of!(ArgTensor, shape));
    let dims = word(shape);
    let rank = header >> 24;
    // Rank 1: the second dimension must be zero; rank 2: 16 x 16 bits, no overflow.
    let (unused, shape_elems) =
        if rank == 1 { (dims >> 16, dims & 0xFFFF) } else { (0, (dims & 0xFFFF) * (dims >> 16)) };
    let mut zero = unused | word(shape + 1) | word(shape + 2) | word(shape + 3);
    let address = u64::from(word(index(wire::HBM_ADDR))) | u64::from(word(index(wire::HBM_ADDR) + 1)) << 32;
    let num_elem = word(index(wire::HBM_NUM_ELEM));
    zero |= word(index(wire::HBM_RESERVED)) | word(index(wire::RESERVED1)) | word(index(wire::RESERVED1) + 1);
    let (raw_type, raw_dtype) = ((header >> 8) as u8, header as u8);
    let scalar_ok =
        raw_type == ArgType::Tensor as u8 || (num_elem == 1 && raw_dtype == SCALAR_DTYPES[usize::from(raw_type & 7)]);
    if header.wrapping_sub(0x0100_0101) & 0xF8FF_FCF8 != 0
        || rank > 2
        || kind != u32::from(storage_kind::HBM)
        || zero != 0
        || shape_elems != num_elem
        || !scalar_ok
    {
        return None;
    }
    Some(Checked { arg_type: ArgType::from_raw(raw_type)?, dtype: Dtype::from_raw(raw_dtype)?, num_elem, address })
}

/// `ReservedNonZero` for the first non-zero byte of the little-endian `word` (not zero)
/// found at descriptor offset `offset`.
#[cold]
#[inline(never)]
fn reserved_error(word: u32, offset: usize) -> DescriptorError {
    // The byte's index counted by masks, not `trailing_zeros() / 8`: this core has no
    // count instruction, and the long expansion was written out at every call site.
    let byte = usize::from(word & 0xFF == 0) + usize::from(word & 0xFFFF == 0) + usize::from(word & 0xFF_FFFF == 0);
    DescriptorError::ReservedNonZero { offset: (offset + byte) as u8 }
}

/// What [`ArgTensor::check`] decodes from a valid descriptor: all the pull stream needs,
/// flat, so that it stays in registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checked {
    pub(crate) arg_type: ArgType,
    pub(crate) dtype: Dtype,
    pub(crate) num_elem: u32,
    /// The framework address of the first element (SBUF addresses zero-extended).
    pub(crate) address: u64,
}

impl ArgTensor {
    /// An all-zero descriptor (invalid: dtype 0); a placeholder before the first setup.
    pub const ZEROED: ArgTensor = ArgTensor {
        dtype: 0,
        arg_type: 0,
        framework_shape_type: 0,
        num_dim: 0,
        storage_kind: 0,
        reserved0: [0; 3],
        shape: [0; MAX_RANK],
        storage: StorageDesc { hbm: HbmStorage { addr: 0, num_elem: 0, reserved0: 0 } },
        reserved1: [0; 8],
    };

    /// Reads a descriptor from its 48 wire bytes (any 48 bytes are a valid `ArgTensor`).
    pub fn from_bytes(bytes: &[u8; ARG_TENSOR_SIZE]) -> ArgTensor {
        // SAFETY: `bytes` is 48 readable bytes; `ArgTensor` is 48 bytes of plain integers
        // with no padding, so every bit pattern is valid; `read_unaligned` needs no
        // alignment.
        unsafe { bytes.as_ptr().cast::<ArgTensor>().read_unaligned() }
    }

    /// Copies the descriptor at `src` to `dst`, 12 word loads and stores when both are
    /// 4-aligned (a 48-byte `read_unaligned` or assignment is a `memcpy` call on the
    /// device, several times that).
    ///
    /// # Safety
    /// `src` is valid for reads and `dst` for writes of 48 bytes (any alignment); they
    /// do not overlap.
    #[inline]
    pub(crate) unsafe fn copy(src: *const ArgTensor, dst: *mut ArgTensor) {
        if (src.addr() | dst.addr()).is_multiple_of(4) {
            let (src, dst) = (src.cast::<u32>(), dst.cast::<u32>());
            // Unrolled by hand: a loop would be turned back into a `memcpy` call.
            macro_rules! copy_words {
                ($($i:literal)*) => {
                    // SAFETY: word `i < 12` of both 48-byte ranges, 4-aligned (checked);
                    // any bits are a valid `u32`, and the ranges do not overlap.
                    $(unsafe { dst.add($i).write(src.add($i).read()) };)*
                };
            }
            copy_words!(0 1 2 3 4 5 6 7 8 9 10 11);
        } else {
            // SAFETY: the caller's contract; the unaligned accessors take any alignment,
            // and any 48 bytes are a valid `ArgTensor`.
            unsafe { dst.write_unaligned(src.read_unaligned()) };
        }
    }

    /// Whether the descriptor at `src` has the same 48 bytes as `self`, compared word by
    /// word; `false` when `src` is not 4-aligned (the caller then copies it afresh,
    /// which is always correct, only slower).
    ///
    /// # Safety
    /// `src` is valid for reads of 48 bytes.
    #[inline(always)]
    pub(crate) unsafe fn is_copy_of(&self, src: *const ArgTensor) -> bool {
        if !src.addr().is_multiple_of(4) {
            return false;
        }
        let (src, copy) = (src.cast::<u32>(), core::ptr::from_ref(self).cast::<u32>());
        macro_rules! same_words {
            ($($i:literal)*) => {
                // SAFETY: word `i < 12` of both 48-byte ranges, 4-aligned (checked, and
                // `ArgTensor` is 8-aligned); any bits are a valid `u32`.
                true $(&& unsafe { src.add($i).read() == copy.add($i).read() })*
            };
        }
        same_words!(0 1 2 3 4 5 6 7 8 9 10 11)
    }

    /// The 48 wire bytes.
    pub fn to_bytes(&self) -> [u8; ARG_TENSOR_SIZE] {
        // SAFETY: `ArgTensor` has no padding, so all 48 bytes are initialised; `[u8; 48]`
        // has the same size and alignment 1.
        unsafe { core::ptr::from_ref(self).cast::<[u8; ARG_TENSOR_SIZE]>().read() }
    }

    /// Checks every field (in the order of [`DescriptorError`]'s variants) and decodes
    /// the descriptor. Never panics, whatever the bytes.
    pub fn validate(&self) -> Result<TensorDesc, DescriptorError> {
        let checked = self.check()?;
        Ok(TensorDesc {
            arg_type: checked.arg_type,
            dtype: checked.dtype,
            rank: self.num_dim,
            shape: self.shape,
            num_elem: checked.num_elem,
            storage: if self.storage_kind == storage_kind::TPB {
                Storage::Tpb { addr: checked.address as u32 }
            } else {
                Storage::Hbm { addr: checked.address }
            },
        })
    }

    /// The 4 bytes at `offset` (a multiple of 4), read as a little-endian word.
    #[inline(always)]
    fn word_at(&self, offset: usize) -> u32 {
        assert!(offset.is_multiple_of(4) && offset < ARG_TENSOR_SIZE);
        // SAFETY: the word lies inside the 48-byte descriptor (asserted; constant offsets
        // fold the assertion away), which is 8-aligned, so the word is aligned; every
        // byte is an initialised integer field (no padding).
        u32::from_le(unsafe { core::ptr::from_ref(self).cast::<u8>().add(offset).cast::<u32>().read() })
    }

    /// The bits of the dimensions at and past `rank` (at most 8), which must all be
    /// zero: four masked words, not a loop over up to seven dimensions.
    #[inline(always)]
    fn bits_past_rank(&self, rank: usize) -> u32 {
        let unused = &UNUSED_DIM_BITS[rank.min(MAX_RANK)];
        let shape = offset_of!(ArgTensor, shape);
        (self.word_at(shape) & unused[0])
            | (self.word_at(shape + 4) & unused[1])
            | (self.word_at(shape + 8) & unused[2])
            | (self.word_at(shape + 12) & unused[3])
    }

    /// The 64-bit address of the HBM storage form.
    #[inline(always)]
    fn hbm_address(&self) -> u64 {
        u64::from(self.word_at(wire::HBM_ADDR)) | u64::from(self.word_at(wire::HBM_ADDR + 4)) << 32
    }

    /// [`validate`](Self::validate) without building a [`TensorDesc`]: the check of a
    /// descriptor a C kernel hands the runtime (`customop_return_tensor`,
    /// `customop_tensor_data`). A valid descriptor takes the fast path, a few word
    /// compares inlined into the caller ([`check_fast`](Self::check_fast)); anything
    /// else goes to the ordered checks, which name the first bad field. (Where only an
    /// error is expected, the pulls' slow paths, [`check_in_order`](Self::check_in_order)
    /// is called directly: it accepts every valid descriptor too.)
    #[inline(always)]
    pub(crate) fn check(&self) -> Result<Checked, DescriptorError> {
        match self.check_fast() {
            Some(checked) => Ok(checked),
            None => self.check_in_order(),
        }
    }

    /// What [`check_in_order`](Self::check_in_order) returns for a valid descriptor:
    /// [`check_common`](Self::check_common), then [`check_any`](Self::check_any) for
    /// what it declines; `None` for every descriptor they reject. (Were this ever to
    /// refuse a valid one, `check` would still accept it, the slow way: the host tests
    /// hold the two to the same verdicts.)
    #[inline(always)]
    pub(super) fn check_fast(&self) -> Option<Checked> {
        match self.check_common() {
            Some(checked) => Some(checked),
            None => self.check_any(),
        }
    }

    /// [`check_fast`](Self::check_fast) for the common case, an HBM tensor or scalar of
    /// rank 1 or 2, in a dozen straight-line word tests; `None` for anything else,
    /// valid or not, which [`check_any`](Self::check_any) decides. On the device, setup
    /// runs the same tests on each word as it copies it (`runtime/arch/xtensa/setup.S`).
    #[inline(always)]
    pub(super) fn check_common(&self) -> Option<Checked> {
        check_common_words(|word| self.word_at(4 * word))
    }

    /// [`check_fast`](Self::check_fast) for any descriptor: every storage form and rank,
    /// from the same conditions as the ordered checks, tested in any order, a word at a
    /// time; `None` for every descriptor it rejects.
    #[inline(never)]
    pub(super) fn check_any(&self) -> Option<Checked> {
        // Bytes 0..4 at once: dtype 1..=8, arg type 1..=4, an inline shape (0), rank
        // 1..=8. Less one from the three 1-based bytes, only their low bits may be set; a
        // zero byte borrows and sets its own high bits, so a wrong byte never passes.
        let header = self.word_at(0);
        if header.wrapping_sub(0x0100_0101) & 0xF8FF_FCF8 != 0 {
            return None;
        }
        let arg_type = ArgType::from_raw(self.arg_type)?;
        let dtype = Dtype::from_raw(self.dtype)?;
        let rank = self.num_dim as usize;
        let dims = self.shape.get(..rank)?;
        let unused_bits = self.bits_past_rank(rank);
        // The storage kind and three reserved bytes: kind 0 or 1, the rest zero.
        let kind_word = self.word_at(offset_of!(ArgTensor, storage_kind));
        let reserved1 = self.word_at(wire::RESERVED1) | self.word_at(wire::RESERVED1 + 4);
        if unused_bits | reserved1 != 0 || kind_word > u32::from(storage_kind::HBM) {
            return None;
        }
        let (num_elem, address) = if kind_word == u32::from(storage_kind::TPB) {
            let num_elem = self.word_at(wire::TPB_NUM_ELEM);
            // `num_partitions` 1 and its three reserved bytes zero: the word is 1.
            if self.word_at(wire::TPB_NUM_PARTITIONS) != 1 || self.word_at(wire::TPB_NUM_ELEM_PER_BLOCK) != num_elem {
                return None;
            }
            (num_elem, u64::from(self.word_at(wire::TPB_ADDR)))
        } else {
            if self.word_at(wire::HBM_RESERVED) != 0 {
                return None;
            }
            (self.word_at(wire::HBM_NUM_ELEM), self.hbm_address())
        };
        // A product past `u32::MAX` (possible only before a zero dimension) is left to
        // the ordered checks. Below 2^16, a product times a dimension cannot overflow.
        let mut shape_elems: u32 = 1;
        let mut dim = 0;
        while dim < dims.len() {
            shape_elems = if shape_elems >> 16 == 0 {
                shape_elems * u32::from(dims[dim])
            } else {
                mul_dim(shape_elems, dims[dim])?
            };
            dim += 1;
        }
        if shape_elems != num_elem {
            return None;
        }
        if arg_type != ArgType::Tensor && (num_elem != 1 || self.dtype != SCALAR_DTYPES[arg_type as usize]) {
            return None;
        }
        Some(Checked { arg_type, dtype, num_elem, address })
    }

    /// Every check, in the order of [`DescriptorError`]'s variants, each a word compare
    /// on the way through; the error details are worked out only on failure.
    #[cold]
    #[inline(never)]
    pub(super) fn check_in_order(&self) -> Result<Checked, DescriptorError> {
        use DescriptorError as E;
        let arg_type = ArgType::from_raw(self.arg_type).ok_or(E::UnknownArgType(self.arg_type))?;
        let dtype = Dtype::from_raw(self.dtype).ok_or(E::UnknownDtype(self.dtype))?;
        match self.framework_shape_type {
            shape_type::INLINE => {}
            shape_type::OUT_OF_LINE => return Err(E::OutOfLineShape),
            other => return Err(E::UnknownShapeType(other)),
        }
        let rank = self.num_dim as usize;
        if rank == 0 {
            return Err(E::RankZero);
        }
        if rank > MAX_RANK {
            return Err(E::RankTooLarge(rank));
        }
        if self.bits_past_rank(rank) != 0 {
            return Err(self.unused_dim_error(rank));
        }
        // The storage kind, then three reserved bytes.
        let kind_word = self.word_at(offset_of!(ArgTensor, storage_kind));
        let is_tpb = match self.storage_kind {
            storage_kind::TPB => true,
            storage_kind::HBM => false,
            other => return Err(E::UnknownStorageKind(other)),
        };
        if kind_word >> 8 != 0 {
            return Err(reserved_error(kind_word >> 8, offset_of!(ArgTensor, reserved0)));
        }
        // For TPB, `num_partitions` shares its word with three reserved bytes.
        let (num_elem, address, reserved, reserved_at) = if is_tpb {
            let partitions_word = self.word_at(wire::TPB_NUM_PARTITIONS);
            let addr = u64::from(self.word_at(wire::TPB_ADDR));
            (self.word_at(wire::TPB_NUM_ELEM), addr, partitions_word >> 8, wire::TPB_RESERVED)
        } else {
            (self.word_at(wire::HBM_NUM_ELEM), self.hbm_address(), self.word_at(wire::HBM_RESERVED), wire::HBM_RESERVED)
        };
        if reserved != 0 {
            return Err(reserved_error(reserved, reserved_at));
        }
        let (reserved1_low, reserved1_high) = (self.word_at(wire::RESERVED1), self.word_at(wire::RESERVED1 + 4));
        if reserved1_low != 0 {
            return Err(reserved_error(reserved1_low, wire::RESERVED1));
        }
        if reserved1_high != 0 {
            return Err(reserved_error(reserved1_high, wire::RESERVED1 + 4));
        }

        if shape_product(&self.shape[..rank]) != Some(num_elem) {
            return Err(self.element_count_error(rank, num_elem));
        }
        if is_tpb {
            let num_partitions = self.word_at(wire::TPB_NUM_PARTITIONS) as u8;
            let num_elem_per_block = self.word_at(wire::TPB_NUM_ELEM_PER_BLOCK);
            if num_partitions != 1 || num_elem_per_block != num_elem {
                return Err(E::UnsupportedTpbLayout { num_partitions, num_elem_per_block });
            }
        }
        if arg_type != ArgType::Tensor {
            if num_elem != 1 {
                return Err(E::ScalarNotSingleElement { num_elem });
            }
            // A table, not `scalar_dtype`'s match: see `SCALAR_DTYPES`.
            if self.dtype != SCALAR_DTYPES[arg_type as usize] {
                return Err(E::ScalarDtypeMismatch { arg_type, dtype });
            }
        }
        Ok(Checked { arg_type, dtype, num_elem, address })
    }

    #[cold]
    fn unused_dim_error(&self, rank: usize) -> DescriptorError {
        let first = self.shape[rank..].iter().position(|&d| d != 0).unwrap_or(0);
        DescriptorError::UnusedDimNonZero { dim: (rank + first) as u8 }
    }

    #[cold]
    fn element_count_error(&self, rank: usize, num_elem: u32) -> DescriptorError {
        let shape_elems = element_count(self.shape[..rank].iter().map(|&d| u64::from(d)));
        DescriptorError::ElementCountMismatch { shape_elems, num_elem }
    }

    /// The header and shape of a tensor descriptor; storage left zeroed.
    fn tensor_header(
        arg_type: ArgType,
        dtype: Dtype,
        shape: &[u32],
        kind: u8,
    ) -> Result<(ArgTensor, u32), DescriptorError> {
        if shape.is_empty() {
            return Err(DescriptorError::RankZero);
        }
        if shape.len() > MAX_RANK {
            return Err(DescriptorError::RankTooLarge(shape.len()));
        }
        let mut desc = ArgTensor::ZEROED;
        for (i, (&dim, slot)) in shape.iter().zip(desc.shape.iter_mut()).enumerate() {
            *slot = u16::try_from(dim).map_err(|_| DescriptorError::DimTooLarge { dim: i as u8, value: dim })?;
        }
        let shape_elems = element_count(shape.iter().map(|&d| u64::from(d)));
        let num_elem = u32::try_from(shape_elems).map_err(|_| DescriptorError::TooManyElements { shape_elems })?;
        desc.dtype = dtype as u8;
        desc.arg_type = arg_type as u8;
        desc.framework_shape_type = shape_type::INLINE;
        desc.num_dim = shape.len() as u8;
        desc.storage_kind = kind;
        Ok((desc, num_elem))
    }

    /// Encodes a tensor in HBM at framework address `addr`. Fails on rank 0, rank above
    /// 8, a dimension above 65535, or more than `u32::MAX` elements.
    pub fn hbm_tensor(dtype: Dtype, shape: &[u32], addr: u64) -> Result<ArgTensor, DescriptorError> {
        let (mut desc, num_elem) = Self::tensor_header(ArgType::Tensor, dtype, shape, storage_kind::HBM)?;
        desc.storage = StorageDesc { hbm: HbmStorage { addr, num_elem, reserved0: 0 } };
        Ok(desc)
    }

    /// Encodes a single-partition tensor in the SBUF window at `addr`; fails as
    /// [`hbm_tensor`](Self::hbm_tensor) does.
    pub fn tpb_tensor(dtype: Dtype, shape: &[u32], addr: u32) -> Result<ArgTensor, DescriptorError> {
        let (mut desc, num_elem) = Self::tensor_header(ArgType::Tensor, dtype, shape, storage_kind::TPB)?;
        desc.storage = StorageDesc {
            tpb: TpbStorage { addr, num_elem, num_partitions: 1, reserved0: [0; 3], num_elem_per_block: num_elem },
        };
        Ok(desc)
    }

    /// Encodes a scalar argument: a one-element HBM tensor of the scalar's dtype at
    /// `addr`.
    pub fn hbm_scalar(kind: ScalarKind, addr: u64) -> ArgTensor {
        let arg_type = kind.arg_type();
        let dtype = kind.dtype();
        let mut desc = ArgTensor::ZEROED;
        desc.dtype = dtype as u8;
        desc.arg_type = arg_type as u8;
        desc.framework_shape_type = shape_type::INLINE;
        desc.num_dim = 1;
        desc.shape[0] = 1;
        desc.storage_kind = storage_kind::HBM;
        desc.storage = StorageDesc { hbm: HbmStorage { addr, num_elem: 1, reserved0: 0 } };
        desc
    }
}

impl PartialEq for ArgTensor {
    fn eq(&self, other: &Self) -> bool {
        self.to_bytes() == other.to_bytes()
    }
}

impl Eq for ArgTensor {}

/// The three scalar argument types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    /// `int`, [`Dtype::Int32`].
    Int,
    /// `long long`, [`Dtype::Int64`].
    LongLong,
    /// `float`, [`Dtype::Float32`].
    Float,
}

impl ScalarKind {
    /// The arg type that carries this scalar.
    pub const fn arg_type(self) -> ArgType {
        match self {
            ScalarKind::Int => ArgType::Int,
            ScalarKind::LongLong => ArgType::LongLong,
            ScalarKind::Float => ArgType::Float,
        }
    }

    /// The dtype of its one element.
    pub const fn dtype(self) -> Dtype {
        match self {
            ScalarKind::Int => Dtype::Int32,
            ScalarKind::LongLong => Dtype::Int64,
            ScalarKind::Float => Dtype::Float32,
        }
    }
}

/// The argument container of one invocation (504 bytes): a copy of the descriptors the
/// loader passed, and their arg types.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct ArgExtractor {
    /// Number of arguments present, `0..=10`.
    pub num_args: u32,
    /// Always [`MAX_ARGS`] (the array bound).
    pub max_args: u32,
    /// The descriptors; entries at and past `num_args` are zeroed.
    pub args: [ArgTensor; MAX_ARGS],
    /// Raw [`ArgType`] of each descriptor (a copy of its `arg_type` byte).
    pub arg_types: [u8; MAX_ARGS],
    /// Explicit padding to the 8-byte alignment.
    pub reserved: [u8; 6],
}

impl ArgExtractor {
    /// No arguments.
    pub const EMPTY: ArgExtractor = ArgExtractor {
        num_args: 0,
        max_args: MAX_ARGS as u32,
        args: [ArgTensor::ZEROED; MAX_ARGS],
        arg_types: [0; MAX_ARGS],
        reserved: [0; 6],
    };
}

/// The per-invocation walker over an [`ArgExtractor`] (512 bytes).
#[derive(Debug)]
#[repr(C)]
pub struct ArgParser {
    /// The arguments.
    pub extractor: ArgExtractor,
    /// Index of the next argument to pull. A `Cell` so that kernels pull through a
    /// shared `&Args`; same layout as `u32`.
    pub curr_arg: core::cell::Cell<u32>,
    /// Explicit padding to the 8-byte alignment.
    pub reserved: u32,
}

impl ArgParser {
    /// No arguments, index 0.
    pub const fn new() -> ArgParser {
        ArgParser { extractor: ArgExtractor::EMPTY, curr_arg: core::cell::Cell::new(0), reserved: 0 }
    }
}

impl Default for ArgParser {
    fn default() -> Self {
        Self::new()
    }
}

const _: () = {
    assert!(size_of::<ArgExtractor>() == 504);
    assert!(offset_of!(ArgExtractor, num_args) == 0);
    assert!(offset_of!(ArgExtractor, max_args) == 4);
    assert!(offset_of!(ArgExtractor, args) == 8);
    assert!(offset_of!(ArgExtractor, arg_types) == 488);
    assert!(offset_of!(ArgExtractor, reserved) == 498);
    assert!(size_of::<ArgParser>() == 512);
    assert!(offset_of!(ArgParser, extractor) == 0);
    assert!(offset_of!(ArgParser, curr_arg) == 504);
    assert!(offset_of!(ArgParser, reserved) == 508);
};
