//! The host tier's sanitizers (`--sanitize address|undefined|thread`): how a library is
//! built with one, what the loader does for it at run time, and its report said again
//! in the device's terms.
//!
//! - **AddressSanitizer.** The loader poisons the tensor area but the job's own bytes
//!   ([`crate::loader`]); the runtime, built with its feature `host-asan`, poisons its
//!   heaps' arenas and the redzone after every block, and tells the loader of every
//!   block taken and given back (`watch_heaps`), so a report can name the heap block
//!   a bad address is in or past, and where it was allocated and freed
//!   (`on_asan_report`). The author's code calls the runtime for each of ASan's checks,
//!   which keeps the cores apart first (`crate::apart`).
//! - **ThreadSanitizer.** The runtime, built with its feature `host-tsan`, tells TSan
//!   what each of its copies reads and writes (runtime/data_transfer/mod.rs), so a race
//!   made through `neuron_memcpy` or the TCM and stream accessors is seen. The loader is
//!   not instrumented: it tells TSan where its cores'
//!   threads hand work over (`handed_over`, `taken_over`), so the only races TSan
//!   sees are the kernels' own.
//! - **Rust libraries** build with rustc's `-Zsanitizer` (address or thread), enabled on
//!   the stable toolchain with `RUSTC_BOOTSTRAP=1` as the fuzz step does, on the
//!   author's crate only (the runtime stays uninstrumented, as for C), with clang's
//!   runtime, the one the loader preloads (`-Zexternal-clangrt`).

use std::ffi::{CStr, c_char, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// A sanitizer the host tier builds a library with (`--sanitize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sanitizer {
    /// AddressSanitizer: out-of-bounds accesses (the space around every tensor and
    /// every heap block is poisoned), use after free.
    Address,
    /// UndefinedBehaviorSanitizer: signed overflow, bad shifts, misaligned pointers...
    /// (C and C++ libraries: rustc has no UBSan).
    Undefined,
    /// ThreadSanitizer: two cores accessing one element, one of them writing, with
    /// nothing ordering them.
    Thread,
}

impl Sanitizer {
    /// Its name, as `--sanitize` takes it and clang's `-fsanitize=` too.
    pub fn name(self) -> &'static str {
        match self {
            Self::Address => "address",
            Self::Undefined => "undefined",
            Self::Thread => "thread",
        }
    }

    /// Clang's runtime for it, preloaded into the loader (which is not instrumented).
    pub(crate) fn runtime(self) -> PathBuf {
        let file = match self {
            Self::Address => "libclang_rt.asan-x86_64.so",
            Self::Undefined => "libclang_rt.ubsan_standalone-x86_64.so",
            Self::Thread => "libclang_rt.tsan-x86_64.so",
        };
        Path::new(CLANG_RUNTIMES).join(file)
    }

    /// Clang's flags for a C or C++ source built with it.
    pub(crate) fn clang_flags(self) -> Vec<String> {
        vec![format!("-fsanitize={}", self.name()), "-fno-omit-frame-pointer".into()]
    }

    /// The runtime's cargo feature for it, beside `host-tier`: the heaps' poisoning
    /// (address), the copies' annotations (thread).
    pub(crate) fn runtime_feature(self) -> Option<&'static str> {
        match self {
            Self::Address => Some("host-asan"),
            Self::Thread => Some("host-tsan"),
            Self::Undefined => None,
        }
    }

    /// rustc's flags for the author's crate, or `None` when rustc has no such
    /// sanitizer. `-Zsanitizer` is a target modifier: the dependencies (the runtime,
    /// `core`) are not instrumented, which is what the C build does too, hence the
    /// allowed mismatch.
    pub(crate) fn rustc_flags(self) -> Option<Vec<String>> {
        (self != Self::Undefined).then(|| rustc_sanitizer(self.name()))
    }

    /// The loader's environment for it: the runtime preloaded first, reports
    /// symbolized, the first error ends the run (its report is the call's error).
    pub(crate) fn environment(self) -> Vec<String> {
        let mut variables = vec![
            format!("LD_PRELOAD={}", self.runtime().display()),
            format!("{}_SYMBOLIZER_PATH={SYMBOLIZER}", if self == Self::Thread { "TSAN" } else { "ASAN" }),
        ];
        variables.push(match self {
            // Leaks are the runtime heap's business, not ASan's.
            Self::Address => "ASAN_OPTIONS=detect_leaks=0".into(),
            Self::Undefined => "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1".into(),
            // The cores' threads wait for work until the process ends: not leaks.
            Self::Thread => {
                format!("TSAN_OPTIONS=halt_on_error=1:report_thread_leaks=0:external_symbolizer_path={SYMBOLIZER}")
            }
        });
        variables
    }
}

