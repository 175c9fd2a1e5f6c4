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

use crate::mix::Class;
use neuroncustomop_machine::job::{TENSOR_AREA, TENSOR_AREA_SIZE};
use neuroncustomop_machine::symbolize::SymbolizeError;
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

/// One call of a function on one core, as it ran: a function span of the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Call {
    /// The function, as the call paths name it.
    pub name: String,
    /// Its depth in the call stack: 1 for a function the loader called (the kernel's
    /// entry).
    pub depth: u32,
    /// The core's instructions since the op started, at its entry.
    pub start: u64,
    /// Its instructions, its callees' included.
    pub instructions: u64,
}

/// One pass through an author's range on one core (`range_begin!` to `range_end!`,
/// `NCOP_RANGE_BEGIN` to `NCOP_RANGE_END`: the runtime's `ranges` module).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangePass {
    /// The range's name.
    pub name: String,
    /// The core's instructions since the op started, at its begin marker.
    pub start: u64,
    /// Its instructions, the functions it called included.
    pub instructions: u64,
    /// The op ended before its end marker was reached: it runs to the op's end.
    pub unclosed: bool,
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
    /// Per source line, most instructions first ([`Line`]).
    pub lines: Vec<Line>,
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
    /// Each call down to `calls_depth`, in the order they began (a caller before its
    /// callees).
    #[serde(default)]
    pub calls: Vec<Call>,
    /// The deepest call in `calls`; deeper ones were too many to keep.
    #[serde(default)]
    pub calls_depth: u32,
    /// Calls deeper than `calls_depth`, not kept.
    #[serde(default)]
    pub calls_dropped: u64,
    /// Each pass through an author's range, in the order they began.
    #[serde(default)]
    pub ranges: Vec<RangePass>,
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
pub(crate) fn inclusive(stacks: &[Stack]) -> Vec<Inclusive> {
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

/// One source line's part of an op.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// Its file, as the DWARF names it (relative to the repository when inside it).
    pub file: String,
    /// Its number.
    pub line: u32,
    /// The innermost function the line is in (an inlined one named itself).
    pub function: String,
    /// Instructions run at its PCs.
    pub instructions: u64,
    /// Of these, waits for the DMA engine (idle to the cost model).
    pub waiting: u64,
    /// Its loads and stores per region.
    pub memory: BTreeMap<Region, Accesses>,
    /// Predicted device cycles of its instructions ([`crate::cost::CostModel::instruction_cycles`]),
    /// under the shipped cost model or the one `ncop run --cost-model` gave.
    pub cycles: f64,
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
