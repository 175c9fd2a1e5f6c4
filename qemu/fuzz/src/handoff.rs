//! `entry_func`'s sequence: the handoff block's gates (`SUNDA_UCODE_LIB::from_raw`,
//! `callbacks`) and `run_entry` behind them, through `start_exit::enter` with a real
//! block of `extern "C"` fake callbacks, a fake kernel table and a recording runtime;
//! and `register_funcs_with` over the same table.
//!
//! Input: where the block is (null, misaligned, a block whose size word is all that is
//! readable, or a whole block), its size word, which callbacks are null, what the
//! scratch and DMA callbacks report (any base, any size, or nothing written), which
//! runtime steps refuse, the table (any count, including the 0x8000 gate's edges, with
//! any entries null) and where registration fails and with what status.
//!
//! Checked, whatever the values: the returned status and the whole log of host
//! callbacks and runtime steps are exactly the model's (docs/abi/entry.md): a block
//! refused by a gate calls nothing and reads nothing past its first word (ASan guards
//! the short block), an unusable scratch region stops before the heaps, a refused step
//! stops the sequence with its status, the count and null gates register nothing, and
//! registration stops at the first failure and returns it.

use core::cell::RefCell;
use core::ffi::{CStr, c_char, c_void};

use arbitrary::{Arbitrary, Unstructured};
use neuroncustomop::start_exit::{
    AtexitFull, DmaQueueOffsets, ExitFn, KernelTable, LibcResolver, MAX_KERNELS, RegisterFuncsFn, Runtime,
    SUNDA_UCODE_LIB, SUNDA_UCODE_LIB_STATUS as Status, ScratchRegion, enter, register_funcs_with,
};

use crate::ensure_eq;

/// One step the sequence took, host side or runtime side, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    DataScratch,
    HbmScratch,
    DmaQueue,
    Register { handle: usize, name: usize, func: Option<usize> },
    KeepHandle(usize),
    InitHeaps { hbm: (usize, u32), dataram: (usize, u32) },
    KeepDma(u32, u32),
    InitLibc { resolver: bool },
    StaticConstructors,
    Atexit,
}

/// What a scratch callback reports.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Scratch {
    /// Writes nothing: the runtime must see null and 0.
    Nothing,
    /// A plausible region.
    Region { base: u32, size: u32 },
    /// Any base (near the top of the address space too) and size.
    Any { base: usize, size: u32 },
}

impl Scratch {
    /// The (base, size) the runtime must see.
    fn reported(self) -> (usize, u32) {
        match self {
            Scratch::Nothing => (0, 0),
            Scratch::Region { base, size } => (base as usize, size),
            Scratch::Any { base, size } => (base, size),
        }
    }
}

/// The table's count.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Count {
    Small(u8),
    /// 0x8000, 0x8001, 0x8000_0000 (a negative C int), u32::MAX. The largest accepted
    /// count, 0x7fff, is not drawn: 32 K registrations a run would slow the target
    /// a hundredfold; the host test `count_gate_accepts_0x7fff_and_refuses_0x8000_and_up`
    /// and the QEMU test `a_count_of_0x7fff_registers_every_kernel` pin it.
    Edge(u8),
    /// Any count at or above 0x8000; below it, mod 100 (the edges are `Edge`'s).
    Any(u32),
}

impl Count {
    fn get(self) -> u32 {
        match self {
            Count::Small(n) => u32::from(n % 40),
            Count::Edge(k) => [0x8000, 0x8001, 0x8000_0000, u32::MAX][usize::from(k) % 4],
            Count::Any(n) if n >= MAX_KERNELS => n,
            Count::Any(n) => n % 100,
        }
    }
}

/// Where the block lives.
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    Null,
    /// 1..=7 bytes past an aligned address.
    Misaligned(u8),
    /// A whole block (its size word is still the fuzzer's).
    Whole,
    /// Only the size word is readable: an 8-byte allocation holding it.
    SizeWordOnly,
}

#[derive(Arbitrary, Debug, Clone)]
struct Case {
    placement: Placement,
    /// The size word; `None`: 36 plus a small extra.
    size: Option<u32>,
    extra: u8,
    library_handle: usize,
    /// Which of the block's eight callbacks are present (bit k: member k + 2).
    present: u8,
    data: Scratch,
    hbm: Scratch,
    dma: Option<(u32, u32)>,
    heaps_refuse: Option<u32>,
    atexit_full: bool,
    count: Count,
    null_funcs: Vec<u16>,
    null_names: Vec<u16>,
    /// (index, status): registration of kernel `index` returns `status` (0 is success).
    fail_registration: Option<(u16, u32)>,
    register_funcs: Option<bool>,
}

