//! Running a kernel on a stack in HBM: `switch_stack_or_call_wrapper`.
//!
//! Reference: `docs/abi/data_transfer.md` ("Stack switch").
//!
//! A kernel's stack is by default the core's small, fast local one; a kernel that needs
//! more (the vendor's `-DSTACK_SIZE=N`, up to [`MAX_STACK_SIZE`]) runs on a stack
//! allocated from the HBM heap. The switch itself is `neuron_stack_call`
//! (`runtime/arch/xtensa/stack_switch.S`): it spills every register window while the
//! stack pointer is still the original one, keeps a saved-context frame
//! ([`NeuronSwitchFrame`]) at the top of the new stack, calls the function there and
//! restores the original stack pointer.
//!
//! Overflow is detected, never left silent:
//! - the new stack has a guard zone of [`GUARD_SIZE`] bytes at its bottom, inside the
//!   stack's own memory, painted before the call and checked after it: a kernel that
//!   outgrew its stack wrote into it ([`StackError::Overflow`]);
//! - the saved-context frame at the top is checked too ([`StackError::FrameCorrupted`]);
//! - the original stack, when it is the image's own (`_stack_bottom .. _stack_top`),
//!   gets a guard of [`CALLER_GUARD_SIZE`] bytes at its bottom for the duration of the
//!   call, switched or not ([`StackError::CallerStackOverflow`]).
//!
//! A guard is a tripwire, not a wall: it reports the overflow after the fact, and a
//! single stack frame larger than the guard that writes nothing into it could jump it.
//!
//! On the host there is no stack to switch: `neuron_stack_call` is a stand-in that
//! writes the frame and calls the function on the current stack, so the layout, guard
//! and frame checks, allocation and statuses are tested here; the switch itself is
//! tested under QEMU (`qemu/firmware/src/bin/stack_check.rs`).

use crate::allocators::{self, GRANULE, HeapId};
use core::ffi::c_void;
use core::mem::offset_of;
use core::ops::Range;

/// The largest stack [`run_on_hbm_stack`] and `switch_stack_or_call_wrapper` give a
/// kernel: 400 KiB, the documented limit of `-DSTACK_SIZE`.
pub const MAX_STACK_SIZE: usize = 400 * 1024;
/// The smallest usable stack: room for a few frames of a windowed-ABI call chain.
pub const MIN_STACK_SIZE: usize = 1024;
/// The guard zone at the bottom of a switched stack, below its usable bytes.
pub const GUARD_SIZE: usize = 1024;
/// The guard at the bottom of the caller's stack, when that stack is known.
pub const CALLER_GUARD_SIZE: usize = 256;
/// Free bytes the caller's stack must have above its guard before a call: what the
/// switch itself takes there (its frame, the spill chain's five 48-byte frames, and
/// the Rust frames around them).
pub const CALLER_HEADROOM: usize = 1024;
/// Alignment of the new stack pointer (the windowed ABI's).
pub const STACK_ALIGN: usize = 16;
/// [`NeuronSwitchFrame::magic`]: "NSTK".
pub const SWITCH_FRAME_MAGIC: u32 = u32::from_le_bytes(*b"NSTK");
/// What every word of a guard holds until something overwrites it.
pub const GUARD_WORD: u32 = 0xA5C3_5A3C;

/// The saved-context frame: the 32 bytes at the top of a switched stack. The new stack
/// pointer is the frame's address + 16 (the first field sits just below it, where the
/// window overflow and underflow handlers look for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct NeuronSwitchFrame {
    /// Copy of `neuron_stack_call`'s base save area: its caller's spilled a0..a3 (return
    /// address, stack pointer, a2, a3). The window handlers read the caller's stack
    /// pointer from here (new SP - 12) if the switching frame is spilled while the
    /// kernel runs; debuggers follow the return address to the original stack.
    pub caller_save_area: [u32; 4],
    /// The stack pointer `neuron_stack_call` restores: its own, on the original stack.
    pub original_sp: u32,
    /// [`SWITCH_FRAME_MAGIC`].
    pub magic: u32,
    /// The function run on the new stack.
    pub function: u32,
    /// Its argument.
    pub argument: u32,
}

