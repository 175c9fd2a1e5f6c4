//! Self-test: a recursion deep enough to spill and refill register windows hundreds of
//! times (32 physical registers hold at most a few frames), checked against a loop.
#![no_std]
#![no_main]

use core::hint::black_box;
use neuroncustomop_firmware::{board, println};

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

const DEPTH: u32 = 600;

/// Not a tail call: each frame keeps `n` and `salt` live across the call.
fn recursive_checksum(n: u32, salt: u32) -> u32 {
    if n == 0 {
        return salt;
    }
    let below = recursive_checksum(black_box(n - 1), salt.rotate_left(3) ^ n);
    below.wrapping_mul(31).wrapping_add(n ^ salt)
}

fn iterative_checksum(depth: u32, salt: u32) -> u32 {
    let mut salts = [0u32; DEPTH as usize + 1];
    let mut s = salt;
    for n in (0..=depth).rev() {
        salts[n as usize] = s;
        if n > 0 {
            s = s.rotate_left(3) ^ n;
        }
    }
    let mut acc = salts[0];
    for n in 1..=depth {
        acc = acc.wrapping_mul(31).wrapping_add(n ^ salts[n as usize]);
    }
    acc
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let salt = black_box(0x9E37_79B9);
    let got = recursive_checksum(black_box(DEPTH), salt);
    let want = iterative_checksum(DEPTH, salt);
    println!("recursion depth={DEPTH} recursive={got:#010x} iterative={want:#010x}");
    if got == want { 0 } else { board::exit(1) }
}
