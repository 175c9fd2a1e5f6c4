//! Benchmark of the kernels' hot math and C accessors on the device: guest instructions
//! per call of `expf`, `logf` and `tanhf` (the FPU ones, and the `libm` crate's that
//! they replaced), f32
//! division (`__divsf3` on the FPU's divide sequence), and `customop_tensor_numel` and
//! the other C shape accessors (of a descriptor of the kernel's own, and of one the
//! runtime handed out), next to an empty call of the same signature (the
//! harness). Run it with `cargo sim run bench_math
//! --count-instructions`; `qemu/tests/hot_paths.rs` holds the goals.
//!
//! Prints `BENCH` lines and `HOT <case> <per call x100> <own x100>`: the loop's count
//! per call, and the instructions the function itself runs, `entry` to `retw` (the
//! call's count minus the empty call's, plus the empty function's own two).
#![no_std]
#![no_main]

use core::hint::black_box;
use neuroncustomop::start_exit::math;
use neuroncustomop::translate::{TranslateRecord, configure};
use neuroncustomop::wrapper_api::{
    ArgTensor, Dtype, customop_next_tensor, customop_set_invocation, customop_setup, customop_tensor_dim,
    customop_tensor_dtype, customop_tensor_numel, customop_tensor_rank,
};
use neuroncustomop_firmware::{bench, println};

neuroncustomop::kernels! {}

const CALLS: u32 = 5_000;
/// Instructions [`nothing`] runs: `entry` and `retw.n`.
const NOTHING_OWN: u64 = 2;

unsafe extern "C" {
    /// The runtime's `__divsf3` (runtime/arch/xtensa/fdiv.S), what `/` on f32 calls.
    fn __divsf3(a: f32, b: f32) -> f32;
}

/// The harness of a one-float function: a call that does nothing. (Called through a
/// pointer the optimiser cannot see, as the measured functions are: called directly,
/// LLVM would know it returns its argument and drop the call.)
#[inline(never)]
extern "C" fn nothing(x: f32) -> f32 {
    x
}

/// The harness of a two-float function.
#[inline(never)]
extern "C" fn nothing2(x: f32, _: f32) -> f32 {
    x
}

/// The harness of an accessor. It returns its argument's address, already in the
/// return register, so that it runs [`NOTHING_OWN`] instructions (a constant returned
/// takes a third, which counted against the accessors, 1 too few).
#[inline(never)]
extern "C" fn nothing_desc(tensor: *const ArgTensor) -> u32 {
    tensor.addr() as u32
}

/// The harness of `customop_tensor_dim`, as [`nothing_desc`].
#[inline(never)]
extern "C" fn nothing_dim(tensor: *const ArgTensor, _: u32) -> u32 {
    tensor.addr() as u32
}

/// The `libm` crate's `expf`, what the kernels' `expf` was.
#[inline(never)]
extern "C" fn libm_expf(x: f32) -> f32 {
    libm::expf(x)
}

/// The `libm` crate's `logf`.
#[inline(never)]
extern "C" fn libm_logf(x: f32) -> f32 {
    libm::logf(x)
}

/// The `libm` crate's `tanhf`.
#[inline(never)]
extern "C" fn libm_tanhf(x: f32) -> f32 {
    libm::tanhf(x)
}

/// Prints a `HOT` row: per call, and the function's own instructions.
fn row(case: &str, per_call: u64, harness: u64) {
    let own = (per_call + NOTHING_OWN * 100).saturating_sub(harness);
    println!("HOT {case} {per_call} {own}");
}

/// A float case and its harness, the same loop around `f` and around [`nothing`]:
/// prints the case's `HOT` row.
fn float_case(case: &str, f: extern "C" fn(f32) -> f32, input: impl Fn(f32) -> f32 + Copy) {
    let harness = float_loop("nothing_loop", nothing, input);
    row(case, float_loop(case, f, input), harness);
}

/// Instructions per call (x100) of a loop around `f` on `input` of x, for x across
/// softmax's range, e^(x - max) for x - max in [-20, 0].
fn float_loop(case: &str, f: extern "C" fn(f32) -> f32, input: impl Fn(f32) -> f32) -> u64 {
    let f = black_box(f);
    let mut x = -20.0f32;
    bench::measure(case, CALLS, || {
        black_box(f(black_box(input(x))));
        x = if x >= 0.0 { -20.0 } else { x + 0.003 };
    })
}

