//! An op author's flow end to end under QEMU (issue 7): every example is packaged
//! (8 images and `ucode_lib.json`), its ops are dispatched from 0x85/0x86 words through
//! the simulated loader with the package's FunctionIds, and every output is checked
//! against the host reference of `neuroncustomop_sim::examples`.

use neuroncustomop::data_transfer::NeuronMemcpyMethod;
use neuroncustomop_sim::examples::{self, Case, Run, job_for, run_cases, run_job, stage};
use neuroncustomop_sim::images::CORES;
use neuroncustomop_sim::package::{self, ISA_VERSION, Package, library_file_name, ucode_version};
use neuroncustomop_sim::ucode_lib::UcodeLib;
use neuroncustomop_wire::{FunctionId, encode};
use std::collections::BTreeMap;
use std::fs;
use std::sync::Mutex;

/// Status of a kernel's own failure code 1 (`0x1_0000 + code`): the examples' "shapes
/// do not fit".
const SHAPE_MISMATCH_STATUS: &str = "65537";

/// Packages `name` once per test binary.
fn package(name: &str) -> Package {
    static PACKAGED: Mutex<BTreeMap<String, Package>> = Mutex::new(BTreeMap::new());
    let mut packaged = PACKAGED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    packaged
        .entry(name.to_string())
        .or_insert_with(|| package::package(name).unwrap_or_else(|e| panic!("packaging {name}: {e}")))
        .clone()
}

