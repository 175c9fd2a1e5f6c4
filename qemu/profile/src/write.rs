//! A profile as files: the folded stacks, a flame graph SVG of them (the `inferno`
//! crate), the op in device time in Chrome's trace event format (which Perfetto and
//! `chrome://tracing` open), the annotated source and disassembly, and the profile.

use crate::annotate;
use crate::cost::CostModel;
use crate::profile::{CoreProfile, Profile};
use crate::timeline::Span;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The folded stacks: one line per core and call path, `core_N;outer;…;inner COUNT`
/// (Brendan Gregg's format, which `inferno` and `flamegraph.pl` read).
pub fn folded(profile: &Profile) -> String {
    let mut text = String::new();
    for core in &profile.cores {
        for stack in &core.stacks {
            // `;` separates frames, so it may not appear in a name; the count is after the
            // line's last space (inferno and flamegraph.pl read it so), so a name keeps
            // its spaces (`<T as Trait>::f`).
            let frames: Vec<String> = stack.frames.iter().map(|f| f.replace(';', "_")).collect();
            text += &format!("core_{};{} {}\n", core.core, frames.join(";"), stack.instructions);
        }
    }
    text
}

/// The flame graph of the folded stacks, as SVG.
///
/// # Errors
/// `inferno` found no stack to draw.
pub fn flame_svg(profile: &Profile) -> io::Result<Vec<u8>> {
    let folded = folded(profile);
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!("{}: instructions per call path", profile.kernel);
    options.count_name = "instructions".into();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut svg)?;
    Ok(svg)
}

/// Of each function's own instructions, the share of each function inlined into it
/// (its first inlined frame at each PC, from the DWARF): what a function span holds
/// that no call shows.
fn inlined_shares(core: &CoreProfile) -> BTreeMap<&str, BTreeMap<&str, f64>> {
    let mut counts: BTreeMap<&str, (u64, BTreeMap<&str, u64>)> = BTreeMap::new();
    for pc in &core.pcs {
        let Some(function) = pc.frames.first() else { continue };
        let entry = counts.entry(function).or_default();
        entry.0 += pc.executed;
        if let Some(inlined) = pc.frames.get(1) {
            *entry.1.entry(inlined).or_default() += pc.executed;
        }
    }
    counts
        .into_iter()
        .filter(|(_, (_, inlined))| !inlined.is_empty())
        .map(|(function, (own, inlined))| {
            let shares = inlined.into_iter().map(|(name, n)| (name, n as f64 / own.max(1) as f64)).collect();
            (function, shares)
        })
        .collect()
}

