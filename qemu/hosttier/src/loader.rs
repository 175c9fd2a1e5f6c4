//! The host tier's loader: what `qemu/firmware/src/loader.rs` does on the simulated
//! device, done by a Linux process for a library built for x86-64.
//!
//! It speaks the device's protocol (`neuroncustomop_wire::session`): job frames on
//! stdin, each segment written to its device address; the loader's report lines
//! (`neuroncustomop_wire::report::Line`) on stdout; the end-of-job marker on stderr. So
//! the machine's `Session` runs it as it runs QEMU, and the host API reads its reports
//! with the same parser.
//!
//! The device memory the loader and the runtime use is mapped at the device's own
//! addresses (the job block, the tensor area, each core's HBM and dataram scratch), so
//! descriptors, translate windows and heaps hold the same numbers as on the device.
//! Core i is library copy i (`core<i>.so`, each with its own statics, as each device
//! core has its own image) run on thread `core i`. The runtime's own code is the same
//! source; only the CPU differs.

use crate::apart;
use crate::callbacks::{self, Loader};
use crate::checks;
use crate::cores::{self, core};
use crate::dispatch::{ConfigureFn, Dispatch, MethodFn, OpArgs, SetInvocationFn};
use crate::sanitize::{self, Direction};
use neuroncustomop::start_exit::{DrainPlan, RingHeader, SUNDA_UCODE_LIB, SUNDA_UCODE_LIB_STATUS};
use neuroncustomop_machine::job::{TENSOR_AREA, TENSOR_AREA_SIZE};
use neuroncustomop_wire::fault::{Fault, FaultKind};
use neuroncustomop_wire::job::{
    CORES, DATA_SCRATCH_BASE, DATA_SCRATCH_SIZE, EXIT_BAD_JOB, HBM_SCRATCH_BASE, HBM_SCRATCH_SIZE, JOB_ADDRESS,
    JOB_CAPACITY, JOB_MAGIC, JobHeader, NAME_LEN, NEVER, OutputDump,
};
use neuroncustomop_wire::list::List;
use neuroncustomop_wire::report::{Bytes, Line, OpStatus};
use neuroncustomop_wire::session::{FRAME_MAGIC, FrameHeader, STDERR_JOB_END, SegmentHeader};
use neuroncustomop_wire::{DecodedOp, FunctionId, decode_prefix};
use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};

/// The device memory mapped at its own addresses: the job block through the last
/// core's HBM scratch (the tensor area between), and the cores' datarams.
const REGIONS: [(u32, u32); 2] = [
    (JOB_ADDRESS, HBM_SCRATCH_BASE + CORES as u32 * HBM_SCRATCH_SIZE - JOB_ADDRESS),
    (DATA_SCRATCH_BASE, CORES as u32 * DATA_SCRATCH_SIZE),
];

/// Runs the loader over `libraries` (one copy per core): job after job from stdin (or
/// the file `job`) until end of file, reporting on stdout (or to the file `report`).
/// Returns the process's exit status.
pub fn run(libraries: Vec<PathBuf>, job: Option<PathBuf>, report: Option<PathBuf>) -> i32 {
    let to_file = report.is_some();
    if let Some(path) = report {
        match std::fs::File::create(&path) {
            // SAFETY: dup2 onto fd 1 replaces stdout by the report file for the whole
            // process, before any thread prints.
            Ok(file) => unsafe {
                libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&file), 1);
            },
            Err(e) => {
                eprintln!("ncop-hostrun: {}: {e}", path.display());
                return 1;
            }
        }
    }
    let input: Box<dyn Read> = match job {
        Some(path) => match std::fs::File::open(&path) {
            Ok(file) => Box::new(file),
            Err(e) => {
                eprintln!("ncop-hostrun: {}: {e}", path.display());
                return 1;
            }
        },
        None => Box::new(std::io::stdin().lock()),
    };
    serve(libraries, input, to_file)
}

