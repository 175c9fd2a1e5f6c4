//! The host → device handoff block (`SUNDA_UCODE_LIB`), the status enum every entry
//! point returns (`SUNDA_UCODE_LIB_STATUS`), and the [`Host`] view of a validated block.
//!
//! The layout is documented (with offsets) in `docs/abi/entry.md`; the asserts below keep
//! the two in step. The vendor names are kept verbatim so the Rust, the C header and the
//! vendor's DWARF can be read side by side.

use core::ffi::{c_char, c_void};
use core::mem::{offset_of, size_of};

/// What every entry point of the library returns, and what the host's registration
/// callbacks return. 4 bytes.
///
/// A transparent `u32` rather than a Rust `enum`: the host's callbacks may return values
/// this runtime does not know, and [`entry_func`](super::entry_func) propagates them verbatim;
/// an unknown discriminant in a Rust `enum` would be undefined behaviour.
#[allow(non_camel_case_types)] // the C ABI name
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SUNDA_UCODE_LIB_STATUS(pub u32);

impl SUNDA_UCODE_LIB_STATUS {
    /// The call did what it was asked.
    pub const SUCCESS: Self = Self(0);
    /// The handoff block is missing, misaligned, or smaller than [`ABI_SIZE`] bytes.
    pub const FAILURE_ABI_MISMATCH: Self = Self(1);
    /// The author's `get_func_cnt()`, read as a `u32`, is [`MAX_KERNELS`] or more.
    pub const FAILURE_NUM_KERNELS: Self = Self(2);
    /// A callback the call needs is null (a handoff-block member, or `register_funcs`'s
    /// registrar).
    pub const FAILURE_NULL_CALLBACK: Self = Self(3);
    /// The host handed out a dataram or HBM scratch region that is null, empty, or wraps
    /// past the end of the address space.
    pub const FAILURE_NO_SCRATCH: Self = Self(4);
    /// A kernel in the author's table has a null name or a null function pointer.
    pub const FAILURE_BAD_KERNEL: Self = Self(5);
    /// The CRT bootstrap could not register its exit handler: static constructors
    /// filled the `atexit` table.
    pub const FAILURE_CRT_INIT: Self = Self(6);

    /// Whether this is [`SUCCESS`](Self::SUCCESS).
    pub const fn is_success(self) -> bool {
        self.0 == Self::SUCCESS.0
    }

    /// The constant's name, or `None` for a value this runtime does not define (a
    /// host-specific failure passed through from a callback).
    pub const fn name(self) -> Option<&'static str> {
        Some(match self {
            Self::SUCCESS => "SUCCESS",
            Self::FAILURE_ABI_MISMATCH => "FAILURE_ABI_MISMATCH",
            Self::FAILURE_NUM_KERNELS => "FAILURE_NUM_KERNELS",
            Self::FAILURE_NULL_CALLBACK => "FAILURE_NULL_CALLBACK",
            Self::FAILURE_NO_SCRATCH => "FAILURE_NO_SCRATCH",
            Self::FAILURE_BAD_KERNEL => "FAILURE_BAD_KERNEL",
            Self::FAILURE_CRT_INIT => "FAILURE_CRT_INIT",
            _ => return None,
        })
    }
}

/// As every status prints: hex, then the name (`0x4 FAILURE_NO_SCRATCH`); a value the
/// host's callback returned as `0x4c52 (host's)`.
impl core::fmt::Display for SUNDA_UCODE_LIB_STATUS {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:#x} {}", self.0, self.name().unwrap_or("(host's)"))
    }
}

impl core::fmt::Debug for SUNDA_UCODE_LIB_STATUS {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "SUNDA_UCODE_LIB_STATUS({})", self.0),
        }
    }
}

/// The smallest `sizeof_ncore_ucode_lib` `entry_func` accepts: the size of the block on
/// the 32-bit device. A newer host may pass a longer block; the tail is ignored.
///
/// This is the number on the wire, the same on every build: a host-side test block is
/// larger (its words are 8 bytes) but still carries the device's number.
pub const ABI_SIZE: u32 = 36;

/// Kernel counts at or above this are refused (`FAILURE_NUM_KERNELS`): the vendor's
/// `bltui …, 0x8000` gate. Registration indices then fit in the C `int` the author's
/// `get_func_ptr` / `get_func_name` take.
pub const MAX_KERNELS: u32 = 0x8000;

/// `get_data_scratch` / `get_hbm_scratch`: the host writes a region's base and size.
pub type ScratchFn = unsafe extern "C" fn(addr: *mut *mut c_void, size: *mut u32);

