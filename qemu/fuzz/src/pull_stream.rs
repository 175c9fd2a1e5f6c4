//! The pull stream's state machine (`wrapper_api::Invocation`) under random call
//! orders, through its C-facing methods and through a Rust kernel's `Args`, against a
//! model of the rules in `docs/abi/descriptors.md` §3, over a fake platform whose
//! translate maps three windows of framework addresses onto host buffers.
//!
//! Input: a sequence of calls: hand-offs (0 to 10 descriptors, or a lie about the
//! count, or a null array; an output or none), the last hand-off again (the same bytes
//! in a new block, or one argument replaced: what setup may reuse), setups, pulls of each kind, the output,
//! returns, `tensor_data`, cleanups, and Rust kernels run through `Invocation::run`
//! that pull, take the output, and return it or fail. Descriptors point anywhere: inside
//! a window (including the SBUF one), across a window's end, off the top of the
//! address space, or nowhere; they may be malformed in any byte.
//!
//! Checked after every call: its status and value (a scalar's bytes, a tensor's
//! translated address and shape), the last and the invocation status, what a return
//! wrote to the loader's result descriptor, the `begin_op`/`end_op` calls, and, in
//! Rust kernels, that an output overlapping a pulled input (or the reverse) is refused.
//! Descriptor validation itself is `descriptor`'s business: the model asks `validate`.

use arbitrary::{Arbitrary, Unstructured};
use neuroncustomop::test_models::platform::{self, Window};
use neuroncustomop::wrapper_api::{
    ARG_TENSOR_SIZE, ArgError, ArgTensor, ArgType, Invocation, KernelError, MAX_ARGS, ScalarKind, Status, Tensor,
};

use crate::ensure_eq;

/// Framework base of each window; every window is `WINDOW_LEN` bytes. The gaps between
/// them are wider than any tensor (at most 2^32 elements of 8 bytes), so a tensor that
/// starts in a window and runs past it ends in a gap or past the address space.
const WINDOW_BASES: [u64; 3] = [0x1000_0000, 0x50_0000_0000, u64::MAX - (WINDOW_LEN as u64 - 1)];
const WINDOW_LEN: usize = 4096;

/// The byte at `offset` of window `window`.
fn pattern(window: usize, offset: usize) -> u8 {
    ((offset * 31 + window * 101) % 251) as u8
}

/// The host address of window `window` (mapped by `check`, skew 0).
fn host_base(window: usize) -> usize {
    platform::with(|fake| fake.windows[window].words.as_ptr() as usize)
}

/// The window holding framework address `addr`, and the offset in it.
fn window_of(addr: u64) -> Option<(usize, usize)> {
    WINDOW_BASES
        .iter()
        .position(|&base| addr >= base && addr - base < WINDOW_LEN as u64)
        .map(|w| (w, (addr - WINDOW_BASES[w]) as usize))
}

/// Where a descriptor points.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Place {
    /// HBM form, `offset` (mod 5 KiB: past the end too) into window `window`.
    Window { window: u8, offset: u16 },
    /// SBUF form, `offset` into window 0 (the one below 4 GiB).
    Sbuf { offset: u16 },
    /// HBM form, any address.
    Anywhere(u64),
}

/// A descriptor as the fuzzer describes it.
#[derive(Arbitrary, Debug, Clone)]
struct ArgSpec {
    /// 0..=3: tensor, int, long long, float; more: that raw byte.
    arg_type: u8,
    /// `None`: the arg type's own dtype (int16 for a tensor); else that raw byte mod 10.
    dtype: Option<u8>,
    /// `None`: one element; else these dimensions (rank 0 and 9 included).
    dims: Option<Vec<u8>>,
    place: Place,
    /// One byte overwritten after the descriptor is built.
    corrupt: Option<(u8, u8)>,
}

