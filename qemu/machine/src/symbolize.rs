//! Device faults as an author reads them: the `FAULT` lines the runtime prints
//! (`runtime/arch/xtensa/fault.rs`) turned into function names, `file:line` and a
//! backtrace, from the images' DWARF (the `addr2line` crate).
//!
//! A `FAULT` line carries the PC the fault stopped at and the return addresses of the
//! windowed frames below it. Each address is looked up in the image whose loaded
//! segments hold it (a kernel's PC in its library image, the loader's in the loader's),
//! with inlined functions unfolded. The headline names the first source line that is
//! the author's: not Rust's standard library, and not the runtime's own reporting
//! (its panic handler, `abort`).
//!
//! ```no_run
//! use neuroncustomop_machine::symbolize::{FaultLine, Symbolizer};
//!
//! let symbols = Symbolizer::new(&["target/images/fault_probe/core0.elf".into()])?;
//! let line = "FAULT core=0 kind=exception cause=28 pc=0x840012a4 vaddr=0x00000000 depth=1 frames=0x840012a4";
//! let fault = FaultLine::parse(line).expect("a FAULT line");
//! println!("{}", symbols.report(&fault, "kernel `reads_null`"));
//! # Ok::<(), neuroncustomop_machine::symbolize::SymbolizeError>(())
//! ```

use crate::device::{OpStatus, Report};
use crate::elf::{self, LoadSegment};
use crate::findings::{Finding, FindingKind};
use neuroncustomop_wire::fault::Fault;
pub use neuroncustomop_wire::fault::FaultKind;
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

/// One `FAULT` line (`neuroncustomop_wire::fault::Fault`) of the device, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultLine {
    /// The core that faulted.
    pub core: u32,
    /// What stopped it.
    pub kind: FaultKind,
    /// EXCCAUSE of an exception.
    pub cause: u32,
    /// The faulting address of an exception (EXCVADDR); for a stack overflow, the
    /// stack pointer found below the limit.
    pub vaddr: u32,
    /// How many frames the device's walk found (more than `frames` holds when long).
    pub depth: u32,
    /// The PC the fault stopped at, then the return addresses of its callers.
    pub frames: Vec<u32>,
}

impl FaultLine {
    /// Parses one line; `None` if it is not a well-formed `FAULT` line of the device
    /// (32-bit addresses).
    pub fn parse(line: &str) -> Option<FaultLine> {
        let fault = Fault::parse(line).ok()?;
        Some(FaultLine {
            core: fault.core,
            kind: fault.kind,
            cause: fault.cause,
            vaddr: u32::try_from(fault.vaddr).ok()?,
            depth: fault.depth,
            frames: fault.frames.iter().map(u32::try_from).collect::<Result<_, _>>().ok()?,
        })
    }

    /// Every `FAULT` line in `text`, in order.
    pub fn all(text: &str) -> Vec<FaultLine> {
        text.lines().filter_map(FaultLine::parse).collect()
    }

    /// The PC the fault stopped at.
    pub fn pc(&self) -> u32 {
        self.frames.first().copied().unwrap_or(0)
    }

    /// What happened, in words.
    fn what(&self) -> String {
        match self.kind {
            FaultKind::StackOverflow => "stack overflow".into(),
            FaultKind::Exception => format!(
                "exception {} (EXCCAUSE {}) at address {:#010x}",
                neuroncustomop::arch::cause_name(self.cause),
                self.cause,
                self.vaddr
            ),
            FaultKind::Panic => "panic".into(),
            FaultKind::DoublePanic => "panic while panicking".into(),
            FaultKind::Abort => "abort".into(),
            FaultKind::Signal => format!("signal {} at address {:#010x}", self.cause, self.vaddr),
        }
    }
}

/// Why the images' debug information could not be read.
#[derive(Debug)]
pub struct SymbolizeError(pub String);

impl fmt::Display for SymbolizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reading the images' debug information: {}", self.0)
    }
}

impl std::error::Error for SymbolizeError {}

/// Where a PC is in the source: one function, inlined or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The function, demangled, without its hash.
    pub function: String,
    /// The source file (relative to the home, a checkout, when inside it).
    pub file: Option<String>,
    /// The line.
    pub line: Option<u32>,
}

impl Place {
    /// Whether this line is in Rust's standard library or a crate from the registry.
    fn is_library(&self) -> bool {
        const LIBRARIES: [&str; 4] = ["/library/core/", "/library/alloc/", "/rustlib/", "/.cargo/registry/"];
        self.file.as_deref().is_some_and(|file| LIBRARIES.iter().any(|part| file.contains(part)))
    }

