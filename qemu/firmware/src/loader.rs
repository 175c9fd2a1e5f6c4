//! The simulated device loader: what the device's firmware does around a library.
//!
//! Each core runs its own copy (image `loader<i>`), next to its library image (image
//! `core<i>`), and reads the job the host placed at [`JOB_ADDRESS`]:
//!
//! 1. It builds a `SUNDA_UCODE_LIB` handoff block with its own callbacks (handing out
//!    this core's dataram and HBM scratch and DMA queues) and calls the library's
//!    `entry_func`, recording every callback and registration; then it asks
//!    `register_funcs` for every kernel's entry point.
//! 2. It walks the job's ops: 0x85/0x86 dispatch-word chains. For each, the FunctionId
//!    names a kernel, the payload descriptors become the kernel's arguments
//!    (`customop_set_invocation`), the translate windows are configured, the job's
//!    memcpy backend is selected (if it names one), the kernel runs, and the library's
//!    stdout ring is drained. Cores run op k only once every core has finished op k-1.
//! 3. Core 0 prints each op's output bytes once every core has run it, then `DONE`.
//!
//! Everything it learns is printed as one line per fact, for the host to parse:
//!
//! ```text
//! REGISTER core=<c> index=<i> name=<name> status=<s>
//! CALLBACK core=<c> name=<callback>
//! ENTRY core=<c> status=<s>
//! KERNEL core=<c> index=<i> ptr=<hex> name=<name> handle=<hex>
//! STDOUT core=<c> op=<k> lost=<n> offset=<o> hex=<bytes>
//! OP <k> core=<c> function=<name> status=<s> ticks=<CCOUNT ticks of the kernel>
//! DUMP op=<k> offset=<o> hex=<bytes>
//! DONE
//! ```

use crate::{board, println};
use core::ffi::{CStr, c_char, c_void};
use core::ptr::{self, read_volatile, write_volatile};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use neuroncustomop::arch::{get_cycle_count, memw, prid};
use neuroncustomop::start_exit::{DrainPlan, RingHeader, SUNDA_UCODE_LIB, SUNDA_UCODE_LIB_STATUS};
use neuroncustomop::wrapper_api::ArgTensor;
use neuroncustomop_wire::job::{
    FAULT_EMPTY_HBM_SCRATCH, FAULT_NULL_DATA_SCRATCH, JOB_ADDRESS, JOB_CAPACITY, JOB_MAGIC, JobHeader, LibrarySymbols, NAME_LEN, NEVER, OutputDump, TRANSLATE_REGIONS,
    dma_queue_offsets,
};
use neuroncustomop_wire::{DESCRIPTOR_LEN, DecodedOp, FunctionId, MAX_INPUTS, decode_prefix};

/// Core i's dataram scratch: `DATA_SCRATCH_BASE + i * DATA_SCRATCH_SIZE`.
pub const DATA_SCRATCH_BASE: u32 = 0x7F80_0000;
/// Size of each core's dataram scratch.
pub const DATA_SCRATCH_SIZE: u32 = 0x1_0000;
/// Core i's HBM scratch: `HBM_SCRATCH_BASE + i * HBM_SCRATCH_SIZE` (RAM after the
/// tensor area; the board's I/O window starts at 0x70000000).
pub const HBM_SCRATCH_BASE: u32 = 0x6A00_0000;
/// Size of each core's HBM scratch.
pub const HBM_SCRATCH_SIZE: u32 = 0x0080_0000;
/// What `register_ext_isa_fn` returns for the registration the job makes fail.
pub const INJECTED_REGISTRATION_FAILURE: u32 = 0x0000_4C52;
/// The cores' progress counters: core c's at `PROGRESS + c * 64`, past the job block.
/// A core writes 1 once `entry_func` and `register_funcs` are done, then 1 + k after
/// its k-th op, so "every core has finished k ops" also means "every core has entered".
const PROGRESS: usize = (JOB_ADDRESS + JOB_CAPACITY) as usize;
/// Bound on every wait for another core; a core that never arrives fails the run.
const WAIT_POLLS: u32 = 200_000_000;
/// Most kernels the loader keeps entry points for.
const MAX_KERNELS: usize = 64;
/// Bytes of a dump or drained output per printed line.
const HEX_CHUNK: usize = 512;

/// Loader exit status: the job block is missing or malformed.
pub const EXIT_BAD_JOB: i32 = 2;
/// Loader exit status: a core did not finish an op in time.
pub const EXIT_CORE_LOST: i32 = 4;

