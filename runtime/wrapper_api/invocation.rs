//! The pull stream's state machine ([`Invocation`]), the services it needs
//! ([`Platform`]), and the kernel-facing cursor ([`Args`]).
//!
//! One invocation, as the loader and a kernel drive it:
//!
//! ```text
//! loader:  set_invocation(args, n, result)          -> Pending
//! kernel:  setup(first_call)                        -> Active (descriptors copied,
//!                                                      checked and translated)
//!          next_tensor / next_int / next_longlong / next_float / dst_tensor ...
//!          return_tensor(t)                         (writes *result)
//!          cleanup()                                -> Idle  (memw + sync)
//! loader:  invocation_status()                      first error of the invocation
//! ```
//!
//! # Resolved once, handed out in order
//! `setup` does each argument's work once, in one loop: it copies the descriptor into
//! the [`ArgParser`], checks it, translates its bytes, and keeps the result as a
//! [`Ready`] slot; the output is copied and resolved the same way. A pull then
//! compares the slot's type with the one it wants and hands the slot out: a handful of
//! instructions. Whatever setup could not make ready (a malformed descriptor, an
//! address outside every window), and every pull that is not plainly valid (wrong
//! type, past the end, before setup, an output overlapping an input), takes the slow
//! path, which runs the checks in their documented order to name the error; so errors
//! are reported by the pull that meets them, exactly as if nothing had been resolved
//! early. Translation uses the windows configured when setup ran (the loader
//! configures them before the op).
//!
//! # Reused when unchanged
//! A kernel is mostly dispatched again with the same arguments (the same instruction,
//! the next inference). Setup therefore first compares the incoming descriptors with
//! the copies it already holds: when every one has the same bytes, translation was not
//! reconfigured since (`crate::translate::generation`), the previous resolutions stand
//! and there is nothing to copy, check or translate: 12 word compares per descriptor.
//! Otherwise the host copies and resolves again each descriptor that differs and keeps
//! the others; the device resolves the common descriptors again in assembly
//! (`runtime/arch/xtensa/setup.S`, about twice a comparison) and the others in Rust. Nothing outside the runtime can change its copies: C kernels are handed copies
//! of them (they may write through the pointers), Rust kernels read-only views.

use core::cell::{Cell, UnsafeCell};

use super::{
    ArgError, ArgFailure, ArgParser, ArgTensor, ArgType, Checked, DescriptorError, Dtype, Element, KernelError,
    MAX_ARGS, ScalarKind, Status, TcmBuffer, Tensor, TensorDesc, TensorError,
};
use crate::translate::{RangeError, TranslateError};

/// The device pointer of the first of `len` bytes at a framework address, when all of
/// them lie in one translate window, as [`crate::translate::translate_range`].
pub type TranslateFn = fn(u64, usize) -> Result<*mut u8, RangeError>;

/// The runtime services the pull stream and tensor API use, as function pointers so
/// host tests can put fakes behind them. [`Platform::DEVICE`] is the real runtime.
#[derive(Clone, Copy)]
pub struct Platform {
    /// Framework address range to device pointer; `None` is the runtime's own
    /// ([`crate::translate::translate_range`], inlined into setup's loop). A fake
    /// must answer as the runtime's does: the same until the windows change.
    pub translate: Option<TranslateFn>,
    /// A block of the op's TCM pool, or null (`tcm_malloc`).
    pub tcm_alloc: fn(usize) -> *mut u8,
    /// Gives a TCM block back (`tcm_free`).
    pub tcm_release: fn(*mut u8),
    /// Start of an op: empty the TCM pool; on the first call, also the one-time set-up.
    pub begin_op: fn(first_call: bool),
    /// End of an op: make every write visible (write fence and sync).
    pub end_op: fn(),
}

impl Platform {
    /// The device runtime: [`crate::translate`], [`crate::allocators::tcm`], and the
    /// fence of [`crate::arch`].
    pub const DEVICE: Platform = Platform {
        translate: None,
        tcm_alloc: crate::allocators::tcm::tcm_alloc,
        tcm_release: crate::allocators::tcm::tcm_release,
        begin_op: device_begin_op,
        end_op: device_end_op,
    };

    /// The device pointer of the elements `checked` describes (null when there are
    /// none, which are not translated).
    ///
    /// # Errors
    /// [`ArgError::TooLarge`] when the byte length overflows a pointer,
    /// [`ArgError::Translate`] when the first byte has no window,
    /// [`ArgError::RangeOutsideWindow`] when the bytes run past it.
    #[inline(always)]
    fn translate(&self, checked: &Checked) -> Result<*mut u8, ArgError> {
        self.translate_bytes(checked).map(|(data, _)| data)
    }

    /// [`translate`](Self::translate), and the byte length of the elements (0 when
    /// there are none).
    #[inline(always)]
    fn translate_bytes(&self, checked: &Checked) -> Result<(*mut u8, usize), ArgError> {
        let num_elem = checked.num_elem as usize;
        if num_elem == 0 {
            return Ok((core::ptr::null_mut(), 0));
        }
        let shift = checked.dtype.size_log2();
        if num_elem > isize::MAX as usize >> shift {
            return Err(ArgError::TooLarge);
        }
        let len = num_elem << shift;
        let translated = match self.translate {
            None => crate::translate::translate_range(checked.address, len),
            Some(translate) => translate(checked.address, len),
        };
        match translated {
            Ok(data) => Ok((data, len)),
            Err(RangeError::Miss) => Err(ArgError::Translate(TranslateError::Miss)),
            Err(RangeError::OutsideWindow) => Err(ArgError::RangeOutsideWindow),
        }
    }
}

fn device_begin_op(first_call: bool) {
    crate::allocators::tcm::tcm_reset();
    if first_call {
        // A failure is kept for `neuron_dma_status`, and DMA copies then fall back to
        // the CPU: nothing here to report to the kernel.
        let _ = crate::data_transfer::dma::init_queue();
    }
}

fn device_end_op() {
    crate::arch::memw();
    // HOOK(vendor fsync): the vendor's `fsync`; when the stdout ring needs publishing to the
    // loader, that call goes here. The ring is written in place today.
}

/// Why the argument of raw type `found` is not what the pull `wanted` (a tensor for
/// `None`); the two differ.
fn type_mismatch(wanted: Option<ScalarKind>, found: u8) -> ArgError {
    let Some(found) = ArgType::from_raw(found) else {
        return ArgError::Descriptor(DescriptorError::UnknownArgType(found));
    };
    match (wanted, found) {
        (None, _) => ArgError::ExpectedTensor(found),
        (Some(kind), ArgType::Tensor) => ArgError::ExpectedScalar(kind),
        (Some(kind), _) => ArgError::ScalarKindMismatch { wanted: kind, found },
    }
}

/// The raw [`ArgType`] a pull for `wanted` (a tensor for `None`) accepts.
#[inline(always)]
const fn raw_type(wanted: Option<ScalarKind>) -> u8 {
    match wanted {
        None => ArgType::Tensor as u8,
        Some(kind) => kind.arg_type() as u8,
    }
}

