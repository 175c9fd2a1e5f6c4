//! The entry sequence against recording fakes: every host callback, runtime step and
//! registration goes into one per-thread log, so a test asserts the exact order.

use super::*;
use crate::start_exit::handoff::ABI_SIZE;
use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::string::{String, ToString};
use std::vec::Vec;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    // The host's callbacks.
    DataScratch,
    HbmScratch,
    DmaQueue,
    Register { handle: usize, name: String },
    // The runtime's steps.
    KeepHandle(usize),
    InitHeaps { hbm: (usize, u32), dataram: (usize, u32) },
    KeepDmaQueue(DmaQueueOffsets),
    InitLibc { has_resolver: bool },
    Constructors,
    Atexit { is_my_exit: bool },
}
use Event::*;

std::thread_local! {
    static LOG: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}
fn record(event: Event) {
    LOG.with(|log| log.borrow_mut().push(event));
}
fn take_log() -> Vec<Event> {
    LOG.with(|log| log.take())
}

const HANDLE: usize = 0x4A4D;
const DATA: ScratchRegion = ScratchRegion { base: 0x1000 as *mut u8, size: 0x800 };
const HBM: ScratchRegion = ScratchRegion { base: 0x10_0000 as *mut u8, size: 0x4_0000 };
const DMA: DmaQueueOffsets = DmaQueueOffsets { m2s: 0x40, s2m: 0x80 };

/// A fake address: never called, only registered.
fn fake_fn(index: u32) -> *const c_void {
    core::ptr::without_provenance(0x8000_0000 + index as usize * 16)
}

fn cstr(name: *const c_char) -> String {
    // SAFETY: every name the runtime passes on is NUL-terminated (the table contract).
    unsafe { CStr::from_ptr(name) }.to_str().unwrap().to_string()
}

/// The host as a Rust fake: records each callback, has no libc resolver; registration
/// `fail_at` returns `failure` for that kernel.
struct FakeHost {
    data: ScratchRegion,
    hbm: ScratchRegion,
    fail_at: Option<(usize, Status)>,
    registered: core::cell::Cell<usize>,
}

impl FakeHost {
    fn new() -> Self {
        Self { data: DATA, hbm: HBM, fail_at: None, registered: Default::default() }
    }
}

// SAFETY: the regions are fake addresses, but the recording runtime never touches them.
unsafe impl Host for FakeHost {
    fn library_handle(&self) -> *mut c_void {
        core::ptr::without_provenance_mut(HANDLE)
    }
    fn data_scratch(&self) -> ScratchRegion {
        record(DataScratch);
        self.data
    }
    fn hbm_scratch(&self) -> ScratchRegion {
        record(HbmScratch);
        self.hbm
    }
    fn dma_queue(&self) -> DmaQueueOffsets {
        record(DmaQueue);
        DMA
    }
    fn libc_resolver(&self) -> Option<LibcResolver> {
        None
    }
    unsafe fn register_kernel(&self, handle: *mut c_void, name: *const c_char) -> Status {
        let registered = self.registered.replace(self.registered.get() + 1);
        record(Register { handle: handle.addr(), name: cstr(name) });
        match self.fail_at {
            Some((index, failure)) if index == registered => failure,
            _ => Status::SUCCESS,
        }
    }
}

/// The author's table as a fake: `count` is what `get_func_cnt` reports (possibly more
/// than there are names, for the gate); `null_name` / `null_func` blank one entry.
struct FakeTable {
    count: u32,
    names: Vec<CString>,
    null_name: Option<u32>,
    null_func: Option<u32>,
}

