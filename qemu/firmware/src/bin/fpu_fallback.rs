//! Self-test: a crate whose float code LLVM 22 cannot compile for the FPU (a select
//! between two float constants, docs/toolchain.md "LLVM defects" 5) still builds,
//! through the rustc wrapper's software-float rebuild, and computes the right values.
#![no_std]
#![no_main]

use core::hint::black_box;
use neuroncustomop_firmware::println;

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

/// The pattern that aborts LLVM 22 with `+fp`: both arms are float constants.
#[inline(never)]
fn sign(x: f32) -> f32 {
    if x > 0.0 { 1.0 } else { -0.5 }
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let [a, b, c, d] = [3.0f32, -2.0, 0.0, 1e-30].map(|x| sign(black_box(x)).to_bits());
    println!("fpu_fallback signs={a:#010x},{b:#010x},{c:#010x},{d:#010x}");
    0
}
