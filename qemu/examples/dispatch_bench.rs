//! Benchmark of the persistent device session (docs/PERFORMANCE.md, "Device session"):
//! packages `relu`, boots one session, and times warm dispatches of a 65,536-element
//! single-core relu, each checked against the host reference.
//!
//! ```sh
//! cargo run --release -p neuroncustomop-sim --example dispatch_bench [-- --count-instructions]
//! ```

use neuroncustomop_sim::device::{Session, SessionOptions};
use neuroncustomop_sim::examples::{self, DEFAULT_ELEMENTS};
use neuroncustomop_sim::package;
use std::time::Instant;

fn main() {
    let count_instructions = std::env::args().any(|arg| arg == "--count-instructions");
    let package = package::package("relu").expect("package relu");
    let relu = examples::find("relu").and_then(|e| e.function("relu")).expect("relu's relu");
    let shape = examples::shape_for(DEFAULT_ELEMENTS).expect("shape");
    let case = relu.case(&shape, None, 1).expect("case");
    let options = SessionOptions { count_instructions, ..SessionOptions::default() };

    let started = Instant::now();
    let mut session = Session::boot(&package.images, 1, options).expect("boot");
    let boot = started.elapsed();
    let mut call = || {
        let started = Instant::now();
        let job = examples::job_for(&package, &[("relu", &case)], 1).expect("job");
        let staged = started.elapsed();
        let report = session.dispatch(&job).expect("dispatch");
        if std::env::var_os("BENCH_VERBOSE").is_some() {
            eprintln!("staging {:.3} s, dispatch {:.3} s", staged.as_secs_f64(), (started.elapsed() - staged).as_secs_f64());
        }
        let wall = started.elapsed();
        assert!(report.done && report.core(0).ops[0].status == "0", "{}", report.outcome.stdout);
        let bytes = &report.dumps[&0];
        let got: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(relu.first_mismatch(&got, &case.expected), None);
        (wall, report.core(0).ops[0].instructions)
    };
    let (first, instructions) = call();
    let started = Instant::now();
    let calls = 100;
    let warm: Vec<_> = (0..calls).map(|_| call().0).collect();
    let total = started.elapsed();
    let best = warm.iter().min().expect("calls");
    println!("boot {:.3} s; first call {:.3} s (entry included); instructions {instructions:?}", boot.as_secs_f64(), first.as_secs_f64());
    println!(
        "{calls} warm calls: {:.3} s in all, {:.3} s mean, {:.3} s best (count_instructions: {count_instructions})",
        total.as_secs_f64(),
        total.as_secs_f64() / calls as f64,
        best.as_secs_f64()
    );
    println!("close: {:?}", session.close());
}
