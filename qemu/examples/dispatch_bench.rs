//! Benchmark of the persistent device session (docs/PERFORMANCE.md, "Device session"),
//! through the host API op authors use: loads the `relu` example, and times warm
//! calls of a 65,536-element single-core relu, each checked against the host
//! reference.
//!
//! ```sh
//! cargo run --release -p neuroncustomop-sim --example dispatch_bench [-- --threads | --host]
//! ```
//!
//! `--threads` runs each core on a host thread of its own (no `-icount`, QEMU's MTTCG);
//! `--host` runs the calls on the host tier (`Target::Host`) instead of the device.

use neuroncustomop_host::array::{Array, Dtype};
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Library, Options, Output, Target};
use std::time::Instant;

fn main() {
    let count_instructions = !std::env::args().any(|arg| arg == "--threads");
    let target = if std::env::args().any(|arg| arg == "--host") { Target::Host } else { Target::Device };
    // For the host tier, only the host build (no device package).
    let loading = Instant::now();
    let library = Library::example_for("relu", target).expect("build relu");
    println!("loading (the build, and for the host tier its kernels) {:.3} s", loading.elapsed().as_secs_f64());
    let x = generate(Dtype::Float32, vec![2, 32_768], Distribution::Uniform { low: -100.0, high: 100.0 }, 1);
    let want: Vec<f32> = x.to_vec::<f32>().expect("f32").iter().map(|v| v.max(0.0)).collect();
    let want = Array::from_vec(x.shape().to_vec(), want).expect("shape");
    let options = Options { count_instructions, target, ..Options::default() };
    let args = [Arg::Tensor(x)];

    let call = || {
        let started = Instant::now();
        let call = library.call_with("relu", &args, Output::Like(0), &options).expect("call").check().expect("status");
        let wall = started.elapsed();
        assert_eq!(call.output, want, "relu's output");
        (wall, call.instructions)
    };
    // The first call boots the device (or builds the host library and starts its
    // loader) and enters the library.
    let (first, instructions) = call();
    let started = Instant::now();
    let calls = 100;
    let warm: Vec<_> = (0..calls).map(|_| call().0).collect();
    let total = started.elapsed();
    let best = warm.iter().min().expect("calls");
    println!("first call {:.3} s (boot and entry included); instructions {instructions:?}", first.as_secs_f64());
    println!(
        "{calls} warm calls: {:.3} s in all, {:.3} s mean, {:.3} s best (count_instructions: {count_instructions}, {target:?})",
        total.as_secs_f64(),
        total.as_secs_f64() / calls as f64,
        best.as_secs_f64()
    );
}
