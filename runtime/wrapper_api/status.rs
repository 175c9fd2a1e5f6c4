//! Errors of the pull stream and the tensor API, and the 32-bit status codes the C ABI
//! and the loader see. `docs/abi/descriptors.md` has the full table.

use core::fmt;

use super::{ArgType, DescriptorError, Dtype, ScalarKind};
use crate::translate::TranslateError;

/// A status code: 0 is success; every error has its own value. What the C ABI returns
/// and what `customop_last_status` / `customop_invocation_status` report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Status(pub u32);

macro_rules! statuses {
    ($($(#[$doc:meta])* $name:ident = $value:expr;)*) => {
        impl Status {
            $($(#[$doc])* pub const $name: Status = Status($value);)*

            /// Every named status (kernel-defined codes excepted), for tables and tests.
            pub const ALL: &'static [Status] = &[$(Status::$name),*];

            /// The status's name (`"NO_MORE_ARGS"`); `None` for a kernel-defined code.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $(v if v == $value => Some(stringify!($name)),)*
                    _ => None,
                }
            }
        }
    };
}

statuses! {
    /// Success.
    OK = 0;
    /// `customop_setup` without a pending `customop_set_invocation`.
    NO_INVOCATION = 0x01;
    /// A pull, `get_dst_tensor`, return or cleanup outside `customop_setup` ..
    /// `customop_cleanup`.
    NOT_SET_UP = 0x02;
    /// `customop_setup` twice in one invocation.
    ALREADY_SET_UP = 0x03;
    /// More than 10 arguments.
    TOO_MANY_ARGS = 0x04;
    /// A null descriptor pointer where one is needed.
    NULL_POINTER = 0x05;
    /// Pulling past the last argument.
    NO_MORE_ARGS = 0x06;
    /// Pulling a tensor where the argument is a scalar.
    EXPECTED_TENSOR = 0x07;
    /// Pulling a scalar where the argument is a tensor.
    EXPECTED_SCALAR = 0x08;
    /// Pulling one scalar type where the argument is another.
    SCALAR_KIND_MISMATCH = 0x09;
    /// `get_dst_tensor` called twice.
    DST_ALREADY_TAKEN = 0x0a;
    /// `get_dst_tensor` or a return when the loader gave no output descriptor.
    NO_OUTPUT = 0x0b;
    /// An address outside every translate window.
    TRANSLATE_MISS = 0x0c;
    /// A tensor starts in a translate window but does not fit in it.
    RANGE_OUTSIDE_WINDOW = 0x0d;
    /// A tensor larger than this core's address space.
    TOO_LARGE = 0x0e;
    /// The output overlaps an input tensor (Rust kernels only).
    OUTPUT_ALIASES_INPUT = 0x0f;
    /// [`DescriptorError::UnknownArgType`].
    UNKNOWN_ARG_TYPE = 0x20;
    /// [`DescriptorError::UnknownDtype`].
    UNKNOWN_DTYPE = 0x21;
    /// [`DescriptorError::UnknownShapeType`].
    UNKNOWN_SHAPE_TYPE = 0x22;
    /// [`DescriptorError::OutOfLineShape`].
    OUT_OF_LINE_SHAPE = 0x23;
    /// [`DescriptorError::RankZero`].
    RANK_ZERO = 0x24;
    /// [`DescriptorError::RankTooLarge`].
    RANK_TOO_LARGE = 0x25;
    /// [`DescriptorError::UnusedDimNonZero`].
    UNUSED_DIM_NON_ZERO = 0x26;
    /// [`DescriptorError::UnknownStorageKind`].
    UNKNOWN_STORAGE_KIND = 0x27;
    /// [`DescriptorError::ReservedNonZero`].
    RESERVED_NON_ZERO = 0x28;
    /// [`DescriptorError::ElementCountMismatch`].
    ELEMENT_COUNT_MISMATCH = 0x29;
    /// [`DescriptorError::UnsupportedTpbLayout`].
    UNSUPPORTED_TPB_LAYOUT = 0x2a;
    /// [`DescriptorError::ScalarNotSingleElement`].
    SCALAR_NOT_SINGLE_ELEMENT = 0x2b;
    /// [`DescriptorError::ScalarDtypeMismatch`].
    SCALAR_DTYPE_MISMATCH = 0x2c;
    /// [`DescriptorError::DimTooLarge`].
    DIM_TOO_LARGE = 0x2d;
    /// [`DescriptorError::TooManyElements`].
    TOO_MANY_ELEMENTS = 0x2e;
    /// [`TensorError::DtypeMismatch`].
    DTYPE_MISMATCH = 0x40;
    /// [`TensorError::OutOfBounds`].
    OUT_OF_BOUNDS = 0x41;
    /// [`TensorError::ReadOnly`].
    READ_ONLY = 0x42;
    /// [`TensorError::Misaligned`].
    MISALIGNED = 0x43;
    /// [`TensorError::TcmExhausted`].
    TCM_EXHAUSTED = 0x44;
    /// [`TensorError::StreamFull`].
    STREAM_FULL = 0x45;
}

impl Status {
    /// First of the codes a kernel reports through [`KernelError::Op`]:
    /// `KERNEL_BASE + code`, up to `0x1_ffff`.
    pub const KERNEL_BASE: u32 = 0x1_0000;

    /// Whether this is success.
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }
}

impl From<DescriptorError> for Status {
    fn from(e: DescriptorError) -> Status {
        match e {
            DescriptorError::UnknownArgType(_) => Status::UNKNOWN_ARG_TYPE,
            DescriptorError::UnknownDtype(_) => Status::UNKNOWN_DTYPE,
            DescriptorError::UnknownShapeType(_) => Status::UNKNOWN_SHAPE_TYPE,
            DescriptorError::OutOfLineShape => Status::OUT_OF_LINE_SHAPE,
            DescriptorError::RankZero => Status::RANK_ZERO,
            DescriptorError::RankTooLarge(_) => Status::RANK_TOO_LARGE,
            DescriptorError::UnusedDimNonZero { .. } => Status::UNUSED_DIM_NON_ZERO,
            DescriptorError::UnknownStorageKind(_) => Status::UNKNOWN_STORAGE_KIND,
            DescriptorError::ReservedNonZero { .. } => Status::RESERVED_NON_ZERO,
            DescriptorError::ElementCountMismatch { .. } => Status::ELEMENT_COUNT_MISMATCH,
            DescriptorError::UnsupportedTpbLayout { .. } => Status::UNSUPPORTED_TPB_LAYOUT,
            DescriptorError::ScalarNotSingleElement { .. } => Status::SCALAR_NOT_SINGLE_ELEMENT,
            DescriptorError::ScalarDtypeMismatch { .. } => Status::SCALAR_DTYPE_MISMATCH,
            DescriptorError::DimTooLarge { .. } => Status::DIM_TOO_LARGE,
            DescriptorError::TooManyElements { .. } => Status::TOO_MANY_ELEMENTS,
        }
    }
}

/// Why a pull-stream call failed. A failed call changes no state: a failed pull
/// consumes no argument, a failed `get_dst_tensor` does not take the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgError {
    /// `setup` without a pending invocation from the loader.
    NoInvocation,
    /// A pull, `output`, return or cleanup outside `setup` .. `cleanup`.
    NotSetUp,
    /// `setup` twice in one invocation.
    AlreadySetUp,
    /// The loader passed more than 10 arguments.
    TooManyArgs(u32),
    /// A null descriptor pointer where one is needed.
    NullPointer,
    /// Pulling past the last argument.
    NoMoreArgs,
    /// Pulling a tensor where the argument is this scalar.
    ExpectedTensor(ArgType),
    /// Pulling this scalar where the argument is a tensor.
    ExpectedScalar(ScalarKind),
    /// Pulling one scalar type where the argument is another.
    ScalarKindMismatch {
        /// What was pulled.
        wanted: ScalarKind,
        /// What the argument is.
        found: ArgType,
    },
    /// The output was already taken in this invocation.
    DstAlreadyTaken,
    /// The loader gave no output descriptor.
    NoOutput,
    /// The descriptor is malformed.
    Descriptor(DescriptorError),
    /// The tensor's address is outside every translate window.
    Translate(TranslateError),
    /// The tensor starts in a translate window but runs past it (or its address range
    /// wraps, or translates to null).
    RangeOutsideWindow,
    /// The tensor's bytes exceed this core's address space (`isize::MAX`).
    TooLarge,
    /// The output overlaps an input: a Rust kernel cannot hold both as slices.
    OutputAliasesInput,
}