impl FakeTable {
    fn named(names: &[&str]) -> Self {
        let names: Vec<CString> = names.iter().map(|name| CString::new(*name).unwrap()).collect();
        Self { count: names.len() as u32, names, null_name: None, null_func: None }
    }
    fn numbered(count: u32) -> Self {
        let names: Vec<String> = (0..count).map(|i| std::format!("kernel{i}")).collect();
        Self::named(&names.iter().map(String::as_str).collect::<Vec<_>>())
    }
    fn claiming(count: u32) -> Self {
        Self { count, ..Self::named(&["only"]) }
    }
    fn names(&self) -> Vec<String> {
        self.names.iter().map(|name| name.to_str().unwrap().to_string()).collect()
    }
}

// SAFETY: names are CStrings the table owns, alive for as long as the test uses it (the
// fakes keep no name past the call).
unsafe impl KernelTable for FakeTable {
    fn count(&self) -> u32 {
        self.count
    }
    fn func(&self, index: u32) -> *const c_void {
        if self.null_func == Some(index) { core::ptr::null() } else { fake_fn(index) }
    }
    fn name(&self, index: u32) -> *const c_char {
        if self.null_name == Some(index) {
            return core::ptr::null();
        }
        self.names.get(index as usize).map_or(core::ptr::null(), |name| name.as_ptr())
    }
}

/// The runtime as a fake: records each step; can refuse the heaps or the atexit slot.
#[derive(Default)]
struct FakeRuntime {
    heaps_fail: bool,
    atexit_full: bool,
}

impl Runtime for FakeRuntime {
    fn keep_library_handle(&mut self, library_handle: *mut c_void) {
        record(KeepHandle(library_handle.addr()));
    }
    unsafe fn init_heaps(&mut self, hbm: ScratchRegion, dataram: ScratchRegion) -> Result<(), Status> {
        record(InitHeaps { hbm: (hbm.base.addr(), hbm.size), dataram: (dataram.base.addr(), dataram.size) });
        if self.heaps_fail { Err(Status::FAILURE_NO_SCRATCH) } else { Ok(()) }
    }
    fn keep_dma_queue(&mut self, offsets: DmaQueueOffsets) {
        record(KeepDmaQueue(offsets));
    }
    unsafe fn init_libc(&mut self, resolver: Option<LibcResolver>) {
        record(InitLibc { has_resolver: resolver.is_some() });
    }
    fn run_static_constructors(&mut self) {
        record(Constructors);
    }
    fn atexit(&mut self, handler: ExitFn) -> Result<(), AtexitFull> {
        record(Atexit {
            // Function pointers have no guaranteed identity (`fn_addr_eq`'s docs) and
            // Miri gives one function several addresses: the handler is checked natively.
            is_my_exit: cfg!(miri) || core::ptr::fn_addr_eq(handler, my_exit as ExitFn),
        });
        if self.atexit_full { Err(AtexitFull) } else { Ok(()) }
    }
}

/// Every step before registration, in order, for the default fakes.
fn bootstrap(has_resolver: bool) -> Vec<Event> {
    std::vec![
        KeepHandle(HANDLE),
        DataScratch,
        HbmScratch,
        DmaQueue,
        InitHeaps { hbm: (HBM.base.addr(), HBM.size), dataram: (DATA.base.addr(), DATA.size) },
        KeepDmaQueue(DMA),
        InitLibc { has_resolver },
        Constructors,
        Atexit { is_my_exit: true },
    ]
}

fn registrations(names: &[String]) -> Vec<Event> {
    names.iter().map(|name| Register { handle: HANDLE, name: name.clone() }).collect()
}

#[test]
fn success_runs_every_step_in_order_and_registers_the_table() {
    let table = FakeTable::named(&["relu", "vector_add", "softmax"]);
    let status = run_entry(&FakeHost::new(), &table, &mut FakeRuntime::default());
    assert_eq!(status, Status::SUCCESS);
    let mut expected = bootstrap(false);
    expected.extend(registrations(&table.names()));
    assert_eq!(take_log(), expected);
}

#[test]
fn an_empty_table_bootstraps_and_registers_nothing() {
    let status = run_entry(&FakeHost::new(), &FakeTable::named(&[]), &mut FakeRuntime::default());
    assert_eq!(status, Status::SUCCESS);
    assert_eq!(take_log(), bootstrap(false));
}

