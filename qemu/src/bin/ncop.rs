//! `ncop`: an op author's tool for their own kernel library, wherever it lives.
//!
//! ```text
//! ncop new <dir> [--lang rust|c]     a library with a kernel and a test, ready to build
//! ncop package [<dir>]               build it for the device and package it
//! ncop run <kernel> [options]        package, call one kernel under QEMU, save and check
//!                                    (--host: on the host tier, the same kernels on x86-64)
//! ncop debug <kernel> [options]      call one kernel on the host tier under gdb
//! ```
//!
//! Installed with `cargo install --path <checkout>/qemu --bin ncop`; the tool records
//! the checkout's path when it is built, and builds every project with that
//! checkout's runtime and Xtensa set-up (docs/op-author-guide.md).

use clap::{Parser, Subcommand};
use neuroncustomop_sim::cli::{self, new, package, run};
use std::process::ExitCode;

/// An op author's tool: make a kernel library anywhere, package it, run its kernels
/// on the simulated GPSIMD cores with your own data.
#[derive(Debug, Parser)]
#[command(name = "ncop", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    New(new::NewArgs),
    Package(package::PackageArgs),
    // Boxed: the call's options make it far larger than the other commands' arguments.
    Run(Box<run::RunArgs>),
    Debug(Box<run::DebugArgs>),
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::New(args) => new::exec(args),
        Command::Package(args) => package::exec(args),
        Command::Run(args) => run::exec(*args),
        Command::Debug(args) => run::exec_debug(*args),
    };
    outcome.unwrap_or_else(|error| {
        cli::report("ncop", error.as_ref());
        ExitCode::from(2)
    })
}