impl From<DescriptorError> for ArgError {
    fn from(e: DescriptorError) -> ArgError {
        ArgError::Descriptor(e)
    }
}

impl From<ArgError> for Status {
    fn from(e: ArgError) -> Status {
        match e {
            ArgError::NoInvocation => Status::NO_INVOCATION,
            ArgError::NotSetUp => Status::NOT_SET_UP,
            ArgError::AlreadySetUp => Status::ALREADY_SET_UP,
            ArgError::TooManyArgs(_) => Status::TOO_MANY_ARGS,
            ArgError::NullPointer => Status::NULL_POINTER,
            ArgError::NoMoreArgs => Status::NO_MORE_ARGS,
            ArgError::ExpectedTensor(_) => Status::EXPECTED_TENSOR,
            ArgError::ExpectedScalar(_) => Status::EXPECTED_SCALAR,
            ArgError::ScalarKindMismatch { .. } => Status::SCALAR_KIND_MISMATCH,
            ArgError::DstAlreadyTaken => Status::DST_ALREADY_TAKEN,
            ArgError::NoOutput => Status::NO_OUTPUT,
            ArgError::Descriptor(d) => d.into(),
            ArgError::Translate(_) => Status::TRANSLATE_MISS,
            ArgError::RangeOutsideWindow => Status::RANGE_OUTSIDE_WINDOW,
            ArgError::TooLarge => Status::TOO_LARGE,
            ArgError::OutputAliasesInput => Status::OUTPUT_ALIASES_INPUT,
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ArgError::NoInvocation => f.write_str("setup without an invocation from the loader"),
            ArgError::NotSetUp => f.write_str("argument access outside setup..cleanup"),
            ArgError::AlreadySetUp => f.write_str("setup called twice"),
            ArgError::TooManyArgs(n) => write!(f, "{n} arguments, at most 10"),
            ArgError::NullPointer => f.write_str("null descriptor pointer"),
            ArgError::NoMoreArgs => f.write_str("pulled past the last argument"),
            ArgError::ExpectedTensor(found) => write!(f, "pulled a tensor, the argument is {found:?}"),
            ArgError::ExpectedScalar(wanted) => write!(f, "pulled {wanted:?}, the argument is a tensor"),
            ArgError::ScalarKindMismatch { wanted, found } => {
                write!(f, "pulled {wanted:?}, the argument is {found:?}")
            }
            ArgError::DstAlreadyTaken => f.write_str("get_dst_tensor called twice"),
            ArgError::NoOutput => f.write_str("no output descriptor"),
            ArgError::Descriptor(d) => write!(f, "bad descriptor: {d}"),
            ArgError::Translate(e) => write!(f, "address not translated: {e:?}"),
            ArgError::RangeOutsideWindow => f.write_str("tensor does not fit in its translate window"),
            ArgError::TooLarge => f.write_str("tensor larger than the address space"),
            ArgError::OutputAliasesInput => f.write_str("output overlaps an input"),
        }
    }
}

