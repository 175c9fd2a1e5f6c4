//! The entry contract under QEMU (docs/abi/entry.md): the simulated loader
//! (qemu/firmware/src/loader.rs) enters real linked library images through
//! `entry_func` and `register_funcs`, and every fact it prints is checked here against
//! exact values.
//!
//! Library images: `examples/relu.rs` (a `kernels!` table), and the firmware probes
//! `table_probe` (a hand-written C table whose kernel count the test sets) and
//! `runtime_probe` (kernels that print).

use neuroncustomop::wrapper_api::{ArgTensor, Dtype, ScalarKind};
use neuroncustomop_machine::device::{self, CoreReport, Kernel, OpStatus, Registration, Report};
use neuroncustomop_machine::elf;
use neuroncustomop_machine::images::{CORES, Images};
use neuroncustomop_machine::job::{Job, Op};
use neuroncustomop_package::program;
use neuroncustomop_wire::job::{INJECTED_REGISTRATION_FAILURE, OutputDump, library_handle};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// `table_probe`'s kernel-count word (see qemu/firmware/src/bin/table_probe.rs).
const TABLE_PROBE_COUNT_ADDRESS: u32 = 0x7F70_0000;
/// `SUNDA_UCODE_LIB_STATUS` values (docs/abi/entry.md §2).
const SUCCESS: u32 = 0;
const FAILURE_ABI_MISMATCH: u32 = 1;
const FAILURE_NUM_KERNELS: u32 = 2;
/// The stdout ring's capacity in every library image (docs/abi/entry.md §9).
const RING_CAPACITY: usize = 16 * 1024;

/// The callbacks a successful `entry_func` makes, in order (docs/abi/entry.md §3, §5).
const ENTRY_CALLBACKS: [&str; 5] =
    ["get_data_scratch", "get_hbm_scratch", "get_dma_queue", "get_libc_fn(abort)", "get_libc_fn(exit)"];

/// Builds `program` once per test binary (cargo serializes device builds anyway).
fn images(program: &str) -> Images {
    static BUILT: Mutex<BTreeMap<String, Images>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    built
        .entry(program.to_string())
        .or_insert_with(|| program::build(program).unwrap_or_else(|e| panic!("building {program}: {e}")))
        .clone()
}

/// Runs `job` and checks the loader reached its end.
fn run(library: &Images, job: &Job) -> Report {
    let report = device::run(library, job).expect("QEMU runs");
    let outcome = &report.outcome;
    assert!(!outcome.timed_out && report.done, "the loader did not finish:\n{}\n{}", outcome.stdout, outcome.stderr);
    report
}

/// `table_probe`'s name for kernel `index`.
fn probe_name(index: usize) -> String {
    format!("k{index:05}")
}

/// A `table_probe` job on `cores` cores whose table claims `count` kernels.
fn table_probe_job(cores: usize, count: u32) -> (Images, Job) {
    let library = images("table_probe");
    let mut job = Job::new(&library, cores).expect("job");
    job.data.push((TABLE_PROBE_COUNT_ADDRESS, count.to_le_bytes().to_vec()));
    (library, job)
}

/// An op with no arguments: a lone 0x85 header.
fn bare_op(job: &mut Job, function: &str) -> Op {
    Op { function: job.function(function), output: None, inputs: vec![], dump: OutputDump::default() }
}

fn successful(names: &[String]) -> Vec<Registration> {
    names.iter().map(|name| Registration { name: name.clone(), status: SUCCESS }).collect()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| name.to_string()).collect()
}

/// Every core entered, with the full callback sequence, registered exactly `expected`
/// in order, and `register_funcs` reported them in the same order with its handle.
fn assert_registered(report: &Report, cores: usize, expected: &[String]) {
    for core in 0..cores as u32 {
        let seen = report.core(core);
        assert_eq!(seen.entry_status, Some(SUCCESS), "core {core}");
        assert_eq!(seen.callbacks, ENTRY_CALLBACKS, "core {core}");
        assert_eq!(seen.registrations, successful(expected), "core {core}");
        let reported: Vec<(&str, u32)> = seen.kernels.iter().map(|k| (k.name.as_str(), k.handle)).collect();
        let wanted: Vec<(&str, u32)> = expected.iter().map(|name| (name.as_str(), library_handle(core))).collect();
        assert_eq!(reported, wanted, "core {core}");
    }
}