#[test]
#[cfg_attr(
    miri,
    ignore = "registers 32,767 kernels: unfinished after 23 min under Miri; the registration loop is the one every other entry test runs with a few kernels"
)]
fn count_gate_accepts_0x7fff_and_refuses_0x8000_and_up() {
    let table = FakeTable::numbered(0x7FFF);
    let status = run_entry(&FakeHost::new(), &table, &mut FakeRuntime::default());
    assert_eq!(status, Status::SUCCESS);
    let log = take_log();
    assert_eq!(log.len(), bootstrap(false).len() + 0x7FFF);
    assert_eq!(log.last(), Some(&Register { handle: HANDLE, name: "kernel32766".into() }));

    // 0xFFFF_FFFF is what a C `get_func_cnt` returning -1 reads as.
    for count in [0x8000, 0x8001, 0x8000_0000, 0xFFFF_FFFF] {
        let status = run_entry(&FakeHost::new(), &FakeTable::claiming(count), &mut FakeRuntime::default());
        assert_eq!(status, Status::FAILURE_NUM_KERNELS, "count {count:#x}");
        assert_eq!(take_log(), bootstrap(false), "nothing registered for {count:#x}");
    }
}

#[test]
fn a_registration_failure_at_k_is_returned_and_nothing_after_k_is_registered() {
    let table = FakeTable::named(&["a", "b", "c", "d"]);
    let host_specific = SUNDA_UCODE_LIB_STATUS(77);
    for k in 0..4 {
        let host = FakeHost { fail_at: Some((k, host_specific)), ..FakeHost::new() };
        assert_eq!(run_entry(&host, &table, &mut FakeRuntime::default()), host_specific);
        let mut expected = bootstrap(false);
        expected.extend(registrations(&table.names()[..=k]));
        assert_eq!(take_log(), expected, "failing at {k}");
    }
}

#[test]
fn null_entries_are_refused_before_any_registration() {
    for (null_name, null_func) in [(Some(0), None), (Some(2), None), (None, Some(1))] {
        let table = FakeTable { null_name, null_func, ..FakeTable::named(&["a", "b", "c"]) };
        let status = run_entry(&FakeHost::new(), &table, &mut FakeRuntime::default());
        assert_eq!(status, Status::FAILURE_BAD_KERNEL);
        assert_eq!(take_log(), bootstrap(false));
    }
}

#[test]
fn unusable_scratch_stops_before_the_heaps() {
    let wrapping = ScratchRegion { base: core::ptr::without_provenance_mut(usize::MAX - 8), size: 16 };
    let empty = ScratchRegion { size: 0, ..DATA };
    let bad_hosts = [
        FakeHost { data: ScratchRegion::EMPTY, ..FakeHost::new() },
        FakeHost { data: empty, ..FakeHost::new() },
        FakeHost { hbm: ScratchRegion::EMPTY, ..FakeHost::new() },
        FakeHost { hbm: wrapping, ..FakeHost::new() },
    ];
    for host in bad_hosts {
        let status = run_entry(&host, &FakeTable::named(&["a"]), &mut FakeRuntime::default());
        assert_eq!(status, Status::FAILURE_NO_SCRATCH);
        assert_eq!(take_log(), [KeepHandle(HANDLE), DataScratch, HbmScratch, DmaQueue]);
    }
}

