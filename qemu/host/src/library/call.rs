//! A finished call: its output, its named status, what each core printed and how
//! many instructions each took; and whether it succeeded ([`Call::check`]).

use super::{KernelFailed, OpFindings};
use crate::array::Array;
use neuroncustomop::wrapper_api::{ArgFailure, Status};
use neuroncustomop_machine::images::CORES;
use std::fmt;
use std::time::Duration;

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
    /// ([`Options::partial_output`](super::Options::partial_output)): [`Call::check`] fails on them.
    pub unwritten: Option<Unwritten>,
    /// What the memory checks found ([`Options::checked`](super::Options::checked); empty when unchecked):
    /// [`Call::check`] fails on any.
    pub findings: OpFindings,
    /// Where the instructions went, when the call asked ([`Options::profile`](super::Options::profile)).
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
        // share of the output (less one element a core, for a split that rounds). An
        // output of fewer elements than cores says nothing either way (its shares round
        // to none): no guess there, where a property check's shrunk call often lands.
        let idle = CORES.saturating_sub(self.cores);
        let split_by_core = idle > 0 && self.total >= CORES && self.elements + idle >= self.total * idle / CORES;
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
pub(super) fn split_arg_failure(text: &str, status: KernelStatus) -> (String, Option<ArgFailure>) {
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
    /// the number of cores is all the work on one). When the call was profiled, both
    /// leave out the instructions of waits for the DMA engine
    /// (`CoreProfile::waiting`): how many run depends on how fast the simulated engine
    /// happened to be, not on the work.
    pub balance: f64,
    /// Output elements the slowest core wrote, when known: on one core, the elements
    /// written; on several, from the call's profile ([`Options::profile`](super::Options::profile)).
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
        let busy: Vec<u64> = match &self.profile {
            Some(profile) => {
                self.instructions.iter().zip(&profile.cores).map(|(n, core)| n.saturating_sub(core.waiting)).collect()
            }
            None => self.instructions.clone(),
        };
        let mean = busy.iter().sum::<u64>() as f64 / busy.len().max(1) as f64;
        let most = busy.iter().copied().max().unwrap_or(0);
        let balance = if mean > 0.0 { most as f64 / mean } else { 1.0 };
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

    /// The line the runtime's C++ support printed when it ended the first failing
    /// core's op on a misuse: `torch: accessor<T, N> at relu.cpp:12 (relu_forward):
    /// argument 0 holds int64, but T is float32`, `assertion failed: ... at add.cpp:9
    /// (tensor_add)`. It is the last line that core printed: the runtime prints it as the
    /// op ends (`neuron_cxx_fail`, `neuron_cxx_record`, `__assert_func`). Only a C++
    /// library's failures end that way, so only a caller that knows the library is one
    /// ([`Library::registration`](super::Library::registration) is `Some`) asks;
    /// `None` when the call succeeded or the core printed nothing.
    pub fn cxx_failure_line(&self) -> Option<&str> {
        let core = self.statuses.iter().position(|status| !status.is_ok())?;
        self.stdout.get(core)?.text.lines().next_back().filter(|line| !line.trim().is_empty())
    }

    /// The call's status as the front ends show it ([`status_text`]).
    pub fn status_text(&self) -> String {
        status_text(self.status, self.arg_failure())
    }

    /// The call itself if every core succeeded, the memory checks found nothing but
    /// warnings ([`Severity::Warning`](super::Severity::Warning)), and
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::Array;
    use std::time::Duration;

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
    fn the_cxx_failure_line_is_the_failing_cores_last() {
        let line = "torch: accessor<T, N> at relu.cpp:12 (relu_forward): argument 0 holds int64, but T is float32";
        let printed = |text: &str| CoreStdout { text: text.into(), lost: 0 };
        let status = KernelStatus(Status::DTYPE_MISMATCH.0);
        let call = Call {
            status,
            statuses: vec![KernelStatus(0), status],
            stdout: vec![printed("core 0's\n"), printed(&format!("the kernel's own\n{line}\n"))],
            ..ok_call(2)
        };
        assert_eq!(call.cxx_failure_line(), Some(line));
        assert_eq!(ok_call(2).cxx_failure_line(), None, "a call that succeeded");
        let silent = Call { stdout: vec![printed(""), printed("\n")], ..call };
        assert_eq!(silent.cxx_failure_line(), None, "nothing printed");
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
        // Profiled: the waits for the DMA engine are not work.
        use neuroncustomop_profile::profile::{CoreProfile, Profile};
        let waiting = [0, 0, 0, 0, 0, 0, 0, 200];
        let cores = waiting.iter().map(|&waiting| CoreProfile { waiting, ..CoreProfile::default() }).collect();
        let profiled = Call {
            profile: Some(Profile { kernel: "k".into(), cores }),
            ..call(vec![100, 100, 100, 100, 100, 100, 100, 300], None)
        };
        assert_eq!(profiled.work().balance, 1.0, "core 7's extra 200 were waits");
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
        let tiny = Call { unwritten: Some(Unwritten { elements: 1, total: 1, cores: 1 }), ..ok_call(1) };
        let tiny = tiny.check().unwrap_err().to_string();
        assert!(
            tiny.ends_with("1 of 1 output elements were never written; if the kernel writes part of its output on purpose, declare it (`--partial-output`, `Options::partial_output`)"),
            "fewer elements than cores: no multicore guess: {tiny}"
        );
        let on_eight = call(8, 3).check().unwrap_err().to_string();
        assert!(on_eight.contains("3 of 1000 output elements were never written; if the kernel"), "{on_eight}");
        assert!(call(8, 0).check().is_ok(), "every element written");
    }
}
