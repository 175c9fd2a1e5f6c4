//! What happens when a core cannot go on: a standalone start that returns, an exception,
//! a stack overflow, a panic or an abort. Each reports through the platform hooks
//! (`crate::arch::platform`) and stops.
//!
//! Every report ends with one machine-readable line the host turns into function names
//! and source lines (`qemu/machine/src/symbolize.rs`, with the image's DWARF). Its one
//! definition, shared with the host tier, is `neuroncustomop_wire::fault::Fault`
//! (qemu/wire), whose tests read this writer's form; it is written here without
//! `core::fmt`, as every report of the device is:
//!
//! ```text
//! FAULT core=<c> kind=<kind> cause=<n> pc=<hex> vaddr=<hex> depth=<n> frames=<hex>,<hex>,...
//! ```
//!
//! `frames` starts with the PC the fault stopped at, then the return addresses of the
//! windowed frames that called it, innermost first, at most [`MAX_FRAMES`]; `depth` is
//! how many frames the walk found in all (up to [`MAX_DEPTH`]). A return address keeps
//! only 30 bits (its top two are the caller's window increment), so each is completed
//! with the 1 GiB quarter of the PC below it: windowed calls never leave a quarter.

use super::platform;
use crate::arch::{EXIT_EXCEPTION, EXIT_PANIC, EXIT_STACK_OVERFLOW, cause_name};
use crate::start_exit::ReportLine;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Frames a `FAULT` line lists.
pub const MAX_FRAMES: usize = 16;
/// Frames the walk counts at most (an infinite recursion has thousands).
pub const MAX_DEPTH: u32 = 100_000;
/// Bytes of the image stack below the armed limit: what frames still in the register
/// file when the check fires may use below it (their locals, and the save areas the
/// report's spill writes), so they stay inside the stack.
pub const STACK_RED_ZONE: u32 = 2048;
/// The largest step between two frames' stack pointers the walk believes: a frame of
/// the windowed ABI is at most 32 KiB (`entry`'s immediate).
const MAX_FRAME_BYTES: u32 = 32 * 1024;

unsafe extern "C" {
    /// The image's standalone entry (linker hook `main`; defaults to returning 0).
    fn main() -> i32;
    /// vectors.S: the stack limit word of this image's vector table (0: no check).
    static mut _neuron_stack_limit: u32;
    /// The image stack's bottom (linker script).
    static _stack_bottom: u8;
    /// cpu.S: spills every older register window, then writes its return address and
    /// stack pointer to `out`.
    fn xtensa_backtrace_origin(out: *mut [u32; 2]);
}

/// Called by `_start` once the core is set up: runs `main`, exits with its status.
#[unsafe(no_mangle)]
extern "C" fn __neuron_start() -> ! {
    // SAFETY: `main` is the image's entry hook, called once, on the stack `_start` set.
    let status = unsafe { main() };
    platform::exit(status)
}

/// Arms the window overflow handlers' stack check for the image stack
/// (`_stack_bottom` + [`STACK_RED_ZONE`]) and readies the fault path for a new fault.
/// For firmware that runs kernels on its own image stack (the simulated loader) and
/// has this image's vector table installed (VECBASE, as `_start` sets it); it calls
/// this again after a fault, whose report disarms the check.
pub fn arm_stack_limit() {
    let limit = (&raw const _stack_bottom).addr() as u32 + STACK_RED_ZONE;
    // SAFETY: a word of this image's vector table that only the window overflow
    // handlers read and only this core writes (each core has its own image).
    unsafe { (&raw mut _neuron_stack_limit).write_volatile(limit) };
    __neuron_fault_record.state.store(STATE_IDLE, Ordering::Relaxed);
}

/// What the vectors record about a fault (vectors.S writes it; its offsets are pinned
/// there and below).
#[repr(C)]
pub struct FaultRecord {
    /// [`STATE_IDLE`], then 1 while the vectors spill, then [`STATE_FRAMES`], or 3
    /// when the frames are not to be trusted (a double exception, or a fault while
    /// reporting one).
    state: AtomicU32,
    /// Index into [`FAULT_KINDS`].
    kind: AtomicU32,
    /// EXCCAUSE; for a stack overflow, the return address into the spilled frame.
    cause: AtomicU32,
    /// The faulting PC (EPC1, DEPC, EPC6).
    pc: AtomicU32,
    /// EXCVADDR; for a stack overflow, the stack pointer below the limit.
    vaddr: AtomicU32,
    /// The return address (a0) of the frame the vectors ran in.
    ra: AtomicU32,
    /// Its stack pointer (a1).
    sp: AtomicU32,
}

