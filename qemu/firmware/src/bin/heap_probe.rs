//! A library image of Rust kernels that misuse the heap through Rust's global allocator,
//! for the device's heap checks (`qemu/tests/checks.rs`): `uses_freed` writes into a
//! box it dropped, `leaks` keeps a box when it returns (a warning); `copy` shows the
//! next op still runs.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};

/// (tensor x: i32) -> copy of x.
fn copy(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let mut out = args.output()?;
    out.as_mut_slice::<i32>()?.copy_from_slice(x.as_slice::<i32>()?);
    Ok(out)
}

/// Copies, then stores into a box of 16 words after dropping it.
fn uses_freed(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let words = Box::into_raw(Box::new([7u32; 16]));
    // SAFETY: `words` came from `Box::into_raw` just above.
    drop(unsafe { Box::from_raw(words) });
    // SAFETY: none: the box is gone, on purpose, for the checks to find.
    unsafe { words.cast::<u32>().add(1).write_volatile(2) };
    copy(args)
}

/// Copies, keeping a box of 16 words it never drops.
fn leaks(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let kept: &'static mut [u32; 16] = Box::leak(Box::new([7u32; 16]));
    core::hint::black_box(kept);
    copy(args)
}

neuroncustomop::kernels! {
    fn copy, fn uses_freed, fn leaks
}