impl ArgSpec {
    fn bytes(&self) -> [u8; ARG_TENSOR_SIZE] {
        let arg_type = if self.arg_type < 4 { self.arg_type + 1 } else { self.arg_type };
        let own_dtype = match arg_type {
            2 => 4, // INT32
            3 => 6, // INT64
            4 => 1, // FLOAT32
            _ => 7, // INT16
        };
        let dtype = self.dtype.map_or(own_dtype, |raw| raw % 10);
        let dims: Vec<u16> = match &self.dims {
            None => vec![1],
            Some(dims) => dims.iter().take(9).map(|&d| u16::from(d % 20)).collect(),
        };
        let num_elem = dims.iter().fold(1u64, |acc, &d| acc * u64::from(d)) as u32;
        let mut b = [0u8; ARG_TENSOR_SIZE];
        b[0] = dtype;
        b[1] = arg_type;
        b[3] = dims.len() as u8;
        for (slot, &dim) in b[8..24].chunks_exact_mut(2).zip(&dims) {
            slot.copy_from_slice(&dim.to_le_bytes());
        }
        match self.place {
            Place::Window { window, offset } => {
                let addr = WINDOW_BASES[usize::from(window) % 3].wrapping_add(u64::from(offset % 5120));
                b[4] = 1;
                b[24..32].copy_from_slice(&addr.to_le_bytes());
                b[32..36].copy_from_slice(&num_elem.to_le_bytes());
            }
            Place::Anywhere(addr) => {
                b[4] = 1;
                b[24..32].copy_from_slice(&addr.to_le_bytes());
                b[32..36].copy_from_slice(&num_elem.to_le_bytes());
            }
            Place::Sbuf { offset } => {
                let addr = WINDOW_BASES[0] as u32 + u32::from(offset % 5120);
                b[24..28].copy_from_slice(&addr.to_le_bytes());
                b[28..32].copy_from_slice(&num_elem.to_le_bytes());
                b[32] = 1;
                b[36..40].copy_from_slice(&num_elem.to_le_bytes());
            }
        }
        if let Some((at, value)) = self.corrupt {
            b[usize::from(at) % ARG_TENSOR_SIZE] = value;
        }
        b
    }

    fn desc(&self) -> ArgTensor {
        ArgTensor::from_bytes(&self.bytes())
    }
}

/// How the loader states the argument count.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Claim {
    Exact,
    /// `11 + n` arguments (the array is never read).
    TooMany(u32),
    /// A null array with the real count.
    NullArgs,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum RustOp {
    Tensor,
    Int,
    LongLong,
    Float,
    Output,
    Remaining,
}

#[derive(Arbitrary, Debug, Clone)]
enum Op {
    HandOff {
        args: Vec<ArgSpec>,
        claim: Claim,
        output: Option<ArgSpec>,
    },
    Setup(bool),
    Tensor,
    Int,
    LongLong,
    Float,
    Dst,
    Return(ArgSpec),
    Data(ArgSpec),
    Cleanup,
    /// A Rust kernel: these pulls, then its output returned (`None`) or `Op(code)`.
    Run {
        ops: Vec<RustOp>,
        fail: Option<u16>,
    },
    /// The last hand-off again, in a new block: the same bytes (setup may reuse what it
    /// resolved), or with argument `index` (modulo the count) replaced by `spec`.
    Again {
        replace: Option<(u8, ArgSpec)>,
    },
}

/// A translated host range, half-open; empty for empty tensors and scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Range {
    start: usize,
    end: usize,
}

impl Range {
    fn overlaps(self, other: Range) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// A pull's success: the host address of the data (0 when empty) and its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Resolved {
    data: usize,
    range: Range,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Pending,
    Active,
}

/// The reference state machine.
struct Model {
    phase: Phase,
    /// The hand-off: descriptors, whether the block is refused, and the output.
    args: Vec<ArgTensor>,
    block_error: Option<Status>,
    has_output: bool,
    /// What the loader's result descriptor holds now.
    result: Option<ArgTensor>,
    /// The copies taken at setup.
    parsed: Vec<ArgTensor>,
    dst: ArgTensor,
    next: usize,
    input_ranges: Vec<Range>,
    dst_taken: bool,
    dst_range: Range,
    initialized: bool,
    last: Status,
    invocation: Status,
    begin_ops: Vec<bool>,
    end_ops: usize,
}

impl Model {
    fn record(&mut self, status: Status) -> Status {
        self.last = status;
        if self.invocation.is_ok() {
            self.invocation = status;
        }
        status
    }

    /// Translates `desc`'s bytes: the range must start in a window and end in it.
    fn translate(desc: &ArgTensor) -> Result<Resolved, Status> {
        let view = desc.validate().map_err(Status::from)?;
        let len = view.byte_len();
        if len == 0 {
            return Ok(Resolved { data: 0, range: Range::default() });
        }
        let (window, offset) = window_of(view.address()).ok_or(Status::TRANSLATE_MISS)?;
        if offset as u64 + len > WINDOW_LEN as u64 {
            return Err(Status::RANGE_OUTSIDE_WINDOW);
        }
        let start = host_base(window) + offset;
        Ok(Resolved { data: start, range: Range { start, end: start + len as usize } })
    }