const _: () = {
    assert!(size_of::<NeuronSwitchFrame>() == 32);
    assert!(offset_of!(NeuronSwitchFrame, caller_save_area) == 0);
    assert!(offset_of!(NeuronSwitchFrame, original_sp) == 16);
    assert!(offset_of!(NeuronSwitchFrame, magic) == 20);
    assert!(offset_of!(NeuronSwitchFrame, function) == 24);
    assert!(offset_of!(NeuronSwitchFrame, argument) == 28);
};

/// Why a call on a switched stack failed, or was not made. Each has a C status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackError {
    /// The function pointer is null (nothing was called).
    NullFunction,
    /// The stack size is below [`MIN_STACK_SIZE`] or above [`MAX_STACK_SIZE`], or the
    /// memory given is too small for the guard, the frame and [`MIN_STACK_SIZE`]
    /// (nothing was called).
    InvalidSize,
    /// The HBM heap has no block that large (nothing was called).
    OutOfMemory,
    /// Register windows other than the switching frame's stayed live after the spill:
    /// a core with more physical registers than the spill covers (nothing was called).
    WindowsLive,
    /// The kernel wrote into the guard zone at the bottom of its stack: it needed more
    /// stack than it had.
    Overflow,
    /// The saved-context frame at the top of the stack changed during the call.
    FrameCorrupted,
    /// The caller's stack is exhausted (too little room to call, nothing was called), or
    /// its guard was written during the call.
    CallerStackOverflow,
}

impl StackError {
    /// The C status code: 1..=7 in declaration order (0 is [`STACK_OK`]).
    pub const fn code(self) -> i32 {
        match self {
            Self::NullFunction => 1,
            Self::InvalidSize => 2,
            Self::OutOfMemory => 3,
            Self::WindowsLive => 4,
            Self::Overflow => 5,
            Self::FrameCorrupted => 6,
            Self::CallerStackOverflow => 7,
        }
    }
}

/// The status `switch_stack_or_call_wrapper` returns when the call completed cleanly.
pub const STACK_OK: i32 = 0;
/// `neuron_stack_call`'s status for [`StackError::WindowsLive`] (stack_switch.S).
const STATUS_WINDOWS_LIVE: i32 = 1;

/// A function the switch can call: `void fn(void *)`.
pub type StackFn = extern "C" fn(argument: *mut c_void);

#[cfg(target_arch = "xtensa")]
unsafe extern "C" {
    /// `int32_t neuron_stack_call(void (*fn)(void *), void *arg, NeuronSwitchFrame
    /// *frame)` (stack_switch.S): 0, or [`STATUS_WINDOWS_LIVE`] without calling.
    fn neuron_stack_call(function: StackFn, argument: *mut c_void, frame: *mut NeuronSwitchFrame) -> i32;
}

/// The host's stand-in for `neuron_stack_call`: writes the frame's first five words as
/// the assembly does, then calls `function` on the current stack.
///
/// # Safety
/// `frame` is valid for writes.
#[cfg(not(target_arch = "xtensa"))]
unsafe fn neuron_stack_call(function: StackFn, argument: *mut c_void, frame: *mut NeuronSwitchFrame) -> i32 {
    let marker = 0u8;
    // SAFETY: `frame` is writable (contract).
    unsafe {
        (*frame).caller_save_area = [0; 4];
        (*frame).original_sp = core::hint::black_box(&raw const marker).addr() as u32;
    }
    function(argument);
    0
}

/// Words of memory holding [`GUARD_WORD`] from [`Guard::paint`] until [`Guard::intact`].
struct Guard {
    first: *mut u32,
    words: usize,
}

impl Guard {
    /// Paints `words` words from `first`.
    ///
    /// # Safety
    /// The words are writable, aligned, and used by nothing but a stack that grows down
    /// into them, until the guard is dropped.
    unsafe fn paint(first: *mut u32, words: usize) -> Guard {
        for i in 0..words {
            // SAFETY: inside the painted range (contract).
            unsafe { first.add(i).write(GUARD_WORD) };
        }
        Guard { first, words }
    }

    /// Whether every word still holds [`GUARD_WORD`].
    fn intact(&self) -> bool {
        // SAFETY: readable words (`paint`'s contract).
        (0..self.words).all(|i| unsafe { self.first.add(i).read() } == GUARD_WORD)
    }
}