/// An argument (or the output) as setup resolved it: checked and translated, ready to
/// hand out. 12 bytes on the device.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Ready {
    /// Device address of element 0; null when there are no elements.
    data: *mut u8,
    num_elem: u32,
    /// The raw [`ArgType`] it is ready as, or [`Ready::NOT_READY`]: setup could not
    /// resolve it, or (the output) it was taken. The slow path says why.
    arg_type: u8,
    dtype: Dtype,
}

impl Ready {
    /// No arg type is 0, so no pull matches it.
    const NOT_READY: u8 = 0;
    const NONE: Ready =
        Ready { arg_type: Ready::NOT_READY, dtype: Dtype::Uint8, num_elem: 0, data: core::ptr::null_mut() };

    /// Makes `copy` a copy of the descriptor at `src` and `ready` its resolution, and
    /// returns the resolution's [`tensor_bytes`](Self::tensor_bytes): when `reuse`
    /// (`ready` is the resolution of `copy` under the current translation) and the
    /// bytes are the same, `ready` stays; otherwise the descriptor is copied, checked
    /// ([`ArgTensor::check_any`]) and translated: ready as its arg type, or not ready
    /// (the slow path names the error when a pull meets it). A scalar is ready only at
    /// an address aligned for it, so that a pull reads it with one load.
    ///
    /// Setup's resolver for every slot on the host; on the device only for the slots
    /// `runtime/arch/xtensa/setup.S` declines (the common descriptors, which it resolves
    /// to the same outcome: `check_any` accepts each descriptor
    /// [`ArgTensor::check_common`] does, with the same result). Out of line, one copy
    /// for the output and the arguments.
    ///
    /// # Safety
    /// `src` is valid for reads of one descriptor (any alignment) and is not `copy`.
    #[inline(never)]
    unsafe fn refresh(
        src: *const ArgTensor,
        copy: &mut ArgTensor,
        ready: &Cell<Ready>,
        platform: &Platform,
        reuse: bool,
    ) -> (usize, usize) {
        // SAFETY: the caller's contract.
        if reuse && unsafe { copy.is_copy_of(src) } {
            return ready.get().tensor_bytes();
        }
        // SAFETY: the caller's contract; `copy` is a distinct, writable descriptor.
        unsafe { ArgTensor::copy(src, copy) };
        match copy.check_any() {
            Some(checked) => Ready::translate(&checked, platform, ready),
            None => {
                ready.set(Ready::NONE);
                (0, 0)
            }
        }
    }

    /// Translates the valid descriptor `checked` describes into `ready`: ready when its
    /// bytes translate (and, for a scalar, are aligned for it). Returns its
    /// [`tensor_bytes`](Self::tensor_bytes).
    #[inline(always)]
    fn translate(checked: &Checked, platform: &Platform, ready: &Cell<Ready>) -> (usize, usize) {
        match platform.translate_bytes(checked) {
            Ok((data, len)) if checked.arg_type == ArgType::Tensor => {
                ready.set(Ready::of(checked, data));
                // Cannot overflow: the range is inside one device window.
                (data.addr(), data.addr() + len)
            }
            Ok((data, _)) if data.addr() & (checked.dtype.size() - 1) == 0 => {
                ready.set(Ready::of(checked, data));
                (0, 0)
            }
            _ => {
                ready.set(Ready::NONE);
                (0, 0)
            }
        }
    }

    #[inline(always)]
    fn of(checked: &Checked, data: *mut u8) -> Ready {
        Ready { arg_type: checked.arg_type as u8, dtype: checked.dtype, num_elem: checked.num_elem, data }
    }

    /// The device bytes of a ready tensor, as its start and end addresses; an empty
    /// range at 0 for a scalar or what is not ready, which overlap nothing.
    #[inline(always)]
    fn tensor_bytes(&self) -> (usize, usize) {
        if self.arg_type != ArgType::Tensor as u8 {
            return (0, 0);
        }
        let start = self.data as usize;
        // Cannot overflow: `translate` checked each length fits and each range is
        // inside one device window.
        (start, start + ((self.num_elem as usize) << self.dtype.size_log2()))
    }
}

/// `data.read_unaligned()`, kept out of line: a scalar setup made ready is aligned, and
/// LLVM would otherwise read every scalar byte by byte.
///
/// # Safety
/// As [`core::ptr::read_unaligned`].
#[cold]
#[inline(never)]
unsafe fn read_unaligned<T>(data: *const T) -> T {
    // SAFETY: the caller's contract.
    unsafe { data.read_unaligned() }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// No invocation pending (before the first, after cleanup).
    Idle,
    /// The loader passed the arguments; the kernel has not called setup.
    Pending,
    /// Between setup and cleanup.
    Active,
}

/// One core's pull-stream state: the loader's argument block, the [`ArgParser`] the
/// kernel drains, what setup resolved, and the statuses. The C ABI keeps one in a
/// `CoreLocal`; Rust kernels see it as [`Args`].
///
/// Every call records its status ([`last_status`](Self::last_status)); the first
/// failure since `set_invocation` is the invocation's status, which the loader reads.
///
/// `repr(C)`, in this order: what the pulls touch first, within the byte and halfword
/// loads' short offset range, and the 512-byte parser and the copies handed to C last.
#[repr(C)]
pub struct Invocation {
    /// Arguments a pull may take from `ready`: `num_args` while active, else 0.
    pullable: u32,
    last_status: Cell<Status>,
    invocation_status: Cell<Status>,
    /// The output was taken (or there is no active invocation): `dst_resolved` is not
    /// handed out again.
    dst_taken: Cell<bool>,
    phase: Phase,
    initialized: bool,
    /// Bit `i`: argument `i` is a tensor overlapping the output a Rust kernel took, a
    /// writable view no input handed out may overlap: `output_overlaps` once a Rust
    /// kernel took the output, 0 before that and for C kernels (they may work in place).
    aliasing: Cell<u16>,
    /// The resolution of `dst_desc`, as `ready` is of the arguments. Just before
    /// `ready`: `setup.S` reaches it as slot -1.
    dst_resolved: Cell<Ready>,
    /// What setup resolved for each argument, by index: the resolution of
    /// `parser.extractor.args[i]` under the translate generation `resolved_generation`
    /// when it is ready (see `reusable`).
    ready: [Cell<Ready>; MAX_ARGS],
    args: *const ArgTensor,
    num_args: u32,
    result: *mut ArgTensor,
    platform: Platform,
    /// Bit `i` (`OUTPUT_BIT` for the output): `ready[i]` (`dst_resolved`) is the
    /// resolution of the runtime's copy under `resolved_generation`. Setup reuses such a
    /// resolution when the incoming descriptor has the same bytes as the copy and
    /// translation has not been reconfigured. (Nothing outside the runtime can change
    /// a copy: C is handed `handed`, Rust read-only views.)
    reusable: u32,
    /// Bit `i`: `ready[i]` is a tensor overlapping `dst_resolved`; kept by setup for
    /// every slot whose `reusable` bit is set (the others are resolved again, and this
    /// recomputed, before a pull can reach them).
    output_overlaps: u16,
    /// The lowest bit set in `output_overlaps`, 16 when none.
    first_overlap: u8,
    /// The translate generation (`crate::translate::generation`) `ready` and
    /// `dst_resolved` were resolved under.
    resolved_generation: u64,
    /// The runtime's copy of the output descriptor, made by setup.
    dst_desc: ArgTensor,
    parser: ArgParser,
    /// The argument that caused the invocation's first failure, if one did: written by
    /// the failing pull ([`reject_pull`](Self::reject_pull)), reported and cleared by
    /// [`end_status`](Self::end_status). Kept as the record's word
    /// ([`ArgFailure::to_word`]: one store), within a word load's reach (asserted
    /// below); no pull's fast path reads it.
    failure: Cell<u32>,
    /// What C kernels are handed: a copy of argument `i` (of the output at `MAX_ARGS`)
    /// made when it is pulled, so that a C kernel writing through its pointer changes
    /// nothing setup may reuse. Each is written once per invocation (see `hand_out`).
    handed: [UnsafeCell<ArgTensor>; MAX_ARGS + 1],
}

