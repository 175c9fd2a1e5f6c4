//! The simulated device loader: what the device's firmware does around a library.
//!
//! Each core runs its own copy (image `loader<i>`), next to its library image (image
//! `core<i>`). The device stays booted for a whole session and runs job after job:
//!
//! 1. Core 0 reads the next job from the host (QEMU's stdin, see
//!    `neuroncustomop_wire::session`): the job block goes to [`JOB_ADDRESS`], its data
//!    to their device addresses. It then publishes the job's number; the other cores
//!    wait for it. End of file ends the simulation.
//! 2. On the first job, each core builds a `SUNDA_UCODE_LIB` handoff block with its own
//!    callbacks (handing out this core's dataram and HBM scratch and DMA queues) and
//!    calls the library's `entry_func`, recording every callback and registration;
//!    then it asks `register_funcs` for every kernel's entry point.
//! 3. It walks the job's ops: 0x85/0x86 dispatch-word chains. For each, the FunctionId
//!    names a kernel, the payload descriptors become the kernel's arguments
//!    (`customop_set_invocation`), the translate windows are configured, the job's
//!    memcpy backend is selected (if it names one), the kernel runs, and the library's
//!    stdout ring is drained. Cores run op k only once every core has finished op k-1
//!    and core 0 has printed op k-1's output.
//! 4. Once every core has finished the job, core 0 prints `DONE` (and an end marker on
//!    stderr, so the host knows where this job's stderr ends).
//!
//! Everything it learns is printed as one line per fact, typed by
//! `neuroncustomop_wire::report::Line`, which the host parses with the same type.

use crate::callbacks::{self, Loader};
use crate::dispatch::{self, Dispatch, OpArgs};
use crate::{board, icount, println};
use core::ffi::{c_char, c_void};
use core::fmt::Write;
use core::ptr::{self, read_volatile, write_volatile};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use neuroncustomop::allocators::HeapsGivenBack;
use neuroncustomop::arch::{mask_interrupts, memw, prid, restore_interrupts, wait_for_interrupt};
use neuroncustomop::data_transfer::dma::{DMA_QUEUE_WINDOW, DmaQueueHeader};
use neuroncustomop::start_exit::{DrainPlan, RingHeader, SUNDA_UCODE_LIB, SUNDA_UCODE_LIB_STATUS};
use neuroncustomop::wrapper_api::ArgTensor;
use neuroncustomop_wire::checks::{Region, RegionKind, RegionTable};
use neuroncustomop_wire::job::CORES;
use neuroncustomop_wire::job::{
    EXIT_BAD_JOB, JOB_ADDRESS, JOB_CAPACITY, JOB_MAGIC, JobHeader, LibrarySymbols, NAME_LEN, NEVER, OutputDump,
    data_scratch, dma_queue_offsets, hbm_scratch,
};
use neuroncustomop_wire::report::{Bytes, Count, Line, OpStatus};
use neuroncustomop_wire::session::{FRAME_MAGIC, FrameHeader, STDERR_JOB_END, SegmentHeader};
use neuroncustomop_wire::{DESCRIPTOR_LEN, DecodedOp, FunctionId, decode_prefix};

/// The cores' progress counters: core c's at `PROGRESS + c * 64`, past the job block.
/// A core writes 1 once `entry_func` and `register_funcs` are done, then 1 + k once it
/// has finished k ops of the session (counted over every job), so "every core has
/// finished k ops" also means "every core has entered".
const PROGRESS: usize = (JOB_ADDRESS + JOB_CAPACITY) as usize;
/// The number of the job in the job block (0 before the first): core 0 writes it once
/// the job and its data are in place; the other cores wait for it to change.
const JOB_NUMBER: usize = PROGRESS + CORES * 64;
/// Most kernels the loader keeps entry points for.
const MAX_KERNELS: usize = 64;
/// Bytes of drained output per printed line.
const HEX_CHUNK: usize = 512;

/// Which callbacks `entry_func` called, and how many registrations it made.
static REGISTRATIONS: AtomicU32 = AtomicU32::new(0);
static FAIL_REGISTRATION_AT: AtomicU32 = AtomicU32::new(NEVER);