/// Whether a build with `sanitizer` keeps the cores apart: without one, or with
/// UndefinedBehaviorSanitizer or AddressSanitizer (whose checks the runtime's calls
/// make, after their own); not with ThreadSanitizer, whose instrumentation clang and
/// rustc will not combine with the AddressSanitizer pass.
pub fn keeps_cores_apart(sanitizer: Option<Sanitizer>) -> bool {
    sanitizer != Some(Sanitizer::Thread)
}

/// rustc's flags for the author's crate built with its sanitizer `name`
/// ([`Sanitizer::rustc_flags`], and `crate::apart`'s store calls), the runtime the
/// loader preloads (if any) not linked in.
pub(crate) fn rustc_sanitizer(name: &str) -> Vec<String> {
    [&format!("-Zsanitizer={name}"), "-Zexternal-clangrt", "-Cunsafe-allow-abi-mismatch=sanitizer"]
        .map(String::from)
        .to_vec()
}

/// What a host-tier run with `sanitizer` (or none) checks, and what it cannot see, in
/// one sentence: the `checks` line every `--host` run prints, so a clean result is not
/// read as more than it is. The device checks all of it (a call without `--host`).
/// Every run has the host tier's own checks (`crate::checks`); a build with store calls
/// (`crate::apart`: without a sanitizer, or with `undefined`) keeps the cores apart;
/// where this machine has protection keys, their stores into another core's scratch are
/// seen in every build.
pub fn coverage(sanitizer: Option<Sanitizer>) -> String {
    coverage_with(sanitizer, crate::checks::protection_keys())
}

/// [`coverage`], on a machine with protection keys (`keyed`) or without.
fn coverage_with(sanitizer: Option<Sanitizer>, keyed: bool) -> String {
    let (apart, other_cores) = match (keeps_cores_apart(sanitizer), keyed) {
        (true, _) => (" and into another core's stack, data or HBM scratch", ""),
        (false, true) => (
            " and into another core's data or HBM scratch, the runtime's copies into another core's stack",
            "a kernel's own stores into another core's stack (this build does not keep the cores apart: run \
             without --sanitize), ",
        ),
        (false, false) => (
            ", the runtime's copies into another core's stack, data or HBM scratch",
            "a kernel's own stores into another core's stack, data or HBM scratch (this build does not keep the \
             cores apart: run without --sanitize), ",
        ),
    };
    let own = format!("the host tier's own: stores into inputs{apart}, double and invalid frees, leaks");
    match sanitizer {
        None => format!(
            "{own}; `ncop run --host --sanitize address` (or `thread`) checks more; unseen here: out-of-bounds accesses, use after free, \
             races, {other_cores}reads of never-written memory (the device checks every access: run without \
             --host)"
        ),
        Some(Sanitizer::Address) => format!(
            "AddressSanitizer: out-of-bounds accesses around tensors and heap and TCM blocks, use after free; \
             {own}; unseen on the host tier: {other_cores}races, reads of never-written memory (the device \
             checks them: run without --host)"
        ),
        Some(Sanitizer::Thread) => format!(
            "ThreadSanitizer: races between cores on memory the kernels' own code and the runtime's copies \
             (neuron_memcpy, the TCM and stream accessors) touch; {own}; unseen on the host tier: out-of-bounds \
             accesses, use after free, {other_cores}reads of never-written memory (the device checks them: run \
             without --host)"
        ),
        Some(Sanitizer::Undefined) => format!(
            "UndefinedBehaviorSanitizer: signed overflow, bad shifts, misaligned pointers; {own}; unseen on the \
             host tier: out-of-bounds accesses, use after free, races, {other_cores}reads of never-written \
             memory (the device checks them: run without --host)"
        ),
    }
}

