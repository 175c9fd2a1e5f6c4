//! `sim setup` and `ncop setup`: install what the simulation needs (the home's
//! qemu/setup.sh; idempotent). Only these commands install system packages.

use clap::Args;
use neuroncustomop_machine::home::Home;
use std::process::{Command, ExitCode};

/// Install the Debian packages the simulation needs, if missing (qemu/setup.sh), then
/// build the host tier's runtime (the first `--host` run then takes seconds).
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
/// tier's runtime, so the first `--host` run takes seconds (its loader, `ncop-hostrun`,
/// is built with the tools).
///
/// # Errors
/// [`SetupError`].
pub fn setup() -> Result<(), SetupError> {
    run_script(false)?;
    neuroncustomop_hosttier::prebuild()?;
    Ok(())
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
