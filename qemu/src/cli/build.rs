//! `sim build`: the images of an example or a firmware program.

use crate::images;
use clap::Args;
use std::process::ExitCode;

/// Build a program's images into target/images/<program>/core<i>.elf: an example
/// (examples/<name>/) or a firmware program (qemu/firmware/src/bin/<name>.rs).
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The example or firmware program.
    pub program: String,
}

pub fn exec(args: BuildArgs) -> super::Outcome {
    let built = images::build(&args.program)?;
    let dir = built.cores[0].parent().expect("in a folder");
    eprintln!("sim: {} image(s) of {} in {}", built.cores.len(), args.program, dir.display());
    Ok(ExitCode::SUCCESS)
}
