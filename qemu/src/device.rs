//! The simulated device: the loader firmware and a library on the cores, a job in RAM,
//! and what the loader reported, parsed.

use crate::debugger::GdbOptions;
use crate::images::{self, BuildError, Images};
use crate::job::{Job, JobError};
use crate::machine::{Boot, Outcome};
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Why a run did not happen.
#[derive(Debug)]
pub enum RunError {
    /// Building the loader failed.
    Build(BuildError),
    /// The job could not be written.
    Job(JobError),
    /// QEMU could not be started or its files written.
    Io(std::io::Error),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Build(e) => e.fmt(f),
            Self::Job(e) => e.fmt(f),
            Self::Io(e) => write!(f, "running QEMU: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

/// One registration `entry_func` made through `register_ext_isa_fn`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// Kernel name.
    pub name: String,
    /// What the loader answered.
    pub status: u32,
}

/// One kernel `register_funcs` reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// Kernel name.
    pub name: String,
    /// Entry point.
    pub ptr: u32,
    /// The library handle passed back.
    pub handle: u32,
}

/// What one core did.
#[derive(Debug, Clone, Default)]
pub struct CoreReport {
    /// Handoff callbacks `entry_func` called, in order.
    pub callbacks: Vec<String>,
    /// `register_ext_isa_fn` calls, in order.
    pub registrations: Vec<Registration>,
    /// `entry_func`'s status.
    pub entry_status: Option<u32>,
    /// `register_funcs`' report, in order.
    pub kernels: Vec<Kernel>,
    /// The ops this core ran, in order.
    pub ops: Vec<OpReport>,
    /// Per op index: what the kernel printed, and how many bytes the ring lost first.
    pub stdout: BTreeMap<u32, (Vec<u8>, u32)>,
}

/// One op on one core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpReport {
    /// The kernel's name.
    pub function: String,
    /// The invocation status, or the loader's word (`unknown-kernel`, `bad-words`, ...).
    pub status: String,
    /// Guest instructions the kernel took, to within 25, when run with
    /// `count_instructions` (CCOUNT ticks x 25).
    pub instructions: Option<u64>,
}

/// A loader status word as every printer shows it: an invocation status as hex plus
/// name (`0x44 TCM_EXHAUSTED`, `0x10007 Op(7)`: `Status`'s `Display`), a stop as the
/// loader said it (`abort`, `exit(101)`, `exception(4)`), with the runtime's name for
/// the exception codes.
pub fn describe_status(word: &str) -> String {
    match word.parse::<u32>() {
        Ok(code) => neuroncustomop::wrapper_api::Status(code).to_string(),
        Err(_) => match word {
            "exception(3)" => "exception(3) EXIT_EXCEPTION".into(),
            "exception(4)" => "exception(4) EXIT_STACK_OVERFLOW".into(),
            "exit(101)" => "exit(101) EXIT_PANIC".into(),
            other => other.into(),
        },
    }
}

impl OpReport {
    /// The numeric invocation status, if the kernel ran.
    pub fn status_code(&self) -> Option<u32> {
        self.status.parse().ok()
    }
}

/// What the loader reported.
#[derive(Debug)]
pub struct Report {
    /// Per core.
    pub cores: BTreeMap<u32, CoreReport>,
    /// Per op: the bytes core 0 dumped after every core ran it.
    pub dumps: BTreeMap<u32, Vec<u8>>,
    /// The loader reached the end of the job.
    pub done: bool,
    /// QEMU's outcome, with the raw output.
    pub outcome: Outcome,
}

impl Report {
    /// Core `core`'s report (empty if it said nothing).
    pub fn core(&self, core: u32) -> CoreReport {
        self.cores.get(&core).cloned().unwrap_or_default()
    }
}

/// Boots the loader on `job.header.cores` cores next to `library`, and the DMA engine
/// on the core after them, with `job` in RAM.
pub fn run(library: &Images, job: &Job) -> Result<Report, RunError> {
    boot(library, job, false, None)
}