/// Library-handle value this loader hands out: recognisable, and never dereferenced.
fn handle(core: u32) -> *mut c_void {
    (0x4C1B_0000 | core) as *mut c_void
}

/// Which callbacks `entry_func` called, and how many registrations it made.
static REGISTRATIONS: AtomicU32 = AtomicU32::new(0);
static FAIL_REGISTRATION_AT: AtomicU32 = AtomicU32::new(NEVER);

/// The job's injected faults ([`JobHeader::faults`]).
fn faults() -> u32 {
    job().map_or(0, |job| job.faults)
}

unsafe extern "C" fn get_data_scratch(addr: *mut *mut c_void, size: *mut u32) {
    let core = prid();
    println!("CALLBACK core={core} name=get_data_scratch");
    let base = if faults() & FAULT_NULL_DATA_SCRATCH != 0 { 0 } else { DATA_SCRATCH_BASE + core * DATA_SCRATCH_SIZE };
    // SAFETY: the runtime passes two writable out-parameters.
    unsafe {
        *addr = base as *mut c_void;
        *size = DATA_SCRATCH_SIZE;
    }
}

unsafe extern "C" fn get_hbm_scratch(addr: *mut *mut c_void, size: *mut u32) {
    let core = prid();
    println!("CALLBACK core={core} name=get_hbm_scratch");
    let bytes = if faults() & FAULT_EMPTY_HBM_SCRATCH != 0 { 0 } else { HBM_SCRATCH_SIZE };
    // SAFETY: the runtime passes two writable out-parameters.
    unsafe {
        *addr = (HBM_SCRATCH_BASE + core * HBM_SCRATCH_SIZE) as *mut c_void;
        *size = bytes;
    }
}

unsafe extern "C" fn get_dma_queue(m2s_offset: *mut u32, s2m_offset: *mut u32) {
    let core = prid();
    println!("CALLBACK core={core} name=get_dma_queue");
    // SAFETY: the runtime passes two writable out-parameters.
    unsafe { (*m2s_offset, *s2m_offset) = dma_queue_offsets(core) };
}

unsafe extern "C" fn get_libc_fn(name: *const c_char) -> *mut c_void {
    // SAFETY: the runtime passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) };
    println!("CALLBACK core={} name=get_libc_fn({})", prid(), name.to_str().unwrap_or("?"));
    match name.to_bytes() {
        b"abort" => host_abort as *mut c_void,
        b"exit" => host_exit as *mut c_void,
        _ => ptr::null_mut(),
    }
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

unsafe extern "C" fn register_ext_isa_fn(library: *mut c_void, name: *const c_char) -> SUNDA_UCODE_LIB_STATUS {
    let core = prid();
    let index = REGISTRATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the runtime passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_str().unwrap_or("?");
    let status = if library != handle(core) {
        SUNDA_UCODE_LIB_STATUS::FAILURE_ABI_MISMATCH
    } else if index == FAIL_REGISTRATION_AT.load(Ordering::Relaxed) {
        SUNDA_UCODE_LIB_STATUS(INJECTED_REGISTRATION_FAILURE)
    } else {
        SUNDA_UCODE_LIB_STATUS::SUCCESS
    };
    println!("REGISTER core={core} index={index} name={name} status={}", status.0);
    status
}

/// A kernel's name and entry point, as `register_funcs` reported them.
#[derive(Clone, Copy)]
struct Kernel {
    name: [u8; NAME_LEN],
    entry: usize,
}

static KERNEL_COUNT: AtomicU32 = AtomicU32::new(0);
static mut KERNELS: [Kernel; MAX_KERNELS] = [Kernel { name: [0; NAME_LEN], entry: 0 }; MAX_KERNELS];

unsafe extern "C" fn record_kernel(entry: *const c_void, name: *const c_char, library: *mut c_void) -> SUNDA_UCODE_LIB_STATUS {
    let core = prid();
    let index = KERNEL_COUNT.fetch_add(1, Ordering::Relaxed) as usize;
    // SAFETY: the runtime passes a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    println!(
        "KERNEL core={core} index={index} ptr={:#010x} name={} handle={:#010x}",
        entry as usize,
        core::str::from_utf8(name).unwrap_or("?"),
        library as usize
    );
    if index < MAX_KERNELS && name.len() < NAME_LEN {
        let mut kernel = Kernel { name: [0; NAME_LEN], entry: entry as usize };
        kernel.name[..name.len()].copy_from_slice(name);
        // SAFETY: KERNELS is this core's (its own loader image) and only this callback,
        // running on this core, writes it.
        unsafe { (*ptr::addr_of_mut!(KERNELS))[index] = kernel };
    }
    SUNDA_UCODE_LIB_STATUS::SUCCESS
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

/// The job, checked.
pub fn job() -> Option<&'static JobHeader> {
    // SAFETY: the host placed the job block at JOB_ADDRESS before any core ran, and
    // nothing writes it afterwards; the magic is checked before any other field is used.
    let job = unsafe { &*(JOB_ADDRESS as *const JobHeader) };
    (job.magic == JOB_MAGIC && (1..=8).contains(&job.cores)).then_some(job)
}

