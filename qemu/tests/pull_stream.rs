//! The pull stream under QEMU (docs/abi/descriptors.md): the simulated loader
//! passes real 48-byte descriptors from the 0x85/0x86 dispatch words to kernels of
//! `qemu/firmware/src/bin/runtime_probe.rs`, and every outcome is checked exactly:
//! output bytes bit for bit against a host reference, and each bad input as its own
//! status. Also the dispatch-overhead benchmark (docs/PERFORMANCE.md, "Dispatch").

use neuroncustomop::translate::{TranslateRecord, configure};
use neuroncustomop::wrapper_api::{
    ARG_TENSOR_SIZE, ArgError, ArgFailure, ArgTensor, DescriptorError, Dtype, Invocation, ScalarKind, Status, Tensor,
};
use neuroncustomop_machine::device::{self, OpStatus, Report};
use neuroncustomop_machine::images::{self, Images};
use neuroncustomop_machine::job::{FRAMEWORK_BASE, Job, Op, TENSOR_AREA_SIZE};
use neuroncustomop_wire::job::OutputDump;
use neuroncustomop_wire::{Descriptor, MAX_INPUTS, encode};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// Descriptor byte offsets (docs/abi/descriptors.md §1) the malformed-input tests change.
const DTYPE: usize = 0;
const SHAPE_TYPE: usize = 2;
const NUM_DIM: usize = 3;
/// The HBM storage form's address and `num_elem`: the storage union is at +24.
const HBM_ADDR: core::ops::Range<usize> = 24..32;
const HBM_NUM_ELEM: usize = 32;
/// Offset of `num_arguments` in the 0x85 header word (docs/abi/dispatch.md §1.2).
const HEADER_NUM_ARGUMENTS: usize = 0x0F;
/// What the output area holds before a kernel runs: a failed op must leave it so.
const UNTOUCHED: u8 = 0xA5;

/// The probe library, built once per test binary.
fn probe() -> &'static Images {
    static BUILT: OnceLock<Images> = OnceLock::new();
    BUILT.get_or_init(|| images::build("runtime_probe").unwrap_or_else(|e| panic!("building runtime_probe: {e}")))
}

fn run(job: &Job) -> Report {
    let report = device::run(probe(), job).expect("QEMU runs");
    let outcome = &report.outcome;
    assert!(!outcome.timed_out && report.done, "the loader did not finish:\n{}\n{}", outcome.stdout, outcome.stderr);
    report
}

