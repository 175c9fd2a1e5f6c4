//! The queue protocol against a stand-in engine on another thread.

use super::*;
use core::ptr::read_volatile;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::vec::Vec;

/// How the stand-in engine behaves.
#[derive(Clone, Copy, PartialEq)]
enum Engine {
    /// Transfers in queue order.
    InOrder,
    /// Each batch it finds, last transfer first.
    Reversed,
    /// Never completes anything, and says so (`stopped`).
    Stuck,
}

/// A queue window (two queues, 4 KiB apart), an arena for the data (descriptor
/// addresses are offsets into it), and an engine serving them until dropped.
struct Device {
    window: Vec<u32>,
    arena: Vec<u8>,
    stop: Arc<AtomicBool>,
    engine: Option<std::thread::JoinHandle<()>>,
}

const M2S: u32 = 0;
const S2M: u32 = 4096;

struct SendPtr(usize);
// SAFETY: the window outlives the engine thread (joined in Drop before it is freed).
unsafe impl Send for SendPtr {}

impl Device {
    fn new(mode: Engine, arena_len: usize) -> Self {
        let mut window = std::vec![0u32; 8192 / 4];
        let mut arena = std::vec![0u8; arena_len];
        let base = SendPtr(window.as_mut_ptr() as usize);
        let data = SendPtr(arena.as_mut_ptr() as usize);
        let stop = Arc::new(AtomicBool::new(false));
        let stop_engine = Arc::clone(&stop);
        let engine = std::thread::spawn(move || serve(base, data, mode, &stop_engine));
        Self { window, arena, stop, engine: Some(engine) }
    }

    fn queues(&mut self) -> Queues {
        // SAFETY: the window holds both queues and lives as long as the Device.
        let queues = unsafe { Queues::new(self.window.as_mut_ptr() as usize, M2S, S2M) }.expect("queues");
        Queues { address_base: self.arena.as_ptr() as usize, ..queues }
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.engine.take().expect("engine").join().expect("engine thread");
    }
}

fn serve(base: SendPtr, data: SendPtr, mode: Engine, stop: &AtomicBool) {
    let (base, data) = (base.0, data.0);
    let header = |offset: u32| (base + offset as usize) as *mut DmaQueueHeader;
    let (m2s, s2m) = (header(M2S), header(S2M));
    let mut seen = 0u32;
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: the window outlives this thread; the core writes `produced` and the
        // descriptors before it, with fences between.
        let produced =
            unsafe { std::sync::atomic::AtomicU32::from_ptr(&raw mut (*m2s).produced) }.load(Ordering::Acquire);
        std::sync::atomic::fence(Ordering::SeqCst);
        if mode == Engine::Stuck {
            for queue in [m2s, s2m] {
                // SAFETY: as above; `stopped` is the engine's to write.
                unsafe { std::sync::atomic::AtomicU32::from_ptr(&raw mut (*queue).stopped) }
                    .store(1, Ordering::Release);
            }
        }
        if produced == seen || mode == Engine::Stuck {
            std::hint::spin_loop();
            continue;
        }
        let mut batch: Vec<u32> = (seen..produced).collect();
        if mode == Engine::Reversed {
            batch.reverse();
        }
        for sequence in batch {
            let slot = sequence % QUEUE_SLOTS;
            // SAFETY: as above; slots of queued transfers are the engine's until done.
            unsafe {
                let read = read_volatile(Queues::descriptor(m2s, slot));
                let write = read_volatile(Queues::descriptor(s2m, slot));
                assert_eq!((read.sequence, write.sequence, read.len), (sequence, sequence, write.len));
                let (from, to) = (data + read.address as usize, data + write.address as usize);
                core::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, read.len as usize);
                for (queue, descriptor) in [(m2s, read), (s2m, write)] {
                    write_volatile(
                        Queues::descriptor(queue, slot),
                        DmaDescriptor { flags: descriptor.flags | DESCRIPTOR_DONE, ..descriptor },
                    );
                }
            }
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        for queue in [m2s, s2m] {
            // SAFETY: as above.
            unsafe { std::sync::atomic::AtomicU32::from_ptr(&raw mut (*queue).completed) }
                .store(produced, Ordering::Release);
        }
        seen = produced;
    }
}

#[test]
fn overlapping_or_unset_queues_are_not_configured() {
    let mut window = std::vec![0u32; 1024];
    let base = window.as_mut_ptr() as usize;
    for (m2s, s2m) in [(0, 0), (0, 16), (64, 0)] {
        // SAFETY: the window is valid for both (rejected) queues.
        assert_eq!(unsafe { Queues::new(base, m2s, s2m) }.err(), Some(DmaError::NotConfigured));
    }
}

#[test]
fn copy_without_queues_falls_back_to_the_cpu_and_says_so() {
    let src: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
    let mut dst = std::vec![0u8; 300];
    // SAFETY: both buffers hold 300 bytes and do not overlap.
    unsafe { copy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), 300) };
    assert_eq!(dst, src);
    assert_eq!(last_error(), Some(DmaError::NotConfigured));
    assert_eq!(neuron_dma_status(), 1);
}

#[test]
fn the_engine_copies_in_order_and_out_of_order() {
    // Three batches: more transfers than slots, and a short tail.
    let len = MAX_TRANSFER * (QUEUE_SLOTS as usize * 2 + 1) + 123;
    for mode in [Engine::InOrder, Engine::Reversed] {
        let mut device = Device::new(mode, 2 * len + 1);
        let queues = device.queues();
        let (src, dst) = device.arena.split_at_mut(len);
        // The pattern repeats every 251 * 256 bytes, which does not divide MAX_TRANSFER,
        // so no two transfers carry the same bytes. Computed for one period and copied
        // for the rest: a byte loop over the 4 MiB takes minutes under Miri.
        const PERIOD: usize = 251 * 256;
        for (i, byte) in src[..PERIOD].iter_mut().enumerate() {
            *byte = (i * 7 + i / 251) as u8;
        }
        for at in (PERIOD..len).step_by(PERIOD) {
            src.copy_within(..PERIOD.min(len - at), at);
        }
        let dst = &mut dst[1..]; // an odd destination
        // SAFETY: both ranges hold `len` bytes of the arena and do not overlap.
        unsafe { queues.copy(dst.as_mut_ptr(), src.as_ptr(), len) }.expect("engine copy");
        assert!(*dst == *src, "{} bytes differ", dst.iter().zip(src.iter()).filter(|(a, b)| a != b).count());
    }
}

#[test]
fn an_engine_that_has_stopped_is_said_so() {
    let mut device = Device::new(Engine::Stuck, 128);
    let queues = device.queues();
    let (src, dst) = device.arena.split_at_mut(64);
    // SAFETY: both ranges hold 64 bytes of the arena and do not overlap.
    let result = unsafe { queues.copy(dst.as_mut_ptr(), src.as_ptr(), 64) };
    assert_eq!(result, Err(DmaError::Stopped));
}