/// Where the guard and the frame go in the memory `[base, base + size)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StackLayout {
    /// The guard's first word: `base` rounded up to a word.
    guard: *mut u32,
    /// The frame: the last 32 bytes below the highest [`STACK_ALIGN`]-aligned address.
    frame: *mut NeuronSwitchFrame,
    /// Bytes between the guard and the frame: what the function may use.
    usable: usize,
}

impl StackLayout {
    /// # Errors
    /// [`StackError::InvalidSize`] when fewer than [`MIN_STACK_SIZE`] bytes remain
    /// between the guard and the frame.
    fn new(base: *mut u8, size: usize) -> Result<StackLayout, StackError> {
        let start = base.addr().next_multiple_of(4);
        let end = base.addr().checked_add(size).ok_or(StackError::InvalidSize)? & !(STACK_ALIGN - 1);
        let frame = end.checked_sub(size_of::<NeuronSwitchFrame>()).ok_or(StackError::InvalidSize)?;
        let usable = frame.checked_sub(start + GUARD_SIZE).ok_or(StackError::InvalidSize)?;
        if usable < MIN_STACK_SIZE {
            return Err(StackError::InvalidSize);
        }
        Ok(StackLayout {
            guard: base.wrapping_add(start - base.addr()).cast(),
            frame: base.wrapping_add(frame - base.addr()).cast(),
            usable,
        })
    }
}

/// The guard at the bottom of the caller's stack, when that stack is known: `Ok(None)`
/// when it is not.
///
/// # Errors
/// [`StackError::CallerStackOverflow`] when less than [`CALLER_GUARD_SIZE`] +
/// [`CALLER_HEADROOM`] bytes are left below the caller's stack pointer.
fn guard_caller_stack() -> Result<Option<Guard>, StackError> {
    let Some(free) = caller_stack_free() else {
        return Ok(None);
    };
    if free.len() < CALLER_GUARD_SIZE + CALLER_HEADROOM {
        return Err(StackError::CallerStackOverflow);
    }
    let first = core::ptr::with_exposed_provenance_mut::<u32>(free.start.next_multiple_of(4));
    // SAFETY: the words lie at the bottom of the image's stack, below the stack pointer
    // by at least CALLER_HEADROOM: unused memory that only this stack grows into.
    Ok(Some(unsafe { Guard::paint(first, CALLER_GUARD_SIZE / 4) }))
}

/// The unused part of the stack this runs on, `bottom .. stack pointer`, if it is the
/// image's own stack (`_stack_bottom .. _stack_top` of the linker script). A library
/// image entered by the loader may run on the loader's stack, whose bounds it does
/// not know: then `None`.
#[cfg(target_arch = "xtensa")]
fn caller_stack_free() -> Option<Range<usize>> {
    unsafe extern "C" {
        static _stack_bottom: u8;
        static _stack_top: u8;
    }
    let (bottom, top) = ((&raw const _stack_bottom).addr(), (&raw const _stack_top).addr());
    let marker = 0u8;
    let stack_pointer = core::hint::black_box(&raw const marker).addr();
    (bottom..top).contains(&stack_pointer).then_some(bottom..stack_pointer)
}

/// On the host the caller's stack is the test thread's: not the runtime's to guard.
#[cfg(not(target_arch = "xtensa"))]
fn caller_stack_free() -> Option<Range<usize>> {
    None
}

/// Checks the caller's guard after a call.
fn check_caller_guard(guard: Option<Guard>) -> Result<(), StackError> {
    match guard {
        Some(guard) if !guard.intact() => Err(StackError::CallerStackOverflow),
        _ => Ok(()),
    }
}

/// Runs the `FnOnce` behind `closure`, an `Option<F>`: the function the switch calls.
extern "C" fn trampoline<F: FnOnce()>(closure: *mut c_void) {
    // SAFETY: `switch_to` passes a pointer to its live `Option<F>`, used by nothing else
    // during the call.
    if let Some(f) = unsafe { &mut *closure.cast::<Option<F>>() }.take() {
        f();
    }
}

