//! Self-test of the HBM stack switch (`switch_stack_or_call_wrapper`):
//!
//! 1. a recursion needing more than 100 KiB of stack runs on a 200 KiB HBM stack and
//!    returns what an iterative reference computes; the stack's high-water mark shows
//!    how much it used (the image's own stack is 64 KiB);
//! 2. the same recursion, a little deeper than a 16 KiB HBM stack holds, is reported as
//!    an overflow;
//! 3. run on the image's own stack (stack size 0: "or call"), a recursion deeper than
//!    that stack is reported as a caller-stack overflow;
//! 4. bad arguments are refused with their statuses;
//! 5. the cost of a call through each path, as `BENCH` lines (instruction counts when
//!    run with `--count-instructions`).
//!
//! Prints one line per check (`stack <check> ... status=<code>`), and exits with 1 on
//! any unexpected result (`qemu/tests/data_movement.rs` checks both).
#![no_std]
#![no_main]

use core::ffi::c_void;
use core::hint::black_box;
use neuroncustomop::allocators::{self, GRANULE, HeapId};
use neuroncustomop::stack_switch::{
    GUARD_SIZE, STACK_OK, StackError, hbm_stack_bytes, run_on_region, switch_stack_or_call_wrapper,
};
use neuroncustomop_firmware::{bench, println};

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

/// The simulated device's HBM scratch for this test: RAM outside every image (and
/// outside 0x70000000..0x7E000000, which this QEMU board does not back with RAM).
const HBM_SCRATCH: usize = 0x6800_0000;
const HBM_SCRATCH_SIZE: usize = 4 << 20;
const DATARAM_SCRATCH: usize = HBM_SCRATCH + HBM_SCRATCH_SIZE;
const DATARAM_SCRATCH_SIZE: usize = 64 << 10;

/// What every byte of a stack holds before it is used (for the high-water mark).
const UNUSED: u8 = 0xCD;
/// Depth of the first check's recursion: about 150 KiB of stack.
const DEEP: u32 = 600;

/// A recursion whose every frame keeps a 32-word array live across the call, so the
/// stack it needs grows with `n` (about 200 bytes a level).
#[inline(never)]
fn recursive_checksum(n: u32, salt: u32) -> u32 {
    let mut scratch = [0u32; 32];
    for (i, word) in scratch.iter_mut().enumerate() {
        *word = salt.rotate_left(i as u32) ^ n;
    }
    let scratch = black_box(scratch);
    if n == 0 {
        return scratch.iter().fold(salt, |acc, &w| acc.wrapping_add(w));
    }
    let below = recursive_checksum(black_box(n - 1), salt.wrapping_mul(31).wrapping_add(n));
    below.rotate_left(5) ^ scratch[(n % 32) as usize]
}

/// `recursive_checksum` as a loop: the salts on the way down, then the folds on the way up.
fn iterative_checksum(depth: u32, salt: u32) -> u32 {
    let word = |n: u32, salt: u32, i: u32| salt.rotate_left(i) ^ n;
    let mut salts = [0u32; DEEP as usize * 2];
    let mut s = salt;
    for n in (0..=depth).rev() {
        salts[n as usize] = s;
        s = s.wrapping_mul(31).wrapping_add(n);
    }
    let bottom = salts[0];
    let mut acc = (0..32).fold(bottom, |acc, i| acc.wrapping_add(word(0, bottom, i)));
    for n in 1..=depth {
        acc = acc.rotate_left(5) ^ word(n, salts[n as usize], n % 32);
    }
    acc
}

/// The argument `checksum_kernel` gets through the C ABI's `void *`.
struct Job {
    depth: u32,
    salt: u32,
    result: u32,
}

extern "C" fn checksum_kernel(job: *mut c_void) {
    // SAFETY: every caller passes a pointer to a live `Job`, used by nothing else.
    let job = unsafe { &mut *job.cast::<Job>() };
    job.result = recursive_checksum(job.depth, job.salt);
}

fn run_checksum(depth: u32, stack_size: u32) -> (i32, Job) {
    let mut job = Job { depth, salt: 0x9E37_79B9, result: 0 };
    // SAFETY: `checksum_kernel` takes a pointer to a live Job.
    let status = unsafe { switch_stack_or_call_wrapper(Some(checksum_kernel), (&raw mut job).cast(), stack_size) };
    (status, job)
}

/// Check 1, measured: the deep recursion on a painted 400 KiB HBM stack. Returns the
/// bytes it used (0 on failure).
fn deep_recursion_fits(failures: &mut u32) -> usize {
    let stack_size = 400 * 1024;
    let bytes = hbm_stack_bytes(stack_size);
    let Ok(block) = allocators::allocate(HeapId::Hbm, bytes, GRANULE) else {
        *failures += 1;
        println!("stack deep: cannot allocate {bytes} bytes");
        return 0;
    };
    let base = block.as_ptr();
    // SAFETY: a live block of `bytes` bytes that nothing else uses.
    unsafe { base.write_bytes(UNUSED, bytes) };
    let salt = 0x1234_5678;
    // SAFETY: as above, until the call returns.
    let result = unsafe { run_on_region(base, bytes, || recursive_checksum(black_box(DEEP), salt)) };
    // The lowest byte above the guard the recursion wrote: its deepest point.
    // SAFETY: the block is still live; the usable stack lies above the guard.
    let usable = unsafe { core::slice::from_raw_parts(base.add(GUARD_SIZE), bytes - GUARD_SIZE) };
    let used = usable.len() - usable.iter().position(|&b| b != UNUSED).unwrap_or(usable.len());
    let _ = allocators::free_in(HeapId::Hbm, base);
    let want = iterative_checksum(DEEP, salt);
    let ok = result == Ok(want) && used > 100 * 1024;
    *failures += u32::from(!ok);
    println!(
        "stack deep depth={DEEP} stack={stack_size} used={used} recursive={:#010x} iterative={want:#010x} ok={ok}",
        result.unwrap_or(0)
    );
    used
}

