//! The profile's views: the summary `ncop run --profile DIR` prints after writing the
//! files, and `ncop profile diff A B`, which compares two of those folders.

use clap::{Args, Subcommand};
use neuroncustomop_profile::cost::CostModel;
use neuroncustomop_profile::diff::{Delta, diff, flame_svg, folded_diff};
use neuroncustomop_profile::mix::Class;
use neuroncustomop_profile::profile::{Hot, Profile, Region};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Hot functions the summary lists.
const TOP_FUNCTIONS: usize = 5;
/// Hot lines the summary lists.
const TOP_LINES: usize = 10;

/// Prints the summary of a profile whose files are in `dir`: the top functions with
/// what they call and by their own instructions, the 10 hottest source lines, the
/// instruction mix, memory by region, and the cost model's prediction in device time.
pub fn summarize(profile: &Profile, model: &CostModel, dir: &Path) {
    let mut profile = profile.clone();
    neuroncustomop_profile::annotate::price(&mut profile, model);
    println!(
        "  profile     {}: flame.svg, stacks.folded, trace.json (device time; Perfetto), source.txt, annotate.txt, \
         profile.json",
        dir.display()
    );
    // Shares are of all cores' instructions; `max(1)` keeps an empty run's at 0%.
    let total = profile.instructions().max(1) as f64;
    print_hot_functions(&profile);
    print_hot_lines(&profile, total);
    print_dropped(&profile);
    print_ranges(&profile, model, total);
    print_mix(&profile, total);
    print_memory(&profile);
    print_prediction(&profile, model);
}

/// Where the time goes first: a function with all it called (`expf` with its
/// soft-float calls), then the code that runs most itself (a helper `expf` inlined).
fn print_hot_functions(profile: &Profile) {
    let rows = |top: Vec<Hot>| {
        for (rank, hot) in top.iter().enumerate() {
            println!("    {:>2}. {:>5.1}%  {:>12}  {}", rank + 1, hot.share * 100.0, hot.instructions, hot.name);
        }
    };
    let inclusive = profile.top_inclusive(TOP_FUNCTIONS);
    if inclusive.is_empty() {
        println!("  top {TOP_FUNCTIONS} with what they call: none, the kernel calls no function");
    } else {
        println!("  top {TOP_FUNCTIONS} functions with what they call and inline (inclusive), all cores:");
        rows(inclusive);
    }
    println!("  top {TOP_FUNCTIONS} functions by their own instructions, all cores:");
    rows(profile.top(TOP_FUNCTIONS));
}

/// The hottest source lines, priced (the full list is source.txt's).
fn print_hot_lines(profile: &Profile, total: f64) {
    println!("  top {TOP_LINES} source lines, all cores (instructions, predicted cycles; source.txt has every line):");
    for (rank, line) in profile.lines().iter().take(TOP_LINES).enumerate() {
        println!(
            "    {:>2}. {:>5.1}%  {:>12}  {:>12.0} cycles  {}:{}  {}",
            rank + 1,
            line.instructions as f64 / total * 100.0,
            line.instructions,
            line.cycles,
            line.file,
            line.line,
            line.function
        );
    }
}

/// What the trace could not keep: the plugin's limits (events, markers, calls). Said
/// only when something was dropped, so a complete trace's summary stays short.
fn print_dropped(profile: &Profile) {
    let (dropped, calls_dropped) =
        profile.cores.iter().fold((0, 0), |(e, c), core| (e + core.dropped_events, c + core.calls_dropped));
    if dropped > 0 {
        println!(
            "  dropped     {dropped} timeline events and range markers past the plugin's limit for one core: \
             the trace ends early for them, and a range open then runs to the op's end"
        );
    }
    if calls_dropped > 0 {
        let depth = profile.cores.iter().map(|c| c.calls_depth).min().unwrap_or(0);
        println!(
            "  calls       {calls_dropped} calls deeper than {depth} frames left out of the trace (too many to keep)"
        );
    }
}

/// The author's range markers, each priced; nothing when the kernel marks none.
fn print_ranges(profile: &Profile, model: &CostModel, total: f64) {
    let ranges = model.ranges(profile);
    if ranges.is_empty() {
        return;
    }
    println!("  the author's ranges (range markers), all cores (instructions and predicted cycles, callees included):");
    for row in &ranges {
        let unclosed =
            if row.unclosed > 0 { format!(" ({} not closed: to the op's end)", row.unclosed) } else { String::new() };
        println!(
            "    {:>5.1}%  {:>12}  {:>12.0} cycles  {:>10.3} µs  {} pass(es) on {} core(s)  {}{unclosed}",
            row.instructions as f64 / total * 100.0,
            row.instructions,
            row.cycles,
            row.cycles / model.clock.hz * 1e6,
            row.passes,
            row.cores,
            row.name
        );
    }
}