/// A case of `function` of `example`.
fn case(example: &str, function: &str, shape: &[u16], k: Option<usize>, seed: u64) -> Case {
    let function = examples::find(example).and_then(|e| e.function(function)).expect("a known kernel");
    function.case(shape, k, seed).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `ops` of `example` as one job on `cores` cores, and checks that every op ran
/// on every core with status 0 and matches its reference.
fn check(example: &str, cores: usize, ops: &[(&str, Case)]) -> Run {
    let package = package(example);
    let dispatched: Vec<(&str, &Case)> = ops.iter().map(|(function, case)| (*function, case)).collect();
    let run = run_cases(&package, &dispatched, cores, false).expect("QEMU runs");
    let raw = || format!("{}\n{}", run.report.outcome.stdout, run.report.outcome.stderr);
    assert!(run.report.done, "the loader did not finish:\n{}", raw());
    for (op, (function, case)) in ops.iter().enumerate() {
        assert!(run.succeeded(op, cores), "op {op} ({function}): statuses {:?}", run.statuses(op));
        let reference = examples::find(example).and_then(|e| e.function(function)).expect("a known kernel");
        if let Some(mismatch) = reference.first_mismatch(&run.outputs[op], &case.expected) {
            panic!("op {op} ({function}, output shape {:?}): {mismatch}", case.output_shape);
        }
        assert_eq!(run.outputs[op].len(), case.expected.len(), "op {op} ({function})");
    }
    run
}

#[test]
fn relu_in_every_style_matches_the_host() {
    // 5,003 elements: not a multiple of 8 cores or of the 1,024-element TCM chunk.
    check(
        "relu",
        1,
        &[
            ("relu", case("relu", "relu", &[5003], None, 1)),
            ("relu_tcm", case("relu", "relu_tcm", &[3, 1001], None, 2)),
        ],
    );
    check("relu", CORES, &[("relu_multicore", case("relu", "relu_multicore", &[5003], None, 3))]);
}

#[test]
fn the_job_selects_any_memcpy_backend_for_the_tcm_copies() {
    // One 1,024-element TCM chunk: one copy in, one copy out.
    let relu = case("relu", "relu_tcm", &[1000], None, 23);
    let packaged = package("relu");
    let reference = examples::find("relu").and_then(|e| e.function("relu_tcm")).expect("relu_tcm");
    let mut counts = BTreeMap::new();
    // An invalid method is refused by the runtime: the library keeps its own (DMA).
    for method in
        NeuronMemcpyMethod::ALL.map(|method| method as u32).into_iter().chain([NeuronMemcpyMethod::MAX_METHODS])
    {
        let mut job = job_for(&packaged, &[("relu_tcm", &relu)], 1).expect("job");
        job.header.memcpy_method = method;
        let counted = method < NeuronMemcpyMethod::MAX_METHODS;
        let run = run_job(&packaged, &job, counted).expect("QEMU runs");
        assert!(run.succeeded(0, 1), "method {method}: {:?}", run.statuses(0));
        assert_eq!(reference.first_mismatch(&run.outputs[0], &relu.expected), None, "method {method}");
        if counted {
            counts.insert(method, run.instructions(0)[0]);
        }
    }
    // The backend shows in the kernel's count: the two CPU copies (one routine since the
    // libc `memcpy` became the vector copy, so the same count) are far below waiting for
    // the DMA engine, which the library uses by default.
    let count = |method: NeuronMemcpyMethod| counts[&(method as u32)];
    let (c, vector, dma) =
        (count(NeuronMemcpyMethod::CMemcpy), count(NeuronMemcpyMethod::VecMemcpy), count(NeuronMemcpyMethod::Dma));
    assert!(c == vector && c.max(vector) < dma, "C {c}, vector {vector}, DMA {dma}: the job's method was not used");
}

#[test]
fn vector_add_matches_the_host() {
    check("vector_add", 1, &[("vector_add", case("vector_add", "vector_add", &[4, 999], None, 4))]);
    check(
        "vector_add",
        CORES,
        &[("vector_add_multicore", case("vector_add", "vector_add_multicore", &[5003], None, 5))],
    );
}

#[test]
fn sort_and_top_k_match_the_host_on_rows_with_duplicates_nans_and_zeros() {
    let ops = [
        // Fewer rows than cores, more rows than cores, and one row longer than the TCM
        // scratch (3,072 elements), sorted on the heap.
        ("sort_ascending", case("sort", "sort_ascending", &[3, 100], None, 6)),
        ("sort_descending", case("sort", "sort_descending", &[21, 37], None, 7)),
        ("sort_ascending", case("sort", "sort_ascending", &[4000], None, 8)),
        // K: 1, a power of two, one past it, a third of the row, all of it, and none.
        ("topk_largest", case("sort", "topk_largest", &[9, 300], Some(1), 9)),
        ("topk_largest", case("sort", "topk_largest", &[9, 300], Some(16), 10)),
        ("topk_smallest", case("sort", "topk_smallest", &[9, 300], Some(17), 11)),
        ("topk_smallest", case("sort", "topk_smallest", &[2, 5000], Some(1666), 12)),
        ("topk_largest", case("sort", "topk_largest", &[5, 33], Some(33), 13)),
        ("topk_largest", case("sort", "topk_largest", &[5, 33], Some(0), 14)),
    ];
    for (function, case) in &ops[..3] {
        let examples::Arg::Tensor { shape, values } = &case.inputs[0] else { panic!("a tensor") };
        let first_row = &values[..usize::from(shape[shape.len() - 1])];
        let distinct: std::collections::BTreeSet<u32> = first_row.iter().map(|v| v.to_bits()).collect();
        assert!(distinct.len() < first_row.len(), "{function}: the first row has duplicates");
        assert!(first_row.iter().any(|v| v.is_nan()), "{function}: the first row has a NaN");
    }
    check("sort", CORES, &ops);
}

#[test]
fn the_nan_policy_puts_every_nan_last_whatever_its_sign() {
    // One row of every kind of special value, twice over, sorted both ways.
    let specials: Vec<f32> =
        [0xFFC0_0000u32, 0x7F80_0000, 0x7FC0_0000, 0x8000_0000, 0x0000_0000, 0xFF80_0000, 0x7F80_0001, 0xBF80_0000]
            .iter()
            .chain(&[0x3F80_0000, 0xFFC0_0000, 0x7FC0_0000, 0x0000_0000])
            .map(|&bits| f32::from_bits(bits))
            .collect();
    let row = specials.len();
    let shape = [1, row as u16];
    let sorted = |order| {
        let expected = examples::sort_rows(&specials, row, row, order);
        Case {
            inputs: vec![examples::Arg::Tensor { shape: shape.to_vec(), values: specials.clone() }],
            output_shape: shape.to_vec(),
            expected,
        }
    };
    let ascending = sorted(examples::Order::Ascending);
    let bits: Vec<u32> = ascending.expected.iter().map(|v| v.to_bits()).collect();
    assert_eq!(
        bits,
        [
            0xFF80_0000,
            0xBF80_0000,
            0x8000_0000,
            0x0000_0000,
            0x0000_0000,
            0x3F80_0000,
            0x7F80_0000,
            0x7F80_0001,
            0x7FC0_0000,
            0x7FC0_0000,
            0xFFC0_0000,
            0xFFC0_0000
        ],
        "the documented order"
    );
    check("sort", CORES, &[("sort_ascending", ascending), ("sort_descending", sorted(examples::Order::Descending))]);
}

#[test]
fn the_c_kernel_matches_the_host() {
    check("c_kernel", 1, &[("scale", case("c_kernel", "scale", &[3, 1001], None, 15))]);
    check("c_kernel", CORES, &[("scale_multicore", case("c_kernel", "scale_multicore", &[5003], None, 16))]);
}

#[test]
fn kernels_refuse_shapes_that_do_not_fit_with_a_clear_status() {
    let mut added = case("vector_add", "vector_add", &[10], None, 17);
    added.inputs[1] = examples::Arg::Tensor { shape: vec![11], values: vec![1.0; 11] };
    let run = run_cases(&package("vector_add"), &[("vector_add", &added)], 1, false).expect("QEMU runs");
    assert_eq!(run.statuses(0), [SHAPE_MISMATCH_STATUS], "mismatched input shapes");

    // The C kernel reads the shapes with customop_tensor_numel and reports the same
    // status with customop_fail.
    let mut scaled = case("c_kernel", "scale", &[10], None, 21);
    scaled.output_shape = vec![9];
    scaled.expected.truncate(9);
    let run = run_cases(&package("c_kernel"), &[("scale", &scaled)], 1, false).expect("QEMU runs");
    assert_eq!(run.statuses(0), [SHAPE_MISMATCH_STATUS], "the C kernel's output of another size");

    let mut sorted = case("sort", "sort_ascending", &[2, 10], None, 18);
    sorted.output_shape = vec![2, 9];
    sorted.expected.truncate(18);
    let mut top = case("sort", "topk_largest", &[2, 10], Some(10), 19);
    top.output_shape = vec![2, 11];
    top.expected.resize(22, 0.0);
    let mut rows = case("sort", "topk_smallest", &[2, 10], Some(3), 20);
    rows.output_shape = vec![3, 3];
    rows.expected.resize(9, 0.0);
    let ops = [("sort_ascending", &sorted), ("topk_largest", &top), ("topk_smallest", &rows)];
    let run = run_cases(&package("sort"), &ops, 1, false).expect("QEMU runs");
    for op in 0..ops.len() {
        assert_eq!(run.statuses(op), [SHAPE_MISMATCH_STATUS], "op {op}: K != n, K > n, other rows");
    }
}

#[test]
fn a_real_package_round_trips_through_the_strict_reader() {
    for (name, kernels) in
        [("relu", &["relu", "relu_tcm", "relu_multicore"][..]), ("c_kernel", &["scale", "scale_multicore"][..])]
    {
        let packaged = package(name);
        let text = fs::read_to_string(packaged.dir.join("ucode_lib.json")).expect("ucode_lib.json");
        let read = UcodeLib::from_json(&text).expect("the strict reader accepts it");
        assert_eq!(read, packaged.ucode_lib);
        assert_eq!(read.to_json().expect("writes"), text, "byte-exact round trip");
        assert_eq!(packaged.kernels(), kernels);

        assert_eq!(read.libraries.len(), CORES);
        for (cpu, library) in read.libraries.iter().enumerate() {
            assert_eq!(library.library, library_file_name(name, cpu));
            assert_eq!(
                (usize::from(library.cpu_id), usize::from(library.total_cpus), library.is_builtin),
                (cpu, CORES, false)
            );
            assert_eq!(
                (library.ulib_to_ucode_version.as_str(), library.ulib_to_isa_version.as_str()),
                (ucode_version().as_str(), ISA_VERSION)
            );
            let bound: Vec<(&str, u8)> =
                library.functions.iter().map(|f| (f.name.as_str(), f.sub_opcode.get())).collect();
            let dense: Vec<(&str, u8)> = kernels.iter().enumerate().map(|(id, name)| (*name, id as u8)).collect();
            assert_eq!(bound, dense, "FunctionIds dense from 0 in registration order");
            let image = fs::read(packaged.dir.join(&library.library)).expect("the image");
            assert_eq!(image, fs::read(&packaged.images.cores[cpu]).expect("the packaged image"));
            let base = 0x8400_0000 + cpu as u32 * 0x20_0000;
            let entry = neuroncustomop_sim::elf::symbol(&image, "entry_func").expect("ELF").expect("entry_func");
            assert!((base..base + 0x20_0000).contains(&entry), "cpu {cpu}'s image is linked for cpu {cpu}");
        }

        let opened = Package::open(&packaged.dir).expect("the package opens");
        assert_eq!(opened.ucode_lib, read);
        assert_eq!(opened.images.cores, packaged.images.cores);
    }
}

/// A job of the relu package on one core with op 0 a good `relu` and op 1 given as raw
/// words by `words`, from the descriptors of a second relu case.
fn run_words(words: impl FnOnce(&Package, &examples::Staged) -> Vec<u8>) -> Run {
    let package = package("relu");
    let mut job = package.job(1).expect("job");
    let good = case("relu", "relu", &[64], None, 21);
    let staged = stage(&mut job, &good).expect("staged");
    let relu = package.function_id("relu").expect("relu");
    job.push(&neuroncustomop_sim::job::Op {
        function: relu,
        output: Some(staged.output),
        inputs: staged.inputs,
        dump: staged.dump,
    })
    .expect("op 0");
    let bad = stage(&mut job, &case("relu", "relu", &[64], None, 22)).expect("staged");
    job.words.extend(words(&package, &bad));
    job.dumps.push(bad.dump);
    let run = run_job(&package, &job, false).expect("QEMU runs");
    assert!(run.report.done, "{}", run.report.outcome.stdout);
    assert!(run.succeeded(0, 1), "op 0 runs: {:?}", run.statuses(0));
    let reference = examples::find("relu").and_then(|e| e.function("relu")).expect("relu");
    assert_eq!(reference.first_mismatch(&run.outputs[0], &good.expected), None);
    run
}

/// The loader's line for op 1, which it rejected: no kernel ran.
fn rejected(run: &Run) -> String {
    assert_eq!(run.statuses(1), ["bad-words"]);
    run.report.outcome.stdout.lines().find(|line| line.starts_with("OP 1 ")).expect("an OP 1 line").to_string()
}

#[test]
fn a_function_id_the_package_does_not_have_is_rejected_by_the_loader() {
    let run = run_words(|package, staged| {
        let unknown = FunctionId::new(package.kernels().len() as u8).expect("an id");
        encode(unknown, Some(&staged.output), &staged.inputs).expect("words").as_bytes().to_vec()
    });
    assert!(rejected(&run).ends_with("error=FunctionId 3 names no registered function"), "{}", rejected(&run));
}

#[test]
fn a_payload_count_that_does_not_match_n_is_rejected_by_the_loader() {
    let run = run_words(|package, staged| {
        let mut words = encode(package.function_id("relu").expect("relu"), Some(&staged.output), &staged.inputs)
            .expect("words")
            .as_bytes()
            .to_vec();
        words[0x0C] = 4; // num_payloads 4 with num_arguments 1 (N + 2 = 3)
        words
    });
    assert!(
        rejected(&run).ends_with("error=num_payloads 4 does not match num_arguments 1 (expected 3)"),
        "{}",
        rejected(&run)
    );
}

#[test]
fn a_second_output_is_rejected_by_the_loader() {
    let run = run_words(|package, staged| {
        // Two inputs, the second of them marked as an output too.
        let inputs = [staged.inputs[0], staged.inputs[0]];
        let mut words = encode(package.function_id("relu").expect("relu"), Some(&staged.output), &inputs)
            .expect("words")
            .as_bytes()
            .to_vec();
        words[2 * 64 + 0x0F] |= 0x01; // word 2's flags: OUTPUT
        words
    });
    assert!(
        rejected(&run).ends_with("error=word 2: a second output payload (at most one output)"),
        "{}",
        rejected(&run)
    );
}
