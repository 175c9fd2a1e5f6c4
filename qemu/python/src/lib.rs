//! `neuroncustomop._native`: the Rust half of the `neuroncustomop` Python package.
//!
//! The Python half (`python/neuroncustomop/`) turns what a user passes (NumPy arrays,
//! PyTorch tensors, Python and NumPy scalars) into plain byte buffers with a dtype
//! and a shape; this half hands them to the host API (`neuroncustomop_host::library`),
//! which packages the library and runs the kernel, and hands back the output bytes
//! with the per-core status, stdout and instruction count. Splitting there keeps
//! every Python-object rule in Python, and everything about the device in the host
//! API, which the Rust tests use too.
//!
//! Errors: bad arguments raise `ValueError`/`TypeError`; a library that cannot be
//! built or packaged raises [`PackageError`]; a device that could not run the op
//! raises [`DeviceError`]. A kernel that ran and failed, or stopped without returning,
//! is not an error here: its status (or how it stopped) is part of the result, and the
//! Python half raises `KernelError`.

mod call;
mod library;

use neuroncustomop_machine::findings::{FindingKind, describe};
use neuroncustomop_package::cxx::ArgKind;
use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::IntoPyDict;

create_exception!(
    neuroncustomop,
    PackageError,
    PyRuntimeError,
    "The library could not be built or packaged (the message has the build's output)."
);
create_exception!(
    neuroncustomop,
    DeviceError,
    PyRuntimeError,
    "The simulated device could not run the op (QEMU failed, or the loader did not finish)."
);

/// Names the tools' installed data folder for this process: the Python half finds it
/// beside the installed package (`_home.py`). `NEURONCUSTOMOP_HOME` still comes first.
#[pyfunction]
fn name_installed(path: std::path::PathBuf) {
    neuroncustomop_machine::home::name_installed(&path);
}

/// The dimensions a kernel's bugs live at, ascending, for `cores` cores (the host
/// API's `generate::edge_sizes`): the property checks' one list.
#[pyfunction]
fn edge_sizes(cores: usize) -> Vec<usize> {
    neuroncustomop_host::generate::edge_sizes(cores)
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<library::Library>()?;
    module.add_class::<call::RawCall>()?;
    module.add("PackageError", module.py().get_type::<PackageError>())?;
    module.add("DeviceError", module.py().get_type::<DeviceError>())?;
    module.add_function(wrap_pyfunction!(call::canary, module)?)?;
    module.add_function(wrap_pyfunction!(name_installed, module)?)?;
    module.add("VERSION", neuroncustomop::VERSION)?;
    module.add_function(wrap_pyfunction!(call::write_profile, module)?)?;
    module.add("CORES", neuroncustomop_machine::images::CORES)?;
    // The device's limits, for the property checks' generated shapes (`testing.py`).
    module.add("MAX_RANK", neuroncustomop::wrapper_api::MAX_RANK)?;
    module.add("MAX_DIM", neuroncustomop::wrapper_api::MAX_DIM)?;
    module.add("TCM_POOL_SIZE", neuroncustomop::allocators::tcm::TCM_POOL_SIZE)?;
    module.add_function(wrap_pyfunction!(edge_sizes, module)?)?;
    // The one list of device dtypes (the runtime's `Dtype`): the Python half checks with it.
    module.add("DTYPES", pyo3::types::PyTuple::new(module.py(), call::dtype_names())?)?;
    // The one list of argument kinds (the C++ build's `cxx::ArgKind::ALL`), and each
    // one's type in a torch.library schema: the Python half names kinds only by these.
    let kinds = ArgKind::ALL.map(ArgKind::name);
    module.add("ARG_KINDS", pyo3::types::PyTuple::new(module.py(), kinds)?)?;
    module
        .add("SCHEMA_TYPES", ArgKind::ALL.map(|kind| (kind.name(), kind.schema_type())).into_py_dict(module.py())?)?;
    // The one list of finding kinds (`neuroncustomop_wire::finding::FindingKind::ALL`):
    // the Python half picks an exception by these names, never by the English the host
    // prints, which FINDING_DESCRIPTIONS holds for presentation.
    let findings = FindingKind::ALL.iter().map(|kind| kind.name());
    module.add("FINDING_KINDS", pyo3::types::PyTuple::new(module.py(), findings)?)?;
    let descriptions = FindingKind::ALL.iter().map(|&kind| (kind.name(), describe(kind)));
    module.add("FINDING_DESCRIPTIONS", descriptions.into_py_dict(module.py())?)?;
    Ok(())
}