/// The address of `symbol` in core `core`'s image.
fn symbol(library: &Images, core: usize, symbol: &str) -> u32 {
    let bytes = std::fs::read(&library.cores[core]).expect("read image");
    elf::symbol(&bytes, symbol).expect("ELF").unwrap_or_else(|| panic!("{symbol} in {}", library.name))
}

#[test]
fn the_success_path_registers_exactly_the_tables_names_in_order() {
    let relu = images("relu");
    let job = Job::new(&relu, CORES).expect("job");
    assert_registered(&run(&relu, &job), CORES, &names(&["relu", "relu_tcm", "relu_multicore"]));

    let probe = images("runtime_probe");
    let job = Job::new(&probe, 2).expect("job");
    let expected = names(&[
        "hello",
        "flood",
        "mix",
        "copy",
        "pull_past_end",
        "tensor_for_scalar",
        "scalar_for_tensor",
        "output_twice",
        "dst_twice",
        "return_without_setup",
        "dispatch3",
        "empty",
        "steps_setup",
        "steps_tensor",
        "steps_int",
        "steps_float",
        "steps_dst",
        "steps_return",
        "tcm_reset_only",
        "dispatch_loop",
        "resolve_check",
    ]);
    assert_registered(&run(&probe, &job), 2, &expected);

    let (library, job) = table_probe_job(2, 3);
    assert_registered(&run(&library, &job), 2, &names(&["k00000", "k00001", "k00002"]));
}

/// `relu`'s entry with a handoff block claiming `size` bytes, on two cores, with one op.
fn enter_with_handoff_size(size: u32) -> Report {
    let relu = images("relu");
    let mut job = Job::new(&relu, 2).expect("job");
    job.header.handoff_size = size;
    let op = bare_op(&mut job, "relu");
    job.push(&op).expect("op");
    run(&relu, &job)
}

#[test]
fn a_handoff_block_below_36_bytes_is_an_abi_mismatch_before_any_callback() {
    for size in [0, 35] {
        let report = enter_with_handoff_size(size);
        for core in 0..2 {
            let seen = report.core(core);
            assert_eq!(seen.entry_status, Some(FAILURE_ABI_MISMATCH), "size {size}, core {core}");
            assert_eq!(seen.callbacks, Vec::<String>::new(), "size {size}, core {core}");
            assert_eq!(seen.registrations, vec![], "size {size}, core {core}");
            assert_eq!(seen.kernels, vec![], "size {size}, core {core}");
            assert_eq!(seen.ops.len(), 1, "size {size}, core {core}");
            assert_eq!(seen.ops[0].status, OpStatus::NotEntered, "size {size}, core {core}");
        }
        let lines = &report.outcome.stdout;
        assert!(!lines.contains("CALLBACK") && !lines.contains("REGISTER "), "size {size}:\n{lines}");
    }
}

#[test]
fn handoff_blocks_of_36_bytes_and_longer_are_accepted() {
    for size in [36, 100] {
        let report = enter_with_handoff_size(size);
        assert_registered(&report, 2, &names(&["relu", "relu_tcm", "relu_multicore"]));
        for core in 0..2 {
            // relu ran: the op has no arguments, so its pull fails with NO_MORE_ARGS.
            let ops: Vec<OpStatus> = report.core(core).ops.into_iter().map(|op| op.status).collect();
            assert_eq!(ops, [OpStatus::Returned(6)], "size {size}, core {core}");
        }
    }
}

