//! The 0x85/0x86 dispatch-word decoder (`neuroncustomop_wire::decode` /
//! `decode_prefix`) against a byte-level acceptor written from the layout of
//! `docs/abi/dispatch.md`, and the encoder against it.
//!
//! Input: a 32-byte bitmap of the FunctionIds the table knows, a mode byte, then either
//! raw words (raw mode) or an encoder call plus byte edits, a cut and an appended tail
//! (edit mode, so valid chains and each single corruption of them are reached).
//!
//! Checked, whatever the bytes:
//! - `decode_prefix` never panics and returns exactly the model's op or error;
//! - an accepted chain re-encodes, through `encode`, to exactly the bytes it took, and
//!   its length is `num_payloads * 64`;
//! - `decode` accepts exactly when `decode_prefix` does and took every byte, and
//!   reports the trailing bytes otherwise;
//! - `encode` refuses exactly the requests the format cannot carry.
//!
//! The same bytes, read as text, are also the TCG plugin's lines and arguments
//! (`neuroncustomop_wire::plugin`): whatever `Line::parse` or `Argument::parse` accepts
//! never panics, prints (`Display`) as text that parses back to the same value.

use arbitrary::{Arbitrary, Unstructured};
use neuroncustomop_wire::plugin::{Argument, Line};
use neuroncustomop_wire::{
    DESCRIPTOR_LEN, DecodedOp, Descriptor, FunctionId, MAX_INPUTS, WORD_LEN, WireError, decode, decode_prefix, encode,
};

use crate::ensure_eq;

/// What the model reads from an accepted chain.
#[derive(Debug, PartialEq)]
struct ModelOp {
    function_id: u8,
    output: Option<Descriptor>,
    inputs: Vec<Descriptor>,
    consumed: usize,
}