/// `get_dma_queue`: the host writes this core's DMA queue offsets.
pub type DmaQueueFn = unsafe extern "C" fn(m2s_offset: *mut u32, s2m_offset: *mut u32);

/// `get_libc_fn`: the host's libc resolver. Given a NUL-terminated name it returns the
/// host's function of that name, or null. The CRT asks it for exactly `"abort"`
/// (`void (*)(void)`) and `"exit"` (`void (*)(int)`): see `docs/abi/entry.md`.
pub type LibcResolver = unsafe extern "C" fn(name: *const c_char) -> *mut c_void;

/// `register_ext_isa_fn`: registers one kernel of the library by name.
pub type RegisterExtIsaFn =
    unsafe extern "C" fn(library_handle: *mut c_void, name: *const c_char) -> SUNDA_UCODE_LIB_STATUS;

/// `register_ext_isa_fn_v2` / `_v3`: registration with one extra tag byte (v2: the
/// dispatch opcode, v3: the core type). Carried for the host; the runtime calls only v1.
pub type RegisterExtIsaTaggedFn =
    unsafe extern "C" fn(library_handle: *mut c_void, name: *const c_char, tag: u8) -> SUNDA_UCODE_LIB_STATUS;

/// The host → device handoff block `entry_func` receives: nine word-sized members, 36
/// bytes on the 32-bit device (`9 * size_of::<usize>()` on any build).
///
/// | word | offset (device) | member |
/// |---|---|---|
/// | 0 | 0 | `sizeof_ncore_ucode_lib` (u32) |
/// | 1 | 4 | `library_handle` |
/// | 2 | 8 | `get_data_scratch` |
/// | 3 | 12 | `get_hbm_scratch` |
/// | 4 | 16 | `get_dma_queue` |
/// | 5 | 20 | `get_libc_fn` |
/// | 6 | 24 | `register_ext_isa_fn` |
/// | 7 | 28 | `register_ext_isa_fn_v2` |
/// | 8 | 32 | `register_ext_isa_fn_v3` |
///
/// The handle comes first, then the callbacks in the order `entry_func` calls them, then
/// the two registration forms it never calls. Every callback is nullable; which ones
/// must be present is [`SUNDA_UCODE_LIB::callbacks`]'s business.
#[allow(non_camel_case_types)] // the C ABI name
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SUNDA_UCODE_LIB {
    /// The size of the block the host built, in bytes; at least [`ABI_SIZE`].
    pub sizeof_ncore_ucode_lib: u32,
    /// The host's handle for this library, passed back on every registration.
    pub library_handle: *mut c_void,
    /// Required: the dataram scratch region.
    pub get_data_scratch: Option<ScratchFn>,
    /// Required: the HBM scratch region.
    pub get_hbm_scratch: Option<ScratchFn>,
    /// Required: this core's DMA queue offsets.
    pub get_dma_queue: Option<DmaQueueFn>,
    /// Optional: the host's libc resolver.
    pub get_libc_fn: Option<LibcResolver>,
    /// Required: registers a kernel by name.
    pub register_ext_isa_fn: Option<RegisterExtIsaFn>,
    /// Optional: registers a kernel by name and dispatch opcode.
    pub register_ext_isa_fn_v2: Option<RegisterExtIsaTaggedFn>,
    /// Optional: registers a kernel by name and core type.
    pub register_ext_isa_fn_v3: Option<RegisterExtIsaTaggedFn>,
}

