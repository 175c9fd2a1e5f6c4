//! `sim test`: every test of the repository.

use clap::Args;
use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    std::fs::create_dir_all(root.join("target"))?;
    let ahead = Ahead::start(&root)?;
    // The runtimes `sim setup` builds (the device's, the host tier's), beside the tests'
    // build and then the tests: a test that needs one before it is done waits for its
    // turn to build it (the build lock every process takes) and finds it built. Not
    // the host tier's release loader `sim setup` also builds: the tests' build makes the
    // loader the tests run (beside `ncop` and the test binaries:
    // neuroncustomop_hosttier::loader_program), and a release build of the host stack
    // would only delay them (`sim dist` builds it for the wheel).
    let runtimes = super::setup::Runtimes::start();
    let tests = cargo_tests(&root)?;
    // Each waited for on every path, so that no half-finished build or installation
    // outlives the run.
    let runtimes = runtimes.wait();
    match &runtimes {
        Ok(took) => eprintln!("sim test: the runtimes (sim setup's) built beside the tests' build in {took:.0} s"),
        Err(e) => eprintln!("sim test: {e}"),
    }
    let (python_ready, mut fuzz_build) = ahead.wait_for_python(&root)?;
    if !tests.success() || runtimes.is_err() || !python_ready {
        fuzz_build.wait()?;
        return Ok(ExitCode::FAILURE);
    }
    let passed = python_tests_with_fuzz(&root, fuzz_build)?;
    eprintln!("sim test: {:.0} s in all", start.elapsed().as_secs_f64());
    Ok(if passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What `sim test` starts ahead, to run beside the cargo tests: PyTorch's
/// installation, and the builds of the fuzz targets and of the Python package, each
/// with its log under target/.
struct Ahead {
    torch: Child,
    python_build: Child,
    fuzz_build: Child,
}

impl Ahead {
    const TORCH_LOG: &str = "target/torch-cache.log";
    const PYTHON_BUILD_LOG: &str = "target/python-build-ahead.log";
    const FUZZ_BUILD_LOG: &str = "target/fuzz-build-ahead.log";

    fn start(root: &Path) -> std::io::Result<Ahead> {
        // PyTorch for the Python tests (qemu/python/torch-cache.sh): on a machine
        // without it, a 2.7 GB download that takes minutes. It is network-bound and the
        // cargo tests are CPU-bound, so it runs beside them; run-tests.sh then finds it
        // installed. Its messages go to a log, printed only if it fails.
        let torch = Command::new("bash")
            .arg(root.join("qemu/python/torch-cache.sh"))
            // The interpreter run-tests.sh makes its virtualenv from: the cache is per
            // Python version.
            .arg("python3")
            .stdout(Stdio::null())
            .stderr(File::create(root.join(Self::TORCH_LOG))?)
            .spawn()?;
        // The fuzz targets' build (qemu/fuzz/run.sh --build: the runtime and the crates
        // the targets read, with ASan and coverage, and libFuzzer's C++; about 140 s of
        // CPU cold) is CPU-bound like the cargo tests, but those leave a core idle much
        // of the time (waiting on QEMU and on one-core steps: the device's `core`, one
        // codegen unit, the test binaries' links): at the lowest priority it takes only
        // what they leave. run.sh then finds the targets built. Its messages (the
        // build's wall and CPU time, or why it failed, which run.sh then says again) go
        // to a log, printed when it is waited for.
        let fuzz_build = beside(19, &root.join("qemu/fuzz/run.sh"), "--build", &root.join(Self::FUZZ_BUILD_LOG))?;
        // The Python package's build (run-tests.sh --install-only: the host crates
        // again, in the release profile, in target/python; about 190 s of CPU cold)
        // beside the cargo tests as well, at a priority between theirs and the fuzz
        // build's. Its messages go to a log, printed when it is waited for;
        // run-tests.sh --installed then runs the tests on it.
        let python_build =
            beside(10, &root.join("qemu/python/run-tests.sh"), "--install-only", &root.join(Self::PYTHON_BUILD_LOG))?;
        Ok(Ahead { torch, python_build, fuzz_build })
    }

    /// Waits for PyTorch and the Python package's build, and says how each went:
    /// whether both are ready, and the fuzz build, still running, to wait for.
    fn wait_for_python(mut self, root: &Path) -> std::io::Result<(bool, Child)> {
        let waiting = Instant::now();
        let torch = self.torch.wait()?;
        eprintln!("sim test: PyTorch ready {:.0} s after the cargo tests", waiting.elapsed().as_secs_f64());
        if !torch.success() {
            eprintln!("sim test: installing PyTorch failed ({torch}); its log, {}:", Self::TORCH_LOG);
            eprint!("{}", std::fs::read_to_string(root.join(Self::TORCH_LOG)).unwrap_or_default());
        }
        let python_built = self.python_build.wait()?;
        eprintln!(
            "sim test: the Python package's build beside the tests ready {:.0} s after them ({python_built}):",
            waiting.elapsed().as_secs_f64()
        );
        eprint!("{}", std::fs::read_to_string(root.join(Self::PYTHON_BUILD_LOG)).unwrap_or_default());
        Ok((torch.success() && python_built.success(), self.fuzz_build))
    }
}

/// Builds the tests, then runs them: the host unit tests and QEMU tests of every
/// crate, and every example's own tests.
fn cargo_tests(root: &Path) -> std::io::Result<ExitStatus> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // --workspace: the examples are members, so their tests run with the rest. Built
    // first: the Python tests use what it builds (`ncop`, the host tier's loader).
    let built = timed(
        "cargo test --workspace --no-run",
        Command::new(&cargo).current_dir(root).args(["test", "--workspace", "--no-run"]),
    )?;
    if !built.success() {
        return Ok(built);
    }
    // One test thread more than the cores: the integration tests spend part of their
    // time waiting on QEMU, gdb and builds in other processes (with 2 threads on the
    // 2-core machine the binary kept 1.6 cores busy and took 155 s; with 3, 125 s).
    // RUST_TEST_THREADS, when set, still decides.
    let threads = std::thread::available_parallelism().map_or(2, |cores| cores.get() + 1);
    timed(
        "cargo test --workspace",
        Command::new(&cargo)
            .current_dir(root)
            .args(["test", "--workspace"])
            .env("RUST_TEST_THREADS", std::env::var("RUST_TEST_THREADS").unwrap_or_else(|_| threads.to_string())),
    )
}

