//! `sim setup`: install what the simulation needs (qemu/setup.sh; idempotent).

use clap::Args;
use neuroncustomop_machine::toolchain::repo_root;
use std::process::{Command, ExitCode};

/// Install the Debian packages the simulation needs, if missing (qemu/setup.sh).
#[derive(Debug, Args)]
pub struct SetupArgs {}

/// `qemu/setup.sh` failed or could not run.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The script could not be started.
    #[error("cannot run qemu/setup.sh")]
    Spawn(#[source] std::io::Error),
    /// The script failed.
    #[error("qemu/setup.sh failed ({0})")]
    Failed(std::process::ExitStatus),
}

/// Runs `setup`.
pub fn exec(_: SetupArgs) -> super::Outcome {
    setup()?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `qemu/setup.sh`.
///
/// # Errors
/// [`SetupError`].
pub fn setup() -> Result<(), SetupError> {
    let status = Command::new("bash").arg(repo_root().join("qemu/setup.sh")).status().map_err(SetupError::Spawn)?;
    if status.success() { Ok(()) } else { Err(SetupError::Failed(status)) }
}
