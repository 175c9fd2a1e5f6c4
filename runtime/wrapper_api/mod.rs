//! Argument marshalling: tensor descriptors, the `customop_*` pull stream, and the
//! tensor API kernels are written against (the `wrapper_api.o` part of the runtime).
//!
//! - [`ArgTensor`] is the 48-byte wire descriptor; [`ArgExtractor`] / [`ArgParser`] hold
//!   one invocation's arguments (`docs/abi/descriptors.md` has every byte).
//! - [`Invocation`] is the pull stream's state machine; the C ABI below drives one per
//!   core, kept in a [`CoreLocal`](crate::global::CoreLocal) (one per test thread on
//!   the host).
//! - Rust kernels take [`Args`] and return a [`Tensor`]; [`run_kernel`] drives setup,
//!   the return and cleanup around them:
//!
//! ```
//! use neuroncustomop::wrapper_api::{Args, KernelError, Tensor, run_kernel};
//!
//! /// out = max(x, 0), streamed through TCM.
//! fn relu(args: &Args) -> Result<Tensor<'_>, KernelError> {
//!     let x = args.tensor()?;
//!     let mut out = args.output()?;
//!     let mut writer = out.write_stream::<f32>()?;
//!     for v in x.read_stream::<f32>()? {
//!         writer.write(v.max(0.0))?;
//!     }
//!     writer.close();
//!     Ok(out)
//! }
//!
//! /// The entry the kernel table registers; returns the invocation status.
//! pub extern "C" fn relu_entry() -> u32 {
//!     run_kernel(relu).0
//! }
//! ```
//!
//! C kernels call the pull stream directly; every call that fails returns null (or 0)
//! and leaves its status in `customop_last_status()`:
//!
//! ```c
//! void relu(void) {
//!     customop_setup(false);
//!     const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();
//!     const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
//!     if (x && out) {
//!         const float *src = customop_tensor_data(x);
//!         float *dst = customop_tensor_data(out);
//!         /* ... */
//!         customop_return_tensor(out);
//!     }
//!     customop_cleanup();   /* the loader reads customop_invocation_status() */
//! }
//! ```

use core::ffi::c_void;
use core::mem::MaybeUninit;
use core::ptr;

mod cxx;
mod descriptor;
mod element;
mod invocation;
mod status;
mod tensor;

pub use cxx::{__assert_func, end_op, neuron_cxx_fail, neuron_cxx_heap_room, neuron_cxx_record, record_failure};
pub use descriptor::*;
pub use element::{Bf16, Element, F16};
pub use invocation::{Args, Invocation, Platform, TranslateFn};
pub use status::{ArgError, ArgFailure, KernelError, Status, TensorError};
pub use tensor::{ReadStream, STREAM_BUFFER_BYTES, Strides, TcmBuffer, Tensor, WriteStream};

#[cfg(test)]
mod tests;

crate::global::core_local_state! {
    /// Runs `f` on this core's invocation: one per core, one invocation at a time (on
    /// the host, one per test thread).
    fn with_session;
    /// Runs `f` on this core's invocation, shared, unless it is borrowed (`None`): the
    /// C shape accessors' fast path.
    fn peek_session: Invocation = Invocation::new();
}

/// Runs a Rust kernel on this core's pending invocation: `customop_setup`, the kernel,
/// `customop_return_tensor` of its result (or its error as the status), and
/// `customop_cleanup`. Returns the invocation status the loader reads.
///
/// The kernel must not call the `customop_*` C functions itself (that is re-entry, and
/// panics); it pulls through [`Args`].
pub fn run_kernel<K>(kernel: K) -> Status
where
    K: for<'a> FnOnce(&'a Args) -> Result<Tensor<'a>, KernelError>,
{
    with_session(|invocation| invocation.run(kernel))
}

/// Runs `f` on this core's invocation and a copy of the descriptor a C kernel passed
/// (so that no reference into the kernel's memory, which may be a descriptor the
/// runtime handed out, outlives the call). For null, records `NULL_POINTER` and gives
/// `None`.
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
unsafe fn with_descriptor<R>(tensor: *const ArgTensor, f: impl FnOnce(&mut Invocation, &ArgTensor) -> R) -> Option<R> {
    let mut copy = MaybeUninit::uninit();
    let desc = if tensor.is_null() {
        None
    } else {
        // SAFETY: `tensor` is readable (contract); `copy` is writable and a distinct
        // local; all 48 bytes are then written, and any bytes are a valid `ArgTensor`.
        unsafe {
            ArgTensor::copy(tensor, copy.as_mut_ptr());
            Some(copy.assume_init_ref())
        }
    };
    with_session(|invocation| match desc {
        Some(desc) => Some(f(invocation, desc)),
        None => {
            invocation.reject(ArgError::NullPointer);
            None
        }
    })
}

