//! A library image whose kernel does a known amount of work, for the instruction-count
//! tests (`qemu/tests/counting.rs`): `work` reads `iterations` (an i32 tensor `[n]`)
//! and runs a loop of `n[core]` turns on core `core`, writing what it computed; `deep`
//! does `n[core]` times a recursion 100 calls deep and back, which takes window
//! overflow and underflow exceptions in the middle of translated blocks; `softmax` is a
//! row softmax as a newcomer writes it, with the `libm` crate's `expf` (software float)
//! and a division per element, for the profile's test (`qemu/tests/profile.rs`): nearly
//! all its instructions are under `expf`, few of them in `expf`'s own code. Its two
//! loops are the author's ranges `exp and sum` and `normalise` (range markers).
#![no_std]
#![no_main]

use core::hint::black_box;
use neuroncustomop::multicore::get_cpu_id;
use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};

/// (iterations: i32 [cores]) -> out: i32 [cores]; core c runs `iterations[c]` turns.
fn work(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let core = get_cpu_id() as usize;
    let turns = args.tensor()?.as_slice::<i32>()?.get(core).copied().unwrap_or(0);
    let mut sum = 0u32;
    for turn in 0..turns as u32 {
        sum = black_box(sum.wrapping_mul(31).wrapping_add(turn));
    }
    let mut out = args.output()?;
    if let Some(slot) = out.as_mut_slice::<i32>()?.get_mut(core) {
        *slot = sum as i32;
    }
    Ok(out)
}

/// Recurses `depth` calls deep and back: not a tail call (the result is used after
/// it), so each call keeps a register window, and the windows spill and refill.
#[inline(never)]
fn descend(depth: u32) -> u32 {
    if depth == 0 {
        return black_box(1);
    }
    let below = descend(black_box(depth - 1));
    black_box(below.wrapping_mul(3)) ^ depth
}

/// (iterations: i32 [cores]) -> out: i32 [cores]; core c runs `iterations[c]`
/// recursions 100 calls deep.
fn deep(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let core = get_cpu_id() as usize;
    let turns = args.tensor()?.as_slice::<i32>()?.get(core).copied().unwrap_or(0);
    let mut sum = 0u32;
    for _ in 0..turns {
        sum = sum.wrapping_add(descend(black_box(100)));
    }
    let mut out = args.output()?;
    if let Some(slot) = out.as_mut_slice::<i32>()?.get_mut(core) {
        *slot = sum as i32;
    }
    Ok(out)
}

/// (x: f32 [n]) -> out: f32 [n], the softmax of `x`: e^(x - max) over their sum.
fn softmax(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let x = x.as_slice::<f32>()?;
    let largest = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut out = args.output()?;
    let y = out.as_mut_slice::<f32>()?;
    let mut sum = 0.0;
    // The author's ranges (no instruction: the profile's range table and trace lanes).
    neuroncustomop::range_begin!("exp and sum");
    for (y, &x) in y.iter_mut().zip(x) {
        *y = libm::expf(x - largest);
        sum += *y;
    }
    neuroncustomop::range_end!("exp and sum");
    neuroncustomop::range_begin!("normalise");
    for y in y.iter_mut() {
        *y /= sum;
    }
    neuroncustomop::range_end!("normalise");
    Ok(out)
}

neuroncustomop::kernels! { fn work, fn deep, fn softmax }
