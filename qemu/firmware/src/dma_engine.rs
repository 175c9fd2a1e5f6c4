//! The simulated DMA engine: a spare core that serves every library core's queues.
//!
//! It speaks the runtime's queue protocol (`neuroncustomop::data_transfer::dma`): for
//! each core of the job, whenever `produced` runs ahead of what it has served, it moves
//! the bytes of each new transfer (m2s descriptor: where to read; s2m: where to write),
//! marks both descriptors done and publishes `completed`, then pulses the board's wake
//! interrupt. Between passes that find nothing it sleeps. The job's `dma_mode` makes
//! it misbehave on purpose: complete out of order, or never (a stopped engine: it drops
//! what the cores queue and says so in their queues' `stopped`, so they copy by CPU
//! with no transfer of the engine's left to overwrite it later).

use crate::loader::{job, session_steps};
use core::ptr::{read_volatile, write_volatile};
use crate::board;
use neuroncustomop::arch::{memw, wait_for_interrupt};
use neuroncustomop::data_transfer::dma::{DESCRIPTOR_DONE, DMA_QUEUE_WINDOW, DmaDescriptor, DmaQueueHeader, QUEUE_SLOTS};
use neuroncustomop_wire::job::{CORES, DmaMode, dma_queue_offsets};

fn queue(offset: u32) -> *mut DmaQueueHeader {
    (DMA_QUEUE_WINDOW + offset as usize) as *mut DmaQueueHeader
}

fn descriptor(queue: *mut DmaQueueHeader, slot: u32) -> *mut DmaDescriptor {
    // In-bounds: `slot < QUEUE_SLOTS`, and the descriptors follow the header.
    queue.wrapping_add(1).cast::<DmaDescriptor>().wrapping_add(slot as usize)
}

/// Moves transfer `sequence` of one core and marks both its descriptors done.
///
/// # Safety
/// The core has queued `sequence` (its `produced` is past it) and not yet seen it done.
unsafe fn serve_one(m2s: *mut DmaQueueHeader, s2m: *mut DmaQueueHeader, sequence: u32) {
    let slot = sequence % QUEUE_SLOTS;
    // SAFETY: queued descriptors belong to the engine until marked done; their
    // addresses are the core's own buffers, which it leaves alone until then.
    unsafe {
        let read = read_volatile(descriptor(m2s, slot));
        let write = read_volatile(descriptor(s2m, slot));
        let len = read.len.min(write.len) as usize;
        for at in 0..len {
            let byte = read_volatile((read.address as usize + at) as *const u8);
            write_volatile((write.address as usize + at) as *mut u8, byte);
        }
        memw();
        for (queue, done) in [(m2s, read), (s2m, write)] {
            write_volatile(descriptor(queue, slot), DmaDescriptor { flags: done.flags | DESCRIPTOR_DONE, ..done });
        }
    }
}

/// The engine's sleep between passes that found nothing: from [`FIRST_NAP`] CCOUNT
/// ticks (1 µs) after work, doubling up to [`LONGEST_NAP`] (10 µs) while the cores may
/// still be copying, then [`IDLE_NAP`] (1 ms) once nothing came for [`IDLE_AFTER`]
/// passes (about 10 ms: a compute phase, or between ops), then [`DEEP_NAP`] (100 ms)
/// once nothing came for [`DEEP_AFTER`] passes (about 1 s: a session between jobs,
/// whose QEMU would otherwise take a few percent of a host CPU doing nothing). When the
/// session moves (a job published, an op started or ended: [`session_steps`]) a deep
/// nap ends (the pulse that announces it wakes the engine) and the naps go back to
/// [`IDLE_NAP`].
/// Nothing wakes the engine when a core queues a transfer (the runtime does not know
/// the board), so the nap is its latency: wall time only, as the sleeping costs no
/// instructions of the library's cores.
const FIRST_NAP: u32 = 40;
const LONGEST_NAP: u32 = 400;
const IDLE_NAP: u32 = 40_000;
const IDLE_AFTER: u32 = 1_000;
const DEEP_NAP: u32 = 4_000_000;
const DEEP_AFTER: u32 = IDLE_AFTER + 1_000;

/// Serves the cores of whatever job is in the job block, forever; after serving it
/// wakes the cores (a core waiting for its transfer sleeps until then).
pub fn run() -> ! {
    let mut served = [0u32; CORES];
    let mut nap = FIRST_NAP;
    let mut empty_passes = 0u32;
    let mut steps = session_steps();
    loop {
        // Re-read every pass: the session replaces the job between jobs.
        let Some(job) = job() else {
            wait_for_interrupt(DEEP_NAP);
            continue;
        };
        let mut worked = false;
        let mode = DmaMode::from_u32(job.dma_mode);
        for (core, served) in served.iter_mut().enumerate().take((job.cores as usize).min(CORES)) {
            let (m2s, s2m) = dma_queue_offsets(core as u32);
            let (m2s, s2m) = (queue(m2s), queue(s2m));
            // SAFETY: the core writes `produced` after its descriptors (memw between).
            let produced = unsafe { read_volatile(&raw const (*m2s).produced) };
            if mode == DmaMode::Stuck {
                // Dropped, never made: not even when a later job's mode serves again.
                *served = produced;
                for queue in [m2s, s2m] {
                    // SAFETY: `stopped` is the engine's to write (the loader zeroes it
                    // before each op, while this core's queues are idle).
                    unsafe { write_volatile(&raw mut (*queue).stopped, 1) };
                }
                continue;
            }
            if produced == *served {
                continue;
            }
            memw();
            let count = produced.wrapping_sub(*served);
            for i in 0..count {
                let sequence = match mode {
                    DmaMode::Reversed => produced.wrapping_sub(1 + i),
                    _ => served.wrapping_add(i),
                };
                // SAFETY: `sequence` is queued and not yet done.
                unsafe { serve_one(m2s, s2m, sequence) };
            }
            memw();
            for queue in [m2s, s2m] {
                // SAFETY: `completed` is the engine's to write.
                unsafe { write_volatile(&raw mut (*queue).completed, produced) };
            }
            *served = produced;
            worked = true;
        }
        let moved = session_steps();
        if worked {
            board::wake_all_cores();
            (nap, empty_passes) = (FIRST_NAP, 0);
        } else {
            if moved != steps {
                // Out of the deep naps, back to the 1 ms ones only: the short naps cost
                // a host CPU for their 10 ms, which an op that makes no transfer (most
                // of a call's time) would pay in wall time.
                empty_passes = empty_passes.min(IDLE_AFTER + 1);
            }
            empty_passes = empty_passes.saturating_add(1);
            wait_for_interrupt(match empty_passes {
                passes if passes > DEEP_AFTER => DEEP_NAP,
                passes if passes > IDLE_AFTER => IDLE_NAP,
                _ => nap,
            });
            nap = (nap * 2).min(LONGEST_NAP);
        }
        steps = moved;
    }
}
