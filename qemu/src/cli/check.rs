//! `ncop check`: check a kernel against a Python reference on generated calls, and
//! shrink a failure to its smallest call.
//!
//! The generation and the shrinking are Hypothesis' (the Python package's
//! `neuroncustomop.testing`, which the author's reference needs anyway): this command
//! resolves its arguments, runs that module in a Python that has the package, and
//! passes its exit code on.

use clap::Args;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

/// What `ncop check --help` adds.
const CHECK_HELP: &str = "\
Each call is generated from the op itself: shapes within the device's limits biased to
the edges (1, primes, multiples of 8 and their neighbours, sizes around the TCM pool),
the dtypes it takes, values with ±0, subnormals, ±inf and NaN, scalars of its kinds.
A call fails when the kernel fails, the device's checks find anything, an output
element is left unwritten, or the output differs from the reference's. A failure is
shrunk to the smallest shape and simplest values that still fail, and printed with the
`ncop run ... --arg ... --expect ...` command that reproduces it (inputs saved as .npy).

The reference is a Python function of the inputs (NumPy arrays and scalars) returning
the output, e.g. ref.py:
    import numpy as np
    def relu(x):
        return np.fmax(x, 0)

Examples:
  ncop check relu_multicore --lib examples/relu --ref ref.py:relu --budget 60s
  ncop check scale --ref ref.py:scale --host --dtype float32            # the host tier: faster
  ncop check scale --ref ref.py:scale --shard 2/4 --seed 7              # one job of a CI matrix of 4

Exit codes: 0 every call passed, 1 a failing call (printed), 2 bad input.";

/// Check KERNEL on generated calls against a Python reference: each call runs checked
/// on the simulated device (or the host tier), on the library's declared cores.
#[derive(Debug, Args)]
#[command(after_help = CHECK_HELP)]
pub struct CheckArgs {
    /// The kernel to check.
    pub kernel: String,
    /// The library: a project folder or a package folder (as for `ncop run`).
    #[arg(short, long, default_value = ".")]
    pub lib: PathBuf,
    /// The reference, FILE.py:FUNCTION: called with the inputs, it returns the output.
    #[arg(long = "ref", value_name = "FILE.py:FUNCTION")]
    pub reference: String,
    /// Stop after this long (e.g. 60s, 5m, 90); a failure found is still shrunk.
    /// Without it and --max-examples, 100 calls.
    #[arg(long, value_name = "TIME", value_parser = parse_budget)]
    pub budget: Option<Duration>,
    /// Stop after this many calls.
    #[arg(long, value_name = "N")]
    pub max_examples: Option<u64>,
    /// Run on the host tier (the library built for x86-64): faster, without the
    /// device's memory checks (a `checks` line says what it sees and what it cannot:
    /// an out-of-bounds access passes unseen).
    #[arg(long)]
    pub host: bool,
    /// Cores to run on. Default: the library's declared cores.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub cores: Option<u8>,
    /// Run shard I of N of the sweep (0 ≤ I < N): the N shards run disjoint batches.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<(u32, u32)>,
    /// The sweep's seed: the same seed and shard make the same calls on any machine.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// The dtypes to try (repeat). Default: those the kernel takes (each tried once).
    #[arg(long, value_name = "DTYPE")]
    pub dtype: Vec<String>,
    /// Every tensor has exactly this many dimensions. Default: 1 to 8.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub rank: Option<u8>,
    /// Elements of a tensor at most.
    #[arg(long, value_name = "N")]
    pub max_elements: Option<u64>,
    /// Relative tolerance (NumPy's allclose). Without it and --atol, equal values.
    #[arg(long)]
    pub rtol: Option<f64>,
    /// Absolute tolerance (NumPy's allclose).
    #[arg(long)]
    pub atol: Option<f64>,
    /// NaN differs from NaN (by default a NaN where the reference has one passes).
    #[arg(long)]
    pub no_equal_nan: bool,
    /// The Python that has the neuroncustomop package. Default: $NCOP_PYTHON, else python3.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
}

/// `--budget`: seconds, or a number with `s`, `m` or `h`.
fn parse_budget(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let scale = match unit {
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("{text} is not a time: write 60s, 5m, 1h or a number of seconds")),
    };
    let seconds: f64 = number.parse().map_err(|_| format!("{text} is not a time: write 60s, 5m, 1h or 90"))?;
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(format!("{text}: a budget is more than 0 seconds"));
    }
    Ok(Duration::from_secs_f64(seconds * scale))
}

/// `--shard I/N`.
fn parse_shard(text: &str) -> Result<(u32, u32), String> {
    let parsed = text.split_once('/').and_then(|(i, n)| Some((i.parse::<u32>().ok()?, n.parse::<u32>().ok()?)));
    match parsed {
        Some((index, count)) if index < count => Ok((index, count)),
        Some(_) => Err(format!("shard {text}: I must be below N (shards 0/N to N-1/N)")),
        None => Err(format!("{text} is not a shard: write I/N, e.g. 0/4")),
    }
}

