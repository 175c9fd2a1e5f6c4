//! Self-test: float arithmetic runs on the core's FPU (`mul.s`, `add.s`), not in
//! `compiler_builtins`' software routines. Prints a dot product's bits, which the host
//! recomputes in the same order, and the instructions one multiply-add takes.
#![no_std]
#![no_main]

use core::hint::black_box;
use neuroncustomop_firmware::{bench, println};

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

const LEN: usize = 1024;

/// `x[i] = (i % 17) * 0.25 - 1.5`, `y[i] = (i % 5) * 1.125 + 0.5`: exact in f32, so the
/// host builds the same vectors.
fn dot() -> f32 {
    let mut sum = 0.0f32;
    for i in 0..LEN {
        let x = black_box((i % 17) as f32 * 0.25 - 1.5);
        let y = black_box((i % 5) as f32 * 1.125 + 0.5);
        sum += x * y;
    }
    sum
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let mut result = 0.0;
    let instructions = bench::count(|| result = dot());
    println!("fpu dot={:#010x} len={LEN} instructions={instructions}", result.to_bits());
    0
}