const _: () = {
    use core::mem::offset_of;
    assert!(offset_of!(FaultRecord, state) == 0);
    assert!(offset_of!(FaultRecord, kind) == 4);
    assert!(offset_of!(FaultRecord, cause) == 8);
    assert!(offset_of!(FaultRecord, pc) == 12);
    assert!(offset_of!(FaultRecord, vaddr) == 16);
    assert!(offset_of!(FaultRecord, ra) == 20);
    assert!(offset_of!(FaultRecord, sp) == 24);
};

/// No fault is being reported.
const STATE_IDLE: u32 = 0;
/// The faulting frame's callers are in memory: the backtrace can be walked.
const STATE_FRAMES: u32 = 2;

/// The fault the vectors are reporting.
#[unsafe(no_mangle)]
static __neuron_fault_record: FaultRecord = FaultRecord {
    state: AtomicU32::new(STATE_IDLE),
    kind: AtomicU32::new(0),
    cause: AtomicU32::new(0),
    pc: AtomicU32::new(0),
    vaddr: AtomicU32::new(0),
    ra: AtomicU32::new(0),
    sp: AtomicU32::new(0),
};

/// Which vector reported the fault (the kind the vectors store).
const FAULT_KINDS: [&str; 5] = ["user", "kernel", "double", "stack overflow", "debug"];
const KIND_STACK_OVERFLOW: u32 = 3;

/// The PCs of a backtrace: [`MAX_FRAMES`] at most, and how many frames there were.
struct Backtrace {
    frames: heapless::Vec<u32, MAX_FRAMES>,
    depth: u32,
}

impl Backtrace {
    /// A backtrace of one frame, at `pc`.
    fn at(pc: u32) -> Backtrace {
        let mut frames = heapless::Vec::new();
        let _ = frames.push(pc);
        Backtrace { frames, depth: 1 }
    }

    /// Records a frame (its PC, if fewer than [`MAX_FRAMES`] are kept).
    fn push(&mut self, pc: u32) {
        let _ = self.frames.push(pc);
        self.depth += 1;
    }

    /// Walks the callers of the frame at `pc` whose return address is `ra` and stack
    /// pointer `sp`: each caller's PC is `ra` completed with `pc`'s quarter, and its own
    /// pair was spilled to the base save area below its callee's stack pointer. Stops
    /// at a null return address (`_start` and the loader's resume leave one), or at a
    /// stack pointer that does not climb by a believable frame.
    ///
    /// # Safety
    /// Every caller of the frame at `pc` is spilled to its stack (the vectors' spill,
    /// `xtensa_backtrace_origin`), and those stacks are readable where the chain of
    /// stack pointers leads while it climbs by at most [`MAX_FRAME_BYTES`].
    #[inline(never)]
    unsafe fn walk_callers(&mut self, pc: u32, mut ra: u32, mut sp: u32) {
        let mut quarter = pc & 0xC000_0000;
        while ra != 0 && self.depth < MAX_DEPTH && sp % 4 == 0 && sp >= 16 {
            let caller = quarter | (ra & 0x3FFF_FFFF);
            self.push(caller);
            quarter = caller & 0xC000_0000;
            let save_area = sp as usize - 16;
            // SAFETY: the caller's a0 and a1, spilled below this frame's stack pointer
            // (this function's contract).
            let (next_ra, next_sp) = unsafe {
                (
                    core::ptr::with_exposed_provenance::<u32>(save_area).read_volatile(),
                    core::ptr::with_exposed_provenance::<u32>(save_area + 4).read_volatile(),
                )
            };
            if next_sp <= sp || next_sp - sp > MAX_FRAME_BYTES {
                break;
            }
            (ra, sp) = (next_ra, next_sp);
        }
    }

    /// The backtrace of whoever calls this: its caller's PC first, then theirs.
    #[inline(never)]
    fn of_caller() -> Backtrace {
        let mut origin = [0u32; 2];
        // SAFETY: writes two words to `origin`.
        unsafe { xtensa_backtrace_origin(&mut origin) };
        let [origin_ra, origin_sp] = origin;
        let here = Backtrace::of_caller as fn() -> Backtrace as usize as u32;
        let mut trace = Backtrace { frames: heapless::Vec::new(), depth: 0 };
        // SAFETY: xtensa_backtrace_origin spilled every frame of this call chain, which
        // stays on the stack while this function runs: this function's own return
        // address and stack pointer sit below xtensa_backtrace_origin's.
        unsafe {
            let save_area = core::ptr::with_exposed_provenance::<u32>(origin_sp as usize - 16);
            let (ra, sp) = (save_area.read_volatile(), save_area.add(1).read_volatile());
            trace.walk_callers(here & 0xC000_0000 | origin_ra & 0x3FFF_FFFF, ra, sp);
        }
        trace
    }
}

