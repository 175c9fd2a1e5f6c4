//! Self-test: a load from an address no memory answers must come back as a reported
//! exception (EXCCAUSE, EPC1, EXCVADDR) and a non-zero exit, not as a hang.
#![no_std]
#![no_main]

use neuroncustomop_firmware::println;

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

/// Nothing answers here on the simulated board (RAM is 0..0x88000000, I/O from 0xF0000000).
const UNMAPPED: usize = 0xA000_0000;

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    println!("loading from {UNMAPPED:#010x}");
    // SAFETY: none: this load is the fault under test; it never completes.
    let value = unsafe { core::ptr::read_volatile(UNMAPPED as *const u32) };
    println!("load returned {value:#x}: no exception was raised");
    0
}