std::thread_local! {
    static LOG: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
    static CASE: RefCell<Option<Case>> = const { RefCell::new(None) };
}

fn record(event: Event) {
    LOG.with_borrow_mut(|log| log.push(event));
}

fn case<R>(f: impl FnOnce(&Case) -> R) -> R {
    CASE.with_borrow(|case| f(case.as_ref().expect("a case is set")))
}

fn write_scratch(scratch: Scratch, addr: *mut *mut c_void, size: *mut u32) {
    if let Scratch::Nothing = scratch {
        return;
    }
    let (base, bytes) = scratch.reported();
    // SAFETY: the runtime passes two writable out-parameters (the callback contract).
    unsafe {
        addr.write(core::ptr::without_provenance_mut(base));
        size.write(bytes);
    }
}

unsafe extern "C" fn fake_data_scratch(addr: *mut *mut c_void, size: *mut u32) {
    record(Event::DataScratch);
    write_scratch(case(|c| c.data), addr, size);
}

unsafe extern "C" fn fake_hbm_scratch(addr: *mut *mut c_void, size: *mut u32) {
    record(Event::HbmScratch);
    write_scratch(case(|c| c.hbm), addr, size);
}

unsafe extern "C" fn fake_dma_queue(m2s: *mut u32, s2m: *mut u32) {
    record(Event::DmaQueue);
    if let Some((a, b)) = case(|c| c.dma) {
        // SAFETY: two writable out-parameters (the callback contract).
        unsafe {
            m2s.write(a);
            s2m.write(b);
        }
    }
}

unsafe extern "C" fn fake_resolver(_: *const c_char) -> *mut c_void {
    panic!("entry_func called the libc resolver itself; only the runtime's init_libc may");
}

/// The status registration of the kernel named `name` returns.
fn registration_status(name: *const c_char) -> Status {
    let index = name_index(name);
    match case(|c| c.fail_registration) {
        Some((at, status)) if usize::from(at) == index => Status(status),
        _ => Status::SUCCESS,
    }
}

unsafe extern "C" fn fake_register(handle: *mut c_void, name: *const c_char) -> Status {
    record(Event::Register { handle: handle as usize, name: name as usize, func: None });
    registration_status(name)
}

unsafe extern "C" fn fake_register_tagged(_: *mut c_void, _: *const c_char, _: u8) -> Status {
    panic!("entry_func called register_ext_isa_fn_v2/_v3, which it must never call");
}

unsafe extern "C" fn fake_register_funcs(func: *const c_void, name: *const c_char, handle: *mut c_void) -> Status {
    record(Event::Register { handle: handle as usize, name: name as usize, func: Some(func as usize) });
    registration_status(name)
}

/// Kernel names: NUL-terminated and static, as the table contract requires. Index `i`
/// uses entry `i % 64`, and a name's index is found back from its address.
static NAMES: [[u8; 8]; 64] = {
    let mut names = [[0u8; 8]; 64];
    let mut i = 0;
    while i < 64 {
        names[i] = [b'k', b'0' + (i / 10) as u8, b'0' + (i % 10) as u8, 0, 0, 0, 0, 0];
        i += 1;
    }
    names
};

fn name_of(index: u32) -> *const c_char {
    NAMES[index as usize % NAMES.len()].as_ptr().cast()
}

/// The table index (mod 64) a registered name stands for; checks it is a kernel name.
fn name_index(name: *const c_char) -> usize {
    let offset = (name as usize).wrapping_sub(NAMES.as_ptr() as usize);
    assert!(offset < size_of_val(&NAMES) && offset.is_multiple_of(8), "registered a name that is not the table's");
    // SAFETY: `name` is one of the NUL-terminated `NAMES` (checked above).
    let text = unsafe { CStr::from_ptr(name) };
    ensure_eq!(text.to_bytes().len(), 3, "kernel name");
    offset / 8
}

/// A kernel's (fake) entry point: never called, only passed on.
fn func_of(index: u32) -> *const c_void {
    core::ptr::without_provenance(0x1000 + index as usize * 4)
}

struct FakeTable {
    count: u32,
    null_funcs: Vec<u32>,
    null_names: Vec<u32>,
}

// SAFETY: every non-null name is one of the static, NUL-terminated `NAMES`.
unsafe impl KernelTable for FakeTable {
    fn count(&self) -> u32 {
        self.count
    }

    fn func(&self, index: u32) -> *const c_void {
        assert!(index < self.count && index < MAX_KERNELS, "func({index}) outside the table");
        if self.null_funcs.contains(&index) { core::ptr::null() } else { func_of(index) }
    }