const WORD: usize = size_of::<usize>();
const _: () = {
    assert!(size_of::<SUNDA_UCODE_LIB_STATUS>() == 4);
    assert!(size_of::<SUNDA_UCODE_LIB>() == 9 * WORD);
    assert!(offset_of!(SUNDA_UCODE_LIB, sizeof_ncore_ucode_lib) == 0);
    assert!(offset_of!(SUNDA_UCODE_LIB, library_handle) == WORD);
    assert!(offset_of!(SUNDA_UCODE_LIB, get_data_scratch) == 2 * WORD);
    assert!(offset_of!(SUNDA_UCODE_LIB, get_hbm_scratch) == 3 * WORD);
    assert!(offset_of!(SUNDA_UCODE_LIB, get_dma_queue) == 4 * WORD);
    assert!(offset_of!(SUNDA_UCODE_LIB, get_libc_fn) == 5 * WORD);
    assert!(offset_of!(SUNDA_UCODE_LIB, register_ext_isa_fn) == 6 * WORD);
    assert!(offset_of!(SUNDA_UCODE_LIB, register_ext_isa_fn_v2) == 7 * WORD);
    assert!(offset_of!(SUNDA_UCODE_LIB, register_ext_isa_fn_v3) == 8 * WORD);
};
#[cfg(target_pointer_width = "32")]
const _: () = {
    assert!(size_of::<SUNDA_UCODE_LIB>() == ABI_SIZE as usize);
    assert!(offset_of!(SUNDA_UCODE_LIB, sizeof_ncore_ucode_lib) == 0);
    assert!(offset_of!(SUNDA_UCODE_LIB, library_handle) == 4);
    assert!(offset_of!(SUNDA_UCODE_LIB, get_data_scratch) == 8);
    assert!(offset_of!(SUNDA_UCODE_LIB, get_hbm_scratch) == 12);
    assert!(offset_of!(SUNDA_UCODE_LIB, get_dma_queue) == 16);
    assert!(offset_of!(SUNDA_UCODE_LIB, get_libc_fn) == 20);
    assert!(offset_of!(SUNDA_UCODE_LIB, register_ext_isa_fn) == 24);
    assert!(offset_of!(SUNDA_UCODE_LIB, register_ext_isa_fn_v2) == 28);
    assert!(offset_of!(SUNDA_UCODE_LIB, register_ext_isa_fn_v3) == 32);
};

impl SUNDA_UCODE_LIB {
    /// The size gate: borrows the block behind `host` only if it is non-null, aligned,
    /// and says it is at least [`ABI_SIZE`] bytes long. Reads nothing but the first
    /// word before deciding, so a short block is never read past its size.
    ///
    /// # Errors
    /// [`FAILURE_ABI_MISMATCH`](SUNDA_UCODE_LIB_STATUS::FAILURE_ABI_MISMATCH).
    ///
    /// # Safety
    /// A non-null, aligned `host` must be readable for 4 bytes, and for a whole
    /// `SUNDA_UCODE_LIB` whenever that first word is at least [`ABI_SIZE`]; the block
    /// must not change while the returned borrow lives.
    pub unsafe fn from_raw<'a>(host: *const Self) -> Result<&'a Self, SUNDA_UCODE_LIB_STATUS> {
        if host.is_null() || !host.is_aligned() {
            return Err(SUNDA_UCODE_LIB_STATUS::FAILURE_ABI_MISMATCH);
        }
        // SAFETY: non-null and aligned (checked above), readable for the first word
        // (this function's contract); the size member is that first word.
        let size = unsafe { host.cast::<u32>().read() };
        if size < ABI_SIZE {
            return Err(SUNDA_UCODE_LIB_STATUS::FAILURE_ABI_MISMATCH);
        }
        // SAFETY: the size says the whole block is there, which the contract makes
        // readable and stable for 'a.
        Ok(unsafe { &*host })
    }

    /// The null gate: the callbacks `entry_func` calls, all present.
    ///
    /// # Errors
    /// [`FAILURE_NULL_CALLBACK`](SUNDA_UCODE_LIB_STATUS::FAILURE_NULL_CALLBACK) when
    /// `get_data_scratch`, `get_hbm_scratch`, `get_dma_queue` or `register_ext_isa_fn` is
    /// null. `get_libc_fn` and the v2/v3 forms are optional.
    ///
    /// # Safety
    /// The block's callbacks keep the handoff contract ([`Host`]'s, documented in
    /// `docs/abi/entry.md`): the scratch regions they report are memory the runtime alone
    /// may use, and the resolver answers only with functions of the documented types.
    pub unsafe fn callbacks(&self) -> Result<HostCallbacks, SUNDA_UCODE_LIB_STATUS> {
        let missing = SUNDA_UCODE_LIB_STATUS::FAILURE_NULL_CALLBACK;
        Ok(HostCallbacks {
            library_handle: self.library_handle,
            get_data_scratch: self.get_data_scratch.ok_or(missing)?,
            get_hbm_scratch: self.get_hbm_scratch.ok_or(missing)?,
            get_dma_queue: self.get_dma_queue.ok_or(missing)?,
            get_libc_fn: self.get_libc_fn,
            register_ext_isa_fn: self.register_ext_isa_fn.ok_or(missing)?,
        })
    }
}

/// A memory region the host hands out, as its callback reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchRegion {
    /// First byte.
    pub base: *mut u8,
    /// Length in bytes.
    pub size: u32,
}