/// The job's injected faults ([`JobHeader::faults`]).
fn faults() -> u32 {
    job().map_or(0, |job| job.faults)
}

/// The host's `abort` for the library: the kernel gave up; its op stops with `abort`.
extern "C" fn host_abort() -> ! {
    kernel_stopped(KernelStop::Abort)
}

/// The host's `exit` for the library: the kernel (or its panic) exited; its op stops
/// with `exit(<status>)`.
extern "C" fn host_exit(status: i32) -> ! {
    kernel_stopped(KernelStop::Exit(status))
}

/// The loader's own exception or panic path fired while a kernel ran (see
/// `board::set_exit_handler`): its op stops with `exception(<code>)`.
fn kernel_faulted(code: i32) -> ! {
    kernel_stopped(KernelStop::Fault(code))
}

/// A kernel's name and entry point, as `register_funcs` reported them.
#[derive(Clone, Copy)]
struct Kernel {
    name: [u8; NAME_LEN],
    entry: usize,
}

static KERNEL_COUNT: AtomicU32 = AtomicU32::new(0);
static mut KERNELS: [Kernel; MAX_KERNELS] = [Kernel { name: [0; NAME_LEN], entry: 0 }; MAX_KERNELS];

/// The device's side of the handoff's callbacks (`callbacks`, shared with the host
/// tier's loader): this core's statics, report lines printed as they come.
struct Device;

impl Loader for Device {
    const ABORT: extern "C" fn() -> ! = host_abort;
    const EXIT: extern "C" fn(i32) -> ! = host_exit;

    fn core() -> u32 {
        prid()
    }

    fn faults() -> u32 {
        faults()
    }

    fn registration() -> (u32, u32) {
        (REGISTRATIONS.fetch_add(1, Ordering::Relaxed), FAIL_REGISTRATION_AT.load(Ordering::Relaxed))
    }

    fn keep_kernel(name: &[u8], entry: usize) -> u32 {
        let index = KERNEL_COUNT.fetch_add(1, Ordering::Relaxed) as usize;
        if index < MAX_KERNELS && name.len() < NAME_LEN {
            let mut kernel = Kernel { name: [0; NAME_LEN], entry };
            kernel.name[..name.len()].copy_from_slice(name);
            // SAFETY: KERNELS is this core's (its own loader image) and only this
            // callback, running on this core, writes it.
            unsafe { (*ptr::addr_of_mut!(KERNELS))[index] = kernel };
        }
        index as u32
    }

    fn report(line: &Line<'_>) {
        println!("{line}");
    }
}

fn find_kernel(name: &[u8]) -> Option<extern "C" fn()> {
    let count = (KERNEL_COUNT.load(Ordering::Relaxed) as usize).min(MAX_KERNELS);
    // SAFETY: registration is over; nothing writes KERNELS any more.
    let kernels = unsafe { &(&*ptr::addr_of!(KERNELS))[..count] };
    let kernel = kernels.iter().find(|k| &k.name[..name.len()] == name && k.name.get(name.len()) == Some(&0))?;
    // SAFETY: the library reported this address as a kernel entry point, an
    // `extern "C" fn()` (the author table's contract).
    Some(unsafe { core::mem::transmute::<usize, extern "C" fn()>(kernel.entry) })
}

/// The current job, checked. Valid until the job is over: core 0 writes the next one
/// in place only once every core has finished this one.
pub fn job() -> Option<&'static JobHeader> {
    // SAFETY: core 0 writes the job block at JOB_ADDRESS only between jobs, when no core
    // reads it (the cores use the reference for one job only); the magic is checked
    // before any other field is used.
    let job = unsafe { &*(JOB_ADDRESS as *const JobHeader) };
    (job.magic == JOB_MAGIC && (1..=8).contains(&job.cores)).then_some(job)
}

fn job_bytes(offset: u32, len: u32) -> &'static [u8] {
    let len = len.min(JOB_CAPACITY.saturating_sub(offset));
    // SAFETY: the range lies inside the job block (clamped above), which nothing writes
    // while the job runs.
    unsafe { core::slice::from_raw_parts((JOB_ADDRESS + offset) as *const u8, len as usize) }
}

