//! Fault injection through the simulated loader: kernels that panic, abort, exit, take
//! an exception or overflow the stack each become their op's status, and the next op
//! still runs; each fault's report names the kernel and its source line, from the
//! image's DWARF (`neuroncustomop_machine::symbolize`); scratch callbacks that hand out
//! nothing fail entry cleanly; many 8-core ops in a row.

use neuroncustomop::wrapper_api::{ArgTensor, Dtype};
use neuroncustomop_machine::device::{self, OpStatus, Report};
use neuroncustomop_machine::images;
use neuroncustomop_machine::job::{Job, Op};
use neuroncustomop_machine::symbolize::{self, Symbolizer};
use neuroncustomop_package::program;
use neuroncustomop_wire::job::{FAULT_EMPTY_HBM_SCRATCH, FAULT_NULL_DATA_SCRATCH, OutputDump};

use crate::probe_job::probe_job;

const LIBRARY_IMAGE_0: std::ops::Range<u32> = 0x8400_0000..0x8420_0000;

fn words(bytes: &[u8]) -> Vec<i32> {
    bytes.chunks(4).map(|w| i32::from_le_bytes(w.try_into().unwrap())).collect()
}

/// `kernels` in order, each on (x) -> out of 16 i32, every output dumped; 1 core.
fn run_kernels(kernels: &[&str]) -> (Report, Vec<i32>) {
    let (report, input, _) = run_kernels_with_images(kernels);
    (report, input)
}

/// As [`run_kernels`], with the images the run used (library and loader).
fn run_kernels_with_images(kernels: &[&str]) -> (Report, Vec<i32>, Vec<std::path::PathBuf>) {
    run_kernels_within(kernels, None)
}

/// As [`run_kernels_with_images`], each kernel stopped after `budget` instructions if
/// given (the job's default otherwise).
fn run_kernels_within(kernels: &[&str], budget: Option<u64>) -> (Report, Vec<i32>, Vec<std::path::PathBuf>) {
    let library = images::build("fault_probe").expect("build fault_probe");
    let input: Vec<i32> = (0..16).map(|i| i * 11 - 40).collect();
    let mut job = probe_job(&library, kernels, &input);
    if let Some(budget) = budget {
        job.header.set_max_instructions(budget);
    }
    let report = device::run(&library, &job).expect("QEMU runs");
    assert!(report.done, "the loader did not finish:\n{}\n{}", report.outcome.stdout, report.outcome.stderr);
    let loader = images::build("loader").expect("build loader");
    (report, input, library.cores.iter().chain(&loader.cores).cloned().collect())
}

/// The line of `qemu/firmware/src/bin/fault_probe.rs` that contains `text` (1-based).
fn probe_line(text: &str) -> usize {
    let source = include_str!("../firmware/src/bin/fault_probe.rs");
    source.lines().position(|line| line.contains(text)).expect("the probe has that line") + 1
}

/// Runs `kernel` then `copy`; returns the symbolized report of the first op, checked
/// to fit one screen, and the statuses.
fn one_screen_report(kernel: &str) -> (String, Vec<(String, OpStatus)>, Report, Vec<i32>) {
    let (report, input, images) = run_kernels_with_images(&[kernel, "copy"]);
    let symbols = Symbolizer::new(&images).expect("the images' DWARF");
    let reports = symbolize::explain(&report, &symbols);
    assert_eq!(reports.len(), 1, "one fault, one report: {reports:#?}\n{}", report.outcome.stderr);
    let text = reports[0].clone();
    println!("{text}");
    assert!(text.lines().count() <= 30, "more than a screen:\n{text}");
    (text, statuses(&report), report, input)
}

fn statuses(report: &Report) -> Vec<(String, OpStatus)> {
    report.core(0).ops.iter().map(|op| (op.function.clone(), op.status)).collect()
}

fn printed(report: &Report, op: u32) -> String {
    String::from_utf8_lossy(&report.core(0).stdout.get(&op).map(|(text, _)| text.clone()).unwrap_or_default())
        .into_owned()
}

