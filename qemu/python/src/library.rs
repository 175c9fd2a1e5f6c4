//! A loaded library: the host API's [`host::Library`], and its errors as Python
//! exceptions.

use crate::call::{self, Input, RawCall};
use crate::{DeviceError, PackageError};
use neuroncustomop_sim::library::{self as host, CallError, Options, Output};
use neuroncustomop_sim::toolchain::repo_root;
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::error::Error;
use std::path::{Path, PathBuf};

/// A packaged kernel library, ready to run.
#[pyclass(module = "neuroncustomop._native", frozen)]
pub struct Library {
    library: host::Library,
}

/// Which built-in example of this repository `path` is: `examples/<name>.rs` or the
/// folder `examples/<name>/`.
fn example_name(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let examples = repo_root().join("examples").canonicalize().ok()?;
    if path.parent()? != examples {
        return None;
    }
    let name = if path.is_dir() { path.file_name()? } else { path.file_stem()? };
    Some(name.to_str()?.to_owned())
}

/// `error` and each of its causes, one per line.
fn with_causes(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(&format!("\n  because: {inner}"));
        cause = inner.source();
    }
    text
}

/// The Python exception for a call the host API refused or could not run.
fn call_error(error: CallError) -> PyErr {
    let message = with_causes(&error);
    match error {
        CallError::UnknownKernel { .. } => PyKeyError::new_err(message),
        CallError::TooManyArgs(_) | CallError::OutputLike { .. } => PyTypeError::new_err(message),
        CallError::Descriptor { .. } | CallError::DoesNotFit { .. } | CallError::Cores(_) => {
            PyValueError::new_err(message)
        }
        CallError::Job(_) | CallError::Run(_) | CallError::Unfinished { .. } => DeviceError::new_err(message),
    }
}

#[pymethods]
impl Library {
    /// Loads the library at `path`: a package folder (`ucode_lib.json`), an op
    /// author's project (built and packaged first), or a built-in example of this
    /// repository (`examples/<name>.rs`, `examples/<name>/`).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let loaded = py.detach(|| match example_name(&path) {
            Some(name) => host::Library::example(&name),
            None => host::Library::load(&path),
        });
        let library = loaded.map_err(|e| PackageError::new_err(format!("{}: {}", path.display(), with_causes(&e))))?;
        Ok(Self { library })
    }

    /// The library's name.
    #[getter]
    fn name(&self) -> &str {
        self.library.name()
    }

    /// The package folder (the 8 images and `ucode_lib.json`).
    #[getter]
    fn package_dir(&self) -> PathBuf {
        self.library.package().dir.clone()
    }

    /// Its kernels, in registration order.
    #[getter]
    fn kernels(&self) -> Vec<&str> {
        self.library.kernels()
    }

    /// Runs kernel `kernel` once on `cores` cores with `inputs`, into an output of
    /// `output_dtype` and `output_shape`, counting instructions.
    fn call(
        &self,
        py: Python<'_>,
        kernel: &str,
        inputs: Vec<Input<'_>>,
        output_dtype: &str,
        output_shape: Vec<usize>,
        cores: usize,
    ) -> PyResult<RawCall> {
        if inputs.is_empty() {
            // The dispatch words carry the output descriptor after the inputs'
            // (docs/abi/dispatch.md): an op with an output has at least one input.
            return Err(PyTypeError::new_err("no inputs: a kernel call takes at least one"));
        }
        let args = inputs
            .iter()
            .enumerate()
            .map(|(index, input)| input.to_arg(&format!("input {index}")))
            .collect::<PyResult<Vec<_>>>()?;
        let output = Output::Shape { dtype: call::dtype(output_dtype)?, shape: output_shape };
        let options = Options { cores, ..Options::default() };
        let library = &self.library;
        let done = py.detach(|| library.call_with(kernel, &args, output, &options)).map_err(call_error)?;
        Ok(RawCall::new(py, done))
    }
}
