//! The QEMU board: the runtime's platform hooks over semihosting, `println!`, and
//! starting the other cores.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

const SYS_EXIT: u32 = 1;
const SYS_READ: u32 = 3;
const SYS_WRITE: u32 = 4;

/// ERI address of the MX distributor's MPSCORE register: one RunStall bit per core.
const MPSCORE: u32 = 0x200;
/// The distributor input the board pulses to wake sleeping cores. The distributor
/// drives input i onto external line i + 2 of every core it is routed to; line 10 is
/// de233_fpu's interrupt 15, edge-triggered, which `arch::wait_for_interrupt` sleeps on.
const WAKE_INPUT: u32 = 8;
/// ERI address of MIROUT(i): which cores input i reaches (a mask of cores).
const fn mirout(input: u32) -> u32 {
    input
}
/// ERI addresses of MIASG (write: de-assert inputs by mask) and MIASGSET (assert).
const MIASG: u32 = 0x188;
const MIASGSET: u32 = 0x18C;

unsafe extern "C" {
    /// `simcall` (board.S).
    fn semihosting_call(call: u32, arg0: u32, arg1: u32, arg2: u32) -> i32;
    /// `wer` (board.S).
    fn board_write_eri(address: u32, value: u32);
    /// Marks the MMU page at address 0 no-access (board.S).
    fn board_guard_null_page();
}

/// Makes `0x00000000..0x20000000` fault on any access on this core, so a kernel's null
/// pointer faults as it would on a device with nothing at 0 (docs/simulation.md).
pub fn guard_null_page() {
    // SAFETY: only TLB entries of the page at 0 change, memory nothing in the
    // simulation uses (the memory map).
    unsafe { board_guard_null_page() }
}

/// Lets every core run. The lx60 board holds all cores but core 0 in RunStall at
/// reset, as a device's boot firmware would until it has loaded their images.
pub fn start_all_cores() {
    // SAFETY: routing an input no device drives touches nothing else; clearing RunStall
    // only starts cores at the entry QEMU's loader gave them.
    unsafe {
        board_write_eri(mirout(WAKE_INPUT), u32::MAX);
        board_write_eri(MPSCORE, 0);
    }
}

/// Wakes every core sleeping in `arch::wait_for_interrupt` (and makes the next sleep
/// of a core that is not asleep return at once): a pulse on the wake input, which
/// every core latches as an edge.
///
/// The pulse starts by de-asserting the input: pulses of two cores at once would
/// otherwise make one edge, the first core's assert, possibly before the second core's
/// write that its pulse announces, and a core that woke at that edge, looked, and slept
/// again would sleep on to its timer (seen: 8-core calls of 100 ms, the loaders'
/// timer, in 12 of 180). De-asserted first, the line rises again after this core's
/// write, by this assert or another core's.
pub fn wake_all_cores() {
    // SAFETY: de-asserts, asserts and de-asserts an input routed only to the wake
    // interrupt.
    unsafe {
        board_write_eri(MIASG, 1 << WAKE_INPUT);
        board_write_eri(MIASGSET, 1 << WAKE_INPUT);
        board_write_eri(MIASG, 1 << WAKE_INPUT);
    }
}

/// Platform hook: write to the host's stdout/stderr.
///
/// QEMU's Xtensa semihosting `write` copies guest memory one target page (4 KiB) at a
/// time, with a host `write()` per page, so a line whose bytes cross a page boundary
/// reaches the host in two writes, and another core's line can come between them
/// (seen: a `STDOUT` report line cut in two by another core's, and the op's end lost).
/// A write of at most [`PAGE_SAFE_LEN`] bytes that crosses a page is made from this
/// core's page-safe buffer instead, in one host `write()`.
#[unsafe(no_mangle)]
extern "C" fn __neuron_platform_write(fd: i32, buf: *const u8, len: usize) -> isize {
    let start = buf as usize;
    let crosses = len > 0 && start / PAGE != (start + len - 1) / PAGE;
    if crosses && len <= PAGE_SAFE_LEN && !PAGE_SAFE_BUSY.swap(true, Ordering::Acquire) {
        let line = PAGE_SAFE.0.get().cast::<u8>();
        // SAFETY: the caller guarantees `len` bytes at `buf`; the buffer is this core's
        // (each core's image has its own statics) and PAGE_SAFE_BUSY keeps a nested
        // write on this core (a fault report inside a write) out of it.
        let written = unsafe {
            core::ptr::copy_nonoverlapping(buf, line, len);
            semihosting_call(SYS_WRITE, fd as u32, line as u32, len as u32) as isize
        };
        PAGE_SAFE_BUSY.store(false, Ordering::Release);
        return written;
    }
    // SAFETY: QEMU reads `len` bytes at `buf`, which the caller guarantees are valid.
    unsafe { semihosting_call(SYS_WRITE, fd as u32, buf as u32, len as u32) as isize }
}

