//! One kernel call: the arguments as the Python half passes them, staged in the
//! device's tensor area, and what the device gave back.

use crate::DeviceError;
use neuroncustomop::wrapper_api::{ArgTensor, Dtype, MAX_ARGS, ScalarKind, Status};
use neuroncustomop_sim::device::Report;
use neuroncustomop_sim::job::{Job, TENSOR_AREA, TENSOR_AREA_SIZE};
use neuroncustomop_wire::job::OutputDump;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Tensors start on this boundary in the tensor area (a DMA burst, and every dtype's
/// alignment).
const TENSOR_ALIGN: usize = 64;

/// One argument, as the Python half passes it: `(dtype, shape, bytes)` for a tensor,
/// `(kind, bytes)` for a scalar, the bytes little-endian and C-ordered.
#[derive(FromPyObject)]
pub enum Input<'py> {
    /// A tensor: its dtype's NumPy name, its shape, its bytes (a `uint8` array).
    Tensor(String, Vec<usize>, PyReadonlyArray1<'py, u8>),
    /// A scalar: `"int"`, `"long long"` or `"float"`, and its bytes.
    Scalar(String, PyReadonlyArray1<'py, u8>),
}

/// The dtype named as NumPy names it (`float32`, `bfloat16`, …).
pub fn dtype(name: &str) -> PyResult<Dtype> {
    Ok(match name {
        "float32" => Dtype::Float32,
        "bfloat16" => Dtype::Bfloat16,
        "float16" => Dtype::Float16,
        "int32" => Dtype::Int32,
        "int8" => Dtype::Int8,
        "int64" => Dtype::Int64,
        "int16" => Dtype::Int16,
        "uint8" => Dtype::Uint8,
        other => {
            return Err(PyTypeError::new_err(format!(
                "dtype {other} is not a device dtype: use float32, bfloat16, float16, int32, int8, int64, int16 or uint8"
            )));
        }
    })
}

fn scalar_kind(name: &str) -> PyResult<ScalarKind> {
    match name {
        "int" => Ok(ScalarKind::Int),
        "long long" => Ok(ScalarKind::LongLong),
        "float" => Ok(ScalarKind::Float),
        other => Err(PyTypeError::new_err(format!("scalar kind {other}: use int, long long or float"))),
    }
}

/// The output the caller asked for.
pub struct OutputSpec {
    pub dtype: Dtype,
    pub shape: Vec<usize>,
}

/// The descriptor dims of `shape`, with the descriptor's own checks (rank 1..=8, each
/// dimension at most 65535) reported as a `ValueError` naming the argument.
fn describe(what: &str, dtype: Dtype, shape: &[usize], address: u64) -> PyResult<ArgTensor> {
    let dims: Vec<u32> = shape
        .iter()
        .map(|&d| u32::try_from(d).map_err(|_| PyValueError::new_err(format!("{what}: dimension {d} is too large"))))
        .collect::<PyResult<_>>()?;
    ArgTensor::hbm_tensor(dtype, &dims, address)
        .map_err(|e| PyValueError::new_err(format!("{what} of shape {shape:?} cannot be described to the device: {e}")))
}

/// Where the next buffer goes in the tensor area.
struct Stager {
    used: usize,
}

impl Stager {
    /// Places `bytes` after everything placed so far; returns the framework address
    /// and the device address.
    fn place(&mut self, job: &mut Job, what: &str, mut bytes: Vec<u8>) -> PyResult<(u64, u32)> {
        // The loader places no empty file: an empty tensor still takes one byte.
        if bytes.is_empty() {
            bytes.push(0);
        }
        let offset = self.used.next_multiple_of(TENSOR_ALIGN);
        let end = offset + bytes.len();
        if end > TENSOR_AREA_SIZE as usize {
            return Err(PyValueError::new_err(format!(
                "{what} does not fit device memory: the arguments and output need {end} bytes, the tensor area holds {TENSOR_AREA_SIZE}"
            )));
        }
        self.used = end;
        Ok(job.place(offset as u32, bytes))
    }
}

/// Places `inputs` and an output filled with `0xFF` bytes (a canary: NaN for every
/// float dtype, -1 for the integers) in `job`'s tensor area, and returns the op's
/// descriptors and the output's dump.
pub fn stage(
    job: &mut Job,
    inputs: &[Input<'_>],
    output: &OutputSpec,
) -> PyResult<(ArgTensor, Vec<ArgTensor>, OutputDump)> {
    if inputs.is_empty() {
        // The dispatch words carry the output descriptor after the inputs' (docs/abi/dispatch.md).
        return Err(PyTypeError::new_err("no inputs: a kernel call takes at least one"));
    }
    if inputs.len() > MAX_ARGS {
        return Err(PyTypeError::new_err(format!("{} inputs: a kernel takes at most {MAX_ARGS}", inputs.len())));
    }
    let mut stager = Stager { used: 0 };
    let mut descriptors = Vec::with_capacity(inputs.len());
    for (index, input) in inputs.iter().enumerate() {
        let what = format!("input {index}");
        descriptors.push(match input {
            Input::Tensor(name, shape, bytes) => {
                let dtype = dtype(name)?;
                let bytes = bytes.as_slice().map_err(|e| PyValueError::new_err(format!("{what}: {e}")))?;
                let want = shape.iter().product::<usize>() * dtype.size();
                if bytes.len() != want {
                    return Err(PyValueError::new_err(format!(
                        "{what}: {} bytes for shape {shape:?} of {name} ({want} bytes)",
                        bytes.len()
                    )));
                }
                let (framework, _) = stager.place(job, &what, bytes.to_vec())?;
                describe(&what, dtype, shape, framework)?
            }
            Input::Scalar(kind, bytes) => {
                let kind = scalar_kind(kind)?;
                let bytes = bytes.as_slice().map_err(|e| PyValueError::new_err(format!("{what}: {e}")))?;
                if bytes.len() != kind.dtype().size() {
                    return Err(PyValueError::new_err(format!("{what}: {} bytes for a {kind:?} scalar", bytes.len())));
                }
                ArgTensor::hbm_scalar(kind, stager.place(job, &what, bytes.to_vec())?.0)
            }
        });
    }
    let output_len = output.shape.iter().product::<usize>() * output.dtype.size();
    let (framework, device) = stager.place(job, "the output", vec![0xFF; output_len])?;
    let descriptor = describe("the output", output.dtype, &output.shape, framework)?;
    let dump = OutputDump { address: device, len: output_len as u32 };
    debug_assert!(device >= TENSOR_AREA);
    Ok((descriptor, descriptors, dump))
}

/// What one call gave back, per core in core order. The Python half turns it into a
/// `CallResult` or a `KernelError`.
#[pyclass(module = "neuroncustomop._native", frozen, get_all)]
pub struct RawCall {
    /// The output's bytes as the device left them (the `0xFF` canary where the kernel
    /// wrote nothing).
    pub output: Py<PyArray1<u8>>,
    /// Per core: the invocation status, or the loader's word where the kernel did not
    /// run (`unknown-kernel`, `bad-words`, …).
    pub statuses: Vec<String>,
    /// Per core: guest instructions the kernel took (to within 25), when counted.
    pub instructions: Vec<Option<u64>>,
    /// Per core: what the kernel printed.
    pub stdout: Vec<Py<PyBytes>>,
    /// Per core: bytes of stdout the device's ring lost before those.
    pub stdout_lost: Vec<u32>,
}

impl RawCall {
    /// The call's result from the loader's report, for an op on `cores` cores.
    ///
    /// # Errors
    /// [`DeviceError`] when the loader did not finish, or dumped no output.
    pub fn from_report(py: Python<'_>, report: &Report, cores: usize, output_len: usize) -> PyResult<Self> {
        let log = || {
            let lines: Vec<&str> = report.outcome.stdout.lines().filter(|line| !line.starts_with("DUMP ")).collect();
            format!("{}\n{}", lines.join("\n"), report.outcome.stderr)
        };
        if !report.done {
            let why = if report.outcome.timed_out { "timed out" } else { "did not finish" };
            return Err(DeviceError::new_err(format!("the device's loader {why}; its output:\n{}", log())));
        }
        let output = report.dumps.get(&0).cloned().unwrap_or_default();
        if output.len() != output_len {
            return Err(DeviceError::new_err(format!(
                "the device returned {} output bytes, not {output_len}; its output:\n{}",
                output.len(),
                log()
            )));
        }
        let (mut statuses, mut instructions, mut stdout, mut stdout_lost) = (vec![], vec![], vec![], vec![]);
        for core in 0..cores as u32 {
            let report = report.core(core);
            let op = report.ops.first();
            statuses.push(op.map_or_else(|| "not-run".to_string(), |op| op.status.clone()));
            instructions.push(op.and_then(|op| op.instructions));
            let (printed, lost) = report.stdout.get(&0).cloned().unwrap_or_default();
            stdout.push(PyBytes::new(py, &printed).unbind());
            stdout_lost.push(lost);
        }
        Ok(Self { output: PyArray1::from_vec(py, output).unbind(), statuses, instructions, stdout, stdout_lost })
    }
}

/// Every runtime status with its name: each name is the constant's own
/// (`stringify!`), and the assertion below fails the build when the runtime adds a
/// status this list lacks.
macro_rules! named {
    ($($name:ident),* $(,)?) => { [$((Status::$name, stringify!($name))),*] };
}

const NAMED: [(Status, &str); 37] = named![
    OK, NO_INVOCATION, NOT_SET_UP, ALREADY_SET_UP, TOO_MANY_ARGS, NULL_POINTER, NO_MORE_ARGS, EXPECTED_TENSOR,
    EXPECTED_SCALAR, SCALAR_KIND_MISMATCH, DST_ALREADY_TAKEN, NO_OUTPUT, TRANSLATE_MISS, RANGE_OUTSIDE_WINDOW, TOO_LARGE,
    OUTPUT_ALIASES_INPUT, UNKNOWN_ARG_TYPE, UNKNOWN_DTYPE, UNKNOWN_SHAPE_TYPE, OUT_OF_LINE_SHAPE, RANK_ZERO,
    RANK_TOO_LARGE, UNUSED_DIM_NON_ZERO, UNKNOWN_STORAGE_KIND, RESERVED_NON_ZERO, ELEMENT_COUNT_MISMATCH,
    UNSUPPORTED_TPB_LAYOUT, SCALAR_NOT_SINGLE_ELEMENT, SCALAR_DTYPE_MISMATCH, DIM_TOO_LARGE, TOO_MANY_ELEMENTS,
    DTYPE_MISMATCH, OUT_OF_BOUNDS, READ_ONLY, MISALIGNED, TCM_EXHAUSTED, STREAM_FULL,
];
const _: () = assert!(NAMED.len() == Status::ALL.len(), "a runtime status has no name here");

/// The name of invocation status `code`: `OK`, a runtime status such as
/// `DTYPE_MISMATCH`, `KERNEL+n` for a kernel's own code `n`, else its hex value.
#[pyfunction]
pub fn status_name(code: u32) -> String {
    if let Some((_, name)) = NAMED.iter().find(|(status, _)| status.0 == code) {
        return (*name).to_owned();
    }
    if code >= Status::KERNEL_BASE {
        return format!("KERNEL+{}", code - Status::KERNEL_BASE);
    }
    format!("{code:#x}")
}
