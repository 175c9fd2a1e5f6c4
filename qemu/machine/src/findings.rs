//! What the device's memory checks found (the TCG plugin's `qemu/plugin/src/checks.rs`),
//! typed: each finding's kind, kernel, core, the PC as function and `file:line`, and the
//! address as a region and offset ("12 bytes past the end of output 0 ([64, 128]
//! float32)", "input 1, element [3, 17]"), or for the heap checks (`qemu/plugin/src/heap.rs`)
//! as a block ("a heap block of 64 bytes allocated at k (k.c:12), 4 bytes past its end").
//!
//! The plugin writes a `FINDING` line for each of the first
//! [`SHOWN`] findings of an op on a core, and a `CHECKED` line with the op's totals;
//! [`collect`] reads them back (`Report::findings` for one op of a job), and
//! `Symbolizer::symbolize_finding` names the lines of code: the PC's, each call site's of
//! the backtrace, and where a heap block was allocated and freed.

use crate::elf;
use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_wire::checks::RegionKind;
pub use neuroncustomop_wire::finding::{FindingKind, Severity};
use neuroncustomop_wire::plugin::{self as wire, Argument, Line};
use std::fmt;

/// Findings of one op on one core the plugin describes in full; the rest it counts.
pub const SHOWN: usize = 10;

/// A finding's kind in words, as `ncop run`, the host API's errors and Python's messages
/// print it: presentation only. Programs branch on the kind itself, or on its stable
/// name ([`FindingKind::name`], the plugin's and Python's word).
pub fn describe(kind: FindingKind) -> &'static str {
    match kind {
        FindingKind::OutOfBoundsStore => "out-of-bounds store",
        FindingKind::InputStore => "store into an input",
        FindingKind::CrossCoreStore => "store into another core's memory",
        FindingKind::OutOfBoundsLoad => "out-of-bounds load",
        FindingKind::Race => "race",
        FindingKind::Simcall => "semihosting call",
        FindingKind::UseAfterFree => "use after free",
        FindingKind::HeapOutside => "heap access outside every live block",
        FindingKind::DoubleFree => "double free",
        FindingKind::InvalidFree => "free of a pointer the heap did not give out",
        FindingKind::Leak => "leak",
        FindingKind::UninitializedRead => "read of uninitialized memory",
    }
}

/// The heap block a heap finding is named by (`qemu/plugin/src/heap.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeapBlock {
    /// Its first byte.
    pub start: u32,
    /// Its size as asked for.
    pub size: u32,
    /// A block of the op's TCM pool (`tcm_malloc`, a stream buffer), not of a heap.
    pub tcm: bool,
    /// Where it was allocated: the allocator's PC, then the call sites under it,
    /// innermost first.
    pub alloc: Vec<u32>,
    /// Where it was freed, likewise; empty while it is live.
    pub free: Vec<u32>,
    /// The kernel's line that allocated it (function and `file:line`), once symbolized.
    pub alloc_at: Option<String>,
    /// The kernel's line that freed it, once symbolized.
    pub free_at: Option<String>,
}

impl HeapBlock {
    /// `a heap block of 64 bytes allocated at f (k.c:12)` (`, freed at ...`), or `a TCM
    /// block ...`.
    fn name(&self) -> String {
        let at = |pcs: &[u32], text: &Option<String>| {
            text.clone().unwrap_or_else(|| format!("{:#010x}", pcs.first().copied().unwrap_or(0)))
        };
        let pool = if self.tcm { "TCM" } else { "heap" };
        let mut name =
            format!("a {pool} block of {} bytes allocated at {}", self.size, at(&self.alloc, &self.alloc_at));
        if !self.free.is_empty() {
            name += &format!(", freed at {}", at(&self.free, &self.free_at));
        }
        name
    }
}

/// The region the plugin names a finding by: the one holding its address, else the
/// closest tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// What it is.
    pub kind: RegionKind,
    /// Which output or input.
    pub index: u32,
    /// Its first device address.
    pub start: u32,
    /// Its length in bytes.
    pub len: u32,
    /// A tensor's dtype.
    pub dtype: Option<Dtype>,
    /// A tensor's shape.
    pub shape: Vec<usize>,
}

