//! `ncop run`: call one kernel of a library on the simulated device with your data.

use clap::{Args, ValueEnum};
use neuroncustomop::data_transfer::NeuronMemcpyMethod;
use neuroncustomop::wrapper_api::{MAX_DIM, MAX_RANK};
use neuroncustomop_host::array::{Array, Dtype, dtype_name, parse_dtype};
use neuroncustomop_host::compare::{Mismatch, Tolerance, canary, compare, holding};
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{
    Arg, Call, CallError, KernelFailed, Library, Options, Output, PartialOutput, Sanitizer, Target,
};
use neuroncustomop_host::npy::{self, NpyError};
use neuroncustomop_host::tiers::{self, TierDiff};
use neuroncustomop_hosttier::Debugger;
use neuroncustomop_machine::job::TENSOR_AREA_SIZE;
use neuroncustomop_profile::cost::CostModel;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;

/// `--sanitize`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SanitizeArg {
    /// AddressSanitizer.
    Address,
    /// UndefinedBehaviorSanitizer.
    Undefined,
    /// ThreadSanitizer.
    Thread,
}

/// How `--arg` is written, for the commands that take it.
pub const ARGUMENTS_HELP: &str = "\
Arguments, in the order the kernel pulls them (--arg, repeated):
  x.npy                     a tensor from a NumPy file (every device dtype; bfloat16 as |V2)
  gen:DTYPE:SHAPE[:DIST]    a generated tensor, e.g. gen:float32:4x128:normal:0:2
                            DTYPE float32 bfloat16 float16 int32 int8 int64 int16 uint8
                            DIST uniform (in [-1, 1)), uniform:LOW:HIGH, normal, normal:MEAN:STD, range
  int:V, longlong:V, float:V   a scalar of that C kind

Example: ncop run scale --arg x.npy --arg float:0.5 --save out.npy --expect want.npy --rtol 1e-6";

/// Package the library, call KERNEL once on the simulated device, print its status,
/// what each core printed and the instruction counts; save the output as .npy and
/// compare it with an expected .npy. Exits with 0 when the kernel succeeded (and
/// matched), 1 when it failed or differed, 2 on bad input.
#[derive(Debug, Args)]
#[command(after_help = ARGUMENTS_HELP)]
pub struct RunArgs {
    /// The kernel to call.
    pub kernel: String,
    /// The library: a project folder (Rust or C, as `ncop new` makes; C++ with a
    /// customop.json), or a package folder (ucode_lib.json).
    #[arg(short, long, default_value = ".")]
    pub lib: PathBuf,
    /// The call's data and settings.
    #[command(flatten)]
    pub call: CallArgs,
}

/// What a call takes: its arguments, its output, how it runs, and what to compare.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// One argument of the kernel (see below); repeat in argument order.
    #[arg(long = "arg", value_name = "ARG")]
    pub args: Vec<ArgSpec>,
    /// The output's dtype and shape, DTYPE:SHAPE (e.g. float32:4x128). Default: what a
    /// C++ library's shape function says, else those of the first tensor argument.
    #[arg(long, value_name = "DTYPE:SHAPE", conflicts_with = "output_like")]
    pub output: Option<OutputSpec>,
    /// The output has the dtype and shape of argument K (counting from 0).
    #[arg(long, value_name = "K")]
    pub output_like: Option<usize>,
    /// The seed of generated arguments (argument k uses SEED + k).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Cores that run the kernel (8 for a kernel that splits its work by
    /// get_cpu_count()). Default: 8 for a library declared multicore (a C++ library's
    /// customop.json says "multicore": true, a C library's neuroncustomop.toml says
    /// multicore = true, a Rust library's Cargo.toml says multicore = true under
    /// [package.metadata.neuroncustomop]), else 1.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub cores: Option<u8>,
    /// The kernel writes only part of its output on purpose: elements no core wrote
    /// are not a failure.
    #[arg(long)]
    pub partial_output: bool,
    /// Do not check the kernel's memory accesses (faster): by default every load and
    /// store is checked against what the op was given, and a finding fails the call.
    #[arg(long)]
    pub unchecked: bool,
    /// With --unchecked: run QEMU under -icount, all cores in turn on one host thread
    /// with a deterministic clock, so a kernel that waits (for DMA, for other cores)
    /// counts the same every run and its waits cost no wall time. Without it each core
    /// runs on a host thread of its own and the device's TCG plugin counts; the counts
    /// are exact either way. The checks and --profile need the plugin, which does not
    /// run under -icount.
    #[arg(long, requires = "unchecked", conflicts_with_all = ["profile", "host"])]
    pub icount: bool,
    /// Call the kernel R times (the device stays booted); each core's count is its
    /// fewest (every count is exactly what that core ran; a core that waits, for a DMA
    /// transfer or another core, can run a few more instructions in one call than in
    /// another). Every output is checked.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// The backend of the runtime's neuron_memcpy (the library's own: dma).
    #[arg(long, value_enum, default_value_t = Memcpy::Dma)]
    pub memcpy: Memcpy,
    /// Run on the host tier instead of the simulated device: the same kernels built
    /// for x86-64, each core a thread (no instruction counts; Rust, C and C++ libraries;
    /// only the host build: no Xtensa build).
    /// The device stays the reference (docs/op-author-guide.md, "The host tier").
    #[arg(long)]
    pub host: bool,
    /// Run the call on the host tier and on the device (checked) and compare: when
    /// they differ, the first differing element and both values, on each tier the core
    /// and file:line of the store that last wrote it, how many differ, and which of
    /// those are the known 64-bit differences (a `long`, a pointer: 32 bits on the
    /// device, 64 on the host). Exits with 1 when they differ.
    #[arg(long, conflicts_with_all = ["host", "gdb", "profile", "repeat", "unchecked", "expect"])]
    pub diff_tiers: bool,
    /// With --host: run the call under Debian's gdb, stopped at the kernel's entry on
    /// core --gdb-core (cores are threads `core <i>`); the result is checked once gdb
    /// has let the kernel finish. A firmware program (`cargo sim run <program>`): QEMU's
    /// gdbstub (docs/simulation.md, "Debugger"). Anywhere else an error.
    #[arg(long)]
    pub gdb: bool,
    /// With --host: build the library with a sanitizer (clang's for C, rustc's
    /// -Zsanitizer for Rust): `address` (the space around every tensor and heap block
    /// poisoned: an overrun or a use after free is caught at its line), `thread` (two
    /// cores accessing one element unordered, one writing) or `undefined` (C only).
    #[arg(long, value_enum, value_name = "SANITIZER")]
    pub sanitize: Option<SanitizeArg>,
    /// With --gdb: the core whose kernel entry gdb stops at.
    #[arg(long, default_value_t = 0, value_name = "CORE")]
    pub gdb_core: usize,
    /// With --gdb: a gdb command to run once stopped there (repeat: `--gdb-ex 'break
    /// kernels.c:30' --gdb-ex continue --gdb-ex bt`).
    #[arg(long, value_name = "COMMAND")]
    pub gdb_ex: Vec<String>,
    /// With --gdb: run the --gdb-ex commands and exit (gdb --batch), for scripts.
    #[arg(long)]
    pub gdb_batch: bool,
    /// Stop the kernel after N instructions on a core and say where it was (an
    /// infinite loop ends instead of hanging).
    #[arg(long, value_name = "N", default_value_t = neuroncustomop_wire::job::DEFAULT_MAX_INSTRUCTIONS)]
    pub max_instructions: u64,
    /// Save the output here (.npy).
    #[arg(long, value_name = "PATH")]
    pub save: Option<PathBuf>,
    /// Save every tensor argument here as arg<k>.npy (to compute a reference from them).
    #[arg(long, value_name = "DIR")]
    pub save_inputs: Option<PathBuf>,
    /// Compare the output with this .npy: bit for bit, unless --rtol or --atol is given.
    #[arg(long, value_name = "PATH")]
    pub expect: Option<PathBuf>,
    /// Relative tolerance (NumPy's allclose; default 1e-5 when --atol is given).
    #[arg(long, requires = "expect")]
    pub rtol: Option<f64>,
    /// Absolute tolerance (NumPy's allclose; default 1e-8 when --rtol is given).
    #[arg(long, requires = "expect")]
    pub atol: Option<f64>,
    /// NaN equals NaN in the comparison.
    #[arg(long, requires = "expect")]
    pub equal_nan: bool,
    /// Profile the call and write DIR/flame.svg, DIR/stacks.folded, DIR/trace.json
    /// (Perfetto, chrome://tracing) and DIR/profile.json; the summary names the top 5
    /// functions and predicts the device time. Slower: every instruction and memory
    /// access is instrumented (docs/kernel-cost.md, "Where the instructions go").
    #[arg(long, value_name = "DIR")]
    pub profile: Option<PathBuf>,
    /// The device cost model's parameters: this TOML file's keys over the defaults
    /// (qemu/profile/cost-model.toml lists them, with their sources).
    #[arg(long, value_name = "FILE", requires = "profile")]
    pub cost_model: Option<PathBuf>,
}