    /// Whether the author wrote this line: not a library's, nor the runtime's own fault
    /// reporting (its panic handler, `abort`).
    fn is_authors(&self) -> bool {
        const REPORTING: [&str; 2] = ["runtime/arch/xtensa/fault.rs", "runtime/start_exit/crt.rs"];
        self.file.as_deref().is_some_and(|file| !self.is_library() && !REPORTING.iter().any(|part| file.contains(part)))
    }

    /// Whether this line is the kernel's: the author's, and not the runtime's (which a
    /// kernel calls, e.g. to queue a DMA transfer).
    fn is_kernels(&self) -> bool {
        self.is_authors() && self.file.as_deref().is_some_and(|file| !file.starts_with("runtime/"))
    }

    fn source(&self) -> String {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            (Some(file), None) => file.clone(),
            _ => "?".into(),
        }
    }
}

/// The images of a run, ready to answer "where is this PC".
pub struct Symbolizer {
    images: Vec<Image>,
    /// The folders whose sources are shown relative to them: the home's, and for an
    /// installed home the checkout its runtime was built in ([`crate::home::Home::source_roots`]).
    source_roots: Vec<PathBuf>,
}

struct Image {
    segments: Vec<LoadSegment>,
    debug: addr2line::Loader,
}

impl Symbolizer {
    /// Names a finding's PCs (its access, the other core's, its backtrace) as functions
    /// and lines. A DMA finding's PC is the runtime's store of the descriptor: it is
    /// named by the kernel's line that asked for the transfer.
    /// A heap finding's PC may be the allocator's (a double free, a leak) or a library
    /// routine's (a `memcpy` into a freed block): it is named by the kernel's line that
    /// called it, and so are the lines that allocated and freed its block. So is a store
    /// into another core's memory a runtime's copy made (the host tier's
    /// `neuron_memcpy`).
    pub fn symbolize_finding(&self, finding: &mut Finding) {
        let by_kernel = finding.dma || finding.kind.is_heap() || finding.kind == FindingKind::CrossCoreStore;
        finding.at = Some(if by_kernel {
            let pcs: Vec<u32> = std::iter::once(finding.pc).chain(finding.backtrace.iter().copied()).collect();
            // The frames inside the runtime, and the kernel's line named as `at`, are
            // not repeated in the backtrace: it starts at that line's caller.
            let kernels = self.kernels_frame(pcs.iter().copied());
            if let Some((at, _)) = kernels {
                finding.backtrace.drain(..at.min(finding.backtrace.len()));
            }
            match kernels {
                Some((_, place)) => format!("{} ({})", place.function, place.source()),
                None => self.describe(finding.pc),
            }
        } else {
            self.describe(finding.pc)
        });
        finding.other_at = finding.other_pc.map(|pc| self.describe(pc));
        finding.backtrace_at = finding.backtrace.iter().map(|&site| self.describe_call(site)).collect();
        if let Some(block) = &mut finding.block {
            block.alloc_at = (!block.alloc.is_empty()).then(|| self.describe_kernels(block.alloc.iter().copied()));
            block.free_at = (!block.free.is_empty()).then(|| self.describe_kernels(block.free.iter().copied()));
        }
    }

    /// Reads the ELF files' segments and debug information.
    ///
    /// # Errors
    /// A file that cannot be read or is not an ELF image.
    pub fn new(elf_files: &[PathBuf]) -> Result<Symbolizer, SymbolizeError> {
        let images = elf_files
            .iter()
            .map(|path| {
                let bytes = std::fs::read(path).map_err(|e| SymbolizeError(format!("{}: {e}", path.display())))?;
                let segments =
                    elf::load_segments(&bytes).map_err(|e| SymbolizeError(format!("{}: {e}", path.display())))?;
                let debug =
                    addr2line::Loader::new(path).map_err(|e| SymbolizeError(format!("{}: {e}", path.display())))?;
                Ok(Image { segments, debug })
            })
            .collect::<Result<_, SymbolizeError>>()?;
        let source_roots = crate::home::Home::locate().map(|home| home.source_roots()).unwrap_or_default();
        Ok(Symbolizer { images, source_roots })
    }

