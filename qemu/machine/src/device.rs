//! The simulated device: the loader firmware and a library on the cores, jobs sent to
//! it, and what the loader reported, parsed.
//!
//! A [`Session`] boots QEMU once for a library and dispatches job after job to it
//! (the loader stays up between jobs, see `qemu/firmware/src/loader.rs`); [`run`] and
//! [`run_counting_instructions`] are one-job sessions.
//!
//! ```no_run
//! use neuroncustomop_machine::device::{Session, SessionOptions};
//! use neuroncustomop_machine::{images, job::Job};
//!
//! let library = images::build("fault_probe")?;
//! let mut session = Session::boot(&library, 1, SessionOptions::default())?;
//! for _ in 0..3 {
//!     let job = Job::new(&library, 1)?; // ... with ops pushed and data placed
//!     let report = session.dispatch(&job)?;
//!     assert!(report.done);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::debugger::GdbOptions;
use crate::findings;
use crate::images::{self, BuildError, Images};
use crate::job::{Job, JobError};
use crate::machine::{Boot, Outcome};
use crate::plugin::{OpLines, PluginError, PluginFile};
use neuroncustomop::allocators::HeapsGivenBack;
use neuroncustomop_wire::job::JobHeader;
use neuroncustomop_wire::plugin::{Argument, Line as PluginLine};
pub use neuroncustomop_wire::report::OpStatus;
use neuroncustomop_wire::report::{Count, Line};
use neuroncustomop_wire::session::{FRAME_MAGIC, FrameHeader, STDERR_JOB_END, SegmentHeader};
use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

/// Why a run did not happen.
#[derive(Debug)]
pub enum RunError {
    /// Building the loader failed.
    Build(BuildError),
    /// The job could not be written.
    Job(JobError),
    /// QEMU could not be started or its files written.
    Io(std::io::Error),
    /// The job is for another number of cores than the session booted.
    Cores {
        /// The cores the session booted.
        session: usize,
        /// The cores the job asks for.
        job: usize,
    },
    /// The job changes what the library was entered with (handoff size, injected
    /// registration failure or scratch faults, library symbols): entry happens once per
    /// session, so such a job needs a session of its own.
    EntryChanged,
    /// The counting plugin could not be built or set up.
    Plugin(PluginError),
    /// The caller cancelled the job ([`Session::dispatch_cancellable`]): its QEMU was
    /// stopped, and the next dispatch boots a fresh device.
    Cancelled,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Build(e) => e.fmt(f),
            Self::Job(e) => e.fmt(f),
            Self::Io(e) => write!(f, "running QEMU: {e}"),
            Self::Cores { session, job } => {
                write!(f, "the job is for {job} cores, but the session's device has {session}")
            }
            Self::EntryChanged => f.write_str(
                "the job changes how the library is entered (handoff size, injected faults or symbols); \
                 entry happens once per session: use a new session",
            ),
            Self::Plugin(e) => e.fmt(f),
            Self::Cancelled => {
                f.write_str("the job was cancelled; the device was stopped and boots again for the next")
            }
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
    /// Kernels this core stopped at their instruction budget.
    pub over_budget: Vec<OverBudget>,
    /// Per op index whose kernel stopped without returning: the heap blocks the loader
    /// gave back for it.
    pub given_back: BTreeMap<u32, HeapsGivenBack>,
}

/// A kernel the loader stopped because it ran past the job's instruction budget
/// (`JobHeader::max_instructions`): an infinite loop, or a budget set too low.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverBudget {
    /// The op's index in its job.
    pub op: u32,
    /// The core it ran on.
    pub core: u32,
    /// The kernel.
    pub function: String,
    /// Instructions it had run when stopped (the budget, plus the few the stop took).
    pub instructions: u64,
    /// Where it was: the address of the next instruction it would have run.
    pub pc: u32,
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { op, core, function, instructions, pc } = self;
        write!(
            f,
            "kernel `{function}` on core {core} ran past {} instructions (op {op}, stopped at pc {pc:#010x}): \
             an infinite loop? If not, raise the budget (max_instructions)",
            Giga(*instructions)
        )
    }
}

/// An instruction count as an author reads it: `10 G`, `512 M`, or the number.
struct Giga(u64);

impl fmt::Display for Giga {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            n if n >= 1_000_000_000 => write!(f, "{:.1} G", n as f64 / 1e9),
            n if n >= 1_000_000 => write!(f, "{:.1} M", n as f64 / 1e6),
            n => write!(f, "{n}"),
        }
    }
}