/// Why a tensor access failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorError {
    /// The tensor's dtype is not the requested element type's.
    DtypeMismatch {
        /// The tensor's dtype.
        tensor: Dtype,
        /// The dtype of the requested element type.
        requested: Dtype,
    },
    /// `offset + count` elements run past the tensor.
    OutOfBounds {
        /// First element.
        offset: usize,
        /// Number of elements.
        count: usize,
        /// The tensor's element count.
        numel: usize,
    },
    /// Writing to an input tensor: only the output is writable.
    ReadOnly,
    /// The tensor's device address is not aligned for its element type.
    Misaligned,
    /// The per-op TCM pool has no room for the buffer.
    TcmExhausted,
    /// Writing past the end of a write stream.
    StreamFull,
}

impl From<TensorError> for Status {
    fn from(e: TensorError) -> Status {
        match e {
            TensorError::DtypeMismatch { .. } => Status::DTYPE_MISMATCH,
            TensorError::OutOfBounds { .. } => Status::OUT_OF_BOUNDS,
            TensorError::ReadOnly => Status::READ_ONLY,
            TensorError::Misaligned => Status::MISALIGNED,
            TensorError::TcmExhausted => Status::TCM_EXHAUSTED,
            TensorError::StreamFull => Status::STREAM_FULL,
        }
    }
}

