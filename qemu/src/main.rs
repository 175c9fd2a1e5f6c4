//! `sim`: the repository's own driver, reached as `cargo sim <command>`; `--help` for
//! each. The commands live in `neuroncustomop_sim::cli`, one module each.
//!
//! ```text
//! cargo sim setup                      install the Debian packages (qemu/setup.sh)
//! cargo sim build <program>            an example's or firmware program's images, target/images/<program>/
//! cargo sim package <example>          build it, write target/package/<example>/ (8 images, ucode_lib.json)
//! cargo sim run <example>              package it and run its own tests (its host reference)
//! cargo sim run <example> <kernel> …   call one kernel with your data (as `ncop run`)
//! cargo sim run <program> …            build a firmware program, boot it; exits with the guest's status
//! cargo sim test                       setup, then every test, the examples' own, then the fuzz targets
//! cargo sim dist                       the wheel an op author installs, target/dist/neuroncustomop-<version>-<tags>.whl
//! ```

use clap::{Parser, Subcommand};
use neuroncustomop_sim::cli::{self, build, dist, package, run, setup, test};
use std::process::ExitCode;

/// The repository's driver: the simulated GPSIMD device, its examples and tests.
#[derive(Debug, Parser)]
#[command(name = "cargo sim", bin_name = "cargo sim")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the `run` arguments' size is not worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    Setup(setup::SetupArgs),
    Build(build::BuildArgs),
    Package(package::ExampleArgs),
    // Boxed: the call's options make it far larger than the other commands' arguments.
    Run(Box<run::SimRunArgs>),
    Test(test::TestArgs),
    Dist(dist::DistArgs),
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::Setup(args) => setup::exec(args),
        Command::Build(args) => build::exec(args),
        Command::Package(args) => package::exec_example(args),
        Command::Run(args) => run::exec_sim(*args),
        Command::Test(args) => test::exec(args),
        Command::Dist(args) => dist::exec(args),
    };
    outcome.unwrap_or_else(|error| {
        cli::report("sim", error.as_ref());
        ExitCode::from(2)
    })
}
