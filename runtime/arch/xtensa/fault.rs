//! What happens when a core cannot go on: a standalone start that returns, an exception,
//! or a panic. Each reports through the platform hooks (`crate::platform`) and stops.

use super::platform;
use core::fmt::Write;

/// Exit status of an image whose code took an exception.
pub const EXIT_EXCEPTION: i32 = 3;
/// Exit status of an image whose code panicked.
pub const EXIT_PANIC: i32 = 101;

unsafe extern "C" {
    /// The image's standalone entry (linker hook `main`; defaults to returning 0).
    fn main() -> i32;
}

/// Called by `_start` once the core is set up: runs `main`, exits with its status.
#[unsafe(no_mangle)]
extern "C" fn __neuron_start() -> ! {
    // SAFETY: `main` is the image's entry hook, called once, on the stack `_start` set.
    let status = unsafe { main() };
    platform::exit(status)
}

/// Which vector reported the fault (the kind the vector stub loads into a6).
const FAULT_KINDS: [&str; 4] = ["user", "kernel", "double", "debug"];

/// Called by the exception vectors (vectors.S) on a fresh stack; never returns.
#[unsafe(no_mangle)]
extern "C" fn __neuron_fault(kind: u32, cause: u32, pc: u32, vaddr: u32) -> ! {
    // A double exception's PC is in DEPC, a debug exception's in EPC6 (the debug
    // level); the others' in EPC1 (vectors.S reads it).
    let pc_register = match kind {
        2 => "DEPC",
        3 => "EPC6",
        _ => "EPC1",
    };
    let kind = FAULT_KINDS.get(kind as usize).copied().unwrap_or("unknown");
    let mut line = platform::LineWriter::<128>::new();
    let _ = writeln!(
        line,
        "{kind} exception: EXCCAUSE={cause} ({}) {pc_register}={pc:#010x} EXCVADDR={vaddr:#010x}",
        cause_name(cause)
    );
    platform::write(2, line.as_bytes());
    platform::exit(EXIT_EXCEPTION)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let mut line = platform::LineWriter::<256>::new();
    let _ = write!(line, "panicked");
    if let Some(location) = info.location() {
        let _ = write!(line, " at {}:{}:{}", location.file(), location.line(), location.column());
    }
    let _ = writeln!(line, ": {}", info.message());
    platform::write(2, line.as_bytes());
    platform::exit(EXIT_PANIC)
}

/// The architectural name of an EXCCAUSE value (Xtensa ISA, exception causes).
fn cause_name(cause: u32) -> &'static str {
    match cause {
        0 => "IllegalInstruction",
        1 => "Syscall",
        2 => "InstructionFetchError",
        3 => "LoadStoreError",
        4 => "Level1Interrupt",
        5 => "Alloca",
        6 => "IntegerDivideByZero",
        8 => "Privileged",
        9 => "LoadStoreAlignment",
        12 => "InstrPIFDataError",
        13 => "LoadStorePIFDataError",
        14 => "InstrPIFAddrError",
        15 => "LoadStorePIFAddrError",
        16 => "InstTLBMiss",
        17 => "InstTLBMultiHit",
        18 => "InstFetchPrivilege",
        20 => "InstFetchProhibited",
        24 => "LoadStoreTLBMiss",
        25 => "LoadStoreTLBMultiHit",
        26 => "LoadStorePrivilege",
        28 => "LoadProhibited",
        29 => "StoreProhibited",
        32..=39 => "CoprocessorDisabled",
        _ => "reserved",
    }
}