    /// `peek`: the next argument, which must be of `wanted` (None: a tensor).
    fn peek(&self, wanted: Option<ScalarKind>) -> Result<Resolved, Status> {
        if self.phase != Phase::Active {
            return Err(Status::NOT_SET_UP);
        }
        let Some(desc) = self.parsed.get(self.next) else { return Err(Status::NO_MORE_ARGS) };
        let found = ArgType::from_raw(desc.arg_type).ok_or(Status::UNKNOWN_ARG_TYPE)?;
        match (wanted, found) {
            (None, ArgType::Tensor) => {}
            (None, _) => return Err(Status::EXPECTED_TENSOR),
            (Some(_), ArgType::Tensor) => return Err(Status::EXPECTED_SCALAR),
            (Some(kind), found) if kind.arg_type() == found => {}
            (Some(_), _) => return Err(Status::SCALAR_KIND_MISMATCH),
        }
        Model::translate(desc)
    }

    fn consume(&mut self, resolved: Resolved, tensor: bool) {
        self.input_ranges[self.next] = if tensor { resolved.range } else { Range::default() };
        self.next += 1;
    }

    fn peek_dst(&self) -> Result<Resolved, Status> {
        if self.phase != Phase::Active {
            return Err(Status::NOT_SET_UP);
        }
        if self.dst_taken {
            return Err(Status::DST_ALREADY_TAKEN);
        }
        if !self.has_output {
            return Err(Status::NO_OUTPUT);
        }
        let view = self.dst.validate().map_err(Status::from)?;
        if view.arg_type() != ArgType::Tensor {
            return Err(Status::EXPECTED_TENSOR);
        }
        Model::translate(&self.dst)
    }

    fn setup(&mut self, first_call: bool) -> Status {
        let status = match self.phase {
            Phase::Active => Status::ALREADY_SET_UP,
            Phase::Idle => Status::NO_INVOCATION,
            Phase::Pending => match self.block_error {
                Some(error) => error,
                None => {
                    self.parsed = self.args.clone();
                    self.next = 0;
                    self.input_ranges = vec![Range::default(); self.parsed.len()];
                    self.dst = self.result.unwrap_or(ArgTensor::ZEROED);
                    self.dst_taken = false;
                    self.begin_ops.push(first_call || !self.initialized);
                    self.initialized = true;
                    self.phase = Phase::Active;
                    Status::OK
                }
            },
        };
        self.record(status)
    }

    fn return_tensor(&mut self, desc: &ArgTensor) -> Status {
        let status = if self.phase != Phase::Active {
            Status::NOT_SET_UP
        } else if !self.has_output {
            Status::NO_OUTPUT
        } else {
            match desc.validate() {
                Err(error) => error.into(),
                Ok(view) if view.arg_type() != ArgType::Tensor => Status::EXPECTED_TENSOR,
                Ok(_) => {
                    self.result = Some(*desc);
                    Status::OK
                }
            }
        };
        self.record(status)
    }

    fn cleanup(&mut self) -> Status {
        if self.phase == Phase::Active {
            self.end_ops += 1;
            self.phase = Phase::Idle;
            self.record(Status::OK);
        } else {
            self.record(Status::NOT_SET_UP);
        }
        self.invocation
    }
}

fn status_of<T>(result: &Result<T, ArgError>) -> Status {
    result.as_ref().map_or_else(|e| Status::from(*e), |_| Status::OK)
}

/// The value a scalar pull must return: the bytes at `data`.
fn scalar_bytes<const N: usize>(resolved: Resolved) -> [u8; N] {
    let window = WINDOW_BASES.len();
    let (w, offset) = (0..window)
        .find_map(|w| resolved.data.checked_sub(host_base(w)).filter(|&o| o < WINDOW_LEN).map(|o| (w, o)))
        .expect("a scalar's data lies in a window");
    core::array::from_fn(|i| pattern(w, offset + i))
}