/// Every core a sanitizer's report in `output` names: the accessing thread of an
/// AddressSanitizer report; both threads of a ThreadSanitizer race (`Write of size 4
/// at … by thread T4`, `Previous write … by thread T5`), in the order named.
pub fn involved_cores(output: &str) -> Vec<usize> {
    let mut cores = Vec::new();
    for line in output.lines().map(str::trim_start) {
        let lower = line.to_lowercase();
        let access = ["read of size", "write of size", "previous read of size", "previous write of size"]
            .iter()
            .any(|start| lower.starts_with(start));
        if let Some(core) = access.then(|| access_core(line)).flatten()
            && !cores.contains(&core)
        {
            cores.push(core);
        }
    }
    cores
}

/// Where Debian's libclang-rt-22-dev puts the sanitizer runtimes.
const CLANG_RUNTIMES: &str = "/usr/lib/llvm-22/lib/clang/22/lib/linux";
/// The symbolizer the sanitizers print source lines with.
const SYMBOLIZER: &str = "/usr/lib/llvm-22/bin/llvm-symbolizer";

/// A function of the sanitizer runtime the process runs with, if it has one.
fn runtime_function(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: a lookup in the global scope with a NUL-terminated name.
    let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!address.is_null()).then_some(address)
}

// ---------------------------------------------------------------- ThreadSanitizer

/// TSan's `void f(void *addr)` called `name`, when the process runs with TSan.
fn tsan_annotation(found: &OnceLock<usize>, name: &CStr) -> Option<unsafe extern "C" fn(*mut c_void)> {
    let address = *found.get_or_init(|| runtime_function(name).map_or(0, |a| a as usize));
    // SAFETY: `__tsan_release` and `__tsan_acquire` (sanitizer/tsan_interface.h) have
    // this signature.
    (address != 0).then(|| unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void)>(address) })
}

/// One sync object per core and direction: loader to core, core to loader. Separate
/// ones, so a core's hand-back orders nothing on another core's kernel.
static HANDOFFS: [[u8; 2]; neuroncustomop_wire::job::CORES] = [[0; 2]; neuroncustomop_wire::job::CORES];

/// Which way work is handed over.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Direction {
    /// The loader hands a core its work (the job's bytes written before).
    ToCore = 0,
    /// A core hands its answer back (the op's output written before).
    ToLoader = 1,
}

/// Before handing work over (a channel send): what the sender did happens before what
/// the receiver does after [`taken_over`]. The loader's channels are not instrumented,
/// so TSan would not know. Nothing without TSan.
pub(crate) fn handed_over(core: u32, direction: Direction) {
    static RELEASE: OnceLock<usize> = OnceLock::new();
    if let Some(release) = tsan_annotation(&RELEASE, c"__tsan_release") {
        // SAFETY: TSan only uses the address as a sync object's key.
        unsafe { release((&raw const HANDOFFS[core as usize][direction as usize]).cast_mut().cast()) };
    }
}

/// After work was taken over (a channel receive): see [`handed_over`].
pub(crate) fn taken_over(core: u32, direction: Direction) {
    static ACQUIRE: OnceLock<usize> = OnceLock::new();
    if let Some(acquire) = tsan_annotation(&ACQUIRE, c"__tsan_acquire") {
        // SAFETY: as in `handed_over`.
        unsafe { acquire((&raw const HANDOFFS[core as usize][direction as usize]).cast_mut().cast()) };
    }
}

// ---------------------------------------------------------------- AddressSanitizer

/// A heap block the runtime handed out, as the loader saw it.
#[derive(Debug, Clone)]
struct Block {
    start: usize,
    /// Usable bytes (the redzone after them excluded).
    bytes: usize,
    core: u32,
    tcm: bool,
    /// Return addresses of the allocation's stack (innermost first).
    allocated: Vec<usize>,
    /// The free's stack, once freed.
    freed: Option<Vec<usize>>,
}

/// Every heap block of every core, live or freed (a freed one until its bytes are
/// handed out again or its arena emptied).
static BLOCKS: Mutex<Vec<Block>> = Mutex::new(Vec::new());

/// The runtime's observer events (runtime/allocators/sanitize.rs).
const TAKEN_FROM_HEAP: u32 = 0;
const TAKEN_FROM_TCM: u32 = 1;
const GIVEN_BACK: u32 = 2;
const EMPTIED: u32 = 3;

/// The stack of the runtime's call into the observer, the observer's own frame left out.
fn stack() -> Vec<usize> {
    let mut frames = [std::ptr::null_mut::<c_void>(); 32];
    // SAFETY: `backtrace` fills at most `frames.len()` entries.
    let count = unsafe { libc::backtrace(frames.as_mut_ptr(), frames.len() as i32) };
    frames[..count.max(0) as usize].iter().skip(1).map(|&pc| pc as usize).collect()
}