/// The runtime's account of the argument behind op `op`'s failure on core 0: its
/// `ARGFAIL` line, which `customop_invocation_status` writes once the kernel has ended.
fn arg_failure(report: &Report, op: u32) -> Option<ArgFailure> {
    let (printed, _) = report.core(0).stdout.get(&op)?.clone();
    String::from_utf8_lossy(&printed).lines().find_map(ArgFailure::parse_line)
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn tensor(len: u32, framework_addr: u64) -> Descriptor {
    ArgTensor::hbm_tensor(Dtype::Float32, &[len], framework_addr).expect("a valid tensor").to_bytes()
}

/// Places a fresh output of `len` f32s at `offset`, filled with [`UNTOUCHED`]: its
/// descriptor and a dump of its bytes.
fn output(job: &mut Job, offset: u32, len: u32) -> (Descriptor, OutputDump) {
    let (framework, device) = job.place(offset, vec![UNTOUCHED; 4 * len as usize]);
    (tensor(len, framework), OutputDump { address: device, len: 4 * len })
}

/// Places a scalar of `kind` holding `bytes` at `offset`; returns its descriptor.
fn scalar(job: &mut Job, offset: u32, kind: ScalarKind, bytes: &[u8]) -> Descriptor {
    let (framework, _) = job.place(offset, bytes.to_vec());
    ArgTensor::hbm_scalar(kind, framework).to_bytes()
}

/// Deterministic finite f32s of every magnitude: random bit patterns with the NaN/inf
/// exponent excluded, so subnormals, tiny and huge values all occur.
fn finite_values(count: usize, seed: u64, nonzero: bool) -> Vec<f32> {
    let mut state = seed;
    let mut values = Vec::with_capacity(count);
    while values.len() < count {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let value = f32::from_bits((state >> 32) as u32);
        if value.is_finite() && !(nonzero && value == 0.0) {
            values.push(value);
        }
    }
    values
}

/// The host's `mix`: the same f32 operations in the same order as the kernel.
fn mix_reference(x: &[f32], k: i32, alpha: f32, y: &[f32]) -> Vec<f32> {
    let offset = k as f32;
    x.iter().zip(y).map(|(&a, &b)| (a * alpha + offset) * b).collect()
}

#[test]
fn a_tensor_int_float_tensor_kernel_matches_the_host_bit_for_bit() {
    const LEN: u32 = 1024;
    let mut x = finite_values(LEN as usize, 1, false);
    // Moderate values too, where most results stay finite and normal.
    let moderate: Vec<f32> = finite_values(LEN as usize / 2, 2, false).iter().map(|v| v.fract() * 100.0).collect();
    x[..moderate.len()].copy_from_slice(&moderate);
    // y is never zero, so an overflow to infinity never meets a 0 (no NaN, whose
    // payload the host and the soft-float device may choose differently).
    let y = finite_values(LEN as usize, 3, true);
    let cases: [(i32, f32); 3] = [(-7, 0.318_309_87), (16_777_217, -3.0e-3), (0, f32::MIN_POSITIVE)];

    let mut job = Job::new(probe(), 1).expect("job");
    let mix = job.function("mix");
    let (x_at, _) = job.place(0, f32_bytes(&x));
    let (y_at, _) = job.place(0x1_0000, f32_bytes(&y));
    for (index, &(k, alpha)) in cases.iter().enumerate() {
        let base = 0x2_0000 + 0x1_0000 * index as u32;
        let k_arg = scalar(&mut job, base, ScalarKind::Int, &k.to_le_bytes());
        let alpha_arg = scalar(&mut job, base + 0x10, ScalarKind::Float, &alpha.to_le_bytes());
        let (out, dump) = output(&mut job, base + 0x100, LEN);
        let inputs = vec![tensor(LEN, x_at), k_arg, alpha_arg, tensor(LEN, y_at)];
        job.push(&Op { function: mix, output: Some(out), inputs, dump }).expect("op");
    }
    // The same arguments in another order: an int pulled where the float is.
    let k_arg = scalar(&mut job, 0x8_0000, ScalarKind::Int, &1i32.to_le_bytes());
    let alpha_arg = scalar(&mut job, 0x8_0010, ScalarKind::Float, &1f32.to_le_bytes());
    let (out, dump) = output(&mut job, 0x8_0100, LEN);
    let inputs = vec![tensor(LEN, x_at), alpha_arg, k_arg, tensor(LEN, y_at)];
    job.push(&Op { function: mix, output: Some(out), inputs, dump }).expect("op");

    let report = run(&job);
    let statuses: Vec<Option<u32>> = report.core(0).ops.iter().map(|op| op.status_code()).collect();
    assert_eq!(statuses, [Some(0), Some(0), Some(0), Some(Status::SCALAR_KIND_MISMATCH.0)]);
    // The runtime names the argument of the failure, and of no success.
    let named: Vec<Option<String>> = (0..4).map(|op| arg_failure(&report, op).map(|f| f.to_string())).collect();
    assert_eq!(named, [None, None, None, Some("argument 1: pulled as int, passed as float".into())]);
    for (index, &(k, alpha)) in cases.iter().enumerate() {
        let expected = f32_bytes(&mix_reference(&x, k, alpha, &y));
        let got = &report.dumps[&(index as u32)];
        let first_difference = got.chunks(4).zip(expected.chunks(4)).position(|(a, b)| a != b);
        assert_eq!(first_difference, None, "case {index} (k {k}, alpha {alpha}): element differs");
        assert_eq!(got.len(), expected.len());
    }
    assert_eq!(report.dumps[&3], vec![UNTOUCHED; 4 * LEN as usize], "a failed op wrote its output");
}

/// One malformed-input case: a change to a valid descriptor, and the status it must get.
struct Malformed {
    name: &'static str,
    mutate: fn(&mut Descriptor),
    status: Status,
}

#[test]
fn each_malformed_descriptor_reaches_the_loader_as_its_own_status() {
    const LEN: u32 = 64;
    let cases = [
        Malformed { name: "unchanged (the control)", mutate: |_| {}, status: Status::OK },
        Malformed { name: "rank 0", mutate: |d| d[NUM_DIM] = 0, status: Status::RANK_ZERO },
        Malformed { name: "rank 9", mutate: |d| d[NUM_DIM] = 9, status: Status::RANK_TOO_LARGE },
        Malformed { name: "out-of-line shape", mutate: |d| d[SHAPE_TYPE] = 1, status: Status::OUT_OF_LINE_SHAPE },
        Malformed { name: "dtype 0", mutate: |d| d[DTYPE] = 0, status: Status::UNKNOWN_DTYPE },
        Malformed { name: "dtype 9", mutate: |d| d[DTYPE] = 9, status: Status::UNKNOWN_DTYPE },
        Malformed {
            name: "num_elem one more than the shape's",
            mutate: |d| d[HBM_NUM_ELEM] += 1,
            status: Status::ELEMENT_COUNT_MISMATCH,
        },
        Malformed {
            name: "address outside every translate window",
            mutate: |d| d[HBM_ADDR].copy_from_slice(&0x0000_1234_0000_0000u64.to_le_bytes()),
            status: Status::TRANSLATE_MISS,
        },
        Malformed {
            name: "starts in the window, ends past it",
            mutate: |d| d[HBM_ADDR].copy_from_slice(&(FRAMEWORK_BASE + u64::from(TENSOR_AREA_SIZE) - 8).to_le_bytes()),
            status: Status::RANGE_OUTSIDE_WINDOW,
        },
    ];
    // `copy` over one f32 input per case, its descriptor changed by the case.
    let input: Vec<f32> = (0..LEN).map(|i| i as f32 * 1.5 - 20.0).collect();
    let mut job = Job::new(probe(), 1).expect("job");
    let copy = job.function("copy");
    let (x_at, _) = job.place(0, f32_bytes(&input));
    for (index, case) in cases.iter().enumerate() {
        let mut x = tensor(LEN, x_at);
        (case.mutate)(&mut x);
        let (out, dump) = output(&mut job, 0x1000 * (index as u32 + 1), LEN);
        job.push(&Op { function: copy, output: Some(out), inputs: vec![x], dump }).expect("op");
    }
    let report = run(&job);
    let ops = report.core(0).ops;
    assert_eq!(ops.len(), cases.len());
    for (index, case) in cases.iter().enumerate() {
        assert_eq!(ops[index].status_code(), Some(case.status.0), "{}", case.name);
        let expected = if case.status.is_ok() { f32_bytes(&input) } else { vec![UNTOUCHED; 4 * LEN as usize] };
        assert!(report.dumps[&(index as u32)] == expected, "{}: output bytes", case.name);
        // The argument and, for a bad descriptor, its field, named.
        match arg_failure(&report, index as u32) {
            None => assert!(case.status.is_ok(), "{}: no argument named", case.name),
            Some(failure) => {
                assert!(failure.explains(case.status) && failure.argument == 0, "{}: {failure:?}", case.name);
                let field = case.status.descriptor_field().map(|field| format!(": its descriptor's {field}"));
                let expected = format!("argument 0 (pulled as a tensor){}", field.unwrap_or_default());
                assert_eq!(failure.to_string(), expected, "{}", case.name);
            }
        }
    }
    // Each case its own status: no two failures share one.
    let failures: BTreeSet<u32> = cases[1..].iter().map(|case| case.status.0).collect();
    assert_eq!(failures.len(), cases.len() - 2, "only the two unknown dtypes share a status");
}

#[test]
fn misusing_the_pull_stream_reaches_the_loader_as_its_own_status() {
    const LEN: u32 = 4;
    let mut job = Job::new(probe(), 1).expect("job");
    let (x_at, _) = job.place(0, f32_bytes(&[1.0, 2.0, 3.0, 4.0]));
    let int_arg = scalar(&mut job, 0x100, ScalarKind::Int, &5i32.to_le_bytes());
    let x = tensor(LEN, x_at);
    let cases = [
        ("pull_past_end", x, Status::NO_MORE_ARGS),
        ("tensor_for_scalar", int_arg, Status::EXPECTED_TENSOR),
        ("scalar_for_tensor", x, Status::EXPECTED_SCALAR),
        ("output_twice", x, Status::DST_ALREADY_TAKEN),
        ("dst_twice", x, Status::DST_ALREADY_TAKEN),
        ("return_without_setup", x, Status::NOT_SET_UP),
    ];
    for (index, (name, input, _)) in cases.iter().enumerate() {
        let (out, dump) = output(&mut job, 0x1000 * (index as u32 + 1), LEN);
        let function = job.function(name);
        job.push(&Op { function, output: Some(out), inputs: vec![*input], dump }).expect("op");
    }
    let report = run(&job);
    let ops = report.core(0).ops;
    assert_eq!(ops.len(), cases.len());
    for (index, (name, _, status)) in cases.iter().enumerate() {
        assert_eq!((ops[index].function.as_str(), ops[index].status_code()), (*name, Some(status.0)));
        assert_eq!(report.dumps[&(index as u32)], vec![UNTOUCHED; 4 * LEN as usize], "{name} wrote its output");
    }
    // The pulls of a wrong kind or past the end name their argument; taking the output
    // twice or returning without setup is no argument's failure.
    let named: Vec<Option<String>> = (0..cases.len() as u32)
        .map(|op| arg_failure(&report, op).filter(|f| f.explains(cases[op as usize].2)).map(|f| f.to_string()))
        .collect();
    assert_eq!(
        named,
        [
            Some("argument 1: pulled as a tensor, but 1 argument was passed (argument 0)".into()),
            Some("argument 0: pulled as a tensor, passed as int".into()),
            Some("argument 0: pulled as int, passed as a tensor".into()),
            None,
            None,
            None,
        ]
    );
}

#[test]
fn more_than_ten_arguments_are_refused_by_the_wire_decoder() {
    const LEN: u32 = 4;
    let mut job = Job::new(probe(), 1).expect("job");
    let copy = job.function("copy");
    let (x_at, _) = job.place(0, f32_bytes(&[1.0, -2.0, 3.0, -4.0]));
    let inputs = vec![tensor(LEN, x_at); MAX_INPUTS];
    // Ten inputs are accepted: copy takes the first and ignores the rest.
    let (out, dump) = output(&mut job, 0x1000, LEN);
    job.push(&Op { function: copy, output: Some(out), inputs: inputs.clone(), dump }).expect("op");
    // Eleven: the same words with N = 11 in the header (the encoder refuses to write it).
    let (out, dump) = output(&mut job, 0x2000, LEN);
    assert!(encode(copy, Some(&out), &[inputs.clone(), vec![inputs[0]]].concat()).is_err());
    let mut words = encode(copy, Some(&out), &inputs).expect("ten inputs").as_bytes().to_vec();
    words[HEADER_NUM_ARGUMENTS] = MAX_INPUTS as u8 + 1;
    job.words.extend_from_slice(&words);
    job.dumps.push(dump);

    let report = run(&job);
    let ops = report.core(0).ops;
    let statuses: Vec<OpStatus> = ops.iter().map(|op| op.status).collect();
    assert_eq!(statuses, [OpStatus::Returned(0), OpStatus::BadWords]);
    assert_eq!(report.dumps[&0], f32_bytes(&[1.0, -2.0, 3.0, -4.0]));
    let line = report.outcome.stdout.lines().find(|l| l.starts_with("OP 1 ")).expect("the refused op's line");
    assert!(line.ends_with("error=11 input arguments: the runtime takes at most 10"), "{line}");
}

#[test]
fn dimensions_above_65535_are_refused_by_the_encoder() {
    assert_eq!(
        ArgTensor::hbm_tensor(Dtype::Float32, &[65_536], FRAMEWORK_BASE),
        Err(DescriptorError::DimTooLarge { dim: 0, value: 65_536 })
    );
    assert_eq!(
        ArgTensor::hbm_tensor(Dtype::Int8, &[2, 3, 70_000], FRAMEWORK_BASE),
        Err(DescriptorError::DimTooLarge { dim: 2, value: 70_000 })
    );
    assert_eq!(
        ArgTensor::tpb_tensor(Dtype::Int8, &[1, u32::MAX], 0),
        Err(DescriptorError::DimTooLarge { dim: 1, value: u32::MAX })
    );
    let widest = ArgTensor::hbm_tensor(Dtype::Uint8, &[65_535], FRAMEWORK_BASE).expect("65535 fits");
    assert_eq!(widest.validate().map(|view| view.num_elem()), Ok(65_535));
    assert_eq!(ArgTensor::hbm_tensor(Dtype::Float32, &[], 0), Err(DescriptorError::RankZero));
    assert_eq!(ArgTensor::hbm_tensor(Dtype::Float32, &[1; 9], 0), Err(DescriptorError::RankTooLarge(9)));
}

/// Loader dispatches of each kernel in the benchmark's cross-check.
const DISPATCHES: usize = 128;
/// Back-to-back dispatches per kernel in `dispatch_loop`.
const LOOP_REPETITIONS: u32 = 256;
/// Guest instructions per CCOUNT tick under `-icount shift=0` (docs/toolchain.md).
const INSTRUCTIONS_PER_TICK: f64 = 25.0;
/// The goal for `dispatch3`, the same arguments again, in guest instructions.
const DISPATCH_GOAL: f64 = 500.0;
/// What the test enforces: the goal. A regression past it fails.
const DISPATCH_CEILING: f64 = DISPATCH_GOAL;
/// The same op with new arguments every dispatch (nothing to reuse): its goal,
/// met since setup resolves the common descriptors in assembly (docs/PERFORMANCE.md,
/// "Dispatch": 685.1 measured). A regression past the goal fails.
const NEW_ARGUMENTS_CEILING: f64 = 700.0;

/// Mean guest instructions of the loader-dispatched ops of `report` that ran `function`.
fn mean_instructions(report: &Report, function: &str) -> f64 {
    let counts: Vec<u64> = report
        .core(0)
        .ops
        .iter()
        .filter(|op| op.function == function)
        .map(|op| {
            assert_eq!(op.status, OpStatus::Returned(0), "{function}");
            op.instructions.expect("a count")
        })
        .collect();
    assert_eq!(counts.len(), DISPATCHES, "{function}");
    counts.iter().sum::<u64>() as f64 / counts.len() as f64
}

/// `dispatch_loop`'s `LOOP <kernel> <ticks> <status>` lines: kernel -> instructions per
/// dispatch (customop_set_invocation and the call included).
fn loop_counts(printed: &[u8]) -> BTreeMap<String, f64> {
    String::from_utf8_lossy(printed)
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert!(matches!(fields[..], ["LOOP", _, _, "0"]), "{line}");
            let ticks: f64 = fields[2].parse().expect("ticks");
            (fields[1].to_string(), ticks * INSTRUCTIONS_PER_TICK / f64::from(LOOP_REPETITIONS))
        })
        .collect()
}

