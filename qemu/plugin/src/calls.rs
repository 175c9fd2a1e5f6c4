//! A core's shadow call stack, shared by the modules that need one: the profile (its
//! call paths) and the checks (each finding's backtrace).
//!
//! Only the real calls (`call0`/`call4`/`call8`/`call12` and their `callx` forms) make
//! frames, and only two events move the stack, so a module needs a callback on call
//! instructions and one per block, nothing per instruction (the checks run the block's
//! only after a call, a return or an indirect jump: `checks.rs`, `State::moved`):
//! - a call instruction's callback notes the call's PC and return address
//!   ([`CallStack::call`]);
//! - the next block to start pushes a frame with the callee's entry
//!   ([`CallStack::block`]), unless it is the call's own return address (the callee
//!   ran where the module watches no block); a block starting at a frame's return
//!   address returns from it (and from any frame above it that never returned the
//!   usual way).
//!
//! Popping by return address, not on `retw`/`ret`, keeps the stack true whichever way a
//! function leaves. A window overflow or underflow handler runs inside the frame that
//! caused it (its blocks start at a vector, which is no return address).

/// Call sites a backtrace keeps: a finding's (`checks.rs`), a heap block's
/// allocation and free sites (`heap.rs`).
pub(crate) const DEPTH: usize = 16;

/// One call: where it was made and where it returns to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    /// The call instruction.
    pub(crate) site: u64,
    /// The instruction after the call.
    ret: u64,
}

/// What a block did to the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A frame was pushed: the block is a callee's entry.
    Entered,
    /// Frames were popped: the block is where a call returned to.
    Returned,
    /// Neither.
    Within,
}

/// One core's calls since its op began, outermost first.
#[derive(Debug, Default)]
pub(crate) struct CallStack {
    frames: Vec<Frame>,
    /// A call's PC and return address, until the callee's first block runs.
    pending: Option<(u64, u64)>,
    /// The frames' return addresses as bits ([`ret_bit`]): a block whose bit is clear
    /// returns from no frame, and most blocks are told so without a scan of the frames.
    rets: u64,
}

/// The bit of [`CallStack::rets`] that stands for return address `ret`.
fn ret_bit(ret: u64) -> u64 {
    1 << ((ret ^ ret >> 6) & 63)
}

impl CallStack {
    /// The call instruction at `site`, returning to `ret`, is about to run.
    pub(crate) fn call(&mut self, site: u64, ret: u64) {
        self.pending = Some((site, ret));
    }

    /// A block starting at `pc` is about to run: [`Step::Entered`] makes `pc` the
    /// entry of the new top frame.
    pub(crate) fn block(&mut self, pc: u64) -> Step {
        let pending = self.pending.take();
        if let Some((site, ret)) = pending
            && pc != ret
        {
            self.frames.push(Frame { site, ret });
            self.rets |= ret_bit(ret);
            Step::Entered
        } else if pending.is_some() || self.rets & ret_bit(pc) == 0 {
            // Back at the return address before any block of the callee: it ran where
            // the module puts no block callback (the loader's services, for the checks).
            // Or no frame returns here.
            Step::Within
        } else if let Some(depth) = self.frames.iter().rposition(|frame| frame.ret == pc) {
            self.frames.truncate(depth);
            self.rets = self.frames.iter().fold(0, |bits, frame| bits | ret_bit(frame.ret));
            Step::Returned
        } else {
            Step::Within
        }
    }

    /// The frames, outermost first.
    pub(crate) fn frames(&self) -> &[Frame] {
        &self.frames
    }
}

/// Whether an instruction whose disassembly starts with `mnemonic` is a call.
pub(crate) fn is_call(mnemonic: &str) -> bool {
    mnemonic.starts_with("call")
}
