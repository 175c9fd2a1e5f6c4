//! The profile of one op, typed: per core, instructions per function (inlined functions
//! as themselves), per call path (inlined functions as frames of their own), per
//! instruction and source line, by class, and memory accesses by region.
//!
//! The plugin's call paths hold real calls only; the inlined functions under a path's
//! innermost function come from the images' DWARF (the symbolizer's inline chain of
//! each PC). A path's instructions are shared among the inline chains of its innermost
//! function in proportion to that function's per-PC counts: exact when the function is
//! innermost on one path only (the common case: a kernel's loop), an estimate when
//! several paths end in it (each gets the function's overall mix).

use crate::annotate::Disassembly;
use crate::cost::CostModel;
use crate::lines::{self, RawCore};
use crate::mix::Class;
use neuroncustomop_machine::job::{TENSOR_AREA, TENSOR_AREA_SIZE};
use neuroncustomop_machine::symbolize::{Place, SymbolizeError, Symbolizer};
use neuroncustomop_wire::job::{CORES, DATA_SCRATCH_BASE, HBM_SCRATCH_BASE, HBM_SCRATCH_SIZE};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a load or store went (the simulated device's memory map, docs/simulation.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Region {
    /// The core's local data RAM (`get_data_scratch`: its TCM pool and dataram heap).
    LocalRam,
    /// The library image: its code's literals and its data.
    Image,
    /// The loader's image, where the stack the kernel runs on lives.
    Stack,
    /// The tensors, in HBM, reached through `neuron_translate` (accessors, pointers).
    Hbm,
    /// The core's HBM scratch (`get_hbm_scratch`).
    HbmScratch,
    /// The SoC's DMA queues (descriptors the core writes, counts it polls).
    DmaQueues,
    /// Anything else (the job block, the loader).
    Other,
}

/// The 16 MiB pages of the map ([`Region::of`]): every core's HBM scratch and the
/// dataram scratch (the loader's memory map, `neuroncustomop_wire::job`).
const HBM_SCRATCH_PAGES: std::ops::RangeInclusive<u8> =
    (HBM_SCRATCH_BASE >> 24) as u8..=((HBM_SCRATCH_BASE + CORES as u32 * HBM_SCRATCH_SIZE - 1) >> 24) as u8;
const DATA_SCRATCH_PAGE: u8 = (DATA_SCRATCH_BASE >> 24) as u8;
/// Library images: `0x84000000 + core * 2 MiB`.
const LIBRARY_PAGE: u8 = 0x84;
/// Loader images, with the stack: `0x85000000 + core * 2 MiB`.
const LOADER_PAGE: u8 = 0x85;

impl Region {
    /// Every region, in the order reports list them.
    pub const ALL: [Region; 7] = [
        Region::LocalRam,
        Region::Image,
        Region::Stack,
        Region::Hbm,
        Region::HbmScratch,
        Region::DmaQueues,
        Region::Other,
    ];

    /// The region of the 16 MiB page `page` (an address's top byte).
    pub fn of(page: u8) -> Region {
        let tensors = (TENSOR_AREA >> 24) as u8..((TENSOR_AREA + TENSOR_AREA_SIZE) >> 24) as u8;
        let dma = (neuroncustomop::data_transfer::dma::DMA_QUEUE_WINDOW >> 24) as u8;
        match page {
            p if tensors.contains(&p) => Region::Hbm,
            p if HBM_SCRATCH_PAGES.contains(&p) => Region::HbmScratch,
            p if p == dma => Region::DmaQueues,
            DATA_SCRATCH_PAGE => Region::LocalRam,
            LIBRARY_PAGE => Region::Image,
            LOADER_PAGE => Region::Stack,
            _ => Region::Other,
        }
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Region::LocalRam => "local RAM",
            Region::Image => "image",
            Region::Stack => "stack",
            Region::Hbm => "HBM",
            Region::HbmScratch => "HBM scratch",
            Region::DmaQueues => "DMA queues",
            Region::Other => "other",
        }
    }
}