#[test]
fn a_panicking_kernel_is_its_ops_status_and_the_next_op_runs() {
    let (report, input) = run_kernels(&["panics", "copy"]);
    assert_eq!(statuses(&report), [("panics".into(), OpStatus::Exit(101)), ("copy".into(), OpStatus::Returned(0))]);
    let message = printed(&report, 0);
    assert!(message.contains("panicked at") && message.contains("fault_probe.rs"), "{message}");
    assert!(message.lines().any(|line| line.ends_with("kernel gave up on -40")), "{message}");
    assert_eq!(words(&report.dumps[&1]), input, "the op after the panic computed its output");
}

#[test]
fn a_kernel_that_panics_holding_the_whole_heap_gives_it_back_and_the_next_op_finds_it_whole() {
    let (report, _) = run_kernels(&["heap_left", "hoards", "heap_left"]);
    assert_eq!(
        statuses(&report),
        [
            ("heap_left".into(), OpStatus::Returned(0)),
            ("hoards".into(), OpStatus::Exit(101)),
            ("heap_left".into(), OpStatus::Returned(0))
        ]
    );
    let (before, after) = (words(&report.dumps[&0]), words(&report.dumps[&2]));
    // [free bytes, largest free block, live blocks] of the HBM heap.
    assert!(before[0] >= 7 << 20 && before[1] == before[0] && before[2] == 0, "the heap before: {before:?}");
    assert_eq!(after[..3], before[..3], "the op after the panic finds the heap as the first op did");
    let took = printed(&report, 1);
    let blocks: u32 = took.split("took ").nth(1).and_then(|t| t.split(' ').next()?.parse().ok()).expect(&took);
    let given = report.core(0).given_back[&1];
    assert_eq!((given.bytes, given.blocks, given.kept, given.rebuilt), (before[0] as u32, blocks, 0, 0));
    assert!(!report.core(0).given_back.contains_key(&0), "nothing is given back after an op that returned");
}

#[test]
fn abort_and_exit_are_their_ops_status_and_the_next_op_runs() {
    let (report, input) = run_kernels(&["aborts", "exits", "copy"]);
    assert_eq!(
        statuses(&report),
        [
            ("aborts".into(), OpStatus::Abort),
            ("exits".into(), OpStatus::Exit(7)),
            ("copy".into(), OpStatus::Returned(0))
        ]
    );
    let printed = printed(&report, 0);
    assert!(
        printed.starts_with("about to abort\nFAULT core=0 kind=abort "),
        "stdout is flushed before the abort: {printed}"
    );
    assert_eq!(words(&report.dumps[&2]), input);
}

#[test]
fn an_exception_in_a_kernel_is_reported_with_pc_and_cause_and_the_next_op_runs() {
    let (report, input) = run_kernels(&["faults", "copy"]);
    assert_eq!(statuses(&report), [("faults".into(), OpStatus::Exception(3)), ("copy".into(), OpStatus::Returned(0))]);
    let line = report.outcome.stderr.lines().find(|l| l.contains("exception:")).expect("a fault report");
    assert!(line.contains("EXCCAUSE=15 (LoadStorePIFAddrError)") && line.contains("EXCVADDR=0xa0000000"), "{line}");
    let pc = line.split("EPC1=0x").nth(1).and_then(|t| u32::from_str_radix(&t[..8], 16).ok()).expect("EPC1");
    assert!(LIBRARY_IMAGE_0.contains(&pc), "EPC1 {pc:#x} is not in the kernel's library image");
    assert!(!printed(&report, 0).contains("no exception"));
    assert_eq!(words(&report.dumps[&1]), input);
}

#[test]
fn an_infinite_recursion_is_a_stack_overflow_named_with_its_kernel_and_line_and_the_next_op_runs() {
    let (text, statuses, report, input) = one_screen_report("recurses");
    // 4: EXIT_STACK_OVERFLOW.
    assert_eq!(statuses, [("recurses".into(), OpStatus::Exception(4)), ("copy".into(), OpStatus::Returned(0))]);
    assert!(text.starts_with("op 0: stack overflow in kernel `recurses` on core 0\n"), "{text}");
    let here =
        format!("at fault_probe::depth_first (qemu/firmware/src/bin/fault_probe.rs:{})", probe_line("fn depth_first("));
    let call = format!(
        "at fault_probe::depth_first (qemu/firmware/src/bin/fault_probe.rs:{})",
        probe_line("let below = depth_first(")
    );
    assert!(text.contains(&here) || text.contains(&call), "{text}");
    assert!(text.contains("more frames"), "the walk went deep: {text}");
    assert_eq!(words(&report.dumps[&1]), input, "the op after the overflow computed its output");
}

