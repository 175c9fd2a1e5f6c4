//! Building images: one per core, core i linked at its own address (see `linker/`).
//!
//! Xtensa builds use Debian's rustc and cargo with `.cargo/xtensa.toml`, in their own
//! target directory (`target/xtensa`), so they never contend with host builds. The
//! per-core link writes the images to a folder the tool names (`linker/link-cores
//! --neuron-image-dir`): `target/images/<name>/core<i>.elf`.

use crate::project::Project;
use crate::toolchain::{self, Toolchain};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Cores of a GPSIMD cluster, and so images per build.
pub const CORES: usize = 8;

/// What to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// An op author's example: the project `examples/<name>/` ([`Project::example`]).
    Example(Project),
    /// A firmware program of the simulation: `qemu/firmware/src/bin/<name>.rs`.
    Firmware(String),
}

impl Program {
    /// Finds `name` among the examples, then among the firmware programs.
    ///
    /// # Errors
    /// An example whose folder cannot be read.
    pub fn find(repo: &Path, name: &str) -> Result<Option<Self>, BuildError> {
        if let Some(project) = Project::example(name).map_err(|e| BuildError::Example(Box::new(e)))? {
            Ok(Some(Self::Example(project)))
        } else if repo.join("qemu/firmware/src/bin").join(format!("{name}.rs")).is_file() {
            Ok(Some(Self::Firmware(name.into())))
        } else {
            Ok(None)
        }
    }

    /// The names of every program: the examples, then the firmware programs.
    pub fn names(repo: &Path) -> Vec<String> {
        let mut firmware: Vec<String> = fs::read_dir(repo.join("qemu/firmware/src/bin"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().to_string_lossy().strip_suffix(".rs").map(str::to_owned))
            .collect();
        firmware.sort();
        Project::examples().into_iter().chain(firmware).collect()
    }
}

/// The images of one program: `cores[i]` is linked for core i (a program linked once,
/// like the DMA engine, has only `cores[0]`).
#[derive(Debug, Clone)]
pub struct Images {
    /// The program's name.
    pub name: String,
    /// One ELF file per core.
    pub cores: Vec<PathBuf>,
}

/// Why a build did not produce images.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The toolchain is incomplete.
    #[error(transparent)]
    Toolchain(toolchain::Missing),
    /// No example or firmware program has that name; the names there are.
    #[error(
        "no program named {} (an example in examples/{}/ or qemu/firmware/src/bin/{}.rs); there are: {}",
        .0, .0, .0, .1.join(", ")
    )]
    UnknownProgram(String, Vec<String>),
    /// An example did not build.
    #[error(transparent)]
    Example(Box<crate::project::ProjectError>),
    /// cargo failed; its diagnostics went to stderr.
    #[error("the Xtensa build failed: {0}")]
    Cargo(String),
    /// Reading or copying the results failed.
    #[error("collecting the images")]
    Io(#[from] io::Error),
}

/// Builds `name` (an example or a firmware program) and returns its images: 8 for a
/// library, one for a program linked once (the DMA engine).
pub fn build(name: &str) -> Result<Images, BuildError> {
    let tools = Toolchain::locate().map_err(BuildError::Toolchain)?;
    let unknown = || BuildError::UnknownProgram(name.into(), Program::names(&tools.repo));
    match Program::find(&tools.repo, name)?.ok_or_else(unknown)? {
        Program::Example(project) => project.build().map_err(|e| BuildError::Example(Box::new(e))),
        Program::Firmware(name) => {
            let out = tools.repo.join("target/images").join(&name);
            // The per-core link writes the images into `out` (linker/link-cores); the
            // argument is this binary's own, so cargo relinks when it changes.
            let status = xtensa_cargo(&tools)
                .args(["rustc", "--release", "--manifest-path"])
                .arg(tools.repo.join("qemu/firmware/Cargo.toml"))
                .args(["--bin", &name, "--", "-C"])
                .arg(format!("link-arg=--neuron-image-dir={}", out.display()))
                .status()
                .map_err(|e| BuildError::Cargo(format!("cannot run {}: {e}", toolchain::CARGO)))?;
            if !status.success() {
                return Err(BuildError::Cargo(format!("cargo exited with {status}")));
            }
            read_dir(&name, &out)
        }
    }
}

/// Debian's cargo, set up for the Xtensa target (see docs/toolchain.md).
pub fn xtensa_cargo(tools: &Toolchain) -> Command {
    let mut cargo = Command::new(toolchain::CARGO);
    cargo
        .current_dir(&tools.repo)
        .env("RUSTC", toolchain::RUSTC)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", tools.repo.join("target/xtensa"))
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTFLAGS")
        .arg("--config")
        .arg(tools.repo.join(".cargo/xtensa.toml"));
    cargo
}

/// The images of `name` the per-core link wrote into `dir` (`linker/link-cores
/// --neuron-image-dir`): `core0.elf`, and `core1.elf` … `core7.elf` for a library.
///
/// # Errors
/// [`BuildError::Cargo`] when `dir` has no `core0.elf`, or a library's set is
/// incomplete.
pub fn read_dir(name: &str, dir: &Path) -> Result<Images, BuildError> {
    let cores: Vec<PathBuf> =
        (0..CORES).map(|core| dir.join(format!("core{core}.elf"))).take_while(|image| image.is_file()).collect();
    if cores.len() != 1 && cores.len() != CORES {
        return Err(BuildError::Cargo(format!(
            "{} holds {} of the images (core0.elf … core{}.elf): build again after `cargo clean`",
            dir.display(),
            cores.len(),
            CORES - 1
        )));
    }
    Ok(Images { name: name.into(), cores })
}
