//! Where the Xtensa toolchain lives, and a clear message when part of it is missing.
//!
//! The system's packages the tools need ([`REQUIREMENTS`]), each with how to find it,
//! its version and the Debian package that installs it: what `ncop doctor` lists, and
//! what a build or run checks first so it stops with the install line instead of
//! failing later. Nothing here installs anything: `ncop setup` (the home's
//! `qemu/setup.sh`) does, when asked.

use crate::home::{Home, Layout, NoHome};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian's packages, installed by `qemu/setup.sh` (see docs/toolchain.md).
pub const RUSTC: &str = "/usr/bin/rustc";
/// Debian's cargo, matching [`RUSTC`].
pub const CARGO: &str = "/usr/bin/cargo";
/// The standard library source `-Zbuild-std` compiles.
pub const RUST_SRC: &str = "/usr/lib/rustlib/src/rust/library/core";
// `llvm_22!`: a program of LLVM 22's `bin` folder, as a `&'static str` (for
// [`Missing`] and consts), defined once for this crate and the build scripts: this
// crate's llvm_22.rs is a symbolic link to linker/llvm_22.rs, so that the crate's
// package (`cargo package`) holds it.
#[path = "llvm_22.rs"]
#[macro_use]
mod llvm_22;

/// LLVM 22, the one LLVM here with an Xtensa backend (the same as rustc's): Debian's
/// `llvm-22` and `clang-22`, which install beside each other. Every path into it is
/// one of these, so a move to another LLVM changes this type only.
pub struct Llvm;

impl Llvm {
    /// The folder of its programs.
    pub const BIN: &'static str = llvm_22!("");
    /// The Xtensa assembler.
    pub const MC: &'static str = llvm_22!("llvm-mc");
    /// The disassembler, which knows Xtensa (Debian's `/usr/bin/llvm-objdump` is LLVM 14).
    pub const OBJDUMP: &'static str = llvm_22!("llvm-objdump");
    /// The object rewriter (the host tier renames an author's calls with it).
    pub const OBJCOPY: &'static str = llvm_22!("llvm-objcopy");
    /// The C compiler (package `clang-22`).
    pub const CLANG: &'static str = llvm_22!("clang");
    /// The C++ compiler (package `clang-22`).
    pub const CLANGXX: &'static str = llvm_22!("clang++");
}
/// The linker.
pub const LD: &str = "xtensa-lx106-elf-ld";
/// The emulator, found on `PATH`.
pub const QEMU: &str = "qemu-system-xtensa";
/// The oldest QEMU (major, minor) that loads the device's TCG plugin (`qemu/plugin`,
/// plugin API v4): docs/toolchain.md, "QEMU 10.0.2 from bookworm-backports".
pub const QEMU_FOR_PLUGIN: (u32, u32) = (10, 0);

/// The tools the simulation needs, all found.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// Where the runtime's headers, linker driver, firmware and plugin are
    /// ([`crate::home`]).
    pub home: Home,
}

/// Some tools, or the data folder, are missing; the message says which and how to
/// get them.
#[derive(Debug)]
pub enum Missing {
    /// System packages.
    Tools(Vec<Requirement>),
    /// The tools' data folder.
    Home(NoHome),
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missing::Tools(tools) => {
                let named: Vec<String> = tools.iter().map(Requirement::described).collect();
                let packages: Vec<&str> = tools.iter().map(|tool| tool.package).collect();
                write!(
                    f,
                    "missing: {}. Install with:\n  {}\nor run `ncop setup` (`ncop doctor` lists every requirement)",
                    named.join(", "),
                    install_line(&packages)
                )
            }
            Missing::Home(no_home) => no_home.fmt(f),
        }
    }
}

impl std::error::Error for Missing {}

