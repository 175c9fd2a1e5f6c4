//! A core's op in device time: the cost model's cycles laid along what the core did, in
//! the order the plugin saw it, with its DMA engine lane beside it. The host's clock
//! plays no part.
//!
//! - The core's busy cycles ([`crate::cost`]) advance its clock evenly over its busy
//!   instructions (the plugin's events say at which instruction each happened; what
//!   ran between two events is priced at the core's mean cycles per instruction).
//! - Its DMA transfers queue on its lane when the core writes their descriptors, and
//!   stream one after another at the model's bandwidth; each is done `dma.latency_cycles`
//!   after its bytes started moving.
//! - The runtime waits for each copy before going on (`Queues::copy` waits for every
//!   batch it queued): transfers queued within [`BATCH_GAP`] busy instructions of each
//!   other are one batch, and after a batch's last the core idles until the batch is
//!   done. The wait's own instructions ([`crate::profile::Instruction::waiting`]) are
//!   not work: they are taken out of the positions, an equal part after each batch.
//! - Anything else the plugin saw at an instruction (a function's call and return, an
//!   author's range marker) falls where that instruction does on the same clock
//!   ([`Clock`]), so the function spans and ranges nest in the op as they ran, and a
//!   span lasts its instructions at the core's mean busy cycles per instruction, plus
//!   the waits inside it.

use crate::cost::{CorePrediction, CostModel, Prediction};
use crate::profile::{CoreProfile, EventKind, Profile};
use serde::Serialize;

/// Transfers queued at most this many instructions apart belong to one copy: the
/// runtime writes a batch's descriptors back to back (about 20 instructions each).
pub const BATCH_GAP: u64 = 200;

/// One span of a timeline, in device cycles from the core's op start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Span {
    /// Where it starts.
    pub start: f64,
    /// How long it lasts.
    pub cycles: f64,
    /// A transfer's bytes (0 for other spans).
    pub bytes: u64,
}

impl Span {
    /// Where it ends.
    pub fn end(&self) -> f64 {
        self.start + self.cycles
    }
}

/// One wait on a core's [`Clock`]: the instructions it stands for and its device time.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Wait {
    /// Its first instruction (the batch's last transfer queued) and how many it holds.
    from: f64,
    instructions: f64,
    /// Where it starts in cycles, and its idle cycles (0 when the batch was done).
    start: f64,
    cycles: f64,
}

/// Where each instruction of a core's op falls in device time: the busy instructions
/// at the core's mean cycles per busy instruction, each batch's wait instructions
/// spread over the wait.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Clock {
    per_instruction: f64,
    busy_instructions: f64,
    waits: Vec<Wait>,
}

impl Clock {
    /// Cycles from the op's start to the core's `instruction`-th (instructions since
    /// the op's start, as the plugin counts them).
    pub fn cycles_at(&self, instruction: f64) -> f64 {
        let (mut removed, mut idle) = (0.0, 0.0);
        for wait in &self.waits {
            if instruction <= wait.from {
                break;
            }
            if instruction < wait.from + wait.instructions {
                return wait.start + wait.cycles * (instruction - wait.from) / wait.instructions;
            }
            removed += wait.instructions;
            idle += wait.cycles;
        }
        (instruction - removed).clamp(0.0, self.busy_instructions) * self.per_instruction + idle
    }

    /// `instruction`, or the end of the wait it falls inside: a span that starts or
    /// ends inside a wait is taken to contain it or to follow it, so the waits and the
    /// spans nest (the wait's instructions are placed after its batch as a block, not
    /// where each ran).
    pub fn outside_waits(&self, instruction: f64) -> f64 {
        self.waits
            .iter()
            .find(|w| instruction > w.from && instruction < w.from + w.instructions)
            .map_or(instruction, |w| w.from + w.instructions)
    }
}

/// One core's op in device time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    /// The core.
    pub core: u32,
    /// The op, from the kernel's call to its return: busy cycles and waits.
    pub op: Span,
    /// Each wait for the DMA engine, the core idle.
    pub waits: Vec<Span>,
    /// Each transfer on the core's DMA lane, from queued to done.
    pub transfers: Vec<Span>,
    /// Where each instruction falls.
    #[serde(skip)]
    pub clock: Clock,
}

impl Timeline {
    /// Cycles the core waited for the DMA engine.
    pub fn idle(&self) -> f64 {
        // A fold from +0.0, not `sum()`, whose empty sum is -0.0 (printed "-0 waiting").
        self.waits.iter().fold(0.0, |idle, w| idle + w.cycles)
    }
}