    fn name(&self, index: u32) -> *const c_char {
        assert!(index < self.count && index < MAX_KERNELS, "name({index}) outside the table");
        if self.null_names.contains(&index) { core::ptr::null() } else { name_of(index) }
    }
}

struct FakeRuntime;

impl Runtime for FakeRuntime {
    fn keep_library_handle(&mut self, library_handle: *mut c_void) {
        record(Event::KeepHandle(library_handle as usize));
    }

    unsafe fn init_heaps(&mut self, hbm: ScratchRegion, dataram: ScratchRegion) -> Result<(), Status> {
        record(Event::InitHeaps { hbm: (hbm.base as usize, hbm.size), dataram: (dataram.base as usize, dataram.size) });
        case(|c| c.heaps_refuse).map_or(Ok(()), |status| Err(Status(status)))
    }

    fn keep_dma_queue(&mut self, offsets: DmaQueueOffsets) {
        record(Event::KeepDma(offsets.m2s, offsets.s2m));
    }

    unsafe fn init_libc(&mut self, resolver: Option<LibcResolver>) {
        record(Event::InitLibc { resolver: resolver.is_some() });
    }

    fn run_static_constructors(&mut self) {
        record(Event::StaticConstructors);
    }

    fn atexit(&mut self, _handler: ExitFn) -> Result<(), AtexitFull> {
        record(Event::Atexit);
        if case(|c| c.atexit_full) { Err(AtexitFull) } else { Ok(()) }
    }
}

fn present(case: &Case, member: u32) -> bool {
    case.present & (1 << (member - 2)) != 0
}

fn block_of(case: &Case, size: u32) -> SUNDA_UCODE_LIB {
    SUNDA_UCODE_LIB {
        sizeof_ncore_ucode_lib: size,
        library_handle: core::ptr::without_provenance_mut(case.library_handle),
        get_data_scratch: present(case, 2).then_some(fake_data_scratch as _),
        get_hbm_scratch: present(case, 3).then_some(fake_hbm_scratch as _),
        get_dma_queue: present(case, 4).then_some(fake_dma_queue as _),
        get_libc_fn: present(case, 5).then_some(fake_resolver as _),
        register_ext_isa_fn: present(case, 6).then_some(fake_register as _),
        register_ext_isa_fn_v2: present(case, 7).then_some(fake_register_tagged as _),
        register_ext_isa_fn_v3: present(case, 8).then_some(fake_register_tagged as _),
    }
}

/// A region is usable unless null, empty, or wrapping: its last byte must exist (a
/// region ending exactly at the top of the address space is usable).
fn usable((base, size): (usize, u32)) -> bool {
    base != 0 && size != 0 && base.checked_add(size as usize - 1).is_some()
}

/// The registration loop's model: the count gate, the null gate, then each kernel in
/// order until the first failure.
fn model_register(case: &Case, table: &FakeTable, handle: usize, with_func: bool, log: &mut Vec<Event>) -> Status {
    if table.count >= MAX_KERNELS {
        return Status::FAILURE_NUM_KERNELS;
    }
    if table.null_funcs.iter().chain(&table.null_names).any(|&index| index < table.count) {
        return Status::FAILURE_BAD_KERNEL;
    }
    for index in 0..table.count {
        let func = with_func.then(|| func_of(index) as usize);
        log.push(Event::Register { handle, name: name_of(index) as usize, func });
        if let Some((at, status)) = case.fail_registration
            && usize::from(at) == index as usize % NAMES.len()
            && status != 0
        {
            return Status(status);
        }
    }
    Status::SUCCESS
}

/// `entry_func`'s model: the status and every event, in order.
fn model_enter(case: &Case, size: u32, table: &FakeTable) -> (Status, Vec<Event>) {
    let mut log = Vec::new();
    let refused = matches!(case.placement, Placement::Null | Placement::Misaligned(_)) || size < 36;
    if refused {
        return (Status::FAILURE_ABI_MISMATCH, log);
    }
    if ![2, 3, 4, 6].iter().all(|&member| present(case, member)) {
        return (Status::FAILURE_NULL_CALLBACK, log);
    }
    log.extend([Event::KeepHandle(case.library_handle), Event::DataScratch, Event::HbmScratch, Event::DmaQueue]);
    let (data, hbm) = (case.data.reported(), case.hbm.reported());
    if !(usable(data) && usable(hbm)) {
        return (Status::FAILURE_NO_SCRATCH, log);
    }
    log.push(Event::InitHeaps { hbm, dataram: data });
    if let Some(status) = case.heaps_refuse {
        return (Status(status), log);
    }
    let (m2s, s2m) = case.dma.unwrap_or((0, 0));
    log.extend([Event::KeepDma(m2s, s2m), Event::InitLibc { resolver: present(case, 5) }, Event::StaticConstructors]);
    log.push(Event::Atexit);
    if case.atexit_full {
        return (Status::FAILURE_CRT_INIT, log);
    }
    let status = model_register(case, table, case.library_handle, false, &mut log);
    (status, log)
}

