//! C++ libraries on the host tier: a library on the AWS torch API (`customop.json`,
//! `runtime/include/torch`) built for x86-64 as the device build makes it
//! (`neuroncustomop_package::cxx`): the same shape driver and `NEURON_LIBRARY`
//! registration, the same generated unit (the compute sources, one entry per op, the
//! kernel table), compiled by the same clang++ for x86-64 instead of Xtensa.

use crate::{EXACT_FLOAT, HostError, Sanitizer};
use neuroncustomop_machine::home::Home;
use neuroncustomop_machine::toolchain::{Llvm, Toolchain};
use neuroncustomop_package::cxx;
use neuroncustomop_package::project::Project;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A C++ library compiled for the host: its object (the generated unit) and its shape
/// driver.
pub(crate) struct Compiled {
    /// The generated unit's object.
    pub object: PathBuf,
    /// The shape functions, run on the host for the output's form.
    pub shape_driver: PathBuf,
}

/// Compiles `project` (a C++ library) into `out`: the shape driver, the registration,
/// the generated unit and its object.
pub(crate) fn compile(
    project: &Project,
    home: &Home,
    out: &Path,
    sanitizer: Option<Sanitizer>,
) -> Result<Compiled, HostError> {
    let error = |what: String| HostError::Build { name: project.name.clone(), what };
    let library = cxx::Library::open(&project.dir).map_err(|e| error(e.to_string()))?;
    let tools = Toolchain { home: home.clone() };
    // The host build's own driver, beside its objects: a device build of the same
    // library at the same time writes its own.
    let shape_driver = out.join(neuroncustomop_package::package::SHAPE_DRIVER);
    library.shape_driver_at(&tools, &shape_driver).map_err(|e| error(e.to_string()))?;
    let registration = cxx::registration(&shape_driver).map_err(|e| error(e.to_string()))?;
    let unit = out.join("entries.cpp");
    fs::write(&unit, cxx::generated_unit(&library, &registration))?;
    let object = out.join("entries.o");
    crate::run(
        Command::new(Llvm::CLANGXX)
            // As the device build (-fno-exceptions -fno-rtti, freestanding, the runtime's
            // headers), but -O0 and full debug information for gdb.
            .args(["-std=c++17", "-g", "-O0", "-fPIC", "-ffreestanding", "-nostdlibinc"])
            .args(["-Wall", "-Wno-unused-parameter", "-fno-exceptions", "-fno-rtti"])
            .args(EXACT_FLOAT)
            .args(crate::author_flags(sanitizer))
            .arg("-I")
            .arg(home.include_dir().join("libc"))
            .arg("-I")
            .arg(home.include_dir())
            .arg("-I")
            .arg(&library.dir)
            .args(&library.manifest.extra_cflags)
            .arg("-c")
            .arg(&unit)
            .arg("-o")
            .arg(&object),
    )
    .and_then(|()| crate::apart::redirect_copies(&object, sanitizer))
    .map_err(error)?;
    Ok(Compiled { object, shape_driver })
}
