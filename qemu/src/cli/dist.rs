//! `sim dist`: the wheel an op author installs, `target/dist/neuroncustomop-<version>-<tags>.whl`.
//!
//! maturin builds the Python package and its extension (qemu/python); then the wheel
//! gets its data (`stage_home`): `ncop` as a script (on `PATH` once installed), and the
//! tools' installed home, `share/neuroncustomop/` under the installation's prefix
//! (qemu/machine/src/home.rs): the runtime's headers, its per-core linker driver and
//! target specification, the Xtensa cargo settings, and prebuilt, the runtime's
//! `libneuroncustomop.a` with its linker scripts, the firmware (loader, DMA engine) and
//! the QEMU plugin, and the host tier's (`prebuilt/host/`: its loader `ncop-hostrun`, the
//! runtime built for x86-64 without a sanitizer and for AddressSanitizer and
//! ThreadSanitizer, and the C source every C and C++ host build links), so C and C++
//! authors run `--host` with no Rust toolchain. With it installed, nothing refers to
//! this checkout.

use clap::Args;
use neuroncustomop_machine::home::{INSTALLED_DIR, SOURCE_ROOT_FILE, VERSION_FILE};
use neuroncustomop_machine::images;
use neuroncustomop_machine::plugin;
use neuroncustomop_machine::toolchain::{Llvm, Toolchain};
use neuroncustomop_package::package;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The firmware programs an installed home holds: what the tools boot.
pub const FIRMWARE: [&str; 2] = ["loader", "dma_engine"];

/// The wheel's size goal (docs/op-author-guide.md: what the wheel holds).
pub const SIZE_GOAL: u64 = 60 << 20;

/// Build the wheel an op author installs (`pip install target/dist/neuroncustomop-*.whl`):
/// the Python package, `ncop`, the prebuilt device runtime and its headers, the
/// firmware and the QEMU plugin, and the host tier's loader and runtime. Needs maturin
/// (installed into target/dist/venv).
#[derive(Debug, Args)]
pub struct DistArgs {}

/// Runs `dist`.
pub fn exec(_: DistArgs) -> super::Outcome {
    let checkout = super::checkout()?;
    let python_version = python_crate_version(&checkout)?;
    if python_version != neuroncustomop::VERSION {
        return Err(format!(
            "qemu/python/Cargo.toml says version {python_version} and the workspace {}: make them agree",
            neuroncustomop::VERSION
        )
        .into());
    }
    let dist = checkout.join("target/dist");
    let stage = dist.join("stage");
    if stage.exists() {
        fs::remove_dir_all(&stage)?;
    }
    let home = stage.join("data").join(INSTALLED_DIR);
    eprintln!("sim dist: ncop, the runtime, the firmware, the plugin and the host tier (release builds)");
    let release = build_programs(&checkout)?;
    let scripts = stage.join("scripts");
    fs::create_dir_all(&scripts)?;
    strip_into(&release.join("ncop"), &scripts.join("ncop"))?;
    stage_home(&checkout, &home)?;
    let loader = neuroncustomop_hosttier::installed_loader(&home.join("prebuilt"));
    strip_into(&release.join(neuroncustomop_hosttier::LOADER_FILE), &loader)?;
    eprintln!("sim dist: the Python package (maturin)");
    let built = maturin_wheel(&checkout, &dist)?;
    let wheel = dist.join(built.file_name().ok_or("maturin named no wheel")?);
    let status = Command::new(dist_python(&dist))
        .arg(checkout.join("qemu/python/wheel_data.py"))
        .arg(&built)
        .arg(&stage)
        .arg(&wheel)
        .status()?;
    if !status.success() {
        return Err(format!("adding the data to the wheel failed ({status})").into());
    }
    let size = fs::metadata(&wheel)?.len();
    println!("{} ({:.1} MB)", wheel.display(), size as f64 / 1e6);
    if size > SIZE_GOAL {
        eprintln!("sim dist: warning: the wheel is larger than its goal of {} MB", SIZE_GOAL >> 20);
    }
    Ok(ExitCode::SUCCESS)
}

/// The version qemu/python/Cargo.toml gives the Python package (and so its wheel).
fn python_crate_version(checkout: &Path) -> Result<String, Box<dyn std::error::Error>> {
    let manifest = checkout.join("qemu/python/Cargo.toml");
    let text = fs::read_to_string(&manifest)?;
    text.lines()
        .find_map(|line| line.strip_prefix("version = \"")?.strip_suffix('"').map(str::to_owned))
        .ok_or_else(|| format!("{} has no version line", manifest.display()).into())
}

