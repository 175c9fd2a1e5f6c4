//! The DMA transfers a core queues, read from its stores into its descriptors: shared
//! by the profile (bytes moved, what a transfer wrote) and the checks (whether a
//! transfer reads and writes what its op was given).
//!
//! The layout is the runtime's (`runtime/data_transfer/dma.rs`, docs/abi/data_transfer.md)
//! and `neuroncustomop_wire::job::dma_queue_offsets`: core `c`'s m2s queue (what to
//! read) is at `c *` [`QUEUE_STRIDE`] in the SoC's queue window, its s2m queue (where
//! to write) half a stride on; a queue is a 16-byte header, then 16-byte descriptors
//! whose words at offsets 0 and 4 are the transfer's address and length (device
//! addresses: the core's own).

use neuroncustomop_wire::job::DMA_QUEUE_STRIDE as QUEUE_STRIDE;

/// Which side of a transfer a descriptor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// m2s: the bytes the engine reads.
    Read,
    /// s2m: the bytes the engine writes.
    Write,
}

/// One side of one queued transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transfer {
    pub(crate) side: Side,
    pub(crate) address: u32,
    pub(crate) len: u32,
}

/// What a core has written of its next descriptors so far: per side, the address and
/// the length, until both are there.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Descriptors {
    pending: [(Option<u32>, Option<u32>); 2],
}

impl Descriptors {
    /// A 32-bit store of `value` at `offset` bytes into the core's queues (from its m2s
    /// queue's start): the transfer side whose descriptor it completes, if any.
    pub(crate) fn store(&mut self, offset: u32, value: u32) -> Option<Transfer> {
        let half = QUEUE_STRIDE / 2;
        let (side, within) = if offset % QUEUE_STRIDE < half {
            (Side::Read, offset % QUEUE_STRIDE)
        } else {
            (Side::Write, offset % QUEUE_STRIDE - half)
        };
        // The header, or a descriptor's sequence and flags words.
        if within < 16 || within % 16 >= 8 {
            return None;
        }
        let slot = &mut self.pending[side as usize];
        if within.is_multiple_of(16) {
            slot.0 = Some(value);
        } else {
            slot.1 = Some(value);
        }
        let (Some(address), Some(len)) = *slot else { return None };
        *slot = (None, None);
        Some(Transfer { side, address, len })
    }
}
