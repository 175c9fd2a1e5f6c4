//! Why a chain of words was refused.

use core::fmt;

/// Why an op could not be encoded, or why a chain of words was rejected. `word` is the
/// position of the offending word in the chain (0 is the header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The bytes end before the chain does.
    Truncated {
        /// Bytes the chain needs (a whole header, or `num_payloads` words).
        needed: usize,
        /// Bytes given.
        available: usize,
    },
    /// Bytes follow the op's last word where exactly one op was expected.
    TrailingBytes {
        /// Bytes the op took.
        consumed: usize,
        /// Bytes given.
        available: usize,
    },
    /// A word's opcode byte is not the one its position requires.
    WrongOpcode {
        /// Position of the word.
        word: u16,
        /// 0x85 for the header, 0x86 for a payload.
        expected: u8,
        /// The byte found.
        found: u8,
    },
    /// A reserved byte is not 0.
    ReservedByteSet {
        /// Position of the word.
        word: u16,
        /// Offset of the byte within the word.
        offset: u8,
        /// The byte found.
        value: u8,
    },
    /// The header's FunctionId is 0xFF: the compiler never bound the op to a function.
    UnsetFunctionId,
    /// The header's FunctionId is not in the caller's function table.
    UnknownFunctionId {
        /// The id's byte.
        raw: u8,
    },
    /// More input arguments than the runtime's `ArgExtractor` has slots for
    /// ([`MAX_INPUTS`](crate::MAX_INPUTS)).
    TooManyArguments {
        /// The number of inputs (N).
        num_arguments: usize,
    },
    /// `num_payloads` is not the count that `num_arguments` implies (N + 2, or 1 for 0).
    PayloadCountMismatch {
        /// N, from the header.
        num_arguments: u8,
        /// From the header.
        num_payloads: u16,
        /// What N implies.
        expected: u16,
    },
    /// The op has inputs but no output: the first payload must be the output.
    MissingOutput,
    /// A second payload is marked as output: an op has at most one.
    MultipleOutputs {
        /// Position of the second output word.
        word: u16,
    },
    /// An output was given with no inputs: an argument-less op is a lone header
    /// (`num_payloads` 1), which has no place for it.
    OutputWithoutInputs,
    /// A payload's position field does not match where it stands in the chain.
    PayloadOutOfOrder {
        /// Where the word stands.
        word: u16,
        /// The position it claims.
        found: u16,
    },
    /// The last-payload flag is missing on the last payload, or set on another.
    LastFlagMismatch {
        /// Position of the word.
        word: u16,
    },
    /// A payload's flag byte has bits this format does not define.
    UnknownFlags {
        /// Position of the word.
        word: u16,
        /// The whole flag byte.
        flags: u8,
    },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Truncated { needed, available } => {
                write!(f, "truncated custom op: needs {needed} bytes, got {available}")
            }
            Self::TrailingBytes { consumed, available } => {
                write!(f, "{} bytes follow the custom op's {consumed}", available - consumed)
            }
            Self::WrongOpcode { word, expected, found } => {
                write!(f, "word {word}: opcode {found:#04x}, expected {expected:#04x}")
            }
            Self::ReservedByteSet { word, offset, value } => {
                write!(f, "word {word}: reserved byte +{offset:#04x} is {value:#04x}, not 0")
            }
            Self::UnsetFunctionId => write!(f, "FunctionId is 0xff (unset)"),
            Self::UnknownFunctionId { raw } => {
                write!(f, "FunctionId {raw} names no registered function")
            }
            Self::TooManyArguments { num_arguments } => {
                write!(f, "{num_arguments} input arguments: the runtime takes at most {}", crate::MAX_INPUTS)
            }
            Self::PayloadCountMismatch { num_arguments, num_payloads, expected } => write!(
                f,
                "num_payloads {num_payloads} does not match num_arguments {num_arguments} \
                 (expected {expected})"
            ),
            Self::MissingOutput => write!(f, "the op has inputs but no output payload first"),
            Self::MultipleOutputs { word } => {
                write!(f, "word {word}: a second output payload (at most one output)")
            }
            Self::OutputWithoutInputs => {
                write!(f, "an op without input arguments cannot carry an output")
            }
            Self::PayloadOutOfOrder { word, found } => {
                write!(f, "word {word}: payload claims position {found}")
            }
            Self::LastFlagMismatch { word } => {
                write!(f, "word {word}: last-payload flag does not match its position")
            }
            Self::UnknownFlags { word, flags } => {
                write!(f, "word {word}: undefined payload flag bits in {flags:#04x}")
            }
        }
    }
}

impl core::error::Error for WireError {}