/// The instruction mix by class, then where the instructions ran (runtime, libm,
/// waiting for DMA).
fn print_mix(profile: &Profile, total: f64) {
    let mix: Vec<String> = Class::ALL
        .iter()
        .map(|&class| {
            let n: u64 = profile.cores.iter().map(|c| c.mix.get(&class).copied().unwrap_or(0)).sum();
            format!("{} {:.1}%", class.name(), n as f64 / total * 100.0)
        })
        .collect();
    println!("  mix         {}", mix.join(", "));
    let (runtime, libm, waiting) =
        profile.cores.iter().fold((0, 0, 0), |a, c| (a.0 + c.in_runtime, a.1 + c.in_libm, a.2 + c.waiting));
    println!(
        "              in the runtime {:.1}%, in libm {:.1}%, waiting for DMA {:.1}% (idle to the cost model)",
        runtime as f64 / total * 100.0,
        libm as f64 / total * 100.0,
        waiting as f64 / total * 100.0
    );
}

/// Loads and stores by memory region (the regions touched only), and the DMA traffic.
fn print_memory(profile: &Profile) {
    let regions: Vec<String> = Region::ALL
        .iter()
        .filter_map(|&region| {
            let (loads, stores) = profile.cores.iter().fold((0, 0), |(l, s), c| {
                let a = c.accesses(region);
                (l + a.loads, s + a.stores)
            });
            (loads + stores > 0).then(|| format!("{} {loads} loads {stores} stores", region.name()))
        })
        .collect();
    println!("  memory      {}", regions.join("; "));
    let (bytes, transfers) = profile.cores.iter().fold((0, 0), |(b, t), c| (b + c.dma_bytes, t + c.dma_transfers));
    println!("  DMA         {bytes} bytes in {transfers} transfers");
}

/// The cost model's device time: the slowest core's, which bounds the op, and with
/// the framework's overhead when the model has one.
fn print_prediction(profile: &Profile, model: &CostModel) {
    let prediction = model.predict(profile);
    let Some(slowest) = &prediction.slowest else { return };
    println!(
        "  predicted   {:.3} µs on the device: core {} {:.0} cycles at {:.2} GHz ({:.0} waiting for DMA), bound by {} \
         (cost model; docs/cost-model.md says its error and what it cannot know)",
        slowest.seconds * 1e6,
        slowest.core,
        slowest.cycles,
        model.clock.hz / 1e9,
        slowest.terms.dma,
        slowest.bound.name()
    );
    if model.op.overhead_seconds > 0.0 {
        println!(
            "              {:.3} µs an iteration with the framework's {:.3} µs around it (op.overhead_seconds)",
            prediction.seconds * 1e6,
            model.op.overhead_seconds * 1e6
        );
    }
}

/// Compare the profiles `ncop run --profile` wrote.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// What to do with them.
    #[command(subcommand)]
    pub command: ProfileCommand,
}

/// `ncop profile`'s commands.
#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// Compare two profiles of one kernel, before and after an edit: per-function and
    /// per-line changes in instructions, and a differential flame graph (red where the
    /// second spends more, blue where less) with its folded stacks.
    Diff(DiffArgs),
}

/// `ncop profile diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first profile's folder (`ncop run --profile BEFORE`).
    pub before: PathBuf,
    /// The second's (`ncop run --profile AFTER`).
    pub after: PathBuf,
    /// Where to write diff.svg and diff.folded (default: AFTER).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Rows of each table.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
}

/// Runs `ncop profile`.
pub fn exec(args: ProfileArgs) -> super::Outcome {
    match args.command {
        ProfileCommand::Diff(args) => exec_diff(&args),
    }
}

/// Prints one table of changes.
fn table(what: &str, deltas: &[Delta], top: usize, total: u64) {
    if deltas.is_empty() {
        println!("  {what}: no change");
        return;
    }
    println!("  {what}, largest change first ({} changed):", deltas.len());
    for delta in deltas.iter().take(top) {
        println!(
            "    {:>+12}  {:>+6.1}% of before   {:>12} -> {:<12}  {}",
            delta.change(),
            delta.change() as f64 / total.max(1) as f64 * 100.0,
            delta.before,
            delta.after,
            delta.name
        );
    }
}

fn exec_diff(args: &DiffArgs) -> super::Outcome {
    let (before, after) =
        (neuroncustomop_profile::write::read(&args.before)?, neuroncustomop_profile::write::read(&args.after)?);
    let d = diff(&before, &after);
    let change = d.total.change() as f64 / d.total.before.max(1) as f64 * 100.0;
    println!(
        "{} ({}) -> {} ({}): {} -> {} instructions, all cores ({change:+.1}%)",
        before.kernel,
        args.before.display(),
        after.kernel,
        args.after.display(),
        d.total.before,
        d.total.after
    );
    let model = CostModel::default();
    let seconds = |p: &Profile| model.predict(p).slowest.map_or(0.0, |s| s.seconds * 1e6);
    println!(
        "  predicted   {:.3} µs -> {:.3} µs on the device (the shipped cost model)",
        seconds(&before),
        seconds(&after)
    );
    table("functions (own instructions, inlined ones under their names)", &d.functions, args.top, d.total.before);
    table("source lines", &d.lines, args.top, d.total.before);
    let out = args.out.as_deref().unwrap_or(&args.after);
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("diff.folded"), folded_diff(&before, &after)?)?;
    std::fs::write(out.join("diff.svg"), flame_svg(&before, &after)?)?;
    println!("  wrote       {}: diff.svg (red: more after, blue: fewer), diff.folded", out.display());
    Ok(ExitCode::SUCCESS)
}