/// Check 1, through the C ABI: the same recursion with `switch_stack_or_call_wrapper`.
fn deep_recursion_through_the_wrapper(failures: &mut u32) {
    let (status, job) = run_checksum(DEEP, 200 * 1024);
    let want = iterative_checksum(DEEP, job.salt);
    let ok = status == STACK_OK && job.result == want;
    *failures += u32::from(!ok);
    println!("stack wrapper depth={DEEP} status={status} recursive={:#010x} iterative={want:#010x} ok={ok}", job.result);
}

/// Check 2: a recursion a few levels deeper than a 16 KiB stack holds is an overflow.
/// It should end in the 1 KiB guard; in case it reaches further, `main`'s sacrificial
/// block lies below every stack.
fn overflow_is_reported(failures: &mut u32, bytes_per_level: usize) {
    let stack_size = 16 * 1024;
    let depth = ((stack_size + 256) / bytes_per_level) as u32;
    let (status, _) = run_checksum(depth, stack_size as u32);
    let ok = status == StackError::Overflow.code();
    *failures += u32::from(!ok);
    println!("stack overflow depth={depth} stack={stack_size} status={status} ok={ok}");
}

/// Check 3: on the image's own 64 KiB stack (stack size 0), 80 KiB of recursion is a
/// caller-stack overflow. (It runs into the unused RAM between `.bss` and the stack.)
fn caller_overflow_is_reported(failures: &mut u32, bytes_per_level: usize) {
    let depth = (80 * 1024 / bytes_per_level) as u32;
    let (status, _) = run_checksum(depth, 0);
    let ok = status == StackError::CallerStackOverflow.code();
    *failures += u32::from(!ok);
    println!("stack caller_overflow depth={depth} status={status} ok={ok}");
    // And a recursion that fits is fine there.
    let (status, job) = run_checksum(50, 0);
    let ok = status == STACK_OK && job.result == iterative_checksum(50, job.salt);
    *failures += u32::from(!ok);
    println!("stack caller_fits depth=50 status={status} ok={ok}");
}

/// Check 4: refusals.
fn bad_arguments_are_refused(failures: &mut u32) {
    let mut job = Job { depth: 1, salt: 0, result: 0 };
    let argument = (&raw mut job).cast::<c_void>();
    let cases = [
        ("null_function", None, 64 * 1024, StackError::NullFunction),
        ("too_small", Some(checksum_kernel as extern "C" fn(*mut c_void)), 100, StackError::InvalidSize),
        ("too_large", Some(checksum_kernel as extern "C" fn(*mut c_void)), 401 * 1024, StackError::InvalidSize),
    ];
    for (name, function, size, error) in cases {
        // SAFETY: `checksum_kernel` takes a pointer to a live Job; refused calls call nothing.
        let status = unsafe { switch_stack_or_call_wrapper(function, argument, size) };
        let ok = status == error.code() && job.result == 0;
        *failures += u32::from(!ok);
        println!("stack {name} status={status} ok={ok}");
    }
}

extern "C" fn empty_kernel(_: *mut c_void) {}

/// Check 5: what a call of an empty kernel costs on each path.
fn measure_costs() {
    let call = |stack_size: u32| {
        // SAFETY: `empty_kernel` ignores its argument.
        unsafe { switch_stack_or_call_wrapper(Some(empty_kernel), core::ptr::null_mut(), black_box(stack_size)) }
    };
    bench::measure("stack_call_on_current_stack", 100, || {
        call(0);
    });
    bench::measure("stack_call_on_new_hbm_stack_16k", 100, || {
        call(16 * 1024);
    });
    let bytes = hbm_stack_bytes(16 * 1024);
    if let Ok(block) = allocators::allocate(HeapId::Hbm, bytes, GRANULE) {
        bench::measure("stack_call_on_given_region_16k", 100, || {
            // SAFETY: a live block that nothing else uses during the call.
            let _ = unsafe { run_on_region(block.as_ptr(), bytes, || ()) };
        });
        let _ = allocators::free_in(HeapId::Hbm, block.as_ptr());
    }
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    // SAFETY: RAM outside every image, which nothing else in this simulation uses.
    let heaps = unsafe {
        allocators::init_heaps(
            core::ptr::with_exposed_provenance_mut(HBM_SCRATCH),
            HBM_SCRATCH_SIZE,
            core::ptr::with_exposed_provenance_mut(DATARAM_SCRATCH),
            DATARAM_SCRATCH_SIZE,
        )
    };
    if heaps.is_err() {
        println!("stack: cannot set up the heaps");
        return 1;
    }
    // The heap is first fit: this block takes its lowest addresses and every stack below
    // comes after it, so an overflow that runs past a guard lands here, not in the
    // heap's metadata.
    let Ok(_sacrificial) = allocators::allocate(HeapId::Hbm, 64 * 1024, GRANULE) else {
        println!("stack: cannot allocate the sacrificial block");
        return 1;
    };
    let mut failures = 0;
    let used = deep_recursion_fits(&mut failures);
    let bytes_per_level = (used / DEEP as usize).max(1);
    println!("stack frame bytes_per_level={bytes_per_level}");
    deep_recursion_through_the_wrapper(&mut failures);
    overflow_is_reported(&mut failures, bytes_per_level);
    caller_overflow_is_reported(&mut failures, bytes_per_level);
    bad_arguments_are_refused(&mut failures);
    measure_costs();
    println!("stack_check failures={failures}");
    i32::from(failures != 0)
}
