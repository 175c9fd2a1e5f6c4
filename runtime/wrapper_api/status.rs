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

            /// The constant's name (`"TCM_EXHAUSTED"`), or `None` for a kernel-defined
            /// code or a value this runtime does not define.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)*
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
    /// C++: `operator new`, or a tensor factory (`torch::empty`, `zeros`, ...), found
    /// the HBM heap exhausted.
    OUT_OF_MEMORY = 0x60;
    /// C++: a failed `assert`; its expression and `file:line` are printed.
    ASSERT_FAILED = 0x61;
    /// C++: an `accessor<T, N>` whose `N` is not the tensor's rank.
    RANK_MISMATCH = 0x62;
    /// C++: operands of an element-wise operation, or the tensor a kernel returned and
    /// the output, differ in shape.
    SHAPE_MISMATCH = 0x63;
    /// C++: a dtype an operation does not take (a bitwise operation on floats).
    UNSUPPORTED_DTYPE = 0x64;
    /// C++: a possibly incoherent access under the `COHERENT` policy (a stream opened
    /// while a write stream on the same tensor is open).
    INCOHERENT_ACCESS = 0x65;
    /// C++: a pure virtual function was called (`__cxa_pure_virtual`).
    PURE_VIRTUAL_CALL = 0x66;
}

impl Status {
    /// First of the codes a kernel reports through [`KernelError::Op`]:
    /// `KERNEL_BASE + code`, up to `0x1_ffff`.
    pub const KERNEL_BASE: u32 = 0x1_0000;

    /// Whether this is success.
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// The descriptor field a descriptor status is about (`docs/abi/descriptors.md`
    /// names the fields): `dtype` for `UNKNOWN_DTYPE`, `num_dim` for `RANK_TOO_LARGE`,
    /// ...; `None` for any other status.
    pub const fn descriptor_field(self) -> Option<&'static str> {
        Some(match self {
            Status::UNKNOWN_ARG_TYPE => "arg_type",
            Status::UNKNOWN_DTYPE | Status::SCALAR_DTYPE_MISMATCH => "dtype",
            Status::UNKNOWN_SHAPE_TYPE | Status::OUT_OF_LINE_SHAPE => "framework_shape_type",
            Status::RANK_ZERO | Status::RANK_TOO_LARGE => "num_dim",
            Status::UNUSED_DIM_NON_ZERO => "shape past num_dim",
            Status::UNKNOWN_STORAGE_KIND => "storage_kind",
            Status::RESERVED_NON_ZERO => "reserved bytes",
            Status::ELEMENT_COUNT_MISMATCH | Status::SCALAR_NOT_SINGLE_ELEMENT => "storage num_elem",
            Status::UNSUPPORTED_TPB_LAYOUT => "num_partitions or num_elem_per_block",
            _ => return None,
        })
    }
}

