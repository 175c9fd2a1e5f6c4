//! `entry_func` and `register_funcs`: the sequence, over traits, and the device glue.
//!
//! [`enter`] is `entry_func` with its three collaborators as parameters: the host (the
//! handoff block, [`Host`]), the author's kernel table ([`KernelTable`]) and the device
//! state it initialises ([`Runtime`]). The device export passes the real block, the
//! author's `get_func_*` symbols ([`ExternTable`]) and [`DeviceRuntime`]; host tests pass
//! recording fakes.

use core::ffi::{c_char, c_int, c_void};

use super::crt::{self, AtexitFull, ExitFn, HostLibc, my_exit};
use super::handoff::{
    DmaQueueOffsets, Host, LibcResolver, MAX_KERNELS, SUNDA_UCODE_LIB, SUNDA_UCODE_LIB_STATUS, ScratchRegion,
};

type Status = SUNDA_UCODE_LIB_STATUS;

/// The op author's kernel table: what `get_func_cnt`, `get_func_ptr` and `get_func_name`
/// answer. Indices passed in are below `count()` and below [`MAX_KERNELS`].
///
/// # Safety
/// Implementors promise that every non-null `name(i)` is a NUL-terminated string that
/// stays valid for the program's life: the runtime hands it to the host, which may keep
/// it.
pub unsafe trait KernelTable {
    /// `get_func_cnt()`, its C `int` read as a `u32`: a negative count becomes a huge
    /// one, which the count gate refuses.
    fn count(&self) -> u32;
    /// `get_func_ptr(index)`.
    fn func(&self, index: u32) -> *const c_void;
    /// `get_func_name(index)`.
    fn name(&self, index: u32) -> *const c_char;
}

/// A [`KernelTable`] over the three C functions of the author's ABI: on the device, the
/// author's `get_func_*` symbols; in tests, say, the ones [`kernels!`](crate::kernels)
/// generates.
#[derive(Clone, Copy, Debug)]
pub struct ExternTable {
    get_func_cnt: unsafe extern "C" fn() -> c_int,
    get_func_ptr: unsafe extern "C" fn(c_int) -> *const c_void,
    get_func_name: unsafe extern "C" fn(c_int) -> *const c_char,
}

impl ExternTable {
    /// The table the three functions describe.
    ///
    /// # Safety
    /// Each function may be called at any time, `get_func_ptr` and `get_func_name` with
    /// any index in `0..get_func_cnt()`, and every non-null name `get_func_name` returns
    /// is a NUL-terminated string valid for the program's life.
    pub const unsafe fn new(
        get_func_cnt: unsafe extern "C" fn() -> c_int,
        get_func_ptr: unsafe extern "C" fn(c_int) -> *const c_void,
        get_func_name: unsafe extern "C" fn(c_int) -> *const c_char,
    ) -> Self {
        Self { get_func_cnt, get_func_ptr, get_func_name }
    }
}

/// An index the count gate let through, as the C `int` the author's functions take.
fn c_index(index: u32) -> c_int {
    debug_assert!(index < MAX_KERNELS);
    index as c_int
}

// SAFETY: `ExternTable::new`'s caller vouched for the names.
unsafe impl KernelTable for ExternTable {
    fn count(&self) -> u32 {
        // SAFETY: callable at any time (`new`'s contract). The cast is the point: a
        // negative C count must fail the unsigned gate, as in the vendor's `bltui`.
        unsafe { (self.get_func_cnt)() as u32 }
    }

    fn func(&self, index: u32) -> *const c_void {
        // SAFETY: `index` is in range (the trait's precondition, `new`'s contract).
        unsafe { (self.get_func_ptr)(c_index(index)) }
    }

    fn name(&self, index: u32) -> *const c_char {
        // SAFETY: as for `func`.
        unsafe { (self.get_func_name)(c_index(index)) }
    }
}

/// The device state `entry_func` initialises, one method per step of the sequence.
/// [`DeviceRuntime`] is the real one; tests record the calls.
pub trait Runtime {
    /// Keeps the host's library handle for `register_funcs`.
    fn keep_library_handle(&mut self, library_handle: *mut c_void);