/// The runtime's heap observer (`neuron_host_heap_observer`): records the blocks.
unsafe extern "C" fn observe(event: u32, block: *const c_void, bytes: usize) {
    let (start, core) = (block as usize, crate::cores::core());
    let overlaps = |b: &Block| b.start < start + bytes.max(1) && start < b.start + b.bytes.max(1);
    let mut blocks = BLOCKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match event {
        TAKEN_FROM_HEAP | TAKEN_FROM_TCM => {
            blocks.retain(|b| !overlaps(b));
            let tcm = event == TAKEN_FROM_TCM;
            blocks.push(Block { start, bytes, core, tcm, allocated: stack(), freed: None });
        }
        GIVEN_BACK => {
            if let Some(b) = blocks.iter_mut().find(|b| b.start == start && b.freed.is_none()) {
                b.freed = Some(stack());
            }
        }
        EMPTIED => blocks.retain(|b| !overlaps(b)),
        _ => {}
    }
}

/// Tells a library copy's runtime (dlopen `handle`) to report its heap blocks, when it
/// was built for ASan (it then exports `neuron_host_heap_observer`).
pub(crate) fn watch_heaps(handle: *mut c_void) {
    // SAFETY: a loaded handle and a NUL-terminated name.
    let setter = unsafe { libc::dlsym(handle, c"neuron_host_heap_observer".as_ptr()) };
    if setter.is_null() {
        return;
    }
    type Observer = unsafe extern "C" fn(u32, *const c_void, usize);
    // SAFETY: the runtime's `void neuron_host_heap_observer(observer)` (its sanitize.rs).
    let setter = unsafe { std::mem::transmute::<*mut c_void, extern "C" fn(Option<Observer>)>(setter) };
    setter(Some(observe));
}

/// Has ASan call [`on_asan_report`] at the end of each report, when the process runs
/// with it.
pub(crate) fn install_asan_report() {
    if let Some(set) = runtime_function(c"__asan_set_error_report_callback") {
        // SAFETY: ASan's `void __asan_set_error_report_callback(void (*)(const char *))`.
        let set = unsafe { std::mem::transmute::<*mut c_void, extern "C" fn(extern "C" fn(*const c_char))>(set) };
        set(on_asan_report);
    }
}

/// ASan's report callback: after its report, the heap block the bad address is in or
/// past, in one line (`HEAP-BLOCK …`) [`explain`] reads.
extern "C" fn on_asan_report(_report: *const c_char) {
    let Some(get) = runtime_function(c"__asan_get_report_address") else { return };
    // SAFETY: ASan's `void *__asan_get_report_address(void)`, valid during a report.
    let address = unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> usize>(get)() };
    let blocks = BLOCKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(said) = heap_block_at(&blocks, address) {
        eprintln!("HEAP-BLOCK{said}");
    }
}

/// Where `address` is against the blocks: inside one (live or freed), or past the end
/// of the nearest one below it, within its granules and redzone.
fn heap_block_at(blocks: &[Block], address: usize) -> Option<String> {
    const GRANULE: usize = neuroncustomop::allocators::GRANULE;
    let block = blocks
        .iter()
        .filter(|b| b.start <= address && address < b.start + b.bytes.div_ceil(GRANULE).max(1) * GRANULE + GRANULE)
        .max_by_key(|b| (b.freed.is_none(), b.start))?;
    let pool = if block.tcm {
        "the TCM pool"
    } else if address >= neuroncustomop_wire::job::DATA_SCRATCH_BASE as usize {
        "the dataram heap"
    } else {
        "the HBM heap"
    };
    let offset = address - block.start;
    let place = if offset < block.bytes {
        format!(" at byte {offset} of")
    } else {
        format!(" {} bytes past the end of", offset - block.bytes)
    };
    let state = if block.freed.is_some() { "freed " } else { "" };
    let mut said = format!("{place} a {state}{}-byte block of {pool}", block.bytes);
    if let Some(at) = kernel_line(&block.allocated) {
        said.push_str(&format!(" allocated on core {} at {at}", block.core));
    }
    if let Some(at) = block.freed.as_deref().and_then(kernel_line) {
        said.push_str(&format!(", freed at {at}"));
    }
    Some(said)
}

