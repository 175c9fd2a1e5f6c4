//! Building images: one per core, core i linked at its own address (see `linker/`).
//!
//! Xtensa builds use Debian's rustc and cargo with `.cargo/xtensa.toml`, in their own
//! target directory (`target/xtensa`), so they never contend with host builds. The
//! results are copied to a predictable place: `target/images/<name>/core<i>.elf`.

use crate::toolchain::{self, Toolchain};
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Cores of a GPSIMD cluster, and so images per build.
pub const CORES: usize = 8;

/// What to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// An op author's example: `examples/<name>.rs` of the runtime crate.
    Example(String),
    /// A firmware program of the simulation: `qemu/firmware/src/bin/<name>.rs`.
    Firmware(String),
}

impl Program {
    /// Finds `name` among the examples, then among the firmware programs.
    pub fn find(repo: &Path, name: &str) -> Option<Self> {
        if repo.join("examples").join(format!("{name}.rs")).is_file() {
            Some(Self::Example(name.into()))
        } else if repo.join("qemu/firmware/src/bin").join(format!("{name}.rs")).is_file() {
            Some(Self::Firmware(name.into()))
        } else {
            None
        }
    }

    /// The program's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Example(name) | Self::Firmware(name) => name,
        }
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
#[derive(Debug)]
pub enum BuildError {
    /// The toolchain is incomplete.
    Toolchain(toolchain::Missing),
    /// No example or firmware program has that name.
    UnknownProgram(String),
    /// cargo failed; its diagnostics went to stderr.
    Cargo(String),
    /// Reading or copying the results failed.
    Io(io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Toolchain(missing) => missing.fmt(f),
            Self::UnknownProgram(name) => write!(
                f,
                "no program named {name}: expected examples/{name}.rs or qemu/firmware/src/bin/{name}.rs"
            ),
            Self::Cargo(what) => write!(f, "the Xtensa build failed: {what}"),
            Self::Io(e) => write!(f, "collecting the images failed: {e}"),
        }
    }
}

impl std::error::Error for BuildError {}

impl From<io::Error> for BuildError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Builds `name` (an example or a firmware program) and returns its 8 images.
pub fn build(name: &str) -> Result<Images, BuildError> {
    let tools = Toolchain::locate().map_err(BuildError::Toolchain)?;
    let program = Program::find(&tools.repo, name).ok_or_else(|| BuildError::UnknownProgram(name.into()))?;
    // Examples need the runtime's `device` feature (host test runs skip them).
    let (manifest, selector) = match &program {
        Program::Example(name) => ("Cargo.toml", vec!["--features", "device", "--example", name]),
        Program::Firmware(name) => ("qemu/firmware/Cargo.toml", vec!["--bin", name]),
    };
    let status = xtensa_cargo(&tools)
        .args(["build", "--release", "--manifest-path"])
        .arg(tools.repo.join(manifest))
        .args(selector)
        .status()
        .map_err(|e| BuildError::Cargo(format!("cannot run {}: {e}", toolchain::CARGO)))?;
    if !status.success() {
        return Err(BuildError::Cargo(format!("cargo exited with {status}")));
    }
    collect(&tools, &program)
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

/// Copies the images of `program` to `target/images/<name>/core<i>.elf`.
///
/// cargo publishes core 0's image; `linker/link-cores` wrote the others beside the
/// file cargo linked in `deps/`, which is the one with the same inode.
fn collect(tools: &Toolchain, program: &Program) -> Result<Images, BuildError> {
    let release = tools.repo.join("target/xtensa/xtensa-gpsimd-none-elf/release");
    let published = match program {
        Program::Example(name) => release.join("examples").join(name),
        Program::Firmware(name) => release.join(name),
    };
    let inode = fs::metadata(&published)?.ino();
    let deps = published.parent().expect("published in a folder").join(match program {
        Program::Example(_) => "",
        Program::Firmware(_) => "deps",
    });
    let linked = fs::read_dir(&deps)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path != &published && fs::metadata(path).is_ok_and(|m| m.ino() == inode))
        .ok_or_else(|| BuildError::Cargo(format!("no linked file behind {}", published.display())))?;
    let out = tools.repo.join("target/images").join(program.name());
    fs::create_dir_all(&out)?;
    let mut cores = Vec::with_capacity(CORES);
    for core in 0..CORES {
        let source = if core == 0 { linked.clone() } else { with_suffix(&linked, &format!(".core{core}")) };
        if core > 0 && !source.exists() {
            break; // a one-image program (linked without a per-core script)
        }
        let image = out.join(format!("core{core}.elf"));
        // Copy, then rename: a concurrent reader of the image sees a whole file.
        let partial = out.join(format!("core{core}.elf.{:?}.partial", std::thread::current().id()));
        fs::copy(&source, &partial)?;
        fs::rename(&partial, &image)?;
        cores.push(image);
    }
    Ok(Images { name: program.name().into(), cores })
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

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}