fn progress(core: u32) -> *mut u32 {
    (PROGRESS + core as usize * 64) as *mut u32
}

/// A number that changes whenever the session moves: a job published, a core entering
/// the library or finishing an op (the job number plus every core's progress
/// counter). The DMA engine reads it to tell a session at work from one between jobs.
pub fn session_steps() -> u32 {
    // SAFETY: the job number and the progress counters are RAM words past the job
    // block, only read here; a torn view of them only moves the sum.
    (0..CORES as u32).fold(unsafe { read_volatile(JOB_NUMBER as *const u32) }, |sum, core| {
        sum.wrapping_add(unsafe { read_volatile(progress(core)) })
    })
}

/// Records that this core has entered the library and finished `ops_done` ops of the
/// session.
fn set_progress(core: u32, ops_done: u32) {
    memw();
    // SAFETY: the progress area is RAM past the job block; each core writes its own word.
    unsafe { write_volatile(progress(core), ops_done + 1) };
    memw();
    board::wake_all_cores();
}

/// The longest a waiting loader sleeps between two looks: 100 ms of the 40 MHz CCOUNT.
/// What it waits for comes with a pulse of `board::wake_all_cores` (the job's number,
/// a core's progress), which each core latches, so the sleep ends when it comes; the
/// timer only bounds a lost pulse. Shorter, the cores of a session waiting for its next
/// job would wake thousands of times a second (1 ms: 4% of a host CPU per idle core).
const IDLE_TICKS: u32 = 4_000_000;

/// Waits, asleep between looks, until each of `cores` has entered the library and
/// finished `ops_done` ops of the session. No bound: a core that never arrives is the host's to catch (its
/// instruction budget and wall limit), not a guess here.
fn wait_for(cores: impl Iterator<Item = u32>, ops_done: u32) {
    for core in cores {
        // SAFETY: as in `set_progress`; other cores' words are only read.
        while unsafe { read_volatile(progress(core)) } <= ops_done {
            wait_for_interrupt(IDLE_TICKS);
        }
    }
    memw();
}

/// The library's entry points the loader calls, typed.
struct Library {
    symbols: LibrarySymbols,
    dispatch: Dispatch,
    invocation_status: extern "C" fn() -> u32,
    heaps_mark: extern "C" fn(),
    heaps_give_back: unsafe extern "C" fn(*mut HeapsGivenBack),
}

/// `address` as a function pointer of type `F`.
///
/// # Safety
/// `address` must be a function of that signature in a loaded image.
unsafe fn function<F: Copy>(address: u32) -> F {
    const { assert!(size_of::<F>() == size_of::<usize>()) };
    // SAFETY: forwarded from this function's contract.
    unsafe { core::mem::transmute_copy(&(address as usize)) }
}

impl Library {
    fn new(symbols: LibrarySymbols) -> Self {
        // SAFETY: the host read these addresses from the library's symbol table.
        unsafe {
            Self {
                symbols,
                dispatch: Dispatch {
                    set_invocation: function(symbols.set_invocation),
                    translate_configure: function(symbols.translate_configure),
                    set_memcpy_method: function(symbols.set_memcpy_method),
                },
                invocation_status: function(symbols.invocation_status),
                heaps_mark: function(symbols.heaps_mark),
                heaps_give_back: function(symbols.heaps_give_back),
            }
        }
    }

    /// Runs `kernel` on `op`'s arguments; returns the invocation status and the
    /// instructions the kernel took.
    fn invoke(&self, job: &JobHeader, kernel: extern "C" fn(), op: &DecodedOp) -> (u32, Count) {
        let mut args = OpArgs::of(op);
        // SAFETY: the library's entry points (the host read them from its symbol
        // table); `args` stays on this frame until the kernel has ended (one that stops
        // without returning never reads it again: the next op hands off its own).
        unsafe { self.dispatch.hand_off(job, &mut args) };
        announce_regions(job, args.inputs(), op.output().map(|_| &args.output));
        engine_running();
        // What the heaps hold now is the library's; what the kernel takes, `resume` gives
        // back if it stops without returning.
        (self.heaps_mark)();
        icount::start(job.max_instructions());
        kernel();
        let count = Count { instructions: icount::stop(), exact: true };
        ((self.invocation_status)(), count)
    }
}

