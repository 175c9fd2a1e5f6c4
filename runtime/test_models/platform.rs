//! A fake platform for the pull stream (`Invocation::with_platform`): translate maps
//! windows of framework addresses onto host buffers, a 16 KiB TCM pool hands out host
//! blocks and tracks them, and every `begin_op` / `end_op` / translation is counted.
//! The state is thread-local (each test, and each fuzzing thread, has its own).

use core::cell::RefCell;
use std::collections::BTreeMap;
use std::vec;
use std::vec::Vec;

use crate::translate::RangeError;
use crate::wrapper_api::Platform;

/// The fake TCM pool's size, as the device's.
pub const TCM_POOL: usize = 16 * 1024;

/// One translate window: framework `base .. base + len` onto host `words`, starting
/// `skew` bytes into them (to make misaligned device addresses).
pub struct Window {
    /// First framework address.
    pub base: u64,
    /// The host bytes, 8-aligned.
    pub words: Vec<u64>,
    /// Where in `words` the window starts.
    pub skew: usize,
    /// Bytes in the window.
    pub len: usize,
}

/// Everything the fake platform holds and has seen.
#[derive(Default)]
pub struct State {
    /// The translate windows, searched in order.
    pub windows: Vec<Window>,
    /// Live TCM blocks: address -> (backing store, size).
    pub tcm: BTreeMap<usize, (Vec<u64>, usize)>,
    /// TCM blocks handed out so far.
    pub tcm_allocs: usize,
    /// `first_call` of every `begin_op`, and the live TCM blocks at that moment.
    pub begin_ops: Vec<(bool, usize)>,
    /// `end_op` calls.
    pub end_ops: usize,
    /// Calls of translate: what setup resolved rather than reused.
    pub translations: usize,
}

impl State {
    /// Maps `len` bytes at framework address `base`, `skew` bytes into a zeroed
    /// 8-aligned host buffer; returns the host address of `base`.
    pub fn map_at(&mut self, base: u64, len: usize, skew: usize) -> *mut u8 {
        let mut words = vec![0u64; (len + skew).div_ceil(8).max(1)];
        let host = words.as_mut_ptr().cast::<u8>().wrapping_add(skew);
        self.windows.push(Window { base, words, skew, len });
        host
    }

    /// The host address of the `len` bytes at `addr` (0 counts as 1), as the fake
    /// `translate_range` answers without counting a call: the first window holding
    /// `addr` must hold them all.
    pub fn lookup(&mut self, addr: u64, len: usize) -> Result<*mut u8, RangeError> {
        for w in &mut self.windows {
            if addr >= w.base && addr - w.base < w.len as u64 {
                let offset = (addr - w.base) as usize;
                if len.max(1) > w.len - offset {
                    return Err(RangeError::OutsideWindow);
                }
                return Ok(w.words.as_mut_ptr().cast::<u8>().wrapping_add(w.skew + offset));
            }
        }
        Err(RangeError::Miss)
    }
}

std::thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Runs `f` on this thread's fake platform.
pub fn with<R>(f: impl FnOnce(&mut State) -> R) -> R {
    STATE.with_borrow_mut(f)
}

/// Forgets every window, block and count of this thread's fake platform.
pub fn reset() {
    with(|state| *state = State::default());
}

/// The platform's `translate_range`: [`State::lookup`], counted.
fn translate(addr: u64, len: usize) -> Result<*mut u8, RangeError> {
    with(|state| {
        state.translations += 1;
        state.lookup(addr, len)
    })
}

fn tcm_alloc(size: usize) -> *mut u8 {
    with(|state| {
        let live: usize = state.tcm.values().map(|(_, size)| size).sum();
        if live + size > TCM_POOL {
            return core::ptr::null_mut();
        }
        let mut words = vec![0xA5A5_A5A5_A5A5_A5A5u64; size.div_ceil(8).max(1)];
        let ptr = words.as_mut_ptr().cast::<u8>();
        state.tcm.insert(ptr as usize, (words, size));
        state.tcm_allocs += 1;
        ptr
    })
}

fn tcm_release(ptr: *mut u8) {
    with(|state| assert!(state.tcm.remove(&(ptr as usize)).is_some(), "release of a non-live TCM block"));
}

fn begin_op(first_call: bool) {
    with(|state| {
        let live = state.tcm.len();
        state.begin_ops.push((first_call, live));
    });
}

fn end_op() {
    with(|state| state.end_ops += 1);
}

/// The fake platform. Its translate maps each window linearly onto its live host
/// buffer and answers the same until a window is added; its TCM blocks are separate
/// host buffers: what `Invocation::with_platform` asks of a platform, as long as no
/// window is removed while an invocation uses it.
pub const PLATFORM: Platform = Platform { translate: Some(translate), tcm_alloc, tcm_release, begin_op, end_op };
