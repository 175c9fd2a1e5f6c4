//! `sim`: the project's driver, reached as `cargo sim <command>`.
//!
//! ```text
//! cargo sim setup                      install the Debian packages (qemu/setup.sh)
//! cargo sim build <program>            build its 8 per-core images into target/images/<program>/
//! cargo sim package <example>          build it, write target/package/<example>/ (8 images, ucode_lib.json)
//! cargo sim run <example> [options]    package, dispatch one op under QEMU, check it against the host
//!     --function NAME                  the kernel (default: the example's first)
//!     --elements N                     input elements (default 65536; shape [N], or [rows, columns])
//!     --cores 1..8                     cores to boot (default: 8 for kernels that split work, else 1)
//!     --k K                            a top-k's K, the output's last dimension (default n/8)
//!     --seed S                         the inputs' random seed (default 1)
//!     --repeat R                       run the op R times in one job (default 3): every output is
//!                                      checked, and each core's count is its fewest instructions
//!     --memcpy c|vector|dma            the op's neuron_memcpy backend (default dma, the library's)
//!     --max-instructions N             stop a kernel after N instructions (default 10 G)
//!     --gdb                            start halted under QEMU's gdbstub (port 1234), print how to attach
//! cargo sim run <program> [options]    build a firmware program, boot it; exits with the guest's status
//!     --cores N                        boot the images of cores 0..N (default 1)
//!     --count-instructions             -icount shift=0,sleep=off (deterministic CCOUNT)
//!     --gdb                            start halted under QEMU's gdbstub (port 1234), print how to attach
//! cargo sim test                       setup, then every test: host unit tests and QEMU tests
//! ```
//!
//! An example is an op author's library (`examples/<name>.rs`, or C in
//! `examples/<name>/`) with a host reference in `neuroncustomop_sim::examples`; `run`
//! prints the wall time, the guest instructions per element and the result, and exits
//! with 0 only if the output matches. Each core's instructions are counted exactly by
//! its ICOUNT register (docs/simulation.md), and a core waiting for the DMA engine
//! sleeps, so the op uses the library's own DMA backend unless told otherwise.
//! A firmware program is a program of the simulation (`qemu/firmware/src/bin/<name>.rs`).

use neuroncustomop::data_transfer::NeuronMemcpyMethod;
use neuroncustomop_sim::debugger::GdbOptions;
use neuroncustomop_sim::device;
use neuroncustomop_sim::examples::{self, Cores, Example, Function};
use neuroncustomop_sim::images::{self, CORES};
use neuroncustomop_sim::job::Job;
use neuroncustomop_sim::machine::Boot;
use neuroncustomop_sim::package::{self, Package};
use neuroncustomop_sim::symbolize::{self, Symbolizer};
use neuroncustomop_sim::toolchain::repo_root;
use std::process::{Command, ExitCode};
use std::time::Instant;

const USAGE: &str = "usage: cargo sim <setup | build <program> | package <example> \
                     | run <example> [--function NAME] [--elements N] [--cores N] [--k K] [--seed S] \
                       [--repeat R] [--memcpy c|vector|dma] [--max-instructions N] [--gdb] | run <program> [--cores N] [--count-instructions] [--gdb] | test>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("setup") => setup(),
        Some("build") => args.get(1).ok_or(USAGE.to_string()).and_then(|name| build(name).map(|_| ExitCode::SUCCESS)),
        Some("package") => {
            args.get(1).ok_or(USAGE.to_string()).and_then(|name| package(name).map(|_| ExitCode::SUCCESS))
        }
        // The README's main job: it sets the machine up first, like `test`.
        Some("run") => setup().and_then(|_| match args.get(1).and_then(|name| examples::find(name)) {
            Some(example) => run_example(example, &args[2..]),
            None => run(&args[1..]),
        }),
        Some("test") => test(),
        _ => Err(USAGE.to_string()),
    };
    result.unwrap_or_else(|message| {
        eprintln!("sim: {message}");
        ExitCode::from(2)
    })
}

/// Installs what is missing (idempotent).
fn setup() -> Result<ExitCode, String> {
    let script = repo_root().join("qemu/setup.sh");
    let status = Command::new("bash").arg(&script).status().map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if status.success() { Ok(ExitCode::SUCCESS) } else { Err(format!("{} failed ({status})", script.display())) }
}

fn build(name: &str) -> Result<images::Images, String> {
    let built = images::build(name).map_err(|e| e.to_string())?;
    eprintln!("sim: images of {name} in {}", built.cores[0].parent().expect("in a folder").display());
    Ok(built)
}

fn package(name: &str) -> Result<Package, String> {
    let packaged = package::package(name).map_err(|e| e.to_string())?;
    eprintln!("sim: package of {name} in {} (kernels: {})", packaged.dir.display(), packaged.kernels().join(", "));
    Ok(packaged)
}