#[test]
fn a_count_of_0x7fff_registers_every_kernel() {
    let (library, job) = table_probe_job(1, 0x7FFF);
    let report = run(&library, &job);
    let expected: Vec<String> = (0..0x7FFF).map(probe_name).collect();
    let seen = report.core(0);
    assert_eq!(seen.entry_status, Some(SUCCESS));
    assert_eq!(seen.registrations, successful(&expected));
    let kernels = [0, 1, 2].map(|k| symbol(&library, 0, &format!("table_probe_kernel_{k}")));
    let wanted: Vec<Kernel> = expected
        .iter()
        .enumerate()
        .map(|(i, name)| Kernel { name: name.clone(), ptr: kernels[i % 3], handle: library_handle(0) })
        .collect();
    assert!(seen.kernels == wanted, "register_funcs reported {} kernels, not the 0x7FFF expected", seen.kernels.len());
}

#[test]
fn a_count_of_zero_registers_nothing_and_succeeds() {
    let (library, job) = table_probe_job(1, 0);
    assert_registered(&run(&library, &job), 1, &[]);
}

#[test]
fn counts_of_0x8000_and_above_fail_with_num_kernels_and_register_nothing() {
    for count in [0x8000, 0xFFFF_FFFF] {
        let (library, job) = table_probe_job(2, count);
        let report = run(&library, &job);
        for core in 0..2 {
            let seen = report.core(core);
            assert_eq!(seen.entry_status, Some(FAILURE_NUM_KERNELS), "count {count:#x}, core {core}");
            // The count gate comes after the scratch, DMA and CRT steps (§3).
            assert_eq!(seen.callbacks, ENTRY_CALLBACKS, "count {count:#x}, core {core}");
            assert_eq!(seen.registrations, vec![], "count {count:#x}, core {core}");
            assert_eq!(seen.kernels, vec![], "count {count:#x}, core {core}");
        }
    }
}

#[test]
fn a_failed_registration_is_returned_and_nothing_after_it_is_registered() {
    const COUNT: usize = 5;
    let all: Vec<String> = (0..COUNT).map(probe_name).collect();
    for k in [0, 2, COUNT - 1] {
        let (library, mut job) = table_probe_job(2, COUNT as u32);
        job.header.fail_registration_at = k as u32;
        let report = run(&library, &job);
        let mut expected = successful(&all[..k]);
        expected.push(Registration { name: all[k].clone(), status: INJECTED_REGISTRATION_FAILURE });
        for core in 0..2 {
            let seen = report.core(core);
            assert_eq!(seen.entry_status, Some(INJECTED_REGISTRATION_FAILURE), "k {k}, core {core}");
            assert_eq!(seen.registrations, expected, "k {k}, core {core}");
            // The loader calls register_funcs only after a successful entry.
            assert_eq!(seen.kernels, vec![], "k {k}, core {core}");
        }
    }
}

#[test]
fn register_funcs_passes_each_kernels_pointer_name_and_handle() {
    const COUNT: usize = 7;
    let (library, mut job) = table_probe_job(CORES, COUNT as u32);
    // k00004 is table_probe_kernel_1: dispatching it proves the pointer is that kernel.
    let op = bare_op(&mut job, &probe_name(4));
    job.push(&op).expect("op");
    let report = run(&library, &job);
    for core in 0..CORES {
        let kernels = [0, 1, 2].map(|k| symbol(&library, core, &format!("table_probe_kernel_{k}")));
        let expected: Vec<Kernel> = (0..COUNT)
            .map(|i| Kernel { name: probe_name(i), ptr: kernels[i % 3], handle: library_handle(core as u32) })
            .collect();
        let seen = report.core(core as u32);
        assert_eq!(seen.kernels, expected, "core {core}");
        assert_eq!(seen.ops[0].status, OpStatus::Returned(0), "core {core}");
        assert_eq!(seen.stdout[&0], (b"table_probe_kernel_1\n".to_vec(), 0), "core {core}");
    }

    // A `kernels!` table: the C-style kernels' pointers are their symbols.
    let probe = images("runtime_probe");
    let report = run(&probe, &Job::new(&probe, 2).expect("job"));
    for core in 0..2 {
        let seen = report.core(core as u32);
        let by_name: BTreeMap<&str, &Kernel> = seen.kernels.iter().map(|k| (k.name.as_str(), k)).collect();
        for name in ["hello", "flood", "dst_twice", "return_without_setup", "empty", "dispatch_loop", "resolve_check"] {
            assert_eq!(by_name[name].ptr, symbol(&probe, core, name), "{name} on core {core}");
            assert_eq!(by_name[name].handle, library_handle(core as u32), "{name} on core {core}");
        }
    }
}

