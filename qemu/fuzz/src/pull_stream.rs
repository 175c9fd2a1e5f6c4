//! The pull stream's state machine (`wrapper_api::Invocation`) under random call
//! orders, through its C-facing methods and through a Rust kernel's `Args`, against the
//! runtime's model of the rules in `docs/abi/descriptors.md` §3
//! (`neuroncustomop::test_models::pull_stream`, which its property test checks against
//! too), over the fake platform with three windows of framework addresses on host
//! buffers.
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
use neuroncustomop::test_models::pull_stream::{Model, OpCalls, Resolved};
use neuroncustomop::wrapper_api::{
    ARG_TENSOR_SIZE, ArgError, ArgTensor, Args, Invocation, KernelError, MAX_ARGS, ScalarKind, Status,
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

/// A scalar pull of `kind` that gave `got` (the value's bytes), C's or a Rust kernel's.
fn scalar_pull<const N: usize>(model: &mut Model, kind: ScalarKind, got: Result<[u8; N], ArgError>, what: &str) {
    ensure_eq!(got.map_err(Status::from), model.pull(Some(kind)).map(scalar_bytes::<N>), "{what}");
}

/// A Rust kernel's pull of a tensor.
fn rust_tensor(args: &Args, model: &mut Model) {
    let expected = model.rust_tensor();
    let got = args.tensor();
    if let (Ok(tensor), Ok(resolved)) = (&got, expected) {
        let desc = resolved.desc;
        ensure_eq!(tensor.data_ptr() as usize, resolved.data, "tensor data");
        ensure_eq!(tensor.shape(), &desc.shape[..usize::from(desc.num_dim)], "tensor shape");
        assert!(!tensor.is_writable(), "an input is writable");
    }
    ensure_eq!(status_of(&got), model.last, "Args::tensor");
}

fn run_kernel(inv: &mut Invocation, model: &mut Model, ops: &[RustOp], fail: Option<u16>) {
    let setup = model.setup(false);
    let mut outcome = None;
    let returned = inv.run(|args| {
        ensure_eq!(setup, Status::OK, "the kernel ran after a failed setup");
        let mut output = None;
        for op in ops {
            match op {
                RustOp::Tensor => rust_tensor(args, model),
                RustOp::Int => scalar_pull(model, ScalarKind::Int, args.int().map(i32::to_le_bytes), "Args::int"),
                RustOp::LongLong => {
                    scalar_pull(model, ScalarKind::LongLong, args.longlong().map(i64::to_le_bytes), "Args::longlong")
                }
                RustOp::Float => {
                    let got = args.float().map(|v| v.to_bits().to_le_bytes());
                    scalar_pull(model, ScalarKind::Float, got, "Args::float")
                }
                RustOp::Output => {
                    let expected = model.rust_output();
                    let got = args.output();
                    if let (Ok(tensor), Ok(resolved)) = (&got, expected) {
                        ensure_eq!(tensor.data_ptr() as usize, resolved.data, "output data");
                        assert!(tensor.is_writable(), "the output is read-only");
                    }
                    ensure_eq!(status_of(&got), model.last, "Args::output");
                    output = got.ok().or(output);
                }
                RustOp::Remaining => ensure_eq!(args.remaining(), model.remaining(), "Args::remaining"),
            }
        }
        let result = match (output, fail) {
            (Some(tensor), None) => Ok(tensor),
            (_, code) => Err(KernelError::Op(code.unwrap_or(0))),
        };
        outcome = Some(result.as_ref().map(|tensor| *tensor.descriptor()).map_err(|e| *e));
        result
    });
    ensure_eq!(outcome.is_some(), setup.is_ok(), "whether the kernel ran");
    ensure_eq!(returned, model.end_run(outcome), "Invocation::run's status");
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
) {
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
    let (pointer, count) = match claim {
        Claim::Exact => (block.as_ptr(), real),
        Claim::TooMany(extra) => (block.as_ptr(), 11u32.saturating_add(extra)),
        Claim::NullArgs => (core::ptr::null(), real),
    };
    // SAFETY: with at most 10 arguments and a non-null array, the array holds `count`
    // descriptors; `result` is null or a boxed descriptor; both live in `buffers` until
    // the case ends.
    let status = unsafe { inv.set_invocation(pointer, count, result) };
    let expected =
        model.hand_off((!pointer.is_null()).then_some(&block[..]), count, output.as_ref().map(ArgSpec::desc));
    ensure_eq!(status, expected, "set_invocation");
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
    let mut model = Model::default();
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
            Op::Tensor => {
                let got = inv.next_tensor().map(ArgTensor::to_bytes).map_err(Status::from);
                ensure_eq!(got, model.pull(None).map(|resolved| resolved.desc.to_bytes()), "next_tensor");
            }
            Op::Int => scalar_pull(&mut model, ScalarKind::Int, inv.next_int().map(i32::to_le_bytes), "next_int"),
            Op::LongLong => {
                let got = inv.next_longlong().map(i64::to_le_bytes);
                scalar_pull(&mut model, ScalarKind::LongLong, got, "next_longlong")
            }
            Op::Float => {
                let got = inv.next_float().map(|v| v.to_bits().to_le_bytes());
                scalar_pull(&mut model, ScalarKind::Float, got, "next_float")
            }
            Op::Dst => {
                let got = inv.dst_tensor().map(ArgTensor::to_bytes).map_err(Status::from);
                ensure_eq!(got, model.dst().map(|resolved| resolved.desc.to_bytes()), "get_dst_tensor");
            }
            Op::Return(spec) => {
                let desc = spec.desc();
                let got = inv.return_tensor(&desc);
                ensure_eq!(status_of(&got), model.return_tensor(&desc), "return_tensor");
            }
            Op::Data(spec) => {
                let desc = spec.desc();
                let got = inv.tensor_data(&desc).map(|data| data as usize).map_err(Status::from);
                ensure_eq!(got, model.tensor_data(&desc).map(|resolved| resolved.data), "tensor_data");
            }
            Op::Cleanup => ensure_eq!(inv.cleanup(), model.cleanup(), "cleanup"),
            Op::Run { ops, fail } => run_kernel(&mut inv, &mut model, ops, *fail),
        }
        ensure_eq!(inv.last_status(), model.last, "last status after {op:?}");
        ensure_eq!(inv.invocation_status(), model.invocation, "invocation status after {op:?}");
        if model.has_output {
            let result = buffers.results.last().map(|r| r.to_bytes());
            ensure_eq!(result, model.result.map(|r| r.to_bytes()), "the loader's result descriptor after {op:?}");
        }
        ensure_eq!(OpCalls::seen(), model.op_calls, "begin_op / end_op calls after {op:?}");
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