/// How every printer shows a status: hex, then its name, so it reads as the docs'
/// tables do (`docs/abi/descriptors.md`): `0x0 OK`, `0x44 TCM_EXHAUSTED`, a kernel's
/// own code as `0x10007 Op(7)`, anything else as `0x99 (unknown)`.
///
/// ```
/// use neuroncustomop::wrapper_api::{KernelError, Status};
///
/// assert_eq!(Status::TCM_EXHAUSTED.to_string(), "0x44 TCM_EXHAUSTED");
/// assert_eq!(Status::from(KernelError::Op(7)).to_string(), "0x10007 Op(7)");
/// ```
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x} ", self.0)?;
        match self.name() {
            Some(name) => f.write_str(name),
            None if (Status::KERNEL_BASE..=Status::KERNEL_BASE + u32::from(u16::MAX)).contains(&self.0) => {
                write!(f, "Op({})", self.0 - Status::KERNEL_BASE)
            }
            None => f.write_str("(unknown)"),
        }
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
            ArgError::ExpectedTensor(found) => write!(f, "pulled as a tensor, passed as {}", KindName(found as u8)),
            ArgError::ExpectedScalar(wanted) => {
                write!(f, "pulled as {}, passed as a tensor", KindName(wanted.arg_type() as u8))
            }
            ArgError::ScalarKindMismatch { wanted, found } => {
                write!(f, "pulled as {}, passed as {}", KindName(wanted.arg_type() as u8), KindName(found as u8))
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

/// Which argument caused an invocation's first failure, what the call pulled and what
/// was passed: the detail behind its status (`0x9 SCALAR_KIND_MISMATCH: argument 3:
/// pulled as float, passed as int`). 4 bytes, documented as ABI in
/// `docs/abi/descriptors.md` (§6.1, "The failing argument").
///
/// The runtime keeps one per core, written by the failing pull (or output take) when it
/// is the invocation's first failure, and reports it once the kernel has ended:
/// `customop_invocation_status`, which the loader calls after the kernel, writes it to
/// stdout as one line ([`ArgFailure::LINE_PREFIX`] and the record as one word in hex),
/// and front ends read it back with [`ArgFailure::parse_line`]. A failure no argument
/// caused (the kernel's own code, a tensor access, a C++ misuse) leaves no record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct ArgFailure {
    /// The status it explains (the invocation's): a pull's status, all of which are
    /// below 0x100; 0: nothing recorded.
    pub status: u8,
    /// The argument's index, from 0, or [`ArgFailure::OUTPUT`]. For `NO_MORE_ARGS`,
    /// the index past the last: how many arguments were passed.
    pub argument: u8,
    /// The raw [`ArgType`] the call pulled ([`ArgType::Tensor`] for the output).
    pub pulled: u8,
    /// The argument's raw `arg_type` byte, for the statuses of a wrong kind (the
    /// others leave it unread: past the last argument it is not one's); 0 for the
    /// output (the runtime keeps no copy of its type).
    pub passed: u8,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<ArgFailure>() == 4);
    assert!(offset_of!(ArgFailure, status) == 0);
    assert!(offset_of!(ArgFailure, argument) == 1);
    assert!(offset_of!(ArgFailure, pulled) == 2);
    assert!(offset_of!(ArgFailure, passed) == 3);
};

impl ArgFailure {
    /// Nothing recorded.
    pub const NONE: ArgFailure = ArgFailure { status: 0, argument: 0, pulled: 0, passed: 0 };
    /// The `argument` of the output descriptor (`get_dst_tensor`, `Args::output`).
    pub const OUTPUT: u8 = 0xFF;
    /// How the reported line starts: `ARGFAIL 0x02040309`, the record as one
    /// little-endian word.
    pub const LINE_PREFIX: &'static str = "ARGFAIL ";

    /// The record as the word of its line: its four bytes in field order, little-endian.
    pub const fn to_word(self) -> u32 {
        u32::from_le_bytes([self.status, self.argument, self.pulled, self.passed])
    }

    /// The record of [`to_word`](Self::to_word)'s word.
    pub const fn from_word(word: u32) -> ArgFailure {
        let [status, argument, pulled, passed] = word.to_le_bytes();
        ArgFailure { status, argument, pulled, passed }
    }

    /// The record a reported line carries; `None` for any other line.
    pub fn parse_line(line: &str) -> Option<ArgFailure> {
        let hex = line.trim_end().strip_prefix(Self::LINE_PREFIX)?.strip_prefix("0x")?;
        let word = u32::from_str_radix(hex, 16).ok().filter(|_| hex.len() == 8)?;
        Some(ArgFailure::from_word(word))
    }

    /// Whether this record explains `status`: it is that status, and one its argument
    /// says something about (a wrong kind, past the last, a bad descriptor, an
    /// untranslatable or overlapping tensor).
    pub fn explains(&self, status: Status) -> bool {
        u32::from(self.status) == status.0
            && (matches!(
                status,
                Status::NO_MORE_ARGS
                    | Status::EXPECTED_TENSOR
                    | Status::EXPECTED_SCALAR
                    | Status::SCALAR_KIND_MISMATCH
                    | Status::TRANSLATE_MISS
                    | Status::RANGE_OUTSIDE_WINDOW
                    | Status::TOO_LARGE
                    | Status::OUTPUT_ALIASES_INPUT
            ) || status.descriptor_field().is_some())
    }
}

