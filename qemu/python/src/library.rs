//! A loaded library: its package, and calls of its kernels on the simulated device.

use crate::call::{self, Input, OutputSpec, RawCall};
use crate::{DeviceError, PackageError};
use neuroncustomop::data_transfer::NeuronMemcpyMethod;
use neuroncustomop_sim::device;
use neuroncustomop_sim::images::CORES;
use neuroncustomop_sim::job::Op;
use neuroncustomop_sim::package::{self, Package};
use neuroncustomop_sim::toolchain::repo_root;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// A packaged kernel library, ready to run.
#[pyclass(module = "neuroncustomop._native", frozen)]
pub struct Library {
    package: Package,
}

/// Which example of this repository `path` is: `examples/<name>.rs` or the folder
/// `examples/<name>/`.
fn example_name(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let examples = repo_root().join("examples").canonicalize().ok()?;
    if path.parent()? != examples {
        return None;
    }
    let name = if path.is_dir() { path.file_name()? } else { path.file_stem()? };
    Some(name.to_str()?.to_owned())
}

#[pymethods]
impl Library {
    /// Loads the library at `path`: a package folder (one with `ucode_lib.json`) is
    /// opened as it is; a kernel library's sources are built and packaged first.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let package = if path.join("ucode_lib.json").is_file() {
            Package::open(&path).map_err(|e| PackageError::new_err(format!("{}: {e}", path.display())))?
        } else {
            let name = example_name(&path).ok_or_else(|| {
                PackageError::new_err(format!(
                    "{}: not a package folder, nor an example of {} (examples/<name>.rs, examples/<name>/)",
                    path.display(),
                    repo_root().display()
                ))
            })?;
            py.detach(|| package::package(&name)).map_err(|e| PackageError::new_err(format!("packaging {name}: {e}")))?
        };
        Ok(Self { package })
    }

    /// The library's name.
    #[getter]
    fn name(&self) -> &str {
        self.package.name()
    }

    /// The package folder (the 8 images and `ucode_lib.json`).
    #[getter]
    fn package_dir(&self) -> PathBuf {
        self.package.dir.clone()
    }

    /// Its kernels, in FunctionId order.
    #[getter]
    fn kernels(&self) -> Vec<String> {
        self.package.kernels().into_iter().map(str::to_owned).collect()
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
        let function = self.package.function_id(kernel).ok_or_else(|| {
            PyKeyError::new_err(format!("{} has no kernel {kernel}; it has {}", self.name(), self.kernels().join(", ")))
        })?;
        if !(1..=CORES).contains(&cores) {
            return Err(PyValueError::new_err(format!("cores = {cores}: the device has 1 to {CORES}")));
        }
        let output = OutputSpec { dtype: call::dtype(output_dtype)?, shape: output_shape };
        let mut job = self.package.job(cores).map_err(|e| DeviceError::new_err(e.to_string()))?;
        // Instructions are counted under `-icount`, where a DMA transfer costs ~200
        // million of them and takes minutes: `neuron_memcpy` uses the CPU's vector copy,
        // as `cargo sim run` does (docs/PERFORMANCE.md, "Op flow").
        job.header.memcpy_method = NeuronMemcpyMethod::VecMemcpy as u32;
        let (output_descriptor, descriptors, dump) = call::stage(&mut job, &inputs, &output)?;
        let op = Op {
            function,
            output: Some(output_descriptor.to_bytes()),
            inputs: descriptors.iter().map(|d| d.to_bytes()).collect(),
            dump,
        };
        job.push(&op).map_err(|e| DeviceError::new_err(e.to_string()))?;
        let images = &self.package.images;
        let report = py
            .detach(|| device::run_counting_instructions(images, &job))
            .map_err(|e| DeviceError::new_err(e.to_string()))?;
        RawCall::from_report(py, &report, cores, dump.len as usize)
    }
}