#[test]
fn an_infinite_loop_is_stopped_at_its_budget_named_with_its_kernel_and_line_and_the_next_op_runs() {
    let (report, input, images) = run_kernels_within(&["spins", "copy"], Some(20_000_000));
    assert_eq!(statuses(&report), [("spins".into(), OpStatus::OverBudget), ("copy".into(), OpStatus::Returned(0))]);
    let symbols = Symbolizer::new(&images).expect("the images' DWARF");
    let reports = symbolize::explain(&report, &symbols);
    assert_eq!(reports.len(), 1, "{reports:#?}");
    let text = &reports[0];
    println!("{text}");
    assert!(text.starts_with("op 0: kernel `spins` on core 0 ran past 20.0 M instructions"), "{text}");
    assert!(text.contains("an infinite loop?"), "{text}");
    let body = probe_line("turns = black_box(turns.wrapping_add(1));");
    let head = probe_line("extern \"C\" fn spins()");
    let line: usize =
        text.rsplit("fault_probe.rs:").next().unwrap().trim_end_matches(|c: char| !c.is_ascii_digit()).parse().unwrap();
    assert!((head..=body + 1).contains(&line), "stopped at line {line}, not in spins ({head}..={body}): {text}");
    assert!(text.lines().count() <= 3, "{text}");
    assert_eq!(words(&report.dumps[&1]), input, "the op after the stopped one computed its output");
}

#[test]
fn a_null_dereference_is_named_with_its_kernel_and_line() {
    let (text, statuses, report, input) = one_screen_report("reads_null");
    assert_eq!(statuses, [("reads_null".into(), OpStatus::Exception(3)), ("copy".into(), OpStatus::Returned(0))]);
    assert!(text.starts_with("op 0: exception ") && text.contains("in kernel `reads_null` on core 0"), "{text}");
    let line = probe_line("read_volatile(null)");
    assert!(text.contains(&format!("at reads_null (qemu/firmware/src/bin/fault_probe.rs:{line})")), "{text}");
    assert!(text.contains("neuroncustomop_firmware::loader::"), "the backtrace reaches the loader: {text}");
    assert_eq!(words(&report.dumps[&1]), input);
}

#[test]
fn a_double_panic_is_named_with_its_kernel_and_the_line_of_the_second_panic() {
    let (text, statuses, report, input) = one_screen_report("double_panics");
    assert_eq!(statuses, [("double_panics".into(), OpStatus::Exit(101)), ("copy".into(), OpStatus::Returned(0))]);
    assert!(text.starts_with("op 0: panic while panicking in kernel `double_panics` on core 0\n"), "{text}");
    let inner = probe_line("formatting the message failed too");
    assert!(text.contains(&format!("(qemu/firmware/src/bin/fault_probe.rs:{inner})")), "{text}");
    assert!(
        text.contains(" double_panics  qemu/firmware/src/bin/fault_probe.rs:"),
        "the kernel is in the backtrace: {text}"
    );
    assert!(printed(&report, 0).contains("panicked while panicking at"), "{}", printed(&report, 0));
    assert_eq!(words(&report.dumps[&1]), input);
}

#[test]
fn an_abort_and_a_panic_are_named_with_their_kernel_and_line() {
    let (text, _, _, _) = one_screen_report("aborts");
    let line = probe_line("start_exit::abort()");
    assert!(text.starts_with("op 0: abort in kernel `aborts` on core 0\n"), "{text}");
    // An `extern "C"` kernel keeps its unmangled name.
    assert!(text.contains(&format!("at aborts (qemu/firmware/src/bin/fault_probe.rs:{line})")), "{text}");
    let (text, _, _, _) = one_screen_report("panics");
    let line = probe_line("panic!(\"kernel gave up");
    assert!(text.starts_with("op 0: panic in kernel `panics` on core 0\n"), "{text}");
    assert!(text.contains(&format!("at fault_probe::panics (qemu/firmware/src/bin/fault_probe.rs:{line})")), "{text}");
}