/// The loader's loop over `input`'s frames.
fn serve(libraries: Vec<PathBuf>, mut stdin: Box<dyn Read>, to_file: bool) -> i32 {
    if let Err(message) = map_device_memory() {
        eprintln!("ncop-hostrun: {message}");
        return 1;
    }
    sanitize::install_asan_report();
    checks::allocate_keys(debugging(), libraries.len());
    let mut cores = Vec::new();
    for (core, path) in libraries.iter().enumerate() {
        match Core::spawn(core as u32, path) {
            Ok(handle) => cores.push(handle),
            Err(message) => {
                eprintln!("ncop-hostrun: {}: {message}", path.display());
                return 1;
            }
        }
    }
    let mut entered = false;
    let mut job_number = 0;
    loop {
        match receive_job(&mut stdin) {
            Ok(true) => {}
            Ok(false) => return 0,
            Err(message) => {
                say(&Line::Error { message: &message });
                return EXIT_BAD_JOB;
            }
        }
        job_number += 1;
        // SAFETY: the frame just wrote the job block at JOB_ADDRESS, mapped memory.
        let job: JobHeader = unsafe { std::ptr::read_unaligned(JOB_ADDRESS as usize as *const JobHeader) };
        if job.magic != JOB_MAGIC || !(1..=cores.len() as u32).contains(&job.cores) {
            say(&Line::Error { message: "the host sent a frame without a valid job block" });
            return EXIT_BAD_JOB;
        }
        let taking_part = &cores[..job.cores as usize];
        if !entered {
            entered = true;
            for core in taking_part {
                core.send(Work::Enter { job: Box::new(job) });
            }
            for core in taking_part {
                core.answer();
            }
        }
        let stopped = run_ops(&job, taking_part);
        say(&Line::Done { job: job_number });
        let _ = std::io::stdout().flush();
        if !to_file {
            // A session reading the pipes waits for this marker; a report file has none.
            let _ = std::io::stderr().write_all(STDERR_JOB_END).and_then(|()| std::io::stderr().flush());
        }
        if stopped {
            // A core whose kernel stopped is parked where it stopped: this device cannot
            // run another op, so the session ends here and the next job boots anew.
            return 0;
        }
    }
}

/// Runs the job's ops in order, every core on each; true if a kernel stopped.
fn run_ops(job: &JobHeader, cores: &[Core]) -> bool {
    let names = job_bytes(job.names_offset, job.names_count * NAME_LEN as u32);
    let name_of = |id: FunctionId| -> Option<String> {
        let slot = names.get(id.get() as usize * NAME_LEN..)?.get(..NAME_LEN)?;
        Some(String::from_utf8_lossy(&slot[..slot.iter().position(|&b| b == 0)?]).into_owned())
    };
    let known = |id: FunctionId| name_of(id).is_some();
    let ops = job_bytes(job.ops_offset, job.ops_len);
    let (mut at, mut index, mut stopped) = (0, 0, false);
    while at < ops.len() {
        let (op, used) = match decode_prefix(&ops[at..], &known) {
            Ok(decoded) => decoded,
            Err(error) => {
                let error = error.to_string();
                for core in 0..job.cores {
                    let status = OpStatus::BadWords;
                    say(&Line::Op { index, core, function: "?", status, count: None, error: Some(&error) });
                }
                break;
            }
        };
        at += used;
        let function = name_of(op.function_id()).unwrap_or_else(|| "?".into());
        checks::protect_inputs(job, &op, debugging(), mapped);
        for core in cores {
            core.send(Work::Op(Box::new(OpWork { job: *job, index, function: function.clone(), op: op.clone() })));
        }
        for core in cores {
            stopped |= core.answer();
        }
        checks::unprotect_inputs();
        dump_output(job, index);
        index += 1;
    }
    stopped
}

/// Prints one report line.
fn say(line: &Line<'_>) {
    println!("{line}");
}