/// The first frame of `stack` in the author's code: not the runtime's, nor Rust's
/// standard library's, nor the loader's (this crate's). `file:line (function)`.
fn kernel_line(stack: &[usize]) -> Option<String> {
    stack.iter().find_map(|&pc| {
        // A return address: the call is the instruction before.
        let (function, file, line) = crate::locate(pc.checked_sub(1)?)?;
        (!is_ours(&file)).then(|| format!("{}:{line} ({function})", short(&file)))
    })
}

/// Whether `file` is the runtime's, Rust's standard library's or the loader's (this
/// crate's) rather than the author's.
fn is_ours(file: &str) -> bool {
    let home = neuroncustomop_machine::home::Home::locate().ok();
    let runtime = home.map(|home| home.root().join("runtime"));
    // This crate's folder as it was compiled: the loader's own frames carry the paths its
    // DWARF recorded then, installed or not. Only compared with, never read from.
    let ours = runtime.into_iter().chain([Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()]);
    ours.into_iter().any(|dir| Path::new(file).starts_with(dir))
        || file.starts_with("/rustc/")
        || file.contains("/library/")
}

/// A source path as reports show it: its file name.
fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

// ---------------------------------------------------------------- Reports

/// A sanitizer's report (in `output`) said again in the device's terms: which tensor
/// or heap block the bad address is in or past (`tensors`: name, device address,
/// bytes), on which core, at which line of the kernel; for a data race, both cores and
/// both lines, and the tensor element. `None` when `output` holds no such report.
pub fn explain(output: &str, tensors: &[(String, u32, u32)]) -> Option<String> {
    if let Some(race) = output.lines().position(|line| line.contains("WARNING: ThreadSanitizer")) {
        return Some(explain_race(output, race, tensors));
    }
    let error =
        output.lines().find(|line| line.contains("ERROR: AddressSanitizer") || line.contains("runtime error:"))?;
    let mut said = Vec::new();
    let access = output.lines().find(|line| line.starts_with("READ of size") || line.starts_with("WRITE of size"));
    if let Some(access) = access {
        let (kind, size, address) = access_words(access);
        let core = access_core(access).map(|c| c.to_string());
        let heap = output.lines().find_map(|line| line.strip_prefix("HEAP-BLOCK"));
        let place = match (heap, address) {
            (Some(heap), _) => heap.to_string(),
            (None, Some(address)) => where_in(address, tensors),
            (None, None) => String::new(),
        };
        said.push(format!(
            "a {kind} of {size} bytes{place}{}",
            core.map(|c| format!(", on core {c}")).unwrap_or_default()
        ));
    }
    // The first stack of the report: the bad access's.
    if let Some(at) = kernel_frame(output.lines().map(str::trim).skip_while(|line| !line.starts_with('#'))) {
        said.push(format!("at {at}"));
    }
    Some(format!("{}\nin the device's terms: {}", error.trim(), said.join(", ")))
}

/// The core whose kernel made the bad access of an AddressSanitizer report in `output`
/// (the one that ended the host tier's loader); `None` when `output` names none.
pub fn stopped_core(output: &str) -> Option<usize> {
    output
        .lines()
        .find(|line| line.starts_with("READ of size") || line.starts_with("WRITE of size"))
        .and_then(access_core)
}

/// The core of an access line's `thread T<n>` (`T<n>:`): the loader starts its cores' threads
/// first and in order, so T1 is core 0.
fn access_core(access: &str) -> Option<usize> {
    let thread = access.split("thread T").nth(1)?.split_whitespace().next()?;
    // TSan's `by thread T4:` ends in a colon.
    thread.trim_end_matches(':').parse::<usize>().ok()?.checked_sub(1)
}

/// `(kind, size, address)` of an access line: `WRITE of size 4 at 0x… thread T1` (ASan)
/// or `Write of size 4 at 0x… by thread T2:` (TSan).
fn access_words(access: &str) -> (String, String, Option<u64>) {
    let mut words = access.split_whitespace();
    let kind = words.next().unwrap_or("").to_lowercase();
    let size = words.nth(2).unwrap_or("?").to_string();
    let address = access
        .split_whitespace()
        .skip_while(|w| *w != "at")
        .nth(1)
        .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
    (kind, size, address)
}

