//! Benchmark of the memory checks (docs/PERFORMANCE.md, "The memory checks"): the wall
//! time of a call with and without them, both without `-icount` (each core a host
//! thread; the plugin counts either way), on `cxx_relu_multicore` (65,000 floats, 8
//! cores) and a row softmax of [64, 1024] with its rows split over 8 cores (the checks
//! test's C kernel `softmax_rows`, qemu/tests/checks_c); and the instruction counts of
//! both (with the runtime's C memcpy: a wait for the DMA engine polls for as long as the
//! host takes), which differ only by the red zones a checked call gives each heap block
//! in `malloc` and `free` (a few instructions an allocation: the `checks` test
//! `a_kernel_using_its_heap_counts_within_8_instructions_per_allocation_checked_and_unchecked`).
//!
//! ```sh
//! cargo run --release -p neuroncustomop-sim --example checks_bench
//! ```

use neuroncustomop::data_transfer::NeuronMemcpyMethod;
use neuroncustomop_host::array::Dtype;
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Library, Options, Output, describe};
use std::time::Duration;

/// Timed calls per mode, after one that boots the device; the best is kept (the
/// machine is shared).
const CALLS: usize = 5;

/// The fastest of [`CALLS`] calls and the per-core counts of the last.
fn best(library: &Library, kernel: &str, args: &[Arg], checked: bool) -> (Duration, Vec<u64>) {
    // The C memcpy: a core waiting for the DMA engine polls for as long as the host's
    // threads take, so its count would differ from call to call, checked or not.
    let options = Options {
        cores: 8,
        count_instructions: false,
        checked,
        memcpy: NeuronMemcpyMethod::CMemcpy,
        ..Options::default()
    };
    let run = || library.call_with(kernel, args, Output::Like(0), &options).expect("call").check().expect("checks");
    run();
    let mut fastest = Duration::MAX;
    let mut counts = Vec::new();
    for _ in 0..CALLS {
        let call = run();
        fastest = fastest.min(call.wall);
        counts = call.instructions;
    }
    (fastest, counts)
}

fn main() {
    let cases = [
        ("cxx_relu_multicore", "relu_forward", vec![65_000]),
        (concat!(env!("CARGO_MANIFEST_DIR"), "/tests/checks_c"), "softmax_rows", vec![64, 1024]),
    ];
    for (example, kernel, shape) in cases {
        let library = if example.contains('/') { Library::load(example) } else { Library::example(example) };
        let library = library.unwrap_or_else(|e| panic!("{}", describe(&e)));
        let example = library.name().to_string();
        let x = generate(Dtype::Float32, shape.clone(), Distribution::Uniform { low: -4.0, high: 4.0 }, 1);
        let args = [Arg::Tensor(x)];
        let (unchecked, plain) = best(&library, kernel, &args, false);
        let (checked, counted) = best(&library, kernel, &args, true);
        let slowest = |counts: &[u64]| counts.iter().copied().max().unwrap_or(0);
        println!(
            "{example}/{kernel} {shape:?} on 8 cores: unchecked {:.1} ms, checked {:.1} ms ({:.2}x); {} instructions on the slowest core unchecked, {} checked (the red zones' {:+})",
            unchecked.as_secs_f64() * 1e3,
            checked.as_secs_f64() * 1e3,
            checked.as_secs_f64() / unchecked.as_secs_f64(),
            slowest(&plain),
            slowest(&counted),
            slowest(&counted) as i64 - slowest(&plain) as i64,
        );
    }
}