/// QEMU's target page for Xtensa: its semihosting copies a write one page at a time.
const PAGE: usize = 4096;

/// The longest write [`__neuron_platform_write`] keeps whole across a page boundary.
pub const PAGE_SAFE_LEN: usize = 2048;

/// A buffer that lies within one page: 2 KiB, aligned to 2 KiB.
#[repr(C, align(2048))]
struct PageSafe(core::cell::UnsafeCell<[u8; PAGE_SAFE_LEN]>);

// SAFETY: only this core's code reaches its image's PageSafe, one write at a time
// (PAGE_SAFE_BUSY).
unsafe impl Sync for PageSafe {}

static PAGE_SAFE: PageSafe = PageSafe(core::cell::UnsafeCell::new([0; PAGE_SAFE_LEN]));

/// Whether a write is using [`PAGE_SAFE`] on this core.
static PAGE_SAFE_BUSY: AtomicBool = AtomicBool::new(false);

/// Reads up to `buf.len()` bytes of the host's stdin (QEMU's own, binary) into `buf`:
/// the count read, 0 at end of file, or `None` on an error. Blocks until the host has
/// written something.
pub fn read_stdin(buf: &mut [u8]) -> Option<usize> {
    // SAFETY: QEMU writes at most `buf.len()` bytes at `buf`, which is ours to write.
    let read = unsafe { semihosting_call(SYS_READ, 0, buf.as_mut_ptr() as u32, buf.len() as u32) };
    usize::try_from(read).ok()
}

/// Writes `bytes` to the host's stdout as they are, in one semihosting call.
pub fn write_stdout(bytes: &[u8]) {
    __neuron_platform_write(1, bytes.as_ptr(), bytes.len());
}

/// Writes `bytes` to the host's stderr as they are, in one semihosting call.
pub fn write_stderr(bytes: &[u8]) {
    __neuron_platform_write(2, bytes.as_ptr(), bytes.len());
}

/// Who handles [`__neuron_platform_exit`] instead of ending the simulation: the loader,
/// while a kernel runs, so a kernel that takes an exception stops only its op.
static EXIT_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Makes `handler` take the next platform exit (the exception and panic paths end in
/// one); `None` restores ending the simulation.
pub fn set_exit_handler(handler: Option<fn(i32) -> !>) {
    EXIT_HANDLER.store(handler.map_or(0, |h| h as usize), Ordering::Relaxed);
}

/// Platform hook: end the simulation with `code` as QEMU's exit status (or hand the
/// exit to the handler [`set_exit_handler`] installed).
#[unsafe(no_mangle)]
extern "C" fn __neuron_platform_exit(code: i32) -> ! {
    let handler = EXIT_HANDLER.swap(0, Ordering::Relaxed);
    if handler != 0 {
        // SAFETY: only `set_exit_handler` stores here, and only `fn(i32) -> !` values.
        let handler = unsafe { core::mem::transmute::<usize, fn(i32) -> !>(handler) };
        handler(code);
    }
    // SAFETY: exit takes no pointers; QEMU stops every core.
    unsafe { semihosting_call(SYS_EXIT, code as u32, 0, 0) };
    loop {
        core::hint::spin_loop();
    }
}

/// Ends the simulation with `code` as QEMU's exit status.
pub fn exit(code: i32) -> ! {
    __neuron_platform_exit(code)
}

/// The longest line [`print_line`] writes whole; longer ones are cut.
pub const LINE_CAPACITY: usize = 1200;
const _: () = assert!(LINE_CAPACITY <= PAGE_SAFE_LEN, "a whole line fits the page-safe buffer");

/// Writes one line to the host's stdout in a single semihosting call from memory within
/// one page ([`__neuron_platform_write`]), so lines of several cores never interleave.
pub fn print_line(args: fmt::Arguments<'_>) {
    let mut line = heapless::String::<LINE_CAPACITY>::new();
    let _ = line.write_fmt(args);
    if line.len() == LINE_CAPACITY {
        line.truncate(LINE_CAPACITY - 1);
    }
    let _ = line.push('\n');
    __neuron_platform_write(1, line.as_ptr(), line.len());
}

/// `println!` to the host's stdout, one whole line at a time.
#[macro_export]
macro_rules! println {
    ($($arg:tt)*) => {
        $crate::board::print_line(format_args!($($arg)*))
    };
}