/// `--memcpy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Memcpy {
    /// The portable C memcpy.
    C,
    /// The vector word loops.
    Vector,
    /// The DMA engine: the library's own.
    Dma,
}

/// One `--arg`.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgSpec {
    /// A `.npy` file.
    File(PathBuf),
    /// A generated tensor.
    Generated {
        /// Its dtype.
        dtype: Dtype,
        /// Its shape.
        shape: Vec<usize>,
        /// How its values are drawn.
        distribution: Distribution,
    },
    /// A scalar.
    Scalar(Arg),
}

/// A shape the device can hold: 1 to [`MAX_RANK`] dimensions of at most [`MAX_DIM`]
/// each, refused in words here, before anything is allocated for it.
fn parse_shape(text: &str) -> Result<Vec<usize>, String> {
    let shape = text
        .split('x')
        .map(|d| d.parse::<usize>().map_err(|_| format!("{d:?} is not a dimension in shape {text} (write 4x128)")))
        .collect::<Result<Vec<usize>, String>>()?;
    if shape.len() > MAX_RANK {
        return Err(format!("shape {text} has {} dimensions: the device takes at most {MAX_RANK}", shape.len()));
    }
    if let Some(&wide) = shape.iter().find(|&&d| d > MAX_DIM as usize) {
        return Err(format!(
            "shape {text} has a dimension of {wide}: the device takes at most {MAX_DIM} per dimension"
        ));
    }
    Ok(shape)
}

/// `shape` of `dtype` fits the device memory a call lends its tensors, else why not.
fn fits(dtype: Dtype, shape: &[usize], text: &str) -> Result<(), String> {
    // At most 8 dimensions of at most 65535 each: the product fits u128.
    let bytes = shape.iter().map(|&d| d as u128).product::<u128>() * dtype.size() as u128;
    if bytes > u128::from(TENSOR_AREA_SIZE) {
        return Err(format!(
            "{text} takes {bytes} bytes: the device lends a call's tensors {} MiB in all",
            TENSOR_AREA_SIZE >> 20
        ));
    }
    Ok(())
}

fn parse_dtype_arg(text: &str) -> Result<Dtype, String> {
    parse_dtype(text).ok_or_else(|| {
        let known: Vec<&str> = Dtype::ALL.iter().map(|&d| dtype_name(d)).collect();
        format!("unknown dtype {text}: the device's are {}", known.join(", "))
    })
}