/// One pull through the C-facing methods.
fn pull(inv: &Invocation, model: &mut Model, kind: Option<ScalarKind>) -> Status {
    let expected = model.peek(kind);
    let (status, value) = match kind {
        None => {
            let got = inv.next_tensor();
            (status_of(&got), got.ok().map(|desc| desc.to_bytes().to_vec()))
        }
        Some(ScalarKind::Int) => {
            let got = inv.next_int();
            (status_of(&got), got.ok().map(|v| v.to_le_bytes().to_vec()))
        }
        Some(ScalarKind::LongLong) => {
            let got = inv.next_longlong();
            (status_of(&got), got.ok().map(|v| v.to_le_bytes().to_vec()))
        }
        Some(ScalarKind::Float) => {
            let got = inv.next_float();
            (status_of(&got), got.ok().map(|v| v.to_bits().to_le_bytes().to_vec()))
        }
    };
    match expected {
        Ok(resolved) => {
            let wanted = match kind {
                None => model.parsed[model.next].to_bytes().to_vec(),
                Some(ScalarKind::Int | ScalarKind::Float) => scalar_bytes::<4>(resolved).to_vec(),
                Some(ScalarKind::LongLong) => scalar_bytes::<8>(resolved).to_vec(),
            };
            ensure_eq!(value, Some(wanted), "pulled value ({kind:?})");
            model.consume(resolved, kind.is_none());
            model.record(status)
        }
        Err(error) => model.record(error),
    }
}

/// A Rust kernel's pull of a tensor: the C rules, then no overlap with a taken output.
fn rust_tensor<'a>(args: &'a neuroncustomop::wrapper_api::Args, model: &mut Model) -> (Status, Option<Tensor<'a>>) {
    let expected = model.peek(None).and_then(|resolved| {
        if model.dst_taken && resolved.range.overlaps(model.dst_range) {
            Err(Status::OUTPUT_ALIASES_INPUT)
        } else {
            Ok(resolved)
        }
    });
    let got = args.tensor();
    let status = status_of(&got);
    if let (Ok(tensor), Ok(resolved)) = (&got, expected) {
        let desc = model.parsed[model.next];
        ensure_eq!(tensor.data_ptr() as usize, resolved.data, "tensor data");
        ensure_eq!(tensor.shape(), &desc.shape[..usize::from(desc.num_dim)], "tensor shape");
        assert!(!tensor.is_writable(), "an input is writable");
        model.consume(resolved, true);
    }
    let expected = expected.map_or_else(|e| e, |_| Status::OK);
    ensure_eq!(status, expected, "Args::tensor");
    model.record(expected);
    (status, got.ok())
}

fn run_kernel(inv: &mut Invocation, model: &mut Model, ops: &[RustOp], fail: Option<u16>) {
    let setup = model.setup(false);
    let mut kernel_seen = false;
    let returned = inv.run(|args| {
        kernel_seen = true;
        ensure_eq!(setup, Status::OK, "the kernel ran after a failed setup");
        let mut output = None;
        for op in ops {
            match op {
                RustOp::Tensor => drop(rust_tensor(args, model)),
                RustOp::Int => {
                    let expected = model.peek(Some(ScalarKind::Int));
                    let got = args.int();
                    if let (Ok(v), Ok(r)) = (&got, expected) {
                        ensure_eq!(v.to_le_bytes(), scalar_bytes::<4>(r), "Args::int");
                        model.consume(r, false);
                    }
                    ensure_eq!(status_of(&got), expected.map_or_else(|e| e, |_| Status::OK), "Args::int status");
                    model.record(status_of(&got));
                }
                RustOp::LongLong => {
                    let expected = model.peek(Some(ScalarKind::LongLong));
                    let got = args.longlong();
                    if let (Ok(v), Ok(r)) = (&got, expected) {
                        ensure_eq!(v.to_le_bytes(), scalar_bytes::<8>(r), "Args::longlong");
                        model.consume(r, false);
                    }
                    ensure_eq!(status_of(&got), expected.map_or_else(|e| e, |_| Status::OK), "Args::longlong status");
                    model.record(status_of(&got));
                }
                RustOp::Float => {
                    let expected = model.peek(Some(ScalarKind::Float));
                    let got = args.float();
                    if let (Ok(v), Ok(r)) = (&got, expected) {
                        ensure_eq!(v.to_bits().to_le_bytes(), scalar_bytes::<4>(r), "Args::float");
                        model.consume(r, false);
                    }
                    ensure_eq!(status_of(&got), expected.map_or_else(|e| e, |_| Status::OK), "Args::float status");
                    model.record(status_of(&got));
                }
                RustOp::Output => {
                    let pulled = &model.input_ranges[..model.next];
                    let expected = model.peek_dst().and_then(|resolved| {
                        if pulled.iter().any(|r| r.overlaps(resolved.range)) {
                            Err(Status::OUTPUT_ALIASES_INPUT)
                        } else {
                            Ok(resolved)
                        }
                    });
                    let got = args.output();
                    if let (Ok(tensor), Ok(resolved)) = (&got, expected) {
                        ensure_eq!(tensor.data_ptr() as usize, resolved.data, "output data");
                        assert!(tensor.is_writable(), "the output is read-only");
                        model.dst_taken = true;
                        model.dst_range = resolved.range;
                    }
                    let status = status_of(&got);
                    ensure_eq!(status, expected.map_or_else(|e| e, |_| Status::OK), "Args::output");
                    if let Ok(tensor) = got {
                        output = Some(tensor);
                    }
                    model.record(status);
                }
                RustOp::Remaining => {
                    ensure_eq!(args.remaining(), model.parsed.len() - model.next, "Args::remaining");
                }
            }
        }
        match (output, fail) {
            (Some(tensor), None) => {
                let desc = *tensor.descriptor();
                model.return_tensor(&desc);
                Ok(tensor)
            }
            (_, code) => {
                let code = code.unwrap_or(0);
                model.record(Status::from(KernelError::Op(code)));
                Err(KernelError::Op(code))
            }
        }
    });
    ensure_eq!(kernel_seen, setup.is_ok(), "whether the kernel ran");
    let expected = if setup.is_ok() { model.cleanup() } else { model.invocation };
    ensure_eq!(returned, expected, "Invocation::run's status");
}

