//! `sim test`: every test of the repository.

use clap::Args;
use neuroncustomop_machine::toolchain::repo_root;
use std::process::{Command, ExitCode};

/// Set up, then run every test: the host unit tests and QEMU tests of every crate,
/// every example's own tests (examples/<name>/tests/), the Python package's pytest tests,
/// then each fuzz target briefly.
#[derive(Debug, Args)]
pub struct TestArgs {}

/// Runs `test`.
pub fn exec(_: TestArgs) -> super::Outcome {
    super::setup::setup()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // --workspace: the examples are members, so their tests run with the rest.
    let tests = Command::new(cargo).current_dir(repo_root()).args(["test", "--workspace"]).status()?;
    if !tests.success() {
        return Ok(ExitCode::FAILURE);
    }
    // The Python package (qemu/python): built into target/python-venv, then pytest.
    let python = Command::new("bash").arg(repo_root().join("qemu/python/run-tests.sh")).status()?;
    if !python.success() {
        return Ok(ExitCode::FAILURE);
    }
    let fuzzing = Command::new("bash").arg(repo_root().join("qemu/fuzz/run.sh")).status()?;
    Ok(if fuzzing.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