/// Loads and stores to one region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accesses {
    /// Loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
}

/// Instructions of one function on one core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Function {
    /// Its name, demangled; an inlined function is named itself, not its caller.
    pub name: String,
    /// Its source file, when the DWARF has one.
    pub file: Option<String>,
    /// Instructions run at PCs of this function (its own, not its callees').
    pub instructions: u64,
}

/// Instructions run with one call path on top of the stack: its real calls, then the
/// functions inlined into the innermost one (the module's documentation says how a
/// path's instructions are shared among them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stack {
    /// Function names, outermost (the kernel) first.
    pub frames: Vec<String>,
    /// Instructions run in the innermost frame on this path.
    pub instructions: u64,
}

/// One instruction of the op on one core: how often it ran, what it is, where it is
/// in the source and what memory it touched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instruction {
    /// Its address.
    pub pc: u32,
    /// Times it ran.
    pub executed: u64,
    /// Its mnemonic, as QEMU's disassembler names it.
    pub mnemonic: String,
    /// Its disassembly (`llvm-objdump`), when the image could be disassembled.
    pub text: Option<String>,
    /// Its class in the instruction mix.
    pub class: Class,
    /// The functions at the PC, outermost (the one it was compiled into) first, then
    /// each inlined one.
    pub frames: Vec<String>,
    /// The innermost function's source file, when the DWARF has one.
    pub file: Option<String>,
    /// The source line, when the DWARF has one.
    pub line: Option<u32>,
    /// Its loads and stores per region (empty when the plugin gave no per-PC figures).
    pub memory: BTreeMap<Region, Accesses>,
    /// Of its runs, those that were part of a wait for the DMA engine (the runtime's
    /// wait loop, its sleep and the interrupt that ends it, and the window overflows
    /// and underflows of its calls): idle time to the cost model, not work.
    pub waiting: u64,
}

/// Instructions of one function and of everything it called, on one core: every call
/// path through it, each path once however often the function recurs on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inclusive {
    /// The function, as the call paths name it (a function inlined into another counts
    /// in that one: the paths hold real calls only).
    pub name: String,
    /// Instructions run in it and in all it called.
    pub instructions: u64,
}

/// One event of a core's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// What it was.
    pub kind: EventKind,
    /// Host nanoseconds from the earliest op start of the profile.
    pub start_ns: u64,
    /// Its length in host nanoseconds (0 for a DMA transfer's queueing).
    pub duration_ns: u64,
    /// A DMA transfer's bytes.
    pub bytes: u64,
    /// The core's instructions since its op started, at the event.
    pub instruction: u64,
}

/// What an [`Event`] was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The op, from the kernel's call to its return.
    Op,
    /// The core asleep (`waiti`) until an interrupt woke it.
    Wait,
    /// A DMA transfer queued.
    Dma,
}

/// One core's profile of the op.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CoreProfile {
    /// The core.
    pub core: u32,
    /// Instructions from the op's start marker to its end marker on this core: the
    /// call's count for the core plus the markers' own
    /// (`neuroncustomop_machine::plugin::MARKER_OVERHEAD`, the loader's).
    pub instructions: u64,
    /// Per function, most instructions first.
    pub functions: Vec<Function>,
    /// Per call path, with inlined functions as frames.
    pub stacks: Vec<Stack>,
    /// Per instruction (PC), in address order.
    pub pcs: Vec<Instruction>,
    /// Per source line, most instructions first ([`crate::annotate::Line`]).
    pub lines: Vec<crate::annotate::Line>,
    /// Per function with what it called ([`Inclusive`]), most first, from the call
    /// paths: the functions every path starts with (the kernel's entry, and what the
    /// loader called it through) are left out, as they hold all of the op.
    pub inclusive: Vec<Inclusive>,
    /// Per instruction class.
    pub mix: BTreeMap<Class, u64>,
    /// Instructions of waits for the DMA engine ([`Instruction::waiting`]): how many
    /// depends on how long the simulated engine took, so the cost model counts them as
    /// idle, not work.
    pub waiting: u64,
    /// Instructions run in the runtime's code (runtime/ and its include/ headers).
    pub in_runtime: u64,
    /// Instructions run in libm (the `libm` crate, or the runtime's math).
    pub in_libm: u64,
    /// Loads and stores per region.
    pub memory: BTreeMap<Region, Accesses>,
    /// Bytes the core queued on its DMA queues.
    pub dma_bytes: u64,
    /// DMA transfers it queued.
    pub dma_transfers: u64,
    /// Its timeline.
    pub events: Vec<Event>,
    /// Timeline events past the plugin's limit, not kept.
    pub dropped_events: u64,
    /// Elements of the op's output this core stored to; `None` when not known (the
    /// plugin kept no ranges, or no output was given).
    pub elements_written: Option<u64>,
}