impl ScratchRegion {
    /// What a callback that wrote nothing leaves: null and empty.
    pub const EMPTY: Self = Self { base: core::ptr::null_mut(), size: 0 };

    /// Whether the heaps can use it: non-null, non-empty, and not wrapping past the end
    /// of the address space. A region whose last byte is the address space's last one
    /// (e.g. `[0xFFFFF000, 2^32)`) does not wrap: it is usable.
    pub fn is_usable(&self) -> bool {
        !self.base.is_null()
            && self.size != 0
            // The last byte's address, `base + size - 1`, must exist.
            && self.base.addr().checked_add(self.size as usize - 1).is_some()
    }
}

/// This core's DMA queue offsets, from `get_dma_queue`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaQueueOffsets {
    /// Memory-to-stream (read) queue offset.
    pub m2s: u32,
    /// Stream-to-memory (write) queue offset.
    pub s2m: u32,
}

/// What `entry_func` asks of the host once the block passed both gates. Implemented by
/// [`HostCallbacks`] (the real block); tests implement it to record every call.
///
/// # Safety
/// Implementors keep the handoff contract: a scratch region they report (when non-null
/// and non-empty) is memory the runtime alone may use from then on, and the libc
/// resolver returns, for each name the CRT asks, null or a function of the documented
/// type.
pub unsafe trait Host {
    /// The host's handle for this library.
    fn library_handle(&self) -> *mut c_void;
    /// Calls `get_data_scratch`.
    fn data_scratch(&self) -> ScratchRegion;
    /// Calls `get_hbm_scratch`.
    fn hbm_scratch(&self) -> ScratchRegion;
    /// Calls `get_dma_queue`.
    fn dma_queue(&self) -> DmaQueueOffsets;
    /// The libc resolver, if the host has one.
    fn libc_resolver(&self) -> Option<LibcResolver>;
    /// Calls `register_ext_isa_fn(library_handle, name)`.
    ///
    /// # Safety
    /// `name` must be a NUL-terminated string that stays valid for the program's life
    /// (the host may keep it).
    unsafe fn register_kernel(&self, library_handle: *mut c_void, name: *const c_char) -> SUNDA_UCODE_LIB_STATUS;
}

/// A handoff block that passed the size and null gates: the required callbacks are
/// plain (non-null) function pointers. Made only by [`SUNDA_UCODE_LIB::callbacks`].
#[derive(Clone, Copy, Debug)]
pub struct HostCallbacks {
    library_handle: *mut c_void,
    get_data_scratch: ScratchFn,
    get_hbm_scratch: ScratchFn,
    get_dma_queue: DmaQueueFn,
    get_libc_fn: Option<LibcResolver>,
    register_ext_isa_fn: RegisterExtIsaFn,
}

/// Calls a scratch callback. Out-parameters start null/0, so a callback that writes
/// nothing reports an unusable region instead of garbage.
fn ask_scratch(callback: ScratchFn) -> ScratchRegion {
    let mut base: *mut c_void = core::ptr::null_mut();
    let mut size = 0u32;
    // SAFETY: the callback's contract is two writable out-parameters, which these are.
    unsafe { callback(&mut base, &mut size) };
    ScratchRegion { base: base.cast(), size }
}

// SAFETY: a `HostCallbacks` comes only from `SUNDA_UCODE_LIB::callbacks`, whose caller
// vouched for the handoff contract.
unsafe impl Host for HostCallbacks {
    fn library_handle(&self) -> *mut c_void {
        self.library_handle
    }

    fn data_scratch(&self) -> ScratchRegion {
        ask_scratch(self.get_data_scratch)
    }

    fn hbm_scratch(&self) -> ScratchRegion {
        ask_scratch(self.get_hbm_scratch)
    }

    fn dma_queue(&self) -> DmaQueueOffsets {
        let mut offsets = DmaQueueOffsets::default();
        // SAFETY: the callback's contract is two writable out-parameters, which these are.
        unsafe { (self.get_dma_queue)(&mut offsets.m2s, &mut offsets.s2m) };
        offsets
    }

    fn libc_resolver(&self) -> Option<LibcResolver> {
        self.get_libc_fn
    }

    unsafe fn register_kernel(&self, library_handle: *mut c_void, name: *const c_char) -> SUNDA_UCODE_LIB_STATUS {
        // SAFETY: the callback's contract is the host's handle and a NUL-terminated,
        // lasting name, which this function's contract passes on.
        unsafe { (self.register_ext_isa_fn)(library_handle, name) }
    }
}