/// The dispatch overhead of a 3-argument op, from `customop_setup` to
/// `customop_cleanup`: `dispatch3` pulls (tensor, int, float), takes the output and
/// returns it untouched, through `run_kernel`. Measured two ways, both minus the
/// kernel `empty` (which does nothing):
/// - `dispatch_loop` plays the loader 256 times in a row per kernel between two clock
///   reads (precise to 0.2 instructions), for `dispatch3` and each step of its C form;
/// - the loader dispatches `dispatch3` and `empty` 128 times each (its clock reads
///   around each kernel are good to 25 instructions each; the mean is a cross-check).
///
/// Recorded in docs/PERFORMANCE.md ("Dispatch").
#[test]
fn dispatch_overhead_of_a_three_argument_op() {
    let mut job = Job::new(probe(), 1).expect("job");
    let (x_at, _) = job.place(0, f32_bytes(&[1.0; 16]));
    let k_arg = scalar(&mut job, 0x100, ScalarKind::Int, &3i32.to_le_bytes());
    let alpha_arg = scalar(&mut job, 0x110, ScalarKind::Float, &0.5f32.to_le_bytes());
    let (out, _) = output(&mut job, 0x1000, 16);
    let arguments = vec![tensor(16, x_at), k_arg, alpha_arg];

    let block: Vec<u8> = [arguments.concat(), out.to_vec()].concat();
    let (block_at, _) = job.place(0x2000, block);
    let block_arg = ArgTensor::hbm_tensor(Dtype::Uint8, &[4 * 48], block_at).expect("block").to_bytes();
    let repetitions = scalar(&mut job, 0x3000, ScalarKind::Int, &LOOP_REPETITIONS.to_le_bytes());
    let function = job.function("dispatch_loop");
    job.push(&Op { function, output: Some(out), inputs: vec![block_arg, repetitions], dump: OutputDump::default() })
        .expect("op");
    let dispatch3 =
        Op { function: job.function("dispatch3"), output: Some(out), inputs: arguments, dump: OutputDump::default() };
    let empty = Op { function: job.function("empty"), output: None, inputs: vec![], dump: OutputDump::default() };
    for _ in 0..DISPATCHES {
        job.push(&dispatch3).expect("op");
        job.push(&empty).expect("op");
    }

    let report = device::run_counting_instructions(probe(), &job).expect("QEMU runs");
    assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    let seen = report.core(0);
    assert_eq!(seen.ops[0].status, OpStatus::Returned(0));
    let counts = loop_counts(&seen.stdout[&0].0);
    let names: Vec<&str> = counts.keys().map(String::as_str).collect();
    let mut expected = vec![
        "dispatch3",
        "dispatch3/new",
        "empty",
        "empty/new",
        "steps_dst",
        "steps_float",
        "steps_int",
        "steps_return",
        "steps_setup",
        "steps_tensor",
        "tcm_reset_only",
    ];
    expected.sort_unstable();
    assert_eq!(names, expected);
    let baseline = counts["empty"];
    println!("DISPATCH loop: empty {baseline:.1} (customop_set_invocation and the call)");
    for (name, instructions) in counts.iter().filter(|(name, _)| !name.starts_with("empty")) {
        let baseline = if name.ends_with("/new") { counts["empty/new"] } else { baseline };
        println!("DISPATCH loop: {name} {:.1}", instructions - baseline);
    }
    let new_arguments = counts["dispatch3/new"] - counts["empty/new"];
    let measured = counts["dispatch3"] - baseline;
    let by_loader = mean_instructions(&report, "dispatch3") - mean_instructions(&report, "empty");
    println!("DISPATCH loader: dispatch3 {by_loader:.1}");
    println!("DISPATCH goal {DISPATCH_GOAL}: {}", if measured <= DISPATCH_GOAL { "met" } else { "MISSED" });
    assert!((by_loader - measured).abs() <= INSTRUCTIONS_PER_TICK, "the two measurements disagree");
    assert!(measured <= DISPATCH_CEILING, "dispatch overhead {measured:.1} instructions, above {DISPATCH_CEILING}");
    assert!(
        new_arguments <= NEW_ARGUMENTS_CEILING,
        "dispatch overhead with new arguments {new_arguments:.1} instructions, above {NEW_ARGUMENTS_CEILING}"
    );
}

