//! Exact per-core instruction counts and the instruction budget: a kernel's count on 8
//! cores is its count alone on one core, the TCG plugin's count (QEMU's MTTCG, no
//! `-icount`) equals the Debug option's ICOUNT on every op, and a kernel that runs past
//! its budget is stopped, named, and the next op runs. The plugin counts a translated
//! block whole when it starts; blocks that exceptions cut short (window overflows and
//! underflows, faults, the interrupts that end a sleep) still count exactly.

use neuroncustomop::wrapper_api::{ArgTensor, Dtype};
use neuroncustomop_machine::device::{self, OpReport, OpStatus, Report, Session, SessionOptions};
use neuroncustomop_machine::images::{self, Images};
use neuroncustomop_machine::job::{Job, Op};
use neuroncustomop_wire::job::{OutputDump, icount_plan};

use crate::probe_job::{int_bytes, probe_job};

/// One `work` op per entry of `turns`: core c of the op runs `turns[op][c]` turns.
fn work_job(library: &Images, cores: usize, turns: &[[i32; 8]]) -> Job {
    kernel_job(library, "work", cores, turns)
}

/// One op of count_probe's `kernel` per entry of `turns`, core c of the op given
/// `turns[op][c]`.
fn kernel_job(library: &Images, kernel: &str, cores: usize, turns: &[[i32; 8]]) -> Job {
    let mut job = Job::new(library, cores).expect("job");
    let function = job.function(kernel);
    for (op, turns) in turns.iter().enumerate() {
        let at = 0x1000 * op as u32;
        let (x, _) = job.place(at, int_bytes(turns));
        let (out, out_device) = job.place(at + 0x800, vec![0; 32]);
        job.push(&Op {
            function,
            output: Some(ArgTensor::hbm_tensor(Dtype::Int32, &[8], out).unwrap().to_bytes()),
            inputs: vec![ArgTensor::hbm_tensor(Dtype::Int32, &[8], x).unwrap().to_bytes()],
            dump: OutputDump { address: out_device, len: 32 },
        })
        .expect("op");
    }
    job
}

/// Runs `job` with each core on a host thread of its own (no `-icount`): the TCG
/// plugin counts.
fn run_threads(library: &Images, job: &Job) -> Report {
    let options = SessionOptions { count_instructions: false, ..SessionOptions::default() };
    let mut session = Session::boot(library, job.header.cores as usize, options).expect("QEMU boots");
    session.dispatch(job).expect("QEMU runs")
}

/// Core `core`'s count of each op: the TCG plugin's, which must equal the firmware's
/// `ICOUNT` on every op.
fn counts(report: &Report, core: u32) -> Vec<u64> {
    let ops = report.core(core).ops;
    assert!(
        ops.iter().all(|op| op.status == OpStatus::Returned(0) && op.exact),
        "core {core}: {ops:?}\n{}",
        report.outcome.stdout
    );
    for op in &ops {
        assert_eq!(op.instructions, op.icount, "core {core}: the plugin's count against ICOUNT's");
    }
    ops.iter().map(|op| op.instructions.expect("counted")).collect()
}

#[test]
fn each_cores_count_on_eight_cores_is_its_count_alone_on_one_core() {
    let library = images::build("count_probe").expect("build count_probe");
    // About 70 M instructions a core, each core a different amount: 560 M in all.
    let turns: [i32; 8] = std::array::from_fn(|core| 10_000_000 + 100_000 * core as i32);
    let together = run_threads(&library, &work_job(&library, 8, &[turns]));
    assert!(together.done, "{}\n{}", together.outcome.stdout, together.outcome.stderr);
    // The same work alone on core 0: op c runs core c's turns.
    let alone: Vec<[i32; 8]> = turns.iter().map(|&t| [t, 0, 0, 0, 0, 0, 0, 0]).collect();
    let single = run_threads(&library, &work_job(&library, 1, &alone));
    assert!(single.done, "{}\n{}", single.outcome.stdout, single.outcome.stderr);
    let alone_counts = counts(&single, 0);
    let mut total = 0;
    for core in 0..8u32 {
        let count = counts(&together, core)[0];
        let reference = alone_counts[core as usize];
        total += count;
        let off = count.abs_diff(reference) as f64 / reference as f64;
        println!("core {core}: {count} instructions on 8 cores, {reference} alone");
        assert!(off <= 0.001, "core {core}: {count} on 8 cores, {reference} alone ({:.4}% off)", off * 100.0);
    }
    assert!(total >= 500_000_000, "the kernel is big enough to have fooled a shared clock: {total}");
}

#[test]
fn a_kernel_past_its_budget_is_stopped_and_named_and_the_next_op_runs() {
    let library = images::build("fault_probe").expect("build fault_probe");
    let budget = 20_000_000;
    let input: Vec<i32> = (0..16).collect();
    let mut job = probe_job(&library, &["spins", "copy"], &input);
    job.header.set_max_instructions(budget);
    let report = device::run(&library, &job).expect("QEMU runs");
    assert!(report.done, "a run whose ops all ended is done:\n{}", report.outcome.stdout);
    let ops = report.core(0).ops;
    assert_eq!(ops.iter().map(|op| op.status).collect::<Vec<_>>(), [OpStatus::OverBudget, OpStatus::Returned(0)]);
    assert_eq!(
        ops.iter().map(|op| op.exact).collect::<Vec<_>>(),
        [false, true],
        "a stopped kernel's count is not exact"
    );
    let stopped = report.over_budget();
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    let stopped = &stopped[0];
    assert_eq!((stopped.op, stopped.core, stopped.function.as_str()), (0, 0, "spins"));
    assert!((budget..budget + 10_000).contains(&stopped.instructions), "{stopped:?}");
    assert!((0x8400_0000..0x8420_0000).contains(&stopped.pc), "the pc is in the library image: {stopped:?}");
    let message = stopped.to_string();
    assert!(message.starts_with("kernel `spins` on core 0 ran past 20.0 M instructions"), "{message}");
    assert_eq!(report.dumps[&1], int_bytes(&input), "the op after it ran");
}