/// Zeroes this core's DMA queues' `stopped` before an op: the engine sets it again
/// while its job's mode has it stopped, and a core never falls back to the CPU on a
/// word left over from an earlier job (a transfer the engine would then still make).
fn engine_running() {
    let (m2s, s2m) = dma_queue_offsets(prid());
    for offset in [m2s, s2m] {
        let header = (DMA_QUEUE_WINDOW + offset as usize) as *mut DmaQueueHeader;
        // SAFETY: this core's own queue header in the SoC's queue window; no transfer
        // of this core is queued between ops.
        unsafe { write_volatile(&raw mut (*header).stopped, 0) };
    }
}

/// What the op running on this core may touch, for the device's memory checks (the
/// TCG plugin reads it from guest memory when the kernel starts: the host names this
/// static to it). Written by this core only, before each kernel run.
#[unsafe(no_mangle)]
static mut NEURON_CHECK_REGIONS: RegionTable = RegionTable::EMPTY;

/// Fills [`NEURON_CHECK_REGIONS`] for the op about to run: its output and inputs at
/// their device addresses (translated through the job's windows, as the runtime
/// translates them), this core's data and HBM scratch, and the stack the kernel runs on.
fn announce_regions(job: &JobHeader, inputs: &[ArgTensor], output: Option<&ArgTensor>) {
    let core = prid();
    let mut table = RegionTable::EMPTY;
    dispatch::tensor_regions(job, inputs, output, |region| table.push(region));
    let (data, data_len) = data_scratch(core);
    table.push(Region::new(RegionKind::DataScratch, 0, data, data_len));
    let (hbm, hbm_len) = hbm_scratch(core);
    table.push(Region::new(RegionKind::HbmScratch, 0, hbm, hbm_len));
    let (m2s, _) = dma_queue_offsets(core);
    let (next, _) = dma_queue_offsets(core + 1);
    table.push(Region::new(RegionKind::DmaQueues, 0, DMA_QUEUE_WINDOW as u32 + m2s, next - m2s));
    let (bottom, top) = (ptr::addr_of!(_stack_bottom) as u32, ptr::addr_of!(_stack_top) as u32);
    table.push(Region::new(RegionKind::Stack, 0, bottom, top - bottom));
    // SAFETY: this core's own static, written only here, before its kernel runs; the
    // plugin reads it from outside the guest.
    unsafe { write_volatile(ptr::addr_of_mut!(NEURON_CHECK_REGIONS), table) };
}

/// Drains the library's stdout ring: prints what the kernel wrote since the last drain,
/// in chunks, the first carrying how many bytes the ring lost.
fn drain_stdout(ring: u32, core: u32, op: u32) {
    let header = ring as *mut RingHeader;
    // SAFETY: the host read this address from the library's symbol table: the ring's
    // header, followed by `capacity` data bytes, in the library's RAM; its kernel has
    // returned, so nothing writes it now.
    let Ok(plan) = DrainPlan::new(&unsafe { read_volatile(header) }) else {
        return println!("{}", Line::BadRing { core, op });
    };
    let data = (ring as usize + size_of::<RingHeader>()) as *const u8;
    let mut chunk = [0u8; HEX_CHUNK];
    let mut filled = 0;
    let mut offset = 0;
    let kept = plan.segments().into_iter().flatten();
    for (index, at) in kept.enumerate() {
        // SAFETY: `at < capacity`: inside the ring's data area (DrainPlan's contract).
        chunk[filled] = unsafe { read_volatile(data.add(at)) };
        filled += 1;
        if filled == HEX_CHUNK || index + 1 == plan.len {
            let lost = if offset == 0 { plan.lost } else { 0 };
            println!("{}", Line::Stdout { core, op, lost, offset, bytes: Bytes::Raw(&chunk[..filled]) });
            offset += filled as u32;
            filled = 0;
        }
    }
    // SAFETY: as above; the read counter is the loader's to write.
    unsafe { write_volatile(&raw mut (*header).read_count, plan.next_read_count) };
}