/// The `reusable` bit of the output (bits `0..MAX_ARGS` are the arguments'): bit 31,
/// which `setup.S` tests for slot -1 (a bit test takes the index's low five bits).
const OUTPUT_BIT: u32 = 1 << 31;

const _: () = assert!(MAX_ARGS < 16, "`output_overlaps` has a bit per argument");

/// Setup's slot number of the output: it is resolved before argument 0.
const OUTPUT_SLOT: isize = -1;

/// The `reusable` bit of `slot` (`OUTPUT_BIT` for [`OUTPUT_SLOT`]): the slot's low five
/// bits, as `setup.S`'s bit test takes them.
#[inline(always)]
fn slot_bit(slot: isize) -> u32 {
    1 << (slot as u32 & 31)
}

/// What [`resolve_common`] did, `setup.S`'s return value: when every slot is resolved,
/// the overlap bits of the arguments it resolved (bits 0..`MAX_ARGS`); otherwise also
/// bit 31, the slot it stopped at plus one in bits 16..31, and [`Stopped::COPIED`].
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Stopped(u32);

impl Stopped {
    /// Set when the stopped slot's copy was written (so its reuse test is void).
    const COPIED: u32 = 1 << 10;
    /// Set when a slot is left.
    const STOPPED: u32 = 1 << 31;

    /// Stopped at `slot` before doing anything (done when no slot is left).
    #[inline(always)]
    fn at(slot: isize, num_args: usize) -> Stopped {
        if slot >= num_args as isize { Stopped(0) } else { Stopped(Self::STOPPED | ((slot + 1) as u32) << 16) }
    }

    /// Every slot was resolved.
    #[inline(always)]
    fn done(self) -> bool {
        self.0 & Self::STOPPED == 0
    }

    /// The overlap bits of the arguments resolved.
    #[inline(always)]
    fn overlaps(self) -> u16 {
        (self.0 & (Self::COPIED - 1)) as u16
    }

    #[inline(always)]
    fn copied(self) -> bool {
        self.0 & Self::COPIED != 0
    }

    /// The slot it stopped at ([`OUTPUT_SLOT`] for the output), when not done.
    #[inline(always)]
    fn slot(self) -> isize {
        (self.0 >> 16 & 0x7FFF) as isize - 1
    }
}

#[cfg(target_os = "none")]
unsafe extern "C" {
    /// `runtime/arch/xtensa/setup.S`: resolves the output (`slot` [`OUTPUT_SLOT`]) and
    /// then the arguments from `slot` while each is the common case, as
    /// [`Ready::refresh`] would, and stops at the first it declines.
    fn neuron_resolve_common(
        invocation: *mut u8,
        slot: isize,
        num_args: usize,
        output_start: usize,
        output_end: usize,
    ) -> Stopped;
}

/// `setup.S` (see `neuron_resolve_common`); `output_start..output_end` is the output's
/// tensor bytes when `slot` is an argument.
///
/// # Safety
/// The pending descriptors of `invocation` are readable, `num_args` of them, at most
/// [`MAX_ARGS`]; its platform translates with [`crate::translate::translate_range`].
#[cfg(target_os = "none")]
#[inline(always)]
unsafe fn resolve_common(
    invocation: &mut Invocation,
    slot: isize,
    num_args: usize,
    output_start: usize,
    output_end: usize,
) -> Stopped {
    // SAFETY: the caller's contract; `setup.S` writes only the invocation's copies,
    // resolutions and `arg_types`, and translate's `range_last` it only reads.
    unsafe { neuron_resolve_common(core::ptr::from_mut(invocation).cast(), slot, num_args, output_start, output_end) }
}

/// The host's stand-in for `setup.S`: it declines every slot, so [`Ready::refresh`],
/// whose semantics the assembly follows, resolves them all.
///
/// # Safety
/// None here; unsafe as the device's.
#[cfg(not(target_os = "none"))]
#[inline(always)]
unsafe fn resolve_common(_: &mut Invocation, slot: isize, num_args: usize, _: usize, _: usize) -> Stopped {
    Stopped::at(slot, num_args)
}

// The layout claims above, on the 32-bit device: `Ready` is 12 bytes, and the fields the
// pulls read sit within the reach of Xtensa's short-offset loads (`l8ui` 0..=255,
// `l16ui` 0..=510, `l32i` 0..=1020 bytes from the base register).
#[cfg(target_pointer_width = "32")]
const _: () = {
    use core::mem::{offset_of, size_of};
    const L8UI_REACH: usize = 255;
    const L16UI_REACH: usize = 510;
    const L32I_REACH: usize = 1020;
    assert!(size_of::<Ready>() == 12);
    assert!(offset_of!(Invocation, dst_taken) <= L8UI_REACH);
    assert!(offset_of!(Invocation, first_overlap) <= L8UI_REACH);
    assert!(offset_of!(Invocation, aliasing) <= L16UI_REACH);
    assert!(offset_of!(Invocation, reusable) <= L16UI_REACH);
    assert!(offset_of!(Invocation, output_overlaps) <= L16UI_REACH);
    assert!(offset_of!(Invocation, ready) + size_of::<[Ready; MAX_ARGS]>() - 4 <= L32I_REACH);
    assert!(offset_of!(Invocation, dst_resolved) + size_of::<Ready>() - 4 <= L32I_REACH);
    assert!(offset_of!(Invocation, failure) <= L32I_REACH);
};

/// The offsets `runtime/arch/xtensa/setup.S` uses.
#[cfg(target_os = "none")]
const _: () = {
    use core::mem::offset_of;
    assert!(offset_of!(Ready, data) == 0 && offset_of!(Ready, num_elem) == 4);
    assert!(offset_of!(Ready, arg_type) == 8 && offset_of!(Ready, dtype) == 9);
    assert!(offset_of!(Invocation, dst_resolved) == 20);
    assert!(offset_of!(Invocation, ready) == 32);
    assert!(offset_of!(Invocation, args) == 152);
    assert!(offset_of!(Invocation, result) == 160);
    assert!(offset_of!(Invocation, dst_desc) == 200);
    assert!(
        offset_of!(Invocation, parser) + offset_of!(ArgParser, extractor) + offset_of!(super::ArgExtractor, args)
            == 256
    );
    assert!(
        offset_of!(Invocation, parser) + offset_of!(ArgParser, extractor) + offset_of!(super::ArgExtractor, arg_types)
            == 736
    );
    assert!(OUTPUT_BIT == 1 << 31 && Stopped::COPIED == 1 << 10 && Stopped::STOPPED == 1 << 31 && MAX_ARGS <= 10);
};

