//! The programs of this checkout by name, for `cargo sim` and the tests: a built-in
//! example (`examples/<name>/`, a [`Project`]) or a firmware program of the simulation
//! (`qemu/firmware/src/bin/<name>.rs`, built by the machine crate's `images::build`).
//! An op author's own project is opened from its folder ([`Project::open`]), never by
//! name.

use crate::package::Package;
use crate::project::{Project, ProjectError};
use neuroncustomop_machine::home::Home;
use neuroncustomop_machine::images::{self, BuildError, Images};

/// What to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// An op author's example: the project `examples/<name>/` ([`Project::example`]).
    Example(Project),
    /// A firmware program of the simulation: `qemu/firmware/src/bin/<name>.rs`.
    Firmware(String),
}

/// Why a program was not built.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// No example or firmware program has that name; the names there are.
    #[error(
        "no program named {} (an example in examples/{}/ or qemu/firmware/src/bin/{}.rs); there are: {}",
        .0, .0, .0, .1.join(", ")
    )]
    Unknown(String, Vec<String>),
    /// An example did not build.
    #[error(transparent)]
    Example(Box<ProjectError>),
    /// A firmware program did not build.
    #[error(transparent)]
    Firmware(BuildError),
}

impl Program {
    /// Finds `name` among the examples, then among the firmware programs.
    ///
    /// # Errors
    /// An example whose folder cannot be read.
    pub fn find(name: &str) -> Result<Option<Self>, ProjectError> {
        if let Some(project) = Project::example(name)? {
            Ok(Some(Self::Example(project)))
        } else if firmware_names().iter().any(|program| program == name) {
            Ok(Some(Self::Firmware(name.into())))
        } else {
            Ok(None)
        }
    }

    /// The names of every program: the examples, then the firmware programs.
    pub fn names() -> Vec<String> {
        Project::examples().into_iter().chain(firmware_names()).collect()
    }
}

/// The firmware programs of the home (none when there is no home: the build then
/// says why).
fn firmware_names() -> Vec<String> {
    Home::locate().map(|home| images::firmware_names(&home)).unwrap_or_default()
}

/// Builds `name` (an example or a firmware program) and returns its images: 8 for a
/// library, one for a program linked once (the DMA engine).
///
/// # Errors
/// [`ProgramError::Unknown`] naming the programs there are, or the build's error.
pub fn build(name: &str) -> Result<Images, ProgramError> {
    match Program::find(name).map_err(|e| ProgramError::Example(Box::new(e)))? {
        Some(Program::Example(project)) => project.build().map_err(|e| ProgramError::Example(Box::new(e))),
        Some(Program::Firmware(name)) => images::build(&name).map_err(ProgramError::Firmware),
        None => Err(ProgramError::Unknown(name.into(), Program::names())),
    }
}

/// Builds the built-in example `name` (`examples/<name>/`), reads its kernels from the
/// images, and writes `target/package/<name>/`.
///
/// # Errors
/// [`ProjectError::UnknownExample`] naming the examples there are, or the build's or
/// packaging's error.
pub fn package(name: &str) -> Result<Package, ProjectError> {
    Project::example(name)?.ok_or_else(|| ProjectError::UnknownExample(name.into(), Project::examples()))?.package()
}
