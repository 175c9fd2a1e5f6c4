//! Building the chain of words for one op.

use core::iter;

use crate::layout::{
    FLAG_LAST, FLAG_OUTPUT, HEADER_FUNCTION_ID, HEADER_NUM_ARGUMENTS, HEADER_NUM_PAYLOADS, OPCODE, PAYLOAD_DESCRIPTOR,
    PAYLOAD_FLAGS, PAYLOAD_INDEX,
};
use crate::{
    Descriptor, FunctionId, HEADER_OPCODE, MAX_INPUTS, MAX_WORDS, PAYLOAD_OPCODE, WORD_LEN, WireError, num_payloads,
};

/// The encoded words of one op, held inline (no allocation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodedOp {
    bytes: [u8; MAX_WORDS * WORD_LEN],
    len: usize,
}

impl EncodedOp {
    /// The words, `num_payloads * 64` bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl AsRef<[u8]> for EncodedOp {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// Encodes an op calling `function_id` with `inputs` (in argument order) into its
/// header word and payload words: the output first, then the inputs.
///
/// An op has an output exactly when it has inputs: with no inputs the chain is a lone
/// header, as the compiler emits it.
///
/// # Errors
/// [`WireError::TooManyArguments`] past [`MAX_INPUTS`] inputs,
/// [`WireError::MissingOutput`] for inputs without an output, and
/// [`WireError::OutputWithoutInputs`] for an output without inputs.
pub fn encode(
    function_id: FunctionId,
    output: Option<&Descriptor>,
    inputs: &[Descriptor],
) -> Result<EncodedOp, WireError> {
    if inputs.len() > MAX_INPUTS {
        return Err(WireError::TooManyArguments { num_arguments: inputs.len() });
    }
    let num_arguments = inputs.len() as u8; // cannot truncate: at most MAX_INPUTS
    let payloads = match (output, inputs.is_empty()) {
        (Some(output), false) => Some(iter::once(output).chain(inputs)),
        (None, true) => None,
        (None, false) => return Err(WireError::MissingOutput),
        (Some(_), true) => return Err(WireError::OutputWithoutInputs),
    };

    let total_words = num_payloads(num_arguments);
    let mut encoded = EncodedOp { bytes: [0; MAX_WORDS * WORD_LEN], len: usize::from(total_words) * WORD_LEN };
    let mut words = encoded.bytes.chunks_exact_mut(WORD_LEN);

    let header = words.next().expect("MAX_WORDS >= 1");
    header[OPCODE] = HEADER_OPCODE;
    header[HEADER_NUM_PAYLOADS..HEADER_NUM_PAYLOADS + 2].copy_from_slice(&total_words.to_le_bytes());
    header[HEADER_FUNCTION_ID] = function_id.get();
    header[HEADER_NUM_ARGUMENTS] = num_arguments;

    for (position, (word, descriptor)) in (1u16..).zip(words.zip(payloads.into_iter().flatten())) {
        word[OPCODE] = PAYLOAD_OPCODE;
        word[PAYLOAD_INDEX..PAYLOAD_INDEX + 2].copy_from_slice(&position.to_le_bytes());
        word[PAYLOAD_FLAGS] = payload_flags(position, total_words);
        word[PAYLOAD_DESCRIPTOR..].copy_from_slice(descriptor);
    }
    Ok(encoded)
}

/// The flags the payload at `position` of a `total_words`-word chain must carry.
pub(crate) fn payload_flags(position: u16, total_words: u16) -> u8 {
    let output = if position == 1 { FLAG_OUTPUT } else { 0 };
    let last = if position + 1 == total_words { FLAG_LAST } else { 0 };
    output | last
}
