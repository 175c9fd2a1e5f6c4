//! The host side of the op-author examples (`examples/`): for every kernel, how many
//! cores it runs on, how to make inputs for it, and what it must output, computed here
//! by a plain host reference; and [`run_cases`], which runs them on the device.
//! `cargo sim run` and `qemu/tests/op_flow.rs` check the device against these.
//!
//! ```
//! use neuroncustomop_sim::examples;
//!
//! let relu = examples::find("relu").unwrap().function("relu").unwrap();
//! let case = relu.case(&[4], None, 7).unwrap();
//! let x = case.inputs[0].values().unwrap();
//! let want: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
//! assert_eq!(case.expected, want);
//! assert_eq!(relu.first_mismatch(&want, &case.expected), None);
//! ```

use crate::device::{self, Report, RunError};
use crate::images;
use crate::job::{Job, JobError, Op, TENSOR_AREA};
use crate::package::Package;
use neuroncustomop::wrapper_api::{ArgTensor, DescriptorError, Dtype, ScalarKind};
use neuroncustomop_wire::Descriptor;
use neuroncustomop_wire::job::OutputDump;
use std::cmp::Ordering;
use std::fmt;
use std::time::{Duration, Instant};

/// Elements per op when the caller does not say.
pub const DEFAULT_ELEMENTS: usize = 65_536;

/// Largest size of one tensor dimension (dimensions are `u16` on the wire).
const MAX_DIM: usize = u16::MAX as usize;

/// How many cores a kernel needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cores {
    /// Element access: each core that runs it computes the whole output, so it is
    /// right on any number of cores; it runs on one (the AWS docs: "single core only").
    One,
    /// The work is split by `get_cpu_count()`, which is 8: it needs all 8 cores.
    All,
}

impl Cores {
    /// The cores to boot when the caller does not say.
    pub fn default_count(self) -> usize {
        match self {
            Cores::One => 1,
            Cores::All => images::CORES,
        }
    }
}

/// Which way a sort or top-k orders a row (the NaN policy: [`sort_order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Smallest first.
    Ascending,
    /// Largest first.
    Descending,
}

/// What a kernel computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `out = max(x, 0)`.
    Relu,
    /// `out = a + b`.
    VectorAdd,
    /// `out = x * factor` over the first `n` elements (arguments x, factor, n).
    Scale,
    /// Every row (last axis) sorted.
    Sort(Order),
    /// The first K of every row sorted, K being the output's last dimension.
    TopK(Order),
}

/// How output elements are compared with the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Same bit pattern: kernels that only move values (sort, top-k).
    Bits,
    /// Equal as numbers (`-0.0 == 0.0`), or both NaN: kernels that compute.
    Value,
}

/// One kernel of an example.
#[derive(Debug, Clone, Copy)]
pub struct Function {
    /// The name it is registered under.
    pub name: &'static str,
    /// What it computes.
    pub kernel: Kernel,
    /// How many cores it needs.
    pub cores: Cores,
}

/// One example library.
#[derive(Debug)]
pub struct Example {
    /// `examples/<name>.rs`, or the C sources in `examples/<name>/`.
    pub name: &'static str,
    /// Its kernels, in registration order.
    pub functions: &'static [Function],
}

/// Every example with a host reference.
pub const EXAMPLES: &[Example] = &[
    Example {
        name: "relu",
        functions: &[
            Function { name: "relu", kernel: Kernel::Relu, cores: Cores::One },
            Function { name: "relu_tcm", kernel: Kernel::Relu, cores: Cores::One },
            Function { name: "relu_multicore", kernel: Kernel::Relu, cores: Cores::All },
        ],
    },
    Example {
        name: "vector_add",
        functions: &[
            Function { name: "vector_add", kernel: Kernel::VectorAdd, cores: Cores::One },
            Function { name: "vector_add_multicore", kernel: Kernel::VectorAdd, cores: Cores::All },
        ],
    },
    Example {
        name: "sort",
        functions: &[
            Function { name: "sort_ascending", kernel: Kernel::Sort(Order::Ascending), cores: Cores::All },
            Function { name: "sort_descending", kernel: Kernel::Sort(Order::Descending), cores: Cores::All },
            Function { name: "topk_largest", kernel: Kernel::TopK(Order::Descending), cores: Cores::All },
            Function { name: "topk_smallest", kernel: Kernel::TopK(Order::Ascending), cores: Cores::All },
        ],
    },
    Example {
        name: "c_kernel",
        functions: &[
            Function { name: "scale", kernel: Kernel::Scale, cores: Cores::One },
            Function { name: "scale_multicore", kernel: Kernel::Scale, cores: Cores::All },
        ],
    },
];

