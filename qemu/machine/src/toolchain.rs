//! Where the Xtensa toolchain lives, and a clear message when part of it is missing.

use crate::home::{Home, Layout, NoHome};
use crate::requirements::{self, Need, Requirement};
use std::fmt;

/// Debian's packages, installed by `qemu/setup.sh` (see docs/toolchain.md).
pub const RUSTC: &str = "/usr/bin/rustc";
/// Debian's cargo, matching [`RUSTC`].
pub const CARGO: &str = "/usr/bin/cargo";
/// The standard library source `-Zbuild-std` compiles.
pub const RUST_SRC: &str = "/usr/lib/rustlib/src/rust/library/core";
// `llvm_22!`: a program of LLVM 22's `bin` folder, as a `&'static str` (for
// [`Missing`] and consts), defined once for this crate and the build scripts.
#[path = "../../../linker/llvm_22.rs"]
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
                    requirements::install_line(&packages)
                )
            }
            Missing::Home(no_home) => no_home.fmt(f),
        }
    }
}

impl std::error::Error for Missing {}

impl Toolchain {
    /// Finds the home ([`Home::locate`]) and checks the system's packages its builds
    /// need ([`crate::requirements`]): a device build's always, and Rust's too when the
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
        let missing = requirements::missing(needs);
        if missing.is_empty() { Ok(Self { home }) } else { Err(Missing::Tools(missing)) }
    }

    /// Checks the Rust toolchain a Rust library's device build needs (an installed
    /// home's C and C++ builds need none).
    ///
    /// # Errors
    /// [`Missing`], saying what to install.
    pub fn rust() -> Result<(), Missing> {
        let missing = requirements::missing(&[Need::Rust]);
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