fn job_bytes(offset: u32, len: u32) -> &'static [u8] {
    let len = len.min(JOB_CAPACITY.saturating_sub(offset));
    // SAFETY: the range lies inside the job block (clamped above), which nothing writes.
    unsafe { core::slice::from_raw_parts((JOB_ADDRESS + offset) as *const u8, len as usize) }
}

fn progress(core: u32) -> *mut u32 {
    (PROGRESS + core as usize * 64) as *mut u32
}

/// Records that this core has entered the library and finished `ops_done` ops.
fn set_progress(core: u32, ops_done: u32) {
    memw();
    // SAFETY: the progress area is RAM past the job block; each core writes its own word.
    unsafe { write_volatile(progress(core), ops_done + 1) };
    memw();
}

/// Waits until every core of the job has entered the library and finished `ops_done` ops.
fn wait_for_all(cores: u32, ops_done: u32) -> bool {
    (0..cores).all(|core| {
        // SAFETY: as in `set_progress`; other cores' words are only read.
        (0..WAIT_POLLS).any(|_| unsafe { read_volatile(progress(core)) } > ops_done)
    }) && {
        memw();
        true
    }
}

/// The library's entry points the loader calls, typed.
struct Library {
    symbols: LibrarySymbols,
    set_invocation: unsafe extern "C" fn(*const ArgTensor, u32, *mut ArgTensor) -> u32,
    invocation_status: extern "C" fn() -> u32,
    translate_configure: unsafe extern "C" fn(*const u8, u32) -> i32,
    set_memcpy_method: extern "C" fn(u32) -> i32,
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
                set_invocation: function(symbols.set_invocation),
                invocation_status: function(symbols.invocation_status),
                translate_configure: function(symbols.translate_configure),
                set_memcpy_method: function(symbols.set_memcpy_method),
            }
        }
    }

    /// Runs `kernel` on `op`'s arguments; returns the invocation status and the CCOUNT
    /// ticks the kernel took (instructions / 25 under `-icount shift=0`).
    fn invoke(&self, job: &JobHeader, kernel: extern "C" fn(), op: &DecodedOp) -> (u32, u32) {
        let mut inputs = [ArgTensor::ZEROED; MAX_INPUTS];
        for (slot, bytes) in inputs.iter_mut().zip(op.inputs()) {
            *slot = ArgTensor::from_bytes(bytes);
        }
        let mut output = op.output().map_or(ArgTensor::ZEROED, ArgTensor::from_bytes);
        let records = job.translate.as_flattened();
        // SAFETY: the records and descriptors are valid for the calls and outlive the
        // kernel's run (the count is clamped to the array); `kernel` is the library's
        // entry point for this op's name.
        unsafe {
            (self.translate_configure)(records.as_ptr(), job.translate_count.min(TRANSLATE_REGIONS as u32));
            (self.set_invocation)(inputs.as_ptr(), op.inputs().len() as u32, &mut output);
        }
        if job.memcpy_method != NEVER {
            // An invalid method is refused by the runtime and leaves its own in place.
            (self.set_memcpy_method)(job.memcpy_method);
        }
        let start = get_cycle_count();
        kernel();
        let ticks = get_cycle_count().wrapping_sub(start);
        ((self.invocation_status)(), ticks)
    }
}

fn print_hex(prefix: core::fmt::Arguments<'_>, offset: usize, bytes: &[u8]) {
    struct Hex<'a>(&'a [u8]);
    impl core::fmt::Display for Hex<'_> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
        }
    }
    println!("{prefix} offset={offset} hex={}", Hex(bytes));
}