/// What the harness keeps alive for the invocation: every argument array and result
/// descriptor it was handed stays in place until the case ends.
struct Buffers {
    arg_blocks: Vec<Box<[ArgTensor]>>,
    /// Boxed so a result stays where the invocation was told it is while more are added.
    #[allow(clippy::vec_box)]
    results: Vec<Box<ArgTensor>>,
}

fn hand_off(
    inv: &mut Invocation,
    model: &mut Model,
    buffers: &mut Buffers,
    args: &[ArgSpec],
    claim: Claim,
    output: &Option<ArgSpec>,
) -> Status {
    let descs: Box<[ArgTensor]> = args.iter().take(MAX_ARGS).map(ArgSpec::desc).collect();
    let real = descs.len() as u32;
    buffers.arg_blocks.push(descs);
    let block = buffers.arg_blocks.last().expect("just pushed");
    let result = match output {
        Some(spec) => {
            buffers.results.push(Box::new(spec.desc()));
            core::ptr::from_mut(&mut **buffers.results.last_mut().expect("just pushed"))
        }
        None => core::ptr::null_mut(),
    };
    let (pointer, count, block_error) = match claim {
        Claim::Exact => (block.as_ptr(), real, None),
        Claim::TooMany(extra) => (block.as_ptr(), 11u32.saturating_add(extra), Some(Status::TOO_MANY_ARGS)),
        Claim::NullArgs => (core::ptr::null(), real, (real > 0).then_some(Status::NULL_POINTER)),
    };
    // SAFETY: with at most 10 arguments and a non-null array, the array holds `count`
    // descriptors; `result` is null or a boxed descriptor; both live in `buffers` until
    // the case ends.
    let status = unsafe { inv.set_invocation(pointer, count, result) };
    model.phase = Phase::Pending;
    model.args = block.to_vec();
    model.block_error = block_error;
    model.has_output = output.is_some();
    model.result = output.as_ref().map(ArgSpec::desc);
    model.invocation = Status::OK;
    ensure_eq!(status, model.record(block_error.unwrap_or(Status::OK)), "set_invocation");
    status
}