/// The example named `name`.
pub fn find(name: &str) -> Option<&'static Example> {
    EXAMPLES.iter().find(|example| example.name == name)
}

impl Example {
    /// Its kernel named `name`.
    pub fn function(&self, name: &str) -> Option<&'static Function> {
        self.functions.iter().find(|function| function.name == name)
    }

    /// The kernel run when the caller names none: the first.
    pub fn default_function(&self) -> &'static Function {
        &self.functions[0]
    }
}

/// One argument of an op, on the host.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// An f32 tensor.
    Tensor {
        /// Dimensions, outermost first.
        shape: Vec<u16>,
        /// Elements, row-major.
        values: Vec<f32>,
    },
    /// A C `float` scalar.
    Float(f32),
}

impl Arg {
    /// A tensor's elements; `None` for a scalar.
    pub fn values(&self) -> Option<&[f32]> {
        match self {
            Arg::Tensor { values, .. } => Some(values),
            Arg::Float(_) => None,
        }
    }
}

/// One call of a kernel: the inputs, the output's shape, and what the output must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The inputs, in argument order.
    pub inputs: Vec<Arg>,
    /// The output tensor's shape.
    pub output_shape: Vec<u16>,
    /// The reference output, row-major.
    pub expected: Vec<f32>,
}

/// The first output element that differs from the reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mismatch {
    /// Its index, row-major.
    pub index: usize,
    /// What the device wrote (`None` past the end of what it returned).
    pub got: Option<f32>,
    /// What the reference says.
    pub want: f32,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bits = |v: f32| format!("{v:?} ({:#010x})", v.to_bits());
        match self.got {
            Some(got) => write!(f, "index {}: got {}, want {}", self.index, bits(got), bits(self.want)),
            None => write!(f, "index {}: missing, want {}", self.index, bits(self.want)),
        }
    }
}

impl Function {
    /// How the output is compared with the reference.
    pub fn compare(&self) -> Compare {
        match self.kernel {
            Kernel::Sort(_) | Kernel::TopK(_) => Compare::Bits,
            Kernel::Relu | Kernel::VectorAdd | Kernel::Scale => Compare::Value,
        }
    }

    /// Random inputs of shape `shape` (from `seed`), and the reference output. `k` is
    /// the output's last dimension for a top-k (default: an eighth of the row, at least
    /// 1); other kernels take none.
    ///
    /// # Errors
    /// A `k` for a kernel that is not a top-k, or larger than the row.
    pub fn case(&self, shape: &[u16], k: Option<usize>, seed: u64) -> Result<Case, String> {
        let mut rng = Rng::new(seed);
        let numel: usize = shape.iter().map(|&d| usize::from(d)).product();
        let row = shape.last().map_or(0, |&d| usize::from(d));
        if k.is_some() && !matches!(self.kernel, Kernel::TopK(_)) {
            return Err(format!("{} takes no K: only a top-k does", self.name));
        }
        let tensor = |values: Vec<f32>| Arg::Tensor { shape: shape.to_vec(), values };
        Ok(match self.kernel {
            Kernel::Relu => {
                let x = rng.uniform_values(numel);
                Case { expected: relu(&x), inputs: vec![tensor(x)], output_shape: shape.to_vec() }
            }
            Kernel::VectorAdd => {
                let (a, b) = (rng.uniform_values(numel), rng.uniform_values(numel));
                Case { expected: vector_add(&a, &b), inputs: vec![tensor(a), tensor(b)], output_shape: shape.to_vec() }
            }
            Kernel::Scale => {
                let x = rng.uniform_values(numel);
                let factor = rng.uniform(-4.0, 4.0);
                Case {
                    expected: scale(&x, factor),
                    inputs: vec![tensor(x), Arg::Float(factor)],
                    output_shape: shape.to_vec(),
                }
            }
            Kernel::Sort(order) => {
                let x = rng.sort_values(numel);
                Case { expected: sort_rows(&x, row, row, order), inputs: vec![tensor(x)], output_shape: shape.to_vec() }
            }
            Kernel::TopK(order) => {
                let k = k.unwrap_or((row / 8).max(1).min(row));
                if k > row {
                    return Err(format!("K = {k} is larger than the row ({row} elements)"));
                }
                let x = rng.sort_values(numel);
                let mut output_shape = shape.to_vec();
                if let Some(last) = output_shape.last_mut() {
                    *last = k as u16; // k <= row, a u16
                }
                Case { expected: sort_rows(&x, row, k, order), inputs: vec![tensor(x)], output_shape }
            }
        })
    }