/// Drains the library's stdout ring: prints what the kernel wrote since the last drain,
/// in chunks, the first carrying how many bytes the ring lost.
fn drain_stdout(ring: u32, core: u32, op: u32) {
    let header = ring as *mut RingHeader;
    // SAFETY: the host read this address from the library's symbol table: the ring's
    // header, followed by `capacity` data bytes, in the library's RAM; its kernel has
    // returned, so nothing writes it now.
    let plan = match DrainPlan::new(&unsafe { read_volatile(header) }) {
        Ok(plan) => plan,
        Err(_) => return println!("STDOUT core={core} op={op} lost=0 offset=0 error=bad-ring"),
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
            print_hex(format_args!("STDOUT core={core} op={op} lost={}", if offset == 0 { plan.lost } else { 0 }), offset, &chunk[..filled]);
            offset += filled;
            filled = 0;
        }
    }
    // SAFETY: as above; the read counter is the loader's to write.
    unsafe { write_volatile(&raw mut (*header).read_count, plan.next_read_count) };
}

/// Runs the job on this core. Returns the exit status core 0 ends the simulation with.
pub fn run() -> i32 {
    let core = prid();
    if core == 0 {
        board::start_all_cores();
    }
    let Some(job) = job() else {
        println!("ERROR core={core} no valid job at {JOB_ADDRESS:#010x}");
        return EXIT_BAD_JOB;
    };
    if core >= job.cores {
        loop {
            core::hint::spin_loop();
        }
    }
    FAIL_REGISTRATION_AT.store(job.fail_registration_at, Ordering::Relaxed);
    let library = Library::new(job.libraries[core as usize]);

    let block = SUNDA_UCODE_LIB {
        sizeof_ncore_ucode_lib: job.handoff_size,
        library_handle: handle(core),
        get_data_scratch: Some(get_data_scratch),
        get_hbm_scratch: Some(get_hbm_scratch),
        get_dma_queue: Some(get_dma_queue),
        get_libc_fn: Some(get_libc_fn),
        register_ext_isa_fn: Some(register_ext_isa_fn),
        register_ext_isa_fn_v2: None,
        register_ext_isa_fn_v3: None,
    };
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
    println!("ENTRY core={core} status={}", status.0);
    if status.is_success() {
        // SAFETY: as above; `record_kernel` has the registrar's signature.
        let status = unsafe { register_funcs(Some(record_kernel)) };
        println!("REGISTER_FUNCS core={core} status={}", status.0);
    }

    set_progress(core, 0);
    ENTERED.store(status.is_success(), Ordering::Relaxed);
    dispatch(job, &library, core, 0, 0)
}

/// Runs the job's ops from op `index` (its words at `at`), then finishes: core 0 waits
/// for every core and returns the simulation's exit status; the others park.
fn dispatch(job: &JobHeader, library: &Library, core: u32, index: u32, at: usize) -> i32 {
    let Some(ops) = run_ops(job, library, core, index, at) else { return EXIT_CORE_LOST };
    if core != 0 {
        loop {
            core::hint::spin_loop();
        }
    }
    if !wait_for_all(job.cores, ops) {
        println!("ERROR a core did not finish");
        return EXIT_CORE_LOST;
    }
    println!("DONE");
    0
}

/// How a kernel left without returning.
#[derive(Clone, Copy)]
enum KernelStop {
    Abort,
    Exit(i32),
    Fault(i32),
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
}

/// A kernel stopped without returning: report its op, and carry on with the next one
/// on a fresh stack (the kernel's frames and the loader's under them are discarded).
fn kernel_stopped(stop: KernelStop) -> ! {
    board::set_exit_handler(None);
    let (kind, code) = match stop {
        KernelStop::Abort => (0, 0),
        KernelStop::Exit(status) => (1, status as u32),
        KernelStop::Fault(status) => (2, status as u32),
    };
    STOP.store(kind << 24 | (code & 0xFF_FFFF), Ordering::Relaxed);
    // SAFETY: the stack top is this image's own; nothing on the stack is used again.
    unsafe { loader_resume(ptr::addr_of!(_stack_top) as u32, resume, 0) }
}

/// How the last kernel stopped: kind << 24 | code (see `kernel_stopped`).
static STOP: AtomicU32 = AtomicU32::new(0);

