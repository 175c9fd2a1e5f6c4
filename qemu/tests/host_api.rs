//! The host API (`neuroncustomop_host::library`) on the built-in examples under QEMU:
//! every argument kind reaches the kernel, the output and the statuses come back, and
//! every kind of bad call is a named error.

use neuroncustomop::wrapper_api::{Dtype, Status};
use neuroncustomop_host::array::Array;
use neuroncustomop_host::compare::{Mismatch, Tolerance, compare};
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, CallError, KernelStatus, Library, Options, Output};
use std::sync::OnceLock;

fn c_kernel() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| Library::example("c_kernel").unwrap_or_else(|e| panic!("packaging c_kernel: {e}")))
}

#[test]
fn a_call_returns_the_output_status_and_counts() {
    let x = generate(Dtype::Float32, vec![3, 7], Distribution::Uniform { low: -5.0, high: 5.0 }, 1);
    let call = c_kernel().call("scale", &[Arg::Tensor(x.clone()), Arg::Float(-1.5)], Output::Like(0)).unwrap();
    let call = call.check().unwrap();
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v * -1.5).collect();
    compare(&call.output, &Array::from_vec(vec![3, 7], want).unwrap(), Tolerance::Exact).unwrap();
    assert_eq!((call.status, call.statuses.len(), call.stdout.len()), (KernelStatus(0), 1, 1));
    assert!(call.instructions[0] > 21, "{:?}", call.instructions);

    let eight = Options { cores: 8, ..Options::default() };
    let call =
        c_kernel().call_with("scale_multicore", &[Arg::Tensor(x.clone()), Arg::Float(2.0)], Output::Like(0), &eight);
    let call = call.unwrap().check().unwrap();
    assert_eq!((call.statuses.len(), call.instructions.len()), (8, 8));
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v * 2.0).collect();
    assert_eq!(call.output.to_vec::<f32>().unwrap(), want);
}