/// Writes the `FAULT` line (module docs) to stderr, in `line` (emptied first).
fn report_frames(line: &mut ReportLine, kind: &str, cause: u32, vaddr: u32, trace: &Backtrace) {
    let pc = trace.frames.first().copied().unwrap_or(0);
    line.clear().text("FAULT core=").decimal(super::prid()).text(" kind=").text(kind);
    line.text(" cause=").decimal(cause).text(" pc=").hex(pc).text(" vaddr=").hex(vaddr);
    line.text(" depth=").decimal(trace.depth).text(" frames=");
    for (i, &frame) in trace.frames.iter().enumerate() {
        line.text(if i == 0 { "" } else { "," }).hex(frame);
    }
    platform::write(2, line.end().as_bytes());
}

/// Called by the vectors (vectors.S) on the fault stack, with the record filled in;
/// never returns.
#[unsafe(no_mangle)]
extern "C" fn __neuron_fault(record: &FaultRecord) -> ! {
    let [kind, cause, pc, vaddr, ra, sp] =
        [&record.kind, &record.cause, &record.pc, &record.vaddr, &record.ra, &record.sp]
            .map(|w| w.load(Ordering::Relaxed));
    let name = FAULT_KINDS.get(kind as usize).copied().unwrap_or("unknown");
    let mut line = ReportLine::new();
    let frames = record.state.load(Ordering::Relaxed) == STATE_FRAMES;
    let mut trace = Backtrace::at(pc);
    if kind == KIND_STACK_OVERFLOW {
        line.text("stack overflow: SP=").hex(vaddr).text(" below the stack limit at PC=").hex(pc).end();
        // The PC is in the newest frame; `cause` returns into the oldest live one, whose
        // own return address and stack pointer are `ra` and `sp`. The frames between,
        // all below the limit, were discarded.
        let spilled = pc & 0xC000_0000 | cause & 0x3FFF_FFFF;
        trace.push(spilled);
        // SAFETY: every frame older than the spilled one is in memory (the hardware
        // spills oldest first), on the stack whose pointer is `sp`.
        unsafe { trace.walk_callers(spilled, ra, sp) };
    } else {
        // A double exception's PC is in DEPC, a debug exception's in EPC6 (the debug
        // level); the others' in EPC1 (vectors.S reads it).
        let pc_register = match kind {
            2 => "DEPC",
            4 => "EPC6",
            _ => "EPC1",
        };
        line.text(name).text(" exception: EXCCAUSE=").decimal(cause).text(" (").text(cause_name(cause));
        line.text(") ").text(pc_register).text("=").hex(pc).text(" EXCVADDR=").hex(vaddr).end();
        if frames {
            // SAFETY: the vectors spilled every frame older than the faulting one.
            unsafe { trace.walk_callers(pc, ra, sp) };
        }
    }
    platform::write(2, line.as_bytes());
    let kind_word = if kind == KIND_STACK_OVERFLOW { "stack-overflow" } else { "exception" };
    report_frames(&mut line, kind_word, cause, vaddr, &trace);
    platform::exit(if kind == KIND_STACK_OVERFLOW { EXIT_STACK_OVERFLOW } else { EXIT_EXCEPTION })
}

/// Set while the panic handler runs: a panic inside it (a message whose formatting
/// panics) is a double panic, reported without formatting anything of the author's.
static PANICKING: AtomicBool = AtomicBool::new(false);

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let mut line = ReportLine::new();
    // A load and a store, not a `swap` (a compare-and-swap loop on this core): the flag
    // is this core's own (each core has its own image) and one context runs at a time.
    let double = PANICKING.load(Ordering::Relaxed);
    PANICKING.store(true, Ordering::Relaxed);
    line.text(if double { "panicked while panicking" } else { "panicked" });
    if let Some(location) = info.location() {
        line.text(" at ").text(location.file()).text(":").decimal(location.line());
        line.text(":").decimal(location.column());
    }
    if !double {
        // The author's message, the one thing a report formats with `core::fmt`.
        let _ = write!(line, ": {}", info.message());
    }
    platform::write(2, line.end().as_bytes());
    report_frames(&mut line, if double { "double-panic" } else { "panic" }, 0, 0, &Backtrace::of_caller());
    // The kernel's run ends here; the next op's panics are its own.
    PANICKING.store(false, Ordering::Relaxed);
    platform::exit(EXIT_PANIC)
}

/// Reports where `abort` was called from (the `FAULT` line, kind `abort`).
pub fn report_abort() {
    report_frames(&mut ReportLine::new(), "abort", 0, 0, &Backtrace::of_caller());
}
