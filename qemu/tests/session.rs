//! The persistent device session: one boot, job after job; the library is entered
//! once; a kernel that stops ends only its op; a hung device is restarted for the next
//! job; jobs that do not fit the session are refused with a named error.

use neuroncustomop::wrapper_api::{ArgTensor, Dtype};
use neuroncustomop_machine::device::{OpStatus, Report, RunError, Session, SessionOptions};
use neuroncustomop_machine::images::{self, Images};
use neuroncustomop_machine::job::{Job, Op};
use neuroncustomop_package::program;
use neuroncustomop_wire::job::OutputDump;
use std::time::Duration;

use crate::probe_job::probe_job;

fn fault_probe() -> Images {
    images::build("fault_probe").expect("build fault_probe")
}

/// A kernel that returned success.
const OK: OpStatus = OpStatus::Returned(0);

fn statuses(report: &Report) -> Vec<OpStatus> {
    report.core(0).ops.iter().map(|op| op.status).collect()
}

fn words(bytes: &[u8]) -> Vec<i32> {
    bytes.chunks(4).map(|w| i32::from_le_bytes(w.try_into().unwrap())).collect()
}

#[test]
fn one_boot_runs_job_after_job_and_enters_the_library_once() {
    let library = fault_probe();
    let mut session = Session::boot(&library, 1, SessionOptions::default()).expect("boot");
    for round in 0..5 {
        let input: Vec<i32> = (0..16).map(|i| i * 7 - round * 100).collect();
        let report = session.dispatch(&probe_job(&library, &["copy"], &input)).expect("dispatch");
        assert!(report.done, "round {round}:\n{}\n{}", report.outcome.stdout, report.outcome.stderr);
        assert_eq!(report.outcome.status, None, "the device stays up");
        assert_eq!(statuses(&report), [OK], "round {round}");
        assert_eq!(words(&report.dumps[&0]), input, "round {round}: each job's own data");
        let entered = report.core(0).entry_status;
        assert_eq!(entered, (round == 0).then_some(0), "round {round}: entry_func runs on the first job only");
    }
    let status = session.close().expect("the loader exits when the session closes");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_cancelled_job_stops_the_device_and_the_next_job_boots_it_again() {
    let library = fault_probe();
    let input: Vec<i32> = (0..16).collect();
    let mut session = Session::boot(&library, 1, SessionOptions::default()).expect("boot");
    // `spins` loops until its budget (10 G instructions, 13-21 s): cancelled at the
    // fifth question instead, a fraction of a second in.
    let asked = std::cell::Cell::new(0);
    let cancelled = || {
        asked.set(asked.get() + 1);
        asked.get() >= 5
    };
    let spun = session.dispatch_cancellable(&probe_job(&library, &["spins"], &input), &cancelled);
    assert!(matches!(spun, Err(RunError::Cancelled)), "{spun:?}");
    assert_eq!(asked.get(), 5, "asked until it answered true");
    let report = session.dispatch(&probe_job(&library, &["copy"], &input)).expect("dispatch");
    assert_eq!(statuses(&report), [OK], "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    assert_eq!(report.core(0).entry_status, Some(0), "a fresh device enters the library again");
    assert_eq!(words(&report.dumps[&0]), input);
}

#[test]
fn a_kernel_that_sleeps_wakes_on_its_timer() {
    let library = fault_probe();
    let input: Vec<i32> = (0..16).collect();
    let options = SessionOptions { wall_limit: Some(Duration::from_secs(30)), ..SessionOptions::default() };
    let mut session = Session::boot(&library, 1, options).expect("boot");
    let report = session.dispatch(&probe_job(&library, &["sleeps"], &input)).expect("dispatch");
    assert_eq!(statuses(&report), [OK], "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    assert_eq!(words(&report.dumps[&0]), input);
}

#[test]
fn a_kernel_that_stops_ends_only_its_op_and_its_stderr_stays_with_its_job() {
    let library = fault_probe();
    let input: Vec<i32> = (0..16).collect();
    let mut session = Session::boot(&library, 1, SessionOptions::default()).expect("boot");
    let first = session.dispatch(&probe_job(&library, &["faults", "copy"], &input)).expect("dispatch");
    assert_eq!(statuses(&first), [OpStatus::Exception(3), OK]);
    assert!(first.outcome.stderr.contains("exception:"), "{}", first.outcome.stderr);
    let second = session.dispatch(&probe_job(&library, &["panics"], &input)).expect("dispatch");
    assert_eq!(statuses(&second), [OpStatus::Exit(101)]);
    assert!(!second.outcome.stderr.contains("exception:"), "the first job's stderr leaked: {}", second.outcome.stderr);
    let third = session.dispatch(&probe_job(&library, &["copy"], &input)).expect("dispatch");
    assert_eq!(statuses(&third), [OK]);
    assert_eq!(words(&third.dumps[&0]), input);
}

#[test]
fn a_hung_device_is_reported_and_booted_again_for_the_next_job() {
    let library = fault_probe();
    let input: Vec<i32> = (0..16).map(|i| -i).collect();
    let options = SessionOptions { wall_limit: Some(Duration::from_secs(3)), ..SessionOptions::default() };
    let mut session = Session::boot(&library, 1, options).expect("boot");
    let hung = session.dispatch(&probe_job(&library, &["spins"], &input)).expect("dispatch");
    assert!(!hung.done && hung.outcome.timed_out, "{}", hung.outcome.stdout);
    let next = session.dispatch(&probe_job(&library, &["copy"], &input)).expect("dispatch");
    assert!(next.done, "{}\n{}", next.outcome.stdout, next.outcome.stderr);
    assert_eq!(next.core(0).entry_status, Some(0), "the fresh device entered the library");
    assert_eq!(words(&next.dumps[&0]), input);
}

#[test]
fn eight_core_jobs_in_one_session_each_compute_their_own_data() {
    let library = program::build("relu").expect("build relu");
    let options = SessionOptions { wall_limit: Some(Duration::from_secs(60)), ..SessionOptions::default() };
    let mut session = Session::boot(&library, 8, options).expect("boot");
    for round in 0..3u32 {
        let n = 4096u32;
        let input: Vec<f32> = (0..n).map(|i| (i as f32 - 2000.5) * (round as f32 + 1.0)).collect();
        let mut job = Job::new(&library, 8).expect("job");
        let (x, _) = job.place(0, input.iter().flat_map(|v| v.to_le_bytes()).collect());
        let (out, out_device) = job.place(0x10_0000, vec![0xFF; 4 * n as usize]);
        let function = job.function("relu_multicore");
        job.push(&Op {
            function,
            output: Some(ArgTensor::hbm_tensor(Dtype::Float32, &[n], out).unwrap().to_bytes()),
            inputs: vec![ArgTensor::hbm_tensor(Dtype::Float32, &[n], x).unwrap().to_bytes()],
            dump: OutputDump { address: out_device, len: 4 * n },
        })
        .expect("op");
        let report = session.dispatch(&job).expect("dispatch");
        assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
        for core in 0..8 {
            assert_eq!(report.core(core).ops.iter().map(|op| op.status).collect::<Vec<_>>(), [OK], "core {core}");
        }
        let expected: Vec<u8> = input.iter().flat_map(|v| v.max(0.0).to_le_bytes()).collect();
        assert!(report.dumps[&0] == expected, "round {round}: the output differs from max(x, 0)");
    }
}

#[test]
fn jobs_the_session_cannot_run_are_refused_by_name() {
    let library = fault_probe();
    let mut session = Session::boot(&library, 1, SessionOptions::default()).expect("boot");
    let wide = Job::new(&library, 2).expect("job");
    assert!(matches!(session.dispatch(&wide), Err(RunError::Cores { session: 1, job: 2 })));
    let input: Vec<i32> = (0..16).collect();
    assert!(session.dispatch(&probe_job(&library, &["copy"], &input)).expect("dispatch").done);
    let mut reentry = probe_job(&library, &["copy"], &input);
    reentry.header.handoff_size = 32;
    assert!(matches!(session.dispatch(&reentry), Err(RunError::EntryChanged)));
    let report = session.dispatch(&probe_job(&library, &["copy"], &input)).expect("the session still works");
    assert_eq!(words(&report.dumps[&0]), input);
}
