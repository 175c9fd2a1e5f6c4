//! C++ libraries written against the AWS torch API (`examples/cxx_*`): built by
//! `cargo sim package`, their output shapes from their own shape functions on the
//! host, run under QEMU and checked against host references; the misuse cases end their
//! op with a named status and leave the next op unharmed; the build's bad inputs are
//! refused with a message that says why; and a packaged library defines the runtime's
//! whole C++ support.

use neuroncustomop::start_exit::math::{cosf, expf, log2f, log10f, logf, powf, sinf, tanf};
use neuroncustomop::wrapper_api::{ArgTensor, Bf16, Dtype, F16, ScalarKind, Status};
use neuroncustomop_host::generate::Rng;
use neuroncustomop_machine::device::{self, Report};
use neuroncustomop_machine::job::{Job, Op};
use neuroncustomop_machine::toolchain::Toolchain;
use neuroncustomop_package::cxx::{self, Library, OutputShape, RUNTIME_SYMBOLS, ShapeArg};
use neuroncustomop_package::package::{Package, PackageError};
use neuroncustomop_wire::job::{OutputDump, hbm_scratch};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::packaged;

fn shape_driver(name: &str) -> PathBuf {
    let tools = Toolchain::locate().expect("the toolchain");
    let library = Library::open(&crate::common::checkout().join("examples").join(name)).expect("a C++ library");
    library.shape_driver_path(&tools)
}

/// One argument of an op on the device.
#[derive(Clone)]
enum Arg {
    Tensor(Dtype, Vec<u32>, Vec<u8>),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
}

impl Arg {
    fn f32_tensor(shape: &[u32], values: &[f32]) -> Self {
        Arg::Tensor(Dtype::Float32, shape.to_vec(), values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    fn for_shape(&self) -> ShapeArg {
        match self {
            Arg::Tensor(dtype, shape, _) => ShapeArg::Tensor(*dtype, shape.clone()),
            Arg::Int(v) => ShapeArg::Int(*v),
            Arg::Long(v) => ShapeArg::Long(*v),
            Arg::Float(v) => ShapeArg::Float(*v),
            Arg::Double(v) => ShapeArg::Double(*v),
        }
    }
}

/// Places bytes one after the other in the job's tensor area, 64-byte aligned.
struct Placer {
    next: u32,
}

impl Placer {
    fn place(&mut self, job: &mut Job, mut bytes: Vec<u8>) -> (u64, u32) {
        if bytes.is_empty() {
            bytes.push(0);
        }
        let offset = self.next;
        self.next = (offset + bytes.len() as u32).next_multiple_of(64);
        job.place(offset, bytes)
    }
}

/// Pushes op `function` with `args`; its output shape comes from the library's shape
/// function. The output starts as 0xFF bytes, so unwritten elements show.
fn push_op(
    job: &mut Job,
    placer: &mut Placer,
    package: &Package,
    driver: &Path,
    function: &str,
    args: &[Arg],
) -> OutputShape {
    let shape_args: Vec<ShapeArg> = args.iter().map(Arg::for_shape).collect();
    let output =
        cxx::output_shape(driver, function, &shape_args).unwrap_or_else(|e| panic!("shape of {function}: {e}"));
    let mut inputs = Vec::new();
    for arg in args {
        let descriptor = match arg {
            Arg::Tensor(dtype, shape, bytes) => {
                let (framework, _) = placer.place(job, bytes.clone());
                ArgTensor::hbm_tensor(*dtype, shape, framework).unwrap()
            }
            Arg::Int(v) => ArgTensor::hbm_scalar(ScalarKind::Int, placer.place(job, v.to_le_bytes().to_vec()).0),
            Arg::Long(v) => ArgTensor::hbm_scalar(ScalarKind::LongLong, placer.place(job, v.to_le_bytes().to_vec()).0),
            Arg::Float(v) => ArgTensor::hbm_scalar(ScalarKind::Float, placer.place(job, v.to_le_bytes().to_vec()).0),
            // The wire carries a C float; the entry widens it to the kernel's double.
            Arg::Double(v) => {
                ArgTensor::hbm_scalar(ScalarKind::Float, placer.place(job, (*v as f32).to_le_bytes().to_vec()).0)
            }
        };
        inputs.push(descriptor.to_bytes());
    }
    let dims: Vec<u32> = output.shape.iter().map(|&d| u32::from(d)).collect();
    let len = dims.iter().product::<u32>() as usize * output.dtype.size();
    let (framework, device) = placer.place(job, vec![0xFF; len]);
    let descriptor = ArgTensor::hbm_tensor(output.dtype, &dims, framework).unwrap();
    let id = package.function_id(function).unwrap_or_else(|| panic!("no kernel {function}"));
    let op = Op {
        function: id,
        output: Some(descriptor.to_bytes()),
        inputs,
        dump: OutputDump { address: device, len: len as u32 },
    };
    job.push(&op).unwrap();
    output
}

/// Runs `ops` of library `name` as one job on `cores` cores.
fn run(name: &str, cores: usize, ops: &[(&str, Vec<Arg>)]) -> (Report, Vec<OutputShape>) {
    run_configured(name, cores, ops, |_| ())
}

/// [`run`], with `configure` applied to the job first.
fn run_configured(
    name: &str,
    cores: usize,
    ops: &[(&str, Vec<Arg>)],
    configure: impl FnOnce(&mut Job),
) -> (Report, Vec<OutputShape>) {
    let package = packaged(name);
    let driver = shape_driver(name);
    let mut job = package.job(cores).unwrap();
    configure(&mut job);
    let mut placer = Placer { next: 0 };
    let shapes =
        ops.iter().map(|(function, args)| push_op(&mut job, &mut placer, &package, &driver, function, args)).collect();
    let report = device::run(&package.images, &job).expect("QEMU runs");
    assert!(report.done, "the loader did not finish:\n{}\n{}", report.outcome.stdout, report.outcome.stderr);
    (report, shapes)
}

fn statuses(report: &Report, op: u32) -> Vec<String> {
    report.cores.values().filter_map(|core| core.ops.get(op as usize)).map(|o| o.status.to_string()).collect()
}

fn f32s(report: &Report, op: u32) -> Vec<f32> {
    report.dumps[&op].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.uniform(-8.0, 8.0)).collect()
}

fn relu(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v.max(0.0)).collect()
}

