//! `sim setup`: install what the simulation needs (qemu/setup.sh; idempotent).

use clap::Args;
use neuroncustomop_machine::home::Home;
use std::process::{Command, ExitCode};

/// Install the Debian packages the simulation needs, if missing (qemu/setup.sh).
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
    let script = Home::locate()?.setup_script();
    let status = Command::new("bash").arg(script).status().map_err(SetupError::Spawn)?;
    if status.success() { Ok(()) } else { Err(SetupError::Failed(status)) }
}
