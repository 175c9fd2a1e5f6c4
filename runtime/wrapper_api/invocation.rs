//! The pull stream's state machine ([`Invocation`]), the services it needs
//! ([`Platform`]), and the kernel-facing cursor ([`Args`]).
//!
//! One invocation, as the loader and a kernel drive it:
//!
//! ```text
//! loader:  set_invocation(args, n, result)          -> Pending
//! kernel:  setup(first_call)                        -> Active (descriptors copied)
//!          next_tensor / next_int / next_longlong / next_float / dst_tensor ...
//!          return_tensor(t)                         (writes *result)
//!          cleanup()                                -> Idle  (memw + sync)
//! loader:  invocation_status()                      first error of the invocation
//! ```

use core::cell::Cell;

use super::{
    ArgError, ArgParser, ArgTensor, ArgType, Checked, DescriptorError, Element, KernelError, MAX_ARGS, ScalarKind,
    Status, TcmBuffer, Tensor, TensorError,
};
use crate::translate::TranslateError;

/// A framework address to device pointer translation, as `neuron_translate`.
pub type TranslateFn = fn(u64) -> Result<*mut u8, TranslateError>;

/// The runtime services the pull stream and tensor API use, as function pointers so
/// host tests can put fakes behind them. [`Platform::DEVICE`] is the real runtime.
#[derive(Clone, Copy)]
pub struct Platform {
    /// Framework address to device pointer; `None` is the runtime's own
    /// ([`crate::translate::translate`], `neuron_translate`). Each tensor costs one call
    /// that translates its first and last byte, with the runtime's translation inlined.
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
}

/// The device pointer of the `len` bytes (`len > 0`) at framework `address`, if they
/// all map linearly within one window: the last byte translates, by `translate`
/// ([`Platform::translate`]), to `len - 1` bytes past the first. Not inlined, so that
/// the runtime's own translation can be, twice, in here: the pulls are too large for
/// LLVM to inline it into them at `opt-level = "s"`.
///
/// # Errors
/// [`ArgError::Translate`] when the first byte has no window,
/// [`ArgError::RangeOutsideWindow`] when the range wraps, runs past the window, or
/// starts at null.
#[inline(never)]
fn translate_range(translate: Option<TranslateFn>, address: u64, len: usize) -> Result<*mut u8, ArgError> {
    match translate {
        None => translate_range_with(crate::translate::translate, address, len),
        Some(translate) => translate_range_with(translate, address, len),
    }
}

#[inline(always)]
fn translate_range_with(translate: TranslateFn, address: u64, len: usize) -> Result<*mut u8, ArgError> {
    let first = translate(address).map_err(ArgError::Translate)?;
    let start = first as usize;
    let end = start.wrapping_add(len);
    // `len - 1` in `usize` (`len > 0`): a 64-bit subtraction costs a borrow.
    let last_address = address.wrapping_add(len.wrapping_sub(1) as u64);
    if first.is_null() || end < start || last_address < address {
        return Err(ArgError::RangeOutsideWindow);
    }
    match translate(last_address) {
        Ok(last) if last as usize == end - 1 => Ok(first),
        _ => Err(ArgError::RangeOutsideWindow),
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
    // HOOK(issue 3): the vendor's `fsync`; when the stdout ring needs publishing to the
    // loader, that call goes here. The ring is written in place today.
}

/// Why the argument of raw type `found` is not what the pull `wanted` (a tensor for
/// `None`); the two differ.
#[cold]
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

/// A translated, half-open range of device addresses (`start == end` when empty).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct ByteRange {
    start: usize,
    end: usize,
}

impl ByteRange {
    const EMPTY: ByteRange = ByteRange { start: 0, end: 0 };