#[test]
fn relu_forward_and_backward_with_element_accessors() {
    let (x, grad) = (random(1000, 1), random(1000, 2));
    let (report, shapes) = run(
        "cxx_relu",
        1,
        &[
            ("relu_forward", vec![Arg::f32_tensor(&[1000], &x)]),
            ("relu_backward", vec![Arg::f32_tensor(&[1000], &grad), Arg::f32_tensor(&[1000], &x)]),
        ],
    );
    assert_eq!(shapes[0], OutputShape { dtype: Dtype::Float32, shape: vec![1000] }, "from the shape function");
    assert_eq!((statuses(&report, 0), statuses(&report, 1)), (vec!["0".to_string()], vec!["0".to_string()]));
    assert_eq!(f32s(&report, 0), relu(&x));
    let backward: Vec<f32> = grad.iter().zip(&x).map(|(g, v)| if *v > 0.0 { *g } else { 0.0 }).collect();
    assert_eq!(f32s(&report, 1), backward);
}

#[test]
fn relu_forward_with_the_tcm_accessor() {
    // 3 x 1500 = 4500 elements: four 1024-element chunks and a partial one.
    let x = random(4500, 3);
    let (report, shapes) = run("cxx_relu_tcm", 1, &[("relu_forward", vec![Arg::f32_tensor(&[3, 1500], &x)])]);
    assert_eq!(shapes[0].shape, [3, 1500]);
    assert_eq!(statuses(&report, 0), ["0"]);
    assert_eq!(f32s(&report, 0), relu(&x));
}

#[test]
fn relu_forward_on_eight_cores_writes_the_output_through_get_dst_tensor() {
    let x = random(10_001, 4);
    let (report, _) = run("cxx_relu_multicore", 8, &[("relu_forward", vec![Arg::f32_tensor(&[10_001], &x)])]);
    assert_eq!(statuses(&report, 0), vec!["0"; 8]);
    assert_eq!(f32s(&report, 0), relu(&x));
}

#[test]
fn stream_accessors_add_and_the_coherence_policy_decides() {
    let (a, b) = (random(777, 5), random(777, 6));
    let both = || vec![Arg::f32_tensor(&[777], &a), Arg::f32_tensor(&[777], &b)];
    let (report, _) =
        run("cxx_stream", 1, &[("tensor_add", both()), ("copy_coherent", both()), ("copy_incoherent", both())]);
    assert_eq!(statuses(&report, 0), ["0"]);
    let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(f32s(&report, 0), sum);
    assert_eq!(statuses(&report, 1), [Status::INCOHERENT_ACCESS.0.to_string()], "COHERENT refuses");
    let printed = String::from_utf8_lossy(&report.core(0).stdout[&1].0).into_owned();
    assert!(printed.contains("a read stream opened while a write stream on the tensor is open"), "{printed}");
    assert_eq!(statuses(&report, 2), ["0"], "INCOHERENT_QUIET allows it");
    assert_eq!(f32s(&report, 2), a);
}