#[test]
fn a_pc_alone_is_described_by_its_function_and_line() {
    // What a report holding only a PC gets (an infinite loop stopped by the budget).
    let library = images::build("fault_probe").expect("build fault_probe");
    let symbols = Symbolizer::new(&library.cores[..1]).expect("the image's DWARF");
    let spins = neuroncustomop_machine::elf::symbol(&std::fs::read(&library.cores[0]).unwrap(), "spins")
        .unwrap()
        .expect("spins");
    let described = symbols.describe(spins);
    let line = probe_line("extern \"C\" fn spins()");
    assert_eq!(described, format!("spins (qemu/firmware/src/bin/fault_probe.rs:{line})"));
    assert_eq!(symbols.describe(0x1000), "0x00001000 (in no image)");
}

#[test]
fn statuses_print_as_hex_and_name_and_stops_with_the_runtimes_names() {
    assert_eq!(device::describe_status(OpStatus::Returned(68)), "0x44 TCM_EXHAUSTED");
    assert_eq!(device::describe_status(OpStatus::Returned(65543)), "0x10007 Op(7)");
    assert_eq!(device::describe_status(OpStatus::Returned(0)), "0x0 OK");
    assert_eq!(device::describe_status(OpStatus::Exception(4)), "exception(4) EXIT_STACK_OVERFLOW");
    assert_eq!(device::describe_status(OpStatus::Exit(101)), "exit(101) EXIT_PANIC");
    assert_eq!(device::describe_status(OpStatus::UnknownKernel), "unknown-kernel");
}

#[test]
fn scratch_callbacks_that_hand_out_nothing_fail_entry_with_no_scratch() {
    let library = images::build("fault_probe").expect("build fault_probe");
    for fault in [FAULT_NULL_DATA_SCRATCH, FAULT_EMPTY_HBM_SCRATCH] {
        let mut job = Job::new(&library, 1).expect("job");
        job.header.faults = fault;
        let report = device::run(&library, &job).expect("QEMU runs");
        assert!(report.done, "{}", report.outcome.stdout);
        // 4: SUNDA_UCODE_LIB_STATUS::FAILURE_NO_SCRATCH, and nothing registered.
        assert_eq!(report.core(0).entry_status, Some(4), "fault {fault:#x}");
        assert!(report.core(0).registrations.is_empty());
    }
}

#[test]
fn a_hundred_eight_core_ops_back_to_back_all_match() {
    let library = program::build("relu").expect("build relu");
    let mut job = Job::new(&library, 8).expect("job");
    let n = 1000u32;
    let input: Vec<f32> = (0..n).map(|i| (i as f32 - 500.5) * 0.25).collect();
    let (x, _) = job.place(0, input.iter().flat_map(|v| v.to_le_bytes()).collect());
    let function = job.function("relu_multicore");
    for op in 0..100u32 {
        let (out, out_device) = job.place(0x1_0000 + op * 0x1000, vec![0; 4 * n as usize]);
        job.push(&Op {
            function,
            output: Some(ArgTensor::hbm_tensor(Dtype::Float32, &[n], out).unwrap().to_bytes()),
            inputs: vec![ArgTensor::hbm_tensor(Dtype::Float32, &[n], x).unwrap().to_bytes()],
            dump: OutputDump { address: out_device, len: 4 * n },
        })
        .expect("op");
    }
    let report = device::run(&library, &job).expect("QEMU runs");
    assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    let expected: Vec<u8> = input.iter().flat_map(|v| v.max(0.0).to_le_bytes()).collect();
    for core in 0..8 {
        let ops = report.core(core).ops;
        assert_eq!(ops.len(), 100, "core {core}");
        assert!(ops.iter().all(|op| op.status == OpStatus::Returned(0)), "core {core}: {ops:?}");
    }
    for op in 0..100 {
        assert!(report.dumps[&op] == expected, "op {op}'s output differs from max(x, 0)");
    }
}