#[test]
fn scratch_ending_at_the_top_of_the_address_space_reaches_the_heaps() {
    // [2^N - 4096, 2^N): its last byte is the address space's last, it does not wrap (on
    // the device N = 32, the region `[0xFFFFF000, 2^32)`); one byte more would.
    let top = ScratchRegion { base: core::ptr::without_provenance_mut(usize::MAX - 0xFFF), size: 0x1000 };
    assert!(top.is_usable());
    assert!(!ScratchRegion { size: 0x1001, ..top }.is_usable());
    let host = FakeHost { hbm: top, ..FakeHost::new() };
    assert_eq!(run_entry(&host, &FakeTable::named(&["a"]), &mut FakeRuntime::default()), Status::SUCCESS);
    let log = take_log();
    assert!(
        log.contains(&InitHeaps { hbm: (usize::MAX - 0xFFF, 0x1000), dataram: (DATA.base.addr(), DATA.size) }),
        "{log:?}"
    );
}

#[test]
fn heap_and_atexit_refusals_are_reported_and_stop_the_sequence() {
    let table = FakeTable::named(&["a"]);
    let mut runtime = FakeRuntime { heaps_fail: true, ..FakeRuntime::default() };
    assert_eq!(run_entry(&FakeHost::new(), &table, &mut runtime), Status::FAILURE_NO_SCRATCH);
    assert_eq!(take_log(), bootstrap(false)[..5]);

    let mut runtime = FakeRuntime { atexit_full: true, ..FakeRuntime::default() };
    assert_eq!(run_entry(&FakeHost::new(), &table, &mut runtime), Status::FAILURE_CRT_INIT);
    assert_eq!(take_log(), bootstrap(false));
}

// --- The raw block: `enter` through real `extern "C"` callbacks. ---

unsafe extern "C" fn c_data_scratch(addr: *mut *mut c_void, size: *mut u32) {
    record(DataScratch);
    // SAFETY: the runtime passes writable out-parameters.
    unsafe { (addr.write(DATA.base.cast()), size.write(DATA.size)) };
}
unsafe extern "C" fn c_hbm_scratch(addr: *mut *mut c_void, size: *mut u32) {
    record(HbmScratch);
    // SAFETY: as above.
    unsafe { (addr.write(HBM.base.cast()), size.write(HBM.size)) };
}
unsafe extern "C" fn c_dma_queue(m2s: *mut u32, s2m: *mut u32) {
    record(DmaQueue);
    // SAFETY: as above.
    unsafe { (m2s.write(DMA.m2s), s2m.write(DMA.s2m)) };
}
unsafe extern "C" fn c_register(handle: *mut c_void, name: *const c_char) -> Status {
    record(Register { handle: handle.addr(), name: cstr(name) });
    Status::SUCCESS
}
unsafe extern "C" fn c_register_tagged(_: *mut c_void, _: *const c_char, _: u8) -> Status {
    unreachable!("the runtime registers through v1 only")
}
unsafe extern "C" fn c_resolver(_: *const c_char) -> *mut c_void {
    unreachable!("the fake runtime never resolves")
}
unsafe extern "C" fn c_writes_nothing(_: *mut *mut c_void, _: *mut u32) {
    record(DataScratch);
}

fn block(size: u32) -> SUNDA_UCODE_LIB {
    SUNDA_UCODE_LIB {
        sizeof_ncore_ucode_lib: size,
        library_handle: core::ptr::without_provenance_mut(HANDLE),
        get_data_scratch: Some(c_data_scratch),
        get_hbm_scratch: Some(c_hbm_scratch),
        get_dma_queue: Some(c_dma_queue),
        get_libc_fn: Some(c_resolver),
        register_ext_isa_fn: Some(c_register),
        register_ext_isa_fn_v2: Some(c_register_tagged),
        register_ext_isa_fn_v3: Some(c_register_tagged),
    }
}

fn enter_block(block: &SUNDA_UCODE_LIB, table: &impl KernelTable) -> Status {
    // SAFETY: a whole, live block whose callbacks are this file's.
    unsafe { enter(block, table, &mut FakeRuntime::default()) }
}