/// The kernel's line in a report's stack (its frames, `#0` first, up to the first line
/// that is not a frame): the first frame outside the sanitizer's runtime, the Rust
/// standard library, the device runtime and the loader ([`is_ours`]): an overrun in
/// `core::ptr::read` or an accessor of the torch API is named at the author's line
/// that made it. The first frame with a source line when every frame is ours.
fn kernel_frame<'a>(stack: impl Iterator<Item = &'a str>) -> Option<String> {
    let frames: Vec<(String, String, String)> = stack
        .take_while(|line| line.starts_with('#'))
        .filter(|line| !line.contains("libclang_rt"))
        .filter_map(frame_parts)
        .collect();
    let (function, file, line) = frames.iter().find(|(_, file, _)| !is_ours(file)).or(frames.first())?;
    Some(format!("{function} ({}:{line})", short(file)))
}

/// `(function, file, line)` of a report's stack frame: `#0 0x… in f /a/b.c:11:5` (ASan)
/// or `#0 f /a/b.c:11:5 (lib.so+0x…)` (TSan), the column and object left out. A C++
/// function's name has spaces of its own (`f(torch::Tensor const&, double)`): the
/// location is the last word that is `file:line[:column]`, the function what precedes it.
fn frame_parts(frame: &str) -> Option<(String, String, String)> {
    let rest = match frame.split_once(" in ") {
        Some((_, rest)) => rest,
        None => frame.split_once(' ')?.1,
    };
    let words: Vec<&str> = rest.split(' ').filter(|word| !word.is_empty()).collect();
    let (at, (file, line)) = words.iter().enumerate().rev().find_map(|(at, word)| Some((at, location(word)?)))?;
    (at > 0).then(|| (words[..at].join(" "), file.to_string(), line.to_string()))
}

/// `(file, line)` of `file:line:column` or `file:line`; `None` for another word.
fn location(word: &str) -> Option<(&str, &str)> {
    let numeric = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let (head, last) = word.rsplit_once(':')?;
    if !numeric(last) {
        return None;
    }
    match head.rsplit_once(':') {
        Some((file, line)) if numeric(line) && !file.is_empty() => Some((file, line)),
        _ if !head.is_empty() => Some((head, last)),
        _ => None,
    }
}

/// A data race's report (its `WARNING` at line `at` of `output`): the element both
/// cores accessed and each core's access and line.
fn explain_race(output: &str, at: usize, tensors: &[(String, u32, u32)]) -> String {
    let lines: Vec<&str> = output.lines().skip(at).collect();
    // `Thread T3 'core 2' (tid=…)`: the cores by their threads' names.
    let core_of = |thread: &str| -> String {
        let named = lines.iter().find_map(|line| {
            let rest = line.trim().strip_prefix(&format!("Thread {thread} '"))?;
            rest.strip_prefix("core ").and_then(|r| r.split('\'').next()).map(str::to_string)
        });
        named.unwrap_or_else(|| {
            thread.trim_start_matches('T').parse::<u32>().map_or("?".into(), |t| (t - 1).to_string())
        })
    };
    let mut accesses = Vec::new();
    let mut element = None;
    for (index, line) in lines.iter().enumerate() {
        let trimmed = line.trim();
        let is_access = ["Read of size", "Write of size", "Previous read of size", "Previous write of size"]
            .iter()
            .any(|start| trimmed.starts_with(start));
        if !is_access || accesses.len() == 2 {
            continue;
        }
        let words = trimmed.trim_start_matches("Previous ");
        let (kind, size, address) = access_words(words);
        let thread = trimmed.split("by thread ").nth(1).map(|t| t.trim_end_matches(':').split_whitespace().next());
        let core = thread.flatten().map_or("?".into(), core_of);
        let place = kernel_frame(lines[index + 1..].iter().map(|l| l.trim()).skip_while(|l| !l.starts_with('#')));
        if element.is_none()
            && let Some(address) = address
        {
            element = Some(element_at(address, size.parse().unwrap_or(1), tensors));
        }
        accesses.push(format!(
            "core {core} {} {size} bytes at {}",
            if kind == "write" { "wrote" } else { "read" },
            place.unwrap_or_else(|| "?".into())
        ));
    }
    format!(
        "{}\nin the device's terms: two cores accessed {} with nothing ordering them: {}",
        lines[0].trim(),
        element.unwrap_or_else(|| "one address".into()),
        accesses.join("; ")
    )
}

