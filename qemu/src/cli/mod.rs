//! The commands of the two tools, one module per command (each a clap `Args` type and
//! its `exec`): `ncop` (an op author's, for a library anywhere) and `sim` (this
//! repository's, `cargo sim`), which share `package` and `run`.
//!
//! Every `exec` returns the exit code for a finished command (0, or 1 for a kernel
//! that failed or an output that differed) and an error, with its causes, for input it
//! could not act on (the tools exit with 2).

pub mod build;
pub mod calibrate;
pub mod new;
pub mod package;
pub mod profile;
pub mod run;
pub mod setup;
pub mod test;

/// A command's outcome.
pub type Outcome = Result<std::process::ExitCode, Box<dyn std::error::Error>>;

/// Prints `error` and every cause under it, outermost first, after `tool: `.
pub fn report(tool: &str, error: &dyn std::error::Error) {
    eprintln!("{tool}: {}", neuroncustomop_host::library::describe(error));
}
