//! Why a call did not produce a result ([`CallError`]), why a kernel failed
//! ([`KernelFailed`]), why a library did not load ([`LoadError`]), and the whole story
//! of any error ([`describe`]).

use super::call::status_text;
use super::{CoreStdout, KernelStatus, OpFindings, Unwritten};
use neuroncustomop::allocators::HeapsGivenBack;
use neuroncustomop::wrapper_api::{ArgFailure, DescriptorError};
use neuroncustomop_machine::device::{OpStatus, RunError, describe_status};
use neuroncustomop_machine::images::CORES;
use neuroncustomop_machine::job::JobError;
use neuroncustomop_package::package::PackageError;
use neuroncustomop_package::project::ProjectError;
use std::path::PathBuf;

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
    /// [`Output::Like`](super::Output::Like) names an argument that is not a tensor.
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
    /// The call ran but its profile could not be made ([`Options::profile`](super::Options::profile)).
    #[error("profiling the call")]
    Profile(#[source] neuroncustomop_profile::profile::ProfileError),
    /// A C++ library's shape function for the kernel failed, or the arguments do not fit
    /// its signature ([`Library::output_of`](super::Library::output_of)).
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
    /// them from ([`Library::resolve_output`](super::Library::resolve_output)).
    #[error(
        "kernel {kernel} has no tensor argument to take the output's shape and dtype from: give them with the call \
         (out_shape= and out_dtype= in Python, --output in ncop)"
    )]
    NoOutputForm {
        /// The kernel.
        kernel: String,
    },
    /// A core did not report the op: the device stopped (a fault, a hang, a timeout),
    /// or a sanitizer stopped the host tier's loader.
    #[error("core {core}{} did not finish kernel {kernel}; {by} said:\n{output}", and_cores(others))]
    Unfinished {
        /// The kernel.
        kernel: String,
        /// The first core without a report, or the one a sanitizer caught.
        core: usize,
        /// The other cores a sanitizer's report names (the other side of a race).
        others: Vec<usize>,
        /// What ran it: `the device`, `the host tier`.
        by: &'static str,
        /// The loader's and QEMU's output.
        output: String,
    },
}

/// ` (with core 4)`, ` (with cores 4 and 5)`: the other cores of an
/// [`CallError::Unfinished`]; nothing for none.
fn and_cores(others: &[usize]) -> String {
    match others {
        [] => String::new(),
        [one] => format!(" (with core {one})"),
        [first @ .., last] => {
            let first: Vec<String> = first.iter().map(usize::to_string).collect();
            format!(" (with cores {} and {last})", first.join(", "))
        }
    }
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
    /// The host tier could not build the library ([`Library::load_for`](super::Library::load_for)).
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

#[cfg(test)]
mod tests {
    use super::CallError;

    #[test]
    fn a_host_tier_race_names_both_cores_and_the_host_tier() {
        let error = CallError::Unfinished {
            kernel: "race".into(),
            core: 3,
            others: vec![4],
            by: "the host tier",
            output: "WARNING: ThreadSanitizer: data race".into(),
        };
        assert_eq!(
            error.to_string(),
            "core 3 (with core 4) did not finish kernel race; the host tier said:\nWARNING: ThreadSanitizer: data race"
        );
    }
}
