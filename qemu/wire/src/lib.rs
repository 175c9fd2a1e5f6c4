//! The custom-op dispatch words: one `0x85` header word followed by `0x86` payload
//! words, each 64 bytes, exactly as the simulated compiler emits them and the
//! simulated device loader reads them.
//!
//! One op is a chain of 64-byte words:
//!
//! | word | opcode | carries |
//! |---|---|---|
//! | 0 | `0x85` | `num_payloads` (u16 LE, +0x0C), [`FunctionId`] (+0x0E), `num_arguments` N (+0x0F) |
//! | 1 | `0x86` | the output tensor's 48-byte descriptor (only when N ≥ 1) |
//! | 2 ..= N+1 | `0x86` | the N input descriptors, in argument order |
//!
//! `num_payloads` counts every word of the chain, the header included: N + 2 for
//! N ≥ 1, and 1 for N = 0 (the compiler emits the output and argument words only when
//! there is at least one argument, so an argument-less op is a lone header).
//! The byte-by-byte layout, the choices made where the notes were silent, and
//! hand-computed vectors are in `docs/abi/dispatch.md`.
//!
//! The crate is `no_std` and allocation-free, so the device-side loader firmware can
//! decode the words with the very code the host encodes them with.
//!
//! ```
//! use neuroncustomop_wire::{decode, encode, FunctionId};
//!
//! let relu = FunctionId::new(3).unwrap();
//! let output = [0xD0; 48]; // the runtime's NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR bytes
//! let input = [0x11; 48];
//! let words = encode(relu, Some(&output), &[input]).unwrap();
//! assert_eq!(words.as_bytes().len(), 3 * 64);
//!
//! let op = decode(words.as_bytes(), &[relu][..]).unwrap();
//! assert_eq!(op.function_id(), relu);
//! assert_eq!(op.output(), Some(&output));
//! assert_eq!(op.inputs(), &[input]);
//! ```
#![no_std]

pub mod checks;
mod decode;
mod encode;
mod error;
pub mod fault;
pub mod finding;
mod function_id;
pub mod job;
pub mod layout;
pub mod list;
pub mod math;
pub mod plugin;
pub mod report;
pub mod session;

pub use decode::{DecodedOp, decode, decode_prefix};
pub use encode::{EncodedOp, encode};
pub use error::WireError;
pub use function_id::{FunctionId, FunctionTable};

/// Opcode of the header word (`CUSTOM_OP_HEADER`); also the `opcode` (133) every
/// function carries in `ucode_lib.json`.
pub const HEADER_OPCODE: u8 = 0x85;

/// Opcode of a payload word (`CUSTOM_OP_PAYLOAD`).
pub const PAYLOAD_OPCODE: u8 = 0x86;

/// Size of every word of the chain, header and payloads alike.
pub const WORD_LEN: usize = 64;

/// Size of the tensor descriptor a payload word carries: the runtime's
/// `NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR`, opaque to this crate.
pub const DESCRIPTOR_LEN: usize = 48;

/// The raw bytes of one `NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR` descriptor, copied
/// verbatim between the payload word and the runtime's `ArgExtractor`.
pub type Descriptor = [u8; DESCRIPTOR_LEN];

/// The most input arguments (N) one op can carry: the 10 descriptor slots of the
/// runtime's `ArgExtractor`. The output does not take one: the runtime keeps it beside
/// the extractor (it is what `get_dst_tensor` returns).
pub const MAX_INPUTS: usize = 10;

/// The most words one op can take: the header, the output and [`MAX_INPUTS`] inputs.
pub const MAX_WORDS: usize = 2 + MAX_INPUTS;

/// `num_payloads` for an op with `num_inputs` input arguments: every word of the
/// chain, the header included (N + 2 for N ≥ 1, 1 for N = 0).
///
/// ```
/// assert_eq!(neuroncustomop_wire::num_payloads(0), 1);
/// assert_eq!(neuroncustomop_wire::num_payloads(1), 3);
/// ```
pub const fn num_payloads(num_inputs: u8) -> u16 {
    if num_inputs == 0 { 1 } else { num_inputs as u16 + 2 }
}