/// One op on one core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpReport {
    /// The kernel's name.
    pub function: String,
    /// How the op ended, as the loader reported it: the kernel returned an invocation
    /// status (`Returned(0)` is success), or it stopped (`Abort`, `Exit(101)`,
    /// `Exception(3)`, `OverBudget`, ...).
    pub status: OpStatus,
    /// Guest instructions the kernel took, when it ran: the TCG plugin's count on a
    /// [`Session`] (docs/simulation.md, "Counting instructions").
    pub instructions: Option<u64>,
    /// True when [`OpReport::instructions`] counts exactly this core's instructions;
    /// false when it is an estimate (see docs/simulation.md, "Counting instructions").
    pub exact: bool,
    /// The loader's own count of the kernel, from the core's `ICOUNT` register: the
    /// plugin's cross-check (equal to it, `qemu/tests/counting.rs`).
    pub icount: Option<u64>,
    /// What the TCG plugin's modules wrote for this op, when the plugin ran
    /// ([`OpLines`]; its `COUNT` is already in [`OpReport::instructions`]).
    pub plugin: OpLines,
}

/// A loader status as every printer shows it: an invocation status as hex plus name
/// (`0x44 TCM_EXHAUSTED`, `0x10007 Op(7)`: `Status`'s `Display`), a stop as the loader
/// says it (`abort`, `exit(101)`, `exception(4)`), with the runtime's name for the exit
/// and exception codes.
pub fn describe_status(status: OpStatus) -> String {
    let named = |code: i32| match neuroncustomop::arch::exit_name(code) {
        Some(name) => format!("{status} {name}"),
        None => status.to_string(),
    };
    match status {
        OpStatus::Returned(code) => neuroncustomop::wrapper_api::Status(code).to_string(),
        OpStatus::Exit(code) | OpStatus::Exception(code) => named(code),
        _ => status.to_string(),
    }
}

impl OpReport {
    /// The invocation status the kernel returned, if it returned.
    pub fn status_code(&self) -> Option<u32> {
        match self.status {
            OpStatus::Returned(code) => Some(code),
            _ => None,
        }
    }
}

/// What the loader reported about one job.
#[derive(Debug)]
pub struct Report {
    /// Per core: what it did in this job (and, in a session's first job, at entry).
    pub cores: BTreeMap<u32, CoreReport>,
    /// Per op: the bytes core 0 dumped after every core ran it.
    pub dumps: BTreeMap<u32, Vec<u8>>,
    /// The loader reached the end of the job: every core finished every op (whatever
    /// their statuses). False when the device stopped or hung first.
    pub done: bool,
    /// The job's raw output: `stdout` has the loader's lines (not the dumped bytes),
    /// `stderr` what the guest wrote there during the job. `status` is QEMU's exit
    /// status if it ended (`None` while the session's device is up); `timed_out` if it
    /// was stopped at the wall limit.
    pub outcome: Outcome,
}

impl Report {
    /// Gives each kernel run its lines from the plugin (per core, in the order its
    /// kernels ran; [`PluginFile::take`]): the `n`-th op of a core that ran a kernel
    /// gets the core's `n`-th. An op the plugin did not count keeps the loader's count.
    fn add_plugin(&mut self, plugin: BTreeMap<u32, Vec<OpLines>>) {
        for (core, report) in &mut self.cores {
            let ran = report.ops.iter_mut().filter(|op| op.icount.is_some());
            for (op, lines) in ran.zip(plugin.get(core).into_iter().flatten()) {
                op.instructions = lines.count().or(op.instructions);
                op.plugin = lines.clone();
            }
        }
    }

    /// What the memory checks found in op `index` of the job, over every core that ran
    /// it (empty when unchecked). A core whose kernel ended early had the blocks it held
    /// given back by the loader ([`CoreReport::given_back`]): they are not leaks.
    pub fn findings(&self, index: usize) -> findings::OpFindings {
        let lines = self.cores.values().filter_map(|core| core.ops.get(index)).flat_map(|op| &op.plugin.lines);
        let mut found = findings::collect(lines.map(String::as_str));
        let given_back =
            |core: u32| self.cores.get(&core).is_some_and(|report| report.given_back.contains_key(&(index as u32)));
        let before = found.shown.len();
        found.shown.retain(|finding| !(finding.kind == findings::FindingKind::Leak && given_back(finding.core)));
        found.total = found.total.saturating_sub((before - found.shown.len()) as u64);
        found
    }

    /// Core `core`'s report (empty if it said nothing).
    pub fn core(&self, core: u32) -> CoreReport {
        self.cores.get(&core).cloned().unwrap_or_default()
    }

    /// Every kernel stopped at its instruction budget, on any core.
    pub fn over_budget(&self) -> Vec<OverBudget> {
        self.cores.values().flat_map(|core| core.over_budget.iter().cloned()).collect()
    }
}

