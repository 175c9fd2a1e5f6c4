//! Building images: one per core, core i linked at its own address (see `linker/`).
//!
//! Xtensa builds use Debian's rustc and cargo with the home's `.cargo/xtensa.toml`, in
//! a target directory of their own ([`xtensa_target_dir`]: a checkout's
//! `target/xtensa`, else in the per-machine cache), so they never contend with host
//! builds and every project built with one home shares one build of `core` and
//! `alloc`. The per-core link writes the images to a folder the tool names
//! (`linker/link-cores --neuron-image-dir`): a checkout's firmware to its
//! `target/images/<name>/core<i>.elf`. An installed home has the firmware prebuilt.

use crate::home::{self, Home};
use crate::lock::Lock;
use crate::process;
use crate::toolchain::{self, Toolchain};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

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

/// The names of the firmware programs, sorted: a checkout's sources
/// (`qemu/firmware/src/bin/<name>.rs`), or an installed home's prebuilt images
/// (`prebuilt/firmware/<name>/`).
pub fn firmware_names(home: &Home) -> Vec<String> {
    let (dir, suffix) = match home.prebuilt() {
        Some(prebuilt) => (prebuilt.join("firmware"), ""),
        None => (home.root().join("qemu/firmware/src/bin"), ".rs"),
    };
    let mut names: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_string_lossy().strip_suffix(suffix).map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Builds the firmware program `name` (`qemu/firmware/src/bin/<name>.rs`: the loader,
/// the DMA engine, the probes the tests boot) and returns its images: 8 for a library,
/// one for a program linked once (the DMA engine). An installed home's are prebuilt.
/// An op author's library is built from its own folder by the package crate, never
/// found here by name.
///
/// # Errors
/// [`BuildError::UnknownProgram`] naming the programs there are, or the build's error.
pub fn build(name: &str) -> Result<Images, BuildError> {
    let tools = Toolchain::locate().map_err(BuildError::Toolchain)?;
    let names = firmware_names(&tools.home);
    if name.contains('/') || !names.iter().any(|known| known == name) {
        return Err(BuildError::UnknownProgram(name.into(), names));
    }
    let Some(checkout) = tools.home.checkout() else {
        let prebuilt = tools.home.prebuilt().expect("a home that is not a checkout is installed");
        return read_dir(name, &prebuilt.join("firmware").join(name));
    };
    let out = checkout.join("target/images").join(name);
    let _building = build_lock(&tools.home)?;
    // The per-core link writes the images into `out` (linker/link-cores); the
    // argument is this binary's own, so cargo relinks when it changes. Quiet: the
    // firmware is the simulator's own, checked at every device's boot (each library's
    // first call from Python), where "Finished" is noise; its errors still print.
    process::status(
        xtensa_cargo(&tools)
            .args(["rustc", "--quiet", "--release", "--manifest-path"])
            .arg(checkout.join("qemu/firmware/Cargo.toml"))
            .args(["--bin", name, "--", "-C"])
            .arg(format!("link-arg=--neuron-image-dir={}", out.display())),
    )
    .map_err(|failed| BuildError::Cargo(failed.to_string()))?;
    read_dir(name, &out)
}

/// Debian's cargo, set up for the Xtensa target (see docs/toolchain.md), building in
/// [`xtensa_target_dir`].
pub fn xtensa_cargo(tools: &Toolchain) -> Command {
    let mut cargo = Command::new(toolchain::CARGO);
    cargo
        .current_dir(tools.home.root())
        .env("RUSTC", toolchain::RUSTC)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", xtensa_target_dir(&tools.home))
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTFLAGS")
        .arg("--config")
        .arg(tools.home.cargo_config());
    cargo
}

/// The target directory of the device builds made with `home`'s Xtensa settings. A
/// checkout's is its own `target/xtensa/`: its firmware and runtime are its own build,
/// and two checkouts' settings differ in their paths, so in one folder each would
/// build `core` again over the other's. An installed home's is one folder per
/// toolchain and home in the per-machine cache ([`home::cache_dir`]):
/// `xtensa-<rustc's version>-<the home's key>/`. Every project built with one home
/// shares its `core` and `alloc` (`-Zbuild-std`).
pub fn xtensa_target_dir(home: &Home) -> PathBuf {
    if let Some(checkout) = home.checkout() {
        return checkout.join("target/xtensa");
    }
    static VERSION: OnceLock<String> = OnceLock::new();
    let version = VERSION.get_or_init(|| {
        let output = Command::new(toolchain::RUSTC).arg("--version").output();
        // `rustc 1.85.0 (4d91de4e4 2025-02-17) (built from a source tarball)`: the version.
        let text = output.map(|output| String::from_utf8_lossy(&output.stdout).into_owned()).unwrap_or_default();
        text.split_whitespace().nth(1).unwrap_or("unknown").to_owned()
    });
    // A stable key of the home's path (FNV-1a): the same folder every run.
    let key = home
        .root()
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
    home::cache_dir().join(format!("xtensa-{version}-{key:016x}"))
}

/// The lock of `home`'s device builds' target folder ([`xtensa_target_dir`]), taken
/// exclusively by every build there, so that no build replaces the runtime's archive
/// while a C or C++ link that holds it shared ([`build_lock_shared`]) reads it.
/// (Cargo's own lock of the folder keeps builds apart, but not a link outside cargo.)
///
/// # Errors
/// The lock file cannot be made or locked.
pub fn build_lock(home: &Home) -> io::Result<Lock> {
    Lock::exclusive(&xtensa_target_dir(home).join("neuroncustomop-build.lock"))
}

/// `home`'s device builds' lock ([`build_lock`]), shared: held while a link reads what a
/// build there made.
///
/// # Errors
/// The lock file cannot be made or locked.
pub fn build_lock_shared(home: &Home) -> io::Result<Lock> {
    Lock::shared(&xtensa_target_dir(home).join("neuroncustomop-build.lock"))
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