impl FromStr for ArgSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (kind, rest) = text.split_once(':').unwrap_or((text, ""));
        let number = |what: &str| format!("{rest:?} is not a {what} (in {text})");
        Ok(match kind {
            "int" => ArgSpec::Scalar(Arg::Int(rest.parse().map_err(|_| number("C int"))?)),
            "longlong" => ArgSpec::Scalar(Arg::LongLong(rest.parse().map_err(|_| number("C long long"))?)),
            "float" => ArgSpec::Scalar(Arg::Float(rest.parse().map_err(|_| number("C float"))?)),
            "gen" => {
                let mut parts = rest.splitn(3, ':');
                let (dtype, shape) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
                let distribution = parts.next().unwrap_or("uniform").parse()?;
                let (dtype, shape) = (parse_dtype_arg(dtype)?, parse_shape(shape)?);
                fits(dtype, &shape, text)?;
                ArgSpec::Generated { dtype, shape, distribution }
            }
            _ if text.ends_with(".npy") => ArgSpec::File(text.into()),
            _ => {
                return Err(format!(
                    "{text} is not an argument: give a .npy file, gen:DTYPE:SHAPE[:DIST], int:V, longlong:V or float:V"
                ));
            }
        })
    }
}

/// `--output DTYPE:SHAPE`.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSpec {
    dtype: Dtype,
    shape: Vec<usize>,
}

impl FromStr for OutputSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (dtype, shape) =
            text.split_once(':').ok_or_else(|| format!("{text} is not DTYPE:SHAPE (e.g. float32:4x128)"))?;
        let (dtype, shape) = (parse_dtype_arg(dtype)?, parse_shape(shape)?);
        fits(dtype, &shape, text)?;
        Ok(Self { dtype, shape })
    }
}

/// What went wrong around the call.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An argument's file could not be read.
    #[error("argument {index}")]
    Arg {
        /// Its position.
        index: usize,
        /// Why.
        #[source]
        source: NpyError,
    },
    /// The expected array could not be read.
    #[error("the expected output")]
    Expected(#[source] NpyError),
    /// A file could not be written.
    #[error("saving")]
    Save(#[source] NpyError),
    /// A repeated call gave another output or status than the first.
    #[error("the kernel gave another output or status when called again with the same arguments")]
    Unrepeatable,
    /// `--gdb` where it cannot apply.
    #[error(
        "--gdb needs --host (and no --repeat): kernels are debugged on the host tier; no stock gdb debugs the \
         device's Xtensa code (docs/simulation.md, \"Debugger\")"
    )]
    GdbNeedsHost,
    /// `--sanitize` without `--host`.
    #[error("--sanitize needs --host: the sanitizers run on the host tier")]
    SanitizeNeedsHost,
}

/// Runs `ncop run`.
pub fn exec(args: RunArgs) -> super::Outcome {
    if !args.call.host {
        // Before any build: a missing package is said with its install line, not
        // found halfway through the first build.
        super::doctor::check()?;
    }
    call(&args.lib, &args.kernel, &args.call)
}

/// What `ncop debug` adds to `--help`.
const DEBUG_HELP: &str = "\
Example: ncop debug scale --arg gen:float32:4x8 --arg float:0.5 --gdb-ex 'break scale.c:41'
  then, in gdb: continue, bt, info locals, print src[3], info threads, thread 2, next, finish;
  `continue` to the kernel's end, and ncop checks and prints the result (gdb stays until `quit`).
For scripts: --gdb-batch with --gdb-ex commands (the last a `continue`).";

/// Build the library for the host tier and call KERNEL once under Debian's gdb,
/// stopped at the kernel's entry on core --gdb-core (the cores are threads `core <i>`):
/// `ncop run KERNEL --host --gdb`. The result is checked once gdb has let the kernel
/// finish (docs/op-author-guide.md, "The host tier").
#[derive(Debug, Args)]
#[command(after_help = format!("{ARGUMENTS_HELP}\n\n{DEBUG_HELP}"))]
// What `debug` means already: not offered again.
#[command(mut_arg("host", |arg| arg.hide(true)), mut_arg("gdb", |arg| arg.hide(true)))]
pub struct DebugArgs {
    /// The kernel to debug.
    pub kernel: String,
    /// The library: a project folder (the host tier builds from its sources).
    #[arg(short, long, default_value = ".")]
    pub lib: PathBuf,
    /// The call's data and settings.
    #[command(flatten)]
    pub call: CallArgs,
}

/// Runs `ncop debug`: `ncop run --host --gdb`.
pub fn exec_debug(mut args: DebugArgs) -> super::Outcome {
    args.call.host = true;
    args.call.gdb = true;
    call(&args.lib, &args.kernel, &args.call)
}

/// Loads the library at `lib` and calls `kernel` as `args` say, in three steps: the
/// command line resolved into a checked `Request` (every file read, the library
/// loaded, before any device time is spent), the call made and saved (`Report`),
/// and its report printed.
pub fn call(lib: &Path, kernel: &str, args: &CallArgs) -> super::Outcome {
    let request = Request::resolve(lib, kernel, args)?;
    let report = request.run()?;
    let printed = report.print();
    // Printed when the kernel finished: gdb keeps the terminal until it is quit.
    neuroncustomop_hosttier::wait_for_debugger();
    Ok(printed)
}

/// One `ncop run`, resolved from its command line and checked: what to call, with
/// what, how, and what to do with the result.
struct Request {
    library: Library,
    kernel: String,
    args: Vec<Arg>,
    output: Output,
    options: Options,
    /// `--gdb`: the debugger the one call runs under.
    debugger: Option<Debugger>,
    repeat: u32,
    /// `--expect`: its path and the array read from it.
    expected: Option<(PathBuf, Array)>,
    tolerance: Tolerance,
    cost_model: CostModel,
    save: Option<PathBuf>,
    save_inputs: Option<PathBuf>,
    /// `--profile`: the folder its files go to.
    profile: Option<PathBuf>,
    /// `--diff-tiers`: the call on both tiers, compared.
    diff_tiers: bool,
}