    fn overlaps(self, other: ByteRange) -> bool {
        self.start < other.end && other.start < self.end
    }
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

/// A validated, translated argument ready to be consumed.
struct Resolved {
    index: usize,
    checked: Checked,
    data: *mut u8,
    range: ByteRange,
}

/// One core's pull-stream state: the loader's argument block, the [`ArgParser`] the
/// kernel drains, the output, and the statuses. The C ABI keeps one in a `CoreLocal`;
/// Rust kernels see it as [`Args`].
///
/// Every call records its status ([`last_status`](Self::last_status)); the first
/// failure since `set_invocation` is the invocation's status, which the loader reads.
pub struct Invocation {
    platform: Platform,
    phase: Phase,
    args: *const ArgTensor,
    num_args: u32,
    result: *mut ArgTensor,
    parser: ArgParser,
    dst: ArgTensor,
    dst_taken: Cell<bool>,
    dst_range: Cell<ByteRange>,
    /// Translated range of each pulled argument (empty for scalars), by index.
    input_ranges: [Cell<ByteRange>; MAX_ARGS],
    last_status: Cell<Status>,
    invocation_status: Cell<Status>,
    initialized: bool,
}

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
    /// `translate` maps linearly within each window: when the first and last byte of a
    /// range translate to `p` and `p + len - 1`, the whole range is device memory valid
    /// for reads and writes until `end_op`, owned by no Rust object. `tcm_alloc(n)`
    /// returns null or `n` writable bytes owned by the caller until `tcm_release` or the
    /// next `begin_op`, and never memory that `translate` maps.
    pub const unsafe fn with_platform(platform: Platform) -> Self {
        Invocation {
            platform,
            phase: Phase::Idle,
            args: core::ptr::null(),
            num_args: 0,
            result: core::ptr::null_mut(),
            parser: ArgParser::new(),
            dst: ArgTensor::ZEROED,
            dst_taken: Cell::new(false),
            dst_range: Cell::new(ByteRange::EMPTY),
            input_ranges: [const { Cell::new(ByteRange::EMPTY) }; MAX_ARGS],
            last_status: Cell::new(Status::OK),
            invocation_status: Cell::new(Status::OK),
            initialized: false,
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

    /// The loader's hand-off: `num_args` descriptors at `args` (stride 48, any
    /// alignment) and the output descriptor at `result` (null when the op has none),
    /// which `dst_tensor` reads and `return_tensor` overwrites. Starts a new invocation
    /// (statuses cleared); returns the status `setup` will meet: more than 10 arguments
    /// or a null `args` with arguments fail here and again at setup.
    ///
    /// # Safety
    /// If `num_args <= 10` and `args` is not null, `args` is valid for reads of
    /// `num_args` descriptors; if `result` is not null, it is valid for reads and writes
    /// of one descriptor; both until `cleanup` or the next `set_invocation`.
    pub unsafe fn set_invocation(&mut self, args: *const ArgTensor, num_args: u32, result: *mut ArgTensor) -> Status {
        self.phase = Phase::Pending;
        self.args = args;
        self.num_args = num_args;
        self.result = result;
        self.invocation_status.set(Status::OK);
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

    /// `customop_setup`: copies the pending descriptors into the parser, resets the
    /// per-op state (argument index, output, TCM pool) and, on `first_call` or the very
    /// first setup, runs the one-time set-up.
    ///
    /// # Errors
    /// [`ArgError::AlreadySetUp`], [`ArgError::NoInvocation`],
    /// [`ArgError::TooManyArgs`], [`ArgError::NullPointer`].
    pub fn setup(&mut self, first_call: bool) -> Result<(), ArgError> {
        let result = self.try_setup(first_call);
        self.record(result)
    }

    fn try_setup(&mut self, first_call: bool) -> Result<(), ArgError> {
        match self.phase {
            Phase::Active => return Err(ArgError::AlreadySetUp),
            Phase::Idle => return Err(ArgError::NoInvocation),
            Phase::Pending => {}
        }
        self.check_arg_block()?;
        let extractor = &mut self.parser.extractor;
        for (i, slot) in extractor.args.iter_mut().enumerate() {
            if i == self.num_args as usize {
                break;
            }
            // SAFETY: `i < num_args <= 10` and `args` is not null (checked), so it is
            // readable here by `set_invocation`'s contract; `slot` is the runtime's own.
            unsafe { ArgTensor::copy(self.args.add(i), slot) };
            extractor.arg_types[i] = slot.arg_type;
        }
        extractor.num_args = self.num_args;
        self.parser.curr_arg.set(0);
        if self.result.is_null() {
            self.dst = ArgTensor::ZEROED;
        } else {
            // SAFETY: `result` is not null, so readable by `set_invocation`'s contract,
            // and not the runtime's own `dst`.
            unsafe { ArgTensor::copy(self.result, &mut self.dst) };
        }
        self.dst_taken.set(false);
        (self.platform.begin_op)(first_call || !self.initialized);
        self.initialized = true;
        self.phase = Phase::Active;
        Ok(())
    }

    #[inline(always)]
    fn check_active(&self) -> Result<(), ArgError> {
        if self.phase == Phase::Active { Ok(()) } else { Err(ArgError::NotSetUp) }
    }

    /// Translates the bytes of a checked descriptor: the first and last byte must land
    /// `len - 1` apart, in one window. Empty tensors are not translated (null data).
    #[inline(always)]
    fn translate_range(&self, checked: &Checked) -> Result<(*mut u8, ByteRange), ArgError> {
        let num_elem = checked.num_elem as usize;
        if num_elem == 0 {
            return Ok((core::ptr::null_mut(), ByteRange::EMPTY));
        }
        let shift = checked.dtype.size_log2();
        if num_elem > isize::MAX as usize >> shift {
            return Err(ArgError::TooLarge);
        }
        let len = num_elem << shift;
        let data = translate_range(self.platform.translate, checked.address, len)?;
        // `translate_range` checked that the range does not wrap.
        Ok((data, ByteRange { start: data as usize, end: data as usize + len }))
    }

    /// Validates and translates the next argument, which must be the scalar `wanted`
    /// (a tensor for `None`), without consuming it.
    #[inline(always)]
    fn peek(&self, wanted: Option<ScalarKind>) -> Result<Resolved, ArgError> {
        self.check_active()?;
        let index = self.parser.curr_arg.get() as usize;
        let extractor = &self.parser.extractor;
        let desc = match extractor.args.get(index) {
            Some(desc) if index < extractor.num_args as usize => desc,
            _ => return Err(ArgError::NoMoreArgs),
        };
        // The descriptor's own type byte (`arg_types[index]` is a copy of it).
        if desc.arg_type != wanted.map_or(ArgType::Tensor, ScalarKind::arg_type) as u8 {
            return Err(type_mismatch(wanted, desc.arg_type));
        }
        let checked = desc.check()?;
        let (data, range) = self.translate_range(&checked)?;
        // A scalar is copied out, so it cannot alias the output: no range to remember.
        let range = if wanted.is_none() { range } else { ByteRange::EMPTY };
        Ok(Resolved { index, checked, data, range })
    }

    /// Consumes the argument `peek` resolved; its bytes are remembered for the output's
    /// aliasing check.
    #[inline(always)]
    fn consume(&self, resolved: &Resolved) {
        self.input_ranges[resolved.index].set(resolved.range);
        self.parser.curr_arg.set(resolved.index as u32 + 1);
    }

    /// `customop_next_tensor`: the next argument, which must be a tensor.
    ///
    /// # Errors
    /// [`ArgError::NotSetUp`], [`ArgError::NoMoreArgs`], [`ArgError::ExpectedTensor`],
    /// [`ArgError::Descriptor`], [`ArgError::Translate`],
    /// [`ArgError::RangeOutsideWindow`], [`ArgError::TooLarge`].
    pub fn next_tensor(&self) -> Result<&ArgTensor, ArgError> {
        let result = self.peek(None).map(|resolved| {
            self.consume(&resolved);
            &self.parser.extractor.args[resolved.index]
        });
        self.record(result)
    }

    /// The next argument as scalar `T` of `kind`: its one element, translated and read.
    #[inline(always)]
    fn next_scalar<T: Element>(&self, kind: ScalarKind) -> Result<T, ArgError> {
        let result = self.peek(Some(kind)).map(|resolved| {
            self.consume(&resolved);
            let data = resolved.data.cast::<T>();
            // SAFETY: validation made it a one-element tensor of `kind`'s dtype, whose
            // size is `T`'s, and `translate_range` mapped all its bytes to `data`
            // (non-null: not empty), aligned or not (an aligned read is one load).
            unsafe { if data.is_aligned() { data.read() } else { data.read_unaligned() } }
        });
        self.record(result)
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

    /// Validates and translates the output without taking it.
    #[inline(always)]
    fn peek_dst(&self) -> Result<(Checked, *mut u8, ByteRange), ArgError> {
        self.check_active()?;
        if self.dst_taken.get() {
            return Err(ArgError::DstAlreadyTaken);
        }
        if self.result.is_null() {
            return Err(ArgError::NoOutput);
        }
        let checked = self.dst.check()?;
        if checked.arg_type != ArgType::Tensor {
            return Err(ArgError::ExpectedTensor(checked.arg_type));
        }
        let (data, range) = self.translate_range(&checked)?;
        Ok((checked, data, range))
    }

    #[inline(always)]
    fn take_dst(&self, range: ByteRange) {
        self.dst_taken.set(true);
        self.dst_range.set(range);
    }

    /// `get_dst_tensor`: the pre-shaped output, once per invocation.
    ///
    /// # Errors
    /// [`ArgError::NotSetUp`], [`ArgError::DstAlreadyTaken`], [`ArgError::NoOutput`],
    /// then as [`next_tensor`](Self::next_tensor).
    pub fn dst_tensor(&self) -> Result<&ArgTensor, ArgError> {
        let result = self.peek_dst().map(|(_, _, range)| {
            self.take_dst(range);
            &self.dst
        });
        self.record(result)
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
        if !core::ptr::eq(desc, &self.dst) {
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
        let result = self.check_active().and_then(|()| self.translate_range(&desc.check()?)).map(|(data, _)| data);
        self.record(result)
    }

    /// `customop_cleanup`: fences every write (`end_op`) and ends the invocation.
    /// Returns the invocation's status (`NOT_SET_UP` if cleanup came without setup and
    /// nothing failed before).
    pub fn cleanup(&mut self) -> Status {
        let result = self.check_active();
        if result.is_ok() {
            (self.platform.end_op)();
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
        if self.setup(false).is_err() {
            return self.invocation_status();
        }
        match kernel(Args::new(self)) {
            Ok(tensor) => self.return_checked(tensor.descriptor()),
            Err(error) => self.record_status(error.into()),
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
        let result = inv.peek(None).and_then(|resolved| {
            if inv.dst_taken.get() && resolved.range.overlaps(inv.dst_range.get()) {
                return Err(ArgError::OutputAliasesInput);
            }
            inv.consume(&resolved);
            let desc = &inv.parser.extractor.args[resolved.index];
            // SAFETY: `translate_range` mapped all of the tensor's bytes for the
            // invocation (the platform's contract), which `&self` spans; read-only, and
            // the writable output overlaps no input (checked here and in `output`).
            Ok(unsafe { Tensor::new(desc, &resolved.checked, resolved.data, false, &inv.platform) })
        });
        inv.record(result)
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
        let result = inv.peek_dst().and_then(|(checked, data, range)| {
            let pulled = inv.parser.curr_arg.get() as usize;
            if inv.input_ranges[..pulled].iter().any(|r| r.get().overlaps(range)) {
                return Err(ArgError::OutputAliasesInput);
            }
            inv.take_dst(range);
            // SAFETY: as in `tensor`; writable, taken once per invocation (`dst_taken`),
            // and overlapping no input pulled before or after (checked both ways).
            Ok(unsafe { Tensor::new(&inv.dst, &checked, data, true, &inv.platform) })
        });
        inv.record(result)
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