#[test]
fn int_and_float_scalars() {
    let x = random(300, 14);
    let (report, _) =
        run("cxx_scalars", 1, &[("scale_add", vec![Arg::f32_tensor(&[300], &x), Arg::Int(-7), Arg::Float(1.5)])]);
    assert_eq!(statuses(&report, 0), ["0"]);
    assert_eq!(f32s(&report, 0), x.iter().map(|v| v * 1.5 + -7.0).collect::<Vec<_>>());
}

#[test]
fn half_and_bfloat16_tensors_round_as_the_runtime_does() {
    // Normal values, ties, half subnormals, values past the largest finite half.
    let mut x = random(200, 15);
    x.extend([
        0.0,
        -0.0,
        1.0 + 1.0 / 2048.0,
        1.0 + 3.0 / 2048.0,
        6.0e-8,
        -3.0e-5,
        65504.0,
        65519.0,
        65520.0,
        -1.0e6,
        1.0e-40,
    ]);
    let n = x.len() as u32;
    let (report, shapes) = run(
        "cxx_scalars",
        1,
        &[("to_half", vec![Arg::f32_tensor(&[n], &x)]), ("to_bfloat16", vec![Arg::f32_tensor(&[n], &x)])],
    );
    assert_eq!((shapes[0].dtype, shapes[1].dtype), (Dtype::Float16, Dtype::Bfloat16));
    assert_eq!((statuses(&report, 0), statuses(&report, 1)), (vec!["0".to_string()], vec!["0".to_string()]));
    let u16s =
        |op: u32| report.dumps[&op].chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect::<Vec<_>>();
    assert_eq!(u16s(0), x.iter().map(|&v| F16::from_f32(v).to_bits()).collect::<Vec<_>>());
    // add_out computes x + 1 * 0 in float first: -0.0 becomes +0.0, as IEEE adds.
    assert_eq!(u16s(1), x.iter().map(|&v| Bf16::from_f32(v + 0.0).to_bits()).collect::<Vec<_>>());
}

#[test]
fn a_kernel_with_a_256_kib_stack_frame_runs_on_the_stack_size_it_asked_for() {
    let x = random(1000, 16);
    let (report, _) = run("cxx_scalars", 1, &[("stack_sum", vec![Arg::f32_tensor(&[1000], &x)])]);
    assert_eq!(statuses(&report, 0), ["0"]);
    let sum = (0..65_536).fold(0.0f32, |sum, i| sum + x[i % x.len()]);
    let [got, page] = f32s(&report, 0)[..] else { panic!("two floats") };
    assert_eq!(got, sum);
    // Core 0's HBM scratch, where the runtime takes the stack from (docs/simulation.md,
    // the memory map).
    let address = (page as u32) << 12;
    let (base, size) = hbm_scratch(0);
    assert!((base..base + size).contains(&address), "the array is at {address:#x}, not on the HBM stack");
}