impl Request {
    /// Checks the flags that go together, reads or generates every argument, reads
    /// the expected array and the cost model (so a bad file costs no device time),
    /// loads the library and settles the output's form and the call's options.
    fn resolve(lib: &Path, kernel: &str, args: &CallArgs) -> Result<Self, Box<dyn std::error::Error>> {
        if args.gdb && (!args.host || args.repeat > 1) {
            return Err(RunError::GdbNeedsHost.into());
        }
        if args.sanitize.is_some() && !args.host {
            return Err(RunError::SanitizeNeedsHost.into());
        }
        let call_args = read_args(args)?;
        let expected = match &args.expect {
            Some(path) => Some((path.clone(), npy::read(path).map_err(RunError::Expected)?)),
            None => None,
        };
        let cost_model = match &args.cost_model {
            Some(path) => CostModel::load(path)?,
            None => CostModel::default(),
        };
        let target = if args.host { Target::Host } else { Target::Device };
        let library = super::package::load(lib, target)?;
        let output = match (&args.output, args.output_like) {
            (Some(spec), _) => Output::Shape { dtype: spec.dtype, shape: spec.shape.clone() },
            (None, Some(k)) => Output::Like(k),
            // A C++ library's shape function says; else the first tensor's form.
            (None, None) => {
                let (dtype, shape) = library.resolve_output(kernel, &call_args, PartialOutput::default(), None)?;
                Output::Shape { dtype, shape }
            }
        };
        let options = Options {
            cores: args.cores.map_or_else(|| library.default_cores(), usize::from),
            memcpy: match args.memcpy {
                Memcpy::C => NeuronMemcpyMethod::CMemcpy,
                Memcpy::Vector => NeuronMemcpyMethod::VecMemcpy,
                Memcpy::Dma => NeuronMemcpyMethod::Dma,
            },
            count_instructions: args.icount,
            max_instructions: args.max_instructions,
            partial_output: args.partial_output,
            checked: !args.unchecked,
            target,
            sanitize: args.sanitize.map(|sanitize| match sanitize {
                SanitizeArg::Address => Sanitizer::Address,
                SanitizeArg::Undefined => Sanitizer::Undefined,
                SanitizeArg::Thread => Sanitizer::Thread,
            }),
            profile: args.profile.is_some(),
        };
        let debugger = args.gdb.then(|| Debugger {
            core: args.gdb_core,
            commands: args.gdb_ex.clone(),
            batch: args.gdb_batch,
            transcript: None,
        });
        let tolerance = match (args.rtol, args.atol) {
            (None, None) if !args.equal_nan => Tolerance::Exact,
            (rtol, atol) => {
                Tolerance::Close { rtol: rtol.unwrap_or(1e-5), atol: atol.unwrap_or(1e-8), equal_nan: args.equal_nan }
            }
        };
        Ok(Self {
            library,
            kernel: kernel.into(),
            args: call_args,
            output,
            options,
            debugger,
            repeat: args.repeat,
            expected,
            tolerance,
            cost_model,
            save: args.save.clone(),
            save_inputs: args.save_inputs.clone(),
            profile: args.profile.clone(),
            diff_tiers: args.diff_tiers,
        })
    }

    /// Saves the inputs if asked, calls the kernel (`--repeat` times), writes the
    /// profile's files, saves the output and judges it: everything but the printing.
    fn run(self) -> Result<Report, Box<dyn std::error::Error>> {
        if let Some(dir) = &self.save_inputs {
            std::fs::create_dir_all(dir)?;
            for (index, arg) in self.args.iter().enumerate() {
                if let Arg::Tensor(array) = arg {
                    npy::write(&dir.join(format!("arg{index}.npy")), array).map_err(RunError::Save)?;
                }
            }
        }
        let described: Vec<String> = self.args.iter().map(Arg::describe).collect();
        let heading = format!(
            "{} / {}({}) on {} core(s)",
            self.library.name(),
            self.kernel,
            described.join(", "),
            self.options.cores
        );
        if self.diff_tiers {
            let diffed = tiers::diff_tiers(&self.library, &self.kernel, &self.args, self.output.clone(), &self.options);
            let ran = match diffed {
                Ok(diff) => Ran::Diffed(Box::new(diff)),
                Err(error @ (CallError::Stopped { .. } | CallError::Unfinished { .. })) => Ran::Stopped(error),
                Err(other) => return Err(other.into()),
            };
            return Ok(Report { heading, checks: None, ran });
        }
        // What a host-tier run checks and cannot see, said whatever its result.
        let checks =
            (self.options.target == Target::Host).then(|| neuroncustomop_hosttier::coverage(self.options.sanitize));
        let call = match self.call()? {
            Ok(call) => call,
            Err(stopped) => return Ok(Report { heading, checks, ran: Ran::Stopped(stopped) }),
        };
        let profile = match (&call.profile, &self.profile) {
            (Some(profile), Some(dir)) => {
                let written = neuroncustomop_profile::write::write(profile, &self.cost_model, dir)?;
                Some(written.flame.parent().unwrap_or(dir).to_path_buf())
            }
            _ => None,
        };
        if let Some(path) = &self.save {
            npy::write(path, &call.output).map_err(RunError::Save)?;
        }
        let verdict = judge(&call, self.expected.as_ref(), self.tolerance);
        let finished = Finished {
            call,
            host: self.options.target == Target::Host,
            repeat: self.repeat,
            profile: profile.map(|dir| (dir, self.cost_model)),
            saved: self.save,
            verdict,
        };
        Ok(Report { heading, checks, ran: Ran::Finished(Box::new(finished)) })
    }

    /// The call, `--repeat` times on one booted device: each core's count is its
    /// fewest, and every output must be the first's. `Ok(Err(_))` is a kernel that
    /// stopped or a device that did not finish it: the kernel failing (exit 1), not
    /// bad input (exit 2).
    fn call(&self) -> Result<Result<Call, CallError>, Box<dyn std::error::Error>> {
        let stopped = |error: CallError| match error {
            error @ (CallError::Stopped { .. } | CallError::Unfinished { .. }) => Ok(Err(error)),
            other => Err(other.into()),
        };
        let (library, kernel, args, options) = (&self.library, &self.kernel, &self.args, &self.options);
        let result = match &self.debugger {
            Some(debugger) => library.debug(kernel, args, self.output.clone(), options, debugger),
            None => library.call_with(kernel, args, self.output.clone(), options),
        };
        let mut call = match result {
            Ok(call) => call,
            Err(error) => return stopped(error),
        };
        for _ in 1..self.repeat {
            let again = match library.call_with(kernel, args, self.output.clone(), options) {
                Ok(again) => again,
                Err(error) => return stopped(error),
            };
            if again.output != call.output || again.statuses != call.statuses {
                return Err(RunError::Unrepeatable.into());
            }
            call.instructions = call.instructions.iter().zip(&again.instructions).map(|(a, b)| *a.min(b)).collect();
            call.wall = call.wall.min(again.wall);
        }
        Ok(Ok(call))
    }
}