/// Runs the loader on this core: job after job, until the host closes the session.
pub fn run() -> i32 {
    // Kernels run on this image's stack: a runaway recursion stops at its bottom.
    neuroncustomop::arch::arm_stack_limit();
    board::guard_null_page();
    if prid() == 0 {
        board::start_all_cores();
    }
    run_at_level_zero();
    serve()
}

/// Runs this core at interrupt level 0 (`_start` and the fault path leave 15): ICOUNT
/// counts, and debug exceptions (the instruction budget) are taken, only below level
/// 6. INTENABLE stays 0, so no interrupt is taken but the wake-ups of `waiti` sleeps.
fn run_at_level_zero() {
    let ps = mask_interrupts();
    // SAFETY: the same PS with a lower level; nothing here relies on interrupts masked.
    unsafe { restore_interrupts(ps & !0xF) };
}

/// What this core has done in the session so far.
/// The number of the last job this core took part in.
static JOBS_SEEN: AtomicU32 = AtomicU32::new(0);
/// Ops of the session's earlier jobs: where this job's op indices start on the
/// progress counters.
static OPS_BEFORE: AtomicU32 = AtomicU32::new(0);
/// Whether this core has called `entry_func` (on the session's first job).
static ENTRY_CALLED: AtomicBool = AtomicBool::new(false);

/// Takes job after job.
fn serve() -> ! {
    let core = prid();
    loop {
        let job = next_job(core);
        if core >= job.cores {
            continue;
        }
        if !ENTRY_CALLED.swap(true, Ordering::Relaxed) {
            enter(job, core);
        }
        run_job(job, core, 0, 0);
    }
}

/// Waits for the next job and returns it: core 0 reads it from the host and publishes
/// its number; the other cores wait for that number.
fn next_job(core: u32) -> &'static JobHeader {
    let number = JOBS_SEEN.load(Ordering::Relaxed) + 1;
    let job_number = JOB_NUMBER as *mut u32;
    if core == 0 {
        receive_job();
        memw();
        // SAFETY: the job number is RAM past the progress counters; only core 0 writes it.
        unsafe { write_volatile(job_number, number) };
        memw();
        board::wake_all_cores();
    } else {
        // SAFETY: as above; read only.
        while unsafe { read_volatile(job_number) } != number {
            wait_for_interrupt(IDLE_TICKS);
        }
        memw();
    }
    JOBS_SEEN.store(number, Ordering::Relaxed);
    job().unwrap_or_else(|| {
        println!("{}", Line::Error { message: "the host sent a frame without a valid job block" });
        board::exit(EXIT_BAD_JOB)
    })
}

/// Reads exactly `buf.len()` bytes of the host's stdin; false at end of file.
fn read_exact(buf: &mut [u8]) -> bool {
    let mut filled = 0;
    while filled < buf.len() {
        match board::read_stdin(&mut buf[filled..]) {
            Some(0) | None => return false,
            Some(read) => filled += read,
        }
    }
    true
}

/// Reads one frame from the host: the job block and its data, each to its address.
/// End of file ends the simulation (the host closed the session).
fn receive_job() {
    let mut word = [0u8; 8];
    if !read_exact(&mut word) {
        board::exit(0);
    }
    let frame = FrameHeader::from_bytes(word);
    if frame.magic != FRAME_MAGIC {
        println!("{}", Line::Error { message: "the host sent something that is not a job frame" });
        board::exit(EXIT_BAD_JOB);
    }
    for _ in 0..frame.segments {
        if !read_exact(&mut word) {
            board::exit(EXIT_BAD_JOB);
        }
        let segment = SegmentHeader::from_bytes(word);
        // SAFETY: the host names RAM of the job (the job block, tensors), which no core
        // uses between jobs; this is the host's side of the device, trusted as the real
        // device's host runtime is when it writes device memory.
        let bytes = unsafe { core::slice::from_raw_parts_mut(segment.address as *mut u8, segment.len as usize) };
        if !read_exact(bytes) {
            board::exit(EXIT_BAD_JOB);
        }
    }
}

