//! Where the Xtensa toolchain lives, and a clear message when part of it is missing.

use std::fmt;
use std::path::{Path, PathBuf};

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
/// The emulator.
pub const QEMU: &str = "qemu-system-xtensa";

/// The tools the simulation needs, all found.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// Root of this repository.
    pub repo: PathBuf,
}

/// Some tools are missing; the message says which and how to get them.
#[derive(Debug)]
pub struct Missing(pub Vec<&'static str>);

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "missing: {}. Install them with `qemu/setup.sh` (Debian packages rustc-web, \
             rust-web-src, cargo-web, llvm-22, binutils-xtensa-lx106, qemu-system-misc), \
             or run `cargo sim setup`.",
            self.0.join(", ")
        )
    }
}

impl std::error::Error for Missing {}

impl Toolchain {
    /// Checks every tool; lists all that are missing at once.
    pub fn locate() -> Result<Self, Missing> {
        let mut missing = Vec::new();
        for path in [RUSTC, CARGO, RUST_SRC, Llvm::MC] {
            if !Path::new(path).exists() {
                missing.push(path);
            }
        }
        for program in [LD, QEMU] {
            if !on_path(program) {
                missing.push(program);
            }
        }
        if missing.is_empty() { Ok(Self { repo: repo_root() }) } else { Err(Missing(missing)) }
    }
}

/// The repository root: this crate lives in `<root>/qemu/machine`.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).expect("qemu/machine has two parents").to_path_buf()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}