impl fmt::Display for TensorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TensorError::DtypeMismatch { tensor, requested } => {
                write!(f, "tensor is {tensor:?}, accessed as {requested:?}")
            }
            TensorError::OutOfBounds { offset, count, numel } => {
                write!(f, "elements {offset}..+{count} outside a tensor of {numel}")
            }
            TensorError::ReadOnly => f.write_str("input tensors are read-only"),
            TensorError::Misaligned => f.write_str("tensor data misaligned for its dtype"),
            TensorError::TcmExhausted => f.write_str("TCM pool exhausted"),
            TensorError::StreamFull => f.write_str("write past the end of the stream"),
        }
    }
}

/// What a Rust kernel returns on failure; `?` converts the runtime's errors into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelError {
    /// An argument could not be pulled.
    Arg(ArgError),
    /// A tensor access failed.
    Tensor(TensorError),
    /// The kernel's own failure code, reported as `Status::KERNEL_BASE + code`.
    Op(u16),
}

impl From<ArgError> for KernelError {
    fn from(e: ArgError) -> Self {
        KernelError::Arg(e)
    }
}

impl From<TensorError> for KernelError {
    fn from(e: TensorError) -> Self {
        KernelError::Tensor(e)
    }
}

impl From<KernelError> for Status {
    fn from(e: KernelError) -> Status {
        match e {
            KernelError::Arg(e) => e.into(),
            KernelError::Tensor(e) => e.into(),
            KernelError::Op(code) => Status(Status::KERNEL_BASE + u32::from(code)),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::Arg(e) => e.fmt(f),
            KernelError::Tensor(e) => e.fmt(f),
            KernelError::Op(code) => write!(f, "kernel failed with code {code}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_are_distinct() {
        for (i, a) in Status::ALL.iter().enumerate() {
            for b in &Status::ALL[i + 1..] {
                assert_ne!(a, b);
            }
            assert!(a.0 < Status::KERNEL_BASE);
        }
    }

    #[test]
    fn every_named_status_has_its_name() {
        assert_eq!(Status::OK.name(), Some("OK"));
        assert_eq!(Status::NO_MORE_ARGS.name(), Some("NO_MORE_ARGS"));
        assert_eq!(Status(Status::KERNEL_BASE + 1).name(), None);
        assert!(Status::ALL.iter().all(|s| s.name().is_some()));
    }

    #[test]
    fn kernel_codes_sit_above_the_runtime_codes() {
        assert_eq!(Status::from(KernelError::Op(0)), Status(0x1_0000));
        assert_eq!(Status::from(KernelError::Op(u16::MAX)), Status(0x1_ffff));
    }
}
