//! Benchmark of counting with the TCG plugin (docs/PERFORMANCE.md, "Counting with the
//! TCG plugin"): the wall time of a compute-bound op (count_probe's `work`, about 35 M
//! instructions a core) on 1 core and on 8, with each core on a host thread of its own
//! (QEMU's MTTCG) with and without the plugin, and under `-icount`.
//!
//! ```sh
//! cargo run --release -p neuroncustomop-sim --example count_bench
//! ```

use neuroncustomop::wrapper_api::{ArgTensor, Dtype};
use neuroncustomop_machine::device::{Session, SessionOptions};
use neuroncustomop_machine::images::{self, Images};
use neuroncustomop_machine::job::{Job, Op};
use neuroncustomop_wire::job::OutputDump;
use std::time::{Duration, Instant};

/// Turns of `work`'s loop per core: 7 instructions each.
const TURNS: i32 = 5_000_000;
/// Timed calls per mode; the best is kept (the machine is shared).
const CALLS: usize = 10;

/// One `work` op on `cores` cores, each running [`TURNS`] turns.
fn job(library: &Images, cores: usize) -> Job {
    let mut job = Job::new(library, cores).expect("job");
    let function = job.function("work");
    let turns: Vec<u8> = [TURNS; 8].iter().flat_map(|t| t.to_le_bytes()).collect();
    let (x, _) = job.place(0, turns);
    let (out, out_device) = job.place(0x800, vec![0; 32]);
    job.push(&Op {
        function,
        output: Some(ArgTensor::hbm_tensor(Dtype::Int32, &[8], out).unwrap().to_bytes()),
        inputs: vec![ArgTensor::hbm_tensor(Dtype::Int32, &[8], x).unwrap().to_bytes()],
        dump: OutputDump { address: out_device, len: 32 },
    })
    .expect("op");
    job
}

/// The best wall time of each mode over [`CALLS`] rounds, each round one warm call of
/// every mode in turn (so a burst of load on the shared machine hits them alike), and
/// the slowest core's count of each.
fn time(library: &Images, cores: usize, modes: &[SessionOptions]) -> Vec<(Duration, u64)> {
    let job = job(library, cores);
    let mut sessions: Vec<Session> =
        modes.iter().map(|options| Session::boot(library, cores, options.clone()).expect("QEMU boots")).collect();
    // The first job enters the library: not timed.
    for session in &mut sessions {
        session.dispatch(&job).expect("QEMU runs");
    }
    let mut results = vec![(Duration::MAX, 0); modes.len()];
    for _ in 0..CALLS {
        for (session, (best, instructions)) in sessions.iter_mut().zip(&mut results) {
            let started = Instant::now();
            let report = session.dispatch(&job).expect("QEMU runs");
            *best = (*best).min(started.elapsed());
            assert!(report.done, "{}", report.outcome.stdout);
            *instructions =
                (0..cores as u32).filter_map(|c| report.core(c).ops[0].instructions).max().expect("counted");
        }
    }
    results
}

fn main() {
    let library = images::build("count_probe").expect("build count_probe");
    // Counting alone: the memory checks (on by default) cost far more (checks_bench).
    let threads = SessionOptions { count_instructions: false, checked: false, ..SessionOptions::default() };
    let modes = [SessionOptions { plugin: false, ..threads.clone() }, threads, SessionOptions::default()];
    for cores in [1, 8] {
        let [(uncounted, icount_figure), (counted, plugin_figure), (serial, _)] = time(&library, cores, &modes)[..]
        else {
            unreachable!("three modes")
        };
        println!(
            "{cores} core(s): threads without the plugin {:.3} s, with it {:.3} s ({:.2}x); -icount {:.3} s; \
             slowest core {plugin_figure} instructions (ICOUNT: {icount_figure})",
            uncounted.as_secs_f64(),
            counted.as_secs_f64(),
            counted.as_secs_f64() / uncounted.as_secs_f64(),
            serial.as_secs_f64(),
        );
    }
}
