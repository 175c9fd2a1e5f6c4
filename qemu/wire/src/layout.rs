//! Byte offsets and flag bits of the two 64-byte words. Multi-byte fields are
//! little-endian, like both the host and the Xtensa cores.
//!
//! Every byte not named here is reserved: the encoder writes 0 and the decoder rejects
//! anything else, so a corrupted or misaligned word is caught rather than misread.

use core::ops::Range;

use crate::{DESCRIPTOR_LEN, WORD_LEN};

/// Offset of the opcode byte in both words (0x85 header, 0x86 payload).
pub const OPCODE: usize = 0x00;

/// Header: offset of `num_payloads`, a u16 counting every word of the chain.
pub const HEADER_NUM_PAYLOADS: usize = 0x0C;

/// Header: offset of the [`FunctionId`](crate::FunctionId) byte.
pub const HEADER_FUNCTION_ID: usize = 0x0E;

/// Header: offset of `num_arguments` (N), the number of input arguments.
pub const HEADER_NUM_ARGUMENTS: usize = 0x0F;

/// Header: the reserved bytes (the real compiler's instruction-common fields before
/// +0x0C, and its reserved byte +0x10 and PC/branch-hint tail after it).
pub const HEADER_RESERVED: [Range<usize>; 2] = [0x01..0x0C, 0x10..WORD_LEN];

/// Payload: offset of the word's position in the chain, a u16 (the header is 0, the
/// output 1, input k is k + 2), so a dropped, repeated or reordered word is detected.
pub const PAYLOAD_INDEX: usize = 0x0C;

/// Payload: offset of the flag byte ([`FLAG_OUTPUT`], [`FLAG_LAST`]).
pub const PAYLOAD_FLAGS: usize = 0x0F;

/// Payload: offset of the 48-byte tensor descriptor, which fills the rest of the word.
pub const PAYLOAD_DESCRIPTOR: usize = 0x10;

/// Payload: the reserved bytes.
pub const PAYLOAD_RESERVED: [Range<usize>; 2] = [0x01..0x0C, 0x0E..0x0F];

/// Payload flag: this word carries the op's output (set on exactly the first payload).
pub const FLAG_OUTPUT: u8 = 0x01;

/// Payload flag: this word is the last of the chain (set on exactly the last payload).
pub const FLAG_LAST: u8 = 0x02;

const _: () = assert!(PAYLOAD_DESCRIPTOR + DESCRIPTOR_LEN == WORD_LEN);
const _: () = assert!(HEADER_NUM_ARGUMENTS == HEADER_FUNCTION_ID + 1);
const _: () = assert!(HEADER_FUNCTION_ID == HEADER_NUM_PAYLOADS + 2);
const _: () = assert!(PAYLOAD_FLAGS < PAYLOAD_DESCRIPTOR);
