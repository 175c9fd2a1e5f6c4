//! One kernel call: the arguments as the Python half passes them, turned into the
//! host API's [`Arg`]s, and the host API's [`Call`] handed back.

use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_host::array::{Array, dtype_name, parse_dtype};
use neuroncustomop_host::compare;
use neuroncustomop_host::library::{Arg, Call, CallError};
use neuroncustomop_package::cxx::ArgKind;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// One argument, as the Python half passes it: `(dtype, shape, bytes)` for a tensor,
/// `(kind, bytes)` for a scalar (an argument kind's name, `cxx::ArgKind::name`); the
/// bytes little-endian and C-ordered, in a `uint8` array.
#[derive(FromPyObject)]
pub enum Input<'py> {
    /// A tensor: its dtype's NumPy name, its shape, its bytes.
    Tensor(String, Vec<usize>, PyReadonlyArray1<'py, u8>),
    /// A scalar: `"int"`, `"long"` (a C `long long`) or `"float"`, and its bytes.
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
                // The kernel ABI carries three scalars: a C int, long long and float.
                match ArgKind::parse(kind) {
                    Some(ArgKind::Int) => Arg::Int(i32::from_le_bytes(exactly(what, &data)?)),
                    Some(ArgKind::Long) => Arg::LongLong(i64::from_le_bytes(exactly(what, &data)?)),
                    Some(ArgKind::Float) => Arg::Float(f32::from_le_bytes(exactly(what, &data)?)),
                    _ => {
                        let scalars = [ArgKind::Int, ArgKind::Long, ArgKind::Float].map(ArgKind::name).join(", ");
                        return Err(PyTypeError::new_err(format!("{what}: scalar kind {kind}: use {scalars}")));
                    }
                }
            }
        })
    }
}

/// What one call gave back, per core in core order. The Python half makes it a
/// `CallResult`, or a `KernelError` when a status is not 0 or the kernel stopped
/// (`stop` is set; the output is then empty).
#[pyclass(module = "neuroncustomop._native", frozen, get_all)]
pub struct RawCall {
    /// The output's bytes as the device left them (the dtype's canary where the kernel
    /// wrote nothing).
    pub output: Py<PyArray1<u8>>,
    /// The first failing core's invocation status (cores in order), or 0.
    pub status: u32,
    /// Its name (`OK`, `DTYPE_MISMATCH`, `Op(1)`: the host API's `KernelStatus::name`).
    pub status_name: String,
    /// When the runtime named the argument behind that status, which and why
    /// (`argument 3: pulled as float, passed as int`: the host API's `ArgFailure`);
    /// for a C++ library's failure, the line the runtime printed as it ended the op,
    /// with the kernel's `file:line` where the check has one (`Call::cxx_failure_line`).
    pub status_detail: Option<String>,
    /// Per core: the invocation status.
    pub statuses: Vec<u32>,
    /// Per core: guest instructions the kernel took (exact: the core's own ICOUNT).
    pub instructions: Vec<u64>,
    /// Per core: whether its count is exactly the kernel's (the device's `exact=yes`).
    pub exact: Vec<bool>,
    /// How the kernel stopped without returning (`exit(101) EXIT_PANIC`, `abort`,
    /// `over-budget`), or `None` when every core returned a status.
    pub stop: Option<String>,
    /// For a stopped kernel, the host API's whole account: where (function,
    /// `file:line`, backtrace), what it printed, the heap blocks given back. Else empty.
    pub report: String,
    /// Per core: what the kernel printed (invalid UTF-8 replaced).
    pub stdout: Vec<String>,
    /// Per core: bytes of stdout the device's ring dropped before those.
    pub stdout_lost: Vec<u32>,
    /// Wall time of the device run, in seconds.
    pub wall: f64,
    /// The memory checks' first findings, each `(kind, severity, core, text, backtrace)`:
    /// the kind as `FindingKind`'s name, its severity as `Severity`'s (`error` or
    /// `warning`: whether the call fails for it), the text with its place, source line
    /// and backtrace, the backtrace's call sites as function and `file:line`, innermost
    /// first.
    pub findings: Vec<(String, String, u32, String, Vec<String>)>,
    /// How many findings there were in all.
    pub findings_total: u64,
    /// When output elements were never written (and the call did not declare a partial
    /// output): the host API's account, e.g. "875 of 1000 output elements were never
    /// written; cores 1-7 wrote nothing: ...".
    pub unwritten: Option<String>,
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
    /// The raw result of `call`; `cxx` says the library is a C++ one (its failures'
    /// detail is the line the runtime printed).
    pub fn new(py: Python<'_>, call: Call, cxx: bool) -> Self {
        let cxx_failure = cxx.then(|| call.cxx_failure_line().map(str::to_owned)).flatten();
        let work = call.work();
        let status_detail = call.arg_failure().map(|failure| failure.to_string());
        Self {
            total_instructions: work.total,
            balance: work.balance,
            per_element: work.per_element,
            // The output's bytes handed to NumPy as they are, not copied.
            output: PyArray1::from_vec(py, call.output.into_bytes()).unbind(),
            status: call.status.0,
            status_name: call.status.name(),
            status_detail: status_detail.or(cxx_failure),
            statuses: call.statuses.iter().map(|status| status.0).collect(),
            instructions: call.instructions,
            exact: call.exact,
            stop: None,
            report: String::new(),
            stdout_lost: call.stdout.iter().map(|printed| printed.lost).collect(),
            stdout: call.stdout.into_iter().map(|printed| printed.text).collect(),
            wall: call.wall.as_secs_f64(),
            findings: call
                .findings
                .shown
                .iter()
                .map(|f| {
                    let severity = f.kind.severity().name().to_owned();
                    (f.kind.name().to_owned(), severity, f.core, f.to_string(), f.backtrace_at.clone())
                })
                .collect(),
            findings_total: call.findings.total,
            unwritten: call.unwritten.filter(|unwritten| unwritten.elements > 0).map(|unwritten| unwritten.to_string()),
            // A Profile holds only numbers, strings and lists: it always serializes.
            profile: call.profile.as_ref().and_then(|profile| serde_json::to_string(profile).ok()),
        }
    }

