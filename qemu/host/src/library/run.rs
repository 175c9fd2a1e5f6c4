//! One run of a kernel: its job made and dispatched (or run under gdb), and the
//! device's report read into a [`Call`], or into the [`CallError`] that says where
//! the kernel stopped.

use super::call::split_arg_failure;
use super::staging::tensor_names;
use super::{Arg, Call, CallError, CoreStdout, KernelStatus, Library, Options, Output, Staged, Target, Unwritten};
use crate::array::Array;
use crate::compare::{canary, holding, second_canary};
use neuroncustomop::wrapper_api::ArgFailure;
use neuroncustomop_hosttier::Debugger;
use neuroncustomop_machine::device::{Report, RunError};
use neuroncustomop_machine::images::CORES;
use neuroncustomop_profile::profile::Profile;
use neuroncustomop_wire::fault::Fault;
use std::path::PathBuf;
use std::time::Instant;

/// How one run goes beyond its options: the output's fill (else the canary), and the
/// debugger it runs under (else none).
#[derive(Clone, Copy, Default)]
struct RunWith<'a> {
    fill: Option<&'a [u8]>,
    debugger: Option<&'a Debugger>,
}

impl Library {
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
    /// at the terminal, or `--batch` commands). The call's result is read when the
    /// kernel has finished, gdb still running for a person at it
    /// ([`neuroncustomop_hosttier::wait_for_debugger`] waits for it), or once a
    /// `--batch` gdb has exited; `options.target` is taken to be [`Target::Host`].
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
        let (job, staged) = self.op_job(function, args, output, options, fill)?;

        let started = Instant::now();
        let mut report = match debugger {
            Some(debugger) => {
                let host = self.host_library(options.sanitize)?;
                neuroncustomop_hosttier::debug(&host, &job, debugger).map_err(CallError::Host)?
            }
            None => self.dispatch(&job, options, cancelled)?,
        };
        let wall = started.elapsed();

        if let Some(stopped) = self.stopped(kernel, &report, options.target) {
            return Err(stopped);
        }
        let cores = read_cores(kernel, &report, options, &tensor_names(&job, args.len()))?;
        let dumped = report.dumps.remove(&0).unwrap_or_default();
        let output =
            Array::from_bytes(staged.dtype, staged.shape.clone(), dumped).map_err(|e| CallError::Unfinished {
                kernel: kernel.into(),
                core: 0,
                others: Vec::new(),
                by: ran_by(options.target),
                output: format!("the output dump is incomplete: {e}"),
            })?;
        let status = cores.statuses.iter().copied().find(|s| !s.is_ok()).unwrap_or(KernelStatus(0));
        let mut findings = report.findings(0);
        if !findings.is_empty() {
            // The host tier's findings are places in its x86-64 build of the library.
            let symbols = match options.target {
                Target::Device => self.symbolizer(),
                Target::Host => {
                    self.host_library(options.sanitize).ok().and_then(|h| neuroncustomop_hosttier::symbolizer(&h))
                }
            };
            if let Some(symbols) = symbols {
                findings.shown.iter_mut().for_each(|finding| symbols.symbolize_finding(finding));
            }
        }
        let profile = options.profile.then(|| self.profile(kernel, &report, options.cores, &staged)).transpose()?;
        let CoreResults { statuses, arg_failures, stdout, instructions, exact } = cores;
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

    /// The profile of a run on `cores` cores: the plugin's lines folded over the
    /// library's and the loader's images (the op's markers and the services kernels
    /// call are the loader's).
    fn profile(&self, kernel: &str, report: &Report, cores: usize, staged: &Staged) -> Result<Profile, CallError> {
        let loader = neuroncustomop_machine::images::build("loader").map_err(|e| CallError::Run(RunError::Build(e)))?;
        let images: Vec<PathBuf> = self.package()?.images.cores.iter().chain(&loader.cores).cloned().collect();
        neuroncustomop_profile::fold::Folder::new(&images)
            .and_then(|mut folder| {
                let output = neuroncustomop_profile::profile::Output {
                    address: u64::from(staged.dump.address),
                    len: u64::from(staged.dump.len),
                    element: staged.dtype.size() as u64,
                };
                let reports: Vec<_> = (0..cores as u32).map(|core| report.core(core)).collect();
                let lines: Vec<&[String]> = reports
                    .iter()
                    .map(|core| core.ops.first().map_or(&[][..], |op| op.plugin.lines.as_slice()))
                    .collect();
                folder.profile(kernel, &lines, Some(&output))
            })
            .map_err(CallError::Profile)
    }
}

/// What each core of a finished run returned, in core order.
struct CoreResults {
    statuses: Vec<KernelStatus>,
    arg_failures: Vec<Option<ArgFailure>>,
    stdout: Vec<CoreStdout>,
    instructions: Vec<u64>,
    exact: Vec<bool>,
}

