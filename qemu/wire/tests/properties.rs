//! Property tests: every encodable op round-trips, and the decoder accepts exactly the
//! encoder's output: any accepted chain re-encodes to the same bytes, and changing any
//! byte outside the descriptors and the FunctionId is rejected.

use neuroncustomop_wire::{
    DESCRIPTOR_LEN, DecodedOp, Descriptor, FunctionId, MAX_INPUTS, WORD_LEN, decode, encode, num_payloads,
};
use proptest::collection::vec;
use proptest::prelude::*;

fn accept_all(_: FunctionId) -> bool {
    true
}

fn function_id() -> impl Strategy<Value = FunctionId> {
    (0u8..254).prop_map(|raw| FunctionId::new(raw).unwrap())
}

fn descriptor() -> impl Strategy<Value = Descriptor> {
    any::<[u8; DESCRIPTOR_LEN]>()
}

/// A valid op: an id, and an output exactly when there are inputs.
fn op() -> impl Strategy<Value = (FunctionId, Option<Descriptor>, Vec<Descriptor>)> {
    (function_id(), descriptor(), vec(descriptor(), 0..=MAX_INPUTS)).prop_map(|(id, output, inputs)| {
        let output = (!inputs.is_empty()).then_some(output);
        (id, output, inputs)
    })
}

fn reencode(op: &DecodedOp) -> Vec<u8> {
    encode(op.function_id(), op.output(), op.inputs()).unwrap().as_bytes().to_vec()
}

proptest! {
    #[test]
    fn every_op_round_trips((id, output, inputs) in op()) {
        let words = encode(id, output.as_ref(), &inputs).unwrap();
        let bytes = words.as_bytes();
        prop_assert_eq!(bytes.len(), usize::from(num_payloads(inputs.len() as u8)) * WORD_LEN);

        let decoded = decode(bytes, &[id][..]).unwrap();
        prop_assert_eq!(decoded.function_id(), id);
        prop_assert_eq!(decoded.output(), output.as_ref());
        prop_assert_eq!(decoded.inputs(), &inputs[..]);
        prop_assert_eq!(decoded.encoded_len(), bytes.len());
    }

    #[test]
    fn a_changed_byte_is_rejected_unless_it_is_payload_data(
        (id, output, inputs) in op(),
        position in any::<prop::sample::Index>(),
        xor in 1u8..,
    ) {
        let mut bytes = encode(id, output.as_ref(), &inputs).unwrap().as_bytes().to_vec();
        let position = position.index(bytes.len());
        bytes[position] ^= xor;

        let in_descriptor = position >= WORD_LEN && position % WORD_LEN >= 0x10;
        let in_function_id = position == 0x0E && bytes[0x0E] < 254;
        match decode(&bytes, &accept_all) {
            Ok(decoded) => {
                prop_assert!(in_descriptor || in_function_id, "accepted a change at {}", position);
                prop_assert_eq!(reencode(&decoded), bytes);
            }
            Err(error) => {
                prop_assert!(!in_descriptor && !in_function_id, "{} at {}", error, position);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_accepted_ones_are_canonical(
        bytes in vec(any::<u8>(), 0..=12 * WORD_LEN),
    ) {
        if let Ok(decoded) = decode(&bytes, &accept_all) {
            prop_assert_eq!(reencode(&decoded), bytes);
        }
    }

    #[test]
    fn near_valid_chains_never_panic_and_accepted_ones_are_canonical(
        num_arguments in 0u8..=MAX_INPUTS as u8 + 1,
        raw_id in any::<u8>(),
        count_skew in prop_oneof![Just(0i32), -1i32..=1],
        word_skew in prop_oneof![Just(0i32), -1i32..=1],
        descriptor in descriptor(),
    ) {
        // A header and payloads that are right but for a skewed count, a missing or
        // extra word, too many arguments or a bad id: exercises the count and id checks
        // far more often than random bytes do, with about a third of cases valid.
        let words = i32::from(num_payloads(num_arguments));
        let mut bytes = vec![0u8; WORD_LEN];
        bytes[0] = 0x85;
        bytes[0x0C..0x0E].copy_from_slice(&((words + count_skew).max(0) as u16).to_le_bytes());
        bytes[0x0E] = raw_id;
        bytes[0x0F] = num_arguments;
        let payloads = (words - 1 + word_skew).max(0) as usize;
        for k in 0..payloads {
            let mut word = [0u8; WORD_LEN];
            word[0] = 0x86;
            word[0x0C..0x0E].copy_from_slice(&(k as u16 + 1).to_le_bytes());
            word[0x0F] = u8::from(k == 0) | (u8::from(k + 1 == payloads) << 1);
            word[0x10..].copy_from_slice(&descriptor);
            bytes.extend_from_slice(&word);
        }
        let valid = count_skew == 0 && payloads as i32 == words - 1
            && usize::from(num_arguments) <= MAX_INPUTS && raw_id < 254;
        match decode(&bytes, &accept_all) {
            Ok(decoded) => {
                prop_assert!(valid);
                prop_assert_eq!(reencode(&decoded), bytes);
            }
            Err(error) => prop_assert!(!valid, "{}", error),
        }
    }
}
