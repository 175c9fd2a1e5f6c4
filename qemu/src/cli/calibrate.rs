//! `ncop calibrate`: the cost model fitted to times measured on hardware. Each measured
//! call is profiled on the simulated device, and the chosen parameters are set so that
//! the model's predictions come closest to the measurements
//! (`neuroncustomop_profile::fit`); the fitted parameters are written as a
//! `--cost-model` file, each with its error, and each call's residual and leave-one-out
//! prediction printed.

use super::run::ArgSpec;
use clap::Args;
use neuroncustomop_host::library::{Options, PartialOutput, Target};
use neuroncustomop_profile::cost::CostModel;
use neuroncustomop_profile::fit::{Fit, Measured, fit};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What the measurements file looks like.
const MEASUREMENTS_HELP: &str = "\
MEASURED is a CSV file, one call a line (a first line starting with `kernel` is a header;
`#` starts a comment):
  kernel,cores,arguments,microseconds
  relu,1,gen:float32:2x32768:uniform:-100:100,123456.8
  relu_tcm,1,gen:float32:2x32768:uniform:-100:100,4530.2
arguments are `ncop run --arg` values separated by spaces; microseconds is the time the
device took for one call, as measured (Neuron's profiler's GPSIMD time of the op, or one
iteration of the loop around it when op.overhead_seconds is fitted too).

Example: ncop calibrate measured.csv --lib . --out my-device.toml
         ncop run relu --arg x.npy --profile out/ --cost-model my-device.toml";

/// Fit the device cost model to times measured on hardware: profile each measured call
/// on the simulated device, fit the parameters (--fit) to the measured times, print
/// each parameter with its error and each call's residual, and write the parameters
/// as a --cost-model file.
#[derive(Debug, Args)]
#[command(after_help = MEASUREMENTS_HELP)]
pub struct CalibrateArgs {
    /// The measured times (CSV: kernel,cores,arguments,microseconds).
    pub measured: PathBuf,
    /// The library: a project folder or a package folder, as for `ncop run`.
    #[arg(short, long, default_value = ".")]
    pub lib: PathBuf,
    /// The parameters to fit, as the cost model file names them (repeat; at most as
    /// many as measured calls).
    #[arg(long = "fit", value_name = "SECTION.KEY", default_values_t = ["hbm.load_cycles".to_string(), "op.overhead_seconds".to_string()])]
    pub keys: Vec<String>,
    /// The parameters to start from and keep (default: the shipped cost model).
    #[arg(long, value_name = "FILE")]
    pub cost_model: Option<PathBuf>,
    /// Where to write the fitted parameters (a --cost-model file).
    #[arg(long, value_name = "FILE", default_value = "cost-model.toml")]
    pub out: PathBuf,
    /// The seed of generated arguments.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// One line of the measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The kernel.
    pub kernel: String,
    /// Its cores.
    pub cores: usize,
    /// Its arguments.
    pub args: Vec<ArgSpec>,
    /// The arguments as written, for reports.
    pub text: String,
    /// Seconds measured.
    pub seconds: f64,
}

/// Why the measurements could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// The file could not be read.
    #[error("cannot read the measured times {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not `kernel,cores,arguments,microseconds`.
    #[error("{path}:{line}: {message} (a line is kernel,cores,arguments,microseconds: see `ncop calibrate --help`)")]
    Line {
        /// The file.
        path: PathBuf,
        /// Its line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// The rows of the measurements file `text` (read from `path`).
///
/// # Errors
/// [`CalibrateError::Line`] naming the first bad line.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Row>, CalibrateError> {
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let bad = |message: String| CalibrateError::Line { path: path.into(), line: index + 1, message };
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() || (index == 0 && line.starts_with("kernel")) {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [kernel, cores, arguments, microseconds] = fields[..] else {
            return Err(bad(format!("{} fields where 4 are", fields.len())));
        };
        let cores = cores
            .parse::<usize>()
            .ok()
            .filter(|c| (1..=8).contains(c))
            .ok_or_else(|| bad(format!("cores `{cores}` is not 1 to 8")))?;
        let args = arguments
            .split_whitespace()
            .map(|a| a.parse::<ArgSpec>().map_err(|e| bad(format!("argument `{a}`: {e}"))))
            .collect::<Result<_, _>>()?;
        let seconds = microseconds
            .parse::<f64>()
            .ok()
            .filter(|us| *us > 0.0 && us.is_finite())
            .ok_or_else(|| bad(format!("`{microseconds}` is not a time in µs above 0")))?
            / 1e6;
        rows.push(Row { kernel: kernel.into(), cores, args, text: arguments.into(), seconds });
    }
    Ok(rows)
}

/// The fitted parameters as a `--cost-model` file: each key with its error and the
/// fit's residuals in comments.
pub fn toml(fit: &Fit) -> String {
    let mut text = String::from(
        "# Fitted by `ncop calibrate` to measured times: each value with its standard error\n\
         # (none when there were no more measurements than parameters), then each call's residual.\n",
    );
    let mut sections: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for p in &fit.parameters {
        let (section, key) = p.key.split_once('.').unwrap_or(("", &p.key));
        let error = p.error.map_or_else(|| "error not known".to_string(), |e| format!("± {e:.4e}"));
        sections.entry(section).or_default().push(format!("{key} = {:?}  # {error}", p.value));
    }
    for (section, keys) in sections {
        let _ = writeln!(text, "\n[{section}]\n{}", keys.join("\n"));
    }
    text.push_str("\n# call: measured µs, predicted µs, residual, leave-one-out µs\n");
    for f in &fit.figures {
        let loo = f.leave_one_out.map_or_else(|| "-".to_string(), |s| format!("{:.3}", s * 1e6));
        let _ = writeln!(
            text,
            "# {}: {:.3}, {:.3}, {:+.2}%, {loo}",
            f.name,
            f.measured * 1e6,
            f.predicted * 1e6,
            f.residual * 100.0
        );
    }
    text
}

