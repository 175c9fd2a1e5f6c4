//! One kernel call: the arguments as the Python half passes them, turned into the
//! host API's [`Arg`]s, and the host API's [`Call`] handed back.

use neuroncustomop::wrapper_api::{Dtype, Status};
use neuroncustomop_host::array::{Array, dtype_name, parse_dtype};
use neuroncustomop_host::compare;
use neuroncustomop_host::library::{Arg, Call};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// One argument, as the Python half passes it: `(dtype, shape, bytes)` for a tensor,
/// `(kind, bytes)` for a scalar; the bytes little-endian and C-ordered, in a `uint8`
/// array.
#[derive(FromPyObject)]
pub enum Input<'py> {
    /// A tensor: its dtype's NumPy name, its shape, its bytes.
    Tensor(String, Vec<usize>, PyReadonlyArray1<'py, u8>),
    /// A scalar: `"int"`, `"long long"` or `"float"`, and its bytes.
    Scalar(String, PyReadonlyArray1<'py, u8>),
}

/// The device dtype NumPy names `name` (`float32`, `bfloat16`, ...).
pub fn dtype(name: &str) -> PyResult<Dtype> {
    parse_dtype(name).filter(|dtype| dtype_name(*dtype) == name).ok_or_else(|| {
        PyTypeError::new_err(format!("dtype {name} is not a device dtype: use {}", dtype_names().join(", ")))
    })
}

/// `bytes` as exactly `N` bytes, or a `ValueError` naming `what`.
fn exactly<const N: usize>(what: &str, bytes: &[u8]) -> PyResult<[u8; N]> {
    bytes.try_into().map_err(|_| PyValueError::new_err(format!("{what}: {} bytes, not {N}", bytes.len())))
}

/// The host API's arguments for `inputs`, each named `input <index>` in errors.
pub fn to_args(inputs: &[Input<'_>]) -> PyResult<Vec<Arg>> {
    inputs.iter().enumerate().map(|(index, input)| input.to_arg(&format!("input {index}"))).collect()
}

impl Input<'_> {
    /// The host API's argument; `what` names it in errors.
    pub fn to_arg(&self, what: &str) -> PyResult<Arg> {
        let bytes = |data: &PyReadonlyArray1<'_, u8>| {
            data.as_slice().map(<[u8]>::to_vec).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
        };
        Ok(match self {
            Input::Tensor(name, shape, data) => Arg::Tensor(
                Array::from_bytes(dtype(name)?, shape.clone(), bytes(data)?)
                    .map_err(|e| PyValueError::new_err(format!("{what}: {e}")))?,
            ),
            Input::Scalar(kind, data) => {
                let data = bytes(data)?;
                match kind.as_str() {
                    "int" => Arg::Int(i32::from_le_bytes(exactly(what, &data)?)),
                    "long long" => Arg::LongLong(i64::from_le_bytes(exactly(what, &data)?)),
                    "float" => Arg::Float(f32::from_le_bytes(exactly(what, &data)?)),
                    other => {
                        return Err(PyTypeError::new_err(format!(
                            "{what}: scalar kind {other}: use int, long long or float"
                        )));
                    }
                }
            }
        })
    }
}

/// What one call gave back, per core in core order. The Python half makes it a
/// `CallResult`, or a `KernelError` when a status is not 0.
#[pyclass(module = "neuroncustomop._native", frozen, get_all)]
pub struct RawCall {
    /// The output's bytes as the device left them (the dtype's canary where the kernel
    /// wrote nothing).
    pub output: Py<PyArray1<u8>>,
    /// The first failing core's invocation status (cores in order), or 0.
    pub status: u32,
    /// Its name, by [`status_name`].
    pub status_name: String,
    /// Per core: the invocation status.
    pub statuses: Vec<u32>,
    /// Per core: guest instructions the kernel took (exact: the core's own ICOUNT).
    pub instructions: Vec<u64>,
    /// Per core: what the kernel printed (invalid UTF-8 replaced).
    pub stdout: Vec<String>,
    /// Per core: bytes of stdout the device's ring dropped before those.
    pub stdout_lost: Vec<u32>,
    /// Wall time of the device run, in seconds.
    pub wall: f64,
    /// The call's profile as JSON (the host API's `Profile`, serialized), when asked.
    pub profile: Option<String>,
    /// Every core's instructions, summed (the host API's `Work::total`).
    pub total_instructions: u64,
    /// The slowest core's instructions over the cores' mean (`Work::balance`).
    pub balance: f64,
    /// The slowest core's instructions per element it wrote (`Work::per_element`).
    pub per_element: Option<f64>,
}

impl RawCall {
    pub fn new(py: Python<'_>, call: Call) -> Self {
        let work = call.work();
        Self {
            total_instructions: work.total,
            balance: work.balance,
            per_element: work.per_element,
            output: PyArray1::from_slice(py, call.output.bytes()).unbind(),
            status: call.status.0,
            status_name: status_name(call.status.0),
            statuses: call.statuses.iter().map(|status| status.0).collect(),
            instructions: call.instructions,
            stdout_lost: call.stdout.iter().map(|printed| printed.lost).collect(),
            stdout: call.stdout.into_iter().map(|printed| printed.text).collect(),
            wall: call.wall.as_secs_f64(),
            // A Profile holds only numbers, strings and lists: it always serializes.
            profile: call.profile.as_ref().and_then(|profile| serde_json::to_string(profile).ok()),
        }
    }
}

/// The name of invocation status `code`: `OK`, a runtime status such as
/// `DTYPE_MISMATCH`, `Op(n)` for a kernel's own code `n` (as the runtime's `Status`
/// prints it), else its hex value.
fn status_name(code: u32) -> String {
    match Status(code).name() {
        Some(name) => name.to_owned(),
        None if code >= Status::KERNEL_BASE => format!("Op({})", code - Status::KERNEL_BASE),
        None => format!("{code:#x}"),
    }
}

/// The device's dtypes, as NumPy names them, in the order of the runtime's [`Dtype::ALL`].
pub fn dtype_names() -> Vec<&'static str> {
    Dtype::ALL.iter().map(|&dtype| dtype_name(dtype)).collect()
}

/// The bytes of one element of `dtype` that an output holds before the kernel writes
/// it (a NaN for floats).
#[pyfunction]
pub fn canary(dtype_name: &str) -> PyResult<Vec<u8>> {
    Ok(compare::canary(dtype(dtype_name)?))
}