/// Instructions per call (x100) of a loop of divisions by `f`.
fn divide_loop(case: &str, f: unsafe extern "C" fn(f32, f32) -> f32) -> u64 {
    let f = black_box(f);
    let mut a = 1.0f32;
    bench::measure(case, CALLS, || {
        // SAFETY: `f` is a division of two floats, or `nothing2`; any floats are valid.
        black_box(unsafe { f(black_box(a), black_box(3.7)) });
        a += 0.25;
    })
}

fn accessor_case(case: &str, f: unsafe extern "C" fn(*const ArgTensor) -> u32, desc: &ArgTensor, harness: u64) {
    let f = black_box(f);
    let per_call = bench::measure(case, CALLS, || {
        // SAFETY: `desc` is a valid descriptor for the whole loop.
        black_box(unsafe { f(black_box(desc)) });
    });
    row(case, per_call, harness);
}

/// Instructions per call (x100) of a loop of `f(desc, 1)`: `customop_tensor_dim` or
/// its harness.
fn dim_loop(case: &str, f: unsafe extern "C" fn(*const ArgTensor, u32) -> u32, desc: &ArgTensor) -> u64 {
    let f = black_box(f);
    bench::measure(case, CALLS, || {
        // SAFETY: `desc` is a valid descriptor for the whole loop.
        black_box(unsafe { f(black_box(desc), black_box(1)) });
    })
}

/// The accessors' `HOT` rows on `desc`: `numel`, `dtype`, `rank` and `dim` (of
/// dimension 1), under the names `cases`.
fn accessor_cases(cases: [&str; 4], desc: &ArgTensor) {
    let harness = bench::measure("nothing_desc", CALLS, {
        let f = black_box(nothing_desc as extern "C" fn(*const ArgTensor) -> u32);
        move || {
            black_box(f(black_box(desc)));
        }
    });
    accessor_case(cases[0], customop_tensor_numel, desc, harness);
    accessor_case(cases[1], customop_tensor_dtype, desc, harness);
    accessor_case(cases[2], customop_tensor_rank, desc, harness);
    row(cases[3], dim_loop(cases[3], customop_tensor_dim, desc), dim_loop("nothing_dim", nothing_dim, desc));
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let float_harness = bench::measure("nothing", CALLS, {
        let f = black_box(nothing as extern "C" fn(f32) -> f32);
        move || {
            black_box(f(black_box(1.0)));
        }
    });
    println!("HOT nothing {float_harness} {}", NOTHING_OWN * 100);
    // `logf` on [0.5, 20.5]; `tanhf` on [-4, 0], where it is neither linear nor
    // saturated.
    let (across, positive, tanh_range) = (|x: f32| x, |x: f32| 0.5 - x, |x: f32| 0.2 * x);
    float_case("expf", math::expf, across);
    float_case("libm_expf", libm_expf, across);
    float_case("logf", math::logf, positive);
    float_case("libm_logf", libm_logf, positive);
    float_case("tanhf", math::tanhf, tanh_range);
    float_case("libm_tanhf", libm_tanhf, tanh_range);
    row("divsf3", divide_loop("divsf3", __divsf3), divide_loop("nothing2", nothing2));

    // A descriptor of the kernel's own.
    let desc = ArgTensor::hbm_tensor(Dtype::Float32, &[64, 1024], 0x6200_0000).expect("a valid descriptor");
    accessor_cases(["numel", "dtype", "rank", "dim"], &desc);

    // A copy the runtime handed out (`customop_next_tensor`): the accessors' fast path.
    // Its window maps 4 KiB of the job tensor area, unused by a firmware boot.
    const FRAMEWORK: u64 = 0x7f00_0000_0000;
    if configure(&[TranslateRecord::window(FRAMEWORK, 4096, 0x6200_0000)]).is_err() {
        println!("HOT_ERROR configure");
        return 1;
    }
    let args = [ArgTensor::hbm_tensor(Dtype::Float32, &[32, 32], FRAMEWORK).expect("a valid descriptor")];
    let mut output = args[0];
    // SAFETY: `args` and `output` live until the end of `main`, past every use.
    unsafe { customop_set_invocation(args.as_ptr(), 1, &mut output) };
    customop_setup(false);
    // SAFETY: null, or the runtime's copy, valid until the next setup.
    let Some(handed) = (unsafe { customop_next_tensor().as_ref() }) else {
        println!("HOT_ERROR no handed-out descriptor");
        return 1;
    };
    accessor_cases(["numel_handed", "dtype_handed", "rank_handed", "dim_handed"], handed);
    0
}
