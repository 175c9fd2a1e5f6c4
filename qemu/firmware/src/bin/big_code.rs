//! Self-test of the literal layout: an image with more than 256 KiB of code, more than
//! `l32r` reaches, still links and runs (linker/README.md, "Literals"). It prints the
//! result of a chain of 400 code-heavy stages, which `qemu/tests/linker.rs` compares
//! with the same chain run on the host.
#![no_std]
#![no_main]

use core::hint::black_box;
use neuroncustomop_firmware::println;

#[path = "../big_code_stages.rs"]
mod stages;

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let result = stages::chain(black_box(stages::SEED));
    println!("big_code stages={} result={result:#010x}", stages::STAGES);
    0
}
