//! The `DMA` backend: copies through the device's DMA engine.
//!
//! `entry_func` got two byte offsets from the host (`get_dma_queue`): where this core's
//! m2s (memory-to-stream: what to read) and s2m (stream-to-memory: where to write)
//! queues sit in the SoC's DMA queue window, [`DMA_QUEUE_WINDOW`]. Each queue is a
//! [`DmaQueueHeader`] followed by [`QUEUE_SLOTS`] 16-byte [`DmaDescriptor`]s; the layout is
//! `docs/abi/data_transfer.md`.
//!
//! A copy is cut into transfers of at most [`MAX_TRANSFER`] bytes. Transfer `k` is the
//! pair (m2s slot `k % QUEUE_SLOTS`, s2m slot `k % QUEUE_SLOTS`): the core fills both
//! descriptors, then bumps both queues' `produced` (after a `memw`, so the engine never
//! sees a count ahead of its descriptors). The engine moves the bytes, marks both
//! descriptors [`DESCRIPTOR_DONE`] and bumps `completed`, in any order it likes. The core
//! waits until every transfer it queued is done, asleep (`waiti`) between looks: woken
//! by an edge interrupt from the engine, or after [`WAIT_TICKS`] at the latest
//! (`arch::wait_for_interrupt`).
//!
//! The wait has no timeout: a transfer the engine holds is one it will make, so a copy
//! by the CPU after giving up on it would later be overwritten by the engine's (under
//! a loaded host a simulated engine was once 1 s late, and 3,550 elements a relu had
//! rectified in place went back to their input values). An engine that will serve
//! nothing says so in its queues' [`DmaQueueHeader::stopped`].
//!
//! Nothing is lost when the engine fails: if the queues are not configured (no
//! `entry_func` yet) or the engine has stopped, the copy is done by the CPU instead, and
//! the failure stays in [`last_error`] (`neuron_dma_status` from C).

use crate::arch::{memw, wait_for_interrupt};
use core::ffi::{c_int, c_void};
use core::mem::{offset_of, size_of};
use core::ptr::write_volatile;
use core::sync::atomic::{AtomicU32, Ordering};

/// Where the SoC's DMA queues live; `get_dma_queue`'s offsets are relative to it.
pub const DMA_QUEUE_WINDOW: usize = 0x7E00_0000;
/// Descriptors per queue.
pub const QUEUE_SLOTS: u32 = 32;
/// The most bytes one descriptor moves.
pub const MAX_TRANSFER: usize = 64 * 1024;
/// The longest the core sleeps between two looks at the queues while it waits: 25 µs
/// of the 40 MHz CCOUNT. Short next to a 64 KiB transfer, long next to the few
/// instructions a look costs.
pub const WAIT_TICKS: u32 = 1_000;
/// [`DmaDescriptor::flags`]: the core has filled the descriptor.
pub const DESCRIPTOR_VALID: u32 = 1 << 0;
/// [`DmaDescriptor::flags`]: the engine has finished it.
pub const DESCRIPTOR_DONE: u32 = 1 << 1;

/// The head of one queue. The core writes `produced`, the engine `completed`; both
/// count transfers since boot and wrap at 2³². Both are accessed as atomics (release
/// to publish, acquire to observe): plain `s32i`/`l32i` plus the `memw` the core issues
/// anyway, and race-free in Rust's model when the engine is a thread (host tests).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaQueueHeader {
    /// Transfers the core has queued.
    pub produced: u32,
    /// Transfers the engine has finished.
    pub completed: u32,
    /// [`QUEUE_SLOTS`], written by the core when it first uses the queue.
    pub slots: u32,
    /// Nonzero when the engine will serve none of the transfers queued and not yet
    /// completed (it has stopped, and says so); written by the engine (and zeroed by
    /// the loader before each op).
    pub stopped: u32,
}

/// One side of one transfer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaDescriptor {
    /// m2s: the first byte to read; s2m: the first byte to write.
    pub address: u32,
    /// Bytes (the same on both sides of a transfer), at most [`MAX_TRANSFER`].
    pub len: u32,
    /// The transfer's number: its `produced` count before it was queued.
    pub sequence: u32,
    /// [`DESCRIPTOR_VALID`] (core), [`DESCRIPTOR_DONE`] (engine).
    pub flags: u32,
}

/// Bytes of one queue: its header and its descriptors.
pub const QUEUE_BYTES: usize = size_of::<DmaQueueHeader>() + QUEUE_SLOTS as usize * size_of::<DmaDescriptor>();