/// How a session's device is run.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Run QEMU with `-icount shift=0,sleep=off` ([`Boot::count_instructions`]): all
    /// cores on one host thread, in turn, with a deterministic virtual clock (CCOUNT,
    /// 1 tick per instruction) that jumps ahead when every core sleeps. Counts do not
    /// need it ([`OpReport::instructions`] is each core's own exact count either way:
    /// the TCG plugin's without `-icount`, the loader's `ICOUNT` under it, where QEMU
    /// 10.0.2 cannot run the plugin, so nothing is checked or profiled). Deterministic
    /// time does: a sleeping core's wake-up costs no wall time and comes at the same
    /// instruction every run, so a kernel that waits (for a DMA transfer, another
    /// core) counts the same every run, and CCOUNT measures instructions (the firmware
    /// benchmarks that time code with it). With `false` each core is a host thread of
    /// its own (QEMU's MTTCG): a sleeping core waits for the host's scheduler to wake
    /// its thread (milliseconds on a loaded machine; the runtime's DMA wait has no
    /// timeout, so that costs wall time only), and CCOUNT is real time.
    ///
    /// The default here is `true`: `device::run` and the tests and firmware programs
    /// that use the machine directly count and time with `ICOUNT` and CCOUNT. The front
    /// ends default to `false` and ask for it only when told (the host API's
    /// `Options::count_instructions`, Python's `count_instructions=True`, `ncop run
    /// --icount`).
    pub count_instructions: bool,
    /// Without `-icount`, count with the TCG plugin (`qemu/plugin`, the default);
    /// `false` leaves it out, and the counts are the loader's `ICOUNT` figures (the
    /// same numbers): the baseline the plugin's cost is measured against
    /// (docs/PERFORMANCE.md, "Counting with the TCG plugin").
    pub plugin: bool,
    /// With the plugin, check every memory access of every kernel against what its op
    /// may touch (`qemu/plugin/src/checks.rs`, the default): the findings are in each
    /// op's [`OpReport::plugin`] lines ([`crate::findings`]). Nothing is checked under
    /// `-icount`, where the plugin does not run.
    pub checked: bool,
    /// The plugin also profiles each op (`qemu/plugin/src/profile.rs`; its lines are in
    /// [`OpReport::plugin`]): slower, so asked for (`ncop run --profile`). Needs the
    /// plugin, so no `-icount`.
    pub profile: bool,
    /// The longest one job may take on the wall clock; past it the device is declared
    /// hung, stopped, and booted again for the next job. `None` (the default): it
    /// scales with the job's instruction budget ([`wall_limit`]).
    pub wall_limit: Option<Duration>,
    /// Start halted with QEMU's gdbstub listening (`run … --gdb`); no wall limit then:
    /// a job takes as long as the debugger lets it.
    pub gdb: Option<GdbOptions>,
    /// With the checks: output bytes (address, length) whose last writer each op
    /// reports, as a `WRITER` line of its plugin lines (`qemu/plugin/src/checks.rs`,
    /// `neuroncustomop_wire::plugin::Line::Writer`): which core's store, at which PC,
    /// last wrote the first of them.
    pub watch: Option<(u32, u32)>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            count_instructions: true,
            plugin: true,
            checked: true,
            profile: false,
            wall_limit: None,
            gdb: None,
            watch: None,
        }
    }
}

/// The slowest QEMU is expected to run one core's guest instructions, per second: a
/// warm 65,536-element relu (852,822 instructions) takes 7 ms at a load average of 10
/// on this 2-host-core machine (120 M/s); this leaves room for twice that load.
const SLOWEST_INSTRUCTIONS_PER_SECOND: u64 = 50_000_000;
/// Wall time for everything around the kernels: booting, entry, moving the data.
const JOB_ALLOWANCE: Duration = Duration::from_secs(60);

/// The wall time `job` may take before its device is declared hung: a fixed allowance
/// plus, for every op, each core's instruction budget at the slowest rate QEMU runs
/// (the cores share one host thread under `-icount`). The guest stops a kernel at its
/// budget by itself; this limit only catches a device that stopped answering.
pub fn wall_limit(job: &Job) -> Duration {
    let ops = job.dumps.len() as u64;
    let instructions = job.header.max_instructions().saturating_mul(u64::from(job.header.cores)).saturating_mul(ops);
    JOB_ALLOWANCE + Duration::from_secs(instructions / SLOWEST_INSTRUCTIONS_PER_SECOND)
}

/// How often [`Session::dispatch_cancellable`] asks whether to stop while a job runs:
/// well under the half second a Ctrl-C may take to stop a call.
pub const CANCEL_POLL: Duration = Duration::from_millis(50);