/// Runs `f` with the stack pointer at `frame + 16`, and checks the frame afterwards.
///
/// # Safety
/// `frame` is the top of a stack laid out by [`StackLayout`], unused by anything else.
unsafe fn switch_to<F: FnOnce()>(frame: *mut NeuronSwitchFrame, f: F) -> Result<(), StackError> {
    let mut closure = Some(f);
    let function: StackFn = trampoline::<F>;
    let argument = (&raw mut closure).cast::<c_void>();
    let expected = (SWITCH_FRAME_MAGIC, function as usize as u32, argument.addr() as u32);
    // SAFETY: `frame` is writable (contract); the assembly fills the first five words.
    unsafe {
        frame.write(NeuronSwitchFrame {
            caller_save_area: [0; 4],
            original_sp: 0,
            magic: expected.0,
            function: expected.1,
            argument: expected.2,
        })
    };
    // SAFETY: the frame is at the top of a stack of at least MIN_STACK_SIZE usable bytes
    // that nothing else uses (contract); `argument` stays live until the call returns.
    let status = unsafe { neuron_stack_call(function, argument, frame) };
    if status == STATUS_WINDOWS_LIVE {
        return Err(StackError::WindowsLive);
    }
    // SAFETY: the frame is still readable memory of the caller's region.
    let after = unsafe { frame.read() };
    if (after.magic, after.function, after.argument) != expected {
        return Err(StackError::FrameCorrupted);
    }
    Ok(())
}

/// Runs `f` on a stack made of the memory `[base, base + size)`: a guard at the bottom,
/// the saved-context frame at the top, the rest for `f`. Checks the guards and the frame
/// afterwards.
///
/// # Errors
/// [`StackError::InvalidSize`], [`StackError::CallerStackOverflow`] or
/// [`StackError::WindowsLive`] before `f` runs (it is then not called);
/// [`StackError::Overflow`], [`StackError::FrameCorrupted`] or
/// [`StackError::CallerStackOverflow`] after it ran (its result is dropped).
///
/// # Safety
/// The memory is writable and used by nothing but this call until it returns.
pub unsafe fn run_on_region<R>(base: *mut u8, size: usize, f: impl FnOnce() -> R) -> Result<R, StackError> {
    let layout = StackLayout::new(base, size)?;
    let caller_guard = guard_caller_stack()?;
    // SAFETY: the guard words are the bottom of the region (contract), which only the
    // new stack grows into.
    let guard = unsafe { Guard::paint(layout.guard, GUARD_SIZE / 4) };
    let mut result = None;
    // SAFETY: the frame tops a region laid out by StackLayout that nothing else uses.
    let switched = unsafe { switch_to(layout.frame, || result = Some(f())) };
    check_caller_guard(caller_guard)?;
    switched?;
    if !guard.intact() {
        return Err(StackError::Overflow);
    }
    Ok(result.expect("the switch called the function"))
}

/// Runs `f` on a stack made of `stack` (see [`run_on_region`]).
///
/// # Errors
/// As [`run_on_region`].
///
/// ```
/// use neuroncustomop::stack_switch::run_on_stack;
///
/// let mut stack = vec![0u8; 8192];
/// assert_eq!(run_on_stack(&mut stack, || 6 * 7), Ok(42));
/// ```
pub fn run_on_stack<R>(stack: &mut [u8], f: impl FnOnce() -> R) -> Result<R, StackError> {
    // SAFETY: the slice is writable and borrowed exclusively for the call.
    unsafe { run_on_region(stack.as_mut_ptr(), stack.len(), f) }
}

/// HBM bytes [`run_on_hbm_stack`] allocates for a stack of `stack_size` usable bytes:
/// the guard, the stack, the frame, rounded up to [`STACK_ALIGN`].
pub const fn hbm_stack_bytes(stack_size: usize) -> usize {
    (GUARD_SIZE + stack_size + size_of::<NeuronSwitchFrame>()).next_multiple_of(STACK_ALIGN)
}