    /// Hands the heaps their regions.
    ///
    /// # Errors
    /// The status `entry_func` returns when the heaps refuse a region.
    ///
    /// # Safety
    /// Both regions are memory the runtime alone may use from now on.
    unsafe fn init_heaps(&mut self, hbm: ScratchRegion, dataram: ScratchRegion) -> Result<(), Status>;

    /// Keeps the DMA queue offsets for the DMA backend.
    fn keep_dma_queue(&mut self, offsets: DmaQueueOffsets);

    /// The CRT's libc step: resolves the host's libc functions through `resolver`.
    ///
    /// # Safety
    /// `resolver` answers with null or functions of the documented types.
    unsafe fn init_libc(&mut self, resolver: Option<LibcResolver>);

    /// Runs the image's static constructors (`.init_array`).
    fn run_static_constructors(&mut self);

    /// `atexit(handler)`.
    ///
    /// # Errors
    /// [`AtexitFull`] when the handler cannot be registered.
    fn atexit(&mut self, handler: ExitFn) -> Result<(), AtexitFull>;
}

/// Walks the table: the count gate, then a check that no entry is null, then
/// `register(func, name)` for each kernel in order, stopping at the first status that is
/// not `SUCCESS` and returning it. Nothing is registered when a gate fails.
fn register_kernels(
    table: &impl KernelTable,
    mut register: impl FnMut(*const c_void, *const c_char) -> Status,
) -> Status {
    let count = table.count();
    if count >= MAX_KERNELS {
        return Status::FAILURE_NUM_KERNELS;
    }
    if (0..count).any(|index| table.func(index).is_null() || table.name(index).is_null()) {
        return Status::FAILURE_BAD_KERNEL;
    }
    for index in 0..count {
        let status = register(table.func(index), table.name(index));
        if !status.is_success() {
            return status;
        }
    }
    Status::SUCCESS
}

/// `entry_func`'s sequence from the point the block passed both gates (the full
/// sequence, gates included, is [`enter`]):
///
/// 1. keep the library handle;
/// 2. call `get_data_scratch`, `get_hbm_scratch`, `get_dma_queue`; refuse unusable
///    regions (`FAILURE_NO_SCRATCH`); hand the heaps their regions; keep the DMA offsets;
/// 3. CRT bootstrap: the libc resolver, the static constructors, `atexit(my_exit)`
///    (`FAILURE_CRT_INIT` if the table is full);
/// 4. the kernel-count gate (`FAILURE_NUM_KERNELS`) and the null-entry check
///    (`FAILURE_BAD_KERNEL`);
/// 5. `register_ext_isa_fn(handle, name)` for each kernel in order, returning the first
///    status that is not `SUCCESS`.
pub fn run_entry(host: &impl Host, table: &impl KernelTable, runtime: &mut impl Runtime) -> Status {
    let library_handle = host.library_handle();
    runtime.keep_library_handle(library_handle);

    let dataram = host.data_scratch();
    let hbm = host.hbm_scratch();
    let dma_queue = host.dma_queue();
    if !(dataram.is_usable() && hbm.is_usable()) {
        return Status::FAILURE_NO_SCRATCH;
    }
    // SAFETY: the `Host` contract: usable regions it reports are the runtime's.
    if let Err(status) = unsafe { runtime.init_heaps(hbm, dataram) } {
        return status;
    }
    runtime.keep_dma_queue(dma_queue);

    // SAFETY: the `Host` contract: its resolver answers with the documented types.
    unsafe { runtime.init_libc(host.libc_resolver()) };
    runtime.run_static_constructors();
    if runtime.atexit(my_exit).is_err() {
        return Status::FAILURE_CRT_INIT;
    }

    register_kernels(table, |_, name| {
        // SAFETY: `register_kernels` passes only non-null names from the table, which
        // the `KernelTable` contract makes NUL-terminated and lasting.
        unsafe { host.register_kernel(library_handle, name) }
    })
}