impl Invocation {
    /// An idle invocation over the device runtime.
    pub const fn new() -> Self {
        // SAFETY: `Platform::DEVICE` is the runtime's own translate and TCM pool, whose
        // contracts are the ones `with_platform` asks for.
        unsafe { Self::with_platform(Platform::DEVICE) }
    }

    /// An idle invocation over `platform`.
    ///
    /// # Safety
    /// When `translate` gives `p` for `len` bytes, those bytes are device memory at
    /// `p .. p + len`, owned by no Rust object, valid for reads and writes, and
    /// `translate` gives the same answer, for as long as
    /// [`crate::translate::configure`] leaves the windows unchanged (setup reuses a
    /// translation in later ops until then). `tcm_alloc(n)` returns null or `n` writable bytes owned by the caller
    /// until `tcm_release` or the next `begin_op`, and never memory that `translate`
    /// maps.
    pub const unsafe fn with_platform(platform: Platform) -> Self {
        Invocation {
            platform,
            dst_desc: ArgTensor::ZEROED,
            phase: Phase::Idle,
            args: core::ptr::null(),
            num_args: 0,
            result: core::ptr::null_mut(),
            parser: ArgParser::new(),
            ready: [const { Cell::new(Ready::NONE) }; MAX_ARGS],
            pullable: 0,
            dst_taken: Cell::new(true),
            aliasing: Cell::new(0),
            reusable: 0,
            handed: [const { UnsafeCell::new(ArgTensor::ZEROED) }; MAX_ARGS + 1],
            output_overlaps: 0,
            first_overlap: 16,
            resolved_generation: 0,
            dst_resolved: Cell::new(Ready::NONE),
            last_status: Cell::new(Status::OK),
            invocation_status: Cell::new(Status::OK),
            initialized: false,
            failure: Cell::new(0),
        }
    }

    /// Records `result`'s status as the last one, and as the invocation's if it is the
    /// invocation's first failure.
    #[inline(always)]
    fn record<T>(&self, result: Result<T, ArgError>) -> Result<T, ArgError> {
        match &result {
            // The invocation's status stays what it was: OK, or its first failure.
            Ok(_) => self.last_status.set(Status::OK),
            Err(e) => {
                self.reject(*e);
            }
        }
        result
    }

    #[inline]
    fn record_status(&self, status: Status) {
        self.last_status.set(status);
        if self.invocation_status.get().is_ok() {
            self.invocation_status.set(status);
        }
    }

    /// Records `error` as the outcome of a call that failed (or that the C glue
    /// refused); returns its status.
    #[cold]
    #[inline(never)]
    pub(super) fn reject(&self, error: ArgError) -> Status {
        let status = Status::from(error);
        self.record_status(status);
        status
    }

    /// The status of the most recent call.
    pub fn last_status(&self) -> Status {
        self.last_status.get()
    }

    /// The first failure since `set_invocation` (or OK): what the loader reports.
    #[inline]
    pub fn invocation_status(&self) -> Status {
        self.invocation_status.get()
    }

    /// The argument that caused the invocation's first failure, while it is not
    /// reported: [`ArgFailure::NONE`] when none did (or it was reported).
    pub fn arg_failure(&self) -> ArgFailure {
        ArgFailure::from_word(self.failure.get())
    }

    /// [`invocation_status`](Self::invocation_status) for the loader once the kernel
    /// has ended (`customop_invocation_status`): when an argument caused the failure,
    /// the first call also writes its [`ArgFailure`] line to stdout, which the loader
    /// drains with the kernel's output.
    #[inline]
    pub fn end_status(&self) -> Status {
        self.report_failure();
        self.invocation_status()
    }

    /// Writes the [`ArgFailure`] line, if there is a record, as the runtime writes its
    /// other reports ([`ReportLine::report`](crate::start_exit::ReportLine::report)),
    /// and clears the record (once per invocation). Out of line, the test included: the
    /// C ABI's `customop_invocation_status` stays a call.
    #[inline(never)]
    fn report_failure(&self) {
        let word = self.failure.replace(0);
        if word != 0 {
            crate::start_exit::ReportLine::new().text(ArgFailure::LINE_PREFIX).hex(word).end().report();
        }
    }

    /// Records `error`, a failed pull of `argument` (an index, or [`ArgFailure::OUTPUT`])
    /// as the raw arg type `pulled` ([`reject`](Self::reject)); when it is the
    /// invocation's first failure, also which argument it was.
    #[cold]
    #[inline(never)]
    fn reject_pull(&self, error: ArgError, argument: u32, pulled: u8) {
        let first = self.invocation_status.get().is_ok();
        let status = self.reject(error);
        if !first {
            return;
        }
        // Past the last argument the byte is stale, and no message reads it; the
        // output's is not kept (a loader passes a tensor there, or none: `NO_OUTPUT`).
        let passed = self.parser.extractor.arg_types.get(argument as usize).copied().unwrap_or(0);
        // A pull's status is below 0x100 (`Status::ALL`'s argument codes).
        let failure = ArgFailure { status: status.0 as u8, argument: argument as u8, pulled, passed };
        self.failure.set(failure.to_word());
    }

    /// The loader's hand-off: `num_args` descriptors at `args` (stride 48, any
    /// alignment) and the output descriptor at `result` (null when the op has none),
    /// which `dst_tensor` reads and `return_tensor` overwrites. Starts a new invocation
    /// (statuses cleared); returns the status `setup` will meet: more than 10 arguments
    /// or a null `args` with arguments fail here and again at setup.
    ///
    /// # Safety
    /// If `num_args <= 10` and `args` is not null, `args` is valid for reads of
    /// `num_args` descriptors; if `result` is not null, it is valid for reads and writes
    /// of one descriptor (any alignment); both until `cleanup` or the next
    /// `set_invocation`.
    pub unsafe fn set_invocation(&mut self, args: *const ArgTensor, num_args: u32, result: *mut ArgTensor) -> Status {
        self.close();
        self.phase = Phase::Pending;
        self.args = args;
        self.num_args = num_args;
        self.result = result;
        self.invocation_status.set(Status::OK);
        self.failure.set(0);
        let status = match self.check_arg_block() {
            Ok(()) => Status::OK,
            Err(e) => e.into(),
        };
        self.record_status(status);
        status
    }

    fn check_arg_block(&self) -> Result<(), ArgError> {
        if self.num_args as usize > MAX_ARGS {
            return Err(ArgError::TooManyArgs(self.num_args));
        }
        if self.num_args > 0 && self.args.is_null() {
            return Err(ArgError::NullPointer);
        }
        Ok(())
    }

    /// Closes every fast path: nothing is handed out until the next setup.
    fn close(&mut self) {
        self.pullable = 0;
        self.dst_taken.set(true);
    }

    /// `customop_setup`: copies the pending descriptors into the parser, checks and
    /// translates each argument and the output once (see the module docs), resets the
    /// per-op state (argument index, output, TCM pool) and, on `first_call` or the very
    /// first setup, runs the one-time set-up.
    ///
    /// # Errors
    /// [`ArgError::AlreadySetUp`], [`ArgError::NoInvocation`],
    /// [`ArgError::TooManyArgs`], [`ArgError::NullPointer`]. A malformed argument is
    /// not an error here: the pull that meets it reports it.
    pub fn setup(&mut self, first_call: bool) -> Result<(), ArgError> {
        let result = self.try_setup::<false>(first_call);
        self.record(result)
    }