impl Region {
    /// `output 0 ([64, 128] float32)`, `data scratch`.
    fn name(&self) -> String {
        match (self.kind, self.dtype) {
            (RegionKind::Output | RegionKind::Input, Some(dtype)) => {
                format!("{} {} ({:?} {})", self.kind.name(), self.index, self.shape, dtype.name())
            }
            (RegionKind::Output | RegionKind::Input, None) => format!("{} {}", self.kind.name(), self.index),
            (kind, _) => kind.name().into(),
        }
    }

    /// The element holding byte `offset` of a tensor, as an index per dimension; past
    /// its end, the element it would be if the outermost dimension went on.
    fn element(&self, offset: u32) -> Option<Vec<usize>> {
        let dtype = self.dtype?;
        let mut flat = offset as usize / dtype.size();
        let mut index = vec![0; self.shape.len()];
        for (at, (slot, &dim)) in index.iter_mut().zip(&self.shape).enumerate().rev() {
            if at == 0 {
                *slot = flat;
            } else {
                *slot = flat % dim.max(1);
                flat /= dim.max(1);
            }
        }
        Some(index)
    }

    /// `element [3]` or `elements [4, 0] to [5, 31]`: the elements holding bytes
    /// `from..to` of the tensor (offsets from its start), if it has a dtype.
    fn elements(&self, from: u32, to: u32) -> Option<String> {
        let (first, last) = (self.element(from)?, self.element(to.saturating_sub(1).max(from))?);
        Some(if first == last { format!("element {first:?}") } else { format!("elements {first:?} to {last:?}") })
    }

    /// How a place in another core's memory names the region: `stack`, `dataram`.
    fn part(&self) -> &'static str {
        match self.kind {
            RegionKind::DataScratch => "dataram",
            kind => kind.name(),
        }
    }
}

/// One thing the checks found wrong, in one op on one core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What it is.
    pub kind: FindingKind,
    /// The op's index in the session, counted on its core.
    pub op: u32,
    /// The core whose kernel did it.
    pub core: u32,
    /// The instruction.
    pub pc: u32,
    /// The first byte accessed.
    pub address: u32,
    /// Bytes from the first accessed to the last (all accesses folded into this finding).
    pub bytes: u32,
    /// Accesses folded into it (one instruction, one place).
    pub accesses: u64,
    /// The region it is named by, if any is near.
    pub region: Option<Region>,
    /// A race's other core, or the core whose image a cross-core store hit.
    pub other_core: Option<u32>,
    /// A race's other core's instruction.
    pub other_pc: Option<u32>,
    /// Made by a DMA transfer the kernel queued: [`Finding::pc`] is the store that
    /// completed its descriptor, the bytes are the transfer's.
    pub dma: bool,
    /// The call sites under [`Finding::pc`], innermost first (at most 16).
    pub backtrace: Vec<u32>,
    /// The PC as function and `file:line`, once symbolized: for a DMA transfer, the
    /// kernel's line that queued it (the innermost frame outside the runtime).
    pub at: Option<String>,
    /// The other PC as function and `file:line`, once symbolized.
    pub other_at: Option<String>,
    /// Each call site of [`Finding::backtrace`] as function and `file:line`, once
    /// symbolized (functions inlined at a site too, innermost first).
    pub backtrace_at: Vec<String>,
    /// The heap block a heap finding is named by.
    pub block: Option<HeapBlock>,
    /// The core whose memory [`Finding::region`] is, when it is not the op's own
    /// region: another core's stack, dataram, HBM scratch, or a loader's image.
    pub owner: Option<u32>,
    /// An uninitialized read by a DMA transfer into the output: the output bytes it
    /// reached (first, and how many); [`Finding::region`] is the output.
    pub reached: Option<(u32, u32)>,
}

impl Finding {
    /// The finding of `core` the plugin wrote ([`Line::Finding`]).
    pub fn from_line(core: u32, finding: &wire::Finding<'_>) -> Finding {
        let region = finding.region.map(|place| Region {
            kind: place.kind,
            index: u32::from(place.index),
            start: place.start,
            len: place.len,
            dtype: Dtype::from_raw(place.dtype),
            shape: place.shape.iter().map(usize::from).collect(),
        });
        Finding {
            kind: finding.kind,
            op: finding.op,
            core,
            pc: finding.pc,
            address: finding.address,
            bytes: finding.bytes,
            accesses: finding.accesses,
            region,
            other_core: finding.other_core,
            other_pc: finding.other_pc,
            dma: finding.dma,
            backtrace: finding.backtrace.iter().collect(),
            at: None,
            other_at: None,
            backtrace_at: Vec::new(),
            block: finding.block.map(|block| HeapBlock {
                start: block.start,
                size: block.size,
                tcm: block.tcm,
                alloc: block.alloc.iter().collect(),
                free: block.free.map(|free| free.iter().collect()).unwrap_or_default(),
                alloc_at: None,
                free_at: None,
            }),
            owner: finding.owner,
            reached: finding.reached,
        }
    }