fn status_of(result: Result<(), ArgError>) -> u32 {
    result.map_or_else(|e| Status::from(e).0, |()| Status::OK.0)
}

/// C ABI, called by the loader before it calls a kernel: the kernel's `num_args`
/// descriptors at `args` (stride 48, any alignment) and the output descriptor at
/// `result` (pre-shaped; overwritten by `customop_return_tensor`; null when the op has
/// no output). Returns `OK`, `TOO_MANY_ARGS` or `NULL_POINTER`.
///
/// # Safety
/// If `num_args <= 10` and `args` is not null, `args` is valid for reads of `num_args`
/// descriptors; if `result` is not null, it is valid for reads and writes of one
/// descriptor; both until `customop_cleanup` or the next `customop_set_invocation`.
///
/// A new op also ends whatever an earlier kernel left borrowed when it stopped without
/// returning (abort, exit, panic, exception: the loader discarded its stack), so the
/// next op finds the runtime usable ([`crate::global::abandon_borrows`]).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn customop_set_invocation(args: *const ArgTensor, num_args: u32, result: *mut ArgTensor) -> u32 {
    crate::global::abandon_borrows();
    // SAFETY: forwarded from this function's contract.
    with_session(|invocation| unsafe { invocation.set_invocation(args, num_args, result) }).0
}

/// C ABI `customop_setup`: copies the arguments the loader passed and resets the per-op
/// state; `first_call` also runs the one-time set-up (it runs on the first setup anyway).
/// Returns a status.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn customop_setup(first_call: bool) -> u32 {
    with_session(|invocation| status_of(invocation.setup(first_call)))
}

/// C ABI `customop_next_tensor`: the next argument's descriptor (validated and
/// translatable; a copy, valid until the next `customop_setup`), or null.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn customop_next_tensor() -> *const ArgTensor {
    with_session(|invocation| invocation.next_tensor_for_c().map_or(ptr::null(), |handed| handed.cast_const()))
}

/// C ABI `customop_next_int`: the next argument as `int`, or 0 (check the status).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn customop_next_int() -> i32 {
    with_session(|invocation| invocation.next_int().unwrap_or(0))
}

/// C ABI `customop_next_longlong`: the next argument as `long long`, or 0.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn customop_next_longlong() -> i64 {
    with_session(|invocation| invocation.next_longlong().unwrap_or(0))
}

/// C ABI `customop_next_float`: the next argument as `float`, or 0.0.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn customop_next_float() -> f32 {
    with_session(|invocation| invocation.next_float().unwrap_or(0.0))
}

/// C ABI `get_dst_tensor`: the pre-shaped output descriptor (once per invocation; a
/// copy, valid until the next `customop_setup`), or null.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn get_dst_tensor() -> *const ArgTensor {
    with_session(|invocation| invocation.dst_tensor_for_c().map_or(ptr::null(), |handed| handed.cast_const()))
}

/// C ABI `customop_return_tensor`: writes `*tensor` to the loader's result descriptor.
/// Returns a status (`NULL_POINTER` for null).
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn customop_return_tensor(tensor: *const ArgTensor) -> u32 {
    // SAFETY: forwarded from this function's contract.
    let status = unsafe { with_descriptor(tensor, |invocation, desc| status_of(invocation.return_tensor(desc))) };
    status.unwrap_or(Status::NULL_POINTER.0)
}

/// C ABI `customop_tensor_data`: the translated device address of a tensor's first
/// element (null for an empty tensor or on error).
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn customop_tensor_data(tensor: *const ArgTensor) -> *mut c_void {
    // SAFETY: forwarded from this function's contract.
    let data = unsafe { with_descriptor(tensor, |invocation, desc| invocation.tensor_data(desc).ok()) };
    data.flatten().map_or(ptr::null_mut(), |data| data.cast())
}

/// `Invocation::describe` of the descriptor C passed (null: `NULL_POINTER`).
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
unsafe fn described(tensor: *const ArgTensor) -> Option<TensorDesc> {
    // SAFETY: forwarded from this function's contract.
    unsafe { with_descriptor(tensor, |invocation, desc| invocation.describe(desc).ok()) }.flatten()
}