/// An arg type as a C kernel pulls it: `a tensor`, `int`, `long long`, `float`; an
/// unknown byte as `arg type 7`.
struct KindName(u8);

impl fmt::Display for KindName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match ArgType::from_raw(self.0) {
            Some(ArgType::Tensor) => f.write_str("a tensor"),
            Some(ArgType::Int) => f.write_str("int"),
            Some(ArgType::LongLong) => f.write_str("long long"),
            Some(ArgType::Float) => f.write_str("float"),
            None => write!(f, "arg type {}", self.0),
        }
    }
}

/// What a front end prints after the status: `argument 3: pulled as float, passed as
/// int`; `argument 2: pulled as int, but 2 arguments were passed (0 to 1)`; for a bad
/// descriptor, its field: `argument 0 (pulled as a tensor): its descriptor's dtype`.
///
/// ```
/// use neuroncustomop::wrapper_api::{ArgFailure, ArgType, Status};
///
/// let failure = ArgFailure {
///     status: Status::SCALAR_KIND_MISMATCH.0 as u8,
///     argument: 3,
///     pulled: ArgType::Float as u8,
///     passed: ArgType::Int as u8,
/// };
/// assert_eq!(failure.to_string(), "argument 3: pulled as float, passed as int");
/// ```
impl fmt::Display for ArgFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.argument {
            ArgFailure::OUTPUT => f.write_str("the output")?,
            index => write!(f, "argument {index}")?,
        }
        let (status, pulled, passed) = (Status(self.status.into()), KindName(self.pulled), KindName(self.passed));
        match status {
            // Past the last: the index is how many were passed.
            Status::NO_MORE_ARGS => match self.argument {
                0 => write!(f, ": pulled as {pulled}, but no argument was passed"),
                1 => write!(f, ": pulled as {pulled}, but 1 argument was passed (argument 0)"),
                n => write!(f, ": pulled as {pulled}, but {n} arguments were passed (0 to {})", n - 1),
            },
            Status::EXPECTED_TENSOR | Status::EXPECTED_SCALAR | Status::SCALAR_KIND_MISMATCH => {
                write!(f, ": pulled as {pulled}")?;
                match self.passed {
                    0 => Ok(()),
                    _ => write!(f, ", passed as {passed}"),
                }
            }
            _ => {
                write!(f, " (pulled as {pulled})")?;
                match status.descriptor_field() {
                    Some(field) => write!(f, ": its descriptor's {field}"),
                    None => Ok(()),
                }
            }
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
    fn statuses_print_as_hex_and_name() {
        use std::string::ToString;
        assert_eq!(Status::OK.to_string(), "0x0 OK");
        assert_eq!(Status::TCM_EXHAUSTED.to_string(), "0x44 TCM_EXHAUSTED");
        assert_eq!(Status::UNKNOWN_DTYPE.to_string(), "0x21 UNKNOWN_DTYPE");
        assert_eq!(Status(0x1_0007).to_string(), "0x10007 Op(7)");
        assert_eq!(Status(0x1_ffff).to_string(), "0x1ffff Op(65535)");
        assert_eq!(Status(0x2_0000).to_string(), "0x20000 (unknown)");
        assert_eq!(Status(0x10).to_string(), "0x10 (unknown)");
        for status in Status::ALL {
            assert!(status.to_string().ends_with(status.name().unwrap()), "{status}");
        }
    }

    #[test]
    fn every_runtime_status_fits_the_failure_records_byte() {
        assert!(Status::ALL.iter().all(|status| status.0 < 0x100));
    }

    #[test]
    fn kernel_codes_sit_above_the_runtime_codes() {
        assert_eq!(Status::from(KernelError::Op(0)), Status(0x1_0000));
        assert_eq!(Status::from(KernelError::Op(u16::MAX)), Status(0x1_ffff));
    }
}
