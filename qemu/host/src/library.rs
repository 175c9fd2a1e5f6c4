//! The host API an op author's tests use: load a library once, call its kernels by
//! name with typed arrays, get the output, the named status, what each core printed
//! and how many instructions each core took.
//!
//! ```no_run
//! use neuroncustomop_host::array::Array;
//! use neuroncustomop_host::library::{Arg, Library, Output};
//!
//! // A project folder made by `ncop new` (built and packaged here), a package folder
//! // (`ucode_lib.json` and 8 images), or a built-in example: `Library::example("relu")`.
//! let library = Library::load("my_op")?;
//! let x = Array::from_vec(vec![2, 3], vec![1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0])?;
//! let call = library.call("scale", &[Arg::Tensor(x), Arg::Float(2.0)], Output::Like(0))?.check()?;
//! assert_eq!(call.output.to_vec::<f32>()?, [2.0, -4.0, 6.0, -8.0, 10.0, -12.0]);
//! println!("{} instructions on core 0; it printed {:?}", call.instructions[0], call.stdout[0].text);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each call is one job of the simulated device (`neuroncustomop_machine::device`): the inputs are
//! placed in device memory, the output is filled with [`crate::compare::canary`]
//! bytes first (so a comparison can name elements the kernel never wrote), and the op
//! is dispatched from 0x85/0x86 words with the FunctionId the package's
//! `ucode_lib.json` binds to the kernel's name.

use crate::array::{Array, dtype_name};
use crate::compare::{canary, holding, second_canary};
use neuroncustomop::allocators::HeapsGivenBack;
use neuroncustomop::data_transfer::NeuronMemcpyMethod;
use neuroncustomop::wrapper_api::{ArgFailure, ArgTensor, DescriptorError, Dtype, ScalarKind, Status};
pub use neuroncustomop_hosttier::Sanitizer;
use neuroncustomop_hosttier::{Debugger, HostLibrary};
use neuroncustomop_machine::device::{OpStatus, RunError, Session, SessionOptions, describe_status};
/// The memory checks' findings, as [`Call::findings`] holds them.
pub use neuroncustomop_machine::findings::{Finding, FindingKind, OpFindings, Severity};
use neuroncustomop_machine::images::CORES;
use neuroncustomop_machine::job::{Job, JobError, Op, TENSOR_AREA, TENSOR_AREA_SIZE};
use neuroncustomop_package::cxx::Registration;
use neuroncustomop_package::package::{Package, PackageError};
use neuroncustomop_package::project::{Project, ProjectError};
use neuroncustomop_package::ucode_lib::UcodeLib;
use neuroncustomop_wire::Descriptor;
use neuroncustomop_wire::job::OutputDump;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// One argument of a kernel, in the order the kernel pulls them.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A tensor of any ABI dtype.
    Tensor(Array),
    /// A C `int` scalar (`customop_next_int`, `args.int()`).
    Int(i32),
    /// A C `long long` scalar (`customop_next_long_long`, `args.long_long()`).
    LongLong(i64),
    /// A C `float` scalar (`customop_next_float`, `args.float()`).
    Float(f32),
}

impl From<Array> for Arg {
    fn from(array: Array) -> Self {
        Arg::Tensor(array)
    }
}

impl Arg {
    /// What it is, for messages: `tensor float32 [2, 3]`, `int`, `long long`, `float`.
    pub fn describe(&self) -> String {
        match self {
            Arg::Tensor(array) => format!("tensor {} {:?}", dtype_name(array.dtype()), array.shape()),
            Arg::Int(_) => "int".into(),
            Arg::LongLong(_) => "long long".into(),
            Arg::Float(_) => "float".into(),
        }
    }
}

/// The output tensor's shape and dtype.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// As given.
    Shape {
        /// Its dtype.
        dtype: Dtype,
        /// Its shape.
        shape: Vec<usize>,
    },
    /// The same shape and dtype as input `k` (counting every argument from 0), which
    /// must be a tensor.
    Like(usize),
}

/// What a call says of its output: its shape, its dtype, both or neither;
/// [`Library::resolve_output`] completes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartialOutput {
    /// Its shape, if the call gives it.
    pub shape: Option<Vec<usize>>,
    /// Its dtype, if the call gives it.
    pub dtype: Option<Dtype>,
}

impl PartialOutput {
    /// Fills what it lacks from `output` (a dtype and shape of lower precedence).
    fn fill(&mut self, output: Option<(Dtype, Vec<usize>)>) {
        if let Some((dtype, shape)) = output {
            self.dtype.get_or_insert(dtype);
            self.shape.get_or_insert(shape);
        }
    }

    /// Its dtype and shape, if both are known.
    fn complete(&self) -> Option<(Dtype, Vec<usize>)> {
        Some((self.dtype?, self.shape.clone()?))
    }
}

/// How a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Cores that run the kernel, 1 to 8: a kernel that splits its work by
    /// `get_cpu_count()` (which is 8) needs all 8.
    pub cores: usize,
    /// The backend of the runtime's `neuron_memcpy` for this op; the default is the
    /// library's own, the DMA engine (a core waiting for it sleeps, docs/PERFORMANCE.md).
    pub memcpy: NeuronMemcpyMethod,
    /// Run QEMU under `-icount` (off by default): all cores in turn on one host
    /// thread, with a deterministic virtual clock, so a sleeping core's wake-up costs
    /// no wall time and a kernel that waits (for DMA, for other cores) counts the same
    /// every run. Off, each core runs on a host thread of its own (QEMU's MTTCG) and
    /// the TCG plugin counts; each core's count is exact either way (its ICOUNT
    /// register under `-icount`). Only an unchecked, unprofiled call can have it: the
    /// checks and the profile run in the plugin, which QEMU 10.0.2 cannot run there.
    pub count_instructions: bool,
    /// Stop the kernel after this many instructions on a core ([`CallError::Stopped`],
    /// naming where it was): an infinite loop ends instead of hanging the call.
    pub max_instructions: u64,
    /// The kernel writes only part of its output on purpose: elements it never wrote
    /// do not make [`Call::check`] fail. Off by default: an output element no core
    /// wrote is a failure ([`Unwritten`]).
    pub partial_output: bool,
    /// Check every load and store of the kernel against what its op may touch (the
    /// default): a store past the output, into an input or another core's image, a load
    /// outside what the op was given, output bytes two cores wrote ([`Call::findings`],
    /// and [`Call::check`] fails on them). The checks run in the device's TCG plugin,
    /// which runs without `-icount`: a checked call runs without it whatever
    /// [`Options::count_instructions`] says.
    pub checked: bool,
    /// Profile the call ([`Call::profile`]): where each core's instructions went, by
    /// function, call path, class and memory region, and its timeline. Slower (every
    /// instruction and memory access is instrumented) and needs the TCG plugin, so the
    /// device runs without `-icount` (`count_instructions` is ignored).
    pub profile: bool,
    /// Where the kernel runs: the simulated device (the default, and the reference), or
    /// the host tier (the same source built for x86-64, each core a thread: no
    /// instruction counts; for debuggers and sanitizers, docs/op-author-guide.md).
    pub target: Target,
    /// On the host tier: build the library with this sanitizer (C, C++ and Rust libraries; `undefined` C and C++ only).
    pub sanitize: Option<Sanitizer>,
}

/// Where a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Target {
    /// The simulated Xtensa device under QEMU: the reference.
    #[default]
    Device,
    /// The host tier (`neuroncustomop_hosttier`): the library built for x86-64, run on
    /// a simulated device memory at the device's addresses, each core a thread.
    Host,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            cores: 1,
            memcpy: NeuronMemcpyMethod::Dma,
            count_instructions: false,
            max_instructions: neuroncustomop_wire::job::DEFAULT_MAX_INSTRUCTIONS,
            partial_output: false,
            checked: true,
            target: Target::Device,
            sanitize: None,
            profile: false,
        }
    }
}

