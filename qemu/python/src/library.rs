//! A loaded library: the host API's [`host::Library`], and its errors as Python
//! exceptions.

use crate::call::{self, Input, RawCall};
use crate::{DeviceError, PackageError};
use neuroncustomop_host::array::dtype_name;
use neuroncustomop_host::library::{self as host, CallError, Options, Output, PartialOutput};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// A `NEURON_LIBRARY` as Python sees it: the namespace, and each op's name and argument
/// kinds.
type Registration = (String, Vec<(String, Vec<&'static str>)>);

/// A packaged kernel library, ready to run.
///
/// Fork-safe: the host API's library keeps its booted devices (QEMU processes and the
/// threads that read them), which a child made by `fork()` shares with its parent
/// without the threads, so a call there would wait forever. A forked child loads the
/// library again on its first use and gets devices of its own; the parent's copy is
/// forgotten in the child, never dropped (dropping would stop the parent's devices).
#[pyclass(module = "neuroncustomop._native", frozen)]
pub struct Library {
    /// Where it was loaded from: a forked child loads it from there again.
    path: PathBuf,
    /// Where its calls run: the simulated device, or the host tier (`target="host"`).
    target: host::Target,
    /// Its name and kernels, which a forked child's load does not change.
    name: String,
    kernels: Vec<String>,
    loaded: Mutex<Loaded>,
}

/// The host API's library as one process loaded it.
struct Loaded {
    /// The process that loaded it (`std::process::id`).
    pid: u32,
    library: Arc<host::Library>,
}

impl Library {
    /// The host API's library of this process: loaded again when this is a child forked
    /// after the load (the struct's documentation).
    fn library(&self) -> PyResult<Arc<host::Library>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let pid = std::process::id();
        if loaded.pid != pid {
            let fresh = host::Library::load_for(&self.path, self.target)
                .map_err(|e| PackageError::new_err(format!("{}: {}", self.path.display(), host::describe(&e))))?;
            std::mem::forget(std::mem::replace(&mut loaded.library, Arc::new(fresh)));
            loaded.pid = pid;
        }
        Ok(Arc::clone(&loaded.library))
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        let loaded = self.loaded.get_mut().unwrap_or_else(PoisonError::into_inner);
        if loaded.pid != std::process::id() {
            // A forked child's copy of its parent's devices: stopping them would stop
            // the parent's (the struct's documentation).
            std::mem::forget(Arc::clone(&loaded.library));
        }
    }
}

/// The Python exception for a call the host API refused or could not run.
fn call_error(error: CallError) -> PyErr {
    let message = host::describe(&error);
    match error {
        CallError::UnknownKernel { .. } => PyKeyError::new_err(message),
        CallError::TooManyArgs(_) | CallError::OutputLike { .. } | CallError::NoOutputForm { .. } => {
            PyTypeError::new_err(message)
        }
        CallError::Descriptor { .. }
        | CallError::DoesNotFit { .. }
        | CallError::Cores(_)
        | CallError::ShapeFunction { .. } => PyValueError::new_err(message),
        // `call` hands a stopped kernel back as a `RawCall` (`RawCall::stopped`), which
        // the Python half raises as a `KernelError`: it never gets here.
        // The host tier (`target="host"`) is a device too.
        CallError::Job(_)
        | CallError::Run(_)
        | CallError::Host(_)
        | CallError::Unfinished { .. }
        | CallError::Stopped { .. }
        | CallError::Profile(_) => DeviceError::new_err(message),
        CallError::Packaging(_) => PackageError::new_err(message),
    }
}

#[pymethods]
impl Library {
    /// Loads the library at `path` for calls on `target` (`"device"`, the default, or
    /// `"host"`): a package folder (`ucode_lib.json`), or a project (`ncop new`, the
    /// checkout's `examples/<name>/`), built and packaged first (for the host tier:
    /// built for the host only, `host::Library::load_for`).
    #[new]
    #[pyo3(signature = (path, target="device"))]
    fn new(py: Python<'_>, path: PathBuf, target: &str) -> PyResult<Self> {
        let target = match target {
            "device" => host::Target::Device,
            "host" => host::Target::Host,
            other => {
                return Err(PyValueError::new_err(format!(
                    "target={other:?}: \"device\" (the simulated device) or \"host\" (the host tier)"
                )));
            }
        };
        let loaded = py.detach(|| host::Library::load_for(&path, target).map_err(|e| host::describe(&e)));
        let library = loaded.map_err(|why| PackageError::new_err(format!("{}: {why}", path.display())))?;
        let name = library.name().to_owned();
        let kernels = library.kernels().into_iter().map(str::to_owned).collect();
        let loaded = Mutex::new(Loaded { pid: std::process::id(), library: Arc::new(library) });
        Ok(Self { path, target, name, kernels, loaded })
    }

    /// Where its calls run: `"device"` or `"host"`.
    #[getter]
    fn target(&self) -> &'static str {
        match self.target {
            host::Target::Device => "device",
            host::Target::Host => "host",
        }
    }

    /// The library's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The package folder (the 8 images and `ucode_lib.json`).
    #[getter]
    fn package_dir(&self, py: Python<'_>) -> PyResult<PathBuf> {
        py.detach(|| self.library()?.package().map(|package| package.dir.clone()).map_err(call_error))
    }

    /// The cores a call runs on unless it says otherwise: 8 for a library declared
    /// multicore (a C++ library's `customop.json`, a C library's `neuroncustomop.toml`,
    /// a Rust library's `Cargo.toml`),
    /// else 1 (the host API's
    /// `Library::default_cores`, as `ncop run` uses it).
    #[getter]
    fn default_cores(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(py.detach(|| self.library())?.default_cores())
    }

    /// Its kernels, in registration order.
    #[getter]
    fn kernels(&self) -> Vec<&str> {
        self.kernels.iter().map(String::as_str).collect()
    }

    /// A C++ library's `NEURON_LIBRARY`: `(namespace, [(op, [kind, ...]), ...])`, each
    /// argument kind one of `tensor`, `int`, `long`, `float`, `double` (the shape
    /// function's C++ parameter types); `None` for a Rust or C library.
    fn registration(&self, py: Python<'_>) -> PyResult<Option<Registration>> {
        let library = py.detach(|| self.library())?;
        let Some(registration) = py.detach(|| library.registration()) else { return Ok(None) };
        let registration = registration.map_err(|why| PackageError::new_err(format!("{}: {why}", library.name())))?;
        let ops = registration
            .ops
            .iter()
            .map(|op| (op.name.clone(), op.args.iter().map(|kind| kind.name()).collect()))
            .collect();
        Ok(Some((registration.library.clone(), ops)))
    }

    /// The output's `(dtype, shape)` for a call of `kernel` with `inputs`, by the host
    /// API's one rule (`Library::resolve_output`): `shape` and `dtype` as given, then
    /// `shape_fn` (what the caller's Python shape function said, as `(dtype, shape)`),
    /// then the library's C++ shape function, then the first tensor input.
    fn resolve_output(
        &self,
        py: Python<'_>,
        kernel: &str,
        inputs: Vec<Input<'_>>,
        shape: Option<Vec<usize>>,
        dtype: Option<&str>,
        shape_fn: Option<(String, Vec<usize>)>,
    ) -> PyResult<(&'static str, Vec<usize>)> {
        let args = call::to_args(&inputs)?;
        let given = PartialOutput { shape, dtype: dtype.map(call::dtype).transpose()? };
        let shape_fn = shape_fn.map(|(dtype, shape)| Ok::<_, PyErr>((call::dtype(&dtype)?, shape))).transpose()?;
        let library = py.detach(|| self.library())?;
        let (dtype, shape) =
            py.detach(|| library.resolve_output(kernel, &args, given, shape_fn).map_err(call_error))?;
        Ok((dtype_name(dtype), shape))
    }

    /// Runs `kernel` with `inputs` on the device (checked) and on the host tier and
    /// compares them (the host API's `tiers::diff_tiers`): `(differing, total,
    /// long_truncated, pointer_sized, first index or None, device output bytes, host
    /// output bytes, the report's text)`.
    #[allow(clippy::type_complexity)] // one tuple the Python half unpacks at once
    fn diff_tiers<'py>(
        &self,
        py: Python<'py>,
        kernel: &str,
        inputs: Vec<Input<'_>>,
        output_dtype: &str,
        output_shape: Vec<usize>,
        cores: usize,
    ) -> PyResult<(usize, usize, usize, usize, Option<Vec<usize>>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, String)>
    {
        let args = call::to_args(&inputs)?;
        let output = Output::Shape { dtype: call::dtype(output_dtype)?, shape: output_shape };
        let options = Options { cores, ..Options::default() };
        let library = self.library()?;
        let diff = py.detach(|| {
            neuroncustomop_host::tiers::diff_tiers(&library, kernel, &args, output, &options).map_err(call_error)
        })?;
        Ok((
            diff.differing,
            diff.total,
            diff.long_truncated,
            diff.pointer_sized,
            diff.first.as_ref().map(|first| first.index.clone()),
            PyBytes::new(py, diff.device.output.bytes()),
            PyBytes::new(py, diff.host.output.bytes()),
            diff.to_string(),
        ))
    }

    /// Runs kernel `kernel` once on `cores` cores with `inputs`, into an output of
    /// `output_dtype` and `output_shape`, stopping a core past `max_instructions`
    /// (default: the host API's); `count_instructions` runs QEMU under `-icount` (a
    /// deterministic clock) when the call is neither checked nor profiled; `checked`
    /// (default) checks every memory access in the device's TCG plugin. Without
    /// `-icount` each core is a host thread and the plugin counts; under it, each
    /// core's ICOUNT register: exact either way (without, waits follow the host's
    /// timing). The library's device for
    /// that core count and counting mode stays booted between calls. `profile` also
    /// returns the call's profile, as JSON ([`RawCall::profile`]); without `partial_output`,
    /// output elements no core wrote are in [`RawCall::unwritten`]. A signal handler's
    /// exception (Ctrl-C's `KeyboardInterrupt`) stops the call within a fraction of a
    /// second: its device is stopped, and the next call boots it again.
    #[allow(clippy::too_many_arguments)] // one per keyword of the Python call
    #[pyo3(signature = (kernel, inputs, output_dtype, output_shape, cores, count_instructions, max_instructions=None, checked=None, profile=false, partial_output=false))]
    fn call(
        &self,
        py: Python<'_>,
        kernel: &str,
        inputs: Vec<Input<'_>>,
        output_dtype: &str,
        output_shape: Vec<usize>,
        cores: usize,
        count_instructions: bool,
        max_instructions: Option<u64>,
        checked: Option<bool>,
        profile: bool,
        partial_output: bool,
    ) -> PyResult<RawCall> {
        if inputs.is_empty() {
            // The dispatch words carry the output descriptor after the inputs'
            // (docs/abi/dispatch.md): an op with an output has at least one input.
            return Err(PyTypeError::new_err("no inputs: a kernel call takes at least one"));
        }
        let args = call::to_args(&inputs)?;
        let output = Output::Shape { dtype: call::dtype(output_dtype)?, shape: output_shape };
        let defaults = Options::default();
        let max_instructions = max_instructions.unwrap_or(defaults.max_instructions);
        let checked = checked.unwrap_or(defaults.checked);
        let options = Options {
            cores,
            count_instructions,
            max_instructions,
            checked,
            profile,
            partial_output,
            target: self.target,
            ..defaults
        };
        let library = py.detach(|| self.library())?;
        // Exact either way: the TCG plugin's counts without -icount, ICOUNT's under it.
        // Ctrl-C: the device runs without the GIL, and the call takes it back about
        // every CANCEL_POLL to let Python see a signal. A handler's exception (the
        // KeyboardInterrupt) stops the device and is what the call raises.
        let interrupted: Mutex<Option<PyErr>> = Mutex::new(None);
        let cancelled = || match Python::attach(|py| py.check_signals()) {
            Ok(()) => false,
            Err(error) => {
                *interrupted.lock().unwrap_or_else(PoisonError::into_inner) = Some(error);
                true
            }
        };
        // The error whole, not yet a Python exception: a stopped kernel's is a result.
        #[allow(clippy::result_large_err, reason = "moved once per call, out of the detached closure")]
        let done = py.detach(|| library.call_cancellable(kernel, &args, output, &options, &cancelled));
        if let Some(error) = interrupted.into_inner().unwrap_or_else(PoisonError::into_inner) {
            return Err(error);
        }
        match done {
            Ok(done) => {
                // A C++ library's failures carry the runtime's line as their detail.
                let cxx = py.detach(|| library.registration().is_some());
                Ok(RawCall::new(py, done, cxx))
            }
            Err(error) => RawCall::stopped(py, &error).ok_or_else(|| call_error(error)),
        }
    }
}