    /// The functions at `pc`, innermost (inlined) first; empty if no image holds it.
    pub fn places(&self, pc: u32) -> Vec<Place> {
        let Some(image) = self
            .images
            .iter()
            .find(|image| image.segments.iter().any(|s| (s.vaddr..s.vaddr.saturating_add(s.memsz)).contains(&pc)))
        else {
            return Vec::new();
        };
        let mut places = Vec::new();
        if let Ok(mut frames) = image.debug.find_frames(u64::from(pc)) {
            while let Ok(Some(frame)) = frames.next() {
                let function = frame
                    .function
                    .as_ref()
                    .and_then(|name| name.demangle().ok().map(|name| without_hash(&name)))
                    .or_else(|| {
                        image
                            .debug
                            .find_symbol(u64::from(pc))
                            .map(|name| without_hash(&addr2line::demangle_auto(name.into(), None)))
                    })
                    .unwrap_or_else(|| "?".into());
                let file = frame.location.as_ref().and_then(|l| l.file).map(|file| self.relative(file));
                let line = frame.location.as_ref().and_then(|l| l.line);
                places.push(Place { function, file, line });
            }
        }
        if places.is_empty()
            && let Some(name) = image.debug.find_symbol(u64::from(pc))
        {
            places.push(Place {
                function: without_hash(&addr2line::demangle_auto(name.into(), None)),
                file: None,
                line: None,
            });
        }
        places
    }

    /// One PC in words: the author's function and line if the PC has one, else the
    /// innermost function (`fault_probe::spins (qemu/firmware/src/bin/fault_probe.rs:88)`);
    /// for a report that holds only a PC, such as a kernel stopped for running past its
    /// instruction budget.
    pub fn describe(&self, pc: u32) -> String {
        let places = self.places(pc);
        match places.iter().find(|place| place.is_authors()).or(places.first()) {
            Some(place) => format!("{} ({})", place.function, place.source()),
            None => format!("{pc:#010x} (in no image)"),
        }
    }

    /// The first of `pcs` (innermost first: a PC, then its backtrace's call sites)
    /// that is the kernel's own line, in words as [`Symbolizer::describe`] puts it;
    /// the first PC's description if none is.
    pub fn describe_kernels(&self, pcs: impl IntoIterator<Item = u32>) -> String {
        let pcs: Vec<u32> = pcs.into_iter().collect();
        match self.kernels_frame(pcs.iter().copied()) {
            Some((_, place)) => format!("{} ({})", place.function, place.source()),
            None => self.describe(pcs.first().copied().unwrap_or(0)),
        }
    }

    /// The first of `pcs` (innermost first) that is the kernel's own line: its index,
    /// and the kernel's function there.
    fn kernels_frame(&self, pcs: impl IntoIterator<Item = u32>) -> Option<(usize, Place)> {
        pcs.into_iter()
            .enumerate()
            .find_map(|(at, pc)| Some((at, self.places(pc).into_iter().find(Place::is_kernels)?)))
    }

    /// A call site in words: its function and line, then each function inlined there,
    /// outermost last (`relu (src/lib.rs:12), inlined into entry (src/lib.rs:30)`),
    /// library helpers left out.
    pub fn describe_call(&self, site: u32) -> String {
        let places = self.places(site);
        let shown: Vec<String> = places
            .iter()
            .filter(|place| !place.is_library())
            .map(|place| format!("{} ({})", place.function, place.source()))
            .collect();
        if shown.is_empty() { self.describe(site) } else { shown.join(", inlined into ") }
    }

    fn relative(&self, file: &str) -> String {
        let inside = self.source_roots.iter().find_map(|root| Path::new(file).strip_prefix(root).ok());
        inside.map_or_else(|| file.to_string(), |path| path.display().to_string())
    }

    /// The places of each frame of `fault`: a return address is looked up one byte
    /// back, inside its call instruction, so its line is the call's.
    fn frame_places(&self, fault: &FaultLine) -> Vec<(u32, Vec<Place>)> {
        let lookup = |(i, &pc): (usize, &u32)| (pc, self.places(if i == 0 { pc } else { pc.wrapping_sub(1) }));
        fault.frames.iter().enumerate().map(lookup).collect()
    }

