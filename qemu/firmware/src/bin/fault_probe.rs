//! A library image of kernels that stop without returning, for the fault-injection
//! tests (`qemu/tests/faults.rs`): a panic, `abort`, `exit(7)`, and a load from an
//! address no memory answers; a loop that never ends (`spins`); and `copy`, which
//! shows the next op still runs.
#![no_std]
#![no_main]

use core::hint::black_box;
use neuroncustomop::println;
use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};

/// Nothing answers here on the simulated board.
const UNMAPPED: usize = 0xA000_0000;

/// (tensor x: i32) -> copy of x.
fn copy(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let mut out = args.output()?;
    out.as_mut_slice::<i32>()?.copy_from_slice(x.as_slice::<i32>()?);
    Ok(out)
}

/// Pulls its argument, then panics with a message naming it.
fn panics(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let first = black_box(x.as_slice::<i32>()?[0]);
    panic!("kernel gave up on {first}");
}

#[unsafe(no_mangle)]
extern "C" fn aborts() {
    println!("about to abort");
    neuroncustomop::start_exit::abort()
}

#[unsafe(no_mangle)]
extern "C" fn exits() {
    neuroncustomop::start_exit::exit(7)
}

#[unsafe(no_mangle)]
extern "C" fn faults() {
    // SAFETY: none: this load is the fault under test; it never completes.
    let value = unsafe { core::ptr::read_volatile(black_box(UNMAPPED) as *const u32) };
    println!("the load returned {value}: no exception");
}

/// Never returns: the infinite loop an instruction budget or a wall limit must stop.
#[unsafe(no_mangle)]
extern "C" fn spins() {
    let mut turns = 0u32;
    loop {
        turns = black_box(turns.wrapping_add(1));
    }
}

/// Sleeps three times on the core's timer, then copies: `waiti` wakes and comes back.
fn sleeps(args: &Args) -> Result<Tensor<'_>, KernelError> {
    for _ in 0..3 {
        neuroncustomop::arch::wait_for_interrupt(400);
    }
    copy(args)
}

neuroncustomop::kernels! { fn copy, fn panics, aborts, exits, faults, spins, fn sleeps }
