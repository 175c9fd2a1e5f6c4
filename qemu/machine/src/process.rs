//! Running a tool (a compiler, a linker, cargo) and saying why it failed: the one
//! helper of every crate that builds something, so a failure always names the program
//! and carries its diagnostics.

use std::fmt;
use std::io;
use std::process::{Command, ExitStatus, Output};

/// A tool that could not be started, or that ended with a failure.
#[derive(Debug)]
pub enum Failed {
    /// It could not be started (missing, not executable).
    Spawn {
        /// The program.
        program: String,
        /// Why.
        error: io::Error,
    },
    /// It ran and failed.
    Exit {
        /// The program.
        program: String,
        /// How it ended.
        status: ExitStatus,
        /// What it wrote on stderr, when captured ([`output`]); empty when it went to
        /// the terminal ([`status`]).
        diagnostics: String,
    },
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spawn { program, error } => write!(f, "cannot run {program}: {error}"),
            Self::Exit { program, status, diagnostics } if diagnostics.is_empty() => {
                write!(f, "{program} failed ({status}); its diagnostics are above")
            }
            Self::Exit { program, status, diagnostics } => write!(f, "{program} failed ({status}):\n{diagnostics}"),
        }
    }
}

impl std::error::Error for Failed {}

fn program(command: &Command) -> String {
    command.get_program().to_string_lossy().into_owned()
}

/// Runs `command` with its output captured: its output if it succeeded.
///
/// # Errors
/// [`Failed`], with its stderr when it ran and failed.
pub fn output(command: &mut Command) -> Result<Output, Failed> {
    let output = command.output().map_err(|error| Failed::Spawn { program: program(command), error })?;
    if output.status.success() {
        Ok(output)
    } else {
        let diagnostics = String::from_utf8_lossy(&output.stderr).trim_end().to_string();
        Err(Failed::Exit { program: program(command), status: output.status, diagnostics })
    }
}

/// Runs `command` with its output going where this process's goes.
///
/// # Errors
/// [`Failed`] (its diagnostics went to stderr).
pub fn status(command: &mut Command) -> Result<(), Failed> {
    let status = command.status().map_err(|error| Failed::Spawn { program: program(command), error })?;
    if status.success() {
        Ok(())
    } else {
        Err(Failed::Exit { program: program(command), status, diagnostics: String::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_program_and_carries_its_diagnostics() {
        let failed = output(Command::new("sh").args(["-c", "echo oops >&2; exit 3"])).unwrap_err();
        assert_eq!(failed.to_string(), "sh failed (exit status: 3):\noops");
        let failed = status(Command::new("sh").args(["-c", "exit 4"])).unwrap_err();
        assert_eq!(failed.to_string(), "sh failed (exit status: 4); its diagnostics are above");
        let missing = output(&mut Command::new("/nonexistent/tool")).unwrap_err();
        assert!(missing.to_string().starts_with("cannot run /nonexistent/tool: "), "{missing}");
        assert_eq!(output(Command::new("sh").args(["-c", "echo hi"])).unwrap().stdout, b"hi\n");
    }
}