    /// Where the accessed bytes are, in words: `element [1000], 0–4 bytes past the end
    /// of input 0 ([1000] float32)`, `input 1, element [3, 17]`, `core 1's stack, 16
    /// bytes in (at 0x84a0fff0)`, `core 3's image window`.
    pub fn place(&self) -> String {
        let (lo, hi) = (self.address, self.address.wrapping_add(self.bytes));
        if self.kind == FindingKind::Simcall {
            return "a request to the host running the simulation".into();
        }
        if self.kind == FindingKind::CrossCoreStore
            && let Some(victim) = self.other_core
        {
            return format!("core {victim}'s image window, at {lo:#010x}");
        }
        if self.kind == FindingKind::OutOfBoundsStore && self.other_core == Some(self.core) {
            return format!("its own image's code or constants, at {lo:#010x}");
        }
        if let (Some(owner), Some(region)) = (self.owner, &self.region) {
            if region.kind == RegionKind::LoaderImage {
                let whose = if owner == self.core {
                    "the loader's image".to_string()
                } else {
                    format!("core {owner}'s loader image")
                };
                return format!("{whose}, at {lo:#010x}");
            }
            let (from, to) = (lo.wrapping_sub(region.start), hi.wrapping_sub(region.start));
            let span = if to - from <= 4 { format!("byte {from}") } else { format!("bytes {from} to {to}") };
            return format!("core {owner}'s {}, {span} of {} (at {lo:#010x})", region.part(), region.len);
        }
        if let Some(place) = self.heap_place() {
            return place;
        }
        let Some(region) = &self.region else { return format!("{lo:#010x}, in no region the op was given") };
        let end = region.start.wrapping_add(region.len);
        let (from, to) = (lo.wrapping_sub(region.start), hi.wrapping_sub(region.start));
        if lo >= region.start && lo < end {
            return match region.elements(from, to.min(region.len)) {
                Some(elements) => format!("{}, {elements}", region.name()),
                None => format!("{}, {from} bytes in", region.name()),
            };
        }
        let elements = region.elements(from, to).map(|elements| format!("{elements}, ")).unwrap_or_default();
        if lo >= end {
            format!("{elements}{}–{} bytes past the end of {}", lo - end, hi - end, region.name())
        } else {
            let (far, near) = (region.start - lo, region.start - hi.min(region.start));
            format!("{near}–{far} bytes before the start of {}", region.name())
        }
    }
}

impl Finding {
    /// [`Finding::place`] of a heap finding, or of an uninitialized output read.
    fn heap_place(&self) -> Option<String> {
        let (lo, hi) = (self.address, self.address.wrapping_add(self.bytes));
        let bytes = |from: u32, to: u32| {
            if to - from <= 4 { format!("byte {from}") } else { format!("bytes {from} to {to}") }
        };
        let Some(block) = &self.block else {
            return match self.kind {
                FindingKind::InvalidFree => Some(format!("{lo:#010x}, which no heap gave out")),
                FindingKind::HeapOutside => Some(format!("heap memory no block covers, at {lo:#010x}")),
                _ => None,
            };
        };
        let end = block.start.wrapping_add(block.size);
        let (from, to) = (lo.wrapping_sub(block.start), hi.wrapping_sub(block.start));
        Some(match self.kind {
            FindingKind::UseAfterFree => format!("{}, {}", block.name(), bytes(from, to)),
            FindingKind::UninitializedRead => {
                let reached = self.reached.zip(self.region.as_ref()).map(|((at, len), output)| {
                    let (from, to) = (at.wrapping_sub(output.start), at.wrapping_sub(output.start) + len);
                    let elements = output.elements(from, to).unwrap_or_else(|| format!("bytes {from} to {to}"));
                    format!(", copied into {}, {elements}", output.name())
                });
                format!("{}, {} never written{}", block.name(), bytes(from, to), reached.unwrap_or_default())
            }
            FindingKind::HeapOutside if lo >= end => {
                let past = if hi - lo <= 4 {
                    format!("{} bytes", lo - end)
                } else {
                    format!("bytes {} to {}", lo - end, hi - end)
                };
                format!("{}, {past} past its end", block.name())
            }
            // An access that starts inside the block and runs past its end.
            FindingKind::HeapOutside if hi > end && lo < end => {
                format!("{}, bytes {from} to {to}, {} past its end", block.name(), hi - end)
            }
            FindingKind::HeapOutside => format!("{}, {}", block.name(), bytes(from, to)),
            FindingKind::DoubleFree => format!("{}, freed already", block.name()),
            FindingKind::InvalidFree => format!("{}, byte {from}, not its start", block.name()),
            FindingKind::Leak => format!("{}, still held when the op ended", block.name()),
            _ => return None,
        })
    }
}