/// Each core's status, what it printed and its count, from the device's `report`; a
/// core without its op's status (the device stopped) is [`CallError::Unfinished`].
fn read_cores(
    kernel: &str,
    report: &Report,
    options: &Options,
    tensors: &[(String, u32, u32)],
) -> Result<CoreResults, CallError> {
    let mut cores = CoreResults {
        statuses: Vec::with_capacity(options.cores),
        arg_failures: Vec::with_capacity(options.cores),
        stdout: Vec::with_capacity(options.cores),
        instructions: Vec::new(),
        exact: Vec::new(),
    };
    for core in 0..options.cores {
        let core_report = report.core(core as u32);
        let status = core_report.ops.first().and_then(|op| op.status_code());
        let Some(status) = status.filter(|_| report.done) else {
            return Err(unfinished(kernel, report, core, options, tensors));
        };
        cores.statuses.push(KernelStatus(status));
        let (text, lost) = core_report.stdout.get(&0).cloned().unwrap_or_default();
        let (text, arg_failure) = split_arg_failure(&String::from_utf8_lossy(&text), KernelStatus(status));
        cores.arg_failures.push(arg_failure);
        cores.stdout.push(CoreStdout { text, lost });
        cores.instructions.extend(core_report.ops.first().and_then(|op| op.instructions));
        cores.exact.extend(core_report.ops.first().filter(|op| op.instructions.is_some()).map(|op| op.exact));
    }
    Ok(cores)
}

/// [`CallError::Unfinished`] for a run whose core `first` (the first found without its
/// op's status) did not report: naming the core that stopped the device and what the
/// device said.
fn unfinished(
    kernel: &str,
    report: &Report,
    first: usize,
    options: &Options,
    tensors: &[(String, u32, u32)],
) -> CallError {
    let ending = report.outcome.ending().filter(|_| options.target == Target::Device);
    let output = format!(
        "{}{}{}",
        ending.map_or_else(String::new, |ending| ending + "\n"),
        report.outcome.stdout,
        report.outcome.stderr
    );
    // The core that stopped the device: the one a sanitizer caught (it ends
    // the host tier's loader there, whichever cores reported before), else
    // the first without its op's report.
    let reported = |core: usize| report.core(core as u32).ops.first().and_then(|op| op.status_code());
    // Every core a sanitizer's report names (both of a race), the accessing one first.
    let named =
        if options.target == Target::Host { neuroncustomop_hosttier::involved_cores(&output) } else { Vec::new() };
    let core = neuroncustomop_hosttier::sanitized_core(&output)
        .filter(|_| options.target == Target::Host)
        .or(named.first().copied())
        .or_else(|| (first..options.cores).find(|&core| reported(core).is_none()))
        .unwrap_or(first);
    let others = named.into_iter().filter(|&other| other != core).collect();
    let mut output = output.lines().filter(|line| !line.starts_with("DUMP ")).collect::<Vec<_>>().join("\n");
    if options.target == Target::Host {
        // A sanitizer stopped the host tier's loader: say where in tensor terms,
        // then its report without the loader's protocol lines around it.
        // The loader's protocol lines are left out either way (under gdb the report
        // itself went to gdb's terminal, and they would be all that is left).
        let explained = neuroncustomop_hosttier::explain_sanitizer(&output, tensors);
        let report: Vec<&str> =
            output.lines().filter(|line| neuroncustomop_wire::report::Line::parse(line).is_err()).collect();
        output = match explained {
            Some(explained) => format!("{explained}\n\n{}", report.join("\n")),
            None if report.iter().all(|line| line.trim().is_empty()) => {
                "nothing more: a sanitizer's report went to gdb's terminal, or the loader stopped silently".into()
            }
            None => report.join("\n"),
        };
    }
    CallError::Unfinished { kernel: kernel.into(), core, others, by: ran_by(options.target), output }
}

/// What ran a call, as its errors say: `the device`, `the host tier`.
fn ran_by(target: Target) -> &'static str {
    match target {
        Target::Device => "the device",
        Target::Host => "the host tier",
    }
}

impl Library {
    /// The first core whose op stopped without returning a status, as a
    /// [`CallError::Stopped`] that names the kernel's source line.
    fn stopped(&self, kernel: &str, report: &Report, target: Target) -> Option<CallError> {
        let (core, op) = report.cores.iter().find_map(|(&core, r)| {
            r.ops.first().filter(|op| report.done && op.status_code().is_none()).map(|op| (core, op))
        })?;
        // The host tier's loader says where on its stderr (a sentence naming the signal
        // and `function (file:line)`), and a panic's message is in what the core printed.
        let on_host = (target == Target::Host).then(|| {
            let printed = report.core(core).stdout.get(&0).map(|(text, _)| String::from_utf8_lossy(text).into_owned());
            // (Without its note that the session ends, the host API's business, nor the
            // `FAULT` line, the tools' form of the sentence.)
            let stderr =
                report.outcome.stderr.lines().filter(|line| {
                    *line != neuroncustomop_hosttier::loader::SESSION_ENDS && Fault::parse(line).is_err()
                });
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
                    .filter(|line| Fault::parse(line).is_err() && ArgFailure::parse_line(line).is_none())
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