/// The op in device time ([`crate::timeline`]) in Chrome's trace event format (the
/// JSON object form), which Perfetto and `chrome://tracing` open alike, as complete
/// (`X`) events, in microseconds of the device at `clock.hz` from the op's start. The
/// host's clock is not used. Per core:
/// - its thread: the op, each wait for the DMA engine, and inside the op a span for
///   each call as it ran, nested as the calls were (down to the depth the plugin kept:
///   `CoreProfile::calls_depth`), with the share of each function inlined into it in
///   its `args` (inlined code runs interleaved with its caller's: it has no span);
/// - its DMA lane: each transfer from queued to done;
/// - a lane per author's range it passed through: each pass from begin to end.
///
/// Spans fall where their instructions do on the core's clock ([`crate::timeline::Clock`]):
/// a call lasts its instructions at the core's mean cycles per busy instruction, plus
/// the waits for the DMA engine inside it.
pub fn trace_json(profile: &Profile, model: &CostModel) -> Value {
    let us = |cycles: f64| cycles / model.clock.hz * 1e6;
    let mut events = vec![json!({"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
        "args": {"name": format!("{} (device time predicted by the cost model)", profile.kernel)}})];
    let lanes = profile.cores.len() as u32;
    let range_names: Vec<&str> = {
        let mut names: Vec<&str> =
            profile.cores.iter().flat_map(|c| c.ranges.iter().map(|r| r.name.as_str())).collect();
        names.sort_unstable();
        names.dedup();
        names
    };
    for (core, timeline) in profile.cores.iter().zip(model.timelines(profile)) {
        let (tid, lane) = (core.core, lanes + core.core);
        events.push(json!({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid,
            "args": {"name": format!("core {}", core.core)}}));
        events.push(json!({"name": "thread_name", "ph": "M", "pid": 0, "tid": lane,
            "args": {"name": format!("DMA lane of core {}", core.core)}}));
        let span = |name: String, category: &str, tid: u32, span: &Span, args: Value| {
            json!({"name": name, "cat": category, "ph": "X", "pid": 0, "tid": tid,
                "ts": us(span.start), "dur": us(span.cycles), "args": args})
        };
        events.push(span(
            profile.kernel.clone(),
            "op",
            tid,
            &timeline.op,
            json!({"cycles": timeline.op.cycles, "instructions": core.instructions, "waiting_instructions": core.waiting}),
        ));
        for wait in &timeline.waits {
            events.push(span("wait for DMA".into(), "wait", tid, wait, json!({"cycles": wait.cycles})));
        }
        for transfer in &timeline.transfers {
            events.push(span(
                format!("DMA {} B", transfer.bytes),
                "dma",
                lane,
                transfer,
                json!({"bytes": transfer.bytes, "cycles": transfer.cycles}),
            ));
        }
        let clock = &timeline.clock;
        let inlined = inlined_shares(core);
        for call in &core.calls {
            let (from, to) = (call.start as f64, (call.start + call.instructions) as f64);
            let (from, to) = (clock.outside_waits(from), clock.outside_waits(to));
            if to <= from {
                // All of it inside one wait: the wait's own calls (its sleep).
                continue;
            }
            let (start, end) = (clock.cycles_at(from), clock.cycles_at(to));
            let mut args = json!({"instructions": call.instructions, "depth": call.depth, "cycles": end - start});
            if let Some(shares) = inlined.get(call.name.as_str()) {
                args["inlined (share of its own instructions)"] = json!(shares);
            }
            events.push(span(call.name.clone(), "function", tid, &Span { start, cycles: end - start, bytes: 0 }, args));
        }
        for (index, name) in range_names.iter().enumerate() {
            let passes: Vec<_> = core.ranges.iter().filter(|pass| pass.name == *name).collect();
            if passes.is_empty() {
                continue;
            }
            let tid = 2 * lanes + index as u32 * lanes + core.core;
            events.push(json!({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid,
                "args": {"name": format!("core {}: range {name}", core.core)}}));
            for pass in passes {
                let (start, end) =
                    (clock.cycles_at(pass.start as f64), clock.cycles_at((pass.start + pass.instructions) as f64));
                let args = json!({"instructions": pass.instructions, "cycles": end - start, "unclosed": pass.unclosed});
                events.push(span(name.to_string(), "range", tid, &Span { start, cycles: end - start, bytes: 0 }, args));
            }
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ns"})
}

/// The files `ncop run --profile DIR` writes, in `dir`.
#[derive(Debug, Clone)]
pub struct Written {
    /// `flame.svg`.
    pub flame: PathBuf,
    /// `stacks.folded`.
    pub folded: PathBuf,
    /// `trace.json`.
    pub trace: PathBuf,
    /// `source.txt`: the annotated source ([`annotate::source`]).
    pub source: PathBuf,
    /// `annotate.txt`: the annotated disassembly ([`annotate::disassembly`]).
    pub disassembly: PathBuf,
    /// `profile.json`: the whole profile, typed as [`Profile`].
    pub profile: PathBuf,
}

/// Writes the flame graph, the folded stacks, the trace, the annotated source and
/// disassembly and the profile itself into `dir` (made if missing), priced by `model`.
///
/// # Errors
/// The folder or a file cannot be written.
pub fn write(profile: &Profile, model: &CostModel, dir: &Path) -> io::Result<Written> {
    fs::create_dir_all(dir)?;
    let written = Written {
        flame: dir.join("flame.svg"),
        folded: dir.join("stacks.folded"),
        trace: dir.join("trace.json"),
        source: dir.join("source.txt"),
        disassembly: dir.join("annotate.txt"),
        profile: dir.join("profile.json"),
    };
    fs::write(&written.folded, folded(profile))?;
    fs::write(&written.flame, flame_svg(profile)?)?;
    fs::write(&written.trace, serde_json::to_vec(&trace_json(profile, model))?)?;
    fs::write(&written.source, annotate::source(profile, model))?;
    fs::write(&written.disassembly, annotate::disassembly(profile))?;
    // Its line table priced by the model the files use.
    let mut priced = profile.clone();
    annotate::price(&mut priced, model);
    fs::write(&written.profile, serde_json::to_vec_pretty(&priced)?)?;
    Ok(written)
}

/// Why a profile folder could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// It holds no readable profile.json.
    #[error("cannot read {path} (a folder `ncop run KERNEL --profile DIR` wrote holds profile.json)")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Its profile.json is not a profile of this version.
    #[error("{path} is not a profile this version wrote (profile the call again)")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
}

/// The profile [`write()`] wrote into `dir` (its profile.json).
///
/// # Errors
/// [`ReadError`].
pub fn read(dir: &Path) -> Result<Profile, ReadError> {
    let path = dir.join("profile.json");
    let text = fs::read(&path).map_err(|source| ReadError::Read { path: path.clone(), source })?;
    serde_json::from_slice(&text).map_err(|source| ReadError::Parse { path, source })
}
