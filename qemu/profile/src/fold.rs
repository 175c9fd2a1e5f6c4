//! Folding the plugin's raw lines into a [`Profile`]: each PC looked up once in the
//! images (its inline chain, its disassembly), a path's instructions shared among its
//! inlined frames, the waits for the DMA engine marked, and the line table priced.
//!
//! It sits above [`crate::profile`] (the typed profile), [`crate::annotate`] (the
//! images' disassembly and the line table) and [`crate::cost`] (the model that prices
//! it), so that none of those imports another in a circle.

use crate::annotate::Disassembly;
use crate::cost::CostModel;
use crate::lines::{self, RawCore};
use crate::mix::Class;
use crate::profile::{
    Accesses, Call, CoreProfile, Event, EventKind, Function, Instruction, Output, Profile, ProfileError, RangePass,
    Region, Stack, inclusive,
};
use neuroncustomop_machine::ranges::{self, Kind};
use neuroncustomop_machine::symbolize::{Place, Symbolizer};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Loads and stores per region, from per-page figures.
fn regions(pages: &BTreeMap<u8, (u64, u64)>) -> BTreeMap<Region, Accesses> {
    let mut memory: BTreeMap<Region, Accesses> = BTreeMap::new();
    for (&page, &(loads, stores)) in pages {
        let region = memory.entry(Region::of(page)).or_default();
        region.loads += loads;
        region.stores += stores;
    }
    memory
}

/// Whether an instruction with the inline chain `frames` waits for the DMA engine.
fn is_wait(frames: &[String]) -> bool {
    frames.iter().any(|f| WAITS.iter().any(|w| f.ends_with(w)))
}

/// Marks as waits the whole of each wait loop inlined into a function: from a wait's
/// backward jump (`j ADDR`) to its target, the loop's head, which the DWARF gives to
/// the enclosing function only.
fn wait_loops(pcs: &mut [Instruction]) {
    let mut loops = Vec::new();
    for pc in pcs.iter().filter(|pc| pc.waiting > 0) {
        let target =
            pc.text.as_deref().and_then(|t| t.strip_prefix("j 0x")).and_then(|a| u32::from_str_radix(a, 16).ok());
        if let Some(target) = target.filter(|&t| t < pc.pc) {
            loops.push((target..=pc.pc, pc.frames.first().cloned()));
        }
    }
    for pc in pcs.iter_mut() {
        if loops.iter().any(|(range, function)| range.contains(&pc.pc) && pc.frames.first() == function.as_ref()) {
            pc.waiting = pc.executed;
        }
    }
}

/// Gives the waits their share of the window overflow and underflow handlers' runs:
/// a handler runs inside the frame that caused it, so a call path whose innermost
/// function waits (`xtensa_wait_for_interrupt`) ran, besides that function's own
/// instructions and the vector that woke it, the handlers its calls and returns
/// caused. That many of the handlers' runs are waits, shared over their PCs.
fn window_handlers_in_waits(pcs: &mut [Instruction], paths: &[(Vec<String>, u64)]) {
    let handler = |pc: &Instruction| pc.frames.first().is_some_and(|f| f.starts_with("_Window"));
    let mut in_waits: u64 = 0;
    for (frames, n) in
        paths.iter().filter(|(frames, _)| frames.last().is_some_and(|f| is_wait(std::slice::from_ref(f))))
    {
        let leaf = frames.last();
        let own: u64 = pcs.iter().filter(|pc| pc.frames.first() == leaf).map(|pc| pc.executed).sum();
        in_waits += n.saturating_sub(own);
    }
    // The vector's runs (all of them waits) are in those paths too.
    let vector = |pc: &Instruction| pc.frames.first().is_some_and(|f| f.ends_with("ExceptionVector"));
    let vectors: u64 = pcs.iter().filter(|pc| vector(pc)).map(|pc| pc.executed).sum();
    let in_waits = in_waits.saturating_sub(vectors);
    let total: u64 = pcs.iter().filter(|pc| handler(pc)).map(|pc| pc.executed).sum();
    if total == 0 || in_waits == 0 {
        return;
    }
    for pc in pcs.iter_mut().filter(|pc| handler(pc)) {
        pc.waiting = (u128::from(pc.executed) * u128::from(in_waits.min(total)) / u128::from(total)) as u64;
    }
}

