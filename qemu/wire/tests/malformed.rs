//! Every way a chain of words or an encode request is refused, one test per error,
//! each starting from a valid op and breaking one thing.

use neuroncustomop_wire::{Descriptor, FunctionId, WireError, decode, decode_prefix, encode};

fn id(raw: u8) -> FunctionId {
    FunctionId::new(raw).unwrap()
}

const KNOWN: [FunctionId; 1] = [FunctionId::new(5).unwrap()];

/// A valid op calling FunctionId 5 with `num_inputs` inputs, as a byte vector.
fn valid(num_inputs: usize) -> Vec<u8> {
    let inputs: Vec<Descriptor> = (0..num_inputs).map(|k| [k as u8 + 1; 48]).collect();
    let output = (num_inputs > 0).then_some([0xAA; 48]);
    encode(id(5), output.as_ref(), &inputs).unwrap().as_bytes().to_vec()
}

fn decode_known(bytes: &[u8]) -> Result<(), WireError> {
    decode(bytes, &KNOWN[..]).map(drop)
}

#[test]
fn the_valid_ops_decode() {
    for n in 0..=10 {
        assert_eq!(decode_known(&valid(n)), Ok(()), "{n} inputs");
    }
}

#[test]
fn wrong_header_opcode() {
    let mut bytes = valid(1);
    bytes[0] = 0x86;
    let expected = WireError::WrongOpcode { word: 0, expected: 0x85, found: 0x86 };
    assert_eq!(decode_known(&bytes), Err(expected));
}

#[test]
fn wrong_payload_opcode() {
    let mut bytes = valid(2);
    bytes[2 * 64] = 0x85; // a header where input 0 should be
    let expected = WireError::WrongOpcode { word: 2, expected: 0x86, found: 0x85 };
    assert_eq!(decode_known(&bytes), Err(expected));
}

#[test]
fn unset_function_id() {
    let mut bytes = valid(1);
    bytes[0x0E] = 0xFF;
    assert_eq!(decode_known(&bytes), Err(WireError::UnsetFunctionId));
}

#[test]
fn function_id_not_in_the_table() {
    let mut bytes = valid(1);
    bytes[0x0E] = 6;
    assert_eq!(decode_known(&bytes), Err(WireError::UnknownFunctionId { raw: 6 }));
}

#[test]
fn function_id_past_the_limit_is_unknown_even_to_an_accept_all_table() {
    let mut bytes = valid(1);
    bytes[0x0E] = 0xFE;
    let accept_all = |_: FunctionId| true;
    assert_eq!(decode(&bytes, &accept_all), Err(WireError::UnknownFunctionId { raw: 0xFE }));
}

#[test]
fn num_payloads_that_does_not_match_n() {
    let mut bytes = valid(2);
    bytes[0x0C] = 3; // claims N + 1 words for N = 2
    let expected = WireError::PayloadCountMismatch { num_arguments: 2, num_payloads: 3, expected: 4 };
    assert_eq!(decode_known(&bytes), Err(expected));
}

#[test]
fn n_zero_with_an_output_word_count() {
    // N = 0 must be a lone header; 2 words (header + output) is not a valid count.
    let mut bytes = valid(0);
    bytes[0x0C] = 2;
    let expected = WireError::PayloadCountMismatch { num_arguments: 0, num_payloads: 2, expected: 1 };
    assert_eq!(decode_known(&bytes), Err(expected));
}

#[test]
fn n_that_does_not_match_num_payloads() {
    let mut bytes = valid(2);
    bytes[0x0F] = 1;
    let expected = WireError::PayloadCountMismatch { num_arguments: 1, num_payloads: 4, expected: 3 };
    assert_eq!(decode_known(&bytes), Err(expected));
}

#[test]
fn more_inputs_than_argument_slots() {
    // N = 11 with a consistent count (13) and all 13 words present.
    let mut bytes = valid(10);
    bytes[0x0C] = 13;
    bytes[0x0F] = 11;
    bytes.extend_from_slice(&[0; 64]);
    assert_eq!(decode_known(&bytes), Err(WireError::TooManyArguments { num_arguments: 11 }));
}

#[test]
fn truncated_header() {
    let bytes = valid(0);
    assert_eq!(decode_known(&bytes[..63]), Err(WireError::Truncated { needed: 64, available: 63 }));
    assert_eq!(decode_known(&[]), Err(WireError::Truncated { needed: 64, available: 0 }));
}

#[test]
fn truncated_payload() {
    let bytes = valid(2);
    assert_eq!(decode_known(&bytes[..255]), Err(WireError::Truncated { needed: 256, available: 255 }));
    assert_eq!(decode_known(&bytes[..128]), Err(WireError::Truncated { needed: 256, available: 128 }));
}

#[test]
fn trailing_bytes_after_the_op() {
    let mut bytes = valid(1);
    bytes.push(0);
    assert_eq!(decode_known(&bytes), Err(WireError::TrailingBytes { consumed: 192, available: 193 }));
}