/// `element 5 of the output (float32-sized: 4 bytes at 0x…)` for an access of `size`
/// bytes at `address`.
fn element_at(address: u64, size: u64, tensors: &[(String, u32, u32)]) -> String {
    let inside = tensors
        .iter()
        .find(|(_, start, len)| address >= u64::from(*start) && address < u64::from(*start) + u64::from(*len));
    match inside {
        Some((name, start, len)) => {
            let offset = address - u64::from(*start);
            format!("element {} of {name} (byte {offset} of its {len})", offset / size.max(1))
        }
        None => format!("the address {address:#x}, outside every tensor"),
    }
}

/// ` N bytes past the end of argument k (…)`, or ` inside …`, for `address`.
fn where_in(address: u64, tensors: &[(String, u32, u32)]) -> String {
    let inside = tensors
        .iter()
        .find(|(_, start, len)| address >= u64::from(*start) && address < u64::from(*start) + u64::from(*len));
    if let Some((name, start, len)) = inside {
        return format!(" at byte {} of {name} ({len} bytes at {start:#x})", address - u64::from(*start));
    }
    let before = tensors
        .iter()
        .filter(|(_, start, len)| u64::from(*start) + u64::from(*len) <= address)
        .max_by_key(|(_, start, len)| u64::from(*start) + u64::from(*len));
    match before {
        Some((name, start, len)) => format!(
            " {} bytes past the end of {name} ({len} bytes at {start:#x})",
            address - u64::from(*start) - u64::from(*len)
        ),
        None => format!(" at {address:#x}, outside every tensor"),
    }
}

#[cfg(test)]
mod tests {
    use super::{explain, involved_cores, stopped_core};

    /// The tensors of the reports below: a [37, 200] float32 input and its output.
    fn tensors() -> Vec<(String, u32, u32)> {
        vec![("argument 0".into(), 0x6200_0000, 29600), ("the output".into(), 0x6200_7500, 29600)]
    }

    /// The sentence after "in the device's terms:".
    fn device_terms(explained: &str) -> &str {
        explained.lines().find_map(|line| line.strip_prefix("in the device's terms: ")).expect(explained)
    }

    #[test]
    fn a_cxx_kernels_line_is_found_past_the_spaces_of_its_signature() {
        // ASan's report of a C++ kernel on the torch API reading past its input (core 7).
        let report = "\
==16598==ERROR: AddressSanitizer: use-after-poison on address 0x0000620073a0 at pc 0x7b81398ec22d
READ of size 4 at 0x0000620073a0 thread T8
    #0 0x7b81398ec22c in layer_norm_overread(torch::Tensor const&, double) /tmp/ln/layernorm.cpp:73:49
    #1 0x7b81398ee6f8 in void torchneuron::entry::pull_and_call<torch::Tensor (*)(torch::Tensor const&, double)>(torch::Tensor (*)(torch::Tensor const&, double)) /repo/runtime/include/torchneuron/entry.h:146:30

Address 0x0000620073a0 is a wild pointer inside of access range of size 0x000000000004.
";
        let explained = explain(report, &tensors()).expect("an ASan report");
        assert_eq!(
            device_terms(&explained),
            "a read of 4 bytes 0 bytes past the end of argument 0 (29600 bytes at 0x62000000), on core 7, at \
             layer_norm_overread(torch::Tensor const&, double) (layernorm.cpp:73)"
        );
    }

    #[test]
    fn the_core_that_stopped_the_loader_is_the_reports_thread() {
        let report = "==1==ERROR: AddressSanitizer: use-after-poison\nREAD of size 4 at 0x0000620073a0 thread T8\n";
        assert_eq!(stopped_core(report), Some(7));
        assert_eq!(stopped_core("WRITE of size 4 at 0x62000000 thread T1\n"), Some(0));
        // The main thread (T0) is the loader's own, no core's.
        assert_eq!(stopped_core("WRITE of size 4 at 0x62000000 thread T0\n"), None);
        assert_eq!(stopped_core("no report"), None);
    }