/// An invocation status, with its name: `OK`, a runtime status such as `NO_MORE_ARGS`,
/// or a kernel's own code (`0x1_0000 + code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelStatus(pub u32);

impl KernelStatus {
    /// Whether the kernel succeeded.
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// Its name alone: `OK`, a runtime status such as `DTYPE_MISMATCH`, `Op(n)` for a
    /// kernel's own code `n` (as the runtime's `Status` prints it), else its hex value.
    pub fn name(self) -> String {
        match (Status(self.0).name(), self.kernel_code()) {
            (Some(name), _) => name.into(),
            (None, Some(code)) => format!("Op({code})"),
            (None, None) => format!("{:#x}", self.0),
        }
    }

    /// The kernel's own failure code (`KernelError::Op(code)`, `customop_fail(code)`).
    pub fn kernel_code(self) -> Option<u32> {
        self.0.checked_sub(Status::KERNEL_BASE).filter(|&code| code <= u32::from(u16::MAX))
    }
}

/// As every printer of the project shows a status: hex, then the runtime's name
/// (`0x0 OK`, `0x44 TCM_EXHAUSTED`, `0x10007 Op(7)`: the runtime's `Status`).
impl fmt::Display for KernelStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Status(self.0).fmt(f)
    }
}

/// What one core printed during the op.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CoreStdout {
    /// The text (invalid UTF-8 replaced).
    pub text: String,
    /// Bytes the core's ring dropped before these (it printed faster than it drained).
    pub lost: u32,
}

/// A finished call.
#[derive(Debug, Clone)]
pub struct Call {
    /// The kernel's name.
    pub kernel: String,
    /// The output tensor as the device left it.
    pub output: Array,
    /// The first failing core's status, or `OK`.
    pub status: KernelStatus,
    /// Every core's status, in core order.
    pub statuses: Vec<KernelStatus>,
    /// Per core, in core order: the argument behind its failing status, when the
    /// runtime named one (`argument 3: pulled as float, passed as int`).
    pub arg_failures: Vec<Option<ArgFailure>>,
    /// Per core, in core order: what it printed.
    pub stdout: Vec<CoreStdout>,
    /// Per core, in core order: guest instructions the kernel took (exact: the core's
    /// own ICOUNT).
    pub instructions: Vec<u64>,
    /// Per core, in core order: whether its count is exactly the kernel's instructions
    /// (the device says so: `exact=yes`); false for an estimate.
    pub exact: Vec<bool>,
    /// Wall time of the device run.
    pub wall: Duration,
    /// Output elements no core wrote, unless the call declared a partial output
    /// ([`Options::partial_output`]): [`Call::check`] fails on them.
    pub unwritten: Option<Unwritten>,
    /// What the memory checks found ([`Options::checked`]; empty when unchecked):
    /// [`Call::check`] fails on any.
    pub findings: OpFindings,
    /// Where the instructions went, when the call asked ([`Options::profile`]).
    pub profile: Option<neuroncustomop_profile::profile::Profile>,
}

/// Output elements no core wrote: they still hold the canary the output was filled
/// with (for the integer dtypes, both canaries of two runs: [`crate::compare::second_canary`]).
/// A kernel that writes an element with exactly the canary's bits (a float NaN of
/// that payload) is not told apart from one that never wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unwritten {
    /// How many elements no core wrote.
    pub elements: usize,
    /// Of all the output's elements.
    pub total: usize,
    /// The cores the call ran on.
    pub cores: usize,
}

impl fmt::Display for Unwritten {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {} output elements were never written", self.elements, self.total)?;
        // The kernel sees get_cpu_count() = 8 cores, and the cores past those it ran on
        // never ran: a kernel that splits its work by core left theirs, at least their
        // share of the output (less one element a core, for a split that rounds).
        let idle = CORES.saturating_sub(self.cores);
        let split_by_core = idle > 0 && self.elements + idle >= self.total * idle / CORES;
        if split_by_core {
            write!(
                f,
                "; cores {}-{} wrote nothing: was this kernel written for {CORES} cores? (`--cores {CORES}`, \
                 or a multicore library: `\"multicore\": true` in customop.json, `multicore = true` under \
                 [package.metadata.neuroncustomop] in Cargo.toml)",
                self.cores,
                CORES - 1
            )
        } else {
            f.write_str(
                "; if the kernel writes part of its output on purpose, declare it (`--partial-output`, \
                 `Options::partial_output`)",
            )
        }
    }
}

/// A kernel that returned a failing status, touched memory its op was not given, or
/// left output elements unwritten.
///
/// Its message names a core only for a failing status, which one core returned: the
/// memory checks' findings name their own cores, and unwritten output is the whole
/// call's ("kernel relu failed: 875 of 1000 output elements were never written; …").
#[derive(Debug, Clone, thiserror::Error)]
#[error("kernel {kernel} failed{}{}", failure_text(self), printed(stdout))]
pub struct KernelFailed {
    /// The kernel.
    pub kernel: String,
    /// The first failing core (0 for unwritten output).
    pub core: usize,
    /// Its status (`OK` when only the output is at fault).
    pub status: KernelStatus,
    /// The argument behind the status, when the runtime named one.
    pub arg_failure: Option<ArgFailure>,
    /// Output elements no core wrote, when every status was OK.
    pub unwritten: Option<Unwritten>,
    /// What the memory checks found (empty when they found nothing).
    pub findings: OpFindings,
    /// What every core printed.
    pub stdout: Vec<CoreStdout>,
}

/// [`KernelFailed`]'s message after the kernel's name: the findings first, since they
/// explain a status or an unwritten output; then unwritten output; then the status.
fn failure_text(failed: &KernelFailed) -> String {
    let KernelFailed { core, status, arg_failure, unwritten, findings, .. } = failed;
    match unwritten {
        _ if findings.first_error().is_some() => {
            format!(": the memory checks found {} problem(s):\n{}", findings.total, findings.to_string().trim_end())
        }
        Some(unwritten) => format!(": {unwritten}"),
        None => format!(" on core {core}: {}", status_text(*status, *arg_failure)),
    }
}

/// A status as the front ends show it: `0x9 SCALAR_KIND_MISMATCH`, and when the runtime
/// named the argument behind it, `: argument 3: pulled as float, passed as int`.
pub fn status_text(status: KernelStatus, arg_failure: Option<ArgFailure>) -> String {
    match arg_failure {
        Some(failure) => format!("{status}: {failure}"),
        None => status.to_string(),
    }
}

/// A core's printed text without the runtime's [`ArgFailure`] line, and the record it
/// carried when it explains `status` (the runtime writes it only then; a kernel that
/// printed such a line itself explains nothing).
fn split_arg_failure(text: &str, status: KernelStatus) -> (String, Option<ArgFailure>) {
    let mut failure = None;
    let mut kept = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match ArgFailure::parse_line(line) {
            Some(parsed) => failure = Some(parsed),
            None => kept.push_str(line),
        }
    }
    (kept, failure.filter(|failure| failure.explains(Status(status.0))))
}

/// What [`CallError::Stopped`] says of the heap blocks given back.
fn given_back_text(given_back: &Option<HeapsGivenBack>) -> String {
    match given_back {
        Some(given) if given.blocks > 0 || given.kept > 0 || given.rebuilt != 0 => {
            let mut text = format!(
                "\nthe heap blocks it held were given back: {} bytes in {} block(s)",
                given.bytes, given.blocks
            );
            if given.kept > 0 {
                text.push_str(&format!("; {} block(s) could not be (the heap's records were overwritten)", given.kept));
            }
            if given.rebuilt != 0 {
                text.push_str("; the heap's records were overwritten, so it was emptied");
            }
            text
        }
        _ => String::new(),
    }
}

fn printed(stdout: &[CoreStdout]) -> String {
    stdout
        .iter()
        .enumerate()
        .filter(|(_, out)| !out.text.is_empty())
        .map(|(core, out)| format!("\ncore {core} printed:\n{}", out.text.trim_end()))
        .collect()
}