/// A booted simulated device with one library loaded: the loader on cores
/// `0..cores` next to the library's images, the DMA engine on the core after them.
/// [`Session::dispatch`] sends it job after job without booting again; the library is
/// entered (`entry_func`, `register_funcs`) on the first job only.
///
/// If a job leaves the device unusable (it stopped, or hung past
/// [`SessionOptions::wall_limit`]), its report says so (`done` is false) and the next
/// dispatch boots a fresh device first, entering the library again.
pub struct Session {
    cores: usize,
    options: SessionOptions,
    /// What runs the jobs.
    backend: Backend,
    /// The running QEMU, if any.
    device: Option<Device>,
    /// What the library was entered with on the running device.
    entered_with: Option<EntryParameters>,
}

/// What a session's jobs run on.
enum Backend {
    /// QEMU: the loader and the DMA engine next to the library's images.
    Qemu { library: Images, loader: Images, engine: Images },
    /// A host process that speaks the loader's protocol: job frames on its stdin, the
    /// loader's report lines on its stdout, the end-of-job marker on its stderr (the
    /// host tier's loader, qemu/hosttier). The machine knows only its command line.
    Process {
        /// What to show in `Debug`.
        name: String,
        program: std::path::PathBuf,
        args: Vec<std::ffi::OsString>,
    },
}

/// The job fields the loader uses only when it enters the library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EntryParameters {
    handoff_size: u32,
    fail_registration_at: u32,
    faults: u32,
    libraries: [neuroncustomop_wire::job::LibrarySymbols; neuroncustomop_wire::job::CORES],
}

impl EntryParameters {
    fn of(header: &JobHeader) -> Self {
        Self {
            handoff_size: header.handoff_size,
            fail_registration_at: header.fail_registration_at,
            faults: header.faults,
            libraries: header.libraries,
        }
    }
}

/// One QEMU process and the threads reading its output.
struct Device {
    child: Child,
    stdin: ChildStdin,
    events: Receiver<Event>,
    /// What the TCG plugin writes, when it runs.
    plugin: Option<PluginFile>,
    /// A checked session's library images (red zones on), kept while QEMU runs.
    _checked: Vec<findings::CheckedImage>,
}

/// What the output readers saw.
enum Event {
    /// One text line of stdout (without its newline).
    Line(String),
    /// A `DUMP` line's bytes.
    Dump { op: u32, bytes: Vec<u8> },
    /// Stdout ended: QEMU exited.
    StdoutClosed,
    /// Stderr text; `job_end` if the loader's end-of-job marker followed it.
    Stderr { bytes: Vec<u8>, job_end: bool },
    /// Stderr ended.
    StderrClosed,
}

impl Session {
    /// Builds the loader and the DMA engine (if needed) and boots them next to
    /// `library` on `cores` cores (1 to 8).
    ///
    /// # Errors
    /// [`RunError::Build`] if the firmware does not build, [`RunError::Io`] if QEMU
    /// cannot be started.
    pub fn boot(library: &Images, cores: usize, options: SessionOptions) -> Result<Self, RunError> {
        let (loader, engine) = firmware()?;
        let backend = Backend::Qemu { library: library.clone(), loader, engine };
        let mut session = Self { cores, options, backend, device: None, entered_with: None };
        session.start()?;
        Ok(session)
    }

    /// A session whose jobs `program args…` runs instead of QEMU: a process that reads
    /// job frames on its stdin and answers with the loader's lines, as the simulated
    /// device does (the host tier's loader, which runs a library built for the host, each
    /// core a thread). `name` is what `Debug` shows. The wall limit and the parsing are
    /// those of the device; `options.gdb` does not apply (the process is the one to
    /// run under a debugger).
    ///
    /// # Errors
    /// [`RunError::Io`] if the process cannot be started.
    pub fn process(
        name: &str,
        program: &std::path::Path,
        args: Vec<std::ffi::OsString>,
        cores: usize,
        options: SessionOptions,
    ) -> Result<Self, RunError> {
        let backend = Backend::Process { name: name.into(), program: program.into(), args };
        let mut session = Self { cores, options, backend, device: None, entered_with: None };
        session.start()?;
        Ok(session)
    }

    /// The number of library cores.
    pub fn cores(&self) -> usize {
        self.cores
    }

