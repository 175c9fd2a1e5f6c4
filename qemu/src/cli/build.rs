//! `sim build`: the images of an example or a firmware program.

use clap::Args;
use neuroncustomop_package::program;
use std::process::ExitCode;

/// Build a program's images into target/images/<program>/core<i>.elf: an example
/// (examples/<name>/) or a firmware program (qemu/firmware/src/bin/<name>.rs).
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The example or firmware program.
    pub program: String,
}

/// Runs `build`.
pub fn exec(args: BuildArgs) -> super::Outcome {
    let built = program::build(&args.program)?;
    let dir = built.cores[0].parent().expect("in a folder");
    eprintln!("sim: {} image(s) of {} in {}", built.cores.len(), args.program, dir.display());
    Ok(ExitCode::SUCCESS)
}