    /// [`setup`](Self::setup) for [`run`](Self::run), flat: `prepare` and its resolver
    /// inlined, two call levels less. On a Rust kernel's dispatch that saves a register
    /// window spill and refill (24 instructions) and the calls when the arguments are
    /// new, and costs 9 in the compare when they are the same (the inlined resolver's
    /// registers). The C glue's `customop_setup` keeps both out of line: a C kernel
    /// calls setup one level deeper, where the flat form costs a spill instead
    /// (docs/PERFORMANCE.md, "Dispatch").
    #[inline(never)]
    fn setup_for_run(&mut self) -> Result<(), ArgError> {
        let result = self.try_setup::<true>(false);
        self.record(result)
    }

    /// The work of [`setup`](Self::setup); `FLAT` inlines `prepare` and its resolver.
    #[inline(always)]
    fn try_setup<const FLAT: bool>(&mut self, first_call: bool) -> Result<(), ArgError> {
        match self.phase {
            Phase::Active => return Err(ArgError::AlreadySetUp),
            Phase::Idle => return Err(ArgError::NoInvocation),
            Phase::Pending => {}
        }
        self.check_arg_block()?;
        // SAFETY: `check_arg_block` passed, so `set_invocation`'s contract makes the
        // pending descriptors readable.
        unsafe {
            if FLAT {
                self.prepare::<true>();
            } else {
                self.prepare_out_of_line();
            }
        }
        self.parser.extractor.num_args = self.num_args;
        self.parser.curr_arg.set(0);
        self.pullable = self.num_args;
        self.dst_taken.set(false);
        self.aliasing.set(0);
        (self.platform.begin_op)(first_call || !self.initialized);
        self.initialized = true;
        self.phase = Phase::Active;
        Ok(())
    }

    /// Makes `dst_desc` and `parser.extractor.args` copies of the pending output and
    /// arguments, and `dst_resolved` and `ready` their resolutions. When all of them
    /// are, byte for byte, the runtime's copies already, each resolution is reusable and
    /// translation has not changed, there is nothing to copy, check or translate (a
    /// kernel dispatched again with the same arguments): 12 word compares each.
    /// `FLAT`: the resolver inlined (see `setup_for_run`).
    ///
    /// # Safety
    /// The pending descriptors are readable (`set_invocation`'s contract, with
    /// `check_arg_block` passed).
    #[inline(always)]
    unsafe fn prepare<const FLAT: bool>(&mut self) {
        let generation = crate::translate::generation();
        // SAFETY: the caller's contract.
        if !unsafe { self.all_reusable(generation) } {
            // SAFETY: the caller's contract.
            unsafe {
                if FLAT {
                    self.resolve(generation);
                } else {
                    self.resolve_out_of_line(generation);
                }
            }
        }
    }

    /// [`prepare`](Self::prepare), not flat, and not inlined (see `setup_for_run`).
    ///
    /// # Safety
    /// As [`prepare`](Self::prepare).
    #[inline(never)]
    unsafe fn prepare_out_of_line(&mut self) {
        // SAFETY: the caller's contract.
        unsafe { self.prepare::<false>() }
    }

    /// Whether every pending descriptor has the bytes of the runtime's copy, and each
    /// copy's resolution is reusable under `generation`.
    ///
    /// # Safety
    /// As [`prepare`](Self::prepare).
    #[inline(always)]
    unsafe fn all_reusable(&self, generation: u64) -> bool {
        let num_args = self.num_args as usize;
        // The bytes first: new arguments mostly differ in the output's first word, and
        // are then told apart in a few instructions.
        // SAFETY: the caller's contract; `result` is not null (checked).
        if self.result.is_null() || !unsafe { self.dst_desc.is_copy_of(self.result) } {
            return false;
        }
        let mut src = self.args;
        for copy in self.parser.extractor.args.iter().take(num_args) {
            // SAFETY: the caller's contract: `src` is one of the `num_args` pending
            // descriptors (`args` is not null when there are any), and the last `add`
            // is one past them.
            unsafe {
                if !copy.is_copy_of(src) {
                    return false;
                }
                src = src.add(1);
            }
        }
        let wanted = ((1u32 << num_args) - 1) | OUTPUT_BIT;
        generation == self.resolved_generation && self.reusable & wanted == wanted
    }

    /// [`resolve`](Self::resolve), not inlined.
    ///
    /// # Safety
    /// As [`prepare`](Self::prepare).
    #[inline(never)]
    unsafe fn resolve_out_of_line(&mut self, generation: u64) {
        // SAFETY: the caller's contract.
        unsafe { self.resolve(generation) }
    }

    /// Copies and resolves the pending output and arguments, except those whose copies
    /// have the same bytes and whose resolutions are still reusable under `generation`
    /// ([`Ready::refresh`]), the output first, then the arguments in order; each
    /// argument's overlap with the output is tested as it is resolved. On the device
    /// `setup.S` resolves the common descriptors ([`resolve_common`]) and hands each
    /// slot it declines to [`Ready::refresh`]; on the host (and with a translate fake)
    /// `Ready::refresh` resolves every slot.
    ///
    /// # Safety
    /// As [`prepare`](Self::prepare).
    #[inline(always)]
    unsafe fn resolve(&mut self, generation: u64) {
        let num_args = (self.num_args as usize).min(MAX_ARGS);
        let first = if self.result.is_null() {
            self.dst_desc = ArgTensor::ZEROED;
            self.dst_resolved.set(Ready::NONE);
            0
        } else {
            OUTPUT_SLOT
        };
        // SAFETY: the caller's contract.
        let stopped = unsafe { self.resolve_common_from(first, num_args) };
        let overlaps = if stopped.done() {
            // The overlap bits alone (`Stopped`).
            stopped.0 as u16
        } else {
            // SAFETY: the caller's contract.
            unsafe { self.resolve_from(stopped, generation, num_args) }
        };
        self.output_overlaps = overlaps;
        // `trailing_zeros` is a software bit count on this core (30 instructions), so
        // not for the usual case, where no argument overlaps the output.
        self.first_overlap = if overlaps == 0 { 16 } else { overlaps.trailing_zeros() as u8 };
        // `output_overlaps` covers this op's arguments: a later op with more must resolve
        // the others again, which recomputes it.
        // The output's bit even without an output: `dst_desc` is then zeroed and
        // `dst_resolved` what resolving those bytes gives (not ready), so an output
        // with the same bytes may reuse it as any other.
        self.reusable = ((1u32 << num_args) - 1) | OUTPUT_BIT;
        self.resolved_generation = generation;
    }

    /// [`resolve_common`] from `slot`, when the platform translates as the runtime
    /// does; otherwise stopped at `slot`, for [`Ready::refresh`].
    ///
    /// # Safety
    /// As [`prepare`](Self::prepare); `num_args` is at most [`MAX_ARGS`].
    #[inline(always)]
    unsafe fn resolve_common_from(&mut self, slot: isize, num_args: usize) -> Stopped {
        if self.platform.translate.is_some() {
            return Stopped::at(slot, num_args);
        }
        let (output_start, output_end) =
            if slot == OUTPUT_SLOT { (0, 0) } else { self.dst_resolved.get().tensor_bytes() };
        // SAFETY: the caller's contract.
        unsafe { resolve_common(self, slot, num_args, output_start, output_end) }
    }

