//! The host tier's sanitizers (`--sanitize address|undefined|thread`): how a library is
//! built with one, what the loader does for it at run time, and its report said again
//! in the device's terms.
//!
//! - **AddressSanitizer.** The loader poisons the tensor area but the job's own bytes
//!   ([`crate::loader`]); the runtime, built with its feature `host-asan`, poisons its
//!   heaps' arenas and the redzone after every block, and tells the loader of every
//!   block taken and given back (`watch_heaps`), so a report can name the heap block
//!   a bad address is in or past, and where it was allocated and freed
//!   (`on_asan_report`).
//! - **ThreadSanitizer.** The loader is not instrumented: it tells TSan where its cores'
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

    /// The runtime's cargo feature for it, beside `host-tier`: the heaps' poisoning.
    pub(crate) fn runtime_feature(self) -> Option<&'static str> {
        (self == Self::Address).then_some("host-asan")
    }

    /// rustc's flags for the author's crate, or `None` when rustc has no such
    /// sanitizer. `-Zsanitizer` is a target modifier: the dependencies (the runtime,
    /// `core`) are not instrumented, which is what the C build does too, hence the
    /// allowed mismatch.
    pub(crate) fn rustc_flags(self) -> Option<Vec<String>> {
        (self != Self::Undefined).then(|| {
            [&format!("-Zsanitizer={}", self.name()), "-Zexternal-clangrt", "-Cunsafe-allow-abi-mismatch=sanitizer"]
                .map(String::from)
                .to_vec()
        })
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
    } else if address >= crate::cores::DATA_SCRATCH_BASE as usize {
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
    let repo = neuroncustomop_machine::toolchain::repo_root();
    let ours = [repo.join("runtime"), Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()];
    stack.iter().find_map(|&pc| {
        // A return address: the call is the instruction before.
        let (function, file, line) = crate::locate(pc.checked_sub(1)?)?;
        let ours = ours.iter().any(|dir| Path::new(&file).starts_with(dir))
            || file.starts_with("/rustc/")
            || file.contains("/library/");
        (!ours).then(|| format!("{}:{line} ({function})", short(&file)))
    })
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
        // The loader starts its cores' threads first and in order: T1 is core 0.
        let thread = access.split("thread T").nth(1).and_then(|rest| rest.split_whitespace().next());
        let core = thread.and_then(|t| t.parse::<u32>().ok()).and_then(|t| t.checked_sub(1)).map(|c| c.to_string());
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
    // The first frame of the report outside the sanitizer's runtime: the kernel's line.
    let frames = output.lines().map(str::trim).filter(|line| line.starts_with('#'));
    if let Some(at) = frames.clone().find(|line| !line.contains("libclang_rt")).and_then(frame_place) {
        said.push(format!("at {at}"));
    }
    Some(format!("{}\nin the device's terms: {}", error.trim(), said.join(", ")))
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

/// `function file:line` of a report's stack frame: `#0 0x… in f /a/b.c:11:5` (ASan) or
/// `#0 f /a/b.c:11:5 (lib.so+0x…)` (TSan), the column and object left out.
fn frame_place(frame: &str) -> Option<String> {
    let rest = match frame.split_once(" in ") {
        Some((_, rest)) => rest,
        None => frame.split_once(' ')?.1,
    };
    let mut words = rest.split_whitespace();
    let function = words.next()?;
    let location = words.next().filter(|w| w.contains(':'))?;
    let mut parts = location.rsplitn(3, ':').collect::<Vec<_>>();
    parts.reverse();
    // file:line:column, or file:line.
    let (file, line) = match parts.as_slice() {
        [file, line, column] if column.parse::<u32>().is_ok() => (*file, *line),
        [first, file, line] => (&location[..first.len() + 1 + file.len()], *line),
        [file, line] => (*file, *line),
        _ => return None,
    };
    Some(format!("{function} ({}:{line})", short(file)))
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
        let place = lines[index + 1..].iter().map(|l| l.trim()).find(|l| l.starts_with('#')).and_then(frame_place);
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