#[test]
fn size_gate_refuses_short_blocks_before_touching_anything() {
    let table = FakeTable::named(&["a"]);
    for size in [0, 1, ABI_SIZE - 1] {
        assert_eq!(enter_block(&block(size), &table), Status::FAILURE_ABI_MISMATCH, "size {size}");
        assert_eq!(take_log(), [], "size {size}: no callback, no runtime step");
    }
    // SAFETY: null and misaligned pointers are refused before any read.
    unsafe {
        assert_eq!(enter(core::ptr::null(), &table, &mut FakeRuntime::default()), Status::FAILURE_ABI_MISMATCH);
        let whole = block(ABI_SIZE);
        let misaligned = (&raw const whole).cast::<u8>().wrapping_add(1).cast();
        assert_eq!(enter(misaligned, &table, &mut FakeRuntime::default()), Status::FAILURE_ABI_MISMATCH);
    }
    assert_eq!(take_log(), []);
}

#[test]
fn size_gate_accepts_36_and_longer_blocks() {
    let table = FakeTable::named(&["relu", "gelu"]);
    for size in [ABI_SIZE, ABI_SIZE + 4, 100, u32::MAX] {
        assert_eq!(enter_block(&block(size), &table), Status::SUCCESS, "size {size}");
        let mut expected = bootstrap(true);
        expected.extend(registrations(&table.names()));
        assert_eq!(take_log(), expected, "size {size}");
    }
}

#[test]
fn a_null_required_callback_is_refused_before_any_is_called() {
    let table = FakeTable::named(&["a"]);
    let nulls: [fn(&mut SUNDA_UCODE_LIB); 4] = [
        |b| b.get_data_scratch = None,
        |b| b.get_hbm_scratch = None,
        |b| b.get_dma_queue = None,
        |b| b.register_ext_isa_fn = None,
    ];
    for (i, make_null) in nulls.into_iter().enumerate() {
        let mut host = block(ABI_SIZE);
        make_null(&mut host);
        assert_eq!(enter_block(&host, &table), Status::FAILURE_NULL_CALLBACK, "member {i}");
        assert_eq!(take_log(), [], "member {i}");
    }
    // The resolver and the v2 / v3 forms are optional.
    let optional = SUNDA_UCODE_LIB {
        get_libc_fn: None,
        register_ext_isa_fn_v2: None,
        register_ext_isa_fn_v3: None,
        ..block(ABI_SIZE)
    };
    assert_eq!(enter_block(&optional, &table), Status::SUCCESS);
    let mut expected = bootstrap(false);
    expected.extend(registrations(&table.names()));
    assert_eq!(take_log(), expected);
}

#[test]
fn a_scratch_callback_that_writes_nothing_reports_no_scratch() {
    let host = SUNDA_UCODE_LIB { get_data_scratch: Some(c_writes_nothing), ..block(ABI_SIZE) };
    assert_eq!(enter_block(&host, &FakeTable::named(&["a"])), Status::FAILURE_NO_SCRATCH);
    assert_eq!(take_log(), [KeepHandle(HANDLE), DataScratch, HbmScratch, DmaQueue]);
}

mod author {
    extern "C" fn relu() {}
    extern "C" fn vector_add() {}
    extern "C" fn scale() {}
    crate::kernels! { relu, vector_add, "scale-by-k" => scale }

    pub(super) fn table() -> super::ExternTable {
        // SAFETY: the macro's functions take any index and return static names.
        unsafe { super::ExternTable::new(get_func_cnt, get_func_ptr, get_func_name) }
    }
    pub(super) const KERNELS: [extern "C" fn(); 3] = [relu, vector_add, scale];
}

#[test]
fn a_macro_table_registers_through_the_raw_block_in_order() {
    assert_eq!(enter_block(&block(ABI_SIZE), &author::table()), Status::SUCCESS);
    let names = ["relu", "vector_add", "scale-by-k"].map(String::from);
    let mut expected = bootstrap(true);
    expected.extend(registrations(&names));
    assert_eq!(take_log(), expected);
}

