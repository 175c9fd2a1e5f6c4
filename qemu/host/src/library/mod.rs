//! The host API an op author's tests use: load a library once, call its kernels by
//! name with typed arrays, get the output, the named status, what each core printed
//! and how many instructions each core took.
//!
//! ```no_run
//! use neuroncustomop_host::array::Array;
//! use neuroncustomop_host::library::{Arg, Library, Output};
//!
//! // A project folder made by `ncop new` (built and packaged here), a package folder
//! // (`ucode_lib.json` and 8 images), or a built-in example: `Library::example("relu")`.
//! let library = Library::load("my_op")?;
//! let x = Array::from_vec(vec![2, 3], vec![1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0])?;
//! let call = library.call("scale", &[Arg::Tensor(x), Arg::Float(2.0)], Output::Like(0))?.check()?;
//! assert_eq!(call.output.to_vec::<f32>()?, [2.0, -4.0, 6.0, -8.0, 10.0, -12.0]);
//! println!("{} instructions on core 0; it printed {:?}", call.instructions[0], call.stdout[0].text);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each call is one job of the simulated device (`neuroncustomop_machine::device`): the inputs are
//! placed in device memory, the output is filled with [`crate::compare::canary`]
//! bytes first (so a comparison can name elements the kernel never wrote), and the op
//! is dispatched from 0x85/0x86 words with the FunctionId the package's
//! `ucode_lib.json` binds to the kernel's name.
//!
//! The module by concern: [`Arg`] and [`Output`] (what a call passes, and the output's
//! form), [`Options`] (how it runs), [`Call`] and [`KernelStatus`] (what it returns),
//! [`CallError`], [`KernelFailed`] and [`LoadError`] (why it did not), the booted
//! devices a library keeps (its sessions), the placing of tensors in a job's memory
//! ([`stage`]), and one run of a kernel from its job to its [`Call`].

mod arguments;
mod call;
mod errors;
mod options;
mod run;
mod session;
mod staging;

pub use arguments::{Arg, Output, PartialOutput};
pub use call::{Call, CoreStdout, KernelStatus, Unwritten, Work, status_text};
pub use errors::{CallError, KernelFailed, LoadError, describe};
pub use neuroncustomop_hosttier::Sanitizer;
/// The memory checks' findings, as [`Call::findings`] holds them.
pub use neuroncustomop_machine::findings::{Finding, FindingKind, OpFindings, Severity};
pub use options::{Options, Target};
pub use staging::{Staged, stage};

use neuroncustomop_hosttier::HostLibrary;
use neuroncustomop_machine::device::Session;
use neuroncustomop_machine::images::CORES;
use neuroncustomop_package::cxx::Registration;
use neuroncustomop_package::package::{Package, PackageError};
use neuroncustomop_package::project::{Project, ProjectError};
use neuroncustomop_package::ucode_lib::UcodeLib;
use session::SessionKey;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};

/// A packaged library, ready to call. It keeps one booted device per core count and
/// counting mode ([`neuroncustomop_machine::device::Session`]): the first call of each boots QEMU and
/// enters the library, later calls only dispatch.
#[derive(Debug)]
pub struct Library {
    /// The library's name.
    name: String,
    /// Its kernels and their FunctionIds (`ucode_lib.json`'s table): the package's, or
    /// for a library loaded for the host tier, one made from its host build.
    table: UcodeLib,
    /// Its device package: made at load, or (a library loaded for the host tier) at its
    /// first device call.
    package: OnceLock<Package>,
    /// The entry points in its package's images, read at its first device call
    /// (`staging.rs`).
    entry_points: OnceLock<[neuroncustomop_wire::job::LibrarySymbols; neuroncustomop_wire::job::CORES]>,
    sessions: Mutex<BTreeMap<SessionKey, Session>>,
    /// A C++ library's shape driver: its shape functions, run on the host
    /// ([`Library::output_of`]).
    shape_driver: Option<PathBuf>,
    /// What the shape driver's `list` said, read once ([`Library::registration`]).
    registration: OnceLock<Result<Registration, String>>,
    /// Its project's declaration that every op runs on all 8 cores
    /// ([`Project::multicore`]).
    multicore: bool,
    /// The project the library was packaged from, if it was ([`Target::Host`] builds it).
    project: Option<Project>,
    /// The host tier's builds of the project (one per sanitizer), made on first use.
    host: Mutex<BTreeMap<Option<Sanitizer>, HostLibrary>>,
}

