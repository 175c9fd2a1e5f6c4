//! Self-test: a panic reports its message and location and stops with status 101.
#![no_std]
#![no_main]

use core::hint::black_box;
// The QEMU board: its platform hooks carry the report out (semihosting).
use neuroncustomop_firmware as _;

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let divisor = black_box(0u32);
    let limit = black_box(7u32);
    assert!(divisor != 0, "the divisor of {limit} must not be zero");
    0
}
