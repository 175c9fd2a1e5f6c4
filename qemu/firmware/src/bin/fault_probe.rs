//! A library image of kernels that stop without returning, for the fault-injection
//! tests (`qemu/tests/faults.rs`): a panic, a panic while panicking, `abort`, `exit(7)`,
//! a load from an address no memory answers, a load through a null pointer, an
//! infinite recursion and an infinite loop (`spins`, for the loader's instruction
//! budget); `sleeps`, which waits on the core's timer; `overruns`, which writes past its
//! output (`qemu/tests/checks.rs`); `copy`, which shows the next op still runs;
//! `hoards`, which takes the whole HBM heap and then panics, and `heap_left`, which
//! reports how much of it the next op finds.
#![no_std]
#![no_main]

use core::fmt;
use core::hint::black_box;
use neuroncustomop::allocators::{self, HeapId};
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

/// A value whose formatting panics: the panic handler, printing it, panics again.
struct Unprintable;

impl fmt::Display for Unprintable {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        panic!("formatting the message failed too")
    }
}

#[unsafe(no_mangle)]
extern "C" fn double_panics() {
    panic!("first: {}", black_box(Unprintable));
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

#[unsafe(no_mangle)]
extern "C" fn reads_null() {
    let null = black_box(core::ptr::null::<u32>());
    // SAFETY: none: this load is the fault under test; it never completes.
    let value = unsafe { core::ptr::read_volatile(null) };
    println!("the null load returned {value}: no exception");
}

/// Calls itself for ever: not a tail call, each frame keeps `n` live across the call.
#[inline(never)]
#[allow(unconditional_recursion, reason = "the runaway recursion under test")]
fn depth_first(n: u32) -> u32 {
    let below = depth_first(black_box(n + 1));
    black_box(below) ^ n
}

#[unsafe(no_mangle)]
extern "C" fn recurses() {
    println!("never returns: {}", depth_first(black_box(0)));
}

/// Never returns: the infinite loop an instruction budget or a wall limit must stop.
#[unsafe(no_mangle)]
extern "C" fn spins() {
    let mut turns = 0u32;
    loop {
        turns = black_box(turns.wrapping_add(1));
    }
}

/// Copies, then writes 64 floats past the end of its output through a raw pointer: the
/// overrun the device's memory checks name (`qemu/tests/checks.rs`).
fn overruns(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let mut out = args.output()?;
    let slice = out.as_mut_slice::<i32>()?;
    slice.copy_from_slice(x.as_slice::<i32>()?);
    let past = slice.as_mut_ptr_range().end.cast::<f32>();
    for i in 0..64 {
        // SAFETY: none: the store lands past the output on purpose, for the checks to find.
        unsafe { past.add(i).write_volatile(1.0) };
    }
    Ok(out)
}

/// Sleeps three times on the core's timer, then copies: `waiti` wakes and comes back.
/// Each sleep is 100 ms of the 40 MHz CCOUNT, long enough that no host pause between
/// arming the timer and the `waiti` outlasts it: every sleep sleeps, with or without
/// `-icount` (under `sleep=off` the idle clock jumps to the deadline), so its count
/// is the same in both (`qemu/tests/counting.rs`).
fn sleeps(args: &Args) -> Result<Tensor<'_>, KernelError> {
    for _ in 0..3 {
        neuroncustomop::arch::wait_for_interrupt(4_000_000);
    }
    copy(args)
}

/// Takes HBM heap blocks of 1 MiB, then of 64 B, until the heap is full, then panics
/// (leaving them all taken).
fn hoards(_: &Args) -> Result<Tensor<'_>, KernelError> {
    let mut blocks = 0u32;
    for size in [1 << 20, 64] {
        while allocators::allocate(HeapId::Hbm, size, 64).is_ok() {
            blocks += 1;
        }
    }
    panic!("took {blocks} blocks, the whole heap");
}

/// () -> out: i32 [free bytes, largest free block, live blocks] of the HBM heap, then
/// the rest of the output zeroed.
fn heap_left(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let stats = allocators::heap_stats(HeapId::Hbm);
    let mut out = args.output()?;
    let words = out.as_mut_slice::<i32>()?;
    words.fill(0);
    for (word, value) in words.iter_mut().zip([stats.free_bytes, stats.largest_free, stats.live_blocks]) {
        *word = value as i32;
    }
    Ok(out)
}

neuroncustomop::kernels! {
    fn copy, fn panics, double_panics, aborts, exits, faults, reads_null, recurses, spins, fn sleeps, fn overruns,
    fn hoards, fn heap_left
}
