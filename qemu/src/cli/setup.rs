//! `sim setup` and `ncop setup`: install what the simulation needs (the home's
//! qemu/setup.sh; idempotent). Only these commands install system packages.

use clap::Args;
use neuroncustomop_hosttier::LOADER_FILE;
use neuroncustomop_machine::home::Home;
use neuroncustomop_machine::toolchain::Toolchain;
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Install the Debian packages the simulation needs, if missing (qemu/setup.sh), then
/// build the host tier's runtime and loader (the first `--host` run then takes seconds).
#[derive(Debug, Args)]
pub struct SetupArgs {}

/// `qemu/setup.sh` failed or could not run.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// No home holds the script.
    #[error(transparent)]
    NoHome(#[from] neuroncustomop_machine::home::NoHome),
    /// The script could not be started.
    #[error("cannot run qemu/setup.sh")]
    Spawn(#[source] std::io::Error),
    /// The script failed.
    #[error("qemu/setup.sh failed ({0})")]
    Failed(std::process::ExitStatus),
    /// The host tier's runtime did not build.
    #[error(transparent)]
    HostTier(#[from] neuroncustomop_hosttier::HostError),
    /// The host tier's loader did not build.
    #[error("building the host tier's loader, {LOADER_FILE}: {0}")]
    Loader(#[source] neuroncustomop_machine::process::Failed),
    /// The device's runtime did not build (cargo's diagnostics went to stderr).
    #[error("building the device's runtime: {0}")]
    Device(String),
    /// A runtime's build thread panicked (its message went to stderr).
    #[error("the {0} runtime's build thread panicked")]
    Panicked(&'static str),
}

/// Install, with apt-get (through sudo when not root), the Debian packages C and C++
/// libraries need with the installed wheel: QEMU 10 (from bookworm-backports on
/// Debian 12), clang 22, LLVM 22, the Xtensa linker, g++, gdb. `ncop doctor` lists them.
#[derive(Debug, Args)]
pub struct NcopSetupArgs {
    /// Also Rust's (rustc, cargo, Rust's sources), for Rust libraries.
    #[arg(long)]
    pub rust: bool,
}

/// Runs `sim setup`.
pub fn exec(_: SetupArgs) -> super::Outcome {
    setup()?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `ncop setup`.
pub fn exec_ncop(args: NcopSetupArgs) -> super::Outcome {
    run_script(!args.rust)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `qemu/setup.sh`: everything a checkout's build needs; then builds the host
/// tier's runtime and its loader, so the first `--host` run takes seconds, from `ncop`,
/// the tests and the Python package alike, and beside them the device's runtime, so
/// the first library's build does not wait for it.
///
/// # Errors
/// [`SetupError`].
pub fn setup() -> Result<(), SetupError> {
    install_packages()?;
    let runtimes = Runtimes::start();
    let loader = build_loader();
    runtimes.wait().map(drop).and(loader)
}

/// Runs `qemu/setup.sh`: the Debian packages a checkout's build needs, when missing.
///
/// # Errors
/// [`SetupError`].
pub fn install_packages() -> Result<(), SetupError> {
    run_script(false)
}

/// The runtimes a first run would otherwise build, building in threads of their own:
/// the device's and the host tier's. Whatever the caller builds meanwhile (the loader,
/// the tests) goes beside them: the device's compiles its `core` on one core for most
/// of two minutes (cold), and the host tier's are small.
pub struct Runtimes {
    device: std::thread::JoinHandle<Result<Instant, SetupError>>,
    host: std::thread::JoinHandle<Result<Instant, SetupError>>,
    started: Instant,
}

impl Runtimes {
    /// Starts both builds.
    pub fn start() -> Self {
        let started = Instant::now();
        let device = std::thread::spawn(|| {
            let tools = Toolchain::locate().map_err(|e| SetupError::Device(e.to_string()))?;
            neuroncustomop_package::package::prebuild_runtime(&tools).map_err(|e| SetupError::Device(e.to_string()))?;
            Ok(Instant::now())
        });
        let host = std::thread::spawn(|| {
            neuroncustomop_hosttier::prebuild()?;
            Ok(Instant::now())
        });
        Runtimes { device, host, started }
    }

    /// Waits for both builds: the seconds from their start to the end of the later one,
    /// or the first error.
    ///
    /// # Errors
    /// [`SetupError::Device`], [`SetupError::HostTier`] or [`SetupError::Panicked`].
    pub fn wait(self) -> Result<f64, SetupError> {
        let device = self.device.join().unwrap_or(Err(SetupError::Panicked("device")));
        let host = self.host.join().unwrap_or(Err(SetupError::Panicked("host tier")));
        Ok(device?.max(host?).duration_since(self.started).as_secs_f64())
    }
}

/// Builds the host tier's loader, `ncop-hostrun`, beside this program: with the cargo
/// that runs it (`cargo sim`, in the release profile) and so with its compiler, its
/// features and its target folder, where every crate the loader links is already
/// built for `sim` (a few seconds; nothing to do when it is up to date). A program of
/// another package (the Python extension) finds it there
/// (`neuroncustomop_hosttier::loader_program`).
fn build_loader() -> Result<(), SetupError> {
    let checkout = Home::locate()?.checkout().map(std::path::Path::to_path_buf);
    let Some(checkout) = checkout else { return Ok(()) };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    neuroncustomop_machine::process::status(Command::new(cargo).current_dir(checkout).args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "neuroncustomop-sim",
        "--bin",
        LOADER_FILE,
    ]))
    .map_err(SetupError::Loader)
}

/// Runs the home's `qemu/setup.sh`, `--without-rust` when asked.
fn run_script(without_rust: bool) -> Result<(), SetupError> {
    let script = Home::locate()?.setup_script();
    let mut command = Command::new("bash");
    command.arg(script);
    if without_rust {
        command.arg("--without-rust");
    }
    let status = command.status().map_err(SetupError::Spawn)?;
    if status.success() { Ok(()) } else { Err(SetupError::Failed(status)) }
}