/// The arguments of `python -m neuroncustomop.testing` for `args`.
fn module_arguments(args: &CheckArgs) -> Vec<OsString> {
    let mut out: Vec<OsString> = ["-m", "neuroncustomop.testing"].map(OsString::from).to_vec();
    out.push(args.kernel.clone().into());
    out.extend(["--lib".into(), args.lib.clone().into_os_string(), "--ref".into(), args.reference.clone().into()]);
    let mut option = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            out.extend([OsString::from(name), value.into()]);
        }
    };
    option("--budget", args.budget.map(|budget| budget.as_secs_f64().to_string()));
    option("--max-examples", args.max_examples.map(|n| n.to_string()));
    option("--cores", args.cores.map(|n| n.to_string()));
    option("--shard", args.shard.map(|(index, count)| format!("{index}/{count}")));
    option("--seed", args.seed.map(|seed| seed.to_string()));
    option("--rank", args.rank.map(|rank| rank.to_string()));
    option("--max-elements", args.max_elements.map(|n| n.to_string()));
    option("--rtol", args.rtol.map(|v| v.to_string()));
    option("--atol", args.atol.map(|v| v.to_string()));
    for dtype in &args.dtype {
        option("--dtype", Some(dtype.clone()));
    }
    if args.host {
        out.push("--host".into());
    }
    if args.no_equal_nan {
        out.push("--no-equal-nan".into());
    }
    out
}

/// The `checks` line of a sweep on the host tier, printed before its result as `ncop run
/// --host` prints its own: what each call there checks and what it cannot see, so an
/// `OK` is not read as the device's. `None` on the device, which checks every access.
fn host_checks_line(host: bool) -> Option<String> {
    host.then(|| format!("  checks      on the host tier: {}", neuroncustomop_hosttier::coverage(None)))
}

/// Why the check could not start.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The Python could not be run, or lacks the package.
    #[error(
        "{python} cannot import neuroncustomop.testing{why}: give the Python of the environment ncop was \
         installed into (--python PATH or NCOP_PYTHON), or install the package into this one (pip install \
         neuroncustomop-*.whl, or pip install <checkout>/qemu/python)"
    )]
    NoPackage {
        /// The Python asked.
        python: String,
        /// What it said.
        why: String,
    },
}

/// Runs `ncop check`.
pub fn exec(args: CheckArgs) -> super::Outcome {
    let python = args.python.clone().map(OsString::from).or_else(|| std::env::var_os("NCOP_PYTHON"));
    let python = python.unwrap_or_else(|| "python3".into());
    let shown = python.to_string_lossy().into_owned();
    let probe = Command::new(&python).args(["-c", "import neuroncustomop.testing"]).output();
    match probe {
        Ok(output) if output.status.success() => {}
        Ok(output) => {
            let said = String::from_utf8_lossy(&output.stderr);
            let last = said.lines().last().unwrap_or_default().trim();
            let why = if last.is_empty() { String::new() } else { format!(" ({last})") };
            return Err(CheckError::NoPackage { python: shown, why }.into());
        }
        Err(error) => return Err(CheckError::NoPackage { python: shown, why: format!(" ({error})") }.into()),
    }
    if let Some(line) = host_checks_line(args.host) {
        println!("{line}");
    }
    let status = Command::new(&python).args(module_arguments(&args)).status()?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(1) => ExitCode::FAILURE,
        _ => ExitCode::from(2),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        check: CheckArgs,
    }

    #[test]
    fn budgets_and_shards_parse_or_say_how_to_write_them() {
        assert_eq!(parse_budget("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_budget("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_budget("90"), Ok(Duration::from_secs(90)));
        assert!(parse_budget("0s").unwrap_err().contains("more than 0"));
        assert!(parse_budget("soon").unwrap_err().contains("write 60s"));
        assert_eq!(parse_shard("2/4"), Ok((2, 4)));
        assert!(parse_shard("4/4").unwrap_err().contains("below N"));
        assert!(parse_shard("2-4").unwrap_err().contains("write I/N"));
    }

    #[test]
    fn a_host_sweep_says_what_the_host_tier_cannot_see_and_a_device_sweep_adds_nothing() {
        let line = host_checks_line(true).expect("a host sweep has a checks line");
        assert!(line.starts_with("  checks      on the host tier: "), "{line}");
        assert!(line.contains("unseen here: out-of-bounds accesses"), "{line}");
        assert!(line.contains("run without --host"), "{line}");
        assert_eq!(host_checks_line(false), None);
    }

    #[test]
    fn a_python_without_the_package_is_told_to_install_the_wheel_or_name_another() {
        let cli = Cli::parse_from(["ncop", "relu", "--ref", "ref.py:relu", "--python", "/nonexistent/python3"]);
        let error = exec(cli.check).expect_err("no such Python").to_string();
        assert!(error.starts_with("/nonexistent/python3 cannot import neuroncustomop.testing ("), "{error}");
        assert!(error.contains("(--python PATH or NCOP_PYTHON)"), "{error}");
        assert!(error.contains("pip install neuroncustomop-*.whl"), "{error}");
    }

    #[test]
    fn the_options_reach_the_python_module_in_its_terms() {
        let cli = Cli::parse_from([
            "ncop",
            "relu",
            "--lib",
            "lib",
            "--ref",
            "ref.py:relu",
            "--budget",
            "1m",
            "--shard",
            "1/3",
            "--seed",
            "7",
            "--dtype",
            "float32",
            "--host",
            "--rank",
            "2",
        ]);
        let args: Vec<String> =
            module_arguments(&cli.check).into_iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(
            args.join(" "),
            "-m neuroncustomop.testing relu --lib lib --ref ref.py:relu --budget 60 --shard 1/3 --seed 7 --rank 2 \
             --dtype float32 --host"
        );
    }
}