    /// The rest of [`resolve`](Self::resolve) after `stopped`: the stopped slot by
    /// [`Ready::refresh`] (reusing its resolution when it is reusable under
    /// `generation`, the copy unchanged), then the next ones as at first. Returns the
    /// overlap bits of every argument. Out of line: on the device only for the slots `setup.S`
    /// declines, and its loop keeps the hot path's values out of the stack.
    ///
    /// # Safety
    /// As [`resolve_common_from`](Self::resolve_common_from).
    #[inline(never)]
    unsafe fn resolve_from(&mut self, mut stopped: Stopped, generation: u64, num_args: usize) -> u16 {
        let reusable = if generation == self.resolved_generation { self.reusable } else { 0 };
        let mut overlaps = 0;
        loop {
            overlaps |= stopped.overlaps();
            let stop = stopped.slot();
            let reuse = reusable & slot_bit(stop) != 0 && !stopped.copied();
            if stop == OUTPUT_SLOT {
                // SAFETY: `result` is not null (the output is a slot), so readable by
                // the caller's contract; it is not the runtime's `dst_desc`.
                unsafe { Ready::refresh(self.result, &mut self.dst_desc, &self.dst_resolved, &self.platform, reuse) };
            } else {
                let index = stop as usize;
                // The output's bytes, whichever resolved it.
                let (output_start, output_end) = self.dst_resolved.get().tensor_bytes();
                let extractor = &mut self.parser.extractor;
                // Always there (`index < num_args <= MAX_ARGS`); `get`, not an index
                // that could panic (the panic's message formats numbers: text).
                let (Some(copy), Some(ready), Some(arg_type)) =
                    (extractor.args.get_mut(index), self.ready.get(index), extractor.arg_types.get_mut(index))
                else {
                    return overlaps;
                };
                // SAFETY: `index < num_args`, so `src` is one of the pending descriptors
                // (the caller's contract), and `copy` the runtime's own.
                let (start, end) = unsafe {
                    let src = self.args.add(index);
                    Ready::refresh(src, copy, ready, &self.platform, reuse)
                };
                *arg_type = copy.arg_type;
                if start < output_end && output_start < end {
                    overlaps |= 1 << index;
                }
            }
            if stop + 1 >= num_args as isize {
                return overlaps;
            }
            // SAFETY: the caller's contract.
            stopped = unsafe { self.resolve_common_from(stop + 1, num_args) };
            if stopped.done() {
                return overlaps | stopped.overlaps();
            }
        }
    }

    #[inline(always)]
    fn check_active(&self) -> Result<(), ArgError> {
        if self.phase == Phase::Active { Ok(()) } else { Err(ArgError::NotSetUp) }
    }

    /// Takes the next argument, which must be the scalar `wanted` (a tensor for
    /// `None`): its index, whose `ready` slot holds what setup resolved. Records the
    /// status.
    #[inline(always)]
    fn pull(&self, wanted: Option<ScalarKind>) -> Result<usize, ArgError> {
        let index = self.parser.curr_arg.get() as usize;
        if index < self.pullable as usize
            && let Some(slot) = self.ready.get(index)
            && slot.get().arg_type == raw_type(wanted)
            // Only tensors can overlap the output (`output_overlaps`).
            && (wanted.is_some() || self.aliasing.get() & (1 << index) == 0)
        {
            self.parser.curr_arg.set(index as u32 + 1);
            self.last_status.set(Status::OK);
            return Ok(index);
        }
        // `pull_slow` returns only an argument's index (below `MAX_ARGS`); tested again
        // here, where the callers index with it, so that no bounds check of theirs can
        // panic: a panic with numbers would bring `core`'s integer formatting into every
        // image. An index past the arguments is what `resolve_next` says it is.
        match self.pull_slow(wanted)? {
            index if index < MAX_ARGS => Ok(index),
            _ => Err(ArgError::NoMoreArgs),
        }
    }

    /// The pull the fast path declined: every check in order, so the error is the one
    /// the documented order names; on success (which the fast path never declines,
    /// the host tests check) it pulls as the fast path does.
    #[cold]
    #[inline(never)]
    fn pull_slow(&self, wanted: Option<ScalarKind>) -> Result<usize, ArgError> {
        let result = self.resolve_next(wanted).map(|(index, ready)| {
            self.ready[index].set(ready);
            self.parser.curr_arg.set(index as u32 + 1);
            index
        });
        match result {
            Ok(_) => self.last_status.set(Status::OK),
            Err(error) => self.reject_pull(error, self.parser.curr_arg.get(), raw_type(wanted)),
        }
        result
    }

    /// Argument `index` as [`pull`](Self::pull) handed it out: its descriptor and
    /// what setup resolved.
    #[inline(always)]
    fn pulled(&self, index: usize) -> (&ArgTensor, Ready) {
        (&self.parser.extractor.args[index], self.ready[index].get())
    }

    fn resolve_next(&self, wanted: Option<ScalarKind>) -> Result<(usize, Ready), ArgError> {
        self.check_active()?;
        let index = self.parser.curr_arg.get() as usize;
        let extractor = &self.parser.extractor;
        let desc = match extractor.args.get(index) {
            Some(desc) if index < extractor.num_args as usize => desc,
            _ => return Err(ArgError::NoMoreArgs),
        };
        // The descriptor's own type byte (`arg_types[index]` is a copy of it).
        if desc.arg_type != raw_type(wanted) {
            return Err(type_mismatch(wanted, desc.arg_type));
        }
        // The ordered checks alone: a slow path, whatever the descriptor.
        let checked = desc.check_in_order()?;
        let data = self.platform.translate(&checked)?;
        let ready = Ready::of(&checked, data);
        if self.aliasing.get() & (1 << index) != 0 {
            return Err(ArgError::OutputAliasesInput);
        }
        Ok((index, ready))
    }

    /// Whether a tensor already pulled overlaps the output.
    #[inline(always)]
    fn output_overlaps_pulled(&self) -> bool {
        u32::from(self.first_overlap) < self.parser.curr_arg.get()
    }

    /// `customop_next_tensor`: the next argument, which must be a tensor.
    ///
    /// # Errors
    /// [`ArgError::NotSetUp`], [`ArgError::NoMoreArgs`], [`ArgError::ExpectedTensor`],
    /// [`ArgError::Descriptor`], [`ArgError::Translate`],
    /// [`ArgError::RangeOutsideWindow`], [`ArgError::TooLarge`]. (C kernels may work in
    /// place: the input may overlap the output.)
    ///
    /// The descriptor is a copy of the runtime's, which C may write through the pointer
    /// the C glue makes of it; valid until the next setup.
    pub fn next_tensor(&self) -> Result<&ArgTensor, ArgError> {
        // SAFETY: a handed-out copy, written only before it is handed out (`hand_out`)
        // and through the pointer by C, which has none for this slot in this
        // invocation; it stays until `setup` or `set_invocation`, which take `self`
        // mutably, so not while this borrow lives.
        self.next_tensor_for_c().map(|handed| unsafe { &*handed })
    }

