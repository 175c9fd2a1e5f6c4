//! Smoke benchmark of the instruction-count harness: a calibration workload of known
//! size, and a word copy loop of 4 KiB.
#![no_std]
#![no_main]

use core::hint::black_box;
use neuroncustomop_firmware::bench;

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

static SOURCE: [u32; 1024] = {
    let mut words = [0u32; 1024];
    let mut i = 0;
    while i < words.len() {
        words[i] = (i as u32).wrapping_mul(0x9E37_79B9);
        i += 1;
    }
    words
};
static mut DESTINATION: [u32; 1024] = [0; 1024];

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    bench::measure("calibrate_nops_100000", 1, || bench::nops(100_000));
    // SAFETY: this core is the only user of DESTINATION, and main runs once.
    let destination = unsafe { &mut *core::ptr::addr_of_mut!(DESTINATION) };
    bench::measure("copy_loop_4096", 100, || {
        for (d, s) in destination.iter_mut().zip(black_box(&SOURCE).iter()) {
            *d = *s;
        }
    });
    i32::from(destination[..] != SOURCE[..])
}