/// What `run <example>` was asked for.
struct OpRequest {
    function: &'static Function,
    elements: usize,
    cores: usize,
    k: Option<usize>,
    seed: u64,
    repeat: usize,
    memcpy: NeuronMemcpyMethod,
    gdb: Option<GdbOptions>,
    max_instructions: u64,
}

fn parse_op_request(example: &'static Example, args: &[String]) -> Result<OpRequest, String> {
    let mut function = example.default_function();
    let (mut elements, mut cores, mut k, mut seed, mut repeat, mut memcpy) =
        (examples::DEFAULT_ELEMENTS, None, None, 1, 3, NeuronMemcpyMethod::Dma);
    let mut max_instructions = neuroncustomop_wire::job::DEFAULT_MAX_INSTRUCTIONS;
    let mut gdb = None;
    let mut rest = args.iter();
    while let Some(option) = rest.next() {
        let mut value = || rest.next().ok_or(format!("{option} needs a value; {USAGE}"));
        let number = |text: &String| text.parse::<usize>().map_err(|_| format!("{option} takes a number, not {text}"));
        match option.as_str() {
            "--function" => {
                let name = value()?;
                function = example.function(name).ok_or_else(|| {
                    let known: Vec<&str> = example.functions.iter().map(|f| f.name).collect();
                    format!("{} has no kernel {name}; it has {}", example.name, known.join(", "))
                })?;
            }
            "--elements" => elements = number(value()?)?,
            "--cores" => {
                let count = number(value()?)?;
                if !(1..=CORES).contains(&count) {
                    return Err(format!("--cores takes a number from 1 to {CORES}"));
                }
                cores = Some(count);
            }
            "--k" => k = Some(number(value()?)?),
            "--seed" => seed = number(value()?)? as u64,
            "--repeat" => repeat = number(value()?)?.max(1),
            "--gdb" => gdb = Some(GdbOptions::default()),
            "--max-instructions" => max_instructions = number(value()?)?.max(1) as u64,
            "--memcpy" => {
                memcpy = match value()?.as_str() {
                    "c" => NeuronMemcpyMethod::CMemcpy,
                    "vector" => NeuronMemcpyMethod::VecMemcpy,
                    "dma" => NeuronMemcpyMethod::Dma,
                    other => return Err(format!("--memcpy takes c, vector or dma, not {other}")),
                }
            }
            other => return Err(format!("unknown option {other}; {USAGE}")),
        }
    }
    let cores = cores.unwrap_or(function.cores.default_count());
    if function.cores == Cores::All && cores != CORES {
        return Err(format!(
            "{} splits its work over get_cpu_count() = {CORES} cores: run it with --cores {CORES}",
            function.name
        ));
    }
    Ok(OpRequest { function, elements, cores, k, seed, repeat, memcpy, max_instructions, gdb })
}