const _: () = {
    assert!(size_of::<DmaQueueHeader>() == 16);
    assert!(offset_of!(DmaQueueHeader, produced) == 0);
    assert!(offset_of!(DmaQueueHeader, completed) == 4);
    assert!(offset_of!(DmaQueueHeader, slots) == 8);
    assert!(offset_of!(DmaQueueHeader, stopped) == 12);
    assert!(size_of::<DmaDescriptor>() == 16);
    assert!(offset_of!(DmaDescriptor, address) == 0);
    assert!(offset_of!(DmaDescriptor, len) == 4);
    assert!(offset_of!(DmaDescriptor, sequence) == 8);
    assert!(offset_of!(DmaDescriptor, flags) == 12);
    assert!(QUEUE_BYTES == 528);
};

/// Why a copy did not go through the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaError {
    /// No usable queues: `entry_func` has not run, or gave two overlapping queues.
    NotConfigured,
    /// The engine has stopped: it will not make the transfers
    /// ([`DmaQueueHeader::stopped`]).
    Stopped,
    /// An address does not fit the engine's 32-bit descriptors.
    AddressRange,
}

impl DmaError {
    /// The code `neuron_dma_status` reports; 0 is success.
    pub const fn code(self) -> c_int {
        match self {
            Self::NotConfigured => 1,
            Self::Stopped => 2,
            Self::AddressRange => 3,
        }
    }
}

/// This core's two queues.
#[derive(Clone, Copy, Debug)]
pub struct Queues {
    m2s: *mut DmaQueueHeader,
    s2m: *mut DmaQueueHeader,
    /// What descriptor addresses are relative to: 0 on the device, where the engine
    /// sees the core's 32-bit address space; a host test's arena otherwise.
    address_base: usize,
}

impl Queues {
    /// The queues at `window + m2s_offset` and `window + s2m_offset`.
    ///
    /// # Errors
    /// [`DmaError::NotConfigured`] when the two overlap (`entry_func` never ran: both 0).
    ///
    /// # Safety
    /// Both queues are memory only this core and the engine use, valid for
    /// [`QUEUE_BYTES`] each and 4-byte aligned, for as long as the value is used.
    pub unsafe fn new(window: usize, m2s_offset: u32, s2m_offset: u32) -> Result<Self, DmaError> {
        if m2s_offset.abs_diff(s2m_offset) < QUEUE_BYTES as u32
            || !m2s_offset.is_multiple_of(4)
            || !s2m_offset.is_multiple_of(4)
        {
            return Err(DmaError::NotConfigured);
        }
        let queue = |offset: u32| (window + offset as usize) as *mut DmaQueueHeader;
        let queues = Self { m2s: queue(m2s_offset), s2m: queue(s2m_offset), address_base: 0 };
        for header in [queues.m2s, queues.s2m] {
            // SAFETY: the header is this core's (the function's contract).
            unsafe { write_volatile(&raw mut (*header).slots, QUEUE_SLOTS) };
        }
        Ok(queues)
    }

    /// Descriptor `slot` of the queue at `header`.
    fn descriptor(header: *mut DmaQueueHeader, slot: u32) -> *mut DmaDescriptor {
        // SAFETY: (the arithmetic) `slot < QUEUE_SLOTS`, inside the queue's bytes.
        unsafe { header.add(1).cast::<DmaDescriptor>().add(slot as usize) }
    }

    /// Copies `len` bytes from `src` to `dst` through the engine and waits for it.
    ///
    /// # Errors
    /// [`DmaError::Stopped`] if the engine has stopped (the bytes at `dst` are then
    /// unspecified, and no transfer is left to the engine), [`DmaError::AddressRange`] for an address the engine's
    /// 32-bit descriptors cannot hold.
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `len` bytes, not overlapping, and not
    /// touched by anything else until this returns.
    pub unsafe fn copy(&self, dst: *mut u8, src: *const u8, len: usize) -> Result<(), DmaError> {
        let address = |p: usize| {
            p.checked_sub(self.address_base).and_then(|at| u32::try_from(at).ok()).ok_or(DmaError::AddressRange)
        };
        let (mut dst_at, mut src_at) = (address(dst as usize)?, address(src as usize)?);
        address(dst as usize + len)?;
        address(src as usize + len)?;
        let mut left = len;
        while left > 0 {
            // SAFETY: the queues are this core's (`new`'s contract).
            let first = unsafe { AtomicU32::from_ptr(&raw mut (*self.m2s).produced) }.load(Ordering::Relaxed);
            let mut queued = 0;
            while left > 0 && queued < QUEUE_SLOTS {
                let step = left.min(MAX_TRANSFER);
                let sequence = first.wrapping_add(queued);
                let slot = sequence % QUEUE_SLOTS;
                for (header, at) in [(self.m2s, src_at), (self.s2m, dst_at)] {
                    let descriptor = DmaDescriptor { address: at, len: step as u32, sequence, flags: DESCRIPTOR_VALID };
                    // SAFETY: as above; every earlier transfer is done, so the engine
                    // is not reading this slot.
                    unsafe { write_volatile(Self::descriptor(header, slot), descriptor) };
                }
                (src_at, dst_at) = (src_at + step as u32, dst_at + step as u32);
                left -= step;
                queued += 1;
            }
            let produced = first.wrapping_add(queued);
            memw();
            for header in [self.m2s, self.s2m] {
                // SAFETY: as above.
                unsafe { AtomicU32::from_ptr(&raw mut (*header).produced) }.store(produced, Ordering::Release);
            }
            memw();
            self.wait(produced)?;
        }
        Ok(())
    }