#[test]
fn an_icount_wrap_in_the_middle_of_an_op_is_counted_exactly() {
    let library = images::build("count_probe").expect("build count_probe");
    // Two short runs give the cost of a turn and the fixed cost; the long one wraps
    // ICOUNT once and must land exactly on the line. A budget just past 2^32 makes the
    // firmware start each op's ICOUNT 20 M instructions below its wrap
    // (`wire::job::icount_plan`), so the wrap comes after 20 M instructions instead of
    // 4.29 G: the same wrap handler (`icount.S`) and the same sum across it
    // (`icount_total`), a hundredth of the run. The first op pays 36 instructions of
    // first-time setup the later ones do not: a warm-up op comes first.
    let budget = (1u64 << 32) + 20_000_000;
    let turns = [1_000_000, 1_000_000, 2_000_000, 6_000_000];
    let mut job = work_job(&library, 1, &turns.map(|t| [t, 0, 0, 0, 0, 0, 0, 0]));
    job.header.set_max_instructions(budget);
    // The plugin leaves ICOUNT's wrap handler out, as ICOUNT does: equal after a wrap.
    let report = run_threads(&library, &job);
    assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    let [_, one, two, long] = counts(&report, 0)[..] else { panic!("four ops") };
    let per_turn = (two - one) / 1_000_000;
    assert_eq!((two - one) % 1_000_000, 0, "a turn costs a whole number of instructions");
    let (start, _) = icount_plan(budget);
    assert!(u64::from(start) + two < 1 << 32, "the short ops end before the wrap: {two}");
    assert!(u64::from(start) + long > 1 << 32, "the long op wrapped ICOUNT: {long}");
    assert_eq!(long, one + 5_000_000 * per_turn, "one wrap, counted exactly");
}

/// Each op's count on core 0 of `job`, run with each core on a host thread of its own
/// (the plugin's, checked against ICOUNT's in the same run) and under `-icount`
/// (ICOUNT's alone). A kernel that returned counts the same in both; one that stopped
/// (`exact=no`) is not compared: the plugin counts the way it stopped (the fault path,
/// its report) to the loader's resumption, which `ICOUNT` does not.
fn plugin_and_icount(library: &Images, job: &Job) -> (Vec<OpReport>, Vec<Option<u64>>) {
    let threads = run_threads(library, job);
    assert!(threads.done, "{}\n{}", threads.outcome.stdout, threads.outcome.stderr);
    let ops = threads.core(0).ops;
    for op in &ops {
        println!("{} ({:?}): plugin {:?}, ICOUNT {:?}", op.function, op.status, op.plugin.count(), op.icount);
    }
    for op in &ops {
        let (Some(plugin), Some(icount)) = (op.plugin.count(), op.icount) else {
            panic!("both counted `{}`: {op:?}", op.function)
        };
        // A kernel that sleeps too: the sleep's set-up runs below ICOUNTLEVEL, so
        // ICOUNT counts it as the plugin does (runtime/arch/xtensa/cpu.S), and neither
        // counts the `waiti` (qemu/plugin/src/count.rs; counted, fault_probe's `sleeps`
        // was one more per sleep that slept).
        if op.exact {
            assert_eq!(plugin, icount, "`{}`: the plugin's count against ICOUNT's", op.function);
        }
    }
    let serial = device::run(library, job).expect("QEMU runs");
    assert!(serial.done, "{}\n{}", serial.outcome.stdout, serial.outcome.stderr);
    (ops, serial.core(0).ops.iter().map(|op| op.instructions).collect())
}

#[test]
fn blocks_cut_short_by_exceptions_count_exactly() {
    // Window overflows at `entry` and underflows at `retw`, mid-block, 2,000 times over.
    let library = images::build("count_probe").expect("build count_probe");
    let (ops, serial) = plugin_and_icount(&library, &kernel_job(&library, "deep", 1, &[[20, 0, 0, 0, 0, 0, 0, 0]]));
    assert_eq!(ops[0].status, OpStatus::Returned(0));
    assert_eq!(ops[0].instructions, serial[0], "the same op under -icount");
    assert!(ops[0].instructions > Some(20 * 100 * 10), "{ops:?}");

    // Faults in the middle of a block (a load from nowhere, through a null pointer), a
    // recursion that overflows its stack after many window overflows (all three stop
    // the kernel), a kernel that sleeps three times (each wake-up a level-1 interrupt),
    // and one that returns after them.
    let library = images::build("fault_probe").expect("build fault_probe");
    let kernels = ["faults", "reads_null", "recurses", "sleeps", "copy"];
    let (ops, serial) = plugin_and_icount(&library, &probe_job(&library, &kernels, &[7; 16]));
    let statuses: Vec<OpStatus> = ops.iter().map(|op| op.status).collect();
    assert!(
        matches!(statuses[..3], [OpStatus::Exception(_), OpStatus::Exception(_), OpStatus::Exception(_)]),
        "{statuses:?}"
    );
    assert_eq!(statuses[3..], [OpStatus::Returned(0), OpStatus::Returned(0)]);
    // Every sleep of `sleeps` is long enough to sleep in both modes (fault_probe.rs),
    // so it too counts the same under -icount.
    for (index, op) in ops.iter().enumerate().filter(|(_, op)| op.exact) {
        assert_eq!(op.instructions, serial[index], "`{}` under -icount", op.function);
    }
}