/// `resolve_check`'s case layout and windows (qemu/firmware/src/bin/runtime_probe.rs).
const CASE_SIZE: usize = 540;
const CASE_HAS_OUTPUT: u8 = 1;
const CASE_MISALIGNED: u8 = 2;
const RESOLVE_WINDOWS: [u64; 2] = [0x7f00_0000_0000, 0x7f00_0001_0000];
const RESOLVE_WINDOW_SIZE: usize = 4096;
/// Cases per `resolve_check` op (a block of at most 65,535 bytes), and ops.
const CASES_PER_OP: usize = 48;
const RESOLVE_OPS: usize = 8;

/// A deterministic pseudo-random sequence (the constants of `finite_values`).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u32) -> u32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 32) % u64::from(bound)) as u32
    }
}

/// A descriptor of any kind setup meets: mostly the common HBM tensors and scalars of
/// rank 1 or 2 (some of them empty, huge, past their window's end, outside both
/// windows, or scalars at unaligned addresses), some SBUF or rank-3 ones, and a quarter
/// with one byte changed (any field, so every descriptor status occurs). No byte
/// length reaches 2^31, where the 64-bit host and the 32-bit device differ.
fn random_descriptor(rng: &mut Lcg) -> [u8; ARG_TENSOR_SIZE] {
    let window = RESOLVE_WINDOWS[rng.below(2) as usize];
    let offset = match rng.below(8) {
        0 => u64::from(rng.below(2 * RESOLVE_WINDOW_SIZE as u32)),
        1 => (RESOLVE_WINDOW_SIZE - 64) as u64 + u64::from(rng.below(64)),
        _ => u64::from(rng.below(RESOLVE_WINDOW_SIZE as u32)),
    };
    let address = if rng.below(12) == 0 { 0x1234_5678_9abc } else { window + offset };
    let dtype = Dtype::ALL[rng.below(8) as usize];
    let count = match rng.below(8) {
        0 => 0,
        1 => 1 + rng.below(2000),
        _ => 1 + rng.below(64),
    };
    let desc = match rng.below(12) {
        // Past what setup.S takes (2^28 elements), but below 2^31 bytes: the device's
        // `TooLarge` (a length past `isize::MAX`) is the host's `RangeOutsideWindow`.
        0..=5 if rng.below(20) == 0 => ArgTensor::hbm_tensor(Dtype::Uint8, &[65_535, 4_100], address),
        0..=5 if rng.below(2) == 0 => ArgTensor::hbm_tensor(dtype, &[count], address),
        0..=5 => {
            let shape = if count % 4 == 0 { [count / 4, 4] } else { [count, 1] };
            ArgTensor::hbm_tensor(dtype, &shape, address)
        }
        6..=9 => {
            let kind = [ScalarKind::Int, ScalarKind::LongLong, ScalarKind::Float][rng.below(3) as usize];
            let misaligned = if rng.below(4) == 0 { u64::from(rng.below(8)) } else { 0 };
            Ok(ArgTensor::hbm_scalar(kind, (address & !7) | misaligned))
        }
        10 => ArgTensor::tpb_tensor(dtype, &[count], address as u32),
        _ => ArgTensor::hbm_tensor(dtype, &[2, count, 3], address),
    };
    let mut bytes = desc.expect("an encodable descriptor").to_bytes();
    if rng.below(4) == 0 {
        // Any byte, or one of a field the checks read first (dtype, arg type, shape
        // type, rank, storage kind and its reserved byte, a dimension, num_elem and
        // the reserved words of either storage form).
        const FIELDS: [usize; 14] = [0, 1, 2, 3, 4, 5, 8, 10, 32, 33, 36, 40, 44, 47];
        let at = if rng.below(2) == 0 { FIELDS[rng.below(14) as usize] } else { rng.below(48) as usize };
        let values = [0, 1, 2, 3, 4, 5, 8, 9, 0xFF, rng.below(256) as u8];
        bytes[at] = values[rng.below(values.len() as u32) as usize];
    }
    bytes
}