/// As [`run`], halted at the start with QEMU's gdbstub listening ([`GdbOptions`]), and
/// no wall limit: it returns when the debugger lets the simulation finish.
pub fn run_under_gdb(library: &Images, job: &Job, gdb: GdbOptions) -> Result<Report, RunError> {
    boot(library, job, false, Some(gdb))
}

/// As [`run`], under `-icount shift=0,sleep=off` ([`Boot::count_instructions`]), so every
/// [`OpReport::instructions`] is a guest instruction count (to within 25).
pub fn run_counting_instructions(library: &Images, job: &Job) -> Result<Report, RunError> {
    boot(library, job, true, None)
}

fn boot(library: &Images, job: &Job, count_instructions: bool, gdb: Option<GdbOptions>) -> Result<Report, RunError> {
    let loader = images::build("loader").map_err(RunError::Build)?;
    let engine = images::build("dma_engine").map_err(RunError::Build)?;
    let cores = job.header.cores as usize;
    let dir = scratch_dir().map_err(RunError::Io)?;
    let job_file = dir.join("job.bin");
    fs::write(&job_file, job.to_bytes().map_err(RunError::Job)?).map_err(RunError::Io)?;
    // Cores 0..cores run the loader next to the library; the next one is the DMA engine.
    let mut boot = Boot::new(loader.cores[..cores].iter().chain(&engine.cores[..1]).cloned().collect());
    boot.elf_data = library.cores[..cores].to_vec();
    boot.count_instructions = count_instructions;
    boot.gdb = gdb;
    boot.data.push((job_file, Job::ADDRESS));
    for (index, (address, bytes)) in job.data.iter().enumerate() {
        let file = dir.join(format!("data{index}.bin"));
        fs::write(&file, bytes).map_err(RunError::Io)?;
        boot.data.push((file, *address));
    }
    let outcome = boot.run().map_err(RunError::Io)?;
    let _ = fs::remove_dir_all(&dir);
    Ok(parse(outcome))
}

/// A fresh folder for one run's files.
fn scratch_dir() -> std::io::Result<PathBuf> {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let dir = crate::toolchain::repo_root()
        .join("target/sim-runs")
        .join(format!("{}-{}", std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed)));
    fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `key=value` fields of a loader line.
fn fields(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace().filter_map(|word| word.split_once('=')).collect()
}

fn number(text: &str) -> u32 {
    match text.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).unwrap_or(u32::MAX),
        None => text.parse().unwrap_or(u32::MAX),
    }
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len() / 2).filter_map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()).collect()
}

/// Parses the loader's lines (see `qemu/firmware/src/loader.rs`).
pub fn parse(outcome: Outcome) -> Report {
    let mut cores: BTreeMap<u32, CoreReport> = BTreeMap::new();
    let mut dumps: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let mut done = false;
    for line in outcome.stdout.lines() {
        let f = fields(line);
        let kind = line.split_whitespace().next().unwrap_or("");
        if kind == "DUMP" {
            dumps.entry(number(f["op"])).or_default().extend(unhex(f["hex"]));
            continue;
        }
        if kind == "DONE" {
            done = true;
            continue;
        }
        let Some(core) = f.get("core").map(|c| number(c)) else { continue };
        let report = cores.entry(core).or_default();
        match kind {
            "CALLBACK" => report.callbacks.push(f["name"].to_string()),
            "REGISTER" => report.registrations.push(Registration { name: f["name"].into(), status: number(f["status"]) }),
            "ENTRY" => report.entry_status = Some(number(f["status"])),
            "KERNEL" => report.kernels.push(Kernel { name: f["name"].into(), ptr: number(f["ptr"]), handle: number(f["handle"]) }),
            "STDOUT" => {
                let printed = report.stdout.entry(number(f["op"])).or_default();
                printed.0.extend(unhex(f.get("hex").unwrap_or(&"")));
                printed.1 += number(f["lost"]);
            }
            "OP" => report.ops.push(OpReport {
                function: f["function"].into(),
                status: f["status"].into(),
                instructions: f.get("ticks").map(|t| u64::from(number(t)) * 25),
            }),
            _ => {}
        }
    }
    Report { cores, dumps, done, outcome }
}