#[test]
fn a_kernels_println_reaches_the_loader() {
    let probe = images("runtime_probe");
    let mut job = Job::new(&probe, CORES).expect("job");
    let op = bare_op(&mut job, "hello");
    job.push(&op).expect("op");
    let report = run(&probe, &job);
    for core in 0..CORES as u32 {
        let seen = report.core(core);
        assert_eq!(seen.ops[0].status, OpStatus::Returned(0), "core {core}");
        let expected = format!("hello from core {core}\n").into_bytes();
        assert_eq!(seen.stdout, BTreeMap::from([(0, (expected, 0))]), "core {core}");
    }
}

/// What `flood(lines)` prints, all of it.
fn flood_text(lines: u32) -> Vec<u8> {
    (0..lines).flat_map(|line| format!("flood {line:05}\n").into_bytes()).collect()
}

/// What the loader drains after a kernel printed `text` into an empty ring: the newest
/// `RING_CAPACITY` bytes, and how many older ones were lost.
fn drained(text: &[u8]) -> (Vec<u8>, u32) {
    let lost = text.len().saturating_sub(RING_CAPACITY);
    (text[lost..].to_vec(), lost as u32)
}

#[test]
fn stdout_overflow_keeps_the_newest_bytes_and_counts_the_lost_ones() {
    let probe = images("runtime_probe");
    let mut job = Job::new(&probe, 1).expect("job");
    let flood = job.function("flood");
    let output = ArgTensor::hbm_tensor(Dtype::Float32, &[1], job.place(0, vec![0; 4]).0).expect("output").to_bytes();
    // 1365 lines of 12 bytes fill the ring but for 4 bytes; 1366 overrun it by 8.
    let floods = [1365, 1366, 3000];
    let hello = bare_op(&mut job, "hello");
    // A short print first, so the floods start mid-ring and wrap.
    job.push(&hello).expect("op");
    for (index, lines) in floods.into_iter().enumerate() {
        let (count, _) = job.place(0x100 + 0x10 * index as u32, i32::to_le_bytes(lines as i32).to_vec());
        let scalar = ArgTensor::hbm_scalar(ScalarKind::Int, count).to_bytes();
        job.push(&Op { function: flood, output: Some(output), inputs: vec![scalar], dump: OutputDump::default() })
            .expect("op");
    }
    job.push(&hello).expect("op");
    let report = run(&probe, &job);
    let seen: CoreReport = report.core(0);
    let statuses: Vec<OpStatus> = seen.ops.iter().map(|op| op.status).collect();
    assert_eq!(statuses, [OpStatus::Returned(0); 5]);
    let greeting = b"hello from core 0\n".to_vec();
    let mut expected = BTreeMap::from([(0, (greeting.clone(), 0)), (4, (greeting, 0))]);
    for (index, lines) in floods.into_iter().enumerate() {
        expected.insert(index as u32 + 1, drained(&flood_text(lines)));
    }
    assert_eq!(expected[&1].1, 0);
    assert_eq!(expected[&2].1, 8);
    assert_eq!(expected[&3].1, 36_000 - 16_384);
    for (op, (text, lost)) in &expected {
        let (got, got_lost) = seen.stdout.get(op).unwrap_or_else(|| panic!("op {op} printed nothing"));
        assert_eq!(got_lost, lost, "op {op}: bytes lost");
        let first_difference = got.iter().zip(text).position(|(a, b)| a != b);
        assert_eq!((got.len(), first_difference), (text.len(), None), "op {op}: the bytes kept");
    }
    assert_eq!(seen.stdout.len(), expected.len());
}