/// How a call's work spread over its cores: the figures `ncop run`, the host API and
/// Python give (docs/op-author-guide.md, "Instructions per element").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    /// Every core's instructions, summed: the work done.
    pub total: u64,
    /// The slowest core, the one with the most instructions (the first of equals).
    pub slowest_core: usize,
    /// Its instructions: what the call's time follows.
    pub slowest: u64,
    /// Load balance: the slowest core's instructions over the cores' mean (1 is even;
    /// the number of cores is all the work on one).
    pub balance: f64,
    /// Output elements the slowest core wrote, when known: on one core, the elements
    /// written; on several, from the call's profile ([`Options::profile`]).
    pub elements: Option<u64>,
    /// The slowest core's instructions per element it wrote: the per-element figure.
    /// `None` when its elements are not known or it wrote none.
    pub per_element: Option<f64>,
}

impl Call {
    /// How the work spread over the cores, and the per-element figure ([`Work`]).
    pub fn work(&self) -> Work {
        let total: u64 = self.instructions.iter().sum();
        let (slowest_core, slowest) = self
            .instructions
            .iter()
            .copied()
            .enumerate()
            .fold((0, 0), |best, (core, n)| if n > best.1 { (core, n) } else { best });
        let mean = total as f64 / self.instructions.len().max(1) as f64;
        let balance = if mean > 0.0 { slowest as f64 / mean } else { 1.0 };
        let elements = match (&self.profile, self.instructions.len()) {
            (Some(profile), _) => profile.cores.get(slowest_core).and_then(|core| core.elements_written),
            // One core wrote every element written; a declared partial output
            // (`unwritten` None) does not say how many.
            (None, 1) => self.unwritten.map(|unwritten| (unwritten.total - unwritten.elements) as u64),
            (None, _) => None,
        };
        let per_element = elements.filter(|&e| e > 0).map(|e| slowest as f64 / e as f64);
        Work { total, slowest_core, slowest, balance, elements, per_element }
    }

    /// The first failing core's [`ArgFailure`], when the runtime named the argument
    /// behind its status.
    pub fn arg_failure(&self) -> Option<ArgFailure> {
        let core = self.statuses.iter().position(|status| !status.is_ok())?;
        self.arg_failures.get(core).copied().flatten()
    }

    /// The call's status as the front ends show it ([`status_text`]).
    pub fn status_text(&self) -> String {
        status_text(self.status, self.arg_failure())
    }

    /// The call itself if every core succeeded, the memory checks found nothing but
    /// warnings ([`Severity::Warning`]), and
    /// the cores wrote the whole output (or the call declared a partial one).
    ///
    /// # Errors
    /// [`KernelFailed`], naming the kernel, the core and the status, the memory checks'
    /// findings, or how many output elements no core wrote.
    pub fn check(self) -> Result<Self, KernelFailed> {
        let failed = |core: usize, unwritten: Option<Unwritten>| KernelFailed {
            kernel: self.kernel.clone(),
            core,
            status: self.statuses[core],
            arg_failure: self.arg_failures.get(core).copied().flatten(),
            unwritten,
            findings: self.findings.clone(),
            stdout: self.stdout.clone(),
        };
        if let Some(first) = self.findings.first_error() {
            return Err(failed(first.core as usize, None));
        }
        match (self.statuses.iter().position(|status| !status.is_ok()), self.unwritten) {
            (Some(core), _) => Err(failed(core, None)),
            (None, Some(unwritten)) if unwritten.elements > 0 => Err(failed(0, Some(unwritten))),
            (None, _) => Ok(self),
        }
    }
}

/// Why a call did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The library has no kernel of that name.
    #[error("library {library} has no kernel {kernel}; it has {}", known.join(", "))]
    UnknownKernel {
        /// The library.
        library: String,
        /// The name asked for.
        kernel: String,
        /// Its kernels.
        known: Vec<String>,
    },
    /// [`Output::Like`] names an argument that is not a tensor.
    #[error("the output is to be like argument {index}, but {}", match found { Some(what) => format!("that is a {what}"), None => format!("there are only {count} arguments") })]
    OutputLike {
        /// The argument.
        index: usize,
        /// What it is, if present.
        found: Option<String>,
        /// How many arguments there are.
        count: usize,
    },
    /// A tensor the descriptor cannot describe (rank 0 or above 8, a dimension above
    /// 65535, too many elements).
    #[error(
        "{what} cannot be passed to the device: {reason} (a tensor has 1 to {} dimensions of at most {} each)",
        neuroncustomop::wrapper_api::MAX_RANK,
        neuroncustomop::wrapper_api::MAX_DIM
    )]
    Descriptor {
        /// Which tensor.
        what: String,
        /// Why.
        reason: DescriptorError,
    },
    /// The tensors do not fit in the device memory the simulated device lends them.
    #[error("the arguments and the output take {needed} bytes of device memory; {available} are available")]
    DoesNotFit {
        /// Bytes needed (each tensor 64-byte aligned, and followed by a 256-byte red zone).
        needed: u64,
        /// The tensor area's size.
        available: u64,
    },
    /// More arguments than the ABI carries.
    #[error("{0} arguments: a kernel takes at most 10")]
    TooManyArgs(usize),
    /// Not 1 to 8 cores.
    #[error("{0} cores: a call runs on 1 to {CORES}")]
    Cores(usize),
    /// The job could not be built.
    #[error("building the job")]
    Job(#[source] JobError),
    /// QEMU could not run it.
    #[error("running the device")]
    Run(#[source] RunError),
    /// The host tier could not build or start the library.
    #[error("running on the host tier")]
    Host(#[source] neuroncustomop_hosttier::HostError),
    /// A library loaded for the host tier could not be packaged for its first device call.
    #[error("packaging the library for the device")]
    Packaging(#[source] ProjectError),
    /// The call ran but its profile could not be made ([`Options::profile`]).
    #[error("profiling the call")]
    Profile(#[source] neuroncustomop_profile::profile::ProfileError),
    /// A C++ library's shape function for the kernel failed, or the arguments do not fit
    /// its signature ([`Library::output_of`]).
    #[error("{message}")]
    ShapeFunction {
        /// The kernel.
        kernel: String,
        /// What the shape driver said, naming the kernel (`the shape function of relu
        /// failed: ...`, `op relu: argument 2 (int:1) does not fit: ...`).
        message: String,
    },
    /// The kernel stopped without returning on some core: an exception, a stack
    /// overflow, a panic, an abort or exit, or its instruction budget.
    #[error(
        "kernel {kernel} stopped on core {core}: {}\n{explained}{}{}",
        describe_status(*stop),
        printed(stdout),
        given_back_text(given_back)
    )]
    Stopped {
        /// The kernel.
        kernel: String,
        /// The first core it stopped on.
        core: usize,
        /// How, as the loader reported it; shown with the runtime's name
        /// (`exception(4) EXIT_STACK_OVERFLOW`, `over-budget`).
        stop: OpStatus,
        /// Where, from the images' DWARF: the function and `file:line`, a backtrace
        /// (`neuroncustomop_machine::symbolize`); what the device printed when that cannot be had.
        explained: String,
        /// What every core printed before it stopped (a panic's message among it),
        /// without the device's `FAULT` lines, which `explained` has read. (A boxed
        /// slice: the error stays small enough to return by value.)
        stdout: Box<[CoreStdout]>,
        /// The heap blocks the stopped core's kernel held, which the device gave back
        /// so the next call finds the heap whole.
        given_back: Option<HeapsGivenBack>,
    },
    /// Nothing gave the output a shape and dtype, and no argument is a tensor to take
    /// them from ([`Library::resolve_output`]).
    #[error(
        "kernel {kernel} has no tensor argument to take the output's shape and dtype from: give them with the call \
         (out_shape= and out_dtype= in Python, --output in ncop)"
    )]
    NoOutputForm {
        /// The kernel.
        kernel: String,
    },
    /// A core did not report the op: the device stopped (a fault, a hang, a timeout).
    #[error("core {core} did not finish kernel {kernel}; the device said:\n{output}")]
    Unfinished {
        /// The kernel.
        kernel: String,
        /// The first core without a report.
        core: usize,
        /// The loader's and QEMU's output.
        output: String,
    },
}