/// The whole target.
pub fn check(data: &[u8]) {
    let Ok(ops) = Vec::<Op>::arbitrary(&mut Unstructured::new(data)) else { return };
    platform::with(|fake| {
        // Nothing writes to the windows (kernels here only pull), so they are made once.
        if fake.windows.is_empty() {
            for (w, &base) in WINDOW_BASES.iter().enumerate() {
                let bytes: Vec<u8> = (0..WINDOW_LEN).map(|i| pattern(w, i)).collect();
                let words = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
                fake.windows.push(Window { base, words, skew: 0, len: WINDOW_LEN });
            }
        }
        fake.begin_ops.clear();
        fake.end_ops = 0;
    });
    // SAFETY: the fake translate maps each window linearly onto its own live host
    // buffer, the same for the whole run (windows are never removed); TCM blocks are
    // host buffers of their own.
    let mut inv = unsafe { Invocation::with_platform(platform::PLATFORM) };
    let mut model = Model {
        phase: Phase::Idle,
        args: Vec::new(),
        block_error: None,
        has_output: false,
        result: None,
        parsed: Vec::new(),
        dst: ArgTensor::ZEROED,
        next: 0,
        input_ranges: Vec::new(),
        dst_taken: false,
        dst_range: Range::default(),
        initialized: false,
        last: Status::OK,
        invocation: Status::OK,
        begin_ops: Vec::new(),
        end_ops: 0,
    };
    let mut buffers = Buffers { arg_blocks: Vec::new(), results: Vec::new() };
    let mut last_hand_off = None;
    for op in &ops {
        match op {
            Op::HandOff { args, claim, output } => {
                hand_off(&mut inv, &mut model, &mut buffers, args, *claim, output);
                last_hand_off = Some((args.clone(), *claim, output.clone()));
            }
            Op::Again { replace } => {
                let Some((args, claim, output)) = &mut last_hand_off else { continue };
                if let (Some((index, spec)), false) = (replace, args.is_empty()) {
                    let count = args.len().min(MAX_ARGS);
                    args[usize::from(*index) % count] = spec.clone();
                }
                hand_off(&mut inv, &mut model, &mut buffers, args, *claim, output);
            }
            Op::Setup(first_call) => {
                let got = inv.setup(*first_call);
                ensure_eq!(status_of(&got), model.setup(*first_call), "setup");
            }
            Op::Tensor => ensure_eq!(pull(&inv, &mut model, None), inv.last_status(), "next_tensor"),
            Op::Int => ensure_eq!(pull(&inv, &mut model, Some(ScalarKind::Int)), inv.last_status(), "next_int"),
            Op::LongLong => {
                ensure_eq!(pull(&inv, &mut model, Some(ScalarKind::LongLong)), inv.last_status(), "next_longlong")
            }
            Op::Float => ensure_eq!(pull(&inv, &mut model, Some(ScalarKind::Float)), inv.last_status(), "next_float"),
            Op::Dst => {
                let expected = model.peek_dst();
                let got = inv.dst_tensor();
                if let (Ok(desc), Ok(resolved)) = (&got, expected) {
                    ensure_eq!(desc.to_bytes(), model.dst.to_bytes(), "get_dst_tensor");
                    model.dst_taken = true;
                    model.dst_range = resolved.range;
                }
                let status = status_of(&got);
                ensure_eq!(status, model.record(expected.map_or_else(|e| e, |_| Status::OK)), "get_dst_tensor status");
            }
            Op::Return(spec) => {
                let desc = spec.desc();
                let got = inv.return_tensor(&desc);
                ensure_eq!(status_of(&got), model.return_tensor(&desc), "return_tensor");
            }
            Op::Data(spec) => {
                let desc = spec.desc();
                let expected =
                    if model.phase == Phase::Active { Model::translate(&desc) } else { Err(Status::NOT_SET_UP) };
                let got = inv.tensor_data(&desc);
                if let (Ok(data), Ok(resolved)) = (&got, expected) {
                    ensure_eq!(*data as usize, resolved.data, "tensor_data");
                }
                let status = status_of(&got);
                ensure_eq!(status, model.record(expected.map_or_else(|e| e, |_| Status::OK)), "tensor_data status");
            }
            Op::Cleanup => ensure_eq!(inv.cleanup(), model.cleanup(), "cleanup"),
            Op::Run { ops, fail } => run_kernel(&mut inv, &mut model, ops, *fail),
        }
        ensure_eq!(inv.last_status(), model.last, "last status after {op:?}");
        ensure_eq!(inv.invocation_status(), model.invocation, "invocation status after {op:?}");
        let result = buffers.results.last().map(|r| r.to_bytes());
        if model.has_output {
            ensure_eq!(result, model.result.map(|r| r.to_bytes()), "the loader's result descriptor after {op:?}");
        }
        platform::with(|fake| {
            let begin_ops: Vec<bool> = fake.begin_ops.iter().map(|&(first_call, _)| first_call).collect();
            ensure_eq!(begin_ops, model.begin_ops, "begin_op calls");
            ensure_eq!(fake.end_ops, model.end_ops, "end_op calls");
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_random_inputs_pass() {
        crate::smoke::check_inputs(check, 20_000, 512);
    }
}