/// The call path `frames` with `instructions`, as one stack per chain of functions
/// inlined into its innermost function: shared in proportion to that function's
/// per-PC counts (the module's documentation), whole sums kept by largest remainder.
fn with_inlined(frames: Vec<String>, instructions: u64, pcs: &[Instruction]) -> Vec<Stack> {
    let innermost = frames.last().cloned().unwrap_or_default();
    let mut chains: BTreeMap<&[String], u64> = BTreeMap::new();
    for pc in pcs.iter().filter(|pc| pc.frames.first() == Some(&innermost)) {
        *chains.entry(&pc.frames[1..]).or_default() += pc.executed;
    }
    let total: u64 = chains.values().sum();
    if total == 0 || chains.keys().all(|chain| chain.is_empty()) {
        return vec![Stack { frames, instructions }];
    }
    // Whole shares first, then one more each to the largest remainders.
    let mut shares: Vec<(&[String], u64, u128)> = chains
        .into_iter()
        .map(|(chain, n)| {
            let exact = u128::from(instructions) * u128::from(n);
            (chain, (exact / u128::from(total)) as u64, exact % u128::from(total))
        })
        .collect();
    let mut left = instructions - shares.iter().map(|s| s.1).sum::<u64>();
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| shares[b].2.cmp(&shares[a].2).then(a.cmp(&b)));
    for index in order {
        if left == 0 {
            break;
        }
        shares[index].1 += 1;
        left -= 1;
    }
    shares
        .into_iter()
        .filter(|share| share.1 > 0)
        .map(|(chain, n, _)| Stack { frames: frames.iter().chain(chain).cloned().collect(), instructions: n })
        .collect()
}

/// A core's timeline events, their times from `epoch_ns` (the earliest op start of
/// any core), so that every core's trace shares one clock.
fn events(raw: &RawCore, epoch_ns: u64) -> Vec<Event> {
    raw.events
        .iter()
        .map(|e| {
            let kind = match e.kind {
                lines::EventKind::Op => EventKind::Op,
                lines::EventKind::Wait => EventKind::Wait,
                lines::EventKind::Dma => EventKind::Dma,
            };
            Event {
                kind,
                start_ns: e.ns.saturating_sub(epoch_ns),
                duration_ns: e.dur,
                bytes: e.bytes,
                instruction: e.at,
            }
        })
        .collect()
}

/// What [`Folder::count`] sums from a core's per-PC counts.
#[derive(Default)]
struct Counts {
    /// Each PC, in address order.
    pcs: Vec<Instruction>,
    /// By own instructions, most first.
    functions: Vec<Function>,
    mix: BTreeMap<Class, u64>,
    instructions: u64,
    in_runtime: u64,
    in_libm: u64,
}

/// Looks PCs up once each in the images.
pub struct Folder {
    symbols: Symbolizer,
    cache: BTreeMap<u32, Vec<Place>>,
    /// Each PC's disassembly and each label, from every image.
    disassembly: Disassembly,
    /// The cost model that prices the line table (the shipped one).
    model: CostModel,
    /// The author's range markers of every image, by the PC where each takes effect.
    markers: BTreeMap<u32, Vec<(String, Kind)>>,
}

/// The functions that wait for the DMA engine, by name (inlined or not): the runtime's
/// wait loop, its sleep (`waiti` with a timer) and the vectors' level-1 path, which
/// the interrupt that ends a sleep runs.
const WAITS: [&str; 4] = ["Queues>::wait", "wait_for_interrupt", "_KernelExceptionVector", "_UserExceptionVector"];