    /// [`next_tensor`](Self::next_tensor) for the C glue: a pointer C may write
    /// through.
    pub(super) fn next_tensor_for_c(&self) -> Result<*mut ArgTensor, ArgError> {
        let index = self.pull(None)?;
        Ok(self.hand_out(index, self.pulled(index).0))
    }

    /// Copies `desc` into `handed[slot]`; returns the copy, as a pointer a C kernel may
    /// write through.
    #[inline(always)]
    fn hand_out(&self, slot: usize, desc: &ArgTensor) -> *mut ArgTensor {
        let handed = self.handed[slot].get();
        // SAFETY: `handed[slot]` is written here once per invocation (argument `slot` is
        // pulled once, the output taken once), before anything has a pointer to it in
        // this invocation; references to it borrow `self`, which `set_invocation` and
        // `setup` take mutably, so none from an earlier invocation is live. `desc` is
        // the runtime's copy, not it.
        unsafe { ArgTensor::copy(desc, handed) };
        handed
    }

    /// Records `OK`: a C shape accessor's answer (read from the descriptor's fields).
    #[inline(always)]
    pub(super) fn record_ok(&self) {
        self.last_status.set(Status::OK);
    }

    /// The next argument as scalar `T` of `kind`: its one element, read.
    #[inline(always)]
    fn next_scalar<T: Element>(&self, kind: ScalarKind) -> Result<T, ArgError> {
        let index = self.pull(Some(kind))?;
        let data = self.pulled(index).1.data.cast::<T>();
        if data.is_aligned() {
            // SAFETY: a scalar of `kind`, whose dtype's size is `T`'s: one element (not
            // empty, so `data` is not null), all of whose bytes `translate` mapped to
            // `data`; aligned (checked).
            Ok(unsafe { data.read() })
        } else {
            // SAFETY: as above, any alignment.
            Ok(unsafe { read_unaligned(data) })
        }
    }

    /// `customop_next_int`. Errors as [`next_tensor`](Self::next_tensor), with
    /// [`ArgError::ExpectedScalar`] / [`ArgError::ScalarKindMismatch`] for a wrong type.
    pub fn next_int(&self) -> Result<i32, ArgError> {
        self.next_scalar(ScalarKind::Int)
    }

    /// `customop_next_longlong`. Errors as [`next_int`](Self::next_int).
    pub fn next_longlong(&self) -> Result<i64, ArgError> {
        self.next_scalar(ScalarKind::LongLong)
    }

    /// `customop_next_float`. Errors as [`next_int`](Self::next_int).
    pub fn next_float(&self) -> Result<f32, ArgError> {
        self.next_scalar(ScalarKind::Float)
    }

    /// Takes the output, whose descriptor is `dst_desc` (the runtime's copy) and
    /// resolution `dst_resolved`. `exclusive`: the output becomes a writable Rust view,
    /// so no input handed out before or after may overlap it. Records the status.
    #[inline(always)]
    fn take_output(&self, exclusive: bool) -> Result<(), ArgError> {
        if !self.dst_taken.get()
            && self.dst_resolved.get().arg_type == ArgType::Tensor as u8
            && !(exclusive && self.output_overlaps_pulled())
        {
            if exclusive {
                self.aliasing.set(self.output_overlaps);
            }
            self.dst_taken.set(true);
            self.last_status.set(Status::OK);
            return Ok(());
        }
        self.take_output_slow(exclusive)
    }

    /// The output the fast path declined: every check in order (see `pull_slow`).
    #[cold]
    #[inline(never)]
    fn take_output_slow(&self, exclusive: bool) -> Result<(), ArgError> {
        let result = self.resolve_output(exclusive).map(|_| {
            if exclusive {
                self.aliasing.set(self.output_overlaps);
            }
            self.dst_taken.set(true);
        });
        match result {
            Ok(()) => self.last_status.set(Status::OK),
            Err(error) => self.reject_pull(error, ArgFailure::OUTPUT.into(), ArgType::Tensor as u8),
        }
        result
    }

    fn resolve_output(&self, exclusive: bool) -> Result<Ready, ArgError> {
        self.check_active()?;
        if self.dst_taken.get() {
            return Err(ArgError::DstAlreadyTaken);
        }
        if self.result.is_null() {
            return Err(ArgError::NoOutput);
        }
        // As in `resolve_next`.
        let checked = self.dst_desc.check_in_order()?;
        if checked.arg_type != ArgType::Tensor {
            return Err(ArgError::ExpectedTensor(checked.arg_type));
        }
        let data = self.platform.translate(&checked)?;
        let ready = Ready::of(&checked, data);
        if exclusive && self.output_overlaps_pulled() {
            return Err(ArgError::OutputAliasesInput);
        }
        Ok(ready)
    }

    /// `get_dst_tensor`: the pre-shaped output, once per invocation.
    ///
    /// # Errors
    /// [`ArgError::NotSetUp`], [`ArgError::DstAlreadyTaken`], [`ArgError::NoOutput`],
    /// then as [`next_tensor`](Self::next_tensor).
    ///
    /// As with [`next_tensor`](Self::next_tensor), the descriptor is a copy.
    pub fn dst_tensor(&self) -> Result<&ArgTensor, ArgError> {
        // SAFETY: as in `next_tensor`.
        self.dst_tensor_for_c().map(|handed| unsafe { &*handed })
    }

    /// [`dst_tensor`](Self::dst_tensor) for the C glue: a pointer C may write through.
    pub(super) fn dst_tensor_for_c(&self) -> Result<*mut ArgTensor, ArgError> {
        self.take_output(false)?;
        Ok(self.hand_out(MAX_ARGS, &self.dst_desc))
    }

    /// `customop_return_tensor`: writes `desc` (which must be a valid tensor
    /// descriptor) to the loader's result descriptor.
    ///
    /// # Errors
    /// [`ArgError::NotSetUp`], [`ArgError::NoOutput`], [`ArgError::Descriptor`],
    /// [`ArgError::ExpectedTensor`]; nothing is written then.
    pub fn return_tensor(&self, desc: &ArgTensor) -> Result<(), ArgError> {
        let result = self.try_return(desc);
        self.record(result)
    }

    fn try_return(&self, desc: &ArgTensor) -> Result<(), ArgError> {
        self.check_active()?;
        if self.result.is_null() {
            return Err(ArgError::NoOutput);
        }
        let checked = desc.check()?;
        if checked.arg_type != ArgType::Tensor {
            return Err(ArgError::ExpectedTensor(checked.arg_type));
        }
        self.write_result(desc);
        Ok(())
    }

    /// Writes `desc`, a valid tensor descriptor, to the loader's result descriptor (not
    /// null). When `desc` is the runtime's copy of the output (what `dst_tensor` and
    /// [`Args::output`] hand out), its bytes are already there: setup read them from
    /// there, and only the C glue, which passes a copy, can change either since.
    #[inline(always)]
    fn write_result(&self, desc: &ArgTensor) {
        if !core::ptr::eq(desc, &self.dst_desc) {
            // SAFETY: `result` is not null, so writable by `set_invocation`'s contract,
            // and it is not `desc`, which is the runtime's own copy or the caller's.
            unsafe { ArgTensor::copy(desc, self.result) };
        }
    }