    /// Waits until both queues have `produced` transfers completed, or the engine says
    /// it has stopped; however long that takes (see the module's documentation).
    fn wait(&self, produced: u32) -> Result<(), DmaError> {
        loop {
            let done = [self.m2s, self.s2m].iter().all(|&header| {
                // SAFETY: as in `copy`; the engine writes `completed`, the core only reads it.
                unsafe { AtomicU32::from_ptr(&raw mut (*header).completed) }.load(Ordering::Acquire) == produced
            });
            if done {
                memw();
                return Ok(());
            }
            let stopped = [self.m2s, self.s2m].iter().any(|&header| {
                // SAFETY: as above; the engine writes `stopped`, the core only reads it.
                unsafe { AtomicU32::from_ptr(&raw mut (*header).stopped) }.load(Ordering::Acquire) != 0
            });
            if stopped {
                return Err(DmaError::Stopped);
            }
            // Sleep instead of spinning: an engine that raises an edge interrupt on
            // completion wakes the core at once; the timer bounds the sleep either way.
            wait_for_interrupt(WAIT_TICKS);
        }
    }
}

crate::global::core_local_state! {
    /// Runs `f` on this core's DMA state: its queues once set up, and the last error.
    fn with_dma: DmaState = DmaState { queues: None, last_error: None };
}

struct DmaState {
    queues: Option<Queues>,
    last_error: Option<DmaError>,
}

/// Sets this core's queues up from the offsets `entry_func` got (`customop_setup` does
/// this on every op; a copy before any does it too).
pub fn init_queue() -> Result<(), DmaError> {
    let (m2s, s2m) = crate::start_exit::dma_queue_offsets();
    let queues = soc_queues(m2s, s2m);
    with_dma(|state| {
        state.queues = queues.ok();
        queues.map(|_| ())
    })
}

/// The queues at the host's offsets in the SoC's queue window.
#[cfg(target_os = "none")]
fn soc_queues(m2s_offset: u32, s2m_offset: u32) -> Result<Queues, DmaError> {
    // SAFETY: the host gave these offsets to this core, for its queues in the window.
    unsafe { Queues::new(DMA_QUEUE_WINDOW, m2s_offset, s2m_offset) }
}

/// On the host there is no SoC queue window (tests build their own [`Queues`]).
#[cfg(not(target_os = "none"))]
fn soc_queues(_m2s_offset: u32, _s2m_offset: u32) -> Result<Queues, DmaError> {
    Err(DmaError::NotConfigured)
}

/// Why the last DMA copy fell back to the CPU, if it did.
pub fn last_error() -> Option<DmaError> {
    with_dma(|state| state.last_error)
}

/// C ABI: the last DMA copy's result: 0, or [`DmaError::code`] when it fell back to the CPU.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn neuron_dma_status() -> c_int {
    last_error().map_or(0, DmaError::code)
}

/// Copies `n` bytes from `src` to `dst` through the engine and returns `dst`, as every
/// backend of the dispatch table; when the engine cannot (see [`DmaError`]), the CPU
/// copies instead and the error is kept for [`neuron_dma_status`].
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes; the ranges do not overlap.
pub unsafe extern "C" fn copy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    if n == 0 {
        return dst;
    }
    if with_dma(|state| state.queues.is_none()) {
        let _ = init_queue();
    }
    let queues = with_dma(|state| state.queues.ok_or(DmaError::NotConfigured));
    // SAFETY: forwarded from this function's contract; the queues are this core's.
    let result = queues.and_then(|queues| unsafe { queues.copy(dst.cast(), src.cast(), n) });
    with_dma(|state| state.last_error = result.err());
    if result.is_err() {
        // SAFETY: forwarded from this function's contract.
        unsafe { crate::start_exit::memcpy(dst, src, n) };
    }
    dst
}

#[cfg(test)]
mod tests;
