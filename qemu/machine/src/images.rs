//! Building images: one per core, core i linked at its own address (see `linker/`).
//!
//! Xtensa builds use Debian's rustc and cargo with `.cargo/xtensa.toml`, in their own
//! target directory (`target/xtensa`), so they never contend with host builds. The
//! per-core link writes the images to a folder the tool names (`linker/link-cores
//! --neuron-image-dir`): `target/images/<name>/core<i>.elf`.

use crate::toolchain::{self, Toolchain};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Cores of a GPSIMD cluster, and so images per build.
pub const CORES: usize = 8;

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
    /// No firmware program has that name; the names there are.
    #[error("no firmware program named {} (qemu/firmware/src/bin/{}.rs); there are: {}", .0, .0, .1.join(", "))]
    UnknownProgram(String, Vec<String>),
    /// cargo failed; its diagnostics went to stderr.
    #[error("the Xtensa build failed: {0}")]
    Cargo(String),
    /// Reading or copying the results failed.
    #[error("collecting the images")]
    Io(#[from] io::Error),
}

/// The names of the firmware programs (`qemu/firmware/src/bin/<name>.rs`), sorted.
pub fn firmware_names(repo: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(repo.join("qemu/firmware/src/bin"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_string_lossy().strip_suffix(".rs").map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Builds the firmware program `name` (`qemu/firmware/src/bin/<name>.rs`: the loader,
/// the DMA engine, the probes the tests boot) and returns its images: 8 for a library,
/// one for a program linked once (the DMA engine). An op author's library is built
/// from its own folder by the package crate, never found here by name.
///
/// # Errors
/// [`BuildError::UnknownProgram`] naming the programs there are, or the build's error.
pub fn build(name: &str) -> Result<Images, BuildError> {
    let tools = Toolchain::locate().map_err(BuildError::Toolchain)?;
    if !tools.repo.join("qemu/firmware/src/bin").join(format!("{name}.rs")).is_file() || name.contains('/') {
        return Err(BuildError::UnknownProgram(name.into(), firmware_names(&tools.repo)));
    }
    let out = tools.repo.join("target/images").join(name);
    // The per-core link writes the images into `out` (linker/link-cores); the
    // argument is this binary's own, so cargo relinks when it changes. Quiet: the
    // firmware is the simulator's own, checked at every device's boot (each library's
    // first call from Python), where "Finished" is noise; its errors still print.
    let status = xtensa_cargo(&tools)
        .args(["rustc", "--quiet", "--release", "--manifest-path"])
        .arg(tools.repo.join("qemu/firmware/Cargo.toml"))
        .args(["--bin", name, "--", "-C"])
        .arg(format!("link-arg=--neuron-image-dir={}", out.display()))
        .status()
        .map_err(|e| BuildError::Cargo(format!("cannot run {}: {e}", toolchain::CARGO)))?;
    if !status.success() {
        return Err(BuildError::Cargo(format!("cargo exited with {status}")));
    }
    read_dir(name, &out)
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