impl fmt::Display for Finding {
    /// What, where and how often; then the code, and the backtrace.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (times, by) = match (self.accesses, self.dma) {
            (1, true) => (String::new(), " by a DMA transfer"),
            (n, true) => (format!(" ({n} transfers)"), " by DMA transfers"),
            (1, false) => (String::new(), ""),
            (n, false) => (format!(" ({n} accesses)"), ""),
        };
        write!(f, "{}{by} on core {}: {}{times}", describe(self.kind), self.core, self.place())?;
        let at = self.at.clone().unwrap_or_else(|| format!("{:#010x}", self.pc));
        let queued = if self.dma { "queued " } else { "" };
        write!(f, "\n  {queued}at {at}")?;
        for (index, site) in self.backtrace.iter().enumerate() {
            let site = self.backtrace_at.get(index).cloned().unwrap_or_else(|| format!("{site:#010x}"));
            write!(f, "\n  called from {site}")?;
        }
        if self.kind == FindingKind::Race
            && let Some(other) = self.other_core
        {
            let other_at = self.other_at.clone().or(self.other_pc.map(|pc| format!("{pc:#010x}")));
            write!(f, "\n  core {other} stored there too, at {}", other_at.unwrap_or_default())?;
        }
        Ok(())
    }
}

/// The findings of one op, over every core.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpFindings {
    /// The first [`SHOWN`] of the op, core by core.
    pub shown: Vec<Finding>,
    /// How many there were in all.
    pub total: u64,
}

impl OpFindings {
    /// Whether the checks found nothing.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The first finding shown that fails the call ([`Severity::Error`]).
    pub fn first_error(&self) -> Option<&Finding> {
        self.shown.iter().find(|f| f.kind.severity() == Severity::Error)
    }

    /// The findings shown that do not fail the call ([`Severity::Warning`]).
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.shown.iter().filter(|f| f.kind.severity() == Severity::Warning)
    }

    /// The op's findings of `kind` among those shown.
    pub fn of(&self, kind: FindingKind) -> impl Iterator<Item = &Finding> {
        self.shown.iter().filter(move |f| f.kind == kind)
    }
}

impl fmt::Display for OpFindings {
    /// One finding after the other, a warning among errors labelled `warning: `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for finding in &self.shown {
            match finding.kind.severity() {
                Severity::Error => writeln!(f, "{finding}")?,
                Severity::Warning => writeln!(f, "{}: {finding}", Severity::Warning.name())?,
            }
        }
        let more = self.total.saturating_sub(self.shown.len() as u64);
        if more > 0 {
            writeln!(f, "... and {more} more findings")?;
        }
        Ok(())
    }
}

/// The loader's region table (`qemu/firmware/src/loader.rs`), which the plugin reads.
const TABLE: &str = "NEURON_CHECK_REGIONS";
/// Where the loader carries on after a kernel stopped (`qemu/firmware/src/loader.rs`):
/// it gives the op's blocks back, so they are no leak.
const AFTER_STOP: &str = "loader_after_stop";
/// The runtime's heap journal in a library image (`runtime/allocators/journal.rs`).
const JOURNAL: &str = "neuron_heap_journal";
/// A library image's window, and where its writable sections start (linker script).
const IMAGE: [&str; 3] = ["_vector_table", "__init_array_start", "_stack_top"];
/// The runtime's copies (runtime/arch/xtensa/mem.S), whose aligned word loads may hold
/// bytes just outside their source, in its own words (`vec_memcpy` is `memcpy`).
const WORD_LOADS: [&str; 2] = ["memcpy", "memmove"];

