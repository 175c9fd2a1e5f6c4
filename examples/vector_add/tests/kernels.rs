//! vector_add's kernels on the simulated device against the host reference `a + b`.

use neuroncustomop_host::array::{Array, Dtype};
use neuroncustomop_host::compare::{Tolerance, compare};
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Library, Options, Output, describe};
use neuroncustomop_host::testing::{Check, Kind, Shapes, Strategy, calls};
use std::sync::OnceLock;

fn vector_add() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| Library::load(env!("CARGO_MANIFEST_DIR")).unwrap_or_else(|e| panic!("{}", describe(&e))))
}

fn uniform(shape: Vec<usize>, seed: u64) -> Array {
    generate(Dtype::Float32, shape, Distribution::Uniform { low: -100.0, high: 100.0 }, seed)
}

fn check(kernel: &str, shape: Vec<usize>, cores: usize, seed: u64) {
    let (a, b) = (uniform(shape.clone(), seed), uniform(shape, seed + 100));
    let options = Options { cores, ..Options::default() };
    let args = [Arg::Tensor(a.clone()), Arg::Tensor(b.clone())];
    let call = vector_add().call_with(kernel, &args, Output::Like(0), &options).unwrap();
    let call = call.check().unwrap_or_else(|failed| panic!("{failed}"));
    let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    let want = Array::from_vec(call.output.shape().to_vec(), a.iter().zip(&b).map(|(x, y)| x + y).collect()).unwrap();
    compare(&call.output, &want, Tolerance::VALUE).unwrap_or_else(|mismatch| panic!("{kernel}: {mismatch}"));
}

#[test]
fn one_core_matches_the_host() {
    check("vector_add", vec![4, 999], 1, 4);
}

#[test]
fn eight_cores_match_the_host() {
    check("vector_add_multicore", vec![5003], 8, 5);
    check("vector_add_multicore", vec![3], 8, 6); // fewer elements than cores
}

#[test]
fn inputs_of_other_shapes_fail_with_the_kernels_code() {
    let args = [Arg::Tensor(uniform(vec![10], 17)), Arg::Tensor(uniform(vec![11], 18))];
    let call = vector_add().call("vector_add", &args, Output::Like(0)).unwrap();
    assert_eq!(call.status.kernel_code(), Some(1), "{}", call.status);
}

/// `a + b` in float32, the kernels' arithmetic.
fn sum_of(args: &[Arg]) -> Array {
    let (Arg::Tensor(a), Arg::Tensor(b)) = (&args[0], &args[1]) else { panic!("vector_add takes two tensors") };
    let (x, y) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    Array::from_vec(a.shape().to_vec(), x.iter().zip(&y).map(|(x, y)| x + y).collect()).unwrap()
}

/// Property tests: two tensors of one generated shape (biased to the edges), values
/// of every class, a failure shrunk to its smallest call.
fn generated(cores: usize) -> impl Strategy<Value = Vec<Arg>> {
    let bounds = Shapes { max_elements: 1 << 13, cores, ..Shapes::default() };
    calls(&[Kind::Tensor, Kind::Tensor], &[Dtype::Float32], bounds)
}

#[test]
fn one_core_matches_the_host_on_generated_calls() {
    Check::new(vector_add(), "vector_add").run(generated(1), 12, sum_of).unwrap_or_else(|failed| panic!("{failed}"));
}

#[test]
fn eight_cores_match_the_host_on_generated_calls() {
    let mut check = Check::new(vector_add(), "vector_add_multicore");
    check.options.cores = 8;
    check.run(generated(8), 12, sum_of).unwrap_or_else(|failed| panic!("{failed}"));
}