fn le16(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

/// The first non-zero byte of `word` in `ranges`, as the error the decoder reports.
fn reserved_byte(word: &[u8], position: u16, ranges: &[(usize, usize)]) -> Result<(), WireError> {
    for &(start, end) in ranges {
        if let Some(offset) = (start..end).find(|&at| word[at] != 0) {
            return Err(WireError::ReservedByteSet { word: position, offset: offset as u8, value: word[offset] });
        }
    }
    Ok(())
}

/// The reference acceptor, from the documented layout: header opcode 0x85 at +0,
/// `num_payloads` u16 at +0x0C, FunctionId at +0x0E, N at +0x0F, every other byte 0;
/// payload k (1-based) opcode 0x86, position u16 at +0x0C, flags at +0x0F (bit 0: the
/// output, on word 1 only; bit 1: the last word), descriptor at +0x10.
fn model_decode_prefix(bytes: &[u8], known: &[bool; 256]) -> Result<ModelOp, WireError> {
    let Some(header) = bytes.get(..WORD_LEN) else {
        return Err(WireError::Truncated { needed: WORD_LEN, available: bytes.len() });
    };
    if header[0] != 0x85 {
        return Err(WireError::WrongOpcode { word: 0, expected: 0x85, found: header[0] });
    }
    reserved_byte(header, 0, &[(0x01, 0x0C), (0x10, WORD_LEN)])?;
    let function_id = header[0x0E];
    if function_id == 0xFF {
        return Err(WireError::UnsetFunctionId);
    }
    if function_id >= 254 || !known[usize::from(function_id)] {
        return Err(WireError::UnknownFunctionId { raw: function_id });
    }
    let n = header[0x0F];
    if usize::from(n) > MAX_INPUTS {
        return Err(WireError::TooManyArguments { num_arguments: usize::from(n) });
    }
    let expected = if n == 0 { 1 } else { u16::from(n) + 2 };
    let num_payloads = le16(header, 0x0C);
    if num_payloads != expected {
        return Err(WireError::PayloadCountMismatch { num_arguments: n, num_payloads, expected });
    }
    let consumed = usize::from(num_payloads) * WORD_LEN;
    if bytes.len() < consumed {
        return Err(WireError::Truncated { needed: consumed, available: bytes.len() });
    }
    let mut op = ModelOp { function_id, output: None, inputs: Vec::new(), consumed };
    for position in 1..num_payloads {
        let word = &bytes[usize::from(position) * WORD_LEN..][..WORD_LEN];
        if word[0] != 0x86 {
            return Err(WireError::WrongOpcode { word: position, expected: 0x86, found: word[0] });
        }
        reserved_byte(word, position, &[(0x01, 0x0C), (0x0E, 0x0F)])?;
        let claimed = le16(word, 0x0C);
        if claimed != position {
            return Err(WireError::PayloadOutOfOrder { word: position, found: claimed });
        }
        let flags = word[0x0F];
        if flags & !0b11 != 0 {
            return Err(WireError::UnknownFlags { word: position, flags });
        }
        match (position == 1, flags & 1 != 0) {
            (true, false) => return Err(WireError::MissingOutput),
            (false, true) => return Err(WireError::MultipleOutputs { word: position }),
            _ => {}
        }
        if (flags & 2 != 0) != (position + 1 == num_payloads) {
            return Err(WireError::LastFlagMismatch { word: position });
        }
        let descriptor: Descriptor = word[0x10..].try_into().expect("48 bytes");
        if position == 1 {
            op.output = Some(descriptor);
        } else {
            op.inputs.push(descriptor);
        }
    }
    Ok(op)
}

fn seen(op: &DecodedOp, consumed: usize) -> ModelOp {
    ModelOp {
        function_id: op.function_id().get(),
        output: op.output().copied(),
        inputs: op.inputs().to_vec(),
        consumed,
    }
}

/// Checks one byte string against the model; returns what `decode_prefix` took.
fn check_chain(bytes: &[u8], known: &[bool; 256]) -> Option<usize> {
    let table = |id: FunctionId| known[usize::from(id.get())];
    let prefix = decode_prefix(bytes, &table);
    let expected = model_decode_prefix(bytes, known);
    let consumed = match (&prefix, expected) {
        (Ok((op, consumed)), Ok(expected)) => {
            ensure_eq!(seen(op, *consumed), expected, "decode_prefix of {} bytes", bytes.len());
            ensure_eq!(op.encoded_len(), *consumed, "encoded_len");
            let reencoded = encode(op.function_id(), op.output(), op.inputs())
                .unwrap_or_else(|error| panic!("encode refuses a decoded op: {error:?}"));
            ensure_eq!(reencoded.as_bytes(), &bytes[..*consumed], "re-encoding");
            Some(*consumed)
        }
        (Err(error), Err(expected)) => {
            ensure_eq!(*error, expected, "decode_prefix's error");
            assert!(!error.to_string().is_empty(), "{error:?} displays as nothing");
            None
        }
        (got, expected) => panic!("decode_prefix gave {got:?}, the model {expected:?}"),
    };
    let whole = decode(bytes, &table);
    match (prefix, whole) {
        (Ok((_, consumed)), Ok(_)) if consumed == bytes.len() => {}
        (Ok((_, consumed)), Err(WireError::TrailingBytes { consumed: c, available }))
            if consumed < bytes.len() && c == consumed && available == bytes.len() => {}
        (Err(prefix), Err(whole)) if prefix == whole => {}
        (prefix, whole) => panic!("decode gave {whole:?} where decode_prefix gave {prefix:?}"),
    }
    consumed
}

/// An encoder call as the fuzzer chooses it, and what is done to its bytes.
#[derive(Arbitrary, Debug)]
struct Edited {
    function_id: u8,
    output: Option<Descriptor>,
    inputs: Vec<Descriptor>,
    edits: Vec<(u16, u8)>,
    cut: Option<u16>,
    tail: Vec<u8>,
}

/// The encoder's own rules: at most 10 inputs, and an output exactly when there are
/// inputs.
fn model_encode(output: bool, inputs: usize) -> Result<(), WireError> {
    match (inputs, output) {
        (n, _) if n > MAX_INPUTS => Err(WireError::TooManyArguments { num_arguments: n }),
        (0, true) => Err(WireError::OutputWithoutInputs),
        (1.., false) => Err(WireError::MissingOutput),
        _ => Ok(()),
    }
}

/// Every line of `data` (as text) as a plugin line and a plugin argument: what parses
/// prints as text that parses back to it.
fn check_plugin_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.split('\n') {
        if let Ok(parsed) = Line::parse(line) {
            let printed = parsed.to_string();
            ensure_eq!(Line::parse(&printed), Ok(parsed), "the plugin line {line:?} printed as {printed:?}");
        }
        if let Ok(parsed) = Argument::parse(line) {
            let printed = parsed.to_string();
            ensure_eq!(Argument::parse(&printed), Ok(parsed.clone()), "the argument {line:?} printed as {printed:?}");
        }
    }
}