/// The TCG plugin's arguments that check the kernels of a device with the loader
/// images `loaders` next to the library images `libraries` (one of each per core):
/// each core's region table, its library image's and loader image's windows
/// (`qemu/plugin/src/checks.rs`),
/// where its runtime's `memcpy` and `memmove` are, and its runtime's heap journal
/// (`qemu/plugin/src/heap.rs`).
///
/// # Errors
/// An image that cannot be read or lacks a symbol, in words.
pub fn plugin_arguments(
    loaders: &[std::path::PathBuf],
    libraries: &[std::path::PathBuf],
) -> Result<Vec<Argument<'static>>, String> {
    let symbol = |path: &std::path::Path, name: &str| -> Result<u32, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        elf::symbol(&bytes, name)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .ok_or_else(|| format!("{} has no symbol `{name}`: rebuild it", path.display()))
    };
    let mut arguments = Vec::new();
    for (core, (loader, library)) in (0u32..).zip(loaders.iter().zip(libraries)) {
        let table = symbol(loader, TABLE)?;
        let [start, writable, end] =
            [symbol(library, IMAGE[0])?, symbol(library, IMAGE[1])?, symbol(library, IMAGE[2])?];
        arguments.push(Argument::CheckTable { core, table });
        arguments.push(Argument::CheckImage { core, start, writable, end });
        // The loader image's window, so an access there is named by it.
        let loader_bytes = std::fs::read(loader).map_err(|e| format!("reading {}: {e}", loader.display()))?;
        let segments = elf::load_segments(&loader_bytes).map_err(|e| format!("{}: {e}", loader.display()))?;
        let low = segments.iter().map(|s| s.vaddr).min();
        let high = segments.iter().map(|s| s.vaddr.saturating_add(s.memsz)).max();
        if let (Some(low), Some(high)) = (low, high) {
            arguments.push(Argument::CheckLoader { core, start: low, end: high });
        }
        if let Some(after_stop) =
            elf::symbol(&loader_bytes, AFTER_STOP).map_err(|e| format!("{}: {e}", loader.display()))?
        {
            arguments.push(Argument::CheckStopped(after_stop));
        }
        let bytes = std::fs::read(library).map_err(|e| format!("reading {}: {e}", library.display()))?;
        for name in WORD_LOADS {
            let range = elf::symbol_range(&bytes, name).map_err(|e| format!("{}: {e}", library.display()))?;
            if let Some(range) = range.filter(|range| !range.is_empty()) {
                arguments.push(Argument::WordLoads(range));
            }
        }
        // An image whose runtime keeps no heap journal gets no heap checks.
        if let Some(journal) = elf::symbol(&bytes, JOURNAL).map_err(|e| format!("{}: {e}", library.display()))? {
            arguments.push(Argument::HeapJournal { core, journal });
        }
    }
    Ok(arguments)
}

/// The runtime's red zone word in a library image (`runtime/allocators/redzone.rs`).
const REDZONE: &str = "NEURON_CHECKED_REDZONE";

/// A library image as a checked session boots it: a copy whose allocators put a red
/// zone after each block (`runtime/allocators/redzone.rs`), deleted when dropped; or
/// the image itself when its runtime has no red zone word (an older build).
#[derive(Debug)]
pub struct CheckedImage {
    path: std::path::PathBuf,
    copy: bool,
}

