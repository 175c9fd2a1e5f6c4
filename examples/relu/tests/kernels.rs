//! relu's kernels on the simulated device against the host reference `max(x, 0)`.

use neuroncustomop_host::array::{Array, Dtype};
use neuroncustomop_host::compare::{Tolerance, compare};
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Library, Options, Output, describe};
use neuroncustomop_host::testing::{Check, Kind, Shapes, Strategy, calls};
use std::sync::OnceLock;

fn relu() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| Library::load(env!("CARGO_MANIFEST_DIR")).unwrap_or_else(|e| panic!("{}", describe(&e))))
}

/// Calls `kernel` on `cores` cores with a random tensor of `shape`, and checks it.
fn check(kernel: &str, shape: Vec<usize>, cores: usize, seed: u64) {
    let x = generate(Dtype::Float32, shape, Distribution::Uniform { low: -100.0, high: 100.0 }, seed);
    let options = Options { cores, ..Options::default() };
    let call = relu().call_with(kernel, &[Arg::Tensor(x.clone())], Output::Like(0), &options).unwrap();
    let call = call.check().unwrap_or_else(|failed| panic!("{failed}"));
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v.max(0.0)).collect();
    let want = Array::from_vec(x.shape().to_vec(), want).unwrap();
    compare(&call.output, &want, Tolerance::VALUE).unwrap_or_else(|mismatch| panic!("{kernel}: {mismatch}"));
    println!("{kernel} on {cores} core(s), {:?}: instructions {:?}", x.shape(), call.instructions);
}

// 5,003 elements: not a multiple of 8 cores or of the 1,024-element TCM chunk.
#[test]
fn element_access_matches_the_host() {
    check("relu", vec![5003], 1, 1);
}

#[test]
fn the_tcm_accessor_matches_the_host() {
    check("relu_tcm", vec![3, 1001], 1, 2);
}

#[test]
fn eight_cores_match_the_host() {
    check("relu_multicore", vec![5003], 8, 3);
    check("relu_multicore", vec![5], 8, 4); // fewer elements than cores
}

/// `max(x, 0)` as the kernels compute it: `f32::max` keeps the number, so NaN gives 0.
fn relu_of(args: &[Arg]) -> Array {
    let Arg::Tensor(x) = &args[0] else { panic!("relu takes a tensor") };
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v.max(0.0)).collect();
    Array::from_vec(x.shape().to_vec(), want).unwrap()
}

/// Property tests: generated shapes (1, primes, multiples of 8 and one either side,
/// the 1,024-element TCM chunk and one either side, ...) and values (±0, subnormals,
/// ±inf, NaN), a failure shrunk to its smallest call. Few cases: they run in CI.
fn generated(cores: usize) -> impl Strategy<Value = Vec<Arg>> {
    let bounds = Shapes { max_elements: 1 << 13, cores, ..Shapes::default() };
    calls(&[Kind::Tensor], &[Dtype::Float32], bounds)
}

#[test]
fn the_tcm_accessor_matches_the_host_on_generated_calls() {
    Check::new(relu(), "relu_tcm").run(generated(1), 12, relu_of).unwrap_or_else(|failed| panic!("{failed}"));
}

#[test]
fn eight_cores_match_the_host_on_generated_calls() {
    let mut check = Check::new(relu(), "relu_multicore");
    check.options.cores = 8;
    check.run(generated(8), 12, relu_of).unwrap_or_else(|failed| panic!("{failed}"));
}