/// Calls the library's `entry_func` and `register_funcs` on this core, reporting both.
fn enter(job: &JobHeader, core: u32) {
    FAIL_REGISTRATION_AT.store(job.fail_registration_at, Ordering::Relaxed);
    let library = Library::new(job.libraries[core as usize]);
    let block = callbacks::handoff::<Device>(job.handoff_size, core);
    type EntryFunc = unsafe extern "C" fn(*const SUNDA_UCODE_LIB) -> SUNDA_UCODE_LIB_STATUS;
    type RecordFn = unsafe extern "C" fn(*const c_void, *const c_char, *mut c_void) -> SUNDA_UCODE_LIB_STATUS;
    type RegisterFuncs = unsafe extern "C" fn(Option<RecordFn>) -> SUNDA_UCODE_LIB_STATUS;
    // SAFETY: the host read both addresses from the library's symbol table.
    let (entry_func, register_funcs) = unsafe {
        (function::<EntryFunc>(library.symbols.entry_func), function::<RegisterFuncs>(library.symbols.register_funcs))
    };
    if job.stdout_queue_bytes != NEVER {
        // The host's printf ring size (NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES), in the
        // ring header's `capacity` (+4), before the library runs.
        let capacity = (library.symbols.stdout_ring + 4) as *mut u32;
        // SAFETY: the host read the ring's address from the library's symbol table; the
        // library is loaded there and does not run yet.
        unsafe { capacity.write_volatile(job.stdout_queue_bytes) };
    }
    // SAFETY: the block is valid for the call; the library is loaded at its address.
    let status = unsafe { entry_func(&block) };
    println!("{}", Line::Entry { core, status: status.0 });
    if status.is_success() {
        // SAFETY: as above; `record_kernel` has the registrar's signature.
        let status = unsafe { register_funcs(Some(callbacks::record_kernel::<Device>)) };
        println!("{}", Line::RegisterFuncs { core, status: status.0 });
    }
    ENTERED.store(status.is_success(), Ordering::Relaxed);
    set_progress(core, 0);
}

/// Runs the current job's ops from op `index` (its words at `at`), then finishes the
/// job: core 0 waits for every core, then says `DONE`.
fn run_job(job: &JobHeader, core: u32, index: u32, at: usize) {
    let library = Library::new(job.libraries[core as usize]);
    let ops = run_ops(job, &library, core, index, at);
    let before = OPS_BEFORE.fetch_add(ops, Ordering::Relaxed);
    if core == 0 {
        wait_for(0..job.cores, before + ops);
        board::write_stderr(STDERR_JOB_END);
        println!("{}", Line::Done { job: JOBS_SEEN.load(Ordering::Relaxed) });
    }
}

/// How a kernel left without returning.
#[derive(Clone, Copy)]
enum KernelStop {
    Abort,
    Exit(i32),
    Fault(i32),
    OverBudget,
}

/// Where `icount.S` sends a kernel that ran past its instruction budget (on the
/// loader's stack, the kernel's frames discarded).
#[unsafe(no_mangle)]
extern "C" fn loader_over_budget() -> ! {
    kernel_stopped(KernelStop::OverBudget)
}

/// Whether `entry_func` succeeded on this core.
static ENTERED: AtomicBool = AtomicBool::new(false);
/// The op running now, and where the next op's words start: what the loader needs to
/// carry on after a kernel that never returns.
static CURRENT_OP: AtomicU32 = AtomicU32::new(0);
static NEXT_AT: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" {
    /// Discards every frame, moves to `stack_top` and calls `continuation(argument)`
    /// (resume.S).
    fn loader_resume(stack_top: u32, continuation: extern "C" fn(u32), argument: u32) -> !;
    /// The top of this loader image's stack (linker script).
    static _stack_top: u8;
    /// Its bottom.
    static _stack_bottom: u8;
}