/// Whether `call` succeeded, and its output matches `expected` (`--expect`'s path and
/// array) within `tolerance`.
fn judge(call: &Call, expected: Option<&(PathBuf, Array)>, tolerance: Tolerance) -> Verdict {
    if let Err(failed) = call.clone().check() {
        // Unwritten elements fail the call before any comparison: with --expect, the
        // comparison still names them (and any wrong ones) by their index; without,
        // the first that still hold the canary.
        let located = match (failed.unwritten, expected) {
            (Some(_), Some((path, expected))) => compare(&call.output, expected, tolerance)
                .err()
                .map(|mismatch| Located::Compared { path: path.clone(), mismatch }),
            (Some(unwritten), None) => {
                let held = holding(call.output.bytes(), &canary(call.output.dtype()));
                let first: Vec<String> = (0..held.len())
                    .filter(|&index| held[index])
                    .take(10)
                    .map(|index| format!("{:?}", call.output.unravel(index)))
                    .collect();
                let more = unwritten.elements > first.len();
                Some(Located::Canary { first, more })
            }
            (None, _) => None,
        };
        return Verdict::Failed { failed: Box::new(failed), located, tolerance };
    }
    match expected {
        None => Verdict::Unchecked,
        Some((path, expected)) => match compare(&call.output, expected, tolerance) {
            Ok(()) => Verdict::Matches { path: path.clone(), tolerance },
            Err(mismatch) => Verdict::Mismatch { mismatch, tolerance },
        },
    }
}

/// Each `--arg` as the kernel takes it ([`ArgSpec::read`]).
fn read_args(args: &CallArgs) -> Result<Vec<Arg>, RunError> {
    args.args.iter().enumerate().map(|(index, spec)| spec.read(index, args.seed)).collect()
}

impl ArgSpec {
    /// The argument at `index` as the kernel takes it: a file read, a tensor generated
    /// (with seed `seed + index`), a scalar.
    ///
    /// # Errors
    /// [`RunError::Arg`]: the file cannot be read as an array.
    pub fn read(&self, index: usize, seed: u64) -> Result<Arg, RunError> {
        Ok(match self {
            ArgSpec::File(path) => Arg::Tensor(npy::read(path).map_err(|source| RunError::Arg { index, source })?),
            ArgSpec::Generated { dtype, shape, distribution } => {
                Arg::Tensor(generate(*dtype, shape.clone(), *distribution, seed + index as u64))
            }
            ArgSpec::Scalar(scalar) => scalar.clone(),
        })
    }
}

/// What `ncop run` says of a call: printed by [`Report::print`].
struct Report {
    /// `library / kernel(arguments) on N core(s)`.
    heading: String,
    /// On the host tier: what this run checks and cannot see
    /// (`neuroncustomop_hosttier::coverage`).
    checks: Option<String>,
    ran: Ran,
}

/// How the call ended.
enum Ran {
    /// The kernel stopped without returning, or the device did not finish it.
    Stopped(CallError),
    /// `--diff-tiers`: the call on both tiers, compared. (Boxed: it holds two calls.)
    Diffed(Box<TierDiff>),
    /// The kernel returned on every core. (Boxed: it is the large one.)
    Finished(Box<Finished>),
}

/// A call that returned, and what was done with it.
struct Finished {
    call: Call,
    /// It ran on the host tier.
    host: bool,
    /// How many calls it is the fastest of.
    repeat: u32,
    /// The folder its profile's files were written to, and the cost model that
    /// predicts its device time.
    profile: Option<(PathBuf, CostModel)>,
    /// Where its output was saved.
    saved: Option<PathBuf>,
    verdict: Verdict,
}

/// Where a failed call's unwritten elements are.
enum Located {
    /// `--expect`'s comparison, which names them (and any wrong ones) by their index.
    Compared { path: PathBuf, mismatch: Mismatch },
    /// The first (at most 10) that still hold the canary; `more` when there are others.
    Canary { first: Vec<String>, more: bool },
}

/// The result line.
enum Verdict {
    /// The kernel failed ([`Call::check`]); where its unwritten elements are, if it
    /// left some.
    Failed { failed: Box<KernelFailed>, located: Option<Located>, tolerance: Tolerance },
    /// It succeeded, with no `--expect` to compare with.
    Unchecked,
    /// It succeeded and its output matches `path`.
    Matches { path: PathBuf, tolerance: Tolerance },
    /// It succeeded, but its output differs from `--expect`.
    Mismatch { mismatch: Mismatch, tolerance: Tolerance },
}