impl CoreProfile {
    /// Loads and stores to `region`.
    pub fn accesses(&self, region: Region) -> Accesses {
        self.memory.get(&region).copied().unwrap_or_default()
    }
}

/// The profile of one op: every core that ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The kernel.
    pub kernel: String,
    /// Per core, in core order.
    pub cores: Vec<CoreProfile>,
}

/// A function's instructions summed over every core.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hot {
    /// The function.
    pub name: String,
    /// Its instructions on all cores.
    pub instructions: u64,
    /// Its share of all the cores' instructions, 0 to 1.
    pub share: f64,
}

impl Profile {
    /// All the cores' instructions.
    pub fn instructions(&self) -> u64 {
        self.cores.iter().map(|c| c.instructions).sum()
    }

    /// The `n` functions with the most instructions of their own (at their PCs, inlined
    /// functions under their own names) over every core, most first.
    pub fn top(&self, n: usize) -> Vec<Hot> {
        let functions = self.cores.iter().flat_map(|c| &c.functions);
        self.rank(functions.map(|f| (f.name.as_str(), f.instructions)), n)
    }

    /// The `n` functions with the most instructions in them and all they called
    /// ([`CoreProfile::inclusive`]) over every core, most first: where the op's time
    /// goes. The kernel's entry, which holds all of it, is not among them.
    pub fn top_inclusive(&self, n: usize) -> Vec<Hot> {
        let functions = self.cores.iter().flat_map(|c| &c.inclusive);
        self.rank(functions.map(|f| (f.name.as_str(), f.instructions)), n)
    }

    /// The `n` names with the most instructions, each name's summed over `figures`.
    fn rank<'a>(&self, figures: impl Iterator<Item = (&'a str, u64)>, n: usize) -> Vec<Hot> {
        let mut sums: BTreeMap<&str, u64> = BTreeMap::new();
        for (name, instructions) in figures {
            *sums.entry(name).or_default() += instructions;
        }
        let total = self.instructions().max(1) as f64;
        let mut hot: Vec<Hot> = sums
            .into_iter()
            .map(|(name, instructions)| Hot { name: name.into(), instructions, share: instructions as f64 / total })
            .collect();
        hot.sort_by(|a, b| b.instructions.cmp(&a.instructions).then_with(|| a.name.cmp(&b.name)));
        hot.truncate(n);
        hot
    }
}

