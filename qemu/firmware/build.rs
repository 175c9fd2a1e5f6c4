//! Assembles the board's semihosting call, the instruction counter, and points each image at its linker script.

#[path = "../../linker/xtensa_asm.rs"]
mod xtensa_asm;

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    xtensa_asm::assemble_into_library(
        &[PathBuf::from("src/board.S"), PathBuf::from("src/resume.S"), PathBuf::from("src/icount.S")],
        Path::new("../../.cargo/xtensa-gpsimd-none-elf.json"),
        &out,
        "qemu_board",
    );
    // The loader and the DMA engine have their own address ranges; every other program
    // is a library image.
    println!("cargo:rerun-if-changed=src/bin");
    for entry in std::fs::read_dir("src/bin").expect("list src/bin") {
        let path = entry.expect("list src/bin").path();
        let name = path.file_stem().expect("a program has a name").to_string_lossy();
        let script = match &*name {
            "loader" => "loader0.x",
            "dma_engine" => "dma_engine.x",
            _ => "core0.x",
        };
        println!("cargo:rustc-link-arg-bin={name}=-T{script}");
    }
}