/// `run <example>`: package, run the op under QEMU, check it, report.
fn run_example(example: &'static Example, args: &[String]) -> Result<ExitCode, String> {
    let request = parse_op_request(example, args)?;
    let function = request.function;
    let shape = examples::shape_for(request.elements)?;
    let case = function.case(&shape, request.k, request.seed)?;
    let started = Instant::now();
    let packaged = package(example.name)?;
    let packaging = started.elapsed();
    let ops = vec![(function.name, &case); request.repeat];
    let mut job = examples::job_for(&packaged, &ops, request.cores).map_err(|e| e.to_string())?;
    job.header.memcpy_method = request.memcpy as u32;
    job.header.set_max_instructions(request.max_instructions);
    if let Some(gdb) = request.gdb {
        return debug_example(&packaged, &job, function.name, gdb);
    }
    let run = examples::run_job(&packaged, &job, true).map_err(|e| e.to_string())?;
    let cores = if request.cores == 1 { "1 core".to_string() } else { format!("{} cores", request.cores) };
    let memcpy = request.memcpy.name();
    println!(
        "{} / {} on {cores}: {} elements, input shape {shape:?}, output shape {:?}, memcpy {memcpy}",
        example.name, function.name, request.elements, case.output_shape
    );
    println!(
        "  wall time      {:.2} s under QEMU for {} runs of the op (packaging {:.2} s)",
        run.wall.as_secs_f64(),
        request.repeat,
        packaging.as_secs_f64()
    );
    let instructions = run.fewest_instructions(0..request.repeat);
    if let Some(&slowest) = instructions.iter().max() {
        let per_element = |count: u64| count as f64 / request.elements.max(1) as f64;
        print!("  instructions   {slowest} on the slowest core: {:.2} per element", per_element(slowest));
        if instructions.len() > 1 {
            let total: u64 = instructions.iter().sum();
            print!(" ({:.2} over all cores; per core {instructions:?})", per_element(total));
        }
        println!();
    }
    let failure = (0..request.repeat).find_map(|op| {
        if !run.succeeded(op, request.cores) {
            let finished = if run.report.done { "" } else { ", the loader did not finish" };
            let statuses: Vec<String> = run.statuses(op).iter().map(|status| device::describe_status(status)).collect();
            Some(format!("FAILED: run {op}: kernel statuses {statuses:?}{finished}"))
        } else {
            function
                .first_mismatch(&run.outputs[op], &case.expected)
                .map(|mismatch| format!("MISMATCH in run {op} at {mismatch}"))
        }
    });
    // What the kernel printed, as the device's host shows it: core 0's, after the op.
    if let Some((printed, lost)) = run.report.core(0).stdout.get(&0) {
        let lost = if *lost > 0 { format!(" ({lost} bytes lost first)") } else { String::new() };
        println!("  core 0 printed{lost}:\n{}", String::from_utf8_lossy(printed).trim_end());
    }
    for stopped in run.report.over_budget() {
        println!("  {stopped}");
    }
    println!("  result         {}", failure.as_deref().unwrap_or("OK"));
    if failure.is_some() {
        // Each fault as the author reads it: the kernel, its source line, a backtrace.
        let loader = images::build("loader").map_err(|e| e.to_string())?;
        let elves: Vec<_> = packaged.images.cores.iter().chain(&loader.cores).cloned().collect();
        let symbols = Symbolizer::new(&elves).map_err(|e| e.to_string())?;
        symbolize::explain(&run.report, &symbols).iter().for_each(|text| eprint!("{text}"));
    }
    if failure.is_some() && !run.report.done {
        // The loader's own lines, without the output dumps.
        run.report.outcome.stdout.lines().filter(|line| !line.starts_with("DUMP ")).for_each(|line| eprintln!("{line}"));
        eprint!("{}", run.report.outcome.stderr);
    }
    Ok(if failure.is_none() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `run <example> --gdb`: the op's job under QEMU's gdbstub, halted until a debugger
/// lets it go; then what each core reported.
fn debug_example(packaged: &Package, job: &Job, kernel: &str, gdb: GdbOptions) -> Result<ExitCode, String> {
    let loader = images::build("loader").map_err(|e| e.to_string())?;
    eprint!("{}", gdb.attach_instructions(kernel, &packaged.images.cores[0], &loader.cores[..1]));
    let report = device::run_under_gdb(&packaged.images, job, gdb).map_err(|e| e.to_string())?;
    for (core, core_report) in &report.cores {
        for op in &core_report.ops {
            println!("core {core}: {} {}", op.function, device::describe_status(&op.status));
        }
    }
    Ok(if report.done { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn run(args: &[String]) -> Result<ExitCode, String> {
    let name = args.first().ok_or(USAGE)?;
    let mut cores = 1;
    let mut count_instructions = false;
    let mut gdb = None;
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--cores" => {
                cores = rest
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| (1..=CORES).contains(n))
                    .ok_or(format!("--cores takes a number from 1 to {CORES}"))?;
            }
            "--count-instructions" => count_instructions = true,
            "--gdb" => gdb = Some(GdbOptions::default()),
            other => return Err(format!("unknown option {other}; {USAGE}")),
        }
    }
    let built = build(name)?;
    let mut boot = Boot::new(built.cores[..cores].to_vec());
    boot.count_instructions = count_instructions;
    boot.gdb = gdb;
    if let Some(gdb) = gdb {
        eprint!("{}", gdb.attach_instructions("main", &built.cores[0], &[]));
    }
    let outcome = boot.run().map_err(|e| format!("cannot run QEMU: {e}"))?;
    print!("{}", outcome.stdout);
    eprint!("{}", outcome.stderr);
    // A fault of the image's own code, as the author reads it (docs/simulation.md).
    let faults = symbolize::FaultLine::all(&format!("{}{}", outcome.stdout, outcome.stderr));
    if !faults.is_empty() {
        let symbols = Symbolizer::new(&built.cores[..cores]).map_err(|e| e.to_string())?;
        faults.iter().for_each(|fault| eprint!("{}", symbols.report(fault, &format!("program `{name}`"))));
    }
    match outcome.code() {
        Some(code) => Ok(ExitCode::from(u8::try_from(code).unwrap_or(255))),
        None => Err(format!("{name} did not finish within {:?}", boot.timeout)),
    }
}

/// Every test: host unit tests of all crates, then the QEMU tests (which build images).
fn test() -> Result<ExitCode, String> {
    setup()?;
    let cargo_tests = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(repo_root())
        .args(["test", "--workspace"])
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !cargo_tests.success() {
        return Ok(ExitCode::FAILURE);
    }
    // Then every fuzz target for a few seconds (qemu/fuzz/run.sh; longer runs on request).
    let fuzz = repo_root().join("qemu/fuzz/run.sh");
    let fuzzing = Command::new("bash").arg(&fuzz).status().map_err(|e| format!("cannot run {}: {e}", fuzz.display()))?;
    Ok(if fuzzing.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