    /// Starts QEMU (the loader waits for the first job).
    fn start(&mut self) -> Result<(), RunError> {
        let cores = self.cores;
        let mut checked = Vec::new();
        let (mut child, plugin) = match &self.backend {
            Backend::Qemu { library, loader, engine } => {
                let mut boot = Boot::new(loader.cores[..cores].iter().chain(&engine.cores[..1]).cloned().collect());
                boot.elf_data = library.cores[..cores].to_vec();
                boot.count_instructions = self.options.count_instructions;
                boot.gdb = self.options.gdb;
                // QEMU 10.0.2 crashes on the plugin's inline counters under -icount
                // (qemu/plugin/src/lib.rs): there the loader's ICOUNT counts stand alone.
                let plugin = if self.options.plugin && !self.options.count_instructions {
                    let (file, mut arguments) = PluginFile::new(&loader.cores[..cores]).map_err(RunError::Plugin)?;
                    if self.options.checked {
                        arguments.extend(
                            findings::plugin_arguments(&loader.cores[..cores], &library.cores[..cores])
                                .map_err(|e| RunError::Plugin(PluginError::Io(e)))?,
                        );
                        // The same images with red zones after heap blocks.
                        checked = findings::checked_images(&library.cores[..cores])
                            .map_err(|e| RunError::Plugin(PluginError::Io(e)))?;
                        boot.elf_data = checked.iter().map(|image| image.path().to_path_buf()).collect();
                        if let Some((address, len)) = self.options.watch {
                            arguments.push(Argument::Watch(address..address.saturating_add(len)));
                        }
                    }
                    if self.options.profile {
                        let tensors = crate::job::TENSOR_AREA..crate::job::TENSOR_AREA + crate::job::TENSOR_AREA_SIZE;
                        arguments.extend([
                            Argument::Profile,
                            Argument::DmaWindow(neuroncustomop::data_transfer::dma::DMA_QUEUE_WINDOW as u32),
                            Argument::Tensors(tensors),
                        ]);
                        // The author's range markers, in each core's library image.
                        for image in &library.cores[..cores] {
                            let markers = crate::ranges::markers(image)
                                .map_err(|e| RunError::Plugin(PluginError::Io(e.to_string())))?;
                            let pcs = markers.iter().flat_map(|marker| &marker.pcs);
                            arguments.extend(pcs.map(|&pc| Argument::Mark(pc)));
                        }
                        // Only the cores' code: the DMA engine's core stays uninstrumented.
                        for image in library.cores[..cores].iter().chain(&loader.cores[..cores]) {
                            let bytes = std::fs::read(image).map_err(RunError::Io)?;
                            for segment in crate::elf::load_segments(&bytes).unwrap_or_default() {
                                arguments.push(Argument::Code(segment.vaddr..segment.vaddr + segment.memsz));
                            }
                        }
                    }
                    let argument = file.argument(&arguments).map_err(RunError::Plugin)?;
                    boot.plugin = Some(argument);
                    boot.writable.push(file.path().to_path_buf());
                    Some(file)
                } else {
                    None
                };
                (boot.spawn().map_err(RunError::Io)?, plugin)
            }
            // The host tier's loader: no plugin (it counts no instructions).
            Backend::Process { program, args, .. } => (
                std::process::Command::new(program)
                    .args(args)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(RunError::Io)?,
                None,
            ),
        };
        let stdin = child.stdin.take().expect("piped");
        let (sender, events) = mpsc::channel();
        read_stdout(child.stdout.take().expect("piped"), sender.clone());
        read_stderr(child.stderr.take().expect("piped"), sender);
        self.device = Some(Device { child, stdin, events, plugin, _checked: checked });
        self.entered_with = None;
        Ok(())
    }

    /// Runs `job` on the device and returns what the loader reported. The first job
    /// of a device also enters the library; later jobs must use the same entry
    /// parameters ([`RunError::EntryChanged`]).
    ///
    /// A report with `done` false means the device stopped or hung; the next dispatch
    /// boots it again.
    ///
    /// # Errors
    /// [`RunError::Cores`] or [`RunError::EntryChanged`] for a job this session
    /// cannot run; [`RunError::Job`] if the job block does not fit; [`RunError::Io`] if
    /// QEMU cannot be started.
    pub fn dispatch(&mut self, job: &Job) -> Result<Report, RunError> {
        self.dispatch_cancellable(job, &|| false)
    }