/// Runs `f` on a stack of `stack_size` usable bytes allocated from this core's HBM heap
/// for the call, and frees it afterwards.
///
/// # Errors
/// [`StackError::InvalidSize`] unless `MIN_STACK_SIZE <= stack_size <= MAX_STACK_SIZE`,
/// [`StackError::OutOfMemory`], else as [`run_on_region`].
pub fn run_on_hbm_stack<R>(stack_size: usize, f: impl FnOnce() -> R) -> Result<R, StackError> {
    if !(MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&stack_size) {
        return Err(StackError::InvalidSize);
    }
    let bytes = hbm_stack_bytes(stack_size);
    let block = allocators::allocate_for_runtime(HeapId::Hbm, bytes, GRANULE).map_err(|_| StackError::OutOfMemory)?;
    // SAFETY: a live block of `bytes` bytes, owned by this call until it is freed below.
    let result = unsafe { run_on_region(block.as_ptr(), bytes, f) };
    allocators::free_in(HeapId::Hbm, block.as_ptr()).expect("freeing the block this call allocated");
    result
}

/// Runs `f` on the current stack, with the caller-stack guard when that stack is known
/// (the "or call" of `switch_stack_or_call_wrapper`).
///
/// # Errors
/// [`StackError::CallerStackOverflow`] before (too little room) or after (guard
/// written) the call.
pub fn call_guarded<R>(f: impl FnOnce() -> R) -> Result<R, StackError> {
    let caller_guard = guard_caller_stack()?;
    let result = f();
    check_caller_guard(caller_guard)?;
    Ok(result)
}

