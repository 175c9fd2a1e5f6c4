//! The loader's half of the runtime's handoff (`SUNDA_UCODE_LIB`): the block a loader
//! gives the library's `entry_func`, the five vendor callbacks in it, and the registrar
//! `register_funcs` reports each kernel to. Written once for both loaders: the device's
//! (`qemu/firmware/src/loader.rs`: `no_std`, one loader image per core) and its Linux
//! twin in the host tier (`qemu/hosttier/src/loader.rs`: one thread per core), which
//! includes this file through a symbolic link, `qemu/hosttier/src/callbacks.rs` (one its
//! `cargo package` follows), so the two cannot hand out different memory or report a
//! call differently.
//!
//! What differs between the two loaders is a [`Loader`]: which core is calling, the
//! job's injected failures, where a kernel's entry is kept, where a report line goes,
//! and how `abort` and `exit` stop a kernel. Every callback is generic over it, and a
//! loader builds its block with [`handoff::<ItsLoader>`](handoff).
//!
//! Each callback reports its call as one line (`neuroncustomop_wire::report::Line`:
//! `Callback`, `Register`, `Kernel`) and hands out the memory map of
//! `neuroncustomop_wire::job` (`data_scratch`, `hbm_scratch`, `dma_queue_offsets`,
//! `library_handle`).

use core::ffi::{CStr, c_char, c_void};
use neuroncustomop::start_exit::{SUNDA_UCODE_LIB, SUNDA_UCODE_LIB_STATUS};
use neuroncustomop_wire::job::{
    FAULT_EMPTY_HBM_SCRATCH, FAULT_NULL_DATA_SCRATCH, INJECTED_REGISTRATION_FAILURE, NAME_LEN, data_scratch,
    dma_queue_offsets, hbm_scratch, library_handle,
};
use neuroncustomop_wire::report::Line;

/// What the callbacks ask of the loader they run in.
pub trait Loader {
    /// The library's `abort`: stops the running kernel; its op ends with `abort`.
    const ABORT: extern "C" fn() -> !;
    /// The library's `exit`: stops the running kernel; its op ends with `exit(status)`.
    const EXIT: extern "C" fn(i32) -> !;

    /// The core that is calling.
    fn core() -> u32;

    /// The job's injected faults (`JobHeader::faults`).
    fn faults() -> u32;

    /// This registration's number on the calling core (counted from 0; the count goes
    /// up by one), and the number the job makes fail (`JobHeader::fail_registration_at`).
    fn registration() -> (u32, u32);

    /// Keeps kernel `name`, entered at `entry`, as `register_funcs` reported it; its
    /// index among the core's kernels.
    fn keep_kernel(name: &[u8], entry: usize) -> u32;

