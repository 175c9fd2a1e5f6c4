//! `ncop doctor`: the system's packages the tools need, which are present with their
//! versions, and the install line for what is missing; and where the tools' data is.
//! The first `ncop run` checks the same ([`check`]) and stops with it.

use clap::Args;
use neuroncustomop_machine::home::{Home, Layout};
use neuroncustomop_machine::toolchain::{self, Need, REQUIREMENTS, Requirement};
use std::process::ExitCode;

/// List the system's packages the tools need (QEMU 10.0 or newer, clang 22, LLVM 22,
/// the Xtensa linker, g++; rustc and cargo for Rust libraries; gdb for the host tier's
/// debugger), which are present and their versions, and the line that installs what
/// is missing. Installs nothing: `ncop setup` does, when asked.
#[derive(Debug, Args)]
pub struct DoctorArgs {}

/// Runs `doctor`: exit 0 when a C or C++ library can be built and run, else 1.
pub fn exec(_: DoctorArgs) -> super::Outcome {
    println!("neuroncustomop {}", neuroncustomop::VERSION);
    match Home::locate() {
        Ok(home) => {
            let kind = match home.layout() {
                Layout::Installed => "installed",
                Layout::Checkout => "a source checkout, named by NEURONCUSTOMOP_HOME",
            };
            println!("data        {} ({kind})", home.root().display());
        }
        Err(no_home) => println!("data        MISSING: {no_home}"),
    }
    let label = |requirement: &Requirement| {
        let needed_for = match requirement.need {
            Need::Device => "",
            Need::Rust => " [Rust libraries]",
            Need::HostDebugger => " [the host tier's --gdb]",
        };
        format!("{}{needed_for}", requirement.described())
    };
    // One column for the states, two spaces past the longest label.
    let width = REQUIREMENTS.iter().map(|requirement| label(requirement).chars().count()).max().unwrap_or(0) + 2;
    let mut missing = Vec::new();
    for requirement in REQUIREMENTS {
        let state = match (requirement.found(), requirement.version()) {
            (None, _) => {
                missing.push(requirement);
                "MISSING".to_owned()
            }
            (Some(_), Some(version)) => format!("ok  {version}"),
            (Some(path), None) => format!("ok  {}", path.display()),
        };
        println!("{:<width$}{state}", label(&requirement));
    }
    let old_qemu = REQUIREMENTS[0].found().and_then(|_| toolchain::qemu_new_enough().err());
    if let Some(old) = &old_qemu {
        println!("QEMU is too old: {old}");
    }
    let device_ready = Home::locate().is_ok()
        && old_qemu.is_none()
        && missing.iter().all(|requirement| requirement.need != Need::Device);
    if !missing.is_empty() || old_qemu.is_some() {
        let mut packages: Vec<&str> = missing.iter().map(|requirement| requirement.package).collect();
        if old_qemu.is_some() {
            packages.push("qemu-system-misc");
        }
        println!(
            "\ninstall what is missing:\n  {}\nor run `ncop setup` (C and C++; `--rust` adds Rust)",
            toolchain::install_line(&packages)
        );
    }
    println!(
        "\n{}",
        if device_ready { "ready: C and C++ libraries build and run" } else { "not ready to build and run a library" }
    );
    Ok(if device_ready { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What a run needs before it starts: the data folder, a device build's packages and a
/// QEMU new enough for the plugin. An error says all that is missing and the install
/// line, as `ncop doctor` does.
///
/// # Errors
/// What is missing, in words.
pub fn check() -> Result<(), Box<dyn std::error::Error>> {
    let home = Home::locate()?;
    let mut needs = vec![Need::Device];
    if home.layout() == Layout::Checkout {
        needs.push(Need::Rust);
    }
    let mut packages: Vec<&str> = toolchain::missing(&needs).iter().map(|requirement| requirement.package).collect();
    let qemu = toolchain::qemu_new_enough();
    if qemu.is_err() && !packages.contains(&"qemu-system-misc") {
        packages.push("qemu-system-misc");
    }
    if packages.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = toolchain::missing(&needs).iter().map(|requirement| requirement.described()).collect();
    let old = qemu.err().map(|old| format!("; {old}")).unwrap_or_default();
    Err(format!(
        "this machine lacks what the simulated device needs: {}{old}. Install with:\n  {}\nor run `ncop setup`; `ncop \
         doctor` lists every requirement",
        if named.is_empty() { "nothing but a newer QEMU".to_owned() } else { named.join(", ") },
        toolchain::install_line(&packages)
    )
    .into())
}