impl Report {
    /// Prints the report; its exit code: success when the kernel succeeded (and
    /// matched), failure when it stopped, failed or differed.
    fn print(self) -> ExitCode {
        println!("{}", self.heading);
        if let Some(checks) = self.checks {
            println!("  checks      {checks}");
        }
        let finished = match self.ran {
            Ran::Stopped(error) => {
                println!("  result      FAILED: {error}");
                return ExitCode::FAILURE;
            }
            Ran::Diffed(diff) => return print_diff(&diff),
            Ran::Finished(finished) => finished,
        };
        let Finished { call, host, repeat, profile, saved, verdict } = *finished;
        println!("  output      {} {:?}", dtype_name(call.output.dtype()), call.output.shape());
        // What the kernel returned; the result line below also weighs the checks.
        println!("  returned    {}", call.status_text());
        let (machine, device) =
            if host { ("on the host tier", "started loader") } else { ("under QEMU", "booted device") };
        let timing = match (repeat, host) {
            (1, false) => "booting the device included".to_string(),
            (1, true) => "starting its loader included".to_string(),
            (calls, _) => format!("the fastest of {calls} calls on one {device}"),
        };
        println!("  wall time   {:.3} s {machine} ({timing})", call.wall.as_secs_f64());
        print_instructions(&call);
        if let (Some(profile), Some((dir, model))) = (&call.profile, &profile) {
            super::profile::summarize(profile, model, dir);
        }
        for (core, printed) in call.stdout.iter().enumerate().filter(|(_, p)| !p.text.is_empty() || p.lost > 0) {
            let lost = if printed.lost > 0 { format!(" ({} bytes lost first)", printed.lost) } else { String::new() };
            println!("  core {core} printed{lost}:\n{}", printed.text.trim_end());
        }
        if let Some(path) = &saved {
            println!("  saved       {}", path.display());
        }
        // Warnings do not fail the call (a failing one lists them with its findings).
        if call.findings.first_error().is_none() {
            for warning in call.findings.warnings() {
                let label = warning.kind.severity().name();
                println!("  {label:<12}{}", warning.to_string().replace('\n', "\n              "));
            }
        }
        print_verdict(verdict)
    }
}

/// `--diff-tiers`' lines: each tier's status, then where the outputs part (or that
/// they agree); failure when they differ or either failed.
fn print_diff(diff: &TierDiff) -> ExitCode {
    println!("  device      {} (checked)", diff.device.status_text());
    println!("  host tier   {}", diff.host.status_text());
    let failed = [&diff.device, &diff.host].into_iter().any(|call| call.clone().check().is_err());
    if let Err(failure) = diff.device.clone().check() {
        println!("  on device   FAILED: {failure}");
    }
    if diff.first.is_none() {
        println!("  result      {}", if failed { "FAILED (the tiers agree)" } else { "OK: the tiers agree" });
        return if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    }
    println!("  result      DIFFER: {}", diff.to_string().replace('\n', "\n              "));
    ExitCode::FAILURE
}

/// The instruction counts' lines: the slowest core, the balance, per element
/// (docs/op-author-guide.md, "Instructions per element"); none on the host tier.
fn print_instructions(call: &Call) {
    if call.instructions.is_empty() {
        return;
    }
    let work = call.work();
    // The device says whether each count is the kernel's exactly (`exact=yes`).
    let exact = if call.exact.iter().all(|&exact| exact) { "exact" } else { "not exact on every core: estimates" };
    println!(
        "  instructions {} on the slowest core (core {}), {} in all; balance {:.2} (slowest / mean); per core {:?} \
         ({exact})",
        work.slowest, work.slowest_core, work.total, work.balance, call.instructions
    );
    match (work.per_element, work.elements) {
        (Some(per_element), Some(elements)) => println!(
            "  per element {per_element:.2} instructions per element core {} wrote ({elements} elements)",
            work.slowest_core
        ),
        (None, Some(0)) => println!("  per element none: core {} wrote no element", work.slowest_core),
        _ => println!("  per element not known: --profile counts the elements each core wrote"),
    }
}

/// The result line (and where a failed call's unwritten elements are); the exit code
/// it means.
fn print_verdict(verdict: Verdict) -> ExitCode {
    match verdict {
        Verdict::Failed { failed, located, tolerance } => {
            println!("  result      FAILED: {failed}");
            match located {
                Some(Located::Compared { path, mismatch }) => {
                    println!("  compared    with {} ({tolerance}): {mismatch}", path.display());
                }
                Some(Located::Canary { first, more }) => println!(
                    "  unwritten   still holding the canary at {}{} (--expect want.npy compares them with a reference)",
                    first.join(", "),
                    if more { ", …" } else { "" }
                ),
                None => {}
            }
            ExitCode::FAILURE
        }
        Verdict::Unchecked => {
            println!("  result      OK (no --expect to compare with)");
            ExitCode::SUCCESS
        }
        Verdict::Matches { path, tolerance } => {
            println!("  result      OK: matches {} ({tolerance})", path.display());
            ExitCode::SUCCESS
        }
        Verdict::Mismatch { mismatch, tolerance } => {
            println!("  result      MISMATCH ({tolerance}): {mismatch}");
            ExitCode::FAILURE
        }
    }
}

/// Run an example's own tests, one of its kernels, or a firmware program.
///
/// `sim run <example>` packages the example and runs its tests (examples/<name>/tests/,
/// the kernels against their host reference), showing what they print. `sim run
/// <example> <kernel> --arg ...` calls one kernel, as `ncop run` does. `sim run
/// <program>` builds a firmware program and boots it, and exits with its status.
#[derive(Debug, Args)]
#[command(after_help = ARGUMENTS_HELP)]
pub struct SimRunArgs {
    /// An example (examples/<name>/) or a firmware program (qemu/firmware/src/bin/).
    pub name: String,
    /// The example's kernel to call.
    pub kernel: Option<String>,
    /// A firmware program: count instructions (-icount shift=0,sleep=off).
    #[arg(long)]
    pub count_instructions: bool,
    /// The call's data and settings.
    #[command(flatten)]
    pub call: CallArgs,
}