#[test]
fn bad_calls_are_named_errors() {
    let x = Array::from_vec(vec![4], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let library = c_kernel();
    let unknown = library.call("scal", &[], Output::Like(0)).unwrap_err();
    assert_eq!(unknown.to_string(), "library c_kernel has no kernel scal; it has scale, scale_multicore");

    let like_scalar = library.call("scale", &[Arg::Float(1.0)], Output::Like(0)).unwrap_err();
    assert_eq!(like_scalar.to_string(), "the output is to be like argument 0, but that is a float");

    let huge = Output::Shape { dtype: Dtype::Float32, shape: vec![64, 65535, 9] };
    assert!(matches!(
        library.call("scale", &[Arg::Tensor(x.clone()), Arg::Float(1.0)], huge),
        Err(CallError::DoesNotFit { .. })
    ));

    // Too few arguments, a scalar of the wrong kind, and the kernel's own failure
    // (the output's element count differs): each the device's named status.
    let status = |args: &[Arg], output: Output| library.call("scale", args, output).unwrap().check().unwrap_err();
    let few = status(&[Arg::Tensor(x.clone())], Output::Like(0));
    assert_eq!(few.status, KernelStatus(Status::NO_MORE_ARGS.0), "{few}");
    // The runtime names the argument: scale pulls a tensor, then a float.
    let few_text = "kernel scale failed on core 0: 0x6 NO_MORE_ARGS: argument 1: pulled as float, but 1 argument was \
                    passed (argument 0)";
    assert!(few.to_string().starts_with(few_text), "{few}");
    let kind = status(&[Arg::Tensor(x.clone()), Arg::Int(2)], Output::Like(0));
    assert_eq!(kind.status, KernelStatus(Status::SCALAR_KIND_MISMATCH.0), "{kind}");
    let failure = kind.arg_failure.expect("the runtime names the argument");
    assert_eq!((failure.argument, failure.pulled, failure.passed), (1, 4, 2));
    assert_eq!(
        kind.to_string(),
        "kernel scale failed on core 0: 0x9 SCALAR_KIND_MISMATCH: argument 1: pulled as float, passed as int",
        "nothing printed: the runtime's line is not the kernel's output"
    );
    let shape =
        status(&[Arg::Tensor(x.clone()), Arg::Float(2.0)], Output::Shape { dtype: Dtype::Float32, shape: vec![3] });
    assert_eq!(shape.status.kernel_code(), Some(1), "{shape}");
    assert_eq!(shape.arg_failure, None, "the kernel's own failure is no argument's");
}

#[test]
fn elements_the_kernel_never_wrote_are_named() {
    // relu_multicore on one core: core 0 writes its eighth of the output, no more.
    let relu = Library::example("relu").unwrap_or_else(|e| panic!("packaging relu: {e}"));
    let x = Array::from_vec(vec![16], (0..16).map(|i| i as f32).collect()).unwrap();
    let call = relu.call("relu_multicore", &[Arg::Tensor(x.clone())], Output::Like(0)).unwrap();
    let failed = call.check().unwrap_err();
    assert_eq!(
        failed.to_string(),
        "kernel relu_multicore failed: 14 of 16 output elements were never written; cores 1-7 wrote \
         nothing: was this kernel written for 8 cores? (`--cores 8`, or a multicore library: \
         `\"multicore\": true` in customop.json, `multicore = true` under \
         [package.metadata.neuroncustomop] in Cargo.toml)"
    );
    // Declared partial, the same output passes the check and the comparison names the elements.
    let partial = Options { partial_output: true, ..Options::default() };
    let call = relu.call_with("relu_multicore", &[Arg::Tensor(x.clone())], Output::Like(0), &partial).unwrap();
    let call = call.check().unwrap();
    let Err(Mismatch::Values(report)) = compare(&call.output, &x, Tolerance::NUMPY) else { panic!("no mismatch") };
    assert_eq!((report.bad, report.unwritten), (14, 14), "{report}");
    assert_eq!(report.first[0].position, [2]);
    assert!(report.to_string().contains("at [2]: never written, want 2.0"), "{report}");
}

/// A library declared multicore (sort's `Cargo.toml`, cxx_relu_multicore's
/// `customop.json`) defaults to 8 cores, others to 1; `ncop run` calls sort's kernel on
/// all 8 with no `--cores`, and its rows (more than cores) come back sorted.
#[test]
fn a_library_declared_multicore_runs_on_8_cores_without_being_told() {
    let sort = Library::example("sort").unwrap_or_else(|e| panic!("packaging sort: {e}"));
    let defaults = ["relu", "cxx_relu_multicore"].map(|name| Library::example(name).unwrap().default_cores());
    assert_eq!((sort.default_cores(), defaults), (8, [1, 8]));
    let dir = std::env::temp_dir().join(format!("host-api-multicore-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sort");
    let args = ["run", "sort_ascending", "--lib", lib, "--arg", "gen:float32:21x37", "--save-inputs", "in"];
    let args = args.into_iter().chain(["--save", "out.npy"]);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ncop")).current_dir(&dir).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success() && text.contains("sort_ascending(") && text.contains(" on 8 core(s)"), "{text}");
    let x = neuroncustomop_host::npy::read(&dir.join("in/arg0.npy")).unwrap().to_vec::<f32>().unwrap();
    let got = neuroncustomop_host::npy::read(&dir.join("out.npy")).unwrap().to_vec::<f32>().unwrap();
    let want: Vec<f32> = x
        .chunks(37)
        .flat_map(|row| {
            let mut row = row.to_vec();
            row.sort_by(f32::total_cmp);
            row
        })
        .collect();
    assert_eq!(got, want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A C++ accessor's `[]` indexes in 32 bits (`element_offset` in torch.h): with the torch
/// API's `int64_t` index times stride, each `[]` of a 2-D accessor was a `__muldi3` call.
/// `int_ops` over 256 elements (eleven rows through `accessor<int32_t, 2>`): 657,901
/// instructions before, 389,808 after; the guard sits between.
#[test]
fn cxx_accessors_index_without_64_bit_multiplies() {
    let ops = Library::example("cxx_ops").unwrap_or_else(|e| panic!("packaging cxx_ops: {e}"));
    let k: Vec<i32> = (-128..128).collect();
    let m: Vec<i32> = (0..256).collect();
    let args = [
        Arg::Tensor(Array::from_vec(vec![256], k.clone()).unwrap()),
        Arg::Tensor(Array::from_vec(vec![256], m).unwrap()),
    ];
    let output = ops.output_of("int_ops", &args).unwrap().expect("cxx_ops has shape functions");
    let call = ops.call("int_ops", &args, output).unwrap().check().unwrap();
    let rows = call.output.to_vec::<i32>().unwrap();
    assert_eq!(call.output.shape(), [11, 256]);
    assert_eq!(rows[256..512], k.iter().map(|v| v + 5).collect::<Vec<_>>()[..], "row 1: k + 5");
    assert!(call.instructions[0] < 450_000, "int_ops took {} instructions", call.instructions[0]);
}
