//! c_kernel's C kernels on the simulated device against the host reference
//! `x * factor`.

use neuroncustomop_host::array::{Array, Dtype};
use neuroncustomop_host::compare::{Tolerance, compare};
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Library, Options, Output, describe};
use neuroncustomop_host::testing::{Check, Kind, Shapes, Strategy, calls};
use std::sync::OnceLock;

fn c_kernel() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| Library::load(env!("CARGO_MANIFEST_DIR")).unwrap_or_else(|e| panic!("{}", describe(&e))))
}

fn check(kernel: &str, shape: Vec<usize>, cores: usize, seed: u64) {
    let x = generate(Dtype::Float32, shape, Distribution::Uniform { low: -100.0, high: 100.0 }, seed);
    let factor = -2.75f32;
    let options = Options { cores, ..Options::default() };
    let call = c_kernel().call_with(kernel, &[Arg::Tensor(x.clone()), Arg::Float(factor)], Output::Like(0), &options);
    let call = call.unwrap().check().unwrap_or_else(|failed| panic!("{failed}"));
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v * factor).collect();
    let want = Array::from_vec(x.shape().to_vec(), want).unwrap();
    compare(&call.output, &want, Tolerance::VALUE).unwrap_or_else(|mismatch| panic!("{kernel}: {mismatch}"));
}

#[test]
fn one_core_matches_the_host() {
    check("scale", vec![3, 1001], 1, 15);
}

#[test]
fn eight_cores_match_the_host() {
    check("scale_multicore", vec![5003], 8, 16);
    check("scale_multicore", vec![6], 8, 17); // fewer elements than cores
}

#[test]
fn an_output_of_another_size_fails_with_the_kernels_code() {
    // The kernel reads the shapes with customop_tensor_numel and reports its code with
    // customop_fail.
    let x = generate(Dtype::Float32, vec![10], Distribution::Range, 0);
    let nine = Output::Shape { dtype: Dtype::Float32, shape: vec![9] };
    let call = c_kernel().call("scale", &[Arg::Tensor(x), Arg::Float(1.0)], nine).unwrap();
    assert_eq!(call.status.kernel_code(), Some(1), "{}", call.status);
}

/// `x * factor` in float32, the kernels' arithmetic.
fn scaled(args: &[Arg]) -> Array {
    let (Arg::Tensor(x), Arg::Float(factor)) = (&args[0], &args[1]) else { panic!("scale takes a tensor and a float") };
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v * factor).collect();
    Array::from_vec(x.shape().to_vec(), want).unwrap()
}

/// Property tests: generated shapes biased to the edges, values and factors of every
/// class (±0, subnormals, ±inf, NaN), a failure shrunk to its smallest call.
fn generated(cores: usize) -> impl Strategy<Value = Vec<Arg>> {
    let bounds = Shapes { max_elements: 1 << 13, cores, ..Shapes::default() };
    calls(&[Kind::Tensor, Kind::Float], &[Dtype::Float32], bounds)
}

#[test]
fn one_core_matches_the_host_on_generated_calls() {
    Check::new(c_kernel(), "scale").run(generated(1), 12, scaled).unwrap_or_else(|failed| panic!("{failed}"));
}

#[test]
fn eight_cores_match_the_host_on_generated_calls() {
    let mut check = Check::new(c_kernel(), "scale_multicore");
    check.options.cores = 8;
    check.run(generated(8), 12, scaled).unwrap_or_else(|failed| panic!("{failed}"));
}