/// Calls `enter` on the block placed as the case says.
fn enter_placed(case: &Case, size: u32, table: &FakeTable) -> Status {
    let block = block_of(case, size);
    match case.placement {
        // SAFETY: null is refused before any read.
        Placement::Null => unsafe { enter(core::ptr::null(), table, &mut FakeRuntime) },
        Placement::Misaligned(skew) => {
            let mut bytes = vec![0u64; 2 * size_of::<SUNDA_UCODE_LIB>() / 8];
            let start = bytes.as_mut_ptr().cast::<u8>();
            // SAFETY: the buffer holds a block at any offset below 8; a misaligned block
            // is refused before any read (and would be readable anyway).
            unsafe {
                let at = start.add(1 + usize::from(skew) % 7);
                at.cast::<SUNDA_UCODE_LIB>().write_unaligned(block);
                enter(at.cast(), table, &mut FakeRuntime)
            }
        }
        Placement::Whole => {
            let boxed = Box::new(block);
            // SAFETY: a whole, aligned block of live fake callbacks.
            unsafe { enter(&*boxed, table, &mut FakeRuntime) }
        }
        Placement::SizeWordOnly => {
            let word = Box::new(u64::from(size));
            // SAFETY: aligned and readable for its first word; a size of 36 or more
            // would make `enter` read a whole block, which this placement never has, so
            // it is only used with short sizes (see `check`).
            unsafe { enter(core::ptr::from_ref(&*word).cast(), table, &mut FakeRuntime) }
        }
    }
}

/// The whole target.
pub fn check(data: &[u8]) {
    let Ok(mut case) = Case::arbitrary(&mut Unstructured::new(data)) else { return };
    let size = case.size.unwrap_or(36 + u32::from(case.extra % 64));
    if case.placement == Placement::SizeWordOnly && size >= 36 {
        // Only a short block may be this short in memory (see `enter_placed`).
        case.placement = Placement::Whole;
    }
    let count = case.count.get();
    let null_span = count.clamp(1, MAX_KERNELS) + 8;
    let table = FakeTable {
        count,
        // A few null entries at most (each pull of an entry scans the lists), anywhere
        // in the table or just past its end.
        null_funcs: case.null_funcs.iter().take(3).map(|&i| u32::from(i) % null_span).collect(),
        null_names: case.null_names.iter().take(3).map(|&i| u32::from(i) % null_span).collect(),
    };
    if let Some((at, _)) = case.fail_registration.as_mut() {
        *at %= NAMES.len() as u16;
    }
    CASE.with_borrow_mut(|slot| *slot = Some(case.clone()));
    LOG.with_borrow_mut(Vec::clear);

    let status = enter_placed(&case, size, &table);
    let log = LOG.with_borrow_mut(core::mem::take);
    let (expected, expected_log) = model_enter(&case, size, &table);
    ensure_eq!(status, expected, "entry status for {case:?}");
    if log != expected_log {
        panic!("entry sequence differs:\n got {log:?}\nwant {expected_log:?}");
    }

    if let Some(with_registrar) = case.register_funcs {
        let registrar: Option<RegisterFuncsFn> = with_registrar.then_some(fake_register_funcs as _);
        let handle = core::ptr::without_provenance_mut(case.library_handle);
        // SAFETY: the fake registrar records its arguments and dereferences nothing.
        let status = unsafe { register_funcs_with(&table, handle, registrar) };
        let log = LOG.with_borrow_mut(core::mem::take);
        let mut expected_log = Vec::new();
        let expected = if with_registrar {
            model_register(&case, &table, case.library_handle, true, &mut expected_log)
        } else {
            Status::FAILURE_NULL_CALLBACK
        };
        ensure_eq!(status, expected, "register_funcs status");
        if log != expected_log {
            panic!("register_funcs sequence differs:\n got {log:?}\nwant {expected_log:?}");
        }
    }
    CASE.with_borrow_mut(|slot| *slot = None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_random_inputs_pass() {
        crate::smoke::check_inputs(check, 20_000, 256);
    }
}