/// `ncop` and the host tier's loader, built in the release profile in the checkout's
/// `target/release`, which is returned.
fn build_programs(checkout: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(checkout)
        .args(["build", "--quiet", "--release", "-p", "neuroncustomop-sim", "--bin", "ncop", "--bin"])
        .arg(neuroncustomop_hosttier::LOADER_FILE)
        .status()?;
    if !status.success() {
        return Err(format!("building ncop and {} failed ({status})", neuroncustomop_hosttier::LOADER_FILE).into());
    }
    Ok(checkout.join("target/release"))
}

/// Copies `program` to `to` without its debug information (the wheel's size), with
/// LLVM 22's `llvm-strip`.
fn strip_into(program: &Path, to: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let strip = Path::new(Llvm::BIN).join("llvm-strip");
    let status = Command::new(&strip).arg("--strip-debug").arg(program).arg("-o").arg(to).status()?;
    if !status.success() {
        return Err(format!("{} failed ({status})", strip.display()).into());
    }
    Ok(())
}

/// Writes the installed home into `home`: the files a checkout and an installed home
/// share, at the same paths, and the prebuilt ones under `prebuilt/`.
fn stage_home(checkout: &Path, home: &Path) -> Result<(), Box<dyn std::error::Error>> {
    for shared in ["runtime/include", "linker/link-cores", ".cargo/xtensa-gpsimd-none-elf.json", ".cargo/xtensa.toml"]
        .into_iter()
        .chain([".cargo/llvm-190204", "qemu/setup.sh"])
    {
        copy_tree(&checkout.join(shared), &home.join(shared))?;
    }
    fs::write(home.join(VERSION_FILE), format!("{}\n", neuroncustomop::VERSION))?;
    let prebuilt = home.join("prebuilt");
    let tools = Toolchain::locate()?;
    // The runtime's debug information names its sources here: reports show them as
    // the runtime's (qemu/machine/src/symbolize.rs).
    fs::create_dir_all(&prebuilt)?;
    fs::write(prebuilt.join(SOURCE_ROOT_FILE), format!("{}\n", checkout.display()))?;
    package::stage_runtime(&tools, &prebuilt.join("lib"))?;
    for name in FIRMWARE {
        let built = images::build(name)?;
        let dir = prebuilt.join("firmware").join(name);
        for image in &built.cores {
            copy_tree(image, &dir.join(image.file_name().expect("an image file")))?;
        }
    }
    let plugin = plugin::library()?;
    copy_tree(&plugin, &prebuilt.join("plugin").join(plugin::LIBRARY_FILE))?;
    neuroncustomop_hosttier::stage_installed(checkout, home, &neuroncustomop_hosttier::INSTALLED_SANITIZERS)?;
    Ok(())
}

/// Copies a file, or a folder with everything in it, keeping files' permissions.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if from.is_dir() {
        for entry in fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        fs::create_dir_all(to.parent().expect("a file is in a folder"))?;
        fs::copy(from, to).map(drop)
    }
}

/// The Python with maturin that builds the wheel: target/dist/venv's, made once.
fn dist_python(dist: &Path) -> PathBuf {
    dist.join("venv/bin/python")
}

/// Builds the Python package's wheel with maturin into `dist/wheels/`, and returns it.
fn maturin_wheel(checkout: &Path, dist: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let python = dist_python(dist);
    if !python.is_file() {
        let made = Command::new("python3").arg("-m").arg("venv").arg(dist.join("venv")).status()?;
        let maturin = Command::new(&python).args(["-m", "pip", "install", "--quiet", "maturin>=1.5,<2"]).status()?;
        if !made.success() || !maturin.success() {
            return Err("making target/dist/venv with maturin failed".into());
        }
    }
    let wheels = dist.join("wheels");
    if wheels.exists() {
        fs::remove_dir_all(&wheels)?;
    }
    let status = Command::new(&python)
        .args(["-m", "maturin", "build", "--quiet", "--release", "--compatibility", "linux", "--out"])
        .arg(&wheels)
        .arg("--manifest-path")
        .arg(checkout.join("qemu/python/Cargo.toml"))
        // The Rust build the Python tests' install shares (qemu/python/run-tests.sh).
        .env("CARGO_TARGET_DIR", checkout.join("target/python"))
        .status()?;
    if !status.success() {
        return Err(format!("maturin failed ({status})").into());
    }
    let mut built = fs::read_dir(&wheels)?.filter_map(Result::ok).map(|entry| entry.path());
    built.find(|path| path.extension().is_some_and(|ext| ext == "whl")).ok_or_else(|| "maturin wrote no wheel".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// qemu/python is a workspace of its own, so its Cargo.toml repeats the version
    /// (maturin gives it to the wheel and `neuroncustomop.__version__`): this keeps the
    /// repetition from drifting in the normal test run, not only at `sim dist`.
    #[test]
    fn the_python_crate_has_the_workspace_version() {
        let checkout = super::super::checkout().expect("the tests run with the checkout as the home");
        assert_eq!(python_crate_version(&checkout).unwrap(), neuroncustomop::VERSION);
    }
}