    /// The report an author reads: one screen, naming what ran (`` kernel `relu` ``,
    /// `` program `bad_access` ``), the source line that is the author's, and the
    /// backtrace (repeated frames folded).
    pub fn report(&self, fault: &FaultLine, what_ran: &str) -> String {
        let frames = self.frame_places(fault);
        let mut text = format!("{} in {what_ran} on core {}\n", fault.what(), fault.core);
        let authors = frames.iter().flat_map(|(_, places)| places).find(|place| place.is_authors());
        if let Some(place) = authors {
            let _ = writeln!(text, "  at {} ({})", place.function, place.source());
        }
        let _ = writeln!(text, "  backtrace, innermost first ({} frames):", fault.depth);
        let mut shown = 0u32;
        let mut index = 0;
        while index < frames.len() {
            let (pc, places) = &frames[index];
            let same = frames[index..].iter().take_while(|(_, p)| p == places).count();
            // addr2line lists inlined functions innermost first, each with its own line
            // (the PC's, then each call site): the frame's function is the last.
            let outer = places.last();
            let name = outer.map_or("?", |p| p.function.as_str());
            let source = outer.map_or("?".into(), Place::source);
            let repeat = if same > 1 { format!("  (x{same})") } else { String::new() };
            let _ = writeln!(text, "    #{shown:<3} {pc:#010x} {name}  {source}{repeat}");
            // Inlined library helpers (formatting, `read_volatile`) only add noise.
            for inlined in places.iter().rev().skip(1).filter(|place| !place.is_library()) {
                let _ = writeln!(text, "         inlined {}  {}", inlined.function, inlined.source());
            }
            shown += same as u32;
            index += same;
        }
        if fault.depth > shown {
            let _ = writeln!(text, "    ... {} more frames", fault.depth - shown);
        }
        text
    }
}

/// `name` without the `::h0123456789abcdef` hash of a legacy Rust symbol.
fn without_hash(name: &str) -> String {
    match name.rsplit_once("::h") {
        Some((path, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => path.into(),
        _ => name.into(),
    }
}

/// Whether an op that ended with `status` matches a `FAULT` line of `kind`.
fn stops_with(kind: FaultKind, status: OpStatus) -> bool {
    match kind {
        FaultKind::Exception | FaultKind::StackOverflow | FaultKind::Signal => {
            matches!(status, OpStatus::Exception(_))
        }
        FaultKind::Panic | FaultKind::DoublePanic => status == OpStatus::Exit(neuroncustomop::arch::EXIT_PANIC),
        FaultKind::Abort => status == OpStatus::Abort,
    }
}

/// One report per fault of a run: each core's `FAULT` lines (on the loader's stderr
/// for exceptions and stack overflows, in the kernel's own output for panics and
/// aborts) matched, in order, with the ops of that core that stopped that way.
pub fn explain(report: &Report, symbols: &Symbolizer) -> Vec<String> {
    let stderr_faults = FaultLine::all(&report.outcome.stderr);
    let mut reports = Vec::new();
    for (&core, core_report) in &report.cores {
        let mut from_stderr = stderr_faults.iter().filter(|f| f.core == core);
        for (index, op) in core_report.ops.iter().enumerate() {
            let printed =
                core_report.stdout.get(&(index as u32)).map(|(bytes, _)| String::from_utf8_lossy(bytes).into_owned());
            let printed_fault = printed
                .as_deref()
                .map(FaultLine::all)
                .unwrap_or_default()
                .into_iter()
                .find(|f| stops_with(f.kind, op.status));
            let fault = match printed_fault {
                Some(fault) => Some(fault),
                None if matches!(op.status, OpStatus::Exception(_)) => from_stderr.next().cloned(),
                None => None,
            };
            if let Some(fault) = fault {
                reports.push(format!("op {index}: {}", symbols.report(&fault, &format!("kernel `{}`", op.function))));
            }
        }
        // A kernel stopped at its instruction budget has no frames, only where it was.
        for stopped in &core_report.over_budget {
            reports.push(format!("op {}: {stopped}\n  at {}\n", stopped.op, symbols.describe(stopped.pc)));
        }
    }
    reports
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_line_parses_and_anything_else_does_not() {
        let line = "FAULT core=3 kind=stack-overflow cause=2214593012 pc=0x84000123 vaddr=0x851f07f0 depth=4000 frames=0x84000123,0x8400011a";
        let fault = FaultLine::parse(line).unwrap();
        assert_eq!(fault.core, 3);
        assert_eq!(fault.kind, FaultKind::StackOverflow);
        assert_eq!(fault.vaddr, 0x851f_07f0);
        assert_eq!(fault.depth, 4000);
        assert_eq!(fault.frames, [0x8400_0123, 0x8400_011a]);
        assert_eq!(fault.pc(), 0x8400_0123);
        assert_eq!(FaultLine::parse("FAULT core=0 kind=panic cause=0 pc=0x1 vaddr=0x0 depth=1 frames=0x1,zz"), None);
        assert_eq!(FaultLine::parse("OP 0 core=0 function=f status=0"), None);
        assert_eq!(FaultLine::all(&format!("x\n{line}\ny\n{line}")).len(), 2);
    }

    #[test]
    fn legacy_hashes_are_dropped_and_other_names_kept() {
        assert_eq!(without_hash("fault_probe::depth_first::h0123456789abcdef"), "fault_probe::depth_first");
        assert_eq!(without_hash("a::hello"), "a::hello");
    }
}