/// Why a library could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The path is neither a project nor a package.
    #[error(
        "{} is not a library: expected a project (Cargo.toml, or C sources in src/) or a package (ucode_lib.json)",
        .0.display()
    )]
    NotALibrary(PathBuf),
    /// The project could not be built or packaged.
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// The package could not be made or read.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// The host tier could not build the library ([`Library::load_for`]).
    #[error("building the library for the host tier")]
    Host(#[source] neuroncustomop_hosttier::HostError),
}

/// `error` and every cause under it, one per line, outermost first: the whole story of
/// an error whose own message gives only its context (`packaging my_op`).
///
/// ```
/// let io = std::io::Error::other("disk full");
/// let error = neuroncustomop_host::npy::NpyError::Io { path: "x.npy".into(), source: io };
/// assert_eq!(neuroncustomop_host::library::describe(&error), "x.npy\n  caused by: disk full");
/// ```
pub fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!("\n  caused by: {cause}"));
        source = cause.source();
    }
    text
}

/// A packaged library, ready to call. It keeps one booted device per core count and
/// counting mode ([`neuroncustomop_machine::device::Session`]): the first call of each boots QEMU and
/// enters the library, later calls only dispatch.
#[derive(Debug)]
pub struct Library {
    /// The library's name.
    name: String,
    /// Its kernels and their FunctionIds (`ucode_lib.json`'s table): the package's, or
    /// for a library loaded for the host tier, one made from its host build.
    table: UcodeLib,
    /// Its device package: made at load, or (a library loaded for the host tier) at its
    /// first device call.
    package: OnceLock<Package>,
    sessions: Mutex<BTreeMap<SessionKey, Session>>,
    /// A C++ library's shape driver: its shape functions, run on the host
    /// ([`Library::output_of`]).
    shape_driver: Option<PathBuf>,
    /// What the shape driver's `list` said, read once ([`Library::registration`]).
    registration: OnceLock<Result<Registration, String>>,
    /// Its project's declaration that every op runs on all 8 cores
    /// ([`Project::multicore`]).
    multicore: bool,
    /// The project the library was packaged from, if it was ([`Target::Host`] builds it).
    project: Option<Project>,
    /// The host tier's builds of the project (one per sanitizer), made on first use.
    host: Mutex<BTreeMap<Option<Sanitizer>, HostLibrary>>,
}

/// What a session serves: its cores, its counting mode, whether it checks and profiles,
/// its target and sanitizer.
type SessionKey = (usize, bool, bool, bool, Target, Option<Sanitizer>);

/// How one run goes beyond its options: the output's fill (else the canary), and the
/// debugger it runs under (else none).
#[derive(Clone, Copy, Default)]
struct RunWith<'a> {
    fill: Option<&'a [u8]>,
    debugger: Option<&'a Debugger>,
}

/// The most arguments a kernel takes (the runtime's pull stream).
const MAX_ARGS: usize = 10;

