//! Benchmark of the kernels' hot math and C accessors on the device: guest instructions
//! per call of `expf` (the FPU one, and the `libm` crate's that it replaced), `logf`
//! and `tanhf` (still the `libm` crate's), f32
//! division (`__divsf3` on the FPU's divide sequence), and `customop_tensor_numel` and
//! the other C shape accessors, next to an empty call of the same signature (the
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
use neuroncustomop::wrapper_api::{
    ArgTensor, Dtype, customop_tensor_dim, customop_tensor_dtype, customop_tensor_numel, customop_tensor_rank,
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

/// The harness of a one-float function: a call that does nothing.
#[inline(never)]
extern "C" fn nothing(x: f32) -> f32 {
    x
}

/// The harness of a two-float function.
#[inline(never)]
extern "C" fn nothing2(x: f32, _: f32) -> f32 {
    x
}

/// The harness of an accessor.
#[inline(never)]
extern "C" fn nothing_desc(_: *const ArgTensor) -> u32 {
    0
}

/// The `libm` crate's `expf`, what the kernels' `expf` was.
#[inline(never)]
extern "C" fn libm_expf(x: f32) -> f32 {
    libm::expf(x)
}

/// `logf` on [0.5, 20.5] (the loop's inputs, shifted: two more instructions).
#[inline(never)]
extern "C" fn logf_positive(x: f32) -> f32 {
    math::logf(0.5 - x)
}

/// `tanhf` on [-4, 0], where it is neither linear nor saturated (one more
/// instruction, the scaling).
#[inline(never)]
extern "C" fn tanhf_scaled(x: f32) -> f32 {
    math::tanhf(0.2 * x)
}

/// Prints a `HOT` row: per call, and the function's own instructions.
fn row(case: &str, per_call: u64, harness: u64) {
    let own = (per_call + NOTHING_OWN * 100).saturating_sub(harness);
    println!("HOT {case} {per_call} {own}");
}

fn float_case(case: &str, f: extern "C" fn(f32) -> f32, harness: u64) {
    let f = black_box(f);
    // Inputs across softmax's range, e^(x - max) for x - max in [-20, 0].
    let mut x = -20.0f32;
    let per_call = bench::measure(case, CALLS, || {
        black_box(f(black_box(x)));
        x = if x >= 0.0 { -20.0 } else { x + 0.003 };
    });
    row(case, per_call, harness);
}

fn divide_case(case: &str, f: unsafe extern "C" fn(f32, f32) -> f32, harness: u64) {
    let f = black_box(f);
    let mut a = 1.0f32;
    let per_call = bench::measure(case, CALLS, || {
        // SAFETY: `f` is a division of two floats; any floats are valid.
        black_box(unsafe { f(black_box(a), black_box(3.7)) });
        a += 0.25;
    });
    row(case, per_call, harness);
}

fn accessor_case(case: &str, f: unsafe extern "C" fn(*const ArgTensor) -> u32, desc: &ArgTensor, harness: u64) {
    let f = black_box(f);
    let per_call = bench::measure(case, CALLS, || {
        // SAFETY: `desc` is a valid descriptor for the whole loop.
        black_box(unsafe { f(black_box(desc)) });
    });
    row(case, per_call, harness);
}

/// `customop_tensor_dim(desc, 1)` with an accessor's signature.
#[inline(never)]
unsafe extern "C" fn dim_1(desc: *const ArgTensor) -> u32 {
    // SAFETY: forwarded.
    unsafe { customop_tensor_dim(desc, 1) }
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let float_harness = bench::measure("nothing", CALLS, {
        let f = black_box(nothing as extern "C" fn(f32) -> f32);
        move || {
            black_box(f(black_box(1.0)));
        }
    });
    // The harness of the float cases includes the input's update; measure it the same.
    let mut x = -20.0f32;
    let float_harness_loop = bench::measure("nothing_loop", CALLS, || {
        black_box(nothing(black_box(x)));
        x = if x >= 0.0 { -20.0 } else { x + 0.003 };
    });
    println!("HOT nothing {float_harness} {}", NOTHING_OWN * 100);
    float_case("expf", math::expf, float_harness_loop);
    float_case("libm_expf", libm_expf, float_harness_loop);
    float_case("logf", logf_positive, float_harness_loop);
    float_case("tanhf", tanhf_scaled, float_harness_loop);

    let mut a = 1.0f32;
    let divide_harness = bench::measure("nothing2", CALLS, || {
        black_box(nothing2(black_box(a), black_box(3.7)));
        a += 0.25;
    });
    divide_case("divsf3", __divsf3, divide_harness);

    let desc = ArgTensor::hbm_tensor(Dtype::Float32, &[64, 1024], 0x6200_0000).expect("a valid descriptor");
    let accessor_harness = bench::measure("nothing_desc", CALLS, {
        let f = black_box(nothing_desc as extern "C" fn(*const ArgTensor) -> u32);
        let desc = &desc;
        move || {
            black_box(f(black_box(desc)));
        }
    });
    accessor_case("numel", customop_tensor_numel, &desc, accessor_harness);
    accessor_case("dtype", customop_tensor_dtype, &desc, accessor_harness);
    accessor_case("rank", customop_tensor_rank, &desc, accessor_harness);
    accessor_case("dim", dim_1, &desc, accessor_harness);
    0
}