    #[test]
    fn a_rust_kernels_line_is_its_own_not_the_standard_librarys() {
        let report = "\
==16632==ERROR: AddressSanitizer: use-after-poison on address 0x000062000fa4 at pc 0x7b9180f0c88d
READ of size 4 at 0x000062000fa4 thread T8
    #0 0x7b9180f0c88c in core::ptr::read_volatile::<f32> /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ptr/mod.rs:2091:9
    #1 0x7b9180f0c88c in rowops::clamp_overread /tmp/rowops/src/kernels.rs:97:33
    #2 0x7b9180f0d000 in neuroncustomop::start_exit::call /repo/runtime/start_exit/mod.rs:10:5

SUMMARY: AddressSanitizer: use-after-poison
";
        let explained = explain(report, &tensors()).expect("an ASan report");
        assert!(
            device_terms(&explained).ends_with(", on core 7, at rowops::clamp_overread (kernels.rs:97)"),
            "{explained}"
        );
    }

    #[test]
    fn a_race_names_each_cores_line_in_the_kernel() {
        let report = "\
WARNING: ThreadSanitizer: data race (pid=4242)
  Write of size 4 at 0x62007500 by thread T2:
    #0 core::ptr::write::<f32> /rustc/abc/library/core/src/ptr/mod.rs:1800:9 (librowops.so+0x1234)
    #1 rowops::racy /tmp/rowops/src/kernels.rs:12:5 (librowops.so+0x1240)

  Previous write of size 4 at 0x62007500 by thread T1:
    #0 clash(int, float) /tmp/clash/clash.cpp:8:5 (libclash.so+0x1250)

  Thread T2 'core 1' (tid=2, running) created by main thread at:
";
        let explained = explain(report, &tensors()).expect("a TSan report");
        assert_eq!(
            device_terms(&explained),
            "two cores accessed element 0 of the output (byte 0 of its 29600) with nothing ordering them: core 1 wrote \
             4 bytes at rowops::racy (kernels.rs:12); core 0 wrote 4 bytes at clash(int, float) (clash.cpp:8)"
        );
    }

    #[test]
    fn every_host_run_says_what_it_cannot_see() {
        use super::Sanitizer::{Address, Thread, Undefined};
        for keyed in [true, false] {
            for sanitizer in [None, Some(Address), Some(Thread), Some(Undefined)] {
                let line = super::coverage_with(sanitizer, keyed);
                let (seen, unseen) = line.split_once("unseen").unwrap();
                for checked in ["stores into inputs", "double and invalid frees", "leaks"] {
                    assert!(seen.contains(checked) && !unseen.contains(checked), "{checked}: {line}");
                }
                // Builds with store calls keep every core's stack and scratch from the
                // others' own stores; the address and thread builds only where there are
                // protection keys, and only the scratch.
                let apart = crate::sanitize::keeps_cores_apart(sanitizer);
                assert_eq!(seen.contains("and into another core's stack, data or HBM scratch"), apart, "{line}");
                assert_eq!(seen.contains("into another core's data or HBM scratch"), !apart && keyed, "{line}");
                assert_eq!(seen.contains("the runtime's copies into another core's stack"), !apart, "{line}");
                assert_eq!(unseen.contains("does not keep the cores apart"), !apart, "{line}");
                assert_eq!(unseen.contains("a kernel's own stores into another core's stack"), !apart, "{line}");
                assert_eq!(unseen.contains("data or HBM scratch"), !apart && !keyed, "{line}");
            }
            let address = super::coverage_with(Some(Address), keyed);
            assert!(address.split_once("unseen").unwrap().0.contains("use after free"), "{address}");
            let plain = super::coverage_with(None, keyed);
            assert!(plain.starts_with("the host tier's own: stores into inputs"), "{plain}");
            assert!(plain.split_once("unseen").unwrap().1.contains("out-of-bounds accesses"), "{plain}");
            // The sanitizers are `ncop run`'s option (not `ncop check`'s, which prints this too).
            assert!(plain.contains("`ncop run --host --sanitize address` (or `thread`) checks more"), "{plain}");
            let thread = super::coverage_with(Some(Thread), keyed);
            assert!(thread.split_once("unseen").unwrap().0.contains("the runtime's copies"), "{thread}");
        }
    }

    #[test]
    fn a_thread_sanitizer_race_names_both_cores() {
        let report = "WARNING: ThreadSanitizer: data race (pid=1)\n  Write of size 4 at 0x7f0000001000 by thread T4:\n\
                      #0 race misuse.c:100\n\n  Previous write of size 4 at 0x7f0000001000 by thread T5:\n";
        assert_eq!(involved_cores(report), [3, 4]);
        let report = "WRITE of size 4 at 0x62000100 thread T1\n";
        assert_eq!(involved_cores(report), [0]);
    }
}
