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
    ArgError, ArgParser, ArgTensor, ArgType, DescriptorError, Element, KernelError, MAX_ARGS, ScalarKind, Status,
    TcmBuffer, Tensor, TensorDesc, TensorError,
};
use crate::translate::TranslateError;

/// The runtime services the pull stream and tensor API use, as function pointers so
/// host tests can put fakes behind them. [`Platform::DEVICE`] is the real runtime.
#[derive(Clone, Copy)]
pub struct Platform {
    /// Framework address to device pointer (`neuron_translate`).
    pub translate: fn(u64) -> Result<*mut u8, TranslateError>,
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
        translate: crate::translate::translate,
        tcm_alloc: crate::allocators::tcm::tcm_alloc,
        tcm_release: crate::allocators::tcm::tcm_release,
        begin_op: device_begin_op,
        end_op: device_end_op,
    };
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
    view: TensorDesc,
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
    fn record<T>(&self, result: Result<T, ArgError>) -> Result<T, ArgError> {
        let status = match &result {
            Ok(_) => Status::OK,
            Err(e) => Status::from(*e),
        };
        self.record_status(status);
        result
    }

    fn record_status(&self, status: Status) {
        self.last_status.set(status);
        if self.invocation_status.get().is_ok() {
            self.invocation_status.set(status);
        }
    }

    /// Records `error` as the outcome of a call the C glue refused; returns its status.
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
        for i in 0..self.num_args as usize {
            // SAFETY: `i < num_args <= 10` and `args` is not null (checked), so it is
            // readable here by `set_invocation`'s contract; any bytes are a valid
            // `ArgTensor`, and `read_unaligned` accepts any alignment.
            let desc = unsafe { self.args.add(i).read_unaligned() };
            extractor.arg_types[i] = desc.arg_type;
            extractor.args[i] = desc;
        }
        extractor.num_args = self.num_args;
        self.parser.curr_arg.set(0);
        self.dst = if self.result.is_null() {
            ArgTensor::ZEROED
        } else {
            // SAFETY: `result` is not null, so readable by `set_invocation`'s contract.
            unsafe { self.result.read_unaligned() }
        };
        self.dst_taken.set(false);
        (self.platform.begin_op)(first_call || !self.initialized);
        self.initialized = true;
        self.phase = Phase::Active;
        Ok(())
    }

    fn check_active(&self) -> Result<(), ArgError> {
        if self.phase == Phase::Active { Ok(()) } else { Err(ArgError::NotSetUp) }
    }

    /// Translates the bytes of `view`: the first and last byte must land `len - 1`
    /// apart, in one window. Empty tensors are not translated (null data).
    fn translate_range(&self, view: &TensorDesc) -> Result<(*mut u8, ByteRange), ArgError> {
        let len = view.byte_len();
        if len == 0 {
            return Ok((core::ptr::null_mut(), ByteRange::EMPTY));
        }
        let len = usize::try_from(len).ok().filter(|&l| l <= isize::MAX as usize).ok_or(ArgError::TooLarge)?;
        let translate = self.platform.translate;
        let first = translate(view.address()).map_err(ArgError::Translate)?;
        let start = first as usize;
        let last_addr = view.address().checked_add(len as u64 - 1);
        let last = last_addr.and_then(|a| translate(a).ok()).map(|p| p as usize);
        match start.checked_add(len) {
            Some(end) if !first.is_null() && last == Some(end - 1) => Ok((first, ByteRange { start, end })),
            _ => Err(ArgError::RangeOutsideWindow),
        }
    }

    /// Validates and translates the next argument, which must be the scalar `wanted`
    /// (a tensor for `None`), without consuming it.
    fn peek(&self, wanted: Option<ScalarKind>) -> Result<Resolved, ArgError> {
        self.check_active()?;
        let index = self.parser.curr_arg.get() as usize;
        let extractor = &self.parser.extractor;
        if index >= extractor.num_args as usize {
            return Err(ArgError::NoMoreArgs);
        }
        let raw = extractor.arg_types[index];
        let found = ArgType::from_raw(raw).ok_or(ArgError::Descriptor(DescriptorError::UnknownArgType(raw)))?;
        match (wanted, found) {
            (None, ArgType::Tensor) => {}
            (None, _) => return Err(ArgError::ExpectedTensor(found)),
            (Some(kind), ArgType::Tensor) => return Err(ArgError::ExpectedScalar(kind)),
            (Some(kind), _) if kind.arg_type() == found => {}
            (Some(kind), _) => return Err(ArgError::ScalarKindMismatch { wanted: kind, found }),
        }
        let view = extractor.args[index].validate()?;
        let (data, range) = self.translate_range(&view)?;
        Ok(Resolved { index, view, data, range })
    }

    /// Consumes the argument `peek` resolved; a tensor's bytes are remembered for the
    /// output's aliasing check (a scalar is copied out, so it cannot alias).
    fn consume(&self, resolved: &Resolved) {
        let range = if resolved.view.arg_type() == ArgType::Tensor { resolved.range } else { ByteRange::EMPTY };
        self.input_ranges[resolved.index].set(range);
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
    fn next_scalar<T: Element>(&self, kind: ScalarKind) -> Result<T, ArgError> {
        let result = self.peek(Some(kind)).map(|resolved| {
            self.consume(&resolved);
            // SAFETY: validation made it a one-element tensor of `kind`'s dtype, whose
            // size is `T`'s, and `translate_range` mapped all its bytes to `data`
            // (non-null: not empty); `read_unaligned` accepts any alignment.
            unsafe { resolved.data.cast::<T>().read_unaligned() }
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
    fn peek_dst(&self) -> Result<(TensorDesc, *mut u8, ByteRange), ArgError> {
        self.check_active()?;
        if self.dst_taken.get() {
            return Err(ArgError::DstAlreadyTaken);
        }
        if self.result.is_null() {
            return Err(ArgError::NoOutput);
        }
        let view = self.dst.validate()?;
        if view.arg_type() != ArgType::Tensor {
            return Err(ArgError::ExpectedTensor(view.arg_type()));
        }
        let (data, range) = self.translate_range(&view)?;
        Ok((view, data, range))
    }

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
        let view = desc.validate()?;
        if view.arg_type() != ArgType::Tensor {
            return Err(ArgError::ExpectedTensor(view.arg_type()));
        }
        // SAFETY: `result` is not null, so writable by `set_invocation`'s contract.
        unsafe { self.result.write_unaligned(*desc) };
        Ok(())
    }

    /// `customop_tensor_data`: the translated address of `desc`'s first element (null
    /// for an empty tensor), for C kernels.
    ///
    /// # Errors
    /// [`ArgError::NotSetUp`], [`ArgError::Descriptor`], [`ArgError::Translate`],
    /// [`ArgError::RangeOutsideWindow`], [`ArgError::TooLarge`].
    pub fn tensor_data(&self, desc: &ArgTensor) -> Result<*mut u8, ArgError> {
        let result = self.check_active().and_then(|()| self.translate_range(&desc.validate()?)).map(|(data, _)| data);
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
    pub fn run<K>(&mut self, kernel: K) -> Status
    where
        K: for<'a> FnOnce(&'a Args) -> Result<Tensor<'a>, KernelError>,
    {
        if self.setup(false).is_err() {
            return self.invocation_status();
        }
        match kernel(Args::new(self)).map(|tensor| *tensor.descriptor()) {
            Ok(desc) => {
                let _ = self.return_tensor(&desc);
            }
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
            Ok(unsafe { Tensor::new(desc, resolved.view, resolved.data, false, &inv.platform) })
        });
        inv.record(result)
    }

    /// The next argument as an `int` scalar. Errors as [`Invocation::next_int`].
    pub fn int(&self) -> Result<i32, ArgError> {
        self.0.next_int()
    }

    /// The next argument as a `long long` scalar. Errors as [`Invocation::next_int`].
    pub fn longlong(&self) -> Result<i64, ArgError> {
        self.0.next_longlong()
    }

    /// The next argument as a `float` scalar. Errors as [`Invocation::next_int`].
    pub fn float(&self) -> Result<f32, ArgError> {
        self.0.next_float()
    }

    /// The pre-shaped output, writable; once per invocation, at any point in the pulls.
    ///
    /// # Errors
    /// As [`Invocation::dst_tensor`], and [`ArgError::OutputAliasesInput`] if it
    /// overlaps an input tensor already pulled.
    pub fn output(&self) -> Result<Tensor<'_>, ArgError> {
        let inv = &self.0;
        let result = inv.peek_dst().and_then(|(view, data, range)| {
            let pulled = inv.parser.curr_arg.get() as usize;
            if inv.input_ranges[..pulled].iter().any(|r| r.get().overlaps(range)) {
                return Err(ArgError::OutputAliasesInput);
            }
            inv.take_dst(range);
            // SAFETY: as in `tensor`; writable, taken once per invocation (`dst_taken`),
            // and overlapping no input pulled before or after (checked both ways).
            Ok(unsafe { Tensor::new(&inv.dst, view, data, true, &inv.platform) })
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