/// The timeline of `profile`'s core, whose busy terms the model priced at `busy`
/// cycles, on an op that ran on `cores` cores at once.
pub fn core(model: &CostModel, profile: &CoreProfile, busy: f64, cores: usize) -> Timeline {
    let busy_instructions = profile.instructions.saturating_sub(profile.waiting);
    let per_instruction = if busy_instructions > 0 { busy / busy_instructions as f64 } else { 0.0 };
    let rate = model.dma_bytes_per_cycle(cores);
    let transfers: Vec<(u64, u64)> =
        profile.events.iter().filter(|e| e.kind == EventKind::Dma).map(|e| (e.instruction, e.bytes)).collect();
    // Batches: runs of transfers queued close together (by the instructions the plugin saw).
    let mut batches: Vec<&[(u64, u64)]> = Vec::new();
    let mut first = 0;
    for i in 1..=transfers.len() {
        if i == transfers.len() || transfers[i].0.saturating_sub(transfers[i - 1].0) > BATCH_GAP {
            batches.push(&transfers[first..i]);
            first = i;
        }
    }
    let wait_per_batch = if batches.is_empty() { 0.0 } else { profile.waiting as f64 / batches.len() as f64 };
    let (mut idle, mut lane_free) = (0.0, 0.0);
    // Each batch's wait takes the mean waiting instructions, but never reaches the next
    // batch's first transfer: a batch that waited less than the mean, with little work
    // before the next, would otherwise put the next wait inside its own (two waits, and
    // the calls around them, across each other on one thread).
    let windows: Vec<f64> = batches
        .iter()
        .enumerate()
        .map(|(k, batch)| {
            let last = batch.last().map_or(0, |t| t.0);
            batches.get(k + 1).map_or(wait_per_batch, |next| wait_per_batch.min((next[0].0 - last) as f64))
        })
        .collect();
    let mut removed = 0.0;
    let (mut waits, mut spans, mut clock_waits) = (Vec::new(), Vec::new(), Vec::new());
    for (batch, &window) in batches.iter().zip(&windows) {
        // Busy instructions before `at`: the waits of the batches before it are not.
        let busy_at = |at: u64| ((at as f64) - removed).clamp(0.0, busy_instructions as f64);
        let mut done: f64 = 0.0;
        for &(at, bytes) in *batch {
            let queued = busy_at(at) * per_instruction + idle;
            let start = queued.max(lane_free);
            let streaming = bytes as f64 / rate;
            lane_free = start + streaming;
            let end = lane_free + model.dma.latency_cycles;
            spans.push(Span { start: queued, cycles: end - queued, bytes });
            done = done.max(end);
        }
        let last = batch.last().map_or(0, |t| t.0);
        let waiting_from = busy_at(last) * per_instruction + idle;
        let cycles = (done - waiting_from).max(0.0);
        clock_waits.push(Wait { from: last as f64, instructions: window, start: waiting_from, cycles });
        if cycles > 0.0 {
            waits.push(Span { start: waiting_from, cycles, bytes: 0 });
            idle += cycles;
        }
        removed += window;
    }
    let clock = Clock { per_instruction, busy_instructions: busy_instructions as f64, waits: clock_waits };
    let op = Span { start: 0.0, cycles: busy + idle, bytes: 0 };
    Timeline { core: profile.core, op, waits, transfers: spans, clock }
}

/// The cost model's predictions, made here because they are the timeline's sums: one
/// core's busy cycles plus its waits for the DMA engine.
impl CostModel {
    /// The prediction for one core of an op that ran on `cores` cores at once, with
    /// its device-time timeline.
    pub fn core(&self, profile: &CoreProfile, cores: usize) -> (CorePrediction, Timeline) {
        let mut terms = self.busy(profile);
        let busy = terms.compute + terms.local_memory + terms.hbm + terms.stores;
        let timeline = core(self, profile, busy, cores);
        terms.dma = timeline.idle();
        let cycles = busy + terms.dma;
        let prediction =
            CorePrediction { core: profile.core, cycles, seconds: cycles / self.clock.hz, bound: terms.bound(), terms };
        (prediction, timeline)
    }

    /// The prediction for an op: each core's, the slowest, and the iteration's time.
    pub fn predict(&self, profile: &Profile) -> Prediction {
        let cores: Vec<CorePrediction> = profile.cores.iter().map(|c| self.core(c, profile.cores.len()).0).collect();
        let slowest = cores.iter().max_by(|a, b| a.cycles.total_cmp(&b.cycles)).cloned();
        let seconds = slowest.as_ref().map_or(0.0, |s| s.seconds) + self.op.overhead_seconds;
        Prediction { cores, slowest, seconds }
    }

    /// Each core's device-time timeline.
    pub fn timelines(&self, profile: &Profile) -> Vec<Timeline> {
        profile.cores.iter().map(|c| self.core(c, profile.cores.len()).1).collect()
    }
}

/// One author's range over every core: its passes, their instructions and device time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RangeRow {
    /// The range's name.
    pub name: String,
    /// Passes through it, all cores.
    pub passes: usize,
    /// Cores that passed through it.
    pub cores: usize,
    /// Of the passes, those the op's end closed (no end marker reached).
    pub unclosed: usize,
    /// Instructions of its passes, the functions called included, all cores.
    pub instructions: u64,
    /// Their predicted device cycles on each core's [`Clock`], summed over the cores.
    pub cycles: f64,
}

impl CostModel {
    /// Each author's range of `profile` ([`crate::profile::CoreProfile::ranges`]), by name.
    pub fn ranges(&self, profile: &Profile) -> Vec<RangeRow> {
        let mut rows: Vec<RangeRow> = Vec::new();
        for (core, timeline) in profile.cores.iter().zip(self.timelines(profile)) {
            for pass in &core.ranges {
                let at = |instruction: u64| timeline.clock.cycles_at(instruction as f64);
                let cycles = at(pass.start + pass.instructions) - at(pass.start);
                let index = match rows.iter().position(|row| row.name == pass.name) {
                    Some(index) => index,
                    None => {
                        rows.push(RangeRow {
                            name: pass.name.clone(),
                            passes: 0,
                            cores: 0,
                            unclosed: 0,
                            instructions: 0,
                            cycles: 0.0,
                        });
                        rows.len() - 1
                    }
                };
                let row = &mut rows[index];
                row.passes += 1;
                row.unclosed += usize::from(pass.unclosed);
                row.instructions += pass.instructions;
                row.cycles += cycles;
            }
            for row in &mut rows {
                row.cores += usize::from(core.ranges.iter().any(|pass| pass.name == row.name));
            }
        }
        rows.sort_by(|a, b| b.cycles.total_cmp(&a.cycles).then_with(|| a.name.cmp(&b.name)));
        rows
    }
}