#[test]
fn every_documented_elementwise_operation_matches_the_host() {
    let n = 257;
    let x = random(n, 17);
    let y: Vec<f32> = random(n, 18).iter().map(|v| v.abs() * 0.25 + 0.5).collect();
    let mut rng = Rng::new(19);
    let k: Vec<i32> = (0..n).map(|_| (rng.uniform(-1000.0, 1000.0)) as i32).collect();
    let m: Vec<i32> = (0..n).map(|_| (rng.uniform(1.0, 50.0)) as i32).collect();
    let ints = |v: &[i32]| Arg::Tensor(Dtype::Int32, vec![n as u32], v.iter().flat_map(|e| e.to_le_bytes()).collect());
    let (report, shapes) = run(
        "cxx_ops",
        1,
        &[
            ("float_ops", vec![Arg::f32_tensor(&[n as u32], &x), Arg::f32_tensor(&[n as u32], &y)]),
            ("int_ops", vec![ints(&k), ints(&m)]),
        ],
    );
    assert_eq!((shapes[0].shape.clone(), shapes[1].shape.clone()), (vec![20, n as u16], vec![11, n as u16]));
    assert_eq!((statuses(&report, 0), statuses(&report, 1)), (vec!["0".to_string()], vec!["0".to_string()]));
    // The same f32 operations, with the runtime's own libm: bit for bit.
    type Row = fn(f32, f32) -> f32;
    let float_rows: [(&str, Row); 20] = [
        ("abs", |a, _| a.abs()),
        ("ceil", |a, _| a.ceil()),
        ("floor", |a, _| a.floor()),
        ("sin", |a, _| sinf(a)),
        ("cos", |a, _| cosf(a)),
        ("tan", |a, _| tanf(a)),
        ("log", |a, _| logf(a.abs())),
        ("log2", |a, _| log2f(a.abs())),
        ("log10", |a, _| log10f(a.abs())),
        ("exp", |a, _| expf(a)),
        ("pow(x, 2)", |a, _| powf(a, 2.0)),
        ("pow(2, x)", |a, _| powf(2.0, a)),
        ("pow(|x|, y)", |a, b| powf(a.abs(), b)),
        ("clamp", |a, _| a.clamp(-1.0, 1.0)),
        ("add alpha 0.5", |a, b| a + 0.5 * b),
        ("sub alpha 2", |a, b| a - 2.0 * b),
        ("mul", |a, b| a * b),
        ("div", |a, b| a / b),
        ("mul 3", |a, _| a * 3.0),
        ("div 4", |a, _| a / 4.0),
    ];
    let got = f32s(&report, 0);
    for (row, (name, f)) in float_rows.iter().enumerate() {
        let want: Vec<u32> = x.iter().zip(&y).map(|(&a, &b)| f(a, b).to_bits()).collect();
        let have: Vec<u32> = got[row * n..(row + 1) * n].iter().map(|v| v.to_bits()).collect();
        assert_eq!(have, want, "{name}");
    }
    type IntRow = fn(i32, i32) -> i32;
    let int_rows: [(&str, IntRow); 11] = [
        ("abs", |a, _| a.abs()),
        ("add 5", |a, _| a + 5),
        ("sub alpha 3", |a, b| a - 3 * b),
        ("mul", |a, b| a * b),
        ("div 7 (truncating)", |a, _| a / 7),
        ("pow 2", |a, _| a * a),
        ("clamp", |a, _| a.clamp(-10, 10)),
        ("bitwise_and", |a, b| a & b),
        ("bitwise_or scalar first", |a, _| 3 | a),
        ("bitwise_not", |a, _| !a),
        ("add_out", |a, b| a + b),
    ];
    let got: Vec<i32> =
        report.dumps[&1].chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    for (row, (name, f)) in int_rows.iter().enumerate() {
        let want: Vec<i32> = k.iter().zip(&m).map(|(&a, &b)| f(a, b)).collect();
        assert_eq!(got[row * n..(row + 1) * n], want[..], "{name}");
    }
}

#[test]
fn int64_and_double_scalars_and_elementwise_operations() {
    let x = random(500, 7);
    let ints: Vec<i32> = (0..300).map(|i| i * 7 - 1000).collect();
    let int_bytes = ints.iter().flat_map(|v| v.to_le_bytes()).collect();
    let (report, shapes) = run(
        "cxx_scalars",
        1,
        &[
            ("affine", vec![Arg::f32_tensor(&[500], &x), Arg::Long(-3), Arg::Double(0.25)]),
            ("mask_minus_one", vec![Arg::Tensor(Dtype::Int32, vec![300], int_bytes), Arg::Long(0xF0)]),
        ],
    );
    assert_eq!((statuses(&report, 0), statuses(&report, 1)), (vec!["0".to_string()], vec!["0".to_string()]));
    let affine: Vec<f32> = x.iter().map(|v| v * 0.25 + -3.0).collect();
    assert_eq!(f32s(&report, 0), affine);
    assert_eq!(shapes[1].dtype, Dtype::Int32);
    let masked: Vec<i32> =
        report.dumps[&1].chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    assert_eq!(masked, ints.iter().map(|v| (v & 0xF0) - 1).collect::<Vec<_>>());
}

#[test]
fn softmax_with_a_zeros_scratch_row_and_expf() {
    let (rows, cols) = (6usize, 50usize);
    let x = random(rows * cols, 8);
    let (report, _) = run("cxx_softmax", 1, &[("softmax", vec![Arg::f32_tensor(&[rows as u32, cols as u32], &x)])]);
    assert_eq!(statuses(&report, 0), ["0"]);
    // The same f32 operations in the same order, and the runtime's own expf: exact.
    let mut expected = Vec::new();
    for row in x.chunks(cols) {
        let largest = row.iter().copied().fold(row[0], f32::max);
        let e: Vec<f32> = row.iter().map(|v| expf(v - largest)).collect();
        let sum = e.iter().fold(0.0f32, |s, v| s + v);
        expected.extend(e.iter().map(|v| v / sum));
    }
    let got = f32s(&report, 0);
    assert_eq!(got, expected);
    let printed = String::from_utf8_lossy(&report.core(0).stdout[&0].0).into_owned();
    assert_eq!(printed, format!("softmax: 6 rows of 50, row 0 starts {:.6}\n", expected[0]));
}