#[test]
fn decode_prefix_walks_a_stream_of_ops() {
    let mut stream = valid(2);
    stream.extend(valid(0));
    let (first, used) = decode_prefix(&stream, &KNOWN[..]).unwrap();
    assert_eq!((first.inputs().len(), used), (2, 256));
    let (second, used) = decode_prefix(&stream[256..], &KNOWN[..]).unwrap();
    assert_eq!((second.inputs().len(), used), (0, 64));
}

#[test]
fn two_outputs() {
    let mut bytes = valid(2);
    bytes[2 * 64 + 0x0F] |= 0x01; // input 0 also claims to be the output
    assert_eq!(decode_known(&bytes), Err(WireError::MultipleOutputs { word: 2 }));
}

#[test]
fn no_output_first() {
    let mut bytes = valid(2);
    bytes[64 + 0x0F] = 0x00; // the first payload does not claim to be the output
    assert_eq!(decode_known(&bytes), Err(WireError::MissingOutput));
}

#[test]
fn last_flag_on_a_middle_payload() {
    let mut bytes = valid(2);
    bytes[2 * 64 + 0x0F] = 0x02;
    assert_eq!(decode_known(&bytes), Err(WireError::LastFlagMismatch { word: 2 }));
}

#[test]
fn last_flag_missing_on_the_last_payload() {
    let mut bytes = valid(2);
    bytes[3 * 64 + 0x0F] = 0x00;
    assert_eq!(decode_known(&bytes), Err(WireError::LastFlagMismatch { word: 3 }));
}

#[test]
fn undefined_flag_bits() {
    let mut bytes = valid(1);
    bytes[2 * 64 + 0x0F] |= 0x80;
    assert_eq!(decode_known(&bytes), Err(WireError::UnknownFlags { word: 2, flags: 0x82 }));
}

#[test]
fn swapped_inputs_are_out_of_order() {
    let mut bytes = valid(3);
    // Swap inputs 0 and 1 (words 2 and 3) whole: each still claims its old position.
    let (left, right) = bytes.split_at_mut(3 * 64);
    left[2 * 64..].swap_with_slice(&mut right[..64]);
    assert_eq!(decode_known(&bytes), Err(WireError::PayloadOutOfOrder { word: 2, found: 3 }));
}

#[test]
fn repeated_payload_is_out_of_order() {
    let mut bytes = valid(2);
    let output = bytes[64..128].to_vec();
    bytes[128..192].copy_from_slice(&output);
    assert_eq!(decode_known(&bytes), Err(WireError::PayloadOutOfOrder { word: 2, found: 1 }));
}

#[test]
fn reserved_header_bytes() {
    for offset in (0x01..0x0C).chain(0x10..0x40) {
        let mut bytes = valid(1);
        bytes[offset] = 0x5A;
        let expected = WireError::ReservedByteSet { word: 0, offset: offset as u8, value: 0x5A };
        assert_eq!(decode_known(&bytes), Err(expected), "header +{offset:#x}");
    }
}

#[test]
fn reserved_payload_bytes() {
    for offset in (0x01..0x0C).chain([0x0E]) {
        let mut bytes = valid(1);
        bytes[2 * 64 + offset] = 0x5A;
        let expected = WireError::ReservedByteSet { word: 2, offset: offset as u8, value: 0x5A };
        assert_eq!(decode_known(&bytes), Err(expected), "payload +{offset:#x}");
    }
}

#[test]
fn encode_refuses_what_the_wire_cannot_carry() {
    let descriptor = [0u8; 48];
    assert_eq!(
        encode(id(0), Some(&descriptor), &[descriptor; 11]),
        Err(WireError::TooManyArguments { num_arguments: 11 })
    );
    assert_eq!(encode(id(0), None, &[descriptor]), Err(WireError::MissingOutput));
    assert_eq!(encode(id(0), Some(&descriptor), &[]), Err(WireError::OutputWithoutInputs));
}

#[test]
fn errors_read_clearly() {
    let cases = [
        (WireError::UnsetFunctionId, "FunctionId is 0xff (unset)"),
        (WireError::UnknownFunctionId { raw: 6 }, "FunctionId 6 names no registered function"),
        (
            WireError::PayloadCountMismatch { num_arguments: 2, num_payloads: 3, expected: 4 },
            "num_payloads 3 does not match num_arguments 2 (expected 4)",
        ),
        (WireError::MultipleOutputs { word: 2 }, "word 2: a second output payload (at most one output)"),
        (WireError::Truncated { needed: 256, available: 128 }, "truncated custom op: needs 256 bytes, got 128"),
        (
            WireError::ReservedByteSet { word: 1, offset: 0x0E, value: 0x5A },
            "word 1: reserved byte +0x0e is 0x5a, not 0",
        ),
        (WireError::TrailingBytes { consumed: 192, available: 193 }, "1 bytes follow the custom op's 192"),
    ];
    for (error, text) in cases {
        assert_eq!(error.to_string(), text);
    }
}
