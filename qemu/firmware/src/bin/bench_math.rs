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

/// The harness of a one-float function: a call that does nothing.
#[inline(never)]
extern "C" fn nothing(x: f32) -> f32 {
    x
}

/// The harness of [`logf_positive`]: the same shift and call, of [`nothing`].
#[inline(never)]
extern "C" fn shifted_nothing(x: f32) -> f32 {
    nothing(0.5 - x)
}

/// The harness of [`tanhf_scaled`].
#[inline(never)]
extern "C" fn scaled_nothing(x: f32) -> f32 {
    nothing(0.2 * x)
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

/// `logf` on [0.5, 20.5] (the loop's inputs, shifted; [`shifted_nothing`] is its
/// harness).
#[inline(never)]
extern "C" fn logf_positive(x: f32) -> f32 {
    math::logf(0.5 - x)
}

/// The `libm` crate's `logf` on the same inputs.
#[inline(never)]
extern "C" fn libm_logf_positive(x: f32) -> f32 {
    libm::logf(0.5 - x)
}

/// `tanhf` on [-4, 0], where it is neither linear nor saturated (the loop's inputs,
/// scaled; [`scaled_nothing`] is its harness).
#[inline(never)]
extern "C" fn tanhf_scaled(x: f32) -> f32 {
    math::tanhf(0.2 * x)
}

/// The `libm` crate's `tanhf` on the same inputs.
#[inline(never)]
extern "C" fn libm_tanhf_scaled(x: f32) -> f32 {
    libm::tanhf(0.2 * x)
}

/// Prints a `HOT` row: per call, and the function's own instructions.
fn row(case: &str, per_call: u64, harness: u64) {
    let own = (per_call + NOTHING_OWN * 100).saturating_sub(harness);
    println!("HOT {case} {per_call} {own}");
}

fn float_case(case: &str, f: extern "C" fn(f32) -> f32, harness: u64) {
    let per_call = float_loop(case, f);
    row(case, per_call, harness);
}

/// Instructions per call (x100) of the float cases' loop around `f`.
fn float_loop(case: &str, f: extern "C" fn(f32) -> f32) -> u64 {
    let f = black_box(f);
    // Inputs across softmax's range, e^(x - max) for x - max in [-20, 0].
    let mut x = -20.0f32;
    let per_call = bench::measure(case, CALLS, || {
        black_box(f(black_box(x)));
        x = if x >= 0.0 { -20.0 } else { x + 0.003 };
    });
    per_call
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
    // The harness of the float cases includes the input's update, and the shift or
    // scaling of `logf`'s and `tanhf`'s; each is measured the same way.
    let float_harness_loop = float_loop("nothing_loop", nothing);
    let shifted_harness = float_loop("shifted_nothing", shifted_nothing);
    let scaled_harness = float_loop("scaled_nothing", scaled_nothing);
    println!("HOT nothing {float_harness} {}", NOTHING_OWN * 100);
    float_case("expf", math::expf, float_harness_loop);
    float_case("libm_expf", libm_expf, float_harness_loop);
    float_case("logf", logf_positive, shifted_harness);
    float_case("libm_logf", libm_logf_positive, shifted_harness);
    float_case("tanhf", tanhf_scaled, scaled_harness);
    float_case("libm_tanhf", libm_tanhf_scaled, scaled_harness);

    let mut a = 1.0f32;
    let divide_harness = bench::measure("nothing2", CALLS, || {
        black_box(nothing2(black_box(a), black_box(3.7)));
        a += 0.25;
    });
    divide_case("divsf3", __divsf3, divide_harness);

    // A descriptor of the kernel's own: the accessors check all 48 bytes.
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
    accessor_case("numel_handed", customop_tensor_numel, handed, accessor_harness);
    accessor_case("dtype_handed", customop_tensor_dtype, handed, accessor_harness);
    accessor_case("rank_handed", customop_tensor_rank, handed, accessor_harness);
    accessor_case("dim_handed", dim_1, handed, accessor_harness);
    0
}