/// Runs `cargo sim run`.
pub fn exec_sim(args: SimRunArgs) -> super::Outcome {
    super::setup::setup()?;
    let repo = super::checkout()?;
    let cargo = || std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    let example = neuroncustomop_package::project::Project::example(&args.name)?;
    if example.is_some() && args.call.gdb && !args.call.host {
        // QEMU's gdbstub serves firmware programs; no stock gdb debugs an example's
        // Xtensa kernels (docs/simulation.md, "Debugger"). Never ignored in silence.
        eprintln!(
            "--gdb applies to firmware programs only: {} is an example. Its kernels run under a debugger on the \
             host tier only (`--host --gdb`; docs/op-author-guide.md, \"The host tier\")",
            args.name
        );
        return Ok(ExitCode::from(2));
    }
    match (example, &args.kernel) {
        (Some(project), Some(kernel)) => call(&project.dir, kernel, &args.call),
        (Some(project), None) => {
            let manifest = project.dir.join("Cargo.toml");
            let status = cargo()
                .current_dir(&repo)
                .args(["test", "--manifest-path"])
                .arg(manifest)
                .args(["--", "--nocapture"])
                .status()?;
            Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        (None, _) => boot_program(&args),
    }
}

/// Builds a firmware program and boots it on `--cores` cores.
fn boot_program(args: &SimRunArgs) -> super::Outcome {
    let built = neuroncustomop_package::program::build(&args.name)?;
    let cores = args.call.cores.map_or(1, usize::from).min(built.cores.len());
    let mut boot = neuroncustomop_machine::machine::Boot::new(built.cores[..cores].to_vec());
    boot.count_instructions = args.count_instructions;
    if args.call.gdb {
        let gdb = neuroncustomop_machine::debugger::GdbOptions::free_port()?;
        eprint!("{}", gdb.attach_instructions("main", &built.cores[0], &[]));
        boot.gdb = Some(gdb);
    }
    let outcome = boot.run()?;
    print!("{}", outcome.stdout);
    eprint!("{}", outcome.stderr);
    // A fault's report as the author reads it: the function, its source line, a backtrace.
    if let Ok(symbols) = neuroncustomop_machine::symbolize::Symbolizer::new(&built.cores[..cores]) {
        for fault in neuroncustomop_machine::symbolize::FaultLine::all(&outcome.stderr) {
            eprint!("{}", symbols.report(&fault, &format!("program `{}`", args.name)));
        }
    }
    match outcome.code() {
        Some(code) => Ok(ExitCode::from(u8::try_from(code).unwrap_or(255))),
        None => Err(format!("{} did not finish within {:?}", args.name, boot.timeout).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neuroncustomop_host::library::{CoreStdout, KernelStatus, OpFindings, Unwritten};

    #[test]
    fn arguments_parse_with_their_kind() {
        assert_eq!("int:-3".parse(), Ok(ArgSpec::Scalar(Arg::Int(-3))));
        assert_eq!("longlong:9000000000".parse(), Ok(ArgSpec::Scalar(Arg::LongLong(9_000_000_000))));
        assert_eq!("float:0.5".parse(), Ok(ArgSpec::Scalar(Arg::Float(0.5))));
        assert_eq!("x.npy".parse(), Ok(ArgSpec::File("x.npy".into())));
        assert_eq!(
            "gen:bf16:2x3:normal:1:2".parse(),
            Ok(ArgSpec::Generated {
                dtype: Dtype::Bfloat16,
                shape: vec![2, 3],
                distribution: Distribution::Normal { mean: 1.0, std: 2.0 }
            })
        );
        assert!("int:2.5".parse::<ArgSpec>().unwrap_err().contains("is not a C int"));
        assert!("int:9000000000".parse::<ArgSpec>().is_err(), "an int is 32 bits");
        assert!("gen:float64:2".parse::<ArgSpec>().unwrap_err().contains("unknown dtype float64"));
        assert!("gen:float32:2xa".parse::<ArgSpec>().unwrap_err().contains("not a dimension"));
        assert!("x.txt".parse::<ArgSpec>().is_err());
        assert_eq!("int8:3x4".parse(), Ok(OutputSpec { dtype: Dtype::Int8, shape: vec![3, 4] }));
    }

    #[test]
    fn shapes_the_device_cannot_hold_are_refused_in_words_before_allocating() {
        assert_eq!(
            "gen:float32:100000x100000".parse::<ArgSpec>(),
            Err("shape 100000x100000 has a dimension of 100000: the device takes at most 65535 per dimension".into())
        );
        assert_eq!(
            "gen:float32:1x1x1x1x1x1x1x1x1".parse::<ArgSpec>(),
            Err("shape 1x1x1x1x1x1x1x1x1 has 9 dimensions: the device takes at most 8".into())
        );
        assert_eq!(
            "float32:65535x65535".parse::<OutputSpec>(),
            Err("float32:65535x65535 takes 17179344900 bytes: the device lends a call's tensors 128 MiB in all".into())
        );
        assert!("gen:uint8:65535x2048".parse::<ArgSpec>().is_ok(), "128 MiB fits");
    }

    /// `message` reads as a sentence for the author: one non-empty line, and none of
    /// the shapes a Rust value's `Debug` print leaves (`RankTooLarge(9)`, `Some(`,
    /// `{ kind: ... }`, `ParseIntError`).
    fn assert_sentence(message: &str, input: &str) {
        assert!(!message.trim().is_empty() && !message.contains('\n'), "{input:?}: {message:?}");
        // The message quotes the input and its parts (a field, or all that follows a
        // `:`, as `longlong:` quotes the rest): only the rest is the parser's. Every
        // stretch of the input from a field's start to a field's end, longest first:
        // taking "3" out of a quoted "3{" first left a "{" that read as a Debug
        // print's (`float:3:3{`). Each also as Rust escapes it (`"z\\.^s"` for z\.^s).
        let separators = input.match_indices([':', 'x']).map(|(at, _)| at);
        let starts: Vec<usize> = std::iter::once(0).chain(separators.clone().map(|at| at + 1)).collect();
        let ends: Vec<usize> = separators.chain(std::iter::once(input.len())).collect();
        let mut quoted: Vec<String> = starts
            .iter()
            .flat_map(|&start| ends.iter().filter(move |&&end| end > start).map(move |&end| &input[start..end]))
            .flat_map(|part| [format!("{part:?}"), part.to_owned()])
            .collect();
        quoted.sort_by_key(|part| std::cmp::Reverse(part.len()));
        let mut own = message.to_string();
        for part in quoted.iter().filter(|part| !part.is_empty()) {
            own = own.replace(part.as_str(), "");
        }
        let message = own;
        for debug in ["(9)", "Some(", "None", "{ ", "Error {", "ParseIntError", "ParseFloatError", "kind:"] {
            assert!(!message.contains(debug), "{input:?} gives a Debug print, not a sentence: {message}");
        }
    }

    /// Pieces the parsers split on, so random text reaches every branch.
    fn spec_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let word = prop_oneof![
            Just("gen".to_string()),
            Just("int".to_string()),
            Just("longlong".to_string()),
            Just("float".to_string()),
            prop::sample::select(Dtype::ALL.iter().map(|&d| dtype_name(d).to_string()).collect::<Vec<_>>()),
            Just("bf16".to_string()),
            prop::sample::select(vec!["uniform", "normal", "range", "nan", "inf", "-1", "x.npy", ""])
                .prop_map(String::from),
            (0u64..u64::MAX).prop_map(|n| n.to_string()),
            prop::collection::vec(prop_oneof![Just(0usize), 1usize..4, 65_530usize..65_540, Just(usize::MAX)], 0..11)
                .prop_map(|dims| dims.iter().map(usize::to_string).collect::<Vec<_>>().join("x")),
            "[ -~]{0,12}",
        ];
        prop::collection::vec(word, 1..6).prop_map(|words| words.join(":"))
    }

    /// A one-core call of a float32 output whose elements are `values`, `None` where
    /// the kernel left the canary; its unwritten count as the host API makes it.
    fn call_writing(values: &[Option<f32>]) -> Call {
        let bytes =
            values.iter().flat_map(|value| value.map_or_else(|| canary(Dtype::Float32), |v| v.to_le_bytes().to_vec()));
        let output = Array::from_bytes(Dtype::Float32, vec![values.len()], bytes.collect()).unwrap();
        let elements = values.iter().filter(|value| value.is_none()).count();
        Call {
            kernel: "k".into(),
            output,
            status: KernelStatus(0),
            statuses: vec![KernelStatus(0)],
            arg_failures: vec![None],
            stdout: vec![CoreStdout::default()],
            instructions: vec![],
            exact: vec![],
            wall: std::time::Duration::ZERO,
            unwritten: Some(Unwritten { elements, total: values.len(), cores: 1 }),
            findings: OpFindings::default(),
            profile: None,
        }
    }

    #[test]
    fn the_verdict_compares_with_the_expected_output_and_locates_unwritten_elements() {
        let want = |values: Vec<f32>| (PathBuf::from("want.npy"), Array::from_vec(vec![values.len()], values).unwrap());
        let exact = Tolerance::Exact;
        let whole = call_writing(&[Some(1.0), Some(2.0), Some(3.0), Some(4.0)]);
        assert!(matches!(judge(&whole, None, exact), Verdict::Unchecked));
        assert!(matches!(judge(&whole, Some(&want(vec![1.0, 2.0, 3.0, 4.0])), exact), Verdict::Matches { .. }));
        let Verdict::Mismatch { mismatch: Mismatch::Values(report), .. } =
            judge(&whole, Some(&want(vec![1.0, 2.0, 3.0, 5.0])), exact)
        else {
            panic!("one element differs");
        };
        assert_eq!((report.bad, report.unwritten), (1, 0));

        let partial = call_writing(&[Some(1.0), None, Some(3.0), None]);
        let Verdict::Failed { failed, located: Some(Located::Canary { first, more }), .. } =
            judge(&partial, None, exact)
        else {
            panic!("unwritten elements, no --expect: the canary locates them");
        };
        assert_eq!(failed.unwritten.map(|unwritten| unwritten.elements), Some(2));
        assert_eq!((first, more), (vec!["[1]".to_string(), "[3]".to_string()], false));
        let Verdict::Failed { located: Some(Located::Compared { mismatch: Mismatch::Values(report), .. }), .. } =
            judge(&partial, Some(&want(vec![1.0, 2.0, 3.0, 4.0])), exact)
        else {
            panic!("unwritten elements with --expect: the comparison locates them");
        };
        assert_eq!((report.bad, report.unwritten), (2, 2));
    }

    /// A case the property below found: a quoted part ("3{") that holds another ("3").
    #[test]
    fn a_bad_dimension_is_refused_in_a_sentence() {
        let message = "float:3:3{".parse::<OutputSpec>().expect_err("not a shape");
        assert!(message.contains("is not a dimension"), "{message}");
        assert_sentence(&message, "float:3:3{");
        let message = "float:3:3{".parse::<ArgSpec>().expect_err("not a scalar");
        assert_sentence(&message, "float:3:3{");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Whatever `--arg` and `--output` are given, the answer is a value the device
        /// can hold or a sentence saying why not: never a panic, never a Debug print.
        #[test]
        fn any_arg_or_output_text_parses_or_is_refused_in_a_sentence(text in spec_text()) {
            match text.parse::<ArgSpec>() {
                Ok(ArgSpec::Generated { dtype, shape, distribution }) => {
                    proptest::prop_assert!(shape.len() <= MAX_RANK && shape.iter().all(|&d| d <= MAX_DIM as usize));
                    let bytes = shape.iter().map(|&d| d as u128).product::<u128>() * dtype.size() as u128;
                    proptest::prop_assert!(bytes <= u128::from(TENSOR_AREA_SIZE), "{text}");
                    // Small enough to make here: it is made without a panic.
                    if bytes <= 1 << 16 {
                        let array = generate(dtype, shape.clone(), distribution, 1);
                        proptest::prop_assert_eq!(array.shape(), &shape[..]);
                    }
                }
                Ok(_) => {}
                Err(message) => assert_sentence(&message, &text),
            }
            match text.parse::<OutputSpec>() {
                Ok(OutputSpec { dtype, shape }) => {
                    let bytes = shape.iter().map(|&d| d as u128).product::<u128>() * dtype.size() as u128;
                    proptest::prop_assert!(shape.len() <= MAX_RANK && bytes <= u128::from(TENSOR_AREA_SIZE));
                }
                Err(message) => assert_sentence(&message, &text),
            }
        }

        /// Any bytes at all, as text: the same promise.
        #[test]
        fn arbitrary_text_never_panics_the_parsers(text in "\\PC{0,40}") {
            if let Err(message) = text.parse::<ArgSpec>() {
                assert_sentence(&message, &text);
            }
            if let Err(message) = text.parse::<OutputSpec>() {
                assert_sentence(&message, &text);
            }
        }
    }
}