impl Library {
    /// Loads the library at `path`: a package folder (`ucode_lib.json` and its 8
    /// images) as it is, or a project folder (`ncop new`), built and packaged first.
    ///
    /// # Errors
    /// [`LoadError`]: not a library, or its build or packaging failed.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, LoadError> {
        let path = path.as_ref();
        if path.join("ucode_lib.json").is_file() {
            return Ok(Self::from_package(Package::open(path)?));
        }
        let project = Project::open(path)?.ok_or_else(|| LoadError::NotALibrary(path.into()))?;
        Self::from_project(&project)
    }

    /// Loads the library at `path` for calls on `target`: [`Library::load`] for the
    /// device; for the host tier, a project folder built only for the host (no Xtensa
    /// build: its kernels are those its host build registers), packaged for the device
    /// only if a call asks for the device.
    ///
    /// # Errors
    /// [`LoadError`]: not a library, its build failed, or (the host tier) a package
    /// folder, which has no sources to build for the host.
    pub fn load_for(path: impl AsRef<Path>, target: Target) -> Result<Self, LoadError> {
        let path = path.as_ref();
        if target == Target::Device || path.join("ucode_lib.json").is_file() {
            let library = Self::load(path)?;
            if target == Target::Host {
                return Err(LoadError::Host(neuroncustomop_hosttier::HostError::Unsupported(format!(
                    "{} is a package: the host tier builds from the project's sources (load the project folder)",
                    path.display()
                ))));
            }
            return Ok(library);
        }
        let project = Project::open(path)?.ok_or_else(|| LoadError::NotALibrary(path.into()))?;
        Self::from_project_for_host(&project)
    }

    /// A project built for the host tier only: its kernels from the host build.
    fn from_project_for_host(project: &Project) -> Result<Self, LoadError> {
        let host = neuroncustomop_hosttier::build(project, None).map_err(LoadError::Host)?;
        let kernels = neuroncustomop_hosttier::kernels(&host).map_err(LoadError::Host)?;
        let table = neuroncustomop_package::package::ucode_lib(&project.name, &kernels).map_err(PackageError::from)?;
        let mut library = Self::new(project.name.clone(), table, None, host.shape_driver.clone());
        library.host.get_mut().unwrap_or_else(PoisonError::into_inner).insert(None, host);
        library.with_project(project);
        Ok(library)
    }

    /// Packages `project`; a project declared multicore ([`Project::multicore`]) gets 8
    /// cores as its default.
    fn from_project(project: &Project) -> Result<Self, LoadError> {
        let mut library = Self::from_package(project.package()?);
        library.with_project(project);
        Ok(library)
    }

    /// Remembers the project the library comes from (the host tier builds it), and
    /// whether it is declared multicore ([`Project::multicore`]).
    fn with_project(&mut self, project: &Project) {
        self.project = Some(project.clone());
        self.multicore = project.multicore;
    }

    /// The built-in example `name` built for `target` ([`Library::load_for`]).
    ///
    /// # Errors
    /// As [`Library::example`].
    pub fn example_for(name: &str, target: Target) -> Result<Self, LoadError> {
        let project =
            Project::example(name)?.ok_or_else(|| ProjectError::UnknownExample(name.into(), Project::examples()))?;
        match target {
            Target::Device => Self::from_project(&project),
            Target::Host => Self::from_project_for_host(&project),
        }
    }

    /// The built-in example `name` of this repository (`examples/`), packaged.
    ///
    /// # Errors
    /// [`LoadError`]: an unknown example (naming those there are), or its build's or
    /// packaging's error.
    pub fn example(name: &str) -> Result<Self, LoadError> {
        let project =
            Project::example(name)?.ok_or_else(|| ProjectError::UnknownExample(name.into(), Project::examples()))?;
        Self::from_project(&project)
    }

    /// A library from a package already made; a C++ library's package has its shape
    /// functions ([`Library::output_of`]).
    pub fn from_package(package: Package) -> Self {
        let shape_driver =
            Some(package.dir.join(neuroncustomop_package::package::SHAPE_DRIVER)).filter(|driver| driver.is_file());
        let (name, table) = (package.name().to_owned(), package.ucode_lib.clone());
        Self::new(name, table, Some(package), shape_driver)
    }

    fn new(name: String, table: UcodeLib, package: Option<Package>, shape_driver: Option<PathBuf>) -> Self {
        Self {
            name,
            table,
            package: package.map(OnceLock::from).unwrap_or_default(),
            sessions: Mutex::new(BTreeMap::new()),
            shape_driver,
            registration: OnceLock::new(),
            multicore: false,
            project: None,
            host: Mutex::new(BTreeMap::new()),
        }
    }

    /// The cores its ops run on unless a call says otherwise: 8 for a library declared
    /// multicore ([`Project::multicore`]: a C++ library's `"multicore": true` in its
    /// `customop.json`, a Rust or C library's `multicore = true` under
    /// `[package.metadata.neuroncustomop]` in its `Cargo.toml`), else 1.
    pub fn default_cores(&self) -> usize {
        if self.multicore { CORES } else { 1 }
    }

    /// The library's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The output `kernel` makes of `args`, as the library's own shape function says:
    /// a C++ library on the AWS torch API registers one per op (`NEURON_LIBRARY`), run
    /// here on the host, so its calls need no output shape. `None` for a Rust or C
    /// library, which has none.
    ///
    /// # Errors
    /// [`CallError::ShapeFunction`]: the shape function failed or gave an output the
    /// device cannot hold.
    pub fn output_of(&self, kernel: &str, args: &[Arg]) -> Result<Option<Output>, CallError> {
        let Some(driver) = &self.shape_driver else { return Ok(None) };
        use neuroncustomop_package::cxx::{ArgKind, ShapeArg};
        // A `double` parameter takes the float the kernel ABI carries, widened (as the
        // device entry does), and the shape driver wants it named a double.
        let kinds = self.registration().and_then(Result::ok).and_then(|r| r.ops.iter().find(|op| op.name == kernel));
        let takes_double = |index: usize| kinds.is_some_and(|op| op.args.get(index) == Some(&ArgKind::Double));
        let shape_args: Vec<ShapeArg> = args
            .iter()
            .enumerate()
            .map(|(index, arg)| match arg {
                Arg::Tensor(array) => {
                    ShapeArg::Tensor(array.dtype(), array.shape().iter().map(|&d| d as u32).collect())
                }
                Arg::Int(v) => ShapeArg::Int(*v),
                Arg::LongLong(v) => ShapeArg::Long(*v),
                Arg::Float(v) if takes_double(index) => ShapeArg::Double(f64::from(*v)),
                Arg::Float(v) => ShapeArg::Float(*v),
            })
            .collect();
        let shaped = neuroncustomop_package::cxx::output_shape(driver, kernel, &shape_args)
            .map_err(|message| CallError::ShapeFunction { kernel: kernel.into(), message })?;
        Ok(Some(Output::Shape { dtype: shaped.dtype, shape: shaped.shape.iter().map(|&d| usize::from(d)).collect() }))
    }

    /// The output's dtype and shape for a call of `kernel` with `args`: each from the
    /// first that gives it, in this order (the one rule, for `ncop run` and Python):
    /// 1. `given`, the call's own;
    /// 2. `shape_fn`, what a shape function the caller holds said (the Python package's
    ///    `shape_fns`);
    /// 3. the library's own shape function ([`Library::output_of`], a C++ library's);
    /// 4. the first tensor argument.
    ///
    /// Each is asked only while something is still missing.
    ///
    /// # Errors
    /// [`CallError::ShapeFunction`]; [`CallError::NoOutputForm`] when the output is
    /// still incomplete and no argument is a tensor.
    pub fn resolve_output(
        &self,
        kernel: &str,
        args: &[Arg],
        given: PartialOutput,
        shape_fn: Option<(Dtype, Vec<usize>)>,
    ) -> Result<(Dtype, Vec<usize>), CallError> {
        let mut spec = given;
        spec.fill(shape_fn);
        if spec.complete().is_none()
            && let Some(Output::Shape { dtype, shape }) = self.output_of(kernel, args)?
        {
            spec.fill(Some((dtype, shape)));
        }
        if let Some(complete) = spec.complete() {
            return Ok(complete);
        }
        let (dtype, shape) = args
            .iter()
            .find_map(|arg| match arg {
                Arg::Tensor(array) => Some((array.dtype(), array.shape().to_vec())),
                _ => None,
            })
            .ok_or_else(|| CallError::NoOutputForm { kernel: kernel.into() })?;
        Ok((spec.dtype.unwrap_or(dtype), spec.shape.unwrap_or(shape)))
    }

    /// What a C++ library's `NEURON_LIBRARY` registers: the namespace its ops take in
    /// `torch.ops`, and each op's argument kinds. `None` for a Rust or C library.
    ///
    /// # Errors
    /// Why the shape driver could not be run or read.
    pub fn registration(&self) -> Option<Result<&Registration, String>> {
        let driver = self.shape_driver.as_deref()?;
        let read = self
            .registration
            .get_or_init(|| neuroncustomop_package::cxx::registration(driver).map_err(|e| describe(&e)));
        Some(read.as_ref().map_err(Clone::clone))
    }

    /// Its kernels, in registration order.
    pub fn kernels(&self) -> Vec<&str> {
        self.table.libraries[0].functions.iter().map(|function| function.name.as_str()).collect()
    }

    /// Its device package; a library loaded for the host tier ([`Library::load_for`])
    /// is packaged now, once.
    ///
    /// # Errors
    /// [`CallError::Packaging`]: the device build or packaging failed.
    pub fn package(&self) -> Result<&Package, CallError> {
        if let Some(package) = self.package.get() {
            return Ok(package);
        }
        let project = self.project.as_ref().expect("a library without a package was loaded from a project");
        let package = project.package().map_err(CallError::Packaging)?;
        Ok(self.package.get_or_init(|| package))
    }

    /// Calls `kernel` with `args` on one core ([`Options::default`]).
    ///
    /// # Errors
    /// [`CallError`]; a kernel that fails is not an error here: see [`Call::check`].
    pub fn call(&self, kernel: &str, args: &[Arg], output: Output) -> Result<Call, CallError> {
        self.call_with(kernel, args, output, &Options::default())
    }

    /// Calls `kernel` with `args` as `options` say.
    ///
    /// # Errors
    /// [`CallError`]; a kernel that fails is not an error here: see [`Call::check`].
    pub fn call_with(&self, kernel: &str, args: &[Arg], output: Output, options: &Options) -> Result<Call, CallError> {
        self.call_cancellable(kernel, args, output, options, &|| false)
    }

    /// [`Library::call_with`], asking `cancelled` about every
    /// [`neuroncustomop_machine::device::CANCEL_POLL`] while the device runs: when it
    /// answers true, the call ends with [`CallError::Run`]`(`[`RunError::Cancelled`]`)`,
    /// no QEMU process is left, and the next call boots the device again (Ctrl-C in
    /// the Python package).
    ///
    /// # Errors
    /// [`CallError`]; a kernel that fails is not an error here: see [`Call::check`].
    pub fn call_cancellable(
        &self,
        kernel: &str,
        args: &[Arg],
        output: Output,
        options: &Options,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Call, CallError> {
        let function = self.function_id(kernel)?;
        if !(1..=CORES).contains(&options.cores) {
            return Err(CallError::Cores(options.cores));
        }
        let mut call = self.run(kernel, function, args, output.clone(), options, RunWith::default(), cancelled)?;
        let elements = call.output.numel();
        let first = holding(call.output.bytes(), &canary(call.output.dtype()));
        let mut never = first.iter().filter(|&&held| held).count();
        if never > 0 && !options.partial_output && call.status.is_ok() {
            // An integer kernel can write the canary as a real value: an element
            // holding it is unwritten only if it also holds another canary in a second run.
            if let Some(second) = second_canary(call.output.dtype()) {
                let with = RunWith { fill: Some(&second), debugger: None };
                let again = self.run(kernel, function, args, output, options, with, cancelled)?;
                let held = holding(again.output.bytes(), &second);
                never = first.iter().zip(&held).filter(|(a, b)| **a && **b).count();
            }
        }
        if !options.partial_output {
            call.unwritten = Some(Unwritten { elements: never, total: elements, cores: options.cores });
        }
        Ok(call)
    }

    /// Calls `kernel` once on the host tier under Debian's gdb ([`Debugger`]): stopped
    /// at the kernel's entry on the chosen core, then the debugger's commands (a person
    /// at the terminal, or `--batch` commands). The call's result is read after gdb
    /// exits; `options.target` is taken to be [`Target::Host`].
    ///
    /// # Errors
    /// [`CallError`], as [`Library::call_with`].
    pub fn debug(
        &self,
        kernel: &str,
        args: &[Arg],
        output: Output,
        options: &Options,
        debugger: &Debugger,
    ) -> Result<Call, CallError> {
        let function = self.function_id(kernel)?;
        if !(1..=CORES).contains(&options.cores) || debugger.core >= options.cores {
            return Err(CallError::Cores(options.cores.max(debugger.core + 1)));
        }
        let options = Options { target: Target::Host, ..*options };
        self.run(kernel, function, args, output, &options, RunWith { fill: None, debugger: Some(debugger) }, &|| false)
    }

    /// One run of `kernel` on the device, its output filled with `fill` (else the
    /// dtype's [`canary`]) first; `cancelled` as for [`Library::call_cancellable`].
    #[allow(clippy::too_many_arguments)] // the call's parts, passed through
    fn run(
        &self,
        kernel: &str,
        function: neuroncustomop_wire::FunctionId,
        args: &[Arg],
        output: Output,
        options: &Options,
        with: RunWith<'_>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Call, CallError> {
        let RunWith { fill, debugger } = with;
        let mut job = match options.target {
            Target::Device => self.package()?.job(options.cores),
            // No images: the host tier's loader finds the library's entry points itself.
            Target::Host => {
                let images = neuroncustomop_machine::images::Images { name: self.name.clone(), cores: Vec::new() };
                neuroncustomop_package::package::job_for(&images, &self.table, options.cores)
            }
        }
        .map_err(CallError::Job)?;
        job.header.memcpy_method = options.memcpy as u32;
        job.header.set_max_instructions(options.max_instructions);
        let staged = stage_filled(&mut job, args, output, fill)?;
        let (out_dtype, out_shape, dump) = (staged.dtype, staged.shape, staged.dump);
        // The tensors by name, in the order they were placed: the arguments, then the output.
        let tensors: Vec<(String, u32, u32)> = job
            .data
            .iter()
            .enumerate()
            .map(|(index, (address, bytes))| {
                let name = if index < args.len() { format!("argument {index}") } else { "the output".into() };
                (name, *address, bytes.len() as u32)
            })
            .collect();
        let op = Op { function, output: Some(staged.output), inputs: staged.inputs, dump: staged.dump };
        job.push(&op).map_err(CallError::Job)?;

        let started = Instant::now();
        let report = match debugger {
            Some(debugger) => {
                let host = self.host_library(options.sanitize)?;
                neuroncustomop_hosttier::debug(&host, &job, debugger).map_err(CallError::Host)?
            }
            None => self.dispatch(&job, options, cancelled)?,
        };
        let wall = started.elapsed();

        let mut statuses = Vec::with_capacity(options.cores);
        let mut arg_failures = Vec::with_capacity(options.cores);
        let mut stdout = Vec::with_capacity(options.cores);
        let mut instructions = Vec::new();
        let mut exact = Vec::new();
        if let Some(stopped) = self.stopped(kernel, &report, options.target) {
            return Err(stopped);
        }
        for core in 0..options.cores {
            let core_report = report.core(core as u32);
            let status = core_report.ops.first().and_then(|op| op.status_code());
            let Some(status) = status.filter(|_| report.done) else {
                let output = format!("{}{}", report.outcome.stdout, report.outcome.stderr);
                // The core that stopped the device: the one a sanitizer caught (it ends
                // the host tier's loader there, whichever cores reported before), else
                // the first without its op's report.
                let reported = |core: usize| report.core(core as u32).ops.first().and_then(|op| op.status_code());
                let core = neuroncustomop_hosttier::sanitized_core(&output)
                    .filter(|_| options.target == Target::Host)
                    .or_else(|| (core..options.cores).find(|&core| reported(core).is_none()))
                    .unwrap_or(core);
                let mut output =
                    output.lines().filter(|line| !line.starts_with("DUMP ")).collect::<Vec<_>>().join("\n");
                if options.target == Target::Host {
                    // A sanitizer stopped the host tier's loader: say where in tensor terms,
                    // then its report without the loader's protocol lines around it.
                    if let Some(explained) = neuroncustomop_hosttier::explain_sanitizer(&output, &tensors) {
                        let report =
                            output.lines().filter(|line| neuroncustomop_wire::report::Line::parse(line).is_err());
                        output = format!("{explained}\n\n{}", report.collect::<Vec<_>>().join("\n"));
                    }
                }
                return Err(CallError::Unfinished { kernel: kernel.into(), core, output });
            };
            statuses.push(KernelStatus(status));
            let (text, lost) = core_report.stdout.get(&0).cloned().unwrap_or_default();
            let (text, arg_failure) = split_arg_failure(&String::from_utf8_lossy(&text), KernelStatus(status));
            arg_failures.push(arg_failure);
            stdout.push(CoreStdout { text, lost });
            instructions.extend(core_report.ops.first().and_then(|op| op.instructions));
            exact.extend(core_report.ops.first().filter(|op| op.instructions.is_some()).map(|op| op.exact));
        }
        let dumped = report.dumps.get(&0).cloned().unwrap_or_default();
        let output = Array::from_bytes(out_dtype, out_shape, dumped).map_err(|e| CallError::Unfinished {
            kernel: kernel.into(),
            core: 0,
            output: format!("the output dump is incomplete: {e}"),
        })?;
        let status = statuses.iter().copied().find(|s| !s.is_ok()).unwrap_or(KernelStatus(0));
        let mut findings = report.findings(0);
        if !findings.is_empty()
            && let Some(symbols) = self.symbolizer()
        {
            findings.shown.iter_mut().for_each(|finding| symbols.symbolize_finding(finding));
        }
        let profile = if options.profile {
            // The loader's image too: the op's markers and the services kernels call are its.
            let loader =
                neuroncustomop_machine::images::build("loader").map_err(|e| CallError::Run(RunError::Build(e)))?;
            let images: Vec<PathBuf> = self.package()?.images.cores.iter().chain(&loader.cores).cloned().collect();
            let profile = neuroncustomop_profile::profile::Folder::new(&images)
                .and_then(|mut folder| {
                    let output = neuroncustomop_profile::profile::Output {
                        address: u64::from(dump.address),
                        len: u64::from(dump.len),
                        element: out_dtype.size() as u64,
                    };
                    let reports: Vec<_> = (0..options.cores as u32).map(|core| report.core(core)).collect();
                    let lines: Vec<&[String]> = reports
                        .iter()
                        .map(|core| core.ops.first().map_or(&[][..], |op| op.plugin.lines.as_slice()))
                        .collect();
                    folder.profile(kernel, &lines, Some(&output))
                })
                .map_err(CallError::Profile)?;
            Some(profile)
        } else {
            None
        };
        Ok(Call {
            kernel: kernel.into(),
            output,
            status,
            statuses,
            arg_failures,
            stdout,
            instructions,
            exact,
            wall,
            unwritten: None,
            findings,
            profile,
        })
    }
}