/// A kernel stopped without returning: report its op, and carry on with the next one
/// on a fresh stack (the kernel's frames and the loader's under them are discarded).
fn kernel_stopped(stop: KernelStop) -> ! {
    board::set_exit_handler(None);
    let (kind, code) = match stop {
        KernelStop::Abort => (0, 0),
        KernelStop::Exit(status) => (1, status as u32),
        KernelStop::Fault(status) => (2, status as u32),
        KernelStop::OverBudget => (3, 0),
    };
    STOP.store(kind << 24 | (code & 0xFF_FFFF), Ordering::Relaxed);
    // SAFETY: the stack top is this image's own; nothing on the stack is used again.
    unsafe { loader_resume(ptr::addr_of!(_stack_top) as u32, resume, 0) }
}

/// How the last kernel stopped: kind << 24 | code (see `kernel_stopped`).
static STOP: AtomicU32 = AtomicU32::new(0);

/// Where the loader carries on after a kernel stopped (on a fresh stack): it reports
/// the op, finishes the job, and serves the next ones. Named for the device's memory
/// checks, which leave the blocks it gives back out of the op's leaks.
#[unsafe(export_name = "loader_after_stop")]
extern "C" fn resume(_: u32) {
    // A fault report disarmed the stack check; this is the image stack again.
    neuroncustomop::arch::arm_stack_limit();
    run_at_level_zero();
    let core = prid();
    let job = job().expect("the job was valid when the kernel started");
    let library = Library::new(job.libraries[core as usize]);
    let index = CURRENT_OP.load(Ordering::Relaxed);
    let stop = STOP.load(Ordering::Relaxed);
    let code = (stop & 0xFF_FFFF) as i32;
    // The code is 24 bits wide: sign-extend it back.
    let code = (code << 8) >> 8;
    let instructions = icount::stop();
    let function = current_name();
    // First: it ends the stopped kernel's borrows of runtime state, which the
    // invocation's status below needs.
    let mut given = HeapsGivenBack::default();
    // SAFETY: the library's own entry point, with a writable report; the kernel's frames
    // are gone and nothing else runs on this core.
    unsafe { (library.heaps_give_back)(&mut given) };
    let status = match stop >> 24 {
        0 => OpStatus::Abort,
        // A kernel that recorded a failing status and exited with it (the C++ headers'
        // `end_op`: DTYPE_MISMATCH, ASSERT_FAILED, ...) ended its op with that status.
        1 if code != 0 && (library.invocation_status)() == code as u32 => OpStatus::Returned(code as u32),
        1 => OpStatus::Exit(code),
        2 => OpStatus::Exception(code),
        _ => {
            let pc = icount::stopped_pc();
            println!("{}", Line::OverBudget { core, op: index, function, instructions, pc });
            OpStatus::OverBudget
        }
    };
    drain_stdout(library.symbols.stdout_ring, core, index);
    let HeapsGivenBack { bytes, blocks, kept, rebuilt } = given;
    println!("{}", Line::GivenBack { core, op: index, bytes, blocks, kept, rebuilt: rebuilt != 0 });
    // Up to the loader's resumption: the kernel's instructions plus the few hundred of
    // the way it stopped (the fault report, the exit, the stack reset), so not exact.
    let count = Some(Count { instructions, exact: false });
    println!("{}", Line::Op { index, core, function, status, count, error: None });
    finish_op(job, core, index);
    run_job(job, core, index + 1, NEXT_AT.load(Ordering::Relaxed) as usize);
    serve()
}

/// The name of the kernel the current op runs (recorded when it started).
fn current_name() -> &'static str {
    // SAFETY: written once per op before its kernel starts, read after it stopped.
    let name = unsafe { &*ptr::addr_of!(CURRENT_NAME) };
    core::str::from_utf8(&name[..name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN)]).unwrap_or("?")
}

static mut CURRENT_NAME: [u8; NAME_LEN] = [0; NAME_LEN];