#[test]
fn printf_honours_the_ring_size_the_host_sets() {
    let x = random(4 * 5, 13);
    let op = || ("softmax", vec![Arg::f32_tensor(&[4, 5], &x)]);
    let (full, _) = run("cxx_softmax", 1, &[op()]);
    let (line, lost) = full.core(0).stdout[&0].clone();
    assert_eq!(lost, 0);
    assert!(line.len() > 32, "{}", String::from_utf8_lossy(&line));
    let (small, _) = run_configured("cxx_softmax", 1, &[op()], |job| job.header.stdout_queue_bytes = 32);
    let (kept, lost) = small.core(0).stdout[&0].clone();
    assert_eq!((kept.as_slice(), lost as usize), (&line[line.len() - 32..], line.len() - 32), "the newest 32 bytes");
    let (silent, _) = run_configured("cxx_softmax", 1, &[op()], |job| job.header.stdout_queue_bytes = 0);
    assert!(
        silent.core(0).stdout.get(&0).is_none_or(|(bytes, lost)| bytes.is_empty() && *lost == 0),
        "0 disables printf"
    );
    assert_eq!(statuses(&silent, 0), ["0"]);
    assert_eq!(f32s(&silent, 0), f32s(&full, 0));
}

#[test]
fn each_misuse_ends_its_op_with_a_named_status_and_the_next_op_runs() {
    let x = random(64, 9);
    let one = || vec![Arg::f32_tensor(&[64], &x)];
    let ops = [
        ("wrong_dtype", Status::DTYPE_MISMATCH),
        ("wrong_rank", Status::RANK_MISMATCH),
        ("failed_assert", Status::ASSERT_FAILED),
        ("heap_exhausted", Status::OUT_OF_MEMORY),
        ("bitwise_on_floats", Status::UNSUPPORTED_DTYPE),
        ("tcm_copy_past_end", Status::OUT_OF_BOUNDS),
    ];
    let mut job_ops: Vec<(&str, Vec<Arg>)> = Vec::new();
    for (function, _) in ops {
        job_ops.push((function, one()));
        job_ops.push(("cxx_runtime", vec![Arg::f32_tensor(&[1], &[3.0])]));
    }
    job_ops.push(("wrong_return_shape", one()));
    job_ops.push(("tcm_past_pool", one()));
    let (report, _) = run("cxx_misuse", 1, &job_ops);
    for (index, (function, status)) in ops.iter().enumerate() {
        let op = 2 * index as u32;
        assert_eq!(statuses(&report, op), [status.0.to_string()], "{function}");
        assert_eq!(statuses(&report, op + 1), ["0"], "the op after {function}");
        assert_eq!(f32s(&report, op + 1), [9.0, 1.0, 10.0], "new/delete, a guarded static, a virtual call");
    }
    let assert_line = String::from_utf8_lossy(&report.core(0).stdout[&4].0).into_owned();
    assert!(assert_line.starts_with("assertion failed: t_in.numel() == 0 at "), "{assert_line}");
    assert!(assert_line.contains("misuse.cpp:20 (failed_assert)"), "{assert_line}");
    // A TCM copy past the tensor names the copy and the kernel's line, as an assert does.
    let past_end = String::from_utf8_lossy(&report.core(0).stdout[&10].0).into_owned();
    assert!(
        past_end
            .starts_with("torch: tensor_to_tcm of 4 elements from element 61 is outside the tensor's 64 elements, at "),
        "{past_end}"
    );
    assert!(past_end.contains("misuse.cpp:32 (tcm_copy_past_end)"), "{past_end}");
    // An accessor's dtype or rank check names the tensor, what it is and what was asked, and the line.
    let printed = |op: u32| String::from_utf8_lossy(&report.core(0).stdout[&op].0).into_owned();
    let (dtype, rank) = (printed(0), printed(2));
    assert!(dtype.starts_with("torch: accessor<T, N> at ") && dtype.contains("misuse.cpp:10 (wrong_dtype)"), "{dtype}");
    assert!(dtype.ends_with(": argument 0 holds float32, but T is int32\n"), "{dtype}");
    assert!(rank.contains("misuse.cpp:15 (wrong_rank): argument 0 has rank 1, but N is 2\n"), "{rank}");
    // An exhausted heap says what was asked for and what was left.
    let memory = printed(6);
    assert!(
        memory.starts_with("torch: the HBM heap has no room for 1073741824 bytes (a new tensor): ")
            && memory.contains(" bytes are free, the largest free block is "),
        "{memory}"
    );
    let returned = ops.len() as u32 * 2;
    let disagreed = printed(returned);
    assert_eq!(
        disagreed,
        "kernel entry: the returned tensor is [3], but the shape function (shape.cpp) says the output is [64]: \
         the kernel and its shape function must agree\n"
    );
    assert_eq!(statuses(&report, returned), [Status::SHAPE_MISMATCH.0.to_string()], "the returned tensor is checked");
    assert_eq!(statuses(&report, returned + 1), ["0"]);
    assert_eq!(f32s(&report, returned + 1)[..2], [1.0, 1.0], "tcm_malloc past the 16 KiB pool is null; within it, not");
}