impl Library {
    /// Loads the library at `path`: a package folder (`ucode_lib.json` and its 8
    /// images) as it is, or a project folder (`ncop new`), built and packaged first.
    ///
    /// # Errors
    /// [`LoadError`]: not a library, or its build or packaging failed.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, LoadError> {
        let path = path.as_ref();
        if path.join("ucode_lib.json").is_file() {
            return Ok(Self::from_package(Package::open(path)?));
        }
        let project = Project::open(path)?.ok_or_else(|| LoadError::NotALibrary(path.into()))?;
        Self::from_project(&project)
    }

    /// Loads the library at `path` for calls on `target`: [`Library::load`] for the
    /// device; for the host tier, a project folder built only for the host (no Xtensa
    /// build: its kernels are those its host build registers), packaged for the device
    /// only if a call asks for the device.
    ///
    /// # Errors
    /// [`LoadError`]: not a library, its build failed, or (the host tier) a package
    /// folder, which has no sources to build for the host.
    pub fn load_for(path: impl AsRef<Path>, target: Target) -> Result<Self, LoadError> {
        let path = path.as_ref();
        if target == Target::Device || path.join("ucode_lib.json").is_file() {
            let library = Self::load(path)?;
            if target == Target::Host {
                return Err(LoadError::Host(neuroncustomop_hosttier::HostError::Unsupported(format!(
                    "{} is a package: the host tier builds from the project's sources (load the project folder)",
                    path.display()
                ))));
            }
            return Ok(library);
        }
        let project = Project::open(path)?.ok_or_else(|| LoadError::NotALibrary(path.into()))?;
        Self::from_project_for_host(&project)
    }

    /// A project built for the host tier only: its kernels from the host build.
    fn from_project_for_host(project: &Project) -> Result<Self, LoadError> {
        let host = neuroncustomop_hosttier::build(project, None).map_err(LoadError::Host)?;
        let kernels = neuroncustomop_hosttier::kernels(&host).map_err(LoadError::Host)?;
        let table = neuroncustomop_package::package::ucode_lib(&project.name, &kernels).map_err(PackageError::from)?;
        let mut library = Self::new(project.name.clone(), table, None, host.shape_driver.clone());
        library.host.get_mut().unwrap_or_else(PoisonError::into_inner).insert(None, host);
        library.with_project(project);
        Ok(library)
    }

    /// Packages `project`; a project declared multicore ([`Project::multicore`]) gets 8
    /// cores as its default.
    fn from_project(project: &Project) -> Result<Self, LoadError> {
        let mut library = Self::from_package(project.package()?);
        library.with_project(project);
        Ok(library)
    }

    /// Remembers the project the library comes from (the host tier builds it), and
    /// whether it is declared multicore ([`Project::multicore`]).
    fn with_project(&mut self, project: &Project) {
        self.project = Some(project.clone());
        self.multicore = project.multicore;
    }

    /// The built-in example `name` built for `target` ([`Library::load_for`]).
    ///
    /// # Errors
    /// As [`Library::example`].
    pub fn example_for(name: &str, target: Target) -> Result<Self, LoadError> {
        let project =
            Project::example(name)?.ok_or_else(|| ProjectError::UnknownExample(name.into(), Project::examples()))?;
        match target {
            Target::Device => Self::from_project(&project),
            Target::Host => Self::from_project_for_host(&project),
        }
    }

    /// The built-in example `name` of this repository (`examples/`), packaged.
    ///
    /// # Errors
    /// [`LoadError`]: an unknown example (naming those there are), or its build's or
    /// packaging's error.
    pub fn example(name: &str) -> Result<Self, LoadError> {
        let project =
            Project::example(name)?.ok_or_else(|| ProjectError::UnknownExample(name.into(), Project::examples()))?;
        Self::from_project(&project)
    }

    /// A library from a package already made; a C++ library's package has its shape
    /// functions ([`Library::output_of`]).
    pub fn from_package(package: Package) -> Self {
        let shape_driver =
            Some(package.dir.join(neuroncustomop_package::package::SHAPE_DRIVER)).filter(|driver| driver.is_file());
        let (name, table) = (package.name().to_owned(), package.ucode_lib.clone());
        Self::new(name, table, Some(package), shape_driver)
    }

    fn new(name: String, table: UcodeLib, package: Option<Package>, shape_driver: Option<PathBuf>) -> Self {
        Self {
            name,
            table,
            package: package.map(OnceLock::from).unwrap_or_default(),
            entry_points: OnceLock::new(),
            sessions: Mutex::new(BTreeMap::new()),
            shape_driver,
            registration: OnceLock::new(),
            multicore: false,
            project: None,
            host: Mutex::new(BTreeMap::new()),
        }
    }

    /// The cores its ops run on unless a call says otherwise: 8 for a library declared
    /// multicore ([`Project::multicore`]: a C++ library's `"multicore": true` in its
    /// `customop.json`, a C library's `multicore = true` in its `neuroncustomop.toml`,
    /// a Rust library's `multicore = true` under `[package.metadata.neuroncustomop]` in
    /// its `Cargo.toml`), else 1.
    pub fn default_cores(&self) -> usize {
        if self.multicore { CORES } else { 1 }
    }

    /// The library's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// What a C++ library's `NEURON_LIBRARY` registers: the namespace its ops take in
    /// `torch.ops`, and each op's argument kinds. `None` for a Rust or C library.
    ///
    /// # Errors
    /// Why the shape driver could not be run or read.
    pub fn registration(&self) -> Option<Result<&Registration, String>> {
        let driver = self.shape_driver.as_deref()?;
        let read = self
            .registration
            .get_or_init(|| neuroncustomop_package::cxx::registration(driver).map_err(|e| describe(&e)));
        Some(read.as_ref().map_err(Clone::clone))
    }

    /// Its kernels, in registration order.
    pub fn kernels(&self) -> Vec<&str> {
        self.table.libraries[0].functions.iter().map(|function| function.name.as_str()).collect()
    }

    /// Its device package; a library loaded for the host tier ([`Library::load_for`])
    /// is packaged now, once.
    ///
    /// # Errors
    /// [`CallError::Packaging`]: the device build or packaging failed.
    pub fn package(&self) -> Result<&Package, CallError> {
        if let Some(package) = self.package.get() {
            return Ok(package);
        }
        let project = self.project.as_ref().expect("a library without a package was loaded from a project");
        let package = project.package().map_err(CallError::Packaging)?;
        Ok(self.package.get_or_init(|| package))
    }
}

impl Library {
    /// The library's and the loader's images, ready to name PCs (`None` if they cannot
    /// be read: a report then shows addresses).
    pub(super) fn symbolizer(&self) -> Option<neuroncustomop_machine::symbolize::Symbolizer> {
        let loader = neuroncustomop_machine::images::build("loader").ok()?;
        let elves: Vec<PathBuf> = self.package.get()?.images.cores.iter().chain(&loader.cores).cloned().collect();
        neuroncustomop_machine::symbolize::Symbolizer::new(&elves).ok()
    }

    /// The FunctionId of `kernel`, or [`CallError::UnknownKernel`] listing the library's.
    pub(crate) fn function_id(&self, kernel: &str) -> Result<neuroncustomop_wire::FunctionId, CallError> {
        let id = self.table.libraries[0].functions.iter().find(|f| f.name == kernel).map(|f| f.sub_opcode);
        id.ok_or_else(|| CallError::UnknownKernel {
            library: self.name().into(),
            kernel: kernel.into(),
            known: self.kernels().iter().map(|k| k.to_string()).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_can_be_shared_between_threads() {
        // Python bindings and test harnesses hold one from several threads.
        fn shared<T: Send + Sync>() {}
        shared::<Library>();
    }
}