impl Toolchain {
    /// Finds the home ([`Home::locate`]) and checks the system's packages its builds
    /// need ([`REQUIREMENTS`]): a device build's always, and Rust's too when the
    /// home is a checkout (whose runtime, firmware and plugin are built from source).
    /// Lists all that are missing at once.
    ///
    /// # Errors
    /// [`Missing`], saying what to install.
    pub fn locate() -> Result<Self, Missing> {
        let home = Home::locate().map_err(Missing::Home)?;
        let needs: &[Need] = match home.layout() {
            Layout::Checkout => &[Need::Device, Need::Rust],
            Layout::Installed => &[Need::Device],
        };
        let missing = missing(needs);
        if missing.is_empty() { Ok(Self { home }) } else { Err(Missing::Tools(missing)) }
    }

    /// Checks the Rust toolchain a Rust library's device build needs (an installed
    /// home's C and C++ builds need none).
    ///
    /// # Errors
    /// [`Missing`], saying what to install.
    pub fn rust() -> Result<(), Missing> {
        let missing = missing(&[Need::Rust]);
        if missing.is_empty() { Ok(()) } else { Err(Missing::Tools(missing)) }
    }
}

/// The [`QEMU`] on `PATH` is older than [`QEMU_FOR_PLUGIN`], or its version could not
/// be read; the message says what to run.
#[derive(Debug)]
pub struct OldQemu {
    /// What `qemu-system-xtensa --version` said, or why it could not be run.
    pub found: String,
}

impl fmt::Display for OldQemu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (major, minor) = QEMU_FOR_PLUGIN;
        write!(
            f,
            "the device's TCG plugin needs QEMU {major}.{minor} or newer (plugin API v4), but \
             `{QEMU}` on PATH is {}. Run `qemu/setup.sh`, which installs QEMU 10.0.2 from \
             bookworm-backports, or put a QEMU {major} first on PATH.",
            self.found
        )
    }
}

impl std::error::Error for OldQemu {}

/// Checks that the [`QEMU`] on `PATH` can load the plugin (once per process: the
/// answer is kept).
///
/// # Errors
/// [`OldQemu`] when it is older than [`QEMU_FOR_PLUGIN`] or does not say its version.
pub fn qemu_for_plugin() -> Result<(), OldQemu> {
    static ANSWER: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let answer = ANSWER.get_or_init(|| {
        let output =
            std::process::Command::new(QEMU).arg("--version").output().map_err(|e| format!("not runnable ({e})"))?;
        let text = String::from_utf8_lossy(&output.stdout);
        let first = text.lines().next().unwrap_or_default().trim();
        match qemu_version(first) {
            Some(version) if version >= QEMU_FOR_PLUGIN => Ok(()),
            Some((major, minor)) => Err(format!("{major}.{minor} (`{first}`)")),
            None => Err(format!("of an unknown version (`{first}`)")),
        }
    });
    answer.clone().map_err(|found| OldQemu { found })
}

/// (major, minor) from `QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2…)`.
fn qemu_version(line: &str) -> Option<(u32, u32)> {
    let version = line.strip_prefix("QEMU emulator version ")?.split([' ', '(']).next()?;
    let mut parts = version.split('.').map(str::parse::<u32>);
    Some((parts.next()?.ok()?, parts.next()?.ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qemu_versions_are_read_from_the_first_line_of_its_version_text() {
        assert_eq!(qemu_version("QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)"), Some((10, 0)));
        assert_eq!(qemu_version("QEMU emulator version 7.2.18 (Debian 1:7.2+dfsg-7+deb12u18)"), Some((7, 2)));
        assert_eq!(qemu_version("QEMU emulator version 9.2.0"), Some((9, 2)));
        assert_eq!(qemu_version("qemu 10"), None);
        assert!((7, 2) < QEMU_FOR_PLUGIN && (10, 0) >= QEMU_FOR_PLUGIN && (11, 1) >= QEMU_FOR_PLUGIN);
    }
}

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
/// what it is instead (see [`qemu_for_plugin`]).
pub fn qemu_new_enough() -> Result<(), OldQemu> {
    qemu_for_plugin()
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
mod requirement_tests {
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
