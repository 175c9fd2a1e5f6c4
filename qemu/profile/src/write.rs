//! A profile as files: the folded stacks, a flame graph SVG of them (the `inferno`
//! crate), and a per-core timeline in Chrome's trace event format, which Perfetto and
//! `chrome://tracing` open.

use crate::profile::{EventKind, Profile};
use serde_json::{Value, json};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The folded stacks: one line per core and call path, `core_N;outer;…;inner COUNT`
/// (Brendan Gregg's format, which `inferno` and `flamegraph.pl` read).
pub fn folded(profile: &Profile) -> String {
    let mut text = String::new();
    for core in &profile.cores {
        for stack in &core.stacks {
            // `;` separates frames and a space ends them: neither may appear in a name.
            let frames: Vec<String> = stack.frames.iter().map(|f| f.replace([';', ' '], "_")).collect();
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

/// The timeline in Chrome's trace event format (the JSON object form): one thread per
/// core; the op, each wait and each DMA transfer as complete (`X`) events. Times are
/// the simulation's host clock in microseconds from the first op's start: what QEMU
/// took, not what the device would (the cost model predicts that).
pub fn trace_json(profile: &Profile) -> Value {
    let mut events = vec![json!({"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
        "args": {"name": format!("{} (simulated)", profile.kernel)}})];
    for core in &profile.cores {
        events.push(json!({"name": "thread_name", "ph": "M", "pid": 0, "tid": core.core,
            "args": {"name": format!("core {}", core.core)}}));
        for event in &core.events {
            let name = match event.kind {
                EventKind::Op => profile.kernel.clone(),
                EventKind::Wait => "wait".into(),
                EventKind::Dma => format!("DMA {} B", event.bytes),
            };
            let category = match event.kind {
                EventKind::Op => "op",
                EventKind::Wait => "wait",
                EventKind::Dma => "dma",
            };
            events.push(json!({
                "name": name, "cat": category, "ph": "X", "pid": 0, "tid": core.core,
                "ts": event.start_ns as f64 / 1000.0, "dur": event.duration_ns as f64 / 1000.0,
                "args": {"instruction": event.instruction, "bytes": event.bytes},
            }));
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
    /// `profile.json`: the whole profile, typed as [`Profile`].
    pub profile: PathBuf,
}

/// Writes the flame graph, the folded stacks, the trace and the profile itself into `dir`
/// (made if missing).
///
/// # Errors
/// The folder or a file cannot be written.
pub fn write(profile: &Profile, dir: &Path) -> io::Result<Written> {
    fs::create_dir_all(dir)?;
    let written = Written {
        flame: dir.join("flame.svg"),
        folded: dir.join("stacks.folded"),
        trace: dir.join("trace.json"),
        profile: dir.join("profile.json"),
    };
    fs::write(&written.folded, folded(profile))?;
    fs::write(&written.flame, flame_svg(profile)?)?;
    fs::write(&written.trace, serde_json::to_vec(&trace_json(profile))?)?;
    fs::write(&written.profile, serde_json::to_vec_pretty(profile)?)?;
    Ok(written)
}
