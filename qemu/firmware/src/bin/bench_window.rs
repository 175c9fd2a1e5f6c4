//! Benchmark of the window overflow handlers' stack check (runtime/arch/xtensa/vectors.S):
//! a recursion 1000 calls deep, each call spilling one register window on the way down
//! (a `_WindowOverflow8`) and refilling one on the way up, with the check armed as the
//! loader arms it. Run with `--count-instructions`; docs/PERFORMANCE.md has the figures.
#![no_std]
#![no_main]

use core::hint::black_box;
use neuroncustomop_firmware::bench;

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

const DEPTH: u32 = 1000;

/// Not a tail call: each frame keeps `n` live across the call (a call8 frame).
#[inline(never)]
fn descend(n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    let below = descend(black_box(n - 1));
    black_box(below).wrapping_add(n)
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    neuroncustomop::arch::arm_stack_limit();
    let per_recursion_x100 = bench::measure("window_recursion_1000", 20, || {
        black_box(descend(black_box(DEPTH)));
    });
    neuroncustomop_firmware::println!("per call x100: {}", per_recursion_x100 / u64::from(DEPTH));
    i32::from(descend(black_box(DEPTH)) != DEPTH * (DEPTH + 1) / 2)
}