/// Runs `ncop calibrate`.
pub fn exec(args: CalibrateArgs) -> super::Outcome {
    let text = std::fs::read_to_string(&args.measured)
        .map_err(|source| CalibrateError::Read { path: args.measured.clone(), source })?;
    let rows = parse(&args.measured, &text)?;
    let start = match &args.cost_model {
        Some(path) => CostModel::load(path)?,
        None => CostModel::default(),
    };
    let library = super::package::load(&args.lib, Target::Device)?;
    let mut profiles = Vec::with_capacity(rows.len());
    for row in &rows {
        let call_args = row
            .args
            .iter()
            .enumerate()
            .map(|(index, spec)| spec.read(index, args.seed))
            .collect::<Result<Vec<_>, _>>()?;
        let (dtype, shape) = library.resolve_output(&row.kernel, &call_args, PartialOutput::default(), None)?;
        let output = neuroncustomop_host::library::Output::Shape { dtype, shape };
        let options = Options { cores: row.cores, profile: true, ..Options::default() };
        let call = library.call_with(&row.kernel, &call_args, output, &options)?.check()?;
        let profile = call.profile.ok_or("the call came back without its profile")?;
        println!(
            "profiled    {} ({}) on {} core(s): {} instructions",
            row.kernel,
            row.text,
            row.cores,
            profile.instructions()
        );
        profiles.push(profile);
    }
    let names: Vec<String> = rows.iter().map(|r| format!("{} ({}, {} cores)", r.kernel, r.text, r.cores)).collect();
    let measured: Vec<Measured<'_>> = rows
        .iter()
        .zip(&profiles)
        .zip(&names)
        .map(|((row, profile), name)| Measured { name, profile, seconds: row.seconds })
        .collect();
    let keys: Vec<&str> = args.keys.iter().map(String::as_str).collect();
    let fitted = fit(&start, &keys, &measured)?;
    for p in &fitted.parameters {
        let error =
            p.error.map_or_else(|| "(error not known: no more calls than parameters)".into(), |e| format!("± {e:.4e}"));
        println!("fitted      {} = {:.6e} {error}", p.key, p.value);
    }
    for f in &fitted.figures {
        let loo = f.leave_one_out.map_or_else(|| "not known".into(), |s| format!("{:.3} µs", s * 1e6));
        println!(
            "  {}: measured {:.3} µs, predicted {:.3} µs ({:+.2}%), fitted without it {loo}",
            f.name,
            f.measured * 1e6,
            f.predicted * 1e6,
            f.residual * 100.0
        );
    }
    std::fs::write(&args.out, toml(&fitted))?;
    println!(
        "wrote       {} (use it with `ncop run --profile DIR --cost-model {}`)",
        args.out.display(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measurements_parse_and_a_bad_line_is_named() {
        let text = "kernel,cores,arguments,microseconds\n# a comment\nrelu,8,gen:float32:2x4 int:3,12.5\n";
        let rows = parse(Path::new("m.csv"), text).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].kernel.as_str(), rows[0].cores, rows[0].args.len()), ("relu", 8, 2));
        assert!((rows[0].seconds - 12.5e-6).abs() < 1e-15);
        let error = parse(Path::new("m.csv"), "relu,1,int:3,-1\n").unwrap_err().to_string();
        assert!(error.starts_with("m.csv:1: `-1` is not a time"), "{error}");
        let error = parse(Path::new("m.csv"), "relu,1,int:3\n").unwrap_err().to_string();
        assert!(error.contains("3 fields where 4 are"), "{error}");
    }

    #[test]
    fn the_written_file_is_a_cost_model_with_the_fitted_values() {
        use neuroncustomop_profile::profile::{Accesses, CoreProfile, Profile, Region};
        let profile = |instructions, hbm| Profile {
            kernel: "k".into(),
            cores: vec![CoreProfile {
                instructions,
                memory: [(Region::Hbm, Accesses { loads: hbm, stores: 0 })].into(),
                ..CoreProfile::default()
            }],
        };
        let truth =
            CostModel::default().with("hbm.load_cycles", 250.0).unwrap().with("op.overhead_seconds", 1e-5).unwrap();
        let profiles = [profile(1000, 100), profile(5000, 0), profile(100, 400)];
        let measured: Vec<Measured<'_>> =
            profiles.iter().map(|p| Measured { name: "k", profile: p, seconds: truth.predict(p).seconds }).collect();
        let fitted = fit(&CostModel::default(), &["hbm.load_cycles", "op.overhead_seconds"], &measured).unwrap();
        let written = CostModel::from_toml(&toml(&fitted), "written").unwrap();
        assert!((written.hbm.load_cycles - 250.0).abs() < 1e-6, "{written:?}");
        assert!((written.op.overhead_seconds - 1e-5).abs() < 1e-12, "{written:?}");
    }
}
