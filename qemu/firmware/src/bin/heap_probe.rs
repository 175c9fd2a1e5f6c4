//! A library image of Rust kernels that misuse the heap through Rust's global allocator,
//! for the device's heap checks (`qemu/tests/checks.rs`): `uses_freed` writes into a
//! box it dropped, `leaks` keeps a box when it returns (a warning), `past_box` writes
//! past a box where the next box would start, `unwritten_out` copies a box it never
//! wrote into the output (a warning), `keeps_and_panics` stops holding a box (which the
//! loader gives back: no leak); `copy` shows the next op still runs.
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

/// Copies, then stores 4 words past a box of 16, where the box taken after it would start.
fn past_box(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let first = Box::into_raw(Box::new([7u32; 16]));
    let next = Box::new([9u32; 16]);
    for i in 0..4 {
        // SAFETY: none: past the box, on purpose, for the checks to find.
        unsafe { first.cast::<u32>().add(16 + i).write_volatile(3) };
    }
    core::hint::black_box(next);
    // SAFETY: `first` came from `Box::into_raw` just above.
    drop(unsafe { Box::from_raw(first) });
    copy(args)
}

/// Copies, then copies a box of 16 words it never wrote over the output's first 16
/// elements (by the runtime's copy: a DMA transfer).
fn unwritten_out(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let mut out = copy(args)?;
    let words = Box::<[i32; 16]>::new_uninit();
    // SAFETY: the box holds 16 words; no Rust code reads them: the DMA engine copies
    // them, never written, on purpose, for the checks to find.
    let unwritten = unsafe { core::slice::from_raw_parts(words.as_ptr().cast::<i32>(), 16) };
    out.tcm_to_tensor(unwritten, 0)?;
    Ok(out)
}

/// Takes a box of 16 words, then panics holding it.
fn keeps_and_panics(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let kept = Box::new([7u32; 16]);
    core::hint::black_box(&kept);
    if args.tensor()?.numel() > 0 {
        panic!("stops holding a box");
    }
    copy(args)
}

neuroncustomop::kernels! {
    fn copy, fn uses_freed, fn leaks, fn past_box, fn unwritten_out, fn keeps_and_panics
}