    /// [`Session::dispatch`], asking `cancelled` about every [`CANCEL_POLL`] while the
    /// job runs: when it answers true, QEMU is killed and reaped (no process is left),
    /// and the next dispatch boots a fresh device. A caller that must stop on Ctrl-C
    /// checks for the signal in `cancelled` (the Python package does).
    ///
    /// # Errors
    /// As [`Session::dispatch`], and [`RunError::Cancelled`].
    pub fn dispatch_cancellable(&mut self, job: &Job, cancelled: &dyn Fn() -> bool) -> Result<Report, RunError> {
        if job.header.cores as usize != self.cores {
            return Err(RunError::Cores { session: self.cores, job: job.header.cores as usize });
        }
        let entry = EntryParameters::of(&job.header);
        if self.entered_with.is_some_and(|entered| entered != entry) {
            return Err(RunError::EntryChanged);
        }
        let block = job.to_bytes().map_err(RunError::Job)?;
        if self.device.is_none() {
            self.start()?;
        }
        self.entered_with = Some(entry);
        let device = self.device.as_mut().expect("started above");
        // A device that died already shows as a closed stdout below.
        let _ = write_frame(job, &block, &mut device.stdin);
        // Under a debugger the job takes as long as the person at it lets it: a day.
        let limit = match self.options.gdb {
            Some(_) => Duration::from_secs(24 * 3600),
            None => self.options.wall_limit.unwrap_or_else(|| wall_limit(job)),
        };
        let deadline = Instant::now() + limit;
        let mut collected = Collected::default();
        let mut asked = Instant::now();
        let timed_out = loop {
            if collected.job_over() || collected.device_gone() {
                break false;
            }
            // Asked at most every CANCEL_POLL (a Python caller takes the GIL to answer),
            // not at every event of a busy job.
            if asked.elapsed() >= CANCEL_POLL {
                asked = Instant::now();
                if cancelled() {
                    let mut device = self.device.take().expect("running");
                    let _ = device.child.kill();
                    let _ = device.child.wait();
                    return Err(RunError::Cancelled);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            // The wait is cut to CANCEL_POLL so that `cancelled` is asked while the
            // device is busy; events still end it at once.
            match device.events.recv_timeout(left.min(CANCEL_POLL)) {
                Ok(event) => collected.take(event),
                Err(RecvTimeoutError::Timeout) if left <= CANCEL_POLL => break true,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => collected.stdout_closed = true,
            }
        };
        let mut status = None;
        // The plugin wrote each op's lines before the loader printed its op's line, so
        // the file has every op of the lines collected.
        let plugin = if timed_out || collected.device_gone() {
            let mut device = self.device.take().expect("running");
            if timed_out {
                let _ = device.child.kill();
            }
            status = device.child.wait().ok();
            // What it wrote before it went: the readers end once the pipes close.
            while let Ok(event) = device.events.recv_timeout(Duration::from_secs(1)) {
                collected.take(event);
            }
            device.plugin.as_mut().map(PluginFile::take)
        } else {
            device.plugin.as_mut().map(PluginFile::take)
        }
        .transpose()
        .map_err(RunError::Io)?;
        let mut report = collected.report(status, timed_out);
        if let Some(plugin) = plugin {
            report.add_plugin(plugin);
        }
        // A kernel that wrote into another core's image may have broken that core's
        // code or data for every later op: the next job boots a fresh device.
        let ops = report.cores.values().map(|core| core.ops.len()).max().unwrap_or(0);
        if (0..ops).any(|op| report.findings(op).of(findings::FindingKind::CrossCoreStore).next().is_some())
            && let Some(mut device) = self.device.take()
        {
            let _ = device.child.kill();
            let _ = device.child.wait();
        }
        Ok(report)
    }

    /// Ends the session: the loader sees end of file and exits; returns QEMU's exit
    /// status (`None` if the device had already stopped, or did not exit in time and
    /// was killed).
    pub fn close(mut self) -> Option<std::process::ExitStatus> {
        let Device { mut child, stdin, events, .. } = self.device.take()?;
        drop(stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            // Wait for the output readers' news rather than poll blindly.
            let _ = events.recv_timeout(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(mut device) = self.device.take() {
            let _ = device.child.kill();
            let _ = device.child.wait();
        }
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field(
                "library",
                match &self.backend {
                    Backend::Qemu { library, .. } => &library.name,
                    Backend::Process { name, .. } => name,
                },
            )
            .field("cores", &self.cores)
            .field("options", &self.options)
            .field("running", &self.device.is_some())
            .finish()
    }
}

/// The loader's and the DMA engine's images, built once per process (a build that
/// finds nothing to do still costs cargo about a second).
fn firmware() -> Result<(Images, Images), RunError> {
    static BUILT: std::sync::Mutex<Option<(Images, Images)>> = std::sync::Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if built.is_none() {
        let loader = images::build("loader").map_err(RunError::Build)?;
        let engine = images::build("dma_engine").map_err(RunError::Build)?;
        *built = Some((loader, engine));
    }
    Ok(built.clone().expect("built above"))
}

/// The bytes that hand `job` to the loader: the job block, then its data.
///
/// # Errors
/// [`RunError::Job`] if the job block does not fit.
pub fn frame(job: &Job) -> Result<Vec<u8>, RunError> {
    let mut bytes = Vec::new();
    write_frame(job, &job.to_bytes().map_err(RunError::Job)?, &mut bytes).map_err(RunError::Io)?;
    Ok(bytes)
}

/// Writes the frame of `job` (its job block `block`, then its data: [`frame`]) into
/// `out` piece by piece, so a session's tensors go into the pipe without a copy of
/// the whole frame first.
fn write_frame(job: &Job, block: &[u8], out: &mut impl Write) -> std::io::Result<()> {
    let segments = std::iter::once((Job::ADDRESS, block)).chain(job.data.iter().map(|(a, b)| (*a, &b[..])));
    out.write_all(&FrameHeader { magic: FRAME_MAGIC, segments: 1 + job.data.len() as u32 }.to_bytes())?;
    for (address, data) in segments {
        out.write_all(&SegmentHeader { address, len: data.len() as u32 }.to_bytes())?;
        out.write_all(data)?;
    }
    out.flush()
}

/// Reads QEMU's stdout: text lines, and each `DUMP` line's raw bytes.
fn read_stdout(stdout: impl Read + Send + 'static, events: Sender<Event>) {
    thread::spawn(move || {
        let mut stdout = BufReader::with_capacity(1 << 20, stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match stdout.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line)).into_owned();
            let event = match Line::parse(&text) {
                Ok(Line::Dump { op, len, .. }) => {
                    // The bytes, then the newline the loader ends them with.
                    let mut bytes = vec![0; len as usize + 1];
                    if stdout.read_exact(&mut bytes).is_err() {
                        break;
                    }
                    bytes.pop();
                    Event::Dump { op, bytes }
                }
                _ => Event::Line(text),
            };
            if events.send(event).is_err() {
                return;
            }
        }
        let _ = events.send(Event::StdoutClosed);
    });
}

/// Reads QEMU's stderr, cut at the loader's end-of-job markers.
fn read_stderr(mut stderr: impl Read + Send + 'static, events: Sender<Event>) {
    thread::spawn(move || {
        let mut pending = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            let read = match stderr.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            pending.extend_from_slice(&buffer[..read]);
            while let Some(at) = pending.windows(STDERR_JOB_END.len()).position(|w| w == STDERR_JOB_END) {
                let bytes = pending[..at].to_vec();
                pending.drain(..at + STDERR_JOB_END.len());
                if events.send(Event::Stderr { bytes, job_end: true }).is_err() {
                    return;
                }
            }
        }
        let _ = events.send(Event::Stderr { bytes: pending, job_end: false });
        let _ = events.send(Event::StderrClosed);
    });
}

/// One job's output, as it arrives.
#[derive(Default)]
struct Collected {
    lines: Vec<String>,
    dumps: BTreeMap<u32, Vec<u8>>,
    stderr: Vec<u8>,
    done: bool,
    stderr_job_end: bool,
    stdout_closed: bool,
    stderr_closed: bool,
}

impl Collected {
    fn take(&mut self, event: Event) {
        match event {
            Event::Line(line) => {
                self.done |= matches!(Line::parse(&line), Ok(Line::Done { .. }));
                self.lines.push(line);
            }
            Event::Dump { op, bytes } => self.dumps.entry(op).or_default().extend(bytes),
            Event::StdoutClosed => self.stdout_closed = true,
            Event::Stderr { bytes, job_end } => {
                self.stderr.extend(bytes);
                self.stderr_job_end |= job_end;
            }
            Event::StderrClosed => self.stderr_closed = true,
        }
    }

