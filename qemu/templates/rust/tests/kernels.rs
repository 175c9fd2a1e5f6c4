//! {{name}}'s kernels on the simulated device, checked against a host reference.
//! `cargo test` builds the device image and packages it first (the first build
//! compiles `core` and `alloc` for the device: a few minutes).

use neuroncustomop_host::array::{Array, Dtype};
use neuroncustomop_host::compare::{Tolerance, compare};
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Library, Output, describe};

#[test]
fn scale_matches_the_reference() {
    let library = Library::load(env!("CARGO_MANIFEST_DIR")).unwrap_or_else(|e| panic!("{}", describe(&e)));
    let x = generate(Dtype::Float32, vec![4, 100], Distribution::Normal { mean: 0.0, std: 10.0 }, 1);
    let factor = 0.5;
    let call = library.call("scale", &[Arg::Tensor(x.clone()), Arg::Float(factor)], Output::Like(0)).unwrap();
    let call = call.check().unwrap_or_else(|failed| panic!("{failed}"));
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v * factor).collect();
    let want = Array::from_vec(x.shape().to_vec(), want).unwrap();
    compare(&call.output, &want, Tolerance::Exact).unwrap_or_else(|mismatch| panic!("{mismatch}"));
    println!("scale: {:?} instructions", call.instructions);
}