/// C ABI `int32_t switch_stack_or_call_wrapper(void (*fn)(void *), void *arg, uint32_t
/// stack_size)`: with `stack_size` 0, calls `fn(arg)` on the current stack
/// ([`call_guarded`]); otherwise on a fresh HBM stack of `stack_size` usable bytes
/// ([`run_on_hbm_stack`]). Returns [`STACK_OK`] or a [`StackError::code`].
///
/// # Safety
/// `fn` is null or a function that may be called with `arg`.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn switch_stack_or_call_wrapper(
    function: Option<StackFn>,
    argument: *mut c_void,
    stack_size: u32,
) -> i32 {
    let Some(function) = function else {
        return StackError::NullFunction.code();
    };
    let call = || function(argument);
    let result = match stack_size {
        0 => call_guarded(call),
        size => run_on_hbm_stack(size as usize, call),
    };
    result.map_or_else(StackError::code, |()| STACK_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocators::{HeapStats, heap_stats, init_heaps};
    use core::alloc::Layout;
    use proptest::prelude::*;
    use std::vec::Vec;

    /// 64-byte aligned memory from the test allocator (freed on drop).
    struct Memory {
        ptr: *mut u8,
        layout: Layout,
    }

    impl Memory {
        fn new(size: usize) -> Memory {
            let layout = Layout::from_size_align(size, 64).unwrap();
            // SAFETY: non-zero size.
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
            assert!(!ptr.is_null());
            Memory { ptr, layout }
        }
    }

    impl Drop for Memory {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` with this layout.
            unsafe { std::alloc::dealloc(self.ptr, self.layout) }
        }
    }

    /// Gives this test thread an HBM heap of `size` bytes (and a small dataram heap).
    fn with_hbm_heap(size: usize) -> (Memory, Memory) {
        let (hbm, dataram) = (Memory::new(size), Memory::new(4096));
        // SAFETY: both regions live until the test ends (the caller keeps them).
        unsafe { init_heaps(hbm.ptr, size, dataram.ptr, 4096) }.unwrap();
        (hbm, dataram)
    }

    #[test]
    fn the_layout_puts_the_guard_at_the_bottom_and_the_frame_at_the_top() {
        let memory = Memory::new(8192);
        let layout = StackLayout::new(memory.ptr, 8192).unwrap();
        assert_eq!(layout.guard.cast::<u8>(), memory.ptr);
        assert_eq!(layout.frame.addr(), memory.ptr.addr() + 8192 - 32);
        assert_eq!((layout.frame.addr() + 16) % STACK_ALIGN, 0, "the new SP is aligned");
        assert_eq!(layout.usable, 8192 - 32 - GUARD_SIZE);
    }

    #[test]
    fn an_unaligned_region_is_trimmed_to_alignment() {
        let memory = Memory::new(8192);
        let base = memory.ptr.wrapping_add(3);
        let layout = StackLayout::new(base, 8000).unwrap();
        assert_eq!(layout.guard.addr(), memory.ptr.addr() + 4);
        assert_eq!((layout.frame.addr() + 16) % STACK_ALIGN, 0);
        assert!(layout.frame.addr() + 32 <= base.addr() + 8000);
        assert_eq!(layout.usable, layout.frame.addr() - layout.guard.addr() - GUARD_SIZE);
    }

    #[test]
    fn a_region_too_small_for_guard_frame_and_minimum_is_refused() {
        let memory = Memory::new(4096);
        let smallest = GUARD_SIZE + MIN_STACK_SIZE + 32;
        assert!(StackLayout::new(memory.ptr, smallest).is_ok());
        assert_eq!(StackLayout::new(memory.ptr, smallest - 1), Err(StackError::InvalidSize));
        assert_eq!(StackLayout::new(memory.ptr, 0), Err(StackError::InvalidSize));
        assert_eq!(StackLayout::new(memory.ptr, usize::MAX), Err(StackError::InvalidSize));
    }

    #[test]
    fn run_on_stack_returns_the_result_and_leaves_the_frame() {
        let mut stack = std::vec![0u8; 8192];
        let base = stack.as_ptr().addr();
        assert_eq!(run_on_stack(&mut stack, || (1..=10).sum::<u32>()), Ok(55));
        let layout = StackLayout::new(base as *mut u8, 8192).unwrap();
        let frame = layout.frame.addr() - base;
        let magic = u32::from_le_bytes(stack[frame + 20..frame + 24].try_into().unwrap());
        assert_eq!(magic, SWITCH_FRAME_MAGIC);
        // The guard starts at the first word boundary: a `Vec<u8>` need not be aligned
        // (Miri places it at any address).
        let guard = layout.guard.addr() - base;
        let painted = stack[guard..guard + GUARD_SIZE].chunks(4).all(|w| w == GUARD_WORD.to_le_bytes());
        assert!(painted, "the guard is painted");
    }

    #[test]
    fn too_small_a_slice_is_refused_without_calling() {
        let mut stack = std::vec![0u8; 1024];
        let mut called = false;
        assert_eq!(run_on_stack(&mut stack, || called = true), Err(StackError::InvalidSize));
        assert!(!called);
    }

    #[test]
    fn an_intact_guard_passes_and_the_frame_fields_are_checked() {
        let memory = Memory::new(8192);
        let layout = StackLayout::new(memory.ptr, 8192).unwrap();
        for (offset, error) in
            [(20, StackError::FrameCorrupted), (24, StackError::FrameCorrupted), (28, StackError::FrameCorrupted)]
        {
            let target = layout.frame.cast::<u8>().wrapping_add(offset);
            // SAFETY: the region is 8192 writable bytes used by nothing else; the closure
            // writes one byte of the frame, inside the region, through the same pointer.
            let result = unsafe { run_on_region(memory.ptr, 8192, || target.write(target.read() ^ 1)) };
            assert_eq!(result, Err(error), "frame byte {offset}");
        }
    }

    proptest! {
        // Miri interprets about 1000x slower: a few cases there, the full count natively.
        #![proptest_config(if cfg!(miri) { ProptestConfig::with_cases(8) } else { ProptestConfig::default() })]

        #[test]
        fn a_write_anywhere_in_the_guard_is_an_overflow(word in 0..GUARD_SIZE / 4, value: u32) {
            prop_assume!(value != GUARD_WORD);
            let memory = Memory::new(8192);
            let target = memory.ptr.cast::<u32>().wrapping_add(word);
            // SAFETY: the region is writable and used by nothing else; the closure
            // writes one word of the guard zone, as an overflowing stack would.
            let result = unsafe { run_on_region(memory.ptr, 8192, || target.write(value)) };
            prop_assert_eq!(result, Err(StackError::Overflow));
        }

        #[test]
        fn writes_in_the_usable_stack_are_no_overflow(offset in 0usize..8192 - 32 - GUARD_SIZE, value: u8) {
            let memory = Memory::new(8192);
            let target = memory.ptr.wrapping_add(GUARD_SIZE + offset);
            // SAFETY: as above; the byte is inside the usable stack.
            let result = unsafe { run_on_region(memory.ptr, 8192, || { target.write(value); 7 }) };
            prop_assert_eq!(result, Ok(7));
        }
    }

    #[test]
    fn hbm_stacks_come_from_the_heap_and_go_back() {
        let _heap = with_hbm_heap(1 << 20);
        let before = heap_stats(HeapId::Hbm);
        let mut seen = None;
        let result = run_on_hbm_stack(MAX_STACK_SIZE, || {
            seen = Some(heap_stats(HeapId::Hbm));
            "ran"
        });
        assert_eq!(result, Ok("ran"));
        let during: HeapStats = seen.unwrap();
        assert_eq!(during.live_blocks, before.live_blocks + 1);
        assert!(before.free_bytes - during.free_bytes >= hbm_stack_bytes(MAX_STACK_SIZE));
        assert_eq!(heap_stats(HeapId::Hbm), before, "the stack was freed");
    }

    #[test]
    fn hbm_stack_sizes_outside_the_limits_are_refused() {
        let _heap = with_hbm_heap(1 << 20);
        for size in [0, MIN_STACK_SIZE - 1, MAX_STACK_SIZE + 1, usize::MAX] {
            assert_eq!(run_on_hbm_stack(size, || ()), Err(StackError::InvalidSize), "{size}");
        }
        assert_eq!(heap_stats(HeapId::Hbm).live_blocks, 0);
    }

    #[test]
    fn a_heap_too_small_for_the_stack_is_out_of_memory_and_unchanged() {
        let _heap = with_hbm_heap(64 * 1024);
        let before = heap_stats(HeapId::Hbm);
        let mut called = false;
        assert_eq!(run_on_hbm_stack(MAX_STACK_SIZE, || called = true), Err(StackError::OutOfMemory));
        assert!(!called);
        assert_eq!(heap_stats(HeapId::Hbm), before);
    }

    extern "C" fn add_one(argument: *mut c_void) {
        // SAFETY: the tests pass a pointer to a live u32.
        unsafe { *argument.cast::<u32>() += 1 };
    }

    #[test]
    fn the_c_wrapper_calls_on_the_current_stack_or_on_an_hbm_stack() {
        let _heap = with_hbm_heap(1 << 20);
        let mut counter = 0u32;
        let argument = (&raw mut counter).cast::<c_void>();
        // SAFETY: `add_one` takes a pointer to a live u32.
        unsafe {
            assert_eq!(switch_stack_or_call_wrapper(Some(add_one), argument, 0), STACK_OK);
            assert_eq!(switch_stack_or_call_wrapper(Some(add_one), argument, 64 * 1024), STACK_OK);
            assert_eq!(switch_stack_or_call_wrapper(Some(add_one), argument, 400 * 1024), STACK_OK);
        }
        assert_eq!(counter, 3);
    }

    #[test]
    fn the_c_wrapper_reports_each_refusal_with_its_code() {
        let _heap = with_hbm_heap(64 * 1024);
        let mut counter = 0u32;
        let argument = (&raw mut counter).cast::<c_void>();
        // SAFETY: as above; the refused calls call nothing.
        unsafe {
            assert_eq!(switch_stack_or_call_wrapper(None, argument, 0), StackError::NullFunction.code());
            assert_eq!(switch_stack_or_call_wrapper(Some(add_one), argument, 100), StackError::InvalidSize.code());
            assert_eq!(
                switch_stack_or_call_wrapper(Some(add_one), argument, 401 * 1024),
                StackError::InvalidSize.code()
            );
            assert_eq!(
                switch_stack_or_call_wrapper(Some(add_one), argument, 400 * 1024),
                StackError::OutOfMemory.code()
            );
        }
        assert_eq!(counter, 0);
    }

    #[test]
    fn status_codes_are_distinct_and_nonzero() {
        let errors = [
            StackError::NullFunction,
            StackError::InvalidSize,
            StackError::OutOfMemory,
            StackError::WindowsLive,
            StackError::Overflow,
            StackError::FrameCorrupted,
            StackError::CallerStackOverflow,
        ];
        let codes: Vec<i32> = errors.iter().map(|e| e.code()).collect();
        assert_eq!(codes, (1..=7).collect::<Vec<i32>>());
        assert!(!codes.contains(&STACK_OK));
    }
}