/// Where the loader carries on after a kernel stopped (on a fresh stack).
extern "C" fn resume(_: u32) {
    let core = prid();
    let job = job().expect("the job was valid when the kernel started");
    let library = Library::new(job.libraries[core as usize]);
    let index = CURRENT_OP.load(Ordering::Relaxed);
    let stop = STOP.load(Ordering::Relaxed);
    let (kind, code) = (stop >> 24, stop & 0xFF_FFFF);
    drain_stdout(library.symbols.stdout_ring, core, index);
    let name = current_name();
    match kind {
        0 => println!("OP {index} core={core} function={name} status=abort"),
        1 => println!("OP {index} core={core} function={name} status=exit({code})"),
        _ => println!("OP {index} core={core} function={name} status=exception({code})"),
    }
    finish_op(job, core, index);
    let status = dispatch(job, &library, core, index + 1, NEXT_AT.load(Ordering::Relaxed) as usize);
    board::exit(status)
}

/// The name of the kernel the current op runs (recorded when it started).
fn current_name() -> &'static str {
    // SAFETY: written once per op before its kernel starts, read after it stopped.
    let name = unsafe { &*ptr::addr_of!(CURRENT_NAME) };
    core::str::from_utf8(&name[..name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN)]).unwrap_or("?")
}

static mut CURRENT_NAME: [u8; NAME_LEN] = [0; NAME_LEN];

/// Marks op `index` done on this core; core 0 then prints its output once every core
/// has done it.
fn finish_op(job: &JobHeader, core: u32, index: u32) -> bool {
    set_progress(core, index + 1);
    if core == 0 {
        if !wait_for_all(job.cores, index + 1) {
            println!("ERROR op={index}: a core did not finish it");
            return false;
        }
        dump_output(job, index);
    }
    true
}

/// Runs the job's ops from op `index` (its words at `at`); returns how many ops the job
/// has, or `None` if another core got lost.
fn run_ops(job: &JobHeader, library: &Library, core: u32, mut index: u32, mut at: usize) -> Option<u32> {
    let names = job_bytes(job.names_offset, job.names_count * NAME_LEN as u32);
    let name_of = |id: FunctionId| -> Option<&[u8]> {
        let slot = names.get(id.get() as usize * NAME_LEN..)?.get(..NAME_LEN)?;
        Some(&slot[..slot.iter().position(|&b| b == 0)?])
    };
    let known = |id: FunctionId| name_of(id).is_some();
    let ops = job_bytes(job.ops_offset, job.ops_len);
    let entered = ENTERED.load(Ordering::Relaxed);
    while at < ops.len() {
        if !wait_for_all(job.cores, index) {
            println!("ERROR core={core} op={index}: another core did not finish the previous op");
            return None;
        }
        let (op, used) = match decode_prefix(&ops[at..], &known) {
            Ok(decoded) => decoded,
            Err(error) => {
                println!("OP {index} core={core} function=? status=bad-words error={error}");
                break;
            }
        };
        at += used;
        let name = name_of(op.function_id()).unwrap_or(b"?");
        let name_text = core::str::from_utf8(name).unwrap_or("?");
        match (entered, find_kernel(name)) {
            (false, _) => println!("OP {index} core={core} function={name_text} status=not-entered"),
            (true, None) => println!("OP {index} core={core} function={name_text} status=unknown-kernel"),
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
                let (status, ticks) = library.invoke(job, kernel, &op);
                board::set_exit_handler(None);
                drain_stdout(library.symbols.stdout_ring, core, index);
                println!("OP {index} core={core} function={name_text} status={status} ticks={ticks}");
            }
        }
        if !finish_op(job, core, index) {
            return None;
        }
        index += 1;
    }
    Some(index)
}

/// Prints the bytes the job asks to see after op `op`.
fn dump_output(job: &JobHeader, op: u32) {
    let dumps = job_bytes(job.dumps_offset + op * size_of::<OutputDump>() as u32, size_of::<OutputDump>() as u32);
    let Some(word) = dumps.get(..8) else { return };
    let address = u32::from_le_bytes([word[0], word[1], word[2], word[3]]) as usize;
    let len = u32::from_le_bytes([word[4], word[5], word[6], word[7]]) as usize;
    if len == 0 {
        return;
    }
    // SAFETY: the host named this range of simulated RAM as op `op`'s output; every core
    // has finished the op, so nothing writes it now.
    let bytes = unsafe { core::slice::from_raw_parts(address as *const u8, len) };
    for (chunk_index, chunk) in bytes.chunks(HEX_CHUNK).enumerate() {
        print_hex(format_args!("DUMP op={op}"), chunk_index * HEX_CHUNK, chunk);
    }
}

const _: () = assert!(DESCRIPTOR_LEN == size_of::<ArgTensor>());