impl CheckedImage {
    /// The image to boot.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for CheckedImage {
    fn drop(&mut self) {
        if self.copy {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The library images `libraries` as a checked session boots them: each a copy with
/// its `NEURON_CHECKED_REDZONE` set to one heap granule ([`CheckedImage`]).
///
/// # Errors
/// An image that cannot be read, patched or written, in words.
pub fn checked_images(libraries: &[std::path::PathBuf]) -> Result<Vec<CheckedImage>, String> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    libraries
        .iter()
        .map(|library| {
            let mut bytes = std::fs::read(library).map_err(|e| format!("reading {}: {e}", library.display()))?;
            let Some(word) = elf::symbol(&bytes, REDZONE).map_err(|e| format!("{}: {e}", library.display()))? else {
                return Ok(CheckedImage { path: library.clone(), copy: false });
            };
            elf::patch_word(&mut bytes, word, neuroncustomop::allocators::GRANULE as u32)
                .map_err(|e| format!("{}: {REDZONE}: {e}", library.display()))?;
            let path = std::env::temp_dir().join(format!(
                "neuroncustomop-checked-{}-{}.elf",
                std::process::id(),
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ));
            std::fs::write(&path, &bytes).map_err(|e| format!("writing {}: {e}", path.display()))?;
            Ok(CheckedImage { path, copy: true })
        })
        .collect()
}

/// The findings in the plugin's `FINDING` and `CHECKED` lines of one op (any core);
/// other lines are skipped.
pub fn collect<'a>(lines: impl IntoIterator<Item = &'a str>) -> OpFindings {
    let mut op = OpFindings::default();
    for line in lines {
        match Line::parse(line) {
            Ok(Line::Finding { core, finding }) if op.shown.len() < SHOWN => {
                op.shown.push(Finding::from_line(core, &finding));
            }
            Ok(Line::Checked { findings, .. }) => op.total += findings,
            _ => {}
        }
    }
    op
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_past_an_output_is_named_by_its_bytes_past_the_end() {
        let text = "FINDING core=0 op=0 kind=oob-store pc=0x84000123 address=0x62000100 bytes=256 accesses=64 \
                    region=output index=0 start=0x62000000 len=256 dtype=1 shape=64\n\
                    CHECKED core=0 op=0 findings=1 accesses=64\n";
        let op = collect(text.lines());
        assert_eq!(op.total, 1);
        let finding = &op.shown[0];
        assert_eq!((finding.kind, finding.core, finding.pc), (FindingKind::OutOfBoundsStore, 0, 0x8400_0123));
        assert_eq!(finding.place(), "elements [64] to [127], 0–256 bytes past the end of output 0 ([64] float32)");
        assert_eq!(
            finding.to_string(),
            "out-of-bounds store on core 0: elements [64] to [127], 0–256 bytes past the end of output 0 ([64] float32) \
             (64 accesses)\n  at 0x84000123"
        );
    }

    #[test]
    fn an_access_before_a_tensor_counts_its_bytes_up_from_the_start() {
        // 156 bytes that end at the output's first byte, counted nearest first.
        let text = "FINDING core=7 op=0 kind=oob-store pc=0x84000123 address=0x61ffff64 bytes=156 accesses=39 \
                    region=output index=0 start=0x62000000 len=256 dtype=1 shape=64";
        let finding = &collect([text]).shown[0];
        assert_eq!(finding.place(), "0–156 bytes before the start of output 0 ([64] float32)");
    }

    #[test]
    fn a_store_into_an_input_names_the_element() {
        let text = "FINDING core=2 op=1 kind=input-store pc=0x84400010 address=0x62000244 bytes=4 accesses=1 \
                    region=input index=1 start=0x62000000 len=4096 dtype=1 shape=16x64";
        let finding = &collect([text]).shown[0];
        // Byte 0x244 = float 145 = row 2, column 17.
        assert_eq!(finding.place(), "input 1 ([16, 64] float32), element [2, 17]");
    }

    #[test]
    fn a_race_names_both_cores() {
        let text = "FINDING core=1 op=0 kind=race pc=0x84200010 address=0x62000000 bytes=4 accesses=1 other=0 \
                    other_pc=0x84000010 region=output index=0 start=0x62000000 len=64 dtype=4 shape=16";
        let finding = &collect([text]).shown[0];
        assert_eq!((finding.other_core, finding.other_pc), (Some(0), Some(0x8400_0010)));
        assert!(finding.to_string().contains("core 0 stored there too, at 0x84000010"), "{finding}");
    }

    #[test]
    fn a_leak_is_named_by_its_kind_and_is_a_warning_labelled_among_errors() {
        let text = "FINDING core=0 op=0 kind=oob-store pc=0x84000123 address=0x62000100 bytes=4 accesses=1\n\
                    FINDING core=0 op=0 kind=leak pc=0x84000010 address=0x6a000100 bytes=64 accesses=1 \
                    block=0x6a000100 size=64 alloc=84000010\n\
                    CHECKED core=0 op=0 findings=2 accesses=2\n";
        let op = collect(text.lines());
        let leak = &op.shown[1];
        assert_eq!((leak.kind, leak.kind.severity()), (FindingKind::Leak, Severity::Warning));
        assert_eq!(
            leak.to_string(),
            "leak on core 0: a heap block of 64 bytes allocated at 0x84000010, still held when the op ended\n  at 0x84000010"
        );
        assert_eq!(op.first_error().map(|f| f.kind), Some(FindingKind::OutOfBoundsStore));
        assert_eq!(op.warnings().collect::<Vec<_>>(), [leak]);
        let listed = op.to_string();
        assert!(listed.contains("\nwarning: leak on core 0: a heap block"), "{listed}");
        assert!(listed.starts_with("out-of-bounds store on core 0: "), "{listed}");
    }

    #[test]
    fn a_load_running_past_a_blocks_end_says_by_how_much() {
        // A 4-byte load at byte 512 of a 514-byte block: it was "byte 512".
        let text = "FINDING core=0 op=0 kind=heap-outside pc=0x84000010 address=0x6a000300 bytes=4 accesses=1 \
                    block=0x6a000100 size=514 alloc=84000020";
        let finding = &collect([text]).shown[0];
        assert_eq!(
            finding.place(),
            "a heap block of 514 bytes allocated at 0x84000020, bytes 512 to 516, 2 past its end"
        );
    }

    #[test]
    fn a_cross_core_store_names_the_victim() {
        let text =
            "FINDING core=0 op=0 kind=cross-core-store pc=0x84000010 address=0x84600100 bytes=4 accesses=1 other=3";
        let finding = &collect([text]).shown[0];
        assert_eq!(finding.place(), "core 3's image window, at 0x84600100");
    }

    #[test]
    fn one_element_past_an_input_is_named_with_its_index_and_byte_range() {
        let text = "FINDING core=0 op=0 kind=oob-load pc=0x84000010 address=0x62000fa0 bytes=4 accesses=64 \
                    region=input index=0 start=0x62000000 len=4000 dtype=1 shape=1000";
        let finding = &collect([text]).shown[0];
        assert_eq!(finding.place(), "element [1000], 0–4 bytes past the end of input 0 ([1000] float32)");
    }

    #[test]
    fn a_store_into_another_cores_stack_or_a_loader_image_names_whose_it_is() {
        let text = "FINDING core=0 op=0 kind=cross-core-store pc=0x84000010 address=0x84a0fff0 bytes=4 accesses=1 owner=1 \
                    region=stack index=0 start=0x84a08000 len=32768 dtype=0 shape=";
        let finding = &collect([text]).shown[0];
        assert_eq!(finding.owner, Some(1));
        assert_eq!(finding.place(), "core 1's stack, byte 32752 of 32768 (at 0x84a0fff0)");
        assert!(finding.to_string().starts_with("store into another core's memory on core 0: core 1's stack"));
        let text = "FINDING core=2 op=0 kind=oob-store pc=0x84000010 address=0x84c00100 bytes=4 accesses=1 owner=2 \
                    region=loader-image index=0 start=0x84c00000 len=65536 dtype=0 shape=";
        assert_eq!(collect([text]).shown[0].place(), "the loader's image, at 0x84c00100");
    }

    #[test]
    fn a_tcm_block_is_named_so_and_unwritten_bytes_copied_to_the_output_name_the_elements() {
        let text = "FINDING core=0 op=0 kind=heap-outside pc=0x84000010 address=0x7f800000 bytes=1200 accesses=1 dma=1 \
                    block=0x7f800000 size=1024 alloc=84000020 tcm=1";
        assert_eq!(
            collect([text]).shown[0].place(),
            "a TCM block of 1024 bytes allocated at 0x84000020, bytes 0 to 1200, 176 past its end"
        );
        let text = "FINDING core=0 op=0 kind=uninit-read pc=0x84000010 address=0x6a000000 bytes=64 accesses=1 dma=1 \
                    block=0x6a000000 size=64 alloc=84000020 reached=0x62000000 reached_bytes=64 \
                    region=output index=0 start=0x62000000 len=512 dtype=1 shape=4x32";
        assert_eq!(
            collect([text]).shown[0].place(),
            "a heap block of 64 bytes allocated at 0x84000020, bytes 0 to 64 never written, copied into output 0 \
             ([4, 32] float32), elements [0, 0] to [0, 15]"
        );
    }
}
