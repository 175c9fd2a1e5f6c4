//! The commands of the two tools, one module per command (each a clap `Args` type and
//! its `exec`): `ncop` (an op author's, for a library anywhere) and `sim` (this
//! repository's, `cargo sim`), which share `package` and `run`.
//!
//! Every `exec` returns the exit code for a finished command (0, or 1 for a kernel
//! that failed or an output that differed) and an error, with its causes, for input it
//! could not act on (the tools exit with 2).

pub mod build;
pub mod calibrate;
pub mod check;
pub mod dist;
pub mod doctor;
pub mod new;
pub mod package;
pub mod profile;
pub mod run;
pub mod setup;
pub mod test;

/// A command's outcome.
pub type Outcome = Result<std::process::ExitCode, Box<dyn std::error::Error>>;

/// The checkout `cargo sim` works in: the home, which `cargo sim` names explicitly
/// (`NEURONCUSTOMOP_HOME`, set for it by the checkout's `.cargo/config.toml`).
///
/// # Errors
/// When the home is not found or is not a checkout, saying so.
pub fn checkout() -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
    let home = neuroncustomop_machine::home::Home::locate()?;
    match home.checkout() {
        Some(checkout) => Ok(checkout.to_path_buf()),
        None => Err(format!(
            "`cargo sim` works in a source checkout, and the home {} is an installed one: run it in the checkout, \
             whose .cargo/config.toml sets NEURONCUSTOMOP_HOME",
            home.root().display()
        )
        .into()),
    }
}

/// Prints `error` and every cause under it, outermost first, after `tool: `.
pub fn report(tool: &str, error: &dyn std::error::Error) {
    eprintln!("{tool}: {}", neuroncustomop_host::library::describe(error));
}