/// Prints the bytes the job asks to see after op `op`, as the device loader does.
fn dump_output(job: &JobHeader, op: u32) {
    let dumps = job_bytes(job.dumps_offset + op * size_of::<OutputDump>() as u32, size_of::<OutputDump>() as u32);
    let Some(word) = dumps.get(..8) else { return };
    let address = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
    let len = u32::from_le_bytes([word[4], word[5], word[6], word[7]]);
    if len == 0 || !mapped(address, len) {
        return;
    }
    // SAFETY: a mapped range (checked), which no core writes: every core finished the op.
    let bytes = unsafe { std::slice::from_raw_parts(address as usize as *const u8, len as usize) };
    say(&Line::Dump { op, offset: 0, len });
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(bytes).and_then(|()| stdout.write_all(b"\n"));
}

/// Bytes `offset..offset + len` of the job block (clamped to it).
fn job_bytes(offset: u32, len: u32) -> &'static [u8] {
    let len = len.min(JOB_CAPACITY.saturating_sub(offset));
    let offset = offset.min(JOB_CAPACITY);
    // SAFETY: inside the job block (clamped above), mapped, and written only between jobs.
    unsafe { std::slice::from_raw_parts((JOB_ADDRESS + offset) as usize as *const u8, len as usize) }
}

/// Whether `address..address + len` lies in the mapped device memory.
fn mapped(address: u32, len: u32) -> bool {
    let end = u64::from(address) + u64::from(len);
    REGIONS.iter().any(|&(base, size)| address >= base && end <= u64::from(base) + u64::from(size))
}