/// Each function on `stacks` with the instructions of every path through it
/// ([`CoreProfile::inclusive`]), most first, less the kernel's entry: the frames that
/// every path of the outermost frame with the most instructions starts with (the
/// loader calls a few functions of its own beside the kernel, between the markers).
fn inclusive(stacks: &[Stack]) -> Vec<Inclusive> {
    let mut outermost: BTreeMap<&str, u64> = BTreeMap::new();
    for stack in stacks {
        if let Some(first) = stack.frames.first() {
            *outermost.entry(first).or_default() += stack.instructions;
        }
    }
    let Some((kernel, _)) = outermost.into_iter().max_by_key(|&(name, n)| (n, std::cmp::Reverse(name))) else {
        return Vec::new();
    };
    let mut paths =
        stacks.iter().map(|stack| &stack.frames).filter(|frames| frames.first().map(String::as_str) == Some(kernel));
    let Some(first) = paths.next() else { return Vec::new() };
    let common = paths
        .fold(first.len(), |common, frames| common.min(first.iter().zip(frames).take_while(|(a, b)| a == b).count()));
    let entry = &first[..common];
    let mut sums: BTreeMap<&str, u64> = BTreeMap::new();
    for stack in stacks {
        let mut seen: Vec<&str> = Vec::new();
        for frame in stack.frames.iter().filter(|frame| !entry.contains(frame)) {
            if !seen.contains(&frame.as_str()) {
                seen.push(frame);
                *sums.entry(frame).or_default() += stack.instructions;
            }
        }
    }
    let mut inclusive: Vec<Inclusive> =
        sums.into_iter().map(|(name, instructions)| Inclusive { name: name.into(), instructions }).collect();
    inclusive.sort_by(|a, b| b.instructions.cmp(&a.instructions).then_with(|| a.name.cmp(&b.name)));
    inclusive
}

/// Why a profile could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The images' symbols could not be read.
    #[error(transparent)]
    Symbols(#[from] SymbolizeError),
    /// An image could not be read.
    #[error("reading {path}: {message}")]
    Image {
        /// The image.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The plugin wrote no profile for a core that ran the op.
    #[error("the plugin wrote no profile of core {0}: was the device booted with profiling (`profile`)?")]
    Missing(u32),
}

/// The op's output in device memory: which stores wrote its elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// Its first byte's device address.
    pub address: u64,
    /// Its bytes.
    pub len: u64,
    /// Bytes of one element.
    pub element: u64,
}

impl Output {
    /// The elements of this output that the byte ranges `ranges` (sorted, disjoint)
    /// touch: an element counts once however many of its bytes were stored.
    pub fn elements_in(&self, ranges: &[(u64, u64)]) -> u64 {
        let (start, end) = (self.address, self.address + self.len);
        let element = self.element.max(1);
        let mut elements = 0;
        let mut last = None;
        for &(lo, hi) in ranges {
            let (lo, hi) = (lo.max(start), hi.min(end));
            if lo >= hi {
                continue;
            }
            let (first, past) = ((lo - start) / element, (hi - start).div_ceil(element));
            // Two ranges may end and begin inside one element: count it once.
            let first = last.map_or(first, |last: u64| first.max(last));
            elements += past.saturating_sub(first);
            last = Some(past);
        }
        elements
    }
}

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