    /// The first element of `got` that differs from `want` (by [`Function::compare`]),
    /// or where `got` is shorter; `None` when they match.
    pub fn first_mismatch(&self, got: &[f32], want: &[f32]) -> Option<Mismatch> {
        let same = |a: f32, b: f32| match self.compare() {
            Compare::Bits => a.to_bits() == b.to_bits(),
            Compare::Value => a == b || (a.is_nan() && b.is_nan()),
        };
        want.iter().enumerate().find_map(|(index, &w)| match got.get(index) {
            Some(&g) if same(g, w) => None,
            got => Some(Mismatch { index, got: got.copied(), want: w }),
        })
    }
}

/// A shape of `elements` elements: `[elements]` up to 65535, else two dimensions
/// `[rows, columns]` with the longest rows that fit.
///
/// # Errors
/// When `elements` has no such factorisation (e.g. a prime above 65535).
pub fn shape_for(elements: usize) -> Result<Vec<u16>, String> {
    if elements <= MAX_DIM {
        return Ok(vec![elements as u16]);
    }
    (1..=MAX_DIM)
        .rev()
        .find(|&columns| elements.is_multiple_of(columns) && elements / columns <= MAX_DIM)
        .map(|columns| vec![(elements / columns) as u16, columns as u16])
        .ok_or_else(|| format!("{elements} elements do not make a [rows, columns] shape with both at most {MAX_DIM}"))
}

/// Reference: `max(x, 0)`.
pub fn relu(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| v.max(0.0)).collect()
}

/// Reference: `a + b`.
pub fn vector_add(a: &[f32], b: &[f32]) -> Vec<f32> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// Reference: `x * factor`.
pub fn scale(x: &[f32], factor: f32) -> Vec<f32> {
    x.iter().map(|v| v * factor).collect()
}

/// The examples' sort order (their NaN policy): IEEE total order
/// (`-inf < … < -0.0 < +0.0 < … < +inf`), and every NaN above `+inf` whatever its sign
/// bit, NaNs ordered by payload and `+NaN` before `-NaN`. Distinct bit patterns never
/// compare equal, so a sorted row is fully determined.
///
/// ```
/// use neuroncustomop_sim::examples::sort_order;
/// let mut row = [f32::NAN, 1.0, -f32::NAN, f32::INFINITY, 0.0, -0.0];
/// row.sort_by(sort_order);
/// let bits: Vec<u32> = row.iter().map(|v| v.to_bits()).collect();
/// let want = [-0.0f32, 0.0, 1.0, f32::INFINITY, f32::NAN, -f32::NAN];
/// assert_eq!(bits, want.map(f32::to_bits));
/// ```
pub fn sort_order(a: &f32, b: &f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => a.total_cmp(b),
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (true, true) => a.abs().total_cmp(&b.abs()).then(a.is_sign_negative().cmp(&b.is_sign_negative())),
    }
}

/// Reference: each row of `row` elements sorted in `order`, cut to its first `k`.
pub fn sort_rows(x: &[f32], row: usize, k: usize, order: Order) -> Vec<f32> {
    if row == 0 {
        return Vec::new();
    }
    x.chunks(row)
        .flat_map(|chunk| {
            let mut sorted = chunk.to_vec();
            sorted.sort_by(|a, b| match order {
                Order::Ascending => sort_order(a, b),
                Order::Descending => sort_order(b, a),
            });
            sorted.truncate(k);
            sorted
        })
        .collect()
}