    /// The loader said DONE, and its stderr up to the job's end has arrived.
    fn job_over(&self) -> bool {
        self.done && self.stderr_job_end
    }

    /// QEMU stopped before the job was over.
    fn device_gone(&self) -> bool {
        self.stdout_closed && !self.job_over()
    }

    fn report(self, status: Option<std::process::ExitStatus>, timed_out: bool) -> Report {
        let mut stdout = self.lines.join("\n");
        if !stdout.is_empty() {
            stdout.push('\n');
        }
        let outcome = Outcome { status, stdout, stderr: String::from_utf8_lossy(&self.stderr).into_owned(), timed_out };
        let mut report = parse(outcome);
        report.dumps = self.dumps;
        report.done = self.done;
        report
    }
}

/// Boots the loader on `job.header.cores` cores next to `library`, and the DMA engine
/// on the core after them, runs `job`, and shuts the device down: a one-job
/// [`Session`] with the default options (`-icount`).
pub fn run(library: &Images, job: &Job) -> Result<Report, RunError> {
    run_once(library, job, SessionOptions::default())
}

/// As [`run`], halted at the start with QEMU's gdbstub listening ([`GdbOptions`]), and
/// no wall limit: it returns when the debugger lets the simulation finish.
pub fn run_under_gdb(library: &Images, job: &Job, gdb: GdbOptions) -> Result<Report, RunError> {
    run_once(library, job, SessionOptions { gdb: Some(gdb), ..SessionOptions::default() })
}

/// The same as [`run`], whose default is `-icount shift=0,sleep=off`
/// ([`SessionOptions::count_instructions`]); for the callers that say they count.
pub fn run_counting_instructions(library: &Images, job: &Job) -> Result<Report, RunError> {
    run(library, job)
}

fn run_once(library: &Images, job: &Job, options: SessionOptions) -> Result<Report, RunError> {
    let mut session = Session::boot(library, job.header.cores as usize, options)?;
    let mut report = session.dispatch(job)?;
    if report.outcome.status.is_none() && !report.outcome.timed_out {
        report.outcome.status = session.close();
    }
    Ok(report)
}

/// The report of a loader's whole output, read after the fact: `stdout` as the loader
/// wrote it (its lines and each `DUMP`'s bytes), `stderr` likewise. For a loader that
/// wrote to files (the host tier's, under a debugger) rather than to a session's pipes.
pub fn report_from(stdout: Vec<u8>, stderr: Vec<u8>) -> Report {
    let (sender, events) = mpsc::channel();
    read_stdout(std::io::Cursor::new(stdout), sender.clone());
    read_stderr(std::io::Cursor::new(stderr), sender);
    let mut collected = Collected::default();
    // Both readers end at the end of their bytes: every event is in when both closed.
    while !(collected.stdout_closed && collected.stderr_closed) {
        match events.recv() {
            Ok(event) => collected.take(event),
            Err(_) => break,
        }
    }
    collected.report(None, false)
}

/// Parses the loader's lines (the typed `neuroncustomop_wire::report::Line`); lines
/// of any other form are left in `outcome.stdout` only. The host tier's loader
/// reports its own checks' findings as the plugin's lines (`FINDING`, `CHECKED`)
/// before a core's `OP` line: they become that op's [`OpReport::plugin`] lines.
pub fn parse(outcome: Outcome) -> Report {
    let mut cores: BTreeMap<u32, CoreReport> = BTreeMap::new();
    let mut done = false;
    let mut checked: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for text in outcome.stdout.lines() {
        if let Ok(line @ (PluginLine::Finding { .. } | PluginLine::Checked { .. })) = PluginLine::parse(text) {
            checked.entry(line.core()).or_default().push(text.to_string());
            continue;
        }
        let Ok(line) = Line::parse(text) else { continue };
        let Some(c) = line_core(&line) else {
            done |= matches!(line, Line::Done { .. });
            continue;
        };
        let report = cores.entry(c).or_default();
        match line {
            Line::Callback { name, .. } => report.callbacks.push(name.to_string()),
            Line::Register { name, status, .. } => {
                report.registrations.push(Registration { name: name.into(), status })
            }
            Line::Entry { status, .. } => report.entry_status = Some(status),
            Line::Kernel { ptr, name, handle, .. } => report.kernels.push(Kernel { name: name.into(), ptr, handle }),
            Line::Stdout { op, lost, bytes, .. } => {
                let printed = report.stdout.entry(op).or_default();
                printed.0.extend(bytes.iter());
                printed.1 += lost;
            }
            Line::OverBudget { op, function, instructions, pc, .. } => {
                report.over_budget.push(OverBudget { op, core: c, function: function.into(), instructions, pc })
            }
            Line::GivenBack { op, bytes, blocks, kept, rebuilt, .. } => {
                report.given_back.insert(op, HeapsGivenBack { bytes, blocks, kept, rebuilt: u32::from(rebuilt) });
            }
            Line::Op { function, status, count, .. } => report.ops.push(OpReport {
                function: function.into(),
                status,
                instructions: count.map(|Count { instructions, .. }| instructions),
                exact: count.is_some_and(|count| count.exact),
                icount: count.map(|Count { instructions, .. }| instructions),
                plugin: OpLines { lines: checked.remove(&c).unwrap_or_default() },
            }),
            _ => {}
        }
    }
    Report { cores, dumps: BTreeMap::new(), done, outcome }
}

/// The core a line is about, if it is about one.
fn line_core(line: &Line<'_>) -> Option<u32> {
    match *line {
        Line::Callback { core, .. }
        | Line::Register { core, .. }
        | Line::Entry { core, .. }
        | Line::RegisterFuncs { core, .. }
        | Line::Kernel { core, .. }
        | Line::Stdout { core, .. }
        | Line::BadRing { core, .. }
        | Line::Op { core, .. }
        | Line::OverBudget { core, .. }
        | Line::GivenBack { core, .. } => Some(core),
        Line::Dump { .. } | Line::Done { .. } | Line::Error { .. } => None,
    }
}
