//! `sim`: the project's driver, reached as `cargo sim <command>`.
//!
//! ```text
//! cargo sim setup                      install the Debian packages (qemu/setup.sh)
//! cargo sim build <program>            build its 8 per-core images into target/images/<program>/
//! cargo sim run <program> [options]    build, then boot under QEMU; exits with the guest's status
//!     --cores N                        boot the images of cores 0..N (default 1)
//!     --count-instructions             -icount shift=0,sleep=off (deterministic CCOUNT)
//! cargo sim test                       setup, then every test: host unit tests and QEMU tests
//! ```
//!
//! A program is an example (`examples/<name>.rs`) or a firmware program of the
//! simulation (`qemu/firmware/src/bin/<name>.rs`).

use neuroncustomop_sim::images::{self, CORES};
use neuroncustomop_sim::machine::Boot;
use neuroncustomop_sim::toolchain::repo_root;
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo sim <setup | build <program> | run <program> [--cores N] [--count-instructions] | test>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("setup") => setup(),
        Some("build") => args.get(1).ok_or(USAGE.to_string()).and_then(|name| build(name).map(|_| ExitCode::SUCCESS)),
        Some("run") => run(&args[1..]),
        Some("test") => test(),
        _ => Err(USAGE.to_string()),
    };
    result.unwrap_or_else(|message| {
        eprintln!("sim: {message}");
        ExitCode::from(2)
    })
}

/// Installs what is missing (idempotent).
fn setup() -> Result<ExitCode, String> {
    let script = repo_root().join("qemu/setup.sh");
    let status = Command::new("bash").arg(&script).status().map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if status.success() { Ok(ExitCode::SUCCESS) } else { Err(format!("{} failed ({status})", script.display())) }
}

fn build(name: &str) -> Result<images::Images, String> {
    let built = images::build(name).map_err(|e| e.to_string())?;
    eprintln!("sim: images of {name} in {}", built.cores[0].parent().expect("in a folder").display());
    Ok(built)
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let name = args.first().ok_or(USAGE)?;
    let mut cores = 1;
    let mut count_instructions = false;
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--cores" => {
                cores = rest
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=CORES).contains(n))
                    .ok_or(format!("--cores takes a number from 1 to {CORES}"))?;
            }
            "--count-instructions" => count_instructions = true,
            other => return Err(format!("unknown option {other}; {USAGE}")),
        }
    }
    let built = build(name)?;
    let mut boot = Boot::new(built.cores[..cores].to_vec());
    boot.count_instructions = count_instructions;
    let outcome = boot.run().map_err(|e| format!("cannot run QEMU: {e}"))?;
    print!("{}", outcome.stdout);
    eprint!("{}", outcome.stderr);
    match outcome.code() {
        Some(code) => Ok(ExitCode::from(u8::try_from(code).unwrap_or(255))),
        None => Err(format!("{name} did not finish within {:?}", boot.timeout)),
    }
}

/// Every test: host unit tests of all crates, then the QEMU tests (which build images).
fn test() -> Result<ExitCode, String> {
    setup()?;
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(repo_root())
        .args(["test", "--workspace"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