    /// Reports one line of the loader's report.
    fn report(line: &Line<'_>);
}

/// Core `core`'s library handle (`neuroncustomop_wire::job::library_handle`), as the
/// pointer the block carries and every registration passes back.
pub fn handle(core: u32) -> *mut c_void {
    library_handle(core) as usize as *mut c_void
}

/// The handoff block of core `core`, for a library built for blocks of `size` bytes
/// (`JobHeader::handoff_size`): its handle and the callbacks of loader `L`.
pub fn handoff<L: Loader>(size: u32, core: u32) -> SUNDA_UCODE_LIB {
    SUNDA_UCODE_LIB {
        sizeof_ncore_ucode_lib: size,
        library_handle: handle(core),
        get_data_scratch: Some(get_data_scratch::<L>),
        get_hbm_scratch: Some(get_hbm_scratch::<L>),
        get_dma_queue: Some(get_dma_queue::<L>),
        get_libc_fn: Some(get_libc_fn::<L>),
        register_ext_isa_fn: Some(register_ext_isa_fn::<L>),
        register_ext_isa_fn_v2: None,
        register_ext_isa_fn_v3: None,
    }
}

/// Reports callback `name` of core `core`, and hands out `region` (first byte, size)
/// through the runtime's two out-parameters.
///
/// # Safety
/// `addr` and `size` are valid for writes.
unsafe fn hand_out<L: Loader>(core: u32, name: &str, region: (u32, u32), addr: *mut *mut c_void, size: *mut u32) {
    L::report(&Line::Callback { core, name });
    // SAFETY: the caller's contract: two writable out-parameters.
    unsafe {
        *addr = region.0 as usize as *mut c_void;
        *size = region.1;
    }
}

/// Hands out the calling core's dataram scratch (a null one when the job injects
/// `FAULT_NULL_DATA_SCRATCH`).
///
/// # Safety
/// `addr` and `size` are valid for writes (the runtime passes its two out-parameters).
pub unsafe extern "C" fn get_data_scratch<L: Loader>(addr: *mut *mut c_void, size: *mut u32) {
    let core = L::core();
    let (base, bytes) = data_scratch(core);
    let base = if L::faults() & FAULT_NULL_DATA_SCRATCH != 0 { 0 } else { base };
    // SAFETY: the caller's contract, passed on.
    unsafe { hand_out::<L>(core, "get_data_scratch", (base, bytes), addr, size) }
}

/// Hands out the calling core's HBM scratch (an empty one when the job injects
/// `FAULT_EMPTY_HBM_SCRATCH`).
///
/// # Safety
/// `addr` and `size` are valid for writes (the runtime passes its two out-parameters).
pub unsafe extern "C" fn get_hbm_scratch<L: Loader>(addr: *mut *mut c_void, size: *mut u32) {
    let core = L::core();
    let (base, bytes) = hbm_scratch(core);
    let bytes = if L::faults() & FAULT_EMPTY_HBM_SCRATCH != 0 { 0 } else { bytes };
    // SAFETY: the caller's contract, passed on.
    unsafe { hand_out::<L>(core, "get_hbm_scratch", (base, bytes), addr, size) }
}

/// Hands out the calling core's DMA queue offsets in the SoC's queue window.
///
/// # Safety
/// `m2s_offset` and `s2m_offset` are valid for writes (the runtime passes its two
/// out-parameters).
pub unsafe extern "C" fn get_dma_queue<L: Loader>(m2s_offset: *mut u32, s2m_offset: *mut u32) {
    let core = L::core();
    L::report(&Line::Callback { core, name: "get_dma_queue" });
    // SAFETY: the caller's contract: two writable out-parameters.
    unsafe { (*m2s_offset, *s2m_offset) = dma_queue_offsets(core) };
}

/// Resolves a libc function the library asks for: the loader's `abort` and `exit`,
/// null for any other.
///
/// # Safety
/// `name` points to a NUL-terminated string.
pub unsafe extern "C" fn get_libc_fn<L: Loader>(name: *const c_char) -> *mut c_void {
    // SAFETY: the caller's contract: a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    // `get_libc_fn(<name>)`, without allocating (the device loader cannot).
    const PREFIX: &[u8] = b"get_libc_fn(";
    let shown = &name[..name.len().min(NAME_LEN)];
    let mut text = [0u8; PREFIX.len() + NAME_LEN + 1];
    text[..PREFIX.len()].copy_from_slice(PREFIX);
    text[PREFIX.len()..][..shown.len()].copy_from_slice(shown);
    text[PREFIX.len() + shown.len()] = b')';
    let text = core::str::from_utf8(&text[..PREFIX.len() + shown.len() + 1]).unwrap_or("get_libc_fn(?)");
    L::report(&Line::Callback { core: L::core(), name: text });
    match name {
        b"abort" => L::ABORT as *mut c_void,
        b"exit" => L::EXIT as *mut c_void,
        _ => core::ptr::null_mut(),
    }
}

/// Registers kernel `name` of library `library`: fails with `FAILURE_ABI_MISMATCH` for
/// another core's handle, with `INJECTED_REGISTRATION_FAILURE` for the registration the
/// job makes fail.
///
/// # Safety
/// `name` points to a NUL-terminated string.
pub unsafe extern "C" fn register_ext_isa_fn<L: Loader>(
    library: *mut c_void,
    name: *const c_char,
) -> SUNDA_UCODE_LIB_STATUS {
    let core = L::core();
    let (index, fail_at) = L::registration();
    // SAFETY: the caller's contract: a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_str().unwrap_or("?");
    let status = if library != handle(core) {
        SUNDA_UCODE_LIB_STATUS::FAILURE_ABI_MISMATCH
    } else if index == fail_at {
        SUNDA_UCODE_LIB_STATUS(INJECTED_REGISTRATION_FAILURE)
    } else {
        SUNDA_UCODE_LIB_STATUS::SUCCESS
    };
    L::report(&Line::Register { core, index, name, status: status.0 });
    status
}

/// The registrar the loader gives `register_funcs`: keeps kernel `name` at `entry`.
///
/// # Safety
/// `name` points to a NUL-terminated string.
pub unsafe extern "C" fn record_kernel<L: Loader>(
    entry: *const c_void,
    name: *const c_char,
    library: *mut c_void,
) -> SUNDA_UCODE_LIB_STATUS {
    let core = L::core();
    // SAFETY: the caller's contract: a NUL-terminated name.
    let name = unsafe { CStr::from_ptr(name) }.to_bytes();
    let index = L::keep_kernel(name, entry as usize);
    // The report's words are the device's 32-bit addresses (on the host, the low half).
    let (ptr, handle) = (entry as usize as u32, library as usize as u32);
    let name = core::str::from_utf8(name).unwrap_or("?");
    L::report(&Line::Kernel { core, index, ptr, name, handle });
    SUNDA_UCODE_LIB_STATUS::SUCCESS
}
