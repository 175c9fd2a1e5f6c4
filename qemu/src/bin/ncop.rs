//! `ncop`: an op author's tool for their own kernel library, wherever it lives.
//!
//! ```text
//! ncop new <dir> [--lang rust|c]     a library with a kernel and a test, ready to build
//! ncop package [<dir>]               build it for the device and package it
//! ncop run <kernel> [options]        package, call one kernel under QEMU, save and check
//!                                    (--host: on the host tier, the same kernels on x86-64)
//! ncop debug <kernel> [options]      call one kernel on the host tier under gdb
//! ncop profile diff <A> <B>          compare two profiles (`ncop run --profile`)
//! ncop calibrate <measured.csv>      fit the device cost model to measured times
//! ncop doctor                        the system's packages it needs: present, versions, install line
//! ncop setup [--rust]                install them (apt-get), only when asked
//! ncop check <kernel> --ref f.py:fn  check it on generated calls against a Python
//!                                    reference; a failure shrinks to its smallest call
//! ```
//!
//! Installed with the wheel (`pip install neuroncustomop-*.whl`, which `cargo sim
//! dist` builds): it finds its data (the runtime's headers and prebuilt archive, the
//! firmware, the QEMU plugin) beside itself, in `<prefix>/share/neuroncustomop`. Run
//! from a checkout (`cargo run --bin ncop`) or with `NEURONCUSTOMOP_HOME=<checkout>`,
//! it builds from that checkout's sources instead (qemu/machine/src/home.rs).

use clap::{Parser, Subcommand};
use neuroncustomop_sim::cli::{self, calibrate, check, doctor, new, package, profile, run, setup};
use std::process::ExitCode;

/// An op author's tool: make a kernel library anywhere, package it, run its kernels
/// on the simulated GPSIMD cores with your own data.
#[derive(Debug, Parser)]
#[command(name = "ncop", version, propagate_version = true, after_help = LIBRARIES_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What `ncop --help` adds: the three kinds of library, C++ having no `new`.
const LIBRARIES_HELP: &str = "\
A library is a folder: `ncop new` makes a Rust one (Cargo.toml, src/, tests/) or a C one
(neuroncustomop.toml with its name, multicore and cflags, src/, tests/);
a C++ library on the AWS torch API is a folder you write with customop.json
({\"compute_srcs\": [\"k.cpp\"], \"shape_srcs\": [\"shape.cpp\"], \"multicore\": true}) beside its sources,
run as `ncop run OP --lib FOLDER --arg ...`, its output's shape from its shape function.
The guide: docs/op-author-guide.md in neuroncustomop's source repository (the wheel does not
hold it): section 3 for C, 8 for C++, 9 for Python and torch.ops.";

#[derive(Debug, Subcommand)]
enum Command {
    New(new::NewArgs),
    Package(package::PackageArgs),
    // Boxed: the call's options make it far larger than the other commands' arguments.
    Run(Box<run::RunArgs>),
    Debug(Box<run::DebugArgs>),
    Profile(profile::ProfileArgs),
    Calibrate(calibrate::CalibrateArgs),
    Doctor(doctor::DoctorArgs),
    Setup(setup::NcopSetupArgs),
    Check(check::CheckArgs),
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::New(args) => new::exec(args),
        Command::Package(args) => package::exec(args),
        Command::Run(args) => run::exec(*args),
        Command::Debug(args) => run::exec_debug(*args),
        Command::Profile(args) => profile::exec(args),
        Command::Calibrate(args) => calibrate::exec(args),
        Command::Doctor(args) => doctor::exec(args),
        Command::Setup(args) => setup::exec_ncop(args),
        Command::Check(args) => check::exec(args),
    };
    outcome.unwrap_or_else(|error| {
        cli::report("ncop", error.as_ref());
        ExitCode::from(2)
    })
}