/// `count` cases for `resolve_check`: fresh ones (0 to 6 arguments, sometimes 10; an
/// output mostly, sometimes a copy of an input; a few with the descriptors not
/// 4-aligned), and the previous case again, whole or with one descriptor replaced.
fn random_cases(rng: &mut Lcg, count: usize) -> Vec<u8> {
    let mut block = vec![0; count * CASE_SIZE];
    let mut previous: Option<(u8, Vec<[u8; ARG_TENSOR_SIZE]>)> = None;
    for record in block.chunks_exact_mut(CASE_SIZE) {
        let (flags, mut descriptors) = match (previous.clone(), rng.below(10)) {
            (Some(same), 0..=2) => same,
            (Some((flags, mut descriptors)), 3..=4) => {
                let slot = rng.below(descriptors.len() as u32) as usize;
                descriptors[slot] = random_descriptor(rng);
                (flags, descriptors)
            }
            _ => {
                let num_args = if rng.below(10) == 0 { 10 } else { rng.below(7) as usize };
                let output = if rng.below(10) != 0 { CASE_HAS_OUTPUT } else { 0 };
                let flags = output | if rng.below(10) == 0 { CASE_MISALIGNED } else { 0 };
                (flags, (0..=num_args).map(|_| random_descriptor(rng)).collect())
            }
        };
        if descriptors.len() > 1 && rng.below(10) == 0 {
            descriptors[0] = descriptors[1 + rng.below(descriptors.len() as u32 - 1) as usize];
        }
        record[0] = (descriptors.len() - 1) as u8;
        record[1] = flags;
        let start = 8 + usize::from(flags & CASE_MISALIGNED != 0);
        for (slot, desc) in descriptors.iter().enumerate() {
            record[start + slot * ARG_TENSOR_SIZE..][..ARG_TENSOR_SIZE].copy_from_slice(desc);
        }
        previous = Some((flags, descriptors));
    }
    block
}