    /// The return of a Rust kernel's result: every [`Tensor`] comes from a checked
    /// tensor descriptor (an argument or the output), so only the output's presence is
    /// left to check.
    fn return_checked(&self, desc: &ArgTensor) {
        let result = if self.result.is_null() {
            Err(ArgError::NoOutput)
        } else {
            self.write_result(desc);
            Ok(())
        };
        let _ = self.record(result);
    }

    /// `customop_tensor_data`: the translated address of `desc`'s first element (null
    /// for an empty tensor), for C kernels.
    ///
    /// # Errors
    /// [`ArgError::NotSetUp`], [`ArgError::Descriptor`], [`ArgError::Translate`],
    /// [`ArgError::RangeOutsideWindow`], [`ArgError::TooLarge`].
    pub fn tensor_data(&self, desc: &ArgTensor) -> Result<*mut u8, ArgError> {
        let result = self.check_active().and_then(|()| self.platform.translate(&desc.check()?));
        self.record(result)
    }

    /// Records a kernel's own failure (`customop_fail` for C kernels, the `Err` of a
    /// Rust kernel): the last status, and the invocation's if it is the first failure.
    /// Returns the status.
    pub fn fail(&self, error: KernelError) -> Status {
        let status = Status::from(error);
        self.record_status(status);
        status
    }

    /// Records a failure the C++ tensor API names by its [`Status`] (the last status, and
    /// the invocation's if it is the first failure). Returns the status.
    pub fn fail_status(&self, status: Status) -> Status {
        self.record_status(status);
        status
    }

    /// The validated form of `desc`, for the C shape accessors (`customop_tensor_numel`
    /// and the others). Records the status; needs no active invocation.
    ///
    /// # Errors
    /// [`ArgError::Descriptor`].
    pub fn describe(&self, desc: &ArgTensor) -> Result<TensorDesc, ArgError> {
        self.record(desc.validate().map_err(ArgError::Descriptor))
    }

    /// `customop_cleanup`: fences every write (`end_op`) and ends the invocation.
    /// Returns the invocation's status (`NOT_SET_UP` if cleanup came without setup and
    /// nothing failed before).
    pub fn cleanup(&mut self) -> Status {
        let result = self.check_active();
        if result.is_ok() {
            (self.platform.end_op)();
            self.close();
            self.phase = Phase::Idle;
            self.args = core::ptr::null();
            self.result = core::ptr::null_mut();
        }
        let _ = self.record(result);
        self.invocation_status()
    }

    /// Runs a Rust kernel over the pending invocation: setup, the kernel, the return of
    /// its tensor (or its error as the status), cleanup. Returns the invocation status.
    #[inline]
    pub fn run<K>(&mut self, kernel: K) -> Status
    where
        K: for<'a> FnOnce(&'a Args) -> Result<Tensor<'a>, KernelError>,
    {
        if self.setup_for_run().is_err() {
            return self.invocation_status();
        }
        match kernel(Args::new(self)) {
            Ok(tensor) => self.return_checked(tensor.descriptor()),
            Err(error) => {
                self.fail(error);
            }
        }
        self.cleanup()
    }
}

impl Default for Invocation {
    fn default() -> Self {
        Self::new()
    }
}

/// What a Rust kernel receives: its arguments, pulled in order, and the output.
///
/// Pulls take `&self`, so tensors from earlier pulls stay usable. Each failed pull
/// consumes nothing and is recorded in the invocation's status.
///
/// ```
/// use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};
///
/// /// out = x * alpha + y, for arguments (tensor x, float alpha, tensor y).
/// fn axpy(args: &Args) -> Result<Tensor<'_>, KernelError> {
///     let x = args.tensor()?;
///     let alpha = args.float()?;
///     let y = args.tensor()?;
///     let mut out = args.output()?;
///     let (x, y) = (x.as_slice::<f32>()?, y.as_slice::<f32>()?);
///     for (o, (a, b)) in out.as_mut_slice::<f32>()?.iter_mut().zip(x.iter().zip(y)) {
///         *o = a * alpha + b;
///     }
///     Ok(out)
/// }
/// ```
#[repr(transparent)]
pub struct Args(Invocation);

impl Args {
    #[inline(always)]
    fn new(invocation: &Invocation) -> &Args {
        // SAFETY: `Args` is a `repr(transparent)` wrapper of `Invocation`, so the
        // pointer cast keeps layout and the borrow's lifetime.
        unsafe { &*core::ptr::from_ref(invocation).cast::<Args>() }
    }

    /// The next argument, which must be a tensor: a read-only view.
    ///
    /// # Errors
    /// As [`Invocation::next_tensor`], and [`ArgError::OutputAliasesInput`] if it
    /// overlaps the output already taken.
    pub fn tensor(&self) -> Result<Tensor<'_>, ArgError> {
        let inv = &self.0;
        let (desc, ready) = inv.pulled(inv.pull(None)?);
        // SAFETY: setup translated all of the tensor's bytes for the invocation (the
        // platform's contract), which `&self` spans; read-only, and the writable output
        // overlaps no input handed out (`aliasing`, `output_overlaps`: checked both ways).
        Ok(unsafe { Tensor::new(desc, ready.dtype, ready.num_elem, ready.data, false, &inv.platform) })
    }

    /// The next argument as an `int` scalar. Errors as [`Invocation::next_int`].
    pub fn int(&self) -> Result<i32, ArgError> {
        self.0.next_scalar(ScalarKind::Int)
    }

    /// The next argument as a `long long` scalar. Errors as [`Invocation::next_int`].
    pub fn longlong(&self) -> Result<i64, ArgError> {
        self.0.next_scalar(ScalarKind::LongLong)
    }

    /// The next argument as a `float` scalar. Errors as [`Invocation::next_int`].
    pub fn float(&self) -> Result<f32, ArgError> {
        self.0.next_scalar(ScalarKind::Float)
    }

    /// The pre-shaped output, writable; once per invocation, at any point in the pulls.
    ///
    /// # Errors
    /// As [`Invocation::dst_tensor`], and [`ArgError::OutputAliasesInput`] if it
    /// overlaps an input tensor already pulled.
    pub fn output(&self) -> Result<Tensor<'_>, ArgError> {
        let inv = &self.0;
        inv.take_output(true)?;
        let (desc, ready) = (&inv.dst_desc, inv.dst_resolved.get());
        // SAFETY: as in `tensor`; writable, taken once per invocation, and overlapping
        // no input pulled before or after (`output_overlaps`, `aliasing`).
        Ok(unsafe { Tensor::new(desc, ready.dtype, ready.num_elem, ready.data, true, &inv.platform) })
    }

    /// Arguments not yet pulled.
    pub fn remaining(&self) -> usize {
        let extractor = &self.0.parser.extractor;
        (extractor.num_args as usize).saturating_sub(self.0.parser.curr_arg.get() as usize)
    }

    /// `len` zeroed elements of `T` in the op's TCM pool, released when dropped.
    ///
    /// # Errors
    /// [`TensorError::TcmExhausted`] when the pool (16 KiB per op) has no room.
    pub fn tcm_buffer<T: Element>(&self, len: usize) -> Result<TcmBuffer<'_, T>, TensorError> {
        TcmBuffer::allocate(&self.0.platform, len)
    }
}