/// Looks PCs up once each in the images.
pub struct Folder {
    symbols: Symbolizer,
    cache: BTreeMap<u32, Vec<Place>>,
    /// Each PC's disassembly and each label, from every image.
    disassembly: Disassembly,
    /// The cost model that prices the line table (the shipped one).
    model: CostModel,
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
        for image in images {
            disassembly.add(image);
        }
        Ok(Self { symbols: Symbolizer::new(images)?, cache: BTreeMap::new(), disassembly, model: CostModel::default() })
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
        let mut functions: BTreeMap<(String, Option<String>), u64> = BTreeMap::new();
        let mut mix: BTreeMap<Class, u64> = BTreeMap::new();
        let (mut instructions, mut in_runtime, mut in_libm) = (0, 0, 0);
        let mut pcs = Vec::with_capacity(raw.pcs.len());
        for (pc, n, mnemonic) in &raw.pcs {
            instructions += n;
            let class = Class::of(mnemonic);
            *mix.entry(class).or_default() += n;
            let places = self.places(*pc).to_vec();
            let place = &places[0];
            let file = place.file.as_deref().unwrap_or_default();
            if file.contains("/libm-") || file.contains("runtime/start_exit/math") || file.contains("fpu_math") {
                in_libm += n;
            }
            if file.starts_with("runtime/") {
                in_runtime += n;
            }
            *functions.entry((place.function.clone(), place.file.clone())).or_default() += n;
            let frames: Vec<String> = places.iter().rev().map(|p| p.function.clone()).collect();
            let is_wait = is_wait(&frames);
            let memory = raw.accesses.get(pc).map(regions).unwrap_or_default();
            pcs.push(Instruction {
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
        pcs.sort_by_key(|i| i.pc);
        wait_loops(&mut pcs);
        let mut functions: Vec<Function> =
            functions.into_iter().map(|((name, file), instructions)| Function { name, file, instructions }).collect();
        functions.sort_by(|a, b| b.instructions.cmp(&a.instructions).then_with(|| a.name.cmp(&b.name)));
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
                stacks.extend(with_inlined(frames, *n, &pcs));
            }
        }
        window_handlers_in_waits(&mut pcs, &raw_paths);
        let waiting = pcs.iter().map(|pc| pc.waiting).sum();
        let inclusive = inclusive(&stacks);
        let memory = regions(&raw.memory);
        let events = raw
            .events
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
            .collect();
        let lines = crate::annotate::lines(&pcs, &self.model);
        CoreProfile {
            core,
            instructions,
            functions,
            stacks,
            pcs,
            lines,
            inclusive,
            mix,
            waiting,
            in_runtime,
            in_libm,
            memory,
            dma_bytes: raw.dma.0,
            dma_transfers: raw.dma.1,
            events,
            dropped_events: raw.dropped_events,
            elements_written: output.zip(raw.written.as_deref()).map(|(output, ranges)| output.elements_in(ranges)),
        }
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
    fn elements_written_count_each_element_of_the_output_once() {
        let output = Output { address: 0x100, len: 40, element: 4 };
        assert_eq!(output.elements_in(&[(0x100, 0x128)]), 10, "the whole output");
        assert_eq!(output.elements_in(&[(0xF0, 0x108)]), 2, "clipped at its start");
        assert_eq!(output.elements_in(&[(0x100, 0x102), (0x102, 0x104)]), 1, "two halves of one element");
        assert_eq!(output.elements_in(&[(0x100, 0x101), (0x103, 0x105)]), 2);
        assert_eq!(output.elements_in(&[(0x200, 0x300)]), 0, "past its end");
        assert_eq!(output.elements_in(&[]), 0);
    }

    #[test]
    fn a_function_counts_every_path_through_it_once_and_the_entry_is_left_out() {
        let stack = |frames: &[&str], instructions| Stack {
            frames: frames.iter().map(|f| f.to_string()).collect(),
            instructions,
        };
        let stacks = [
            stack(&["entry", "kernel"], 10),
            stack(&["entry", "kernel", "expf"], 50),
            stack(&["entry", "kernel", "expf", "__mulsf3"], 30),
            stack(&["entry", "kernel", "__divsf3"], 7),
            // A recursion counts once on its path.
            stack(&["entry", "kernel", "walk", "walk"], 3),
            // The loader's own call between the markers.
            stack(&["icount_read"], 2),
        ];
        let figures: Vec<(String, u64)> = inclusive(&stacks).into_iter().map(|f| (f.name, f.instructions)).collect();
        let want = [("expf", 80), ("__mulsf3", 30), ("__divsf3", 7), ("walk", 3), ("icount_read", 2)];
        assert_eq!(figures, want.map(|(name, n)| (name.to_string(), n)));
        assert_eq!(inclusive(&[]), []);
        assert_eq!(inclusive(&stacks[..1]), [], "a kernel that calls nothing");
    }

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

    #[test]
    fn regions_follow_the_memory_map() {
        assert_eq!(Region::of(0x62), Region::Hbm);
        assert_eq!(Region::of(0x69), Region::Hbm);
        assert_eq!(Region::of(0x6A), Region::HbmScratch);
        assert_eq!(Region::of(0x7E), Region::DmaQueues);
        assert_eq!(Region::of(0x7F), Region::LocalRam);
        assert_eq!(Region::of(0x84), Region::Image);
        assert_eq!(Region::of(0x85), Region::Stack);
        assert_eq!(Region::of(0x61), Region::Other);
    }
}