/// Marks op `index` of the job done on this core. Core 0 first waits for every other
/// core to finish it and prints its output, so no core starts the next op (which may
/// overwrite it) or prints a line in the middle of the output.
fn finish_op(job: &JobHeader, core: u32, index: u32) {
    let done = OPS_BEFORE.load(Ordering::Relaxed) + index + 1;
    if core == 0 {
        wait_for(1..job.cores, done);
        dump_output(job, index);
    }
    set_progress(core, done);
}

/// Runs the job's ops from op `index` (its words at `at`); returns how many ops the job
/// has.
fn run_ops(job: &JobHeader, library: &Library, core: u32, mut index: u32, mut at: usize) -> u32 {
    let names = job_bytes(job.names_offset, job.names_count * NAME_LEN as u32);
    let name_of = |id: FunctionId| -> Option<&[u8]> {
        let slot = names.get(id.get() as usize * NAME_LEN..)?.get(..NAME_LEN)?;
        Some(&slot[..slot.iter().position(|&b| b == 0)?])
    };
    let known = |id: FunctionId| name_of(id).is_some();
    let ops = job_bytes(job.ops_offset, job.ops_len);
    let entered = ENTERED.load(Ordering::Relaxed);
    let before = OPS_BEFORE.load(Ordering::Relaxed);
    while at < ops.len() {
        wait_for(0..job.cores, before + index);
        let (op, used) = match decode_prefix(&ops[at..], &known) {
            Ok(decoded) => decoded,
            Err(error) => {
                let mut text = heapless::String::<200>::new();
                let _ = write!(text, "{error}");
                let status = OpStatus::BadWords;
                println!("{}", Line::Op { index, core, function: "?", status, count: None, error: Some(&text) });
                break;
            }
        };
        at += used;
        let name = name_of(op.function_id()).unwrap_or(b"?");
        let function = core::str::from_utf8(name).unwrap_or("?");
        let stopped = |status| Line::Op { index, core, function, status, count: None, error: None };
        match (entered, find_kernel(name)) {
            (false, _) => println!("{}", stopped(OpStatus::NotEntered)),
            (true, None) => println!("{}", stopped(OpStatus::UnknownKernel)),
            (true, Some(kernel)) => {
                CURRENT_OP.store(index, Ordering::Relaxed);
                NEXT_AT.store(at as u32, Ordering::Relaxed);
                // SAFETY: only this core's loader writes its copy, before the kernel runs.
                unsafe {
                    let current = &mut *ptr::addr_of_mut!(CURRENT_NAME);
                    *current = [0; NAME_LEN];
                    current[..name.len().min(NAME_LEN - 1)].copy_from_slice(&name[..name.len().min(NAME_LEN - 1)]);
                }
                board::set_exit_handler(Some(kernel_faulted));
                let (status, count) = library.invoke(job, kernel, &op);
                board::set_exit_handler(None);
                drain_stdout(library.symbols.stdout_ring, core, index);
                let status = OpStatus::Returned(status);
                println!("{}", Line::Op { index, core, function, status, count: Some(count), error: None });
            }
        }
        finish_op(job, core, index);
        index += 1;
    }
    index
}

/// Prints the bytes the job asks to see after op `op`: a `DUMP` line, then the bytes
/// as they are.
fn dump_output(job: &JobHeader, op: u32) {
    let dumps = job_bytes(job.dumps_offset + op * size_of::<OutputDump>() as u32, size_of::<OutputDump>() as u32);
    let Some(word) = dumps.get(..8) else { return };
    let address = u32::from_le_bytes([word[0], word[1], word[2], word[3]]) as usize;
    let len = u32::from_le_bytes([word[4], word[5], word[6], word[7]]);
    if len == 0 {
        return;
    }
    // SAFETY: the host named this range of simulated RAM as op `op`'s output; every core
    // has finished the op, so nothing writes it now.
    let bytes = unsafe { core::slice::from_raw_parts(address as *const u8, len as usize) };
    println!("{}", Line::Dump { op, offset: 0, len });
    board::write_stdout(bytes);
    board::write_stdout(b"\n");
}

const _: () = assert!(DESCRIPTOR_LEN == size_of::<ArgTensor>());
