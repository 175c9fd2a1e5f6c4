//! Red zones: bytes after a block that no block is given, so an overrun of the block
//! lands there and not in the next live block.
//!
//! The heaps tile their arenas with no gap, and a checker that sees addresses (the
//! simulated device's memory checks, in its QEMU plugin) cannot tell an overrun of one
//! block from an access to the block after it. So every `malloc`-family,
//! `neuron_*_malloc`, `tcm_malloc` and Rust global-allocator block asks its heap for
//! `bytes()` more than it needs:
//! - under the host tier's ASan build (feature `host-asan`): one granule, always
//!   (`sanitize.rs` poisons it);
//! - on the device: the word `NEURON_CHECKED_REDZONE`, which is 0 in the image as
//!   linked (no red zone: the real device and unchecked calls) and which the host sets
//!   to one granule in its copy of the image for a checked session;
//! - on the plain host (unit tests, the host tier without ASan): none.
//!
//! The journal records each block's requested size, so the checks see an access to its
//! red zone as past its end.
//!
//! # What a red zone must not change
//!
//! A checked call must fail no allocation that the same unchecked call makes:
//! - in the HBM and dataram heaps, an allocation with its red zone that the heap cannot
//!   make is retried without one;
//! - the TCM pool is [`tcm_room`] bytes larger in a checked session (taken from the
//!   dataram heap), and at most [`TCM_REDZONES`] `tcm_malloc` blocks of an op get a red
//!   zone there (under ASan too), so the promised 16 KiB stay whole: two 8 KiB
//!   `tcm_malloc`s still fit.
//!
//! Limits: in the HBM and dataram heaps the red zones of earlier blocks take room (64
//! bytes each) the heap has no extra of: a kernel that fills one of them to within that
//! may see an allocation fail in a checked call only. A block past the TCM limit of an
//! op, or allocated when its red zone did not fit, has none, and an overrun of it into
//! the next live block is not seen. The stream accessors' TCM buffers get no red zone
//! (four fill the pool); the runtime writes those itself.
//!
//! Cost: reading the word, one load and an add per allocation, checked or not (the
//! counts of a checked and an unchecked call differ only by where blocks land).

use super::HeapError;
use core::ptr::NonNull;

/// Blocks of one op's TCM pool given a red zone in a checked session.
pub const TCM_REDZONES: usize = 16;

/// The red zone in bytes on the device: 0 as linked; the host sets it to one granule in
/// its copy of the image for a checked session (`qemu/machine`, `findings::checked_images`).
///
/// Not a `CoreLocal` (`crate::global`): the runtime only reads it, and it is fixed before
/// the core first runs. An atomic so the compiler reads the word and does not fold its
/// initial value; in `.data` (not `.bss`) so the image file holds the bytes the host
/// patches.
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
#[unsafe(link_section = ".data.neuron_checked_redzone")]
pub static NEURON_CHECKED_REDZONE: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

/// The bytes every block asks for after its requested size (module docs).
#[inline(always)]
pub(super) fn bytes() -> usize {
    #[cfg(feature = "host-asan")]
    return super::GRANULE;
    #[cfg(all(not(feature = "host-asan"), target_os = "none"))]
    return NEURON_CHECKED_REDZONE.load(core::sync::atomic::Ordering::Relaxed) as usize;
    #[cfg(all(not(feature = "host-asan"), not(target_os = "none")))]
    return 0;
}

/// How many more bytes the TCM pool spans in this session: room for [`TCM_REDZONES`]
/// red zones on the device when they are on, none otherwise (under ASan the pool is
/// not enlarged: the host tier promises no more than ASan does).
#[inline(always)]
pub fn tcm_room() -> usize {
    #[cfg(all(not(feature = "host-asan"), target_os = "none"))]
    return bytes() * TCM_REDZONES;
    #[cfg(not(all(not(feature = "host-asan"), target_os = "none")))]
    return 0;
}

/// A block of `size` bytes from `allocate` (given the size to ask for), followed by a
/// red zone when there is one and the heap has room for it; else as asked. Whether the
/// block has its red zone, too.
#[inline(always)]
pub(super) fn allocate(
    size: usize,
    mut allocate: impl FnMut(usize) -> Result<NonNull<u8>, HeapError>,
) -> (Result<NonNull<u8>, HeapError>, bool) {
    let mut ask = size.saturating_add(bytes());
    // One call site, so the allocator's call is not copied into each caller twice (the
    // runtime's text size is held: qemu/tests/text_size.rs).
    loop {
        let block = allocate(ask);
        if ask == size || !matches!(block, Err(HeapError::OutOfMemory | HeapError::SizeOverflow)) {
            return (block, ask != size);
        }
        ask = size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_host_adds_no_red_zone_and_asks_once() {
        let mut asked = std::vec::Vec::new();
        let (block, zoned) = allocate(100, |ask| {
            asked.push(ask);
            Ok(NonNull::dangling())
        });
        assert!(block.is_ok() && !zoned);
        assert_eq!(asked, [100 + bytes()]);
        assert_eq!(tcm_room(), 0);
    }
}