#[test]
fn the_reference_guides_tensor_add_compute_builds_unchanged_and_its_assert_names_file_and_line() {
    // examples/cxx_add is the guide's element-accessor example as written: it calls
    // assert with no include of its own.
    let (x, y) = (random(1000, 41), random(1000, 42));
    let ops = [
        ("tensor_add", vec![Arg::f32_tensor(&[1000], &x), Arg::f32_tensor(&[1000], &y)]),
        ("tensor_add", vec![Arg::f32_tensor(&[1000], &x), Arg::f32_tensor(&[999], &y[..999])]),
        ("tensor_add", vec![Arg::f32_tensor(&[3], &[1.5, -2.0, 1e30]), Arg::f32_tensor(&[3], &[0.25, 2.0, 1e30])]),
    ];
    let (report, shapes) = run("cxx_add", 1, &ops);
    assert_eq!(shapes[0], OutputShape { dtype: Dtype::Float32, shape: vec![1000] }, "the shape function's");
    assert_eq!(statuses(&report, 0), ["0"]);
    // NumPy's float32 addition is IEEE single addition, as Rust's f32 is: bit for bit.
    let sums: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    assert_eq!(f32s(&report, 0), sums);
    // Operands of different shapes: the guide's assert fails, as a named status with
    // the expression and file:line; the next op runs.
    assert_eq!(statuses(&report, 1), [Status::ASSERT_FAILED.0.to_string()]);
    let line = String::from_utf8_lossy(&report.core(0).stdout[&1].0).into_owned();
    assert!(line.starts_with("assertion failed: t1.sizes() == t2.sizes() at "), "{line}");
    assert!(line.contains("examples/cxx_add/add.cpp:10 (tensor_add_compute)"), "{line}");
    assert_eq!(statuses(&report, 2), ["0"]);
    assert_eq!(f32s(&report, 2), [1.75, 0.0, 2e30]);
}

/// A library folder under `target/cxx-tests/` with the given sources.
fn scratch_library(name: &str, compute: &str, shape: &str) -> Library {
    let dir = crate::common::checkout().join("target/cxx-tests").join(name);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("kernel.cpp"), compute).unwrap();
    fs::write(dir.join("shape.cpp"), shape).unwrap();
    fs::write(dir.join(cxx::MANIFEST), r#"{"compute_srcs": ["kernel.cpp"], "shape_srcs": ["shape.cpp"]}"#).unwrap();
    Library::open(&dir).unwrap()
}

const COMPUTE: &str = "#include <torch/torch.h>\ntorch::Tensor k(const torch::Tensor& t) { return t; }\n";

fn build_error(library: &Library) -> String {
    let tools = Toolchain::locate().unwrap();
    match cxx::build_images(&tools, library, &library.work_dir(&tools).join("images")) {
        Err(PackageError::CBuild(message)) => message,
        other => panic!("the build should fail: {other:?}"),
    }
}

#[test]
fn more_than_ten_functions_is_a_build_error_that_says_so() {
    let defs: String = (0..11).map(|i| format!("    m.def(\"op{i}\", &s, \"k\");\n")).collect();
    let shape = format!(
        "#include <torch/torch.h>\n#include \"torchneuron/register.h\"\ntorch::Tensor s(torch::Tensor t) {{ return t; }}\nNEURON_LIBRARY(big, m) {{\n{defs}}}\n"
    );
    let error = build_error(&scratch_library("eleven", COMPUTE, &shape));
    assert!(error.contains("NEURON_LIBRARY(big) registers 11 functions: a library has at most 10"), "{error}");
}