/// A pulled tensor as `resolve_check` prints it: its offset in the windows' memory
/// times 2^32 plus its element count; an empty one (no data) as its count alone.
fn tensor_value(tensor: &Tensor<'_>, base: usize) -> u64 {
    let data = tensor.data_ptr();
    let offset = if data.is_null() { 0 } else { data.addr() - base };
    ((offset as u64) << 32) | tensor.numel() as u64
}

fn status_of<T>(pulled: &Result<T, ArgError>) -> u32 {
    pulled.as_ref().map_or_else(|e| Status::from(*e).0, |_| 0)
}

/// What `resolve_check` prints for the cases of `block`, computed on the host: the
/// same pulls through the host's runtime (the Rust resolver), with the windows mapped
/// onto host memory holding the same bytes.
fn resolve_on_the_host(block: &[u8]) -> Vec<String> {
    let mut memory: Vec<u64> = vec![0; 2 * RESOLVE_WINDOW_SIZE / 8];
    let bytes = memory.as_mut_ptr().cast::<u8>();
    for i in 0..2 * RESOLVE_WINDOW_SIZE {
        // SAFETY: byte `i` of `memory`'s 8,192.
        unsafe { bytes.add(i).write((i * 7 + 3) as u8) };
    }
    let base = bytes.addr();
    let records = [0, 1].map(|i| {
        TranslateRecord::window(RESOLVE_WINDOWS[i], RESOLVE_WINDOW_SIZE as u64, (base + i * RESOLVE_WINDOW_SIZE) as u64)
    });
    configure(&records).expect("the windows");
    let mut block = block.to_vec();
    let mut lines = Vec::new();
    let mut invocation = Invocation::new();
    for (case, record) in block.chunks_exact_mut(CASE_SIZE).enumerate() {
        let (num_args, flags) = (record[0], record[1]);
        let start = 8 + usize::from(flags & CASE_MISALIGNED != 0);
        let types: Vec<u8> =
            (0..usize::from(num_args)).map(|slot| record[start + (slot + 1) * ARG_TENSOR_SIZE + 1]).collect();
        let descriptors = record[start..].as_mut_ptr();
        let result = if flags & CASE_HAS_OUTPUT != 0 { descriptors.cast() } else { std::ptr::null_mut() };
        // SAFETY: the record holds the output's descriptor and `num_args` (at most 10)
        // more after it, readable and writable while `block` lives.
        unsafe {
            invocation.set_invocation(descriptors.wrapping_add(ARG_TENSOR_SIZE).cast(), u32::from(num_args), result)
        };
        let status = invocation.run(|pulls| {
            for (slot, raw_type) in types.iter().enumerate() {
                let pulled = match raw_type {
                    2 => pulls.int().map(|v| u64::from(v as u32)),
                    3 => pulls.longlong().map(|v| v as u64),
                    4 => pulls.float().map(|v| u64::from(v.to_bits())),
                    _ => pulls.tensor().map(|t| tensor_value(&t, base)),
                };
                lines.push(format!(
                    "RESOLVE {case} {slot} {} {}",
                    status_of(&pulled),
                    pulled.as_ref().map_or(0, |v| *v)
                ));
                pulled?;
            }
            let output = pulls.output();
            let value = output.as_ref().map(|t| tensor_value(t, base)).map_err(|e| *e);
            lines.push(format!("RESOLVE {case} 99 {} {}", status_of(&value), value.unwrap_or(0)));
            Ok(output?)
        });
        lines.push(format!("RESOLVE {case} status {}", status.0));
    }
    lines
}