/// A C shape accessor: `own`, the answer read from the fields it comes from, each
/// checked (`descriptor::fields`: a few instructions, straight from the kernel's memory,
/// a copy the runtime handed out or a descriptor of the kernel's own), with `OK`
/// recorded ([`answered`]); `None` when a field is not valid or the pointer is null or
/// misaligned ([`refused`]).
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
#[inline(always)]
unsafe fn accessor<R: Default>(tensor: *const ArgTensor, own: Option<R>, slow: impl FnOnce(TensorDesc) -> R) -> R {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        match own {
            Some(answer) => answered(tensor, answer, slow),
            None => refused(tensor, slow),
        }
    }
}

/// A C shape accessor's answer, read from the descriptor's fields: returned with `OK`
/// recorded; not while the invocation is borrowed (a Rust kernel calling the accessor,
/// which the slow path refuses as re-entry): then [`refused`].
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
#[inline(always)]
unsafe fn answered<R: Default>(tensor: *const ArgTensor, answer: R, slow: impl FnOnce(TensorDesc) -> R) -> R {
    // SAFETY: `record_ok` sets the invocation's last status and reaches nothing else.
    if unsafe { peek_session(Invocation::record_ok) }.is_some() {
        return answer;
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { refused(tensor, slow) }
}

/// A C shape accessor whose fields were not all valid, or whose pointer is null or
/// misaligned: `slow` of the descriptor's validated form (`described`: the whole check,
/// its first error recorded), or `R::default()` on error.
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
#[inline(always)]
unsafe fn refused<R: Default>(tensor: *const ArgTensor, slow: impl FnOnce(TensorDesc) -> R) -> R {
    // SAFETY: forwarded from this function's contract.
    unsafe { described_cold(tensor) }.map_or_else(R::default, slow)
}

/// [`described`] out of line: the accessors' slow path.
///
/// # Safety
/// As [`described`].
#[cold]
#[inline(never)]
unsafe fn described_cold(tensor: *const ArgTensor) -> Option<TensorDesc> {
    // SAFETY: forwarded from this function's contract.
    unsafe { described(tensor) }
}

/// C ABI `customop_tensor_numel`: a tensor's element count (0 for an empty tensor, or
/// on error: check the status).
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn customop_tensor_numel(tensor: *const ArgTensor) -> u32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { accessor(tensor, fields::numel(tensor), |desc| desc.num_elem()) }
}

/// C ABI `customop_tensor_dtype`: a tensor's `NEURON_ISA_TPB_DTYPE` (0, which no dtype
/// is, on error).
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn customop_tensor_dtype(tensor: *const ArgTensor) -> u32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { accessor(tensor, fields::dtype(tensor), |desc| desc.dtype() as u32) }
}

/// C ABI `customop_tensor_rank`: a tensor's number of dimensions, 1 to 8 (0 on error).
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn customop_tensor_rank(tensor: *const ArgTensor) -> u32 {
    // SAFETY: forwarded from this function's contract.
    unsafe { accessor(tensor, fields::rank(tensor), |desc| desc.rank() as u32) }
}

/// C ABI `customop_tensor_dim`: dimension `index` of a tensor, outermost first (0 at
/// and past the rank, and on error).
///
/// # Safety
/// `tensor` is null or valid for reads of one descriptor (any alignment).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn customop_tensor_dim(tensor: *const ArgTensor, index: u32) -> u32 {
    let slow = move |desc: TensorDesc| desc.shape().get(index as usize).copied().map_or(0, u32::from);
    // SAFETY: forwarded from this function's contract (each closure runs on `tensor`).
    unsafe { fields::dim(tensor, index, |answer| answered(tensor, answer, slow), || refused(tensor, slow)) }
}

/// C ABI `customop_fail`: the kernel's own failure, reported as `0x1_0000 + code` (as a
/// Rust kernel's `KernelError::Op(code)`); the invocation's status if it is its first
/// failure. Returns that status.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn customop_fail(code: u16) -> u32 {
    with_session(|invocation| invocation.fail(KernelError::Op(code)).0)
}

/// C ABI `customop_cleanup`: write fence and sync, end of the invocation. Returns the
/// invocation status (its first failure, or `OK`).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn customop_cleanup() -> u32 {
    with_session(|invocation| invocation.cleanup()).0
}

/// C ABI: the status of the most recent `customop_*` call on this core.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn customop_last_status() -> u32 {
    with_session(|invocation| invocation.last_status()).0
}

/// C ABI, for the loader after the kernel returns: the first failure of the invocation
/// (since `customop_set_invocation`), or `OK`. When an argument caused it, the first
/// call also writes which one to stdout ([`ArgFailure`]'s line, `docs/abi/descriptors.md`
/// §6), for the loader to drain with the kernel's output.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn customop_invocation_status() -> u32 {
    with_session(|invocation| invocation.end_status()).0
}