#[test]
fn an_unsupported_argument_type_is_a_compile_error_naming_it() {
    let compute = "#include <torch/torch.h>\ntorch::Tensor k(const torch::Tensor& t, const char* name) { return t; }\n";
    let shape = "#include <torch/torch.h>\n#include \"torchneuron/register.h\"\n\
                 torch::Tensor s(torch::Tensor t, int64_t n) { return t; }\nNEURON_LIBRARY(lib, m) { m.def(\"op\", &s, \"k\"); }\n";
    let error = build_error(&scratch_library("char_pointer", compute, shape));
    assert!(error.contains("op op: argument 2 of k is of a type the kernel entry cannot pull"), "{error}");
}

#[test]
fn bad_shape_functions_give_clear_errors() {
    let shape = "#include <stdexcept>\n#include <torch/torch.h>\n#include \"torchneuron/register.h\"\n\
        torch::Tensor throws(torch::Tensor t) { throw std::runtime_error(\"no shape for you\"); }\n\
        torch::Tensor nine(torch::Tensor t) { return torch::zeros({1, 1, 1, 1, 1, 1, 1, 1, 1}, torch::kFloat); }\n\
        torch::Tensor wide(torch::Tensor t) { return torch::zeros({70000}, torch::kFloat); }\n\
        torch::Tensor fine(torch::Tensor t) { return torch::zeros({t.size(0), 2}, torch::kInt); }\n\
        NEURON_LIBRARY(lib, m) { m.def(\"throws\", &throws, \"k\"); m.def(\"nine\", &nine, \"k\");\n\
        m.def(\"wide\", &wide, \"k\"); m.def(\"fine\", &fine, \"k\"); }\n";
    let library = scratch_library("bad_shapes", COMPUTE, shape);
    let tools = Toolchain::locate().unwrap();
    let driver = library.shape_driver(&tools).unwrap();
    let input = [ShapeArg::Tensor(Dtype::Float32, vec![5])];
    let error = |op: &str| cxx::output_shape(&driver, op, &input).unwrap_err();
    assert!(error("throws").contains("the shape function of throws failed: no shape for you"), "{}", error("throws"));
    assert!(error("nine").contains("more than 8 dimensions"), "{}", error("nine"));
    assert!(error("wide").contains("larger than 65535"), "{}", error("wide"));
    assert_eq!(cxx::output_shape(&driver, "fine", &input), Ok(OutputShape { dtype: Dtype::Int32, shape: vec![5, 2] }));
    // Arguments that do not fit the signature are the caller's mistake, not the shape
    // function's failure, and say which argument.
    let misfit = cxx::output_shape(&driver, "fine", &[ShapeArg::Long(1)]).unwrap_err();
    assert!(
        misfit.starts_with("op fine: argument 0 (") && misfit.ends_with(") does not fit: the op takes a tensor there"),
        "{misfit}"
    );
}

#[test]
fn a_packaged_library_defines_the_whole_cxx_runtime() {
    let package = packaged("cxx_relu");
    let output = Command::new("xtensa-lx106-elf-nm").arg(&package.images.cores[0]).output().expect("nm runs");
    assert!(output.status.success());
    let listing = String::from_utf8_lossy(&output.stdout);
    let defined: Vec<&str> = listing
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (_address, kind, name) = (words.next()?, words.next()?, words.next()?);
            (kind != "U" && kind != "w").then_some(name)
        })
        .collect();
    let missing: Vec<&&str> = RUNTIME_SYMBOLS.iter().filter(|symbol| !defined.contains(symbol)).collect();
    assert!(missing.is_empty(), "not defined in {}: {missing:?}", package.images.cores[0].display());
}

#[test]
fn the_headers_status_values_are_the_runtimes() {
    let pins = [
        ("STATUS_DTYPE_MISMATCH", Status::DTYPE_MISMATCH),
        ("STATUS_OUT_OF_BOUNDS", Status::OUT_OF_BOUNDS),
        ("STATUS_TCM_EXHAUSTED", Status::TCM_EXHAUSTED),
        ("STATUS_OUT_OF_MEMORY", Status::OUT_OF_MEMORY),
        ("STATUS_RANK_MISMATCH", Status::RANK_MISMATCH),
        ("STATUS_SHAPE_MISMATCH", Status::SHAPE_MISMATCH),
        ("STATUS_UNSUPPORTED_DTYPE", Status::UNSUPPORTED_DTYPE),
        ("STATUS_INCOHERENT_ACCESS", Status::INCOHERENT_ACCESS),
    ];
    let checks: String = pins
        .iter()
        .map(|(name, status)| format!("static_assert(torchneuron::{name} == {}, \"{name}\");\n", status.0))
        .collect();
    assert!(compiles("status_pins", &checks));
    assert!(
        !compiles("status_pins", "static_assert(torchneuron::STATUS_RANK_MISMATCH == 0x61, \"wrong\");\n"),
        "the pins are live"
    );
}

