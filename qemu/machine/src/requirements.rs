//! The system's packages the tools need, each with how to find it, its version and the
//! Debian package that installs it: what `ncop doctor` lists, and what a build or run
//! checks first so it stops with the install line instead of failing later. Nothing
//! here installs anything: `ncop setup` (the home's `qemu/setup.sh`) does, when asked.

use crate::toolchain::{self, CARGO, LD, Llvm, QEMU, QEMU_FOR_PLUGIN, RUST_SRC, RUSTC};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What needs a requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Every device build and run: C and C++ libraries with an installed home.
    Device,
    /// A Rust library's device build, and every build from a checkout's sources.
    Rust,
    /// The host tier's debugger (`--host --gdb`).
    HostDebugger,
}

/// Where a requirement is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A fixed path (Debian's LLVM 22 and Rust live at fixed paths).
    File(&'static str),
    /// A program on `PATH`.
    OnPath(&'static str),
}

/// One system requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirement {
    /// What it is, as a person names it.
    pub name: &'static str,
    /// Where it is found.
    pub place: Place,
    /// The Debian package that installs it.
    pub package: &'static str,
    /// What needs it.
    pub need: Need,
    /// Whether `<program> --version` says its version (a folder of sources does not).
    pub has_version: bool,
}

/// Every requirement, in the order `ncop doctor` lists them.
pub const REQUIREMENTS: [Requirement; 9] = [
    Requirement {
        name: "QEMU",
        place: Place::OnPath(QEMU),
        package: "qemu-system-misc",
        need: Need::Device,
        has_version: true,
    },
    Requirement {
        name: "clang 22",
        place: Place::File(Llvm::CLANG),
        package: "clang-22",
        need: Need::Device,
        has_version: true,
    },
    Requirement {
        name: "LLVM 22",
        place: Place::File(Llvm::MC),
        package: "llvm-22",
        need: Need::Device,
        has_version: true,
    },
    Requirement {
        name: "the Xtensa linker",
        place: Place::OnPath(LD),
        package: "binutils-xtensa-lx106",
        need: Need::Device,
        has_version: true,
    },
    Requirement {
        name: "g++ (C++ shape functions)",
        place: Place::OnPath("g++"),
        package: "g++",
        need: Need::Device,
        has_version: true,
    },
    Requirement { name: "rustc", place: Place::File(RUSTC), package: "rustc-web", need: Need::Rust, has_version: true },
    Requirement { name: "cargo", place: Place::File(CARGO), package: "cargo-web", need: Need::Rust, has_version: true },
    Requirement {
        name: "Rust's sources",
        place: Place::File(RUST_SRC),
        package: "rust-web-src",
        need: Need::Rust,
        has_version: false,
    },
    Requirement {
        name: "gdb",
        place: Place::OnPath("gdb"),
        package: "gdb",
        need: Need::HostDebugger,
        has_version: true,
    },
];

impl Requirement {
    /// The path it was found at, if it is there.
    pub fn found(&self) -> Option<PathBuf> {
        match self.place {
            Place::File(path) => Path::new(path).exists().then(|| PathBuf::from(path)),
            Place::OnPath(program) => std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths).map(|dir| dir.join(program)).find(|path| path.is_file())
            }),
        }
    }

    /// How it is named in a message: its name and where it is looked for.
    pub fn described(&self) -> String {
        match self.place {
            Place::File(path) => format!("{} ({path})", self.name),
            Place::OnPath(program) => format!("{} ({program} on PATH)", self.name),
        }
    }

    /// The first line `--version` prints, when it says one.
    pub fn version(&self) -> Option<String> {
        let path = self.found().filter(|_| self.has_version)?;
        let output = Command::new(path).arg("--version").output().ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        text.lines().find(|line| !line.trim().is_empty()).map(|line| line.trim().to_owned())
    }
}

/// The requirements `needs` ask for that are missing.
pub fn missing(needs: &[Need]) -> Vec<Requirement> {
    REQUIREMENTS
        .into_iter()
        .filter(|requirement| needs.contains(&requirement.need) && requirement.found().is_none())
        .collect()
}

/// Whether the [`QEMU`] on `PATH` is new enough for the device's plugin: `Err` with
/// what it is instead (see [`toolchain::qemu_for_plugin`]).
pub fn qemu_new_enough() -> Result<(), toolchain::OldQemu> {
    toolchain::qemu_for_plugin()
}

/// The command that installs `packages` on Debian, with the note QEMU needs: Debian 12
/// has QEMU 7.2, and QEMU 10 comes from its backports (`qemu/setup.sh` adds them).
pub fn install_line(packages: &[&str]) -> String {
    let mut line = format!("sudo apt-get install -y {}", packages.join(" "));
    if packages.contains(&"qemu-system-misc") {
        let (major, minor) = QEMU_FOR_PLUGIN;
        line.push_str(&format!(
            "\n  (QEMU {major}.{minor} or newer: on Debian 12, from bookworm-backports: \
             sudo apt-get install -y -t bookworm-backports qemu-system-misc)"
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_install_line_names_the_packages_and_qemus_backports() {
        assert_eq!(install_line(&["clang-22", "gdb"]), "sudo apt-get install -y clang-22 gdb");
        let qemu = install_line(&["qemu-system-misc"]);
        assert!(qemu.starts_with("sudo apt-get install -y qemu-system-misc\n"), "{qemu}");
        assert!(qemu.contains("-t bookworm-backports qemu-system-misc"), "{qemu}");
    }

    #[test]
    fn a_c_library_with_an_installed_home_needs_no_rust() {
        let device: Vec<&str> = REQUIREMENTS.iter().filter(|r| r.need == Need::Device).map(|r| r.package).collect();
        assert!(device.iter().all(|package| !package.contains("rust") && !package.contains("cargo")), "{device:?}");
        assert!(device.contains(&"clang-22") && device.contains(&"qemu-system-misc"));
    }

    #[test]
    fn a_requirement_that_is_not_there_is_missing_and_says_where_it_was_looked_for() {
        let absent = Requirement {
            name: "a program",
            place: Place::File("/nonexistent/neuroncustomop-test"),
            package: "none",
            need: Need::Device,
            has_version: true,
        };
        assert_eq!((absent.found(), absent.version()), (None, None));
        assert_eq!(absent.described(), "a program (/nonexistent/neuroncustomop-test)");
    }
}