/// The whole target.
pub fn check(data: &[u8]) {
    check_plugin_text(data);
    let mut input = Unstructured::new(data);
    let Ok(bitmap) = <[u8; 32]>::arbitrary(&mut input) else { return };
    let known: [bool; 256] = core::array::from_fn(|id| bitmap[id / 8] & (1 << (id % 8)) != 0);
    let Ok(raw_mode) = bool::arbitrary(&mut input) else { return };
    if raw_mode {
        let rest = input.take_rest();
        // Walk the bytes as a stream of ops, as the loader does.
        let mut at = 0;
        while let Some(consumed) = check_chain(&rest[at..], &known) {
            at += consumed;
        }
        return;
    }
    let Ok(edited) = Edited::arbitrary(&mut input) else { return };
    let Some(function_id) = FunctionId::new(edited.function_id) else {
        assert!(edited.function_id >= 254, "FunctionId::new refused {}", edited.function_id);
        return;
    };
    let encoded = encode(function_id, edited.output.as_ref(), &edited.inputs);
    ensure_eq!(
        encoded.as_ref().map(drop).map_err(|e| *e),
        model_encode(edited.output.is_some(), edited.inputs.len()),
        "encode's answer"
    );
    let Ok(encoded) = encoded else { return };
    let mut bytes = encoded.as_bytes().to_vec();
    ensure_eq!(bytes.len(), WORD_LEN * if edited.inputs.is_empty() { 1 } else { edited.inputs.len() + 2 }, "length");
    ensure_eq!(bytes[bytes.len() - DESCRIPTOR_LEN..].len(), DESCRIPTOR_LEN, "descriptor slot");
    for &(at, value) in &edited.edits {
        let len = bytes.len();
        bytes[usize::from(at) % len] = value;
    }
    if let Some(cut) = edited.cut {
        bytes.truncate(usize::from(cut) % (bytes.len() + 1));
    }
    bytes.extend_from_slice(&edited.tail);
    let mut known_with_id = known;
    known_with_id[usize::from(function_id.get())] = true;
    check_chain(&bytes, &known_with_id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_random_inputs_pass() {
        crate::smoke::check_inputs(check, 20_000, 1024);
    }

    #[test]
    fn plugin_lines_and_arguments_print_back_to_themselves() {
        let text = "FINDING core=2 op=1 kind=heap-outside pc=0x84400010 address=0x62000244 bytes=+4 accesses=1 \
                    block=0x6a000100 size=64 alloc=84000010;84000020 free= backtrace=8440;8441 region=input index=1 \
                    start=0x62000000 len=4096 dtype=1 shape=16x64\nWROTE core=0 ranges=1-2,3-4\nEND core=9\n\
                    check-image=3:0x8460000:8461000:8480000\nout=/tmp/a=b";
        for line in text.lines() {
            assert!(Line::parse(line).is_ok() || Argument::parse(line).is_ok(), "{line}");
        }
        check_plugin_text(text.as_bytes());
    }

    #[test]
    fn the_model_accepts_an_encoded_op_and_names_a_broken_flag() {
        let id = FunctionId::new(7).unwrap();
        let mut known = [false; 256];
        known[7] = true;
        let mut bytes = encode(id, Some(&[1; 48]), &[[2; 48]]).unwrap().as_bytes().to_vec();
        assert_eq!(check_chain(&bytes, &known), Some(3 * WORD_LEN));
        bytes[WORD_LEN + 0x0F] = 0; // the output flag of word 1
        assert_eq!(model_decode_prefix(&bytes, &known), Err(WireError::MissingOutput));
    }
}