std::thread_local! {
    static REGISTERED: RefCell<Vec<(usize, String, usize)>> = const { RefCell::new(Vec::new()) };
}
unsafe extern "C" fn bulk_register(func: *const c_void, name: *const c_char, handle: *mut c_void) -> Status {
    REGISTERED.with(|calls| {
        let mut calls = calls.borrow_mut();
        calls.push((func.addr(), cstr(name), handle.addr()));
        // The fourth call fails, with a host-specific status.
        if calls.len() == 4 { SUNDA_UCODE_LIB_STATUS(9) } else { Status::SUCCESS }
    })
}
fn take_registered() -> Vec<(usize, String, usize)> {
    REGISTERED.with(|calls| calls.take())
}

#[test]
fn register_funcs_passes_pointer_name_and_handle_for_every_kernel() {
    let handle = core::ptr::without_provenance_mut(0x77);
    // SAFETY: `bulk_register` accepts any handle (it only records it).
    let status = unsafe { register_funcs_with(&author::table(), handle, Some(bulk_register)) };
    assert_eq!(status, Status::SUCCESS);
    let expected: Vec<_> = author::KERNELS
        .iter()
        .zip(["relu", "vector_add", "scale-by-k"])
        .map(|(func, name)| (*func as usize, name.to_string(), 0x77))
        .collect();
    assert_eq!(take_registered(), expected);
}

#[test]
fn register_funcs_stops_at_the_first_failure_and_keeps_the_gates() {
    let handle = core::ptr::without_provenance_mut(0x77);
    let table = FakeTable::named(&["a", "b", "c", "d", "e"]);
    // SAFETY: `bulk_register` accepts any handle (it only records it).
    let register = |table: &FakeTable, reg| unsafe { register_funcs_with(table, handle, reg) };
    assert_eq!(register(&table, Some(bulk_register)), SUNDA_UCODE_LIB_STATUS(9));
    let names: Vec<_> = take_registered().into_iter().map(|(_, name, _)| name).collect();
    assert_eq!(names, ["a", "b", "c", "d"]);

    assert_eq!(register(&table, None), Status::FAILURE_NULL_CALLBACK);
    let over = FakeTable::claiming(0x8000);
    assert_eq!(register(&over, Some(bulk_register)), Status::FAILURE_NUM_KERNELS);
    let null = FakeTable { null_func: Some(4), ..table };
    assert_eq!(register(&null, Some(bulk_register)), Status::FAILURE_BAD_KERNEL);
    assert_eq!(take_registered(), []);
}

extern "C" fn spare_handler() {}

#[test]
fn device_runtime_keeps_state_and_bootstraps_the_crt_once() {
    let mut runtime = DeviceRuntime;
    assert_eq!((library_handle(), dma_queue_offsets()), (core::ptr::null_mut(), (0, 0)));
    runtime.keep_library_handle(core::ptr::without_provenance_mut(HANDLE));
    runtime.keep_dma_queue(DMA);
    assert_eq!(library_handle().addr(), HANDLE);
    assert_eq!(dma_queue_offsets(), (DMA.m2s, DMA.s2m));

    // The exit handler takes one slot however often entry_func runs.
    for _ in 0..3 {
        runtime.run_static_constructors();
        assert_eq!(runtime.atexit(my_exit), Ok(()));
    }
    let mut free_slots = 0;
    while crt::register_exit_handler(spare_handler).is_ok() {
        free_slots += 1;
    }
    assert_eq!(free_slots, crt::ATEXIT_CAPACITY - 1);
}

#[test]
fn entry_statuses_print_as_hex_and_name() {
    assert_eq!(Status::FAILURE_NO_SCRATCH.to_string(), "0x4 FAILURE_NO_SCRATCH");
    assert_eq!(Status::SUCCESS.to_string(), "0x0 SUCCESS");
    assert_eq!(SUNDA_UCODE_LIB_STATUS(0x4C52).to_string(), "0x4c52 (host's)");
}
