//! Fault injection through the simulated loader: kernels that panic, abort, exit or
//! take an exception each become their op's status, and the next op still runs;
//! scratch callbacks that hand out nothing fail entry cleanly; many 8-core ops in a row.

use neuroncustomop::wrapper_api::{ArgTensor, Dtype};
use neuroncustomop_sim::device::{self, Report};
use neuroncustomop_sim::images;
use neuroncustomop_sim::job::{Job, Op};
use neuroncustomop_wire::job::{FAULT_EMPTY_HBM_SCRATCH, FAULT_NULL_DATA_SCRATCH, OutputDump};

const LIBRARY_IMAGE_0: std::ops::Range<u32> = 0x8400_0000..0x8420_0000;

fn words(bytes: &[u8]) -> Vec<i32> {
    bytes.chunks(4).map(|w| i32::from_le_bytes(w.try_into().unwrap())).collect()
}

/// `kernels` in order, each on (x) -> out of 16 i32, every output dumped; 1 core.
fn run_kernels(kernels: &[&str]) -> (Report, Vec<i32>) {
    let library = images::build("fault_probe").expect("build fault_probe");
    let mut job = Job::new(&library, 1).expect("job");
    let input: Vec<i32> = (0..16).map(|i| i * 11 - 40).collect();
    let (x, _) = job.place(0, input.iter().flat_map(|v| v.to_le_bytes()).collect());
    for (i, kernel) in kernels.iter().enumerate() {
        let (out, out_device) = job.place(0x1000 * (i as u32 + 1), vec![0xAB; 64]);
        let op = Op {
            function: job.function(kernel),
            output: Some(ArgTensor::hbm_tensor(Dtype::Int32, &[16], out).unwrap().to_bytes()),
            inputs: vec![ArgTensor::hbm_tensor(Dtype::Int32, &[16], x).unwrap().to_bytes()],
            dump: OutputDump { address: out_device, len: 64 },
        };
        job.push(&op).expect("op");
    }
    let report = device::run(&library, &job).expect("QEMU runs");
    assert!(report.done, "the loader did not finish:\n{}\n{}", report.outcome.stdout, report.outcome.stderr);
    (report, input)
}

fn statuses(report: &Report) -> Vec<(String, String)> {
    report.core(0).ops.iter().map(|op| (op.function.clone(), op.status.clone())).collect()
}

fn printed(report: &Report, op: u32) -> String {
    String::from_utf8_lossy(&report.core(0).stdout.get(&op).map(|(text, _)| text.clone()).unwrap_or_default()).into_owned()
}

#[test]
fn a_panicking_kernel_is_its_ops_status_and_the_next_op_runs() {
    let (report, input) = run_kernels(&["panics", "copy"]);
    assert_eq!(statuses(&report), [("panics".into(), "exit(101)".into()), ("copy".into(), "0".into())]);
    let message = printed(&report, 0);
    assert!(message.contains("panicked at") && message.contains("fault_probe.rs"), "{message}");
    assert!(message.trim_end().ends_with("kernel gave up on -40"), "{message}");
    assert_eq!(words(&report.dumps[&1]), input, "the op after the panic computed its output");
}

#[test]
fn abort_and_exit_are_their_ops_status_and_the_next_op_runs() {
    let (report, input) = run_kernels(&["aborts", "exits", "copy"]);
    assert_eq!(
        statuses(&report),
        [("aborts".into(), "abort".into()), ("exits".into(), "exit(7)".into()), ("copy".into(), "0".into())]
    );
    assert_eq!(printed(&report, 0), "about to abort\n", "stdout is flushed before the abort");
    assert_eq!(words(&report.dumps[&2]), input);
}

#[test]
fn an_exception_in_a_kernel_is_reported_with_pc_and_cause_and_the_next_op_runs() {
    let (report, input) = run_kernels(&["faults", "copy"]);
    assert_eq!(statuses(&report), [("faults".into(), "exception(3)".into()), ("copy".into(), "0".into())]);
    let line = report.outcome.stderr.lines().find(|l| l.contains("exception:")).expect("a fault report");
    assert!(line.contains("EXCCAUSE=15 (LoadStorePIFAddrError)") && line.contains("EXCVADDR=0xa0000000"), "{line}");
    let pc = line.split("EPC1=0x").nth(1).and_then(|t| u32::from_str_radix(&t[..8], 16).ok()).expect("EPC1");
    assert!(LIBRARY_IMAGE_0.contains(&pc), "EPC1 {pc:#x} is not in the kernel's library image");
    assert!(!printed(&report, 0).contains("no exception"));
    assert_eq!(words(&report.dumps[&1]), input);
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
    let library = images::build("relu").expect("build relu");
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
        assert!(ops.iter().all(|op| op.status == "0"), "core {core}: {ops:?}");
    }
    for op in 0..100 {
        assert!(report.dumps[&op] == expected, "op {op}'s output differs from max(x, 0)");
    }
}