impl Library {
    /// The library's and the loader's images, ready to name PCs (`None` if they cannot
    /// be read: a report then shows addresses).
    fn symbolizer(&self) -> Option<neuroncustomop_machine::symbolize::Symbolizer> {
        let loader = neuroncustomop_machine::images::build("loader").ok()?;
        let elves: Vec<PathBuf> = self.package.get()?.images.cores.iter().chain(&loader.cores).cloned().collect();
        neuroncustomop_machine::symbolize::Symbolizer::new(&elves).ok()
    }

    /// The FunctionId of `kernel`, or [`CallError::UnknownKernel`] listing the library's.
    fn function_id(&self, kernel: &str) -> Result<neuroncustomop_wire::FunctionId, CallError> {
        let id = self.table.libraries[0].functions.iter().find(|f| f.name == kernel).map(|f| f.sub_opcode);
        id.ok_or_else(|| CallError::UnknownKernel {
            library: self.name().into(),
            kernel: kernel.into(),
            known: self.kernels().iter().map(|k| k.to_string()).collect(),
        })
    }

    /// Runs `job` on the session of `options` (booted, or built and started, on first use).
    fn dispatch(
        &self,
        job: &Job,
        options: &Options,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<neuroncustomop_machine::device::Report, CallError> {
        let report = {
            let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
            let sanitize = options.sanitize.filter(|_| options.target == Target::Host);
            // The checks and the profile run in the plugin, which runs without -icount.
            let count_instructions = options.count_instructions && !options.checked && !options.profile;
            let key = (options.cores, count_instructions, options.checked, options.profile, options.target, sanitize);
            let session = match sessions.entry(key) {
                Entry::Occupied(session) => session.into_mut(),
                Entry::Vacant(slot) if options.target == Target::Host => {
                    let host = self.host_library(sanitize)?;
                    slot.insert(neuroncustomop_hosttier::session(&host, options.cores).map_err(CallError::Host)?)
                }
                Entry::Vacant(slot) => {
                    let session_options = SessionOptions {
                        count_instructions,
                        checked: options.checked,
                        profile: options.profile,
                        ..SessionOptions::default()
                    };
                    slot.insert(
                        Session::boot(&self.package()?.images, options.cores, session_options)
                            .map_err(CallError::Run)?,
                    )
                }
            };
            let report = session.dispatch_cancellable(job, cancelled).map_err(CallError::Run)?;
            if options.target == Target::Host
                && report.outcome.stderr.contains(neuroncustomop_hosttier::loader::SESSION_ENDS)
            {
                // The host tier's loader ends its session when a kernel leaves without
                // returning (stops, or ends its op with `exit`): the core's thread is
                // parked where it stopped, and the next call starts anew.
                sessions.remove(&key);
            }
            report
        };
        Ok(report)
    }

    /// The host tier's build of this library with `sanitizer`, made once.
    fn host_library(&self, sanitizer: Option<Sanitizer>) -> Result<HostLibrary, CallError> {
        let mut built = self.host.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(host) = built.get(&sanitizer) {
            return Ok(host.clone());
        }
        let project = self.project.as_ref().ok_or_else(|| {
            CallError::Host(neuroncustomop_hosttier::HostError::Unsupported(format!(
                "{} was loaded from a package: the host tier builds from the project's sources (load the project folder)",
                self.name()
            )))
        })?;
        let host = neuroncustomop_hosttier::build(project, sanitizer).map_err(CallError::Host)?;
        built.insert(sanitizer, host.clone());
        Ok(host)
    }

    /// The first core whose op stopped without returning a status, as a
    /// [`CallError::Stopped`] that names the kernel's source line.
    fn stopped(
        &self,
        kernel: &str,
        report: &neuroncustomop_machine::device::Report,
        target: Target,
    ) -> Option<CallError> {
        let (core, op) = report.cores.iter().find_map(|(&core, r)| {
            r.ops.first().filter(|op| report.done && op.status_code().is_none()).map(|op| (core, op))
        })?;
        // The host tier's loader says where on its stderr (`FAULT … pc=function
        // (file:line)`), and a panic's message is in what the core printed.
        let on_host = (target == Target::Host).then(|| {
            let printed = report.core(core).stdout.get(&0).map(|(text, _)| String::from_utf8_lossy(text).into_owned());
            // (Without its note that the session ends: the host API's business.)
            let stderr =
                report.outcome.stderr.lines().filter(|line| *line != neuroncustomop_hosttier::loader::SESSION_ENDS);
            let stderr: String = stderr.map(|line| format!("{line}\n")).collect();
            format!("{}{stderr}", printed.unwrap_or_default()).trim_end().to_string()
        });
        let explained = on_host
            .filter(|text| !text.is_empty())
            .or_else(|| {
                self.symbolizer()
                    .map(|symbols| neuroncustomop_machine::symbolize::explain(report, &symbols).concat())
                    .filter(|text| !text.is_empty())
            })
            .unwrap_or_else(|| {
                let printed = format!("{}{}", report.outcome.stdout, report.outcome.stderr);
                printed.lines().filter(|line| !line.starts_with("DUMP ")).collect::<Vec<_>>().join("\n")
            });
        // The device's `FAULT` lines are for the symbolizer, which `explained` holds.
        let stdout = report
            .cores
            .values()
            .map(|core| {
                let (text, lost) = core.stdout.get(&0).cloned().unwrap_or_default();
                let text = String::from_utf8_lossy(&text);
                // (Nor the runtime's `ARGFAIL` line: a stopped kernel's status is not read.)
                let text: String = text
                    .lines()
                    .filter(|line| !line.starts_with("FAULT ") && ArgFailure::parse_line(line).is_none())
                    .map(|line| format!("{line}\n"))
                    .collect();
                CoreStdout { text, lost }
            })
            .collect();
        Some(CallError::Stopped {
            kernel: kernel.into(),
            core: core as usize,
            stop: op.status,
            explained,
            stdout,
            given_back: report.core(core).given_back.get(&0).copied(),
        })
    }
}

/// An op's arguments and output, placed in a job's device memory.
#[derive(Debug, Clone)]
pub struct Staged {
    /// The output's descriptor.
    pub output: Descriptor,
    /// The arguments' descriptors, in order.
    pub inputs: Vec<Descriptor>,
    /// Where the output lands, for the loader to send back after the op.
    pub dump: OutputDump,
    /// The output's dtype.
    pub dtype: Dtype,
    /// The output's shape.
    pub shape: Vec<usize>,
}

/// Places `args` and the output `output` describes in `job`'s tensor area, after what
/// is there already (each 64-byte aligned, 256 free bytes after each: a red zone the memory checks watch), and describes them. The output starts as
/// [`canary`] elements. [`Library::call_with`] stages this way; tests that write their
/// own dispatch words do too.
///
/// # Errors
/// [`CallError::TooManyArgs`], [`CallError::OutputLike`], [`CallError::DoesNotFit`],
/// [`CallError::Descriptor`].
pub fn stage(job: &mut Job, args: &[Arg], output: Output) -> Result<Staged, CallError> {
    stage_filled(job, args, output, None)
}

/// [`stage`], the output filled with `fill` (one element's bytes) rather than the canary.
fn stage_filled(job: &mut Job, args: &[Arg], output: Output, fill: Option<&[u8]>) -> Result<Staged, CallError> {
    if args.len() > MAX_ARGS {
        return Err(CallError::TooManyArgs(args.len()));
    }
    let (dtype, shape) = match output {
        Output::Shape { dtype, shape } => (dtype, shape),
        Output::Like(index) => match args.get(index) {
            Some(Arg::Tensor(like)) => (like.dtype(), like.shape().to_vec()),
            other => return Err(CallError::OutputLike { index, found: other.map(Arg::describe), count: args.len() }),
        },
    };
    let out_len = crate::array::numel(&shape) as u64 * dtype.size() as u64;
    let used = job
        .data
        .iter()
        .filter(|(address, _)| *address >= TENSOR_AREA)
        .map(|(address, bytes)| u64::from(address - TENSOR_AREA) + bytes.len() as u64)
        .max()
        .unwrap_or(0)
        .next_multiple_of(64);
    let args_len: u64 =
        args.iter().map(|arg| (arg_bytes(arg).len().max(1) as u64).next_multiple_of(64) + u64::from(RED_ZONE)).sum();
    let needed = used + args_len + out_len.max(1);
    if needed > u64::from(TENSOR_AREA_SIZE) {
        return Err(CallError::DoesNotFit { needed, available: u64::from(TENSOR_AREA_SIZE) });
    }
    // Fits: every offset below is under TENSOR_AREA_SIZE, a u32.
    let mut offset = used as u32;
    let mut place = |mut bytes: Vec<u8>| {
        // The loader places no empty file: an empty tensor still gets one byte.
        if bytes.is_empty() {
            bytes.push(0);
        }
        let padded = (bytes.len() as u32).next_multiple_of(64) + RED_ZONE;
        let placed = job.place(offset, bytes);
        offset += padded;
        placed
    };
    let describe = |what: String, dtype: Dtype, shape: &[usize], address: u64| {
        let dims: Vec<u32> = shape.iter().map(|&d| u32::try_from(d).unwrap_or(u32::MAX)).collect();
        ArgTensor::hbm_tensor(dtype, &dims, address)
            .map(|d| d.to_bytes())
            .map_err(|reason| CallError::Descriptor { what, reason })
    };
    let mut inputs = Vec::with_capacity(args.len());
    for (index, arg) in args.iter().enumerate() {
        let (framework, _) = place(arg_bytes(arg));
        inputs.push(match arg {
            Arg::Tensor(array) => describe(format!("argument {index}"), array.dtype(), array.shape(), framework)?,
            Arg::Int(_) => ArgTensor::hbm_scalar(ScalarKind::Int, framework).to_bytes(),
            Arg::LongLong(_) => ArgTensor::hbm_scalar(ScalarKind::LongLong, framework).to_bytes(),
            Arg::Float(_) => ArgTensor::hbm_scalar(ScalarKind::Float, framework).to_bytes(),
        });
    }
    let element = fill.map_or_else(|| canary(dtype), <[u8]>::to_vec);
    let (framework, device) = place(element.repeat(out_len as usize / dtype.size()));
    let output = describe("the output".into(), dtype, &shape, framework)?;
    Ok(Staged { output, inputs, dump: OutputDump { address: device, len: out_len as u32 }, dtype, shape })
}

/// Bytes left free after each tensor: a small overrun of one lands in no tensor, where
/// the memory checks see it, rather than in the next one.
const RED_ZONE: u32 = 256;

/// The bytes an argument occupies in device memory.
fn arg_bytes(arg: &Arg) -> Vec<u8> {
    match arg {
        Arg::Tensor(array) => array.bytes().to_vec(),
        Arg::Int(v) => v.to_le_bytes().to_vec(),
        Arg::LongLong(v) => v.to_le_bytes().to_vec(),
        Arg::Float(v) => v.to_le_bytes().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_can_be_shared_between_threads() {
        // Python bindings and test harnesses hold one from several threads.
        fn shared<T: Send + Sync>() {}
        shared::<Library>();
    }

    #[test]
    fn statuses_are_named() {
        assert_eq!(KernelStatus(0).to_string(), "0x0 OK");
        assert_eq!(KernelStatus(Status::NO_MORE_ARGS.0).to_string(), "0x6 NO_MORE_ARGS");
        assert_eq!(KernelStatus(0x1_0001).to_string(), "0x10001 Op(1)");
        assert_eq!(KernelStatus(0x2_0000).to_string(), "0x20000 (unknown)");
        let names = [0, Status::NO_MORE_ARGS.0, 0x1_0001, 0x2_0000].map(|code| KernelStatus(code).name());
        assert_eq!(names, ["OK", "NO_MORE_ARGS", "Op(1)", "0x20000"]);
    }

    /// A call of kernel `k` on `cores` cores that each returned OK and printed nothing;
    /// each test changes what it is about.
    fn ok_call(cores: usize) -> Call {
        Call {
            kernel: "k".into(),
            output: Array::from_vec(vec![1], vec![0u8]).unwrap(),
            status: KernelStatus(0),
            statuses: vec![KernelStatus(0); cores],
            arg_failures: vec![None; cores],
            stdout: vec![CoreStdout::default(); cores],
            instructions: vec![],
            exact: vec![],
            wall: Duration::ZERO,
            unwritten: None,
            findings: OpFindings::default(),
            profile: None,
        }
    }

    #[test]
    fn a_failing_core_makes_check_fail_with_its_name_and_output() {
        let call = Call {
            status: KernelStatus(0x1_0002),
            statuses: vec![KernelStatus(0), KernelStatus(0x1_0002)],
            stdout: vec![CoreStdout::default(), CoreStdout { text: "bad shape\n".into(), lost: 0 }],
            ..ok_call(2)
        };
        let failed = call.check().unwrap_err();
        assert_eq!(failed.to_string(), "kernel k failed on core 1: 0x10002 Op(2)\ncore 1 printed:\nbad shape");
    }

    #[test]
    fn a_status_an_argument_caused_names_the_argument() {
        let status = KernelStatus(Status::SCALAR_KIND_MISMATCH.0);
        let line = "ARGFAIL 0x02040309\n";
        let (text, failure) = split_arg_failure(&format!("before\n{line}after\n"), status);
        assert_eq!(text, "before\nafter\n", "the runtime's line is not the kernel's output");
        let failure = failure.expect("the line explains the status");
        assert_eq!(failure.to_string(), "argument 3: pulled as float, passed as int");
        assert_eq!(split_arg_failure(line, KernelStatus(Status::NO_MORE_ARGS.0)).1, None, "another status");
        let call = Call { status, statuses: vec![status], arg_failures: vec![Some(failure)], ..ok_call(1) };
        assert_eq!(call.status_text(), "0x9 SCALAR_KIND_MISMATCH: argument 3: pulled as float, passed as int");
        let failed = call.check().unwrap_err();
        assert_eq!(failed.arg_failure, Some(failure));
        assert_eq!(
            failed.to_string(),
            "kernel k failed on core 0: 0x9 SCALAR_KIND_MISMATCH: argument 3: pulled as float, passed as int"
        );
    }

    #[test]
    fn work_is_the_slowest_cores_instructions_per_element_it_wrote() {
        let call = |instructions: Vec<u64>, unwritten: Option<Unwritten>| {
            let cores = instructions.len();
            let output = Array::from_vec(vec![1000], vec![0f32; 1000]).unwrap();
            Call { output, exact: vec![true; cores], instructions, unwritten, ..ok_call(cores) }
        };
        let one = call(vec![5000], Some(Unwritten { elements: 0, total: 1000, cores: 1 })).work();
        assert_eq!((one.total, one.slowest, one.balance, one.elements), (5000, 5000, 1.0, Some(1000)));
        assert_eq!(one.per_element, Some(5.0));
        let partial = call(vec![5000], Some(Unwritten { elements: 500, total: 1000, cores: 1 })).work();
        assert_eq!(partial.per_element, Some(10.0), "per element it wrote, not per output element");
        assert_eq!(call(vec![5000], None).work().per_element, None, "a declared partial output says no count");
        let eight = call(vec![100, 100, 100, 100, 100, 100, 100, 300], None).work();
        assert_eq!((eight.total, eight.slowest_core, eight.slowest), (1000, 7, 300));
        assert_eq!(eight.balance, 300.0 / 125.0);
        assert_eq!(eight.per_element, None, "several cores: known only from a profile");
    }

    #[test]
    fn unwritten_output_fails_check_and_names_the_idle_cores() {
        let call = |cores: usize, elements: usize| Call {
            kernel: "relu_multicore".into(),
            unwritten: Some(Unwritten { elements, total: 1000, cores }),
            ..ok_call(cores)
        };
        assert_eq!(
            call(1, 875).check().unwrap_err().to_string(),
            "kernel relu_multicore failed: 875 of 1000 output elements were never written; cores 1-7 \
             wrote nothing: was this kernel written for 8 cores? (`--cores 8`, or a multicore library: \
             `\"multicore\": true` in customop.json, `multicore = true` under \
             [package.metadata.neuroncustomop] in Cargo.toml)"
        );
        let one_missing = call(1, 1).check().unwrap_err().to_string();
        assert!(
            one_missing.ends_with(
                "1 of 1000 output elements were never written; if the kernel writes part of its \
             output on purpose, declare it (`--partial-output`, `Options::partial_output`)"
            ),
            "core 0 wrote more than its share: no multicore hint: {one_missing}"
        );
        let on_eight = call(8, 3).check().unwrap_err().to_string();
        assert!(on_eight.contains("3 of 1000 output elements were never written; if the kernel"), "{on_eight}");
        assert!(call(8, 0).check().is_ok(), "every element written");
    }
}