/// Setup's resolver on the device (`runtime/arch/xtensa/setup.S` for the common
/// descriptors, `Ready::refresh` for the others) against the host's (`Ready::refresh`
/// alone), over 384 random cases of valid and invalid descriptors, in one invocation
/// per op, so that descriptors seen before are reused: every pull's status and what
/// it hands out (a tensor's place and element count, a scalar's value), the output,
/// and each invocation's status, the same.
#[test]
fn setup_resolves_as_the_host() {
    let mut rng = Lcg(16);
    let mut job = Job::new(probe(), 1).expect("job");
    let function = job.function("resolve_check");
    let mut blocks = Vec::new();
    for op in 0..RESOLVE_OPS {
        let block = random_cases(&mut rng, CASES_PER_OP);
        let (at, _) = job.place((op * 0x8000) as u32, block.clone());
        let block_arg = ArgTensor::hbm_tensor(Dtype::Uint8, &[block.len() as u32], at).expect("block").to_bytes();
        let (out, _) = output(&mut job, (op * 0x8000 + 0x7000) as u32, 1);
        job.push(&Op { function, output: Some(out), inputs: vec![block_arg], dump: OutputDump::default() })
            .expect("op");
        blocks.push(block);
    }
    let report = run(&job);
    let seen = report.core(0);
    let mut statuses = BTreeSet::new();
    for (op, block) in blocks.iter().enumerate() {
        assert_eq!(seen.ops[op].status, OpStatus::Returned(0), "op {op}");
        let printed = String::from_utf8_lossy(&seen.stdout[&(op as u32)].0).into_owned();
        let device: Vec<&str> = printed.lines().collect();
        let host = resolve_on_the_host(block);
        for (line, (device, host)) in device.iter().zip(&host).enumerate() {
            assert_eq!(device, host, "op {op}, line {line}");
        }
        assert_eq!(device.len(), host.len(), "op {op}: lines");
        statuses.extend(host.iter().filter_map(|line| line.split_whitespace().nth(3).map(str::to_string)));
    }
    // The cases reach the pulls' statuses and those of every descriptor field.
    println!("RESOLVE statuses seen: {statuses:?}");
    assert!(statuses.len() >= 16, "{statuses:?}");
}