/// Why a case could not be run.
#[derive(Debug)]
pub enum CaseError {
    /// The package has no kernel of that name.
    UnknownFunction(String),
    /// A tensor cannot be described (e.g. a dimension too large).
    Descriptor(DescriptorError),
    /// The job could not be built.
    Job(JobError),
    /// QEMU could not run it.
    Run(RunError),
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownFunction(name) => write!(f, "the package has no kernel {name}"),
            Self::Descriptor(e) => write!(f, "describing a tensor: {e}"),
            Self::Job(e) => e.fmt(f),
            Self::Run(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CaseError {}

/// Ops run on the device, one job.
#[derive(Debug)]
pub struct Run {
    /// Per op: the output tensor's elements after every core ran it (empty if core 0
    /// dumped nothing, e.g. after rejected words).
    pub outputs: Vec<Vec<f32>>,
    /// Everything the loader reported.
    pub report: Report,
    /// Wall time of the QEMU run (boot, ops, output dumps), plus cargo's checks that the
    /// firmware is up to date (the loader is built just before, so they take a moment).
    pub wall: Duration,
}

impl Run {
    /// Op `op`'s invocation status on every core that got to it, in core order; a
    /// loader word (`bad-words`, `unknown-kernel`, …) where the kernel did not run.
    pub fn statuses(&self, op: usize) -> Vec<String> {
        self.report.cores.values().filter_map(|core| core.ops.get(op)).map(|report| report.status.clone()).collect()
    }

    /// Whether the loader finished and op `op` ran on all `cores` cores with status 0.
    pub fn succeeded(&self, op: usize, cores: usize) -> bool {
        let statuses = self.statuses(op);
        self.report.done && statuses.len() == cores && statuses.iter().all(|status| status == "0")
    }

    /// Guest instructions op `op`'s kernel took on each core, in core order: CCOUNT
    /// ticks x 25 when run with `count_instructions`. CCOUNT follows QEMU's one virtual
    /// clock, which also advances while QEMU runs another core (another library core,
    /// the DMA engine's): a count is exact to within 25 when QEMU did not switch cores
    /// during the kernel, an upper bound when it did.
    pub fn instructions(&self, op: usize) -> Vec<u64> {
        self.report.cores.values().filter_map(|core| core.ops.get(op)?.instructions).collect()
    }

    /// Per core, in core order, the fewest instructions any op of `ops` took: run an op
    /// several times and this is its count even if QEMU switched cores in the middle
    /// of some runs (each switch only adds). Cores without a count are left out.
    pub fn fewest_instructions(&self, ops: std::ops::Range<usize>) -> Vec<u64> {
        self.report
            .cores
            .values()
            .filter_map(|core| core.ops.get(ops.clone())?.iter().map(|op| op.instructions).min().flatten())
            .collect()
    }
}

/// An op's arguments, placed in the job's tensor area.
#[derive(Debug, Clone)]
pub struct Staged {
    /// The output descriptor.
    pub output: Descriptor,
    /// The input descriptors, in argument order.
    pub inputs: Vec<Descriptor>,
    /// Where the output lands, for the loader to dump after the op.
    pub dump: OutputDump,
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn dims(shape: &[u16]) -> Vec<u32> {
    shape.iter().map(|&d| u32::from(d)).collect()
}

/// Places `bytes` in `job`'s tensor area after everything placed so far (64-byte
/// aligned); returns the framework and device addresses.
fn place(job: &mut Job, mut bytes: Vec<u8>) -> (u64, u32) {
    let used = job
        .data
        .iter()
        .filter(|(address, _)| *address >= TENSOR_AREA)
        .map(|(address, bytes)| address - TENSOR_AREA + bytes.len() as u32)
        .max()
        .unwrap_or(0);
    // An empty tensor has no bytes, but the loader places no empty file.
    if bytes.is_empty() {
        bytes.push(0);
    }
    job.place(used.next_multiple_of(64), bytes)
}

/// Places `case`'s inputs and output in `job`'s tensor area and describes them. The
/// output starts filled with `0xFF` bytes (a NaN no reference produces), so an element
/// the kernel never wrote shows as a mismatch.
///
/// # Errors
/// [`CaseError::Descriptor`] for a tensor the descriptor cannot hold.
pub fn stage(job: &mut Job, case: &Case) -> Result<Staged, CaseError> {
    let mut inputs = Vec::with_capacity(case.inputs.len());
    for arg in &case.inputs {
        let descriptor = match arg {
            Arg::Tensor { shape, values } => {
                let (framework, _) = place(job, f32_bytes(values));
                ArgTensor::hbm_tensor(Dtype::Float32, &dims(shape), framework).map_err(CaseError::Descriptor)?
            }
            Arg::Float(value) => ArgTensor::hbm_scalar(ScalarKind::Float, place(job, value.to_le_bytes().to_vec()).0),
        };
        inputs.push(descriptor.to_bytes());
    }
    let output_len = case.expected.len() * size_of::<f32>();
    let (framework, device) = place(job, vec![0xFF; output_len]);
    let output =
        ArgTensor::hbm_tensor(Dtype::Float32, &dims(&case.output_shape), framework).map_err(CaseError::Descriptor)?;
    Ok(Staged { output: output.to_bytes(), inputs, dump: OutputDump { address: device, len: output_len as u32 } })
}

/// Runs `job` (the package's, with its ops pushed) under QEMU and decodes each op's
/// dump as f32 elements.
///
/// # Errors
/// [`CaseError::Run`] when QEMU cannot run it.
pub fn run_job(package: &Package, job: &Job, count_instructions: bool) -> Result<Run, CaseError> {
    // Build the loader first, so the wall time is QEMU's, not a build's.
    images::build("loader").map_err(|e| CaseError::Run(RunError::Build(e)))?;
    let start = Instant::now();
    let report = if count_instructions {
        device::run_counting_instructions(&package.images, job)
    } else {
        device::run(&package.images, job)
    }
    .map_err(CaseError::Run)?;
    let wall = start.elapsed();
    let outputs = (0..job.dumps.len() as u32)
        .map(|op| {
            let bytes = report.dumps.get(&op).map_or(&[][..], Vec::as_slice);
            bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        })
        .collect();
    Ok(Run { outputs, report, wall })
}

/// The job of `package` on `cores` cores that runs `ops` (kernel name, case), in
/// order: each dispatched from 0x85/0x86 words with the FunctionId of the package's
/// `ucode_lib.json`, its arguments placed by [`stage`].
///
/// # Errors
/// [`CaseError`]: an unknown kernel, an undescribable tensor, a job that does not fit.
pub fn job_for(package: &Package, ops: &[(&str, &Case)], cores: usize) -> Result<Job, CaseError> {
    let mut job = package.job(cores).map_err(CaseError::Job)?;
    for (function, case) in ops {
        let id = package.function_id(function).ok_or_else(|| CaseError::UnknownFunction(function.to_string()))?;
        let staged = stage(&mut job, case)?;
        let op = Op { function: id, output: Some(staged.output), inputs: staged.inputs, dump: staged.dump };
        job.push(&op).map_err(CaseError::Job)?;
    }
    Ok(job)
}

/// Runs `ops` (kernel name, case) as one job of `package` on `cores` cores
/// ([`job_for`], then [`run_job`]).
///
/// # Errors
/// [`CaseError`]: an unknown kernel, an undescribable tensor, or QEMU failing to run.
pub fn run_cases(
    package: &Package,
    ops: &[(&str, &Case)],
    cores: usize,
    count_instructions: bool,
) -> Result<Run, CaseError> {
    run_job(package, &job_for(package, ops, cores)?, count_instructions)
}

pub use crate::generate::Rng;

/// The examples' own inputs.
trait ExampleValues {
    /// `count` floats in `[-100, 100)`.
    fn uniform_values(&mut self, count: usize) -> Vec<f32>;
    /// Sort inputs.
    fn sort_values(&mut self, count: usize) -> Vec<f32>;
}

impl ExampleValues for Rng {
    fn uniform_values(&mut self, count: usize) -> Vec<f32> {
        (0..count).map(|_| self.uniform(-100.0, 100.0)).collect()
    }

    /// `count` floats for a sort: about half from the integers -8 ..= 8 and -0.0 (so
    /// rows are full of duplicates), one in sixteen special (NaN of either sign and
    /// another payload, the infinities), the rest spread over `[-1000, 1000)`.
    fn sort_values(&mut self, count: usize) -> Vec<f32> {
        const SPECIAL: [u32; 5] = [0x7FC0_0000, 0xFFC0_0000, 0x7F80_0001, 0x7F80_0000, 0xFF80_0000];
        (0..count)
            .map(|_| match self.below(16) {
                0 => f32::from_bits(SPECIAL[self.below(SPECIAL.len() as u64) as usize]),
                1..=8 => match self.below(18) {
                    17 => -0.0,
                    small => small as f32 - 8.0,
                },
                _ => self.uniform(-1000.0, 1000.0),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(values: &[f32]) -> Vec<u32> {
        values.iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn every_example_names_distinct_functions() {
        for example in EXAMPLES {
            for (i, function) in example.functions.iter().enumerate() {
                assert!(example.functions[..i].iter().all(|f| f.name != function.name), "{}", function.name);
            }
        }
        assert_eq!(find("sort").unwrap().default_function().name, "sort_ascending");
        assert!(find("nothing").is_none());
    }

    #[test]
    fn the_order_puts_every_nan_above_infinity_and_negative_zero_first() {
        let mut row = [
            f32::from_bits(0xFFC0_0000),
            f32::INFINITY,
            f32::from_bits(0x7F80_0001),
            0.0,
            -0.0,
            f32::NEG_INFINITY,
            f32::from_bits(0x7FC0_0000),
            -1.0,
        ];
        row.sort_by(sort_order);
        assert_eq!(
            bits(&row),
            [0xFF80_0000, 0xBF80_0000, 0x8000_0000, 0x0000_0000, 0x7F80_0000, 0x7F80_0001, 0x7FC0_0000, 0xFFC0_0000]
        );
    }

    #[test]
    fn sort_rows_sorts_each_row_and_cuts_it_to_k() {
        let x = [3.0, 1.0, 2.0, 1.0, -5.0, 4.0, 4.0, 0.0];
        assert_eq!(sort_rows(&x, 4, 4, Order::Ascending), [1.0, 1.0, 2.0, 3.0, -5.0, 0.0, 4.0, 4.0]);
        assert_eq!(sort_rows(&x, 4, 2, Order::Descending), [3.0, 2.0, 4.0, 4.0]);
        assert_eq!(sort_rows(&x, 4, 0, Order::Descending), Vec::<f32>::new());
        assert!(sort_rows(&[], 0, 0, Order::Ascending).is_empty());
    }

    #[test]
    fn cases_are_repeatable_and_follow_the_reference() {
        let sort = find("sort").unwrap().function("topk_largest").unwrap();
        let case = sort.case(&[3, 40], Some(5), 1).unwrap();
        let x = case.inputs[0].values().unwrap();
        let input_bits = |seed| bits(sort.case(&[3, 40], Some(5), seed).unwrap().inputs[0].values().unwrap());
        assert_eq!(bits(x), input_bits(1), "the same seed, the same inputs");
        assert_ne!(bits(x), input_bits(2));
        assert_eq!(case.output_shape, [3, 5]);
        assert_eq!(bits(&case.expected), bits(&sort_rows(x, 40, 5, Order::Descending)));
        assert_eq!(sort.case(&[3, 40], None, 1).unwrap().output_shape, [3, 5]);
        assert!(sort.case(&[3, 40], Some(41), 1).is_err());
        let relu = find("relu").unwrap().default_function();
        assert!(relu.case(&[8], Some(1), 1).is_err());

        let c_scale = find("c_kernel").unwrap().function("scale").unwrap();
        let case = c_scale.case(&[2, 3], None, 9).unwrap();
        let [_, Arg::Float(factor)] = &case.inputs[..] else { panic!("{case:?}") };
        assert_eq!(case.expected, scale(case.inputs[0].values().unwrap(), *factor));
    }

    #[test]
    fn sort_inputs_hold_duplicates_and_every_special_value() {
        let values = Rng::new(3).sort_values(4000);
        let mut distinct = bits(&values);
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() < values.len() * 3 / 4, "{} distinct", distinct.len());
        for special in [0x7FC0_0000u32, 0xFFC0_0000, 0x7F80_0001, 0x7F80_0000, 0xFF80_0000, 0x8000_0000, 0] {
            assert!(distinct.binary_search(&special).is_ok(), "{special:#x}");
        }
    }

    #[test]
    fn mismatches_follow_the_comparison() {
        let relu = find("relu").unwrap().default_function();
        assert_eq!(relu.first_mismatch(&[-0.0, f32::NAN], &[0.0, f32::NAN]), None);
        let found = relu.first_mismatch(&[1.0, 2.0], &[1.0, 3.0, 4.0]).unwrap();
        assert_eq!(found, Mismatch { index: 1, got: Some(2.0), want: 3.0 });
        assert_eq!(found.to_string(), "index 1: got 2.0 (0x40000000), want 3.0 (0x40400000)");
        assert_eq!(relu.first_mismatch(&[1.0], &[1.0, 3.0]).unwrap().got, None);
        let sort = find("sort").unwrap().default_function();
        assert_eq!(sort.first_mismatch(&[-0.0], &[0.0]).unwrap().index, 0);
    }

    #[test]
    fn shapes_cover_the_element_count() {
        assert_eq!(shape_for(0).unwrap(), [0]);
        assert_eq!(shape_for(65_535).unwrap(), [65_535]);
        assert_eq!(shape_for(65_536).unwrap(), [2, 32_768]);
        assert_eq!(shape_for(1_000_000).unwrap(), [16, 62_500]);
        assert!(shape_for(65_537).is_err(), "a prime");
    }
}