/// `entry_func` as a Rust function: the size gate, the null gate, then [`run_entry`].
///
/// A null, misaligned or short (`sizeof_ncore_ucode_lib < 36`) block returns
/// `FAILURE_ABI_MISMATCH` having read at most its first word; a block missing a required
/// callback returns `FAILURE_NULL_CALLBACK` having called none. Neither touches the
/// runtime.
///
/// # Safety
/// `host` as [`SUNDA_UCODE_LIB::from_raw`] requires, and its callbacks keep the handoff
/// contract ([`SUNDA_UCODE_LIB::callbacks`]).
pub unsafe fn enter(host: *const SUNDA_UCODE_LIB, table: &impl KernelTable, runtime: &mut impl Runtime) -> Status {
    // SAFETY: forwarded from this function's contract.
    let block = match unsafe { SUNDA_UCODE_LIB::from_raw(host) } {
        Ok(block) => block,
        Err(status) => return status,
    };
    // SAFETY: forwarded from this function's contract.
    match unsafe { block.callbacks() } {
        Ok(callbacks) => run_entry(&callbacks, table, runtime),
        Err(status) => status,
    }
}

/// The registrar `register_funcs` takes: `reg(fn_ptr, name, library_handle)`.
pub type RegisterFuncsFn = unsafe extern "C" fn(
    func: *const c_void,
    name: *const c_char,
    library_handle: *mut c_void,
) -> SUNDA_UCODE_LIB_STATUS;

/// `register_funcs` as a Rust function: `register(func, name, library_handle)` for each
/// kernel of `table` in order, with the same gates as `entry_func` (count, null entries),
/// stopping at and returning the first status that is not `SUCCESS`. A null `register`
/// returns `FAILURE_NULL_CALLBACK`.
///
/// # Safety
/// `register` must be sound to call with `library_handle` and any kernel's pointer and
/// (NUL-terminated, lasting) name: the runtime itself never dereferences the handle.
pub unsafe fn register_funcs_with(
    table: &impl KernelTable,
    library_handle: *mut c_void,
    register: Option<RegisterFuncsFn>,
) -> Status {
    let Some(register) = register else {
        return Status::FAILURE_NULL_CALLBACK;
    };
    register_kernels(table, |func, name| {
        // SAFETY: `register_kernels` passes a non-null name from the table (lasting and
        // NUL-terminated: the `KernelTable` contract); the rest is this function's
        // contract.
        unsafe { register(func, name, library_handle) }
    })
}

/// What `entry_func` keeps for the rest of the runtime.
struct EntryState {
    library_handle: *mut c_void,
    dma_queue: DmaQueueOffsets,
    constructors_ran: bool,
    exit_handler_registered: bool,
}

crate::global::core_local_state! {
    /// This core's [`EntryState`].
    fn with_entry_state: EntryState = EntryState {
        library_handle: core::ptr::null_mut(),
        dma_queue: DmaQueueOffsets { m2s: 0, s2m: 0 },
        constructors_ran: false,
        exit_handler_registered: false,
    };
}

/// The library handle the last `entry_func` got from the host; null before the first.
pub fn library_handle() -> *mut c_void {
    with_entry_state(|state| state.library_handle)
}

/// This core's DMA queue offsets `(m2s, s2m)`, as the last `entry_func` got them from the
/// host's `get_dma_queue`; `(0, 0)` before the first.
pub fn dma_queue_offsets() -> (u32, u32) {
    with_entry_state(|state| (state.dma_queue.m2s, state.dma_queue.s2m))
}

/// The real [`Runtime`]: this core's state, heaps and libc.
///
/// Calling `entry_func` again (the loader re-entering a loaded image) refreshes the
/// handle, the regions, the DMA offsets and the host libc, but does not run the static
/// constructors twice nor register the exit handler twice.
#[derive(Debug, Default)]
pub struct DeviceRuntime;

impl Runtime for DeviceRuntime {
    fn keep_library_handle(&mut self, library_handle: *mut c_void) {
        with_entry_state(|state| state.library_handle = library_handle);
    }

