//! Reading and validating the chain of words of one op.

use core::ops::Range;

use crate::encode::payload_flags;
use crate::layout::{
    FLAG_LAST, FLAG_OUTPUT, HEADER_FUNCTION_ID, HEADER_NUM_ARGUMENTS, HEADER_NUM_PAYLOADS, HEADER_RESERVED, OPCODE,
    PAYLOAD_DESCRIPTOR, PAYLOAD_FLAGS, PAYLOAD_INDEX, PAYLOAD_RESERVED,
};
use crate::{
    DESCRIPTOR_LEN, Descriptor, FunctionId, FunctionTable, HEADER_OPCODE, MAX_INPUTS, PAYLOAD_OPCODE, WORD_LEN,
    WireError, num_payloads,
};

/// One op, read back from its words: which function to call, the output descriptor and
/// the input descriptors in argument order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedOp {
    function_id: FunctionId,
    output: Option<Descriptor>,
    inputs: [Descriptor; MAX_INPUTS],
    num_inputs: u8,
}

impl DecodedOp {
    /// The function the op calls.
    pub fn function_id(&self) -> FunctionId {
        self.function_id
    }

    /// The output descriptor; `None` exactly when the op has no inputs.
    pub fn output(&self) -> Option<&Descriptor> {
        self.output.as_ref()
    }

    /// The input descriptors, in argument order (N of them).
    pub fn inputs(&self) -> &[Descriptor] {
        &self.inputs[..usize::from(self.num_inputs)]
    }

    /// How many bytes the op's words take: `num_payloads * 64`.
    pub fn encoded_len(&self) -> usize {
        usize::from(num_payloads(self.num_inputs)) * WORD_LEN
    }
}

/// Decodes the op whose header starts `bytes`, ignoring any bytes after its last word,
/// and returns it with the number of bytes it took (so a caller can walk a stream).
///
/// # Errors
/// Any [`WireError`] but the encoder-only ones; see [`decode`].
pub fn decode_prefix<T: FunctionTable + ?Sized>(bytes: &[u8], functions: &T) -> Result<(DecodedOp, usize), WireError> {
    let header = word(bytes, 0)?;
    check_word(header, 0, HEADER_OPCODE, &HEADER_RESERVED)?;

    let raw_id = header[HEADER_FUNCTION_ID];
    if raw_id == FunctionId::UNSET_BYTE {
        return Err(WireError::UnsetFunctionId);
    }
    let function_id = FunctionId::new(raw_id)
        .filter(|&id| functions.contains(id))
        .ok_or(WireError::UnknownFunctionId { raw: raw_id })?;

    let num_arguments = header[HEADER_NUM_ARGUMENTS];
    if usize::from(num_arguments) > MAX_INPUTS {
        return Err(WireError::TooManyArguments { num_arguments: num_arguments.into() });
    }
    let total_words = read_u16(header, HEADER_NUM_PAYLOADS);
    let expected = num_payloads(num_arguments);
    if total_words != expected {
        return Err(WireError::PayloadCountMismatch { num_arguments, num_payloads: total_words, expected });
    }
    let consumed = usize::from(total_words) * WORD_LEN;
    if bytes.len() < consumed {
        return Err(WireError::Truncated { needed: consumed, available: bytes.len() });
    }

    let mut op =
        DecodedOp { function_id, output: None, inputs: [[0; DESCRIPTOR_LEN]; MAX_INPUTS], num_inputs: num_arguments };
    for position in 1..total_words {
        let payload = word(bytes, position)?;
        check_word(payload, position, PAYLOAD_OPCODE, &PAYLOAD_RESERVED)?;
        check_payload_fields(payload, position, total_words)?;
        let descriptor: Descriptor =
            payload[PAYLOAD_DESCRIPTOR..].try_into().expect("the descriptor fills the word from PAYLOAD_DESCRIPTOR");
        match position {
            1 => op.output = Some(descriptor),
            input => op.inputs[usize::from(input - 2)] = descriptor,
        }
    }
    Ok((op, consumed))
}

/// Decodes exactly one op: `bytes` must be its words and nothing more.
///
/// # Errors
/// [`WireError::Truncated`] if the bytes end early, [`WireError::TrailingBytes`] if
/// they go on, and every check of the words: opcodes, reserved bytes, an unset
/// (0xFF) FunctionId or one not in `functions`, more than [`MAX_INPUTS`] inputs,
/// `num_payloads` not matching `num_arguments`, a missing or second output, payloads
/// out of order, a misplaced last-payload flag or undefined flag bits.
///
/// ```
/// use neuroncustomop_wire::{decode, WireError};
///
/// let mut header = [0u8; 64];
/// header[0] = 0x85;
/// header[0x0C] = 1; // num_payloads: a lone header
/// header[0x0E] = 0xFF; // FunctionId unset
/// assert_eq!(decode(&header, &[][..]), Err(WireError::UnsetFunctionId));
/// ```
pub fn decode<T: FunctionTable + ?Sized>(bytes: &[u8], functions: &T) -> Result<DecodedOp, WireError> {
    let (op, consumed) = decode_prefix(bytes, functions)?;
    if consumed != bytes.len() {
        return Err(WireError::TrailingBytes { consumed, available: bytes.len() });
    }
    Ok(op)
}

/// The word at `position` of the chain starting `bytes`.
fn word(bytes: &[u8], position: u16) -> Result<&[u8; WORD_LEN], WireError> {
    let start = usize::from(position) * WORD_LEN;
    bytes
        .get(start..start + WORD_LEN)
        .map(|word| word.try_into().expect("the range is WORD_LEN long"))
        .ok_or(WireError::Truncated { needed: start + WORD_LEN, available: bytes.len() })
}

/// Checks the opcode and the reserved bytes shared by both kinds of word.
fn check_word(word: &[u8; WORD_LEN], position: u16, opcode: u8, reserved: &[Range<usize>]) -> Result<(), WireError> {
    if word[OPCODE] != opcode {
        return Err(WireError::WrongOpcode { word: position, expected: opcode, found: word[OPCODE] });
    }
    match reserved.iter().cloned().flatten().find(|&offset| word[offset] != 0) {
        Some(offset) => Err(WireError::ReservedByteSet {
            word: position,
            offset: offset as u8, // cannot truncate: offsets are below WORD_LEN
            value: word[offset],
        }),
        None => Ok(()),
    }
}

/// Checks a payload's position and flags against where it stands in the chain.
fn check_payload_fields(payload: &[u8; WORD_LEN], position: u16, total_words: u16) -> Result<(), WireError> {
    let claimed = read_u16(payload, PAYLOAD_INDEX);
    if claimed != position {
        return Err(WireError::PayloadOutOfOrder { word: position, found: claimed });
    }
    let flags = payload[PAYLOAD_FLAGS];
    if flags & !(FLAG_OUTPUT | FLAG_LAST) != 0 {
        return Err(WireError::UnknownFlags { word: position, flags });
    }
    let wrong = flags ^ payload_flags(position, total_words);
    if wrong & FLAG_OUTPUT != 0 {
        return Err(if position == 1 {
            WireError::MissingOutput
        } else {
            WireError::MultipleOutputs { word: position }
        });
    }
    if wrong & FLAG_LAST != 0 {
        return Err(WireError::LastFlagMismatch { word: position });
    }
    Ok(())
}

fn read_u16(word: &[u8; WORD_LEN], offset: usize) -> u16 {
    u16::from_le_bytes([word[offset], word[offset + 1]])
}