/// Runs the Python package's tests, and beside them the fuzz targets once their build
/// is done; whether both passed.
fn python_tests_with_fuzz(root: &Path, mut fuzz_build: Child) -> std::io::Result<bool> {
    // The fuzz targets beside the Python tests, one at a time (pytest keeps about one
    // core busy, and each target runs for its seconds either way): once their build
    // is done, qemu/fuzz/run.sh with FUZZ_JOBS=1. When their build (at the lowest
    // priority) ends only after pytest, as on a fresh clone where every other build
    // comes first, nothing else runs: one target a core. Its messages go to a log,
    // printed when it is waited for.
    let fuzz_log_path = root.join("target/fuzz-run.log");
    let fuzz_log = File::create(&fuzz_log_path)?;
    let fuzz_script = root.join("qemu/fuzz/run.sh");
    let pytest_over = Arc::new(AtomicBool::new(false));
    let alone = Arc::clone(&pytest_over);
    let fuzzing = std::thread::spawn(move || -> std::io::Result<(ExitStatus, ExitStatus, f64)> {
        let built = fuzz_build.wait()?;
        let jobs =
            if alone.load(Ordering::Acquire) { std::thread::available_parallelism().map_or(1, usize::from) } else { 1 };
        let start = Instant::now();
        let run = Command::new("bash")
            .arg(fuzz_script)
            .env("FUZZ_JOBS", jobs.to_string())
            .stdout(fuzz_log.try_clone()?)
            .stderr(fuzz_log)
            .status()?;
        Ok((built, run, start.elapsed().as_secs_f64()))
    });
    // The Python package's tests (qemu/python), on the package built ahead: after the
    // cargo tests, not beside them (run at once, each step takes the whole machine's
    // speed from the other, and the sum was no shorter).
    let mut python = Command::new("bash");
    python.arg(root.join("qemu/python/run-tests.sh")).arg("--installed");
    // The `ncop` the tests' build made, as `cargo run` would build it again.
    let ncop = root.join("target/debug/ncop");
    if ncop.is_file() {
        python.env("NCOP_PROGRAM", ncop);
    }
    let python = timed("qemu/python/run-tests.sh", &mut python)?;
    pytest_over.store(true, Ordering::Release);
    let waiting = Instant::now();
    let (built, fuzzed, seconds) = fuzzing.join().map_err(|_| std::io::Error::other("the fuzz thread panicked"))??;
    eprintln!(
        "sim test: qemu/fuzz/run.sh beside the Python tests took {seconds:.0} s ({fuzzed}), ended {:.0} s after them; \
         its build ({built}) and its run:",
        waiting.elapsed().as_secs_f64()
    );
    eprint!("{}", std::fs::read_to_string(root.join(Ahead::FUZZ_BUILD_LOG)).unwrap_or_default());
    eprint!("{}", std::fs::read_to_string(&fuzz_log_path).unwrap_or_default());
    Ok(python.success() && fuzzed.success())
}

/// Starts `script argument` with bash at priority `niceness`, its messages into `log`:
/// a build that runs beside the tests.
fn beside(niceness: u8, script: &Path, argument: &str, log: &Path) -> std::io::Result<Child> {
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