/// Maps the device memory at its own addresses.
fn map_device_memory() -> Result<(), String> {
    for (base, size) in REGIONS {
        // SAFETY: a fresh anonymous mapping at an address nothing else of this process
        // uses (MAP_FIXED_NOREPLACE refuses to replace a mapping).
        let mapped = unsafe {
            libc::mmap(
                base as usize as *mut c_void,
                size as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if mapped != base as usize as *mut c_void {
            return Err(format!(
                "cannot map the device memory at {base:#x} ({} bytes): {}",
                size,
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Reads one frame and writes its segments to their addresses; false at end of file.
fn receive_job(stdin: &mut impl Read) -> Result<bool, String> {
    let mut word = [0u8; 8];
    match stdin.read_exact(&mut word) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(format!("reading a job: {e}")),
    }
    let frame = FrameHeader::from_bytes(word);
    if frame.magic != FRAME_MAGIC {
        return Err("the host sent something that is not a job frame".into());
    }
    let poison = asan_poisoner();
    if let Some(poison) = poison {
        // Under AddressSanitizer every byte of the tensor area is out of bounds but the
        // job's own: an access past a tensor's end is caught at the instruction.
        // SAFETY: the tensor area is mapped; poisoning only marks its shadow.
        unsafe { poison.0(TENSOR_AREA as usize as *const c_void, TENSOR_AREA_SIZE as usize) };
    }
    for _ in 0..frame.segments {
        stdin.read_exact(&mut word).map_err(|e| format!("reading a segment: {e}"))?;
        let segment = SegmentHeader::from_bytes(word);
        if !mapped(segment.address, segment.len) {
            return Err(format!(
                "a segment at {:#x} ({} bytes) is outside device memory",
                segment.address, segment.len
            ));
        }
        if let Some(poison) = poison {
            // SAFETY: as above, unmarking the segment's bytes before they are written.
            unsafe { poison.1(segment.address as usize as *const c_void, segment.len as usize) };
        }
        // SAFETY: a mapped range (checked) that no core uses between jobs.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(segment.address as usize as *mut u8, segment.len as usize) };
        stdin.read_exact(bytes).map_err(|e| format!("reading a segment: {e}"))?;
    }
    Ok(true)
}

/// ASan's `__asan_poison_memory_region` and `__asan_unpoison_memory_region`, when the
/// process runs with its runtime (`--sanitize address` preloads it).
type PoisonFn = unsafe extern "C" fn(*const c_void, usize);
fn asan_poisoner() -> Option<(PoisonFn, PoisonFn)> {
    let find = |name: &CStr| {
        // SAFETY: a lookup in the global scope with a NUL-terminated name.
        let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        // SAFETY: ASan's functions of this signature, if present.
        (!address.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, PoisonFn>(address) })
    };
    Some((find(c"__asan_poison_memory_region")?, find(c"__asan_unpoison_memory_region")?))
}

/// What the loader asks of a core's thread.
enum Work {
    /// `entry_func`, then `register_funcs`.
    Enter { job: Box<JobHeader> },
    /// Run op `index`.
    Op(Box<OpWork>),
}

/// One op for one core.
struct OpWork {
    job: JobHeader,
    index: u32,
    function: String,
    op: DecodedOp,
}

/// What a core's thread answers: its report lines, and whether its kernel stopped.
struct Answer {
    lines: Vec<String>,
    stopped: bool,
}

/// One core: its thread and the channels to it.
struct Core {
    core: u32,
    work: Sender<Work>,
    answers: Receiver<Answer>,
}

impl Core {
    /// Loads library copy `path` as core `core` and starts the core's thread.
    fn spawn(core: u32, path: &std::path::Path) -> Result<Self, String> {
        let library = Library::open(path, core)?;
        let (work, inbox) = mpsc::channel();
        let (outbox, answers) = mpsc::channel();
        cores::spawn(core, Box::new(move || core_thread(core, library, inbox, outbox)))?;
        Ok(Self { core, work, answers })
    }

    fn send(&self, work: Work) {
        sanitize::handed_over(self.core, Direction::ToCore);
        let _ = self.work.send(work);
    }

    /// Prints the core's answer; true if its kernel stopped.
    fn answer(&self) -> bool {
        match self.answers.recv() {
            Ok(answer) => {
                sanitize::taken_over(self.core, Direction::ToLoader);
                for line in &answer.lines {
                    println!("{line}");
                }
                answer.stopped
            }
            Err(_) => true,
        }
    }
}

/// A library copy's entry points.
#[derive(Clone, Copy)]
struct Library {
    /// Where the copy is loaded (its places are offsets from here).
    base: usize,
    entry_func: EntryFn,
    register_funcs: RegisterFuncsFn,
    dispatch: Dispatch,
    invocation_status: StatusFn,
    stdout_ring: *mut RingHeader,
}

// SAFETY: the pointers are a loaded library's, used only by its core's thread.
unsafe impl Send for Library {}

type RecordFn = unsafe extern "C" fn(*const c_void, *const c_char, *mut c_void) -> SUNDA_UCODE_LIB_STATUS;
type EntryFn = unsafe extern "C" fn(*const SUNDA_UCODE_LIB) -> SUNDA_UCODE_LIB_STATUS;
type RegisterFuncsFn = unsafe extern "C" fn(Option<RecordFn>) -> SUNDA_UCODE_LIB_STATUS;
type StatusFn = unsafe extern "C" fn() -> u32;

impl Library {
    /// Loads `path` (its own copy: its own statics) and tells it it is core `core`.
    fn open(path: &std::path::Path, core: u32) -> Result<Self, String> {
        let name = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: loading a library runs its initialisers: the author's and the
        // runtime's static constructors, which the device runs too.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            // SAFETY: dlerror returns null or a NUL-terminated message.
            let error = unsafe { libc::dlerror() };
            let text = if error.is_null() {
                "unknown error".into()
            } else {
                // SAFETY: as above.
                unsafe { CStr::from_ptr(error) }.to_string_lossy().into_owned()
            };
            return Err(format!("cannot load it: {text}"));
        }
        sanitize::watch_heaps(handle);
        checks::watch_journal(handle);
        apart::watch_stores(handle, core);
        let symbol = |name: &str| -> Result<*mut c_void, String> {
            let c_name = CString::new(name).expect("no NUL");
            // SAFETY: a loaded handle and a NUL-terminated name.
            let address = unsafe { libc::dlsym(handle, c_name.as_ptr()) };
            if address.is_null() { Err(format!("the library has no symbol {name}")) } else { Ok(address) }
        };
        let set_core = symbol("neuron_host_set_core")?;
        // SAFETY: the runtime's `extern "C" fn(u32)` (runtime/arch/host.rs).
        unsafe { std::mem::transmute::<*mut c_void, extern "C" fn(u32)>(set_core)(core) };
        let entry = symbol("entry_func")?;
        let base = crate::base_of(entry as usize).ok_or("the loaded library has no load address")?;
        // SAFETY: each symbol is the runtime's export of that signature (the C ABI the
        // device loader calls by the same names, docs/abi/entry.md and dispatch.md).
        unsafe {
            Ok(Self {
                base,
                entry_func: std::mem::transmute::<*mut c_void, EntryFn>(entry),
                register_funcs: std::mem::transmute::<*mut c_void, RegisterFuncsFn>(symbol("register_funcs")?),
                dispatch: Dispatch {
                    set_invocation: std::mem::transmute::<*mut c_void, SetInvocationFn>(symbol(
                        "customop_set_invocation",
                    )?),
                    translate_configure: std::mem::transmute::<*mut c_void, ConfigureFn>(symbol(
                        "neuron_translate_configure",
                    )?),
                    set_memcpy_method: std::mem::transmute::<*mut c_void, MethodFn>(symbol(
                        "neuron_set_memcpy_method",
                    )?),
                },
                invocation_status: std::mem::transmute::<*mut c_void, StatusFn>(symbol("customop_invocation_status")?),
                stdout_ring: symbol("neuron_stdout_ring")?.cast(),
            })
        }
    }
}

thread_local! {
    /// The job being entered or run (for the callbacks' injected faults).
    static FAULTS: Cell<u32> = const { Cell::new(0) };
    static FAIL_REGISTRATION_AT: Cell<u32> = const { Cell::new(NEVER) };
    static REGISTRATIONS: Cell<u32> = const { Cell::new(0) };
    /// Report lines of the work in hand.
    static LINES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    /// The kernels `register_funcs` reported: name and entry point.
    static KERNELS: RefCell<Vec<(String, usize)>> = const { RefCell::new(Vec::new()) };
    /// Where a stopped kernel's answer goes, and what it was running.
    static STOP: RefCell<Option<Running>> = const { RefCell::new(None) };
}

/// The kernel a core runs now: where its answer goes if it stops, its op, its name,
/// its library's stdout ring and invocation status.
type Running = (Sender<Answer>, u32, String, *mut RingHeader, StatusFn);

fn record(line: &Line<'_>) {
    LINES.with(|lines| lines.borrow_mut().push(line.to_string()));
}

fn take_lines() -> Vec<String> {
    LINES.with(|lines| std::mem::take(&mut *lines.borrow_mut()))
}

/// A core's thread: work after work until the loader goes.
fn core_thread(core: u32, library: Library, inbox: Receiver<Work>, outbox: Sender<Answer>) {
    cores::set_core(core);
    checks::start_core(library.base);
    checks::deny_foreign_writes(core);
    install_fault_handlers();
    let mut entered = false;
    for work in inbox {
        sanitize::taken_over(core, Direction::ToCore);
        match work {
            Work::Enter { job } => entered = enter(&library, &job, core),
            Work::Op(work) => {
                let OpWork { job, index, function, op } = *work;
                let status = if !entered {
                    OpStatus::NotEntered
                } else if let Some(kernel) = find_kernel(&function) {
                    STOP.with(|stop| {
                        *stop.borrow_mut() = Some((
                            outbox.clone(),
                            index,
                            function.clone(),
                            library.stdout_ring,
                            library.invocation_status,
                        ))
                    });
                    checks::start_op();
                    let status = invoke(&library, &job, kernel, &op);
                    STOP.with(|stop| *stop.borrow_mut() = None);
                    drain_stdout(library.stdout_ring, core, index);
                    let found = checks::end_op(core, index);
                    LINES.with(|lines| lines.borrow_mut().extend(found));
                    OpStatus::Returned(status)
                } else {
                    OpStatus::UnknownKernel
                };
                record(&Line::Op { index, core, function: &function, status, count: None, error: None });
            }
        }
        sanitize::handed_over(core, Direction::ToLoader);
        if outbox.send(Answer { lines: take_lines(), stopped: false }).is_err() {
            return;
        }
    }
}

fn find_kernel(name: &str) -> Option<extern "C" fn()> {
    let entry = KERNELS.with(|kernels| kernels.borrow().iter().find(|(n, _)| n == name).map(|(_, entry)| *entry))?;
    // SAFETY: the library reported this address as a kernel entry point, an
    // `extern "C" fn()` (the author table's contract).
    Some(unsafe { std::mem::transmute::<usize, extern "C" fn()>(entry) })
}

/// Runs `kernel` on `op`'s arguments, as the device loader does; returns its status.
fn invoke(library: &Library, job: &JobHeader, kernel: extern "C" fn(), op: &DecodedOp) -> u32 {
    let mut args = OpArgs::of(op);
    // SAFETY: the library's exports of these signatures; `args` stays on this frame
    // until the kernel has ended (one that stops never returns here, and the next op
    // hands off its own).
    unsafe { library.dispatch.hand_off(job, &mut args) };
    hold(job.cores);
    ncop_hostrun_before_kernel(core(), kernel);
    kernel();
    // SAFETY: as above.
    unsafe { (library.invocation_status)() }
}

/// The core `ncop debug` shows first (`--gdb-core`), from [`HOLD`]: set, every core
/// waits before its first kernel until it is at its kernel's entry.
const HOLD: &str = "NCOP_HOSTRUN_HOLD";

/// The core `ncop debug` shows first, when the loader runs under it ([`HOLD`]).
fn held_for() -> Option<u32> {
    static FIRST: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *FIRST.get_or_init(|| std::env::var(HOLD).ok().and_then(|core| core.parse().ok()))
}

/// Whether the loader runs under `ncop debug` (gdb).
fn debugging() -> bool {
    held_for().is_some()
}

/// Cores held before their first kernel so far ([`hold`]).
static HELD: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Set to non-zero by gdb at its first stop at a kernel's entry (`ncop debug`'s script):
/// the held cores go on when gdb lets the program continue.
#[unsafe(no_mangle)]
pub static NCOP_HOSTRUN_RELEASE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Under `ncop debug` (the variable [`HOLD`] names the core gdb shows first): before the
/// first kernel, every other core waits here until gdb has stopped, and that core
/// calls its kernel once all `cores` - 1 others wait. So gdb's first stop, in that
/// core's kernel, finds every core at its kernel's entry (gdb stops all threads), and a
/// breakpoint set there is hit on whichever core reaches it. Does nothing otherwise.
fn hold(cores: u32) {
    let Some(first) = held_for() else {
        return;
    };
    if first >= cores {
        // No core would reach gdb's first stop: hold none.
        return;
    }
    use std::sync::atomic::Ordering;
    if core() == first {
        while HELD.load(Ordering::Acquire) + 1 < cores {
            std::thread::yield_now();
        }
    } else if NCOP_HOSTRUN_RELEASE.load(Ordering::Acquire) == 0 {
        HELD.fetch_add(1, Ordering::AcqRel);
        while NCOP_HOSTRUN_RELEASE.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
    }
}

/// Called on every core right before its kernel: where `ncop run --host --gdb` stops
/// (a breakpoint here on the chosen core, then one at `kernel`). Does nothing.
#[inline(never)]
#[unsafe(no_mangle)]
pub extern "C" fn ncop_hostrun_before_kernel(core_index: u32, kernel: extern "C" fn()) {
    std::hint::black_box((core_index, kernel));
}

/// `entry_func` and `register_funcs` on this core, reported as the device loader does.
fn enter(library: &Library, job: &JobHeader, core: u32) -> bool {
    FAULTS.with(|f| f.set(job.faults));
    FAIL_REGISTRATION_AT.with(|f| f.set(job.fail_registration_at));
    if job.stdout_queue_bytes != NEVER {
        // SAFETY: the ring's header (capacity at +4) in the loaded library, not running.
        unsafe { library.stdout_ring.cast::<u32>().add(1).write_volatile(job.stdout_queue_bytes) };
    }
    let block = callbacks::handoff::<HostTier>(job.handoff_size, core);
    // SAFETY: the block is valid for the call; its callbacks keep the handoff contract.
    let status = unsafe { (library.entry_func)(&block) };
    record(&Line::Entry { core, status: status.0 });
    if status.is_success() {
        // SAFETY: `record_kernel` has the registrar's signature.
        let status = unsafe { (library.register_funcs)(Some(callbacks::record_kernel::<HostTier>)) };
        record(&Line::RegisterFuncs { core, status: status.0 });
    }
    status.is_success()
}

/// The host tier's side of the handoff's callbacks (`callbacks`, shared with the
/// device loader): per-thread state, report lines collected for the loader's answer.
struct HostTier;

impl Loader for HostTier {
    const ABORT: extern "C" fn() -> ! = host_abort;
    const EXIT: extern "C" fn(i32) -> ! = host_exit;

    fn core() -> u32 {
        core()
    }

    fn faults() -> u32 {
        FAULTS.with(Cell::get)
    }

    fn registration() -> (u32, u32) {
        (REGISTRATIONS.with(|r| r.replace(r.get() + 1)), FAIL_REGISTRATION_AT.with(Cell::get))
    }

    fn keep_kernel(name: &[u8], entry: usize) -> u32 {
        KERNELS.with(|kernels| {
            let mut kernels = kernels.borrow_mut();
            kernels.push((String::from_utf8_lossy(name).into_owned(), entry));
            kernels.len() as u32 - 1
        })
    }

    fn report(line: &Line<'_>) {
        record(line);
    }
}

/// Drains the library's stdout ring into report lines, as the device loader does.
fn drain_stdout(ring: *mut RingHeader, core: u32, op: u32) {
    // SAFETY: the library's exported ring header; its kernel is not running.
    let Ok(plan) = DrainPlan::new(&unsafe { std::ptr::read_volatile(ring) }) else {
        return record(&Line::BadRing { core, op });
    };
    // SAFETY: the ring's data follows its header, `capacity` bytes.
    let data = unsafe { ring.cast::<u8>().add(size_of::<RingHeader>()) };
    // SAFETY: every index DrainPlan yields is below the capacity.
    let kept: Vec<u8> =
        plan.segments().into_iter().flatten().map(|at| unsafe { data.add(at).read_volatile() }).collect();
    let mut offset = 0;
    for (index, chunk) in kept.chunks(512).enumerate() {
        let lost = if index == 0 { plan.lost } else { 0 };
        record(&Line::Stdout { core, op, lost, offset, bytes: Bytes::Raw(chunk) });
        offset += chunk.len() as u32;
    }
    // SAFETY: as above; the read counter is the loader's to write.
    unsafe { std::ptr::write_volatile(&raw mut (*ring).read_count, plan.next_read_count) };
}

/// The host's `abort` for the library: its op stops with `abort`.
extern "C" fn host_abort() -> ! {
    kernel_stopped(OpStatus::Abort, None)
}

/// The host's `exit` for the library: its op stops with `exit(<status>)`.
extern "C" fn host_exit(status: c_int) -> ! {
    kernel_stopped(OpStatus::Exit(status), None)
}

/// What the loader says on stderr when a kernel left without returning: its thread
/// stays parked, so the loader ends after the job (the host API starts a new one).
pub const SESSION_ENDS: &str = "ncop-hostrun: a kernel left without returning; this loader ends after the job";

/// A kernel stopped without returning: its answer goes to the loader now (what it
/// printed, the op's status, and where it stopped), and the thread parks for good,
/// its frames kept (the device discards them; a host thread cannot).
fn kernel_stopped(status: OpStatus, fault: Option<String>) -> ! {
    let core = core();
    if let Some((outbox, index, function, ring, invocation_status)) = STOP.with(|stop| stop.borrow_mut().take()) {
        // As the device's loader: a kernel that recorded a failing status and exited
        // with it (the C++ headers' `end_op`: DTYPE_MISMATCH, ASSERT_FAILED, ...) ended
        // its op with that status.
        let status = match status {
            // SAFETY: the library's export of this signature, on its core's thread.
            OpStatus::Exit(code) if code != 0 && unsafe { invocation_status() } == code as u32 => {
                OpStatus::Returned(code as u32)
            }
            other => other,
        };
        eprintln!("{SESSION_ENDS}");
        drain_stdout(ring, core, index);
        record(&Line::Op { index, core, function: &function, status, count: None, error: None });
        if let Some(fault) = fault {
            // The fault's place, on the job's stderr (the report's explanation).
            eprintln!("{fault}");
        }
        sanitize::handed_over(core, Direction::ToLoader);
        let _ = outbox.send(Answer { lines: take_lines(), stopped: true });
    }
    loop {
        std::thread::park();
    }
}

/// Exception codes the device reports for these signals: the runtime's EXIT_EXCEPTION.
fn install_fault_handlers() {
    const ALT_STACK: usize = 256 * 1024;
    let stack = Box::leak(vec![0u8; ALT_STACK].into_boxed_slice());
    let alt = libc::stack_t { ss_sp: stack.as_mut_ptr().cast(), ss_flags: 0, ss_size: ALT_STACK };
    // SAFETY: a leaked buffer becomes this thread's signal stack (a kernel's stack
    // overflow still gets its report), and the handler is an `extern "C"` function of
    // the SA_SIGINFO signature.
    unsafe {
        libc::sigaltstack(&alt, std::ptr::null_mut());
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_fault as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        for signal in [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
        if !debugging() {
            // The end of a store's single step into a protected input (`checks`).
            action.sa_sigaction = on_step as *const () as usize;
            libc::sigaction(libc::SIGTRAP, &action, std::ptr::null_mut());
        }
    }
}

/// A single step of [`checks`] ended; any other SIGTRAP ends the process as it would.
extern "C" fn on_step(signal: c_int, _info: *mut libc::siginfo_t, context: *mut c_void) {
    if !checks::after_step(context) {
        // SAFETY: restoring the default disposition; the signal is raised again on return.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}

/// A kernel's fault: reported as the device reports an exception, with the place; a
/// store into a protected input is a finding, and the kernel goes on ([`checks`]).
extern "C" fn on_fault(signal: c_int, info: *mut libc::siginfo_t, context: *mut c_void) {
    // SAFETY: the kernel passes SA_SIGINFO handlers a valid siginfo.
    if signal == libc::SIGSEGV && checks::on_protected_store(unsafe { (*info).si_addr() } as usize, context) {
        return;
    }
    let in_kernel = STOP.with(|stop| stop.borrow().is_some());
    if !in_kernel {
        // The loader's own fault: let the default action end the process.
        // SAFETY: restoring the default disposition; the signal is raised again on return.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
        return;
    }
    // SAFETY: the kernel passes SA_SIGINFO handlers valid siginfo and ucontext pointers.
    let (address, pc) = unsafe {
        let context = &*context.cast::<libc::ucontext_t>();
        ((*info).si_addr() as usize, context.uc_mcontext.gregs[libc::REG_RIP as usize] as usize)
    };
    let name = match signal {
        libc::SIGSEGV => "SIGSEGV (a bad memory access)",
        libc::SIGBUS => "SIGBUS (a bad memory access)",
        libc::SIGFPE => "SIGFPE (an integer division by zero)",
        _ => "SIGILL (an illegal instruction)",
    };
    // As the device: a sentence for the author, then the `FAULT` line for the tools.
    let frames = [pc as u64];
    let line = Fault {
        core: core(),
        kind: FaultKind::Signal,
        cause: signal as u32,
        pc: pc as u64,
        vaddr: address as u64,
        depth: 1,
        frames: List::Raw(&frames),
    };
    let fault = format!("{name} at address {address:#x}, at {}\n{line}", crate::place(pc));
    kernel_stopped(OpStatus::Exception(neuroncustomop::arch::EXIT_EXCEPTION), Some(fault))
}