impl Folder {
    /// A folder for the images the cores ran: the library's and the loader's (the
    /// kernel calls into the loader too, and the op's markers are the loader's).
    ///
    /// # Errors
    /// [`ProfileError`] when an image or its DWARF cannot be read.
    pub fn new(images: &[PathBuf]) -> Result<Self, ProfileError> {
        let mut disassembly = Disassembly::default();
        let mut markers: BTreeMap<u32, Vec<(String, Kind)>> = BTreeMap::new();
        for image in images {
            disassembly.add(image);
            let found = ranges::markers(image)
                .map_err(|e| ProfileError::Image { path: image.clone(), message: e.to_string() })?;
            for marker in found {
                for &pc in &marker.pcs {
                    markers.entry(pc).or_default().push((marker.name.clone(), marker.kind));
                }
            }
        }
        let model = CostModel::default();
        Ok(Self { symbols: Symbolizer::new(images)?, cache: BTreeMap::new(), disassembly, model, markers })
    }

    /// The passes through the author's ranges that the markers `marks` (PC, instructions
    /// before it, in order) make on a core whose op ran `end` instructions: a begin
    /// opens its range unless open, an end closes it if open; at one PC the ends come
    /// first. A range still open at the op's end runs to it.
    fn passes(&self, marks: &[(u32, u64)], end: u64) -> Vec<RangePass> {
        let mut open: BTreeMap<&str, u64> = BTreeMap::new();
        let mut passes = Vec::new();
        for &(pc, at) in marks {
            let Some(markers) = self.markers.get(&pc) else { continue };
            for (name, _) in markers.iter().filter(|(_, kind)| *kind == Kind::End) {
                if let Some(start) = open.remove(name.as_str()) {
                    passes.push(RangePass { name: name.clone(), start, instructions: at - start, unclosed: false });
                }
            }
            for (name, _) in markers.iter().filter(|(_, kind)| *kind == Kind::Begin) {
                open.entry(name).or_insert(at);
            }
        }
        for (name, start) in open {
            let instructions = end.saturating_sub(start);
            passes.push(RangePass { name: name.into(), start, instructions, unclosed: true });
        }
        passes.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| b.instructions.cmp(&a.instructions)));
        passes
    }

    /// The functions at `pc`, innermost first (never empty).
    fn places(&mut self, pc: u32) -> &[Place] {
        let (symbols, disassembly) = (&self.symbols, &self.disassembly);
        self.cache.entry(pc).or_insert_with(|| {
            let places = symbols.places(pc);
            if !places.is_empty() {
                return places;
            }
            // Assembly with no symbol sizes (the exception vectors: `_WindowOverflow8`):
            // the label before it, as its disassembly names it.
            let function = disassembly.label(pc).map_or_else(|| format!("{pc:#010x}"), str::to_string);
            vec![Place { function, file: None, line: None }]
        })
    }

    /// One core's profile from its raw lines; `output` is the op's output, to count
    /// the elements the core wrote.
    pub fn core(&mut self, core: u32, raw: &RawCore, epoch_ns: u64, output: Option<&Output>) -> CoreProfile {
        let counts = self.count(raw);
        let mut pcs = counts.pcs;
        // The paths are shared by the per-PC counts, so they come after those; the
        // window handlers' waits need the paths, so they come after these.
        let (stacks, raw_paths) = self.stacks(raw, &pcs);
        window_handlers_in_waits(&mut pcs, &raw_paths);
        let waiting = pcs.iter().map(|pc| pc.waiting).sum();
        let inclusive = inclusive(&stacks);
        let lines = crate::annotate::lines(&pcs, &self.model);
        CoreProfile {
            core,
            instructions: counts.instructions,
            functions: counts.functions,
            stacks,
            pcs,
            lines,
            inclusive,
            mix: counts.mix,
            waiting,
            in_runtime: counts.in_runtime,
            in_libm: counts.in_libm,
            memory: regions(&raw.memory),
            dma_bytes: raw.dma.0,
            dma_transfers: raw.dma.1,
            events: events(raw, epoch_ns),
            dropped_events: raw.dropped_events,
            calls: self.calls(raw),
            calls_depth: raw.frame_depth,
            calls_dropped: raw.frames_dropped,
            ranges: self.passes(&raw.marks, counts.instructions),
            elements_written: output.zip(raw.written.as_deref()).map(|(output, ranges)| output.elements_in(ranges)),
        }
    }

    /// A core's per-PC counts looked up in the images: each PC as an [`Instruction`]
    /// (its waits marked, wait loops included), and their sums by function, by class
    /// and in the runtime and libm.
    fn count(&mut self, raw: &RawCore) -> Counts {
        let mut functions: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
        let mut counts = Counts::default();
        counts.pcs.reserve(raw.pcs.len());
        for (pc, n, mnemonic) in &raw.pcs {
            counts.instructions += n;
            let class = Class::of(mnemonic);
            *counts.mix.entry(class).or_default() += n;
            let places = self.places(*pc).to_vec();
            let place = &places[0];
            let file = place.file.as_deref().unwrap_or_default();
            if file.contains("/libm-") || file.contains("runtime/start_exit/math") || file.contains("fpu_math") {
                counts.in_libm += n;
            }
            if file.starts_with("runtime/") {
                counts.in_runtime += n;
            }
            *functions.entry((place.function.clone(), place.file.clone())).or_default() += n;
            let frames: Vec<String> = places.iter().rev().map(|p| p.function.clone()).collect();
            let is_wait = is_wait(&frames);
            let memory = raw.accesses.get(pc).map(regions).unwrap_or_default();
            counts.pcs.push(Instruction {
                pc: *pc,
                executed: *n,
                mnemonic: mnemonic.clone(),
                text: self.disassembly.text(*pc).map(str::to_string),
                class,
                frames,
                file: place.file.clone(),
                line: place.line,
                memory,
                waiting: if is_wait { *n } else { 0 },
            });
        }
        counts.pcs.sort_by_key(|i| i.pc);
        wait_loops(&mut counts.pcs);
        counts.functions =
            functions.into_iter().map(|((name, file), instructions)| Function { name, file, instructions }).collect();
        counts.functions.sort_by(|a, b| b.instructions.cmp(&a.instructions).then_with(|| a.name.cmp(&b.name)));
        counts
    }

    /// A core's call paths as stacks, each shared among the functions inlined into its
    /// innermost one by `pcs`; and the paths as they came (function names), which the
    /// window handlers' waits are counted from.
    fn stacks(&mut self, raw: &RawCore, pcs: &[Instruction]) -> (Vec<Stack>, Vec<(Vec<String>, u64)>) {
        let mut stacks = Vec::new();
        let mut raw_paths = Vec::new();
        for (path, n) in &raw.stacks {
            // The loader's root frame is no function: its own instructions (the
            // markers') show by PC and function, not as a path.
            let frames: Vec<String> = path
                .iter()
                .filter(|&&pc| pc != 0)
                .map(|&pc| self.places(pc).last().map_or_else(|| "?".into(), |p| p.function.clone()))
                .collect();
            if !frames.is_empty() {
                raw_paths.push((frames.clone(), *n));
                stacks.extend(with_inlined(frames, *n, pcs));
            }
        }
        (stacks, raw_paths)
    }

    /// A core's traced calls, named by their entry PCs' outermost functions.
    fn calls(&mut self, raw: &RawCore) -> Vec<Call> {
        let mut calls: Vec<Call> = raw
            .frames
            .iter()
            .map(|frame| Call {
                name: self.places(frame.pc).last().map_or_else(|| "?".into(), |p| p.function.clone()),
                depth: frame.depth,
                start: frame.at,
                instructions: frame.len,
            })
            .collect();
        // A caller before its callees: by entry, then the longer (outer) first.
        calls.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| a.depth.cmp(&b.depth)));
        calls
    }

    /// The profile of `kernel` from the plugin's lines of its op on each core, in core
    /// order (`OpReport::plugin`).
    ///
    /// # Errors
    /// [`ProfileError::Missing`]: a core's lines hold no profile.
    pub fn profile<S: AsRef<str>>(
        &mut self,
        kernel: &str,
        lines: &[&[S]],
        output: Option<&Output>,
    ) -> Result<Profile, ProfileError> {
        let mut raws = Vec::with_capacity(lines.len());
        for (core, lines) in lines.iter().enumerate() {
            let raw = crate::lines::parse(lines);
            if raw.pcs.is_empty() {
                return Err(ProfileError::Missing(core as u32));
            }
            raws.push((core as u32, raw));
        }
        let epoch = raws
            .iter()
            .flat_map(|(_, raw)| raw.events.iter().filter(|e| e.kind == lines::EventKind::Op).map(|e| e.ns))
            .min()
            .unwrap_or(0);
        let cores = raws.iter().map(|(core, raw)| self.core(*core, raw, epoch, output)).collect();
        Ok(Profile { kernel: kernel.into(), cores })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paths_instructions_go_to_its_inlined_frames_by_their_pcs() {
        let pc = |frames: &[&str], executed| Instruction {
            pc: 0,
            executed,
            mnemonic: "add".into(),
            text: None,
            class: Class::Alu,
            frames: frames.iter().map(|f| f.to_string()).collect(),
            file: None,
            line: None,
            memory: BTreeMap::new(),
            waiting: 0,
        };
        let pcs = [
            pc(&["kernel"], 10),
            pc(&["kernel", "relu", "max"], 60),
            pc(&["kernel", "relu"], 30),
            pc(&["other"], 1000),
        ];
        let frames = |names: &[&str]| names.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        // The path ran 101 instructions in `kernel`: 10%, 60%, 30% by its PCs, the
        // remainder to the largest fraction.
        let stacks = with_inlined(frames(&["entry", "kernel"]), 101, &pcs);
        let got: Vec<(Vec<String>, u64)> = stacks.into_iter().map(|s| (s.frames, s.instructions)).collect();
        assert_eq!(
            got,
            [
                (frames(&["entry", "kernel"]), 10),
                (frames(&["entry", "kernel", "relu"]), 30),
                (frames(&["entry", "kernel", "relu", "max"]), 61),
            ]
        );
        // A function with no inlined code stays one frame.
        assert_eq!(with_inlined(frames(&["other"]), 5, &pcs), [Stack { frames: frames(&["other"]), instructions: 5 }]);
    }

    #[test]
    fn a_wait_loop_and_its_calls_window_handlers_are_waits() {
        let pc = |at: u32, frames: &[&str], executed, text: &str| Instruction {
            pc: at,
            executed,
            mnemonic: text.split(' ').next().unwrap_or_default().into(),
            text: Some(text.into()),
            class: Class::of(text.split(' ').next().unwrap_or_default()),
            frames: frames.iter().map(|f| f.to_string()).collect(),
            file: None,
            line: None,
            memory: BTreeMap::new(),
            waiting: if frames.iter().any(|f| f.ends_with("::wait")) { executed } else { 0 },
        };
        let copy = "<dma::Queues>::copy";
        let wait = [copy, "<dma::Queues>::wait"];
        let mut pcs = vec![
            pc(0x10, &[copy], 16, "memw"),
            pc(0x13, &[copy], 44, "l32i a9, a1, 24"),
            pc(0x16, &wait, 44, "bnez a8, 0x1f"),
            pc(0x19, &wait, 28, "j 0x13"),
            pc(0x1c, &[copy], 16, "retw.n"),
            pc(0x40, &["_WindowOverflow8"], 30, "s32e a0, a9, -16"),
            pc(0x80, &["_UserExceptionVector"], 10, "rfe"),
        ];
        wait_loops(&mut pcs);
        let waiting: Vec<u64> = pcs.iter().map(|pc| pc.waiting).collect();
        assert_eq!(waiting, [0, 44, 44, 28, 0, 0, 0], "the loop's head is the wait's, not the copy's");
        // The sleep's path ran 25 besides its own 5: the vector's 10 and 15 of the handler's 30.
        let sleep = pc(0x60, &["xtensa_wait_for_interrupt"], 5, "waiti 0");
        pcs.push(sleep);
        let paths =
            [(vec!["k".to_string(), "xtensa_wait_for_interrupt".to_string()], 30), (vec!["k".to_string()], 500)];
        window_handlers_in_waits(&mut pcs, &paths);
        assert_eq!(pcs[5].waiting, 15, "{:?}", pcs[5]);
    }
}
