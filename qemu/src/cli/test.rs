//! `sim test`: every test of the repository.

use clap::Args;
use std::fs::File;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::Instant;

/// Set up, then run every test: the host unit tests and QEMU tests of every crate,
/// every example's own tests (examples/<name>/tests/), then the Python package's pytest
/// tests with each fuzz target briefly beside them.
#[derive(Debug, Args)]
pub struct TestArgs {}

/// Runs `test`.
pub fn exec(_: TestArgs) -> super::Outcome {
    let start = Instant::now();
    super::setup::install_packages()?;
    let root = super::checkout()?;
    // PyTorch for the Python tests (qemu/python/torch-cache.sh): on a machine without it,
    // a 2.7 GB download that takes minutes. It is network-bound and the cargo tests are
    // CPU-bound, so it runs beside them; run-tests.sh then finds it installed. Its
    // messages go to a log, printed only if it fails.
    let torch_log_path = root.join("target/torch-cache.log");
    std::fs::create_dir_all(root.join("target"))?;
    let torch_log = File::create(&torch_log_path)?;
    let mut torch = Command::new("bash")
        .arg(root.join("qemu/python/torch-cache.sh"))
        // The interpreter run-tests.sh makes its virtualenv from: the cache is per
        // Python version.
        .arg("python3")
        .stdout(Stdio::null())
        .stderr(torch_log)
        .spawn()?;
    // The fuzz targets' build (qemu/fuzz/run.sh --build: the runtime and the crates the
    // targets read, with ASan and coverage, and libFuzzer's C++; about 110 s of CPU cold)
    // is CPU-bound like the cargo tests, but those leave a core idle much of the time
    // (waiting on QEMU and on one-core steps: the device's `core`, one codegen unit, the
    // test binaries' links): at the lowest priority it takes only what they leave.
    // run.sh then finds the targets built. Its messages (the build's wall and CPU time,
    // or why it failed, which run.sh then says again) go to a log, printed when it is
    // waited for.
    let fuzz_build_log_path = root.join("target/fuzz-build-ahead.log");
    let mut fuzz_build = beside(19, &root.join("qemu/fuzz/run.sh"), "--build", &fuzz_build_log_path)?;
    // The Python package's build (run-tests.sh --install-only: the host crates again, in
    // the release profile, in target/python; about 210 s of CPU cold) beside the cargo
    // tests as well, at a priority between theirs and the fuzz build's: the tests leave
    // a core idle much of the time. Its messages go to a log, printed when it is waited
    // for; run-tests.sh --installed then runs the tests on it.
    let python_build_log_path = root.join("target/python-build-ahead.log");
    let mut python_build =
        beside(10, &root.join("qemu/python/run-tests.sh"), "--install-only", &python_build_log_path)?;
    // The runtimes `sim setup` builds (the device's, the host tier's), beside the tests'
    // build and then the tests: a test that needs one before it is done waits for its
    // turn to build it (the build lock every process takes) and finds it built. Not
    // the host tier's release loader `sim setup` also builds: the tests' build makes the
    // loader the tests run (beside `ncop` and the test binaries:
    // neuroncustomop_hosttier::loader_program), and a release build of the host stack
    // would only delay them (`sim dist` builds it for the wheel).
    let runtimes = super::setup::Runtimes::start();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // --workspace: the examples are members, so their tests run with the rest. Built
    // first: the Python tests use what it builds (`ncop`, the host tier's loader).
    let built = timed(
        "cargo test --workspace --no-run",
        Command::new(&cargo).current_dir(&root).args(["test", "--workspace", "--no-run"]),
    )?;
    // One test thread more than the cores: the integration tests spend part of their
    // time waiting on QEMU, gdb and builds in other processes (with 2 threads on the
    // 2-core machine the binary kept 1.6 cores busy and took 155 s; with 3, 125 s).
    // RUST_TEST_THREADS, when set, still decides.
    let threads = std::thread::available_parallelism().map_or(2, |cores| cores.get() + 1);
    let tests = if built.success() {
        timed(
            "cargo test --workspace",
            Command::new(&cargo)
                .current_dir(&root)
                .args(["test", "--workspace"])
                .env("RUST_TEST_THREADS", std::env::var("RUST_TEST_THREADS").unwrap_or_else(|_| threads.to_string())),
        )?
    } else {
        built
    };
    // Each waited for on every path, so that no half-finished build or installation
    // outlives the run.
    let runtimes = runtimes.wait();
    match &runtimes {
        Ok(took) => eprintln!("sim test: the runtimes (sim setup's) built beside the tests' build in {took:.0} s"),
        Err(e) => eprintln!("sim test: {e}"),
    }
    let waiting = Instant::now();
    let torch = torch.wait()?;
    eprintln!("sim test: PyTorch ready {:.0} s after the cargo tests", waiting.elapsed().as_secs_f64());
    if !torch.success() {
        eprintln!("sim test: installing PyTorch failed ({torch}); its log, {}:", torch_log_path.display());
        eprint!("{}", std::fs::read_to_string(&torch_log_path).unwrap_or_default());
    }
    let python_built = python_build.wait()?;
    eprintln!(
        "sim test: the Python package's build beside the tests ready {:.0} s after them ({python_built}):",
        waiting.elapsed().as_secs_f64()
    );
    eprint!("{}", std::fs::read_to_string(&python_build_log_path).unwrap_or_default());
    if !tests.success() || runtimes.is_err() || !torch.success() || !python_built.success() {
        fuzz_build.wait()?;
        return Ok(ExitCode::FAILURE);
    }
    // The fuzz targets beside the Python tests, one at a time (pytest keeps about one
    // core busy, and each target runs for its seconds either way): once their build
    // above is done, qemu/fuzz/run.sh with FUZZ_JOBS=1. Its messages go to a log,
    // printed when it is waited for.
    let fuzz_log_path = root.join("target/fuzz-run.log");
    let fuzz_log = File::create(&fuzz_log_path)?;
    let fuzz_script = root.join("qemu/fuzz/run.sh");
    let fuzzing = std::thread::spawn(move || -> std::io::Result<(ExitStatus, ExitStatus, f64)> {
        let built = fuzz_build.wait()?;
        let start = Instant::now();
        let run = Command::new("bash")
            .arg(fuzz_script)
            .env("FUZZ_JOBS", "1")
            .stdout(fuzz_log.try_clone()?)
            .stderr(fuzz_log)
            .status()?;
        Ok((built, run, start.elapsed().as_secs_f64()))
    });
    // The Python package's tests (qemu/python), on the package built above: after the
    // cargo tests, not beside them (run at once, each step takes the whole machine's
    // speed from the other, and the sum was no shorter).
    let mut python = Command::new("bash");
    python.arg(root.join("qemu/python/run-tests.sh")).arg("--installed");
    // The `ncop` the build above made, as `cargo run` would build it again.
    let ncop = root.join("target/debug/ncop");
    if ncop.is_file() {
        python.env("NCOP_PROGRAM", ncop);
    }
    let python = timed("qemu/python/run-tests.sh", &mut python)?;
    let waiting = Instant::now();
    let (built, fuzzed, seconds) = fuzzing.join().map_err(|_| std::io::Error::other("the fuzz thread panicked"))??;
    eprintln!(
        "sim test: qemu/fuzz/run.sh beside the Python tests took {seconds:.0} s ({fuzzed}), ended {:.0} s after them; \
         its build ({built}) and its run:",
        waiting.elapsed().as_secs_f64()
    );
    eprint!("{}", std::fs::read_to_string(&fuzz_build_log_path).unwrap_or_default());
    eprint!("{}", std::fs::read_to_string(&fuzz_log_path).unwrap_or_default());
    eprintln!("sim test: {:.0} s in all", start.elapsed().as_secs_f64());
    Ok(if python.success() && fuzzed.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Starts `script argument` with bash at priority `niceness`, its messages into `log`:
/// a build that runs beside the tests.
fn beside(niceness: u8, script: &std::path::Path, argument: &str, log: &std::path::Path) -> std::io::Result<Child> {
    Command::new("nice")
        .args(["-n", &niceness.to_string(), "bash"])
        .arg(script)
        .arg(argument)
        .stdout(Stdio::null())
        .stderr(File::create(log)?)
        .spawn()
}

/// Runs `command` and prints its wall time, so a CI log says where the minutes went
/// (docs/ci-time.md).
fn timed(name: &str, command: &mut Command) -> std::io::Result<ExitStatus> {
    let start = Instant::now();
    let status = command.status()?;
    eprintln!("sim test: {name} took {:.0} s ({status})", start.elapsed().as_secs_f64());
    Ok(status)
}