    unsafe fn init_heaps(&mut self, hbm: ScratchRegion, dataram: ScratchRegion) -> Result<(), Status> {
        // The core's dataram is its TCM: the op's TCM pool is its first
        // `TCM_POOL_SIZE` bytes (and room for red zones in a checked session), the
        // dataram heap the rest.
        let pool = crate::allocators::tcm::TCM_POOL_SIZE + crate::allocators::redzone::tcm_room();
        let heap_size = (dataram.size as usize).checked_sub(pool).ok_or(Status::FAILURE_NO_SCRATCH)?;
        // SAFETY: forwarded from this function's contract: the host gave both regions
        // to the runtime, and the pool and the dataram heap split the dataram region.
        unsafe {
            crate::allocators::tcm::init_tcm(dataram.base, pool).and_then(|()| {
                crate::allocators::init_heaps(hbm.base, hbm.size as usize, dataram.base.add(pool), heap_size)
            })
        }
        .map_err(|_| Status::FAILURE_NO_SCRATCH)
    }

    fn keep_dma_queue(&mut self, offsets: DmaQueueOffsets) {
        with_entry_state(|state| state.dma_queue = offsets);
        // Queues the host gives unusable only make DMA copies fall back to the CPU.
        let _ = crate::data_transfer::dma::init_queue();
    }

    unsafe fn init_libc(&mut self, resolver: Option<LibcResolver>) {
        // SAFETY: forwarded from this function's contract.
        crt::install_host_libc(unsafe { HostLibc::resolve(resolver) });
    }

    fn run_static_constructors(&mut self) {
        if !with_entry_state(|state| core::mem::replace(&mut state.constructors_ran, true)) {
            crt::run_static_constructors();
        }
    }

    fn atexit(&mut self, handler: ExitFn) -> Result<(), AtexitFull> {
        if with_entry_state(|state| state.exit_handler_registered) {
            return Ok(());
        }
        crt::register_exit_handler(handler)?;
        with_entry_state(|state| state.exit_handler_registered = true);
        Ok(())
    }
}

#[cfg(any(c_abi, doc))]
mod device {
    use super::*;

    unsafe extern "C" {
        /// The author's kernel count (undefined in the library).
        fn get_func_cnt() -> c_int;
        /// The author's kernel `index` entry point (undefined in the library).
        fn get_func_ptr(index: c_int) -> *const c_void;
        /// The author's kernel `index` name (undefined in the library).
        fn get_func_name(index: c_int) -> *const c_char;
    }

    // SAFETY: the author's three functions are bound by the C ABI contract the library
    // is linked under (docs/abi/entry.md, "The author's table").
    const AUTHOR_TABLE: ExternTable = unsafe { ExternTable::new(get_func_cnt, get_func_ptr, get_func_name) };

    /// The library's entry point, called once by the host loader with its handoff
    /// block: see [`enter`] for the gates and [`run_entry`] for the sequence.
    ///
    /// # Safety
    /// `host` points to a handoff block that keeps the contract of `docs/abi/entry.md`.
    #[cfg_attr(c_abi, unsafe(no_mangle))]
    pub unsafe extern "C" fn entry_func(host: *const SUNDA_UCODE_LIB) -> SUNDA_UCODE_LIB_STATUS {
        // SAFETY: forwarded from this function's contract.
        unsafe { enter(host, &AUTHOR_TABLE, &mut DeviceRuntime) }
    }

    /// The bulk registrar: `reg(get_func_ptr(i), get_func_name(i), handle)` for every
    /// kernel, `handle` being the one `entry_func` kept (null before it ran). See
    /// [`register_funcs_with`].
    ///
    /// # Safety
    /// `reg` must accept the handle the host gave `entry_func` (or null, before it ran).
    #[cfg_attr(c_abi, unsafe(no_mangle))]
    pub unsafe extern "C" fn register_funcs(reg: Option<RegisterFuncsFn>) -> SUNDA_UCODE_LIB_STATUS {
        // SAFETY: forwarded from this function's contract.
        unsafe { register_funcs_with(&AUTHOR_TABLE, library_handle(), reg) }
    }
}

#[cfg(any(c_abi, doc))]
pub use device::{entry_func, register_funcs};

#[cfg(test)]
mod tests;