/// `count` f32s: negatives, positives and zeros, small and large, including subnormals.
#[test]
fn every_cores_output_reaches_the_host_per_core_and_per_op_with_its_losses() {
    let probe = images("runtime_probe");
    let mut job = Job::new(&probe, CORES).expect("job");
    let flood = job.function("flood");
    let output = ArgTensor::hbm_tensor(Dtype::Float32, &[1], job.place(0, vec![0; 4]).0).expect("output").to_bytes();
    let (count, _) = job.place(0x100, i32::to_le_bytes(3000).to_vec());
    let scalar = ArgTensor::hbm_scalar(ScalarKind::Int, count).to_bytes();
    let hello = bare_op(&mut job, "hello");
    job.push(&hello).expect("op");
    job.push(&Op { function: flood, output: Some(output), inputs: vec![scalar], dump: OutputDump::default() })
        .expect("op");
    let report = run(&probe, &job);
    for core in 0..CORES as u32 {
        let seen = report.core(core);
        let greeting = format!("hello from core {core}\n").into_bytes();
        assert_eq!(seen.stdout.get(&0), Some(&(greeting, 0)), "core {core}, op 0");
        let (text, lost) = drained(&flood_text(3000));
        let (got, got_lost) = seen.stdout.get(&1).unwrap_or_else(|| panic!("core {core}: op 1 printed nothing"));
        assert_eq!((*got_lost, got.len()), (lost, text.len()), "core {core}, op 1: bytes lost and kept");
        assert!(*got == text, "core {core}, op 1: the newest bytes are kept");
    }
}

fn relu_input(count: usize) -> Vec<f32> {
    let mut state = 0x2545_F491_u32;
    (0..count)
        .map(|i| match i % 5 {
            0 => 0.0,
            1 => f32::from_bits(0x0000_0003 + i as u32), // subnormal
            _ => {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                ((state >> 8) as f32 / 65_536.0 - 128.0) * if i % 7 == 0 { 1e30 } else { 1.0 }
            }
        })
        .collect()
}

fn to_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Runs relu kernel `name` on `cores` cores over `input`; returns the output bytes.
fn run_relu(name: &str, cores: usize, input: &[f32]) -> (Report, Vec<u8>) {
    let relu = images("relu");
    let mut job = Job::new(&relu, cores).expect("job");
    let len = input.len() as u32;
    let (x, _) = job.place(0, to_bytes(input));
    let (out, out_device) = job.place(0x10_0000, vec![0xA5; 4 * input.len()]);
    let desc = |addr| ArgTensor::hbm_tensor(Dtype::Float32, &[len], addr).expect("descriptor").to_bytes();
    let op = Op {
        function: job.function(name),
        output: Some(desc(out)),
        inputs: vec![desc(x)],
        dump: OutputDump { address: out_device, len: 4 * len },
    };
    job.push(&op).expect("op");
    let report = run(&relu, &job);
    let dumped = report.dumps.get(&0).cloned().unwrap_or_default();
    (report, dumped)
}

#[test]
fn an_example_kernel_is_registered_and_invoked() {
    let input = relu_input(3000);
    let reference = to_bytes(&input.iter().map(|&v| if v > 0.0 { v } else { 0.0 }).collect::<Vec<f32>>());
    for (name, cores) in [("relu", 1), ("relu_tcm", 1), ("relu_multicore", CORES)] {
        let (report, output) = run_relu(name, cores, &input);
        for core in 0..cores as u32 {
            assert_eq!(report.core(core).ops[0].status, OpStatus::Returned(0), "{name} on core {core}");
        }
        assert!(output == reference, "{name}: output differs from max(x, 0)");
    }
}