/// Whether `source`, after `<torch/torch.h>`, compiles (host form of the header).
fn compiles(name: &str, source: &str) -> bool {
    let dir = crate::common::checkout().join("target/cxx-tests");
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.cpp"));
    fs::write(&file, format!("#include <torch/torch.h>\n{source}")).unwrap();
    Command::new(cxx::HOST_CXX)
        .args(["-std=c++17", "-fsyntax-only", "-DTORCHNEURON_HOST", "-I"])
        .arg(crate::common::checkout().join("runtime/include"))
        .arg(&file)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("g++ runs")
        .success()
}

#[test]
fn accessors_of_a_const_tensor_are_read_only() {
    let kernel = |body: &str| format!("void k(const torch::Tensor& in, torch::Tensor& out, float* tcm) {{ {body} }}\n");
    assert!(compiles(
        "const_ok",
        &kernel(
            "auto a = in.accessor<float, 1>(); auto b = out.accessor<float, 1>(); b[0] = a[0]; \
         in.tcm_accessor().tensor_to_tcm<float>(tcm, 0, 1); out.tcm_accessor().tcm_to_tensor<float>(tcm, 0, 1); \
         auto r = in.read_stream_accessor<float>(); auto w = out.write_stream_accessor<float>(); w.write(r.read());"
        )
    ));
    assert!(!compiles("const_element", &kernel("auto a = in.accessor<float, 1>(); a[0] = 1.0f;")));
    assert!(!compiles("const_tcm", &kernel("in.tcm_accessor().tcm_to_tensor<float>(tcm, 0, 1);")));
    assert!(!compiles("const_stream", &kernel("auto w = in.write_stream_accessor<float>();")));
}

#[test]
fn the_host_api_asks_a_cxx_librarys_shape_function_for_the_output() {
    use neuroncustomop_host::array::Array;
    use neuroncustomop_host::library::{self, Output};
    let relu = library::Library::example("cxx_relu").unwrap_or_else(|e| panic!("{}", library::describe(&e)));
    let x: Vec<f32> = random(6 * 40, 31);
    // The AWS sample's kernel reads its input with a 1-dimensional accessor.
    let input = Array::from_vec(vec![240], x.clone()).unwrap();
    let args = [library::Arg::Tensor(input)];
    let output = relu.output_of("relu_forward", &args).expect("the shape function runs");
    // The AWS sample's relu_fwd_shape: `torch::zeros({t_in.numel()}, torch::kFloat)`, one dimension.
    assert_eq!(output, Some(Output::Shape { dtype: Dtype::Float32, shape: vec![240] }), "relu_fwd_shape");
    let call = relu.call("relu_forward", &args, output.unwrap()).unwrap().check().unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(call.output.to_vec::<f32>().unwrap(), self::relu(&x));
    // A Rust library has no shape functions: the caller says.
    let rust = library::Library::example("relu").unwrap_or_else(|e| panic!("{}", library::describe(&e)));
    assert_eq!(rust.output_of("relu", &args).unwrap(), None);
}

#[test]
fn a_double_parameter_takes_the_calls_float_and_the_registration_names_it() {
    use neuroncustomop_host::array::Array;
    use neuroncustomop_host::library::{self, Arg, Output};
    use neuroncustomop_package::cxx::ArgKind;
    let scalars = library::Library::example("cxx_scalars").unwrap_or_else(|e| panic!("{}", library::describe(&e)));
    let registration = scalars.registration().expect("a C++ library").expect("the driver lists");
    assert_eq!(registration.library, "scalar_ops");
    let affine = registration.ops.iter().find(|op| op.name == "affine").expect("affine is registered");
    assert_eq!(affine.args, [ArgKind::Tensor, ArgKind::Long, ArgKind::Double]);
    // The kernel ABI carries the double as a float; its shape function is fed a double.
    let args = [Arg::Tensor(Array::from_vec(vec![5, 2], vec![0f32; 10]).unwrap()), Arg::LongLong(3), Arg::Float(0.5)];
    let output = scalars.output_of("affine", &args).unwrap_or_else(|e| panic!("{}", library::describe(&e)));
    assert_eq!(output, Some(Output::Shape { dtype: Dtype::Float32, shape: vec![5, 2] }));
    // The package carries the shape functions: a library loaded from it alone has them.
    let copy = library::Library::load(&scalars.package().unwrap().dir).unwrap();
    assert_eq!(copy.output_of("affine", &args).unwrap(), output);
}