    /// The raw result of a call whose kernel stopped on some core (`error` is the host
    /// API's [`CallError::Stopped`]), or `None` for any other error.
    pub fn stopped(py: Python<'_>, error: &CallError) -> Option<Self> {
        let CallError::Stopped { stop, stdout, .. } = error else { return None };
        let stop = neuroncustomop_machine::device::describe_status(*stop);
        Some(Self {
            output: PyArray1::from_slice(py, &[]).unbind(),
            status: 0,
            status_name: stop.clone(),
            status_detail: None,
            statuses: Vec::new(),
            instructions: Vec::new(),
            exact: Vec::new(),
            stop: Some(stop.clone()),
            // A stopped kernel's findings are not read: the stop is what the call raises.
            findings: Vec::new(),
            findings_total: 0,
            unwritten: None,
            profile: None,
            total_instructions: 0,
            balance: 0.0,
            per_element: None,
            report: neuroncustomop_host::library::describe(error),
            stdout_lost: stdout.iter().map(|printed| printed.lost).collect(),
            stdout: stdout.iter().map(|printed| printed.text.clone()).collect(),
            wall: 0.0,
        })
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

/// Writes a call's profile (its JSON, [`RawCall::profile`]) into `dir` as `ncop run
/// --profile DIR` does (flame graph, folded stacks, trace, annotated source and
/// disassembly, `profile.json`; `ncop profile diff` compares two such folders), priced by
/// the default cost model.
#[pyfunction]
pub fn write_profile(py: Python<'_>, profile: &str, dir: std::path::PathBuf) -> PyResult<()> {
    let profile: neuroncustomop_profile::profile::Profile =
        serde_json::from_str(profile).map_err(|e| PyValueError::new_err(format!("not a call's profile: {e}")))?;
    let model = neuroncustomop_profile::cost::CostModel::default();
    py.detach(|| neuroncustomop_profile::write::write(&profile, &model, &dir)).map_err(|e| {
        pyo3::exceptions::PyOSError::new_err(format!("writing the profile into {}: {e}", dir.display()))
    })?;
    Ok(())
}
