//! Moving data: `neuron_memcpy` and its three backends, chosen at run time.
//!
//! Reference: `docs/abi/data_transfer.md`.
//!
//! | [`NeuronMemcpyMethod`] | backend | what it is |
//! |---|---|---|
//! | `C_MEMCPY` (0) | [`crate::start_exit::memcpy`] | the device libc's own `memcpy` (`runtime/arch/xtensa/mem.S`) |
//! | `VEC_MEMCPY` (1) | [`vector::vec_memcpy`] | the same assembly under its second name: unrolled zero-overhead loops of aligned words, funnel shifts for a misaligned source |
//! | `DMA` (2, the default) | [`dma::copy`] | the DMA engine through this core's queues (the CPU when it cannot) |
//!
//! Every backend has `memcpy`'s C signature, so the C slot is the libc `memcpy` itself
//! and the vector slot the same routine (the two were separate until the libc `memcpy`
//! became the assembly; the vendor's table has both, so both methods stay): `neuron_memcpy` reaches either with
//! one indirect call and no wrapper in between (on a windowed core every extra call
//! level can cost a window overflow and underflow).
//!
//! The vendor's `data_transfer.o` has the same enumeration, the same 3-entry table and
//! the same default. Its `neuron_set_memcpy_method` guards with `m >= 4`, so it accepts
//! `m == 3 == MAX_METHODS` and then indexes one past its table; this one rejects every
//! `m >= MAX_METHODS` and leaves the active method unchanged. Here the active method is
//! a [`NeuronMemcpyMethod`], which has no `MAX_METHODS` value: an out-of-range method
//! cannot be stored, and the table lookup cannot go out of bounds.
//!
//! Every copy goes through [`copy`] (`neuron_memcpy` in C). Overlapping ranges, which
//! a memcpy may corrupt, are sent to `memmove` ([`crate::start_exit::memmove`])
//! whatever the method: detecting an overlap takes two compares.

pub mod dma;
pub mod vector;

use crate::start_exit::{memcpy, memmove};
use core::ffi::{c_int, c_void};
use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};

/// `neuron_memcpy`'s backend: the C enum `NeuronMemcpyMethod` of the vendor's DWARF,
/// `{ C_MEMCPY = 0, VEC_MEMCPY = 1, DMA = 2, MAX_METHODS = 3 }`.
///
/// `MAX_METHODS` is [`NeuronMemcpyMethod::MAX_METHODS`], a count rather than a variant,
/// so a value of this type is always a method the table has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum NeuronMemcpyMethod {
    /// `C_MEMCPY`: the portable backend.
    #[doc(alias = "C_MEMCPY")]
    CMemcpy = 0,
    /// `VEC_MEMCPY`: the hand-written word-loop backend.
    #[doc(alias = "VEC_MEMCPY")]
    VecMemcpy = 1,
    /// `DMA`: the DMA engine (see [`dma`]).
    #[doc(alias = "DMA")]
    Dma = 2,
}

const _: () = assert!(size_of::<NeuronMemcpyMethod>() == 4);

impl NeuronMemcpyMethod {
    /// `MAX_METHODS`: the number of methods; every valid method is below it.
    pub const MAX_METHODS: u32 = 3;
    /// Every method, in table order.
    pub const ALL: [NeuronMemcpyMethod; Self::MAX_METHODS as usize] = [Self::CMemcpy, Self::VecMemcpy, Self::Dma];
    /// The method a core starts with: `DMA`, as in the vendor's `.data`.
    pub const DEFAULT: NeuronMemcpyMethod = Self::Dma;

    /// The vendor's name of the method.
    pub const fn name(self) -> &'static str {
        match self {
            Self::CMemcpy => "C_MEMCPY",
            Self::VecMemcpy => "VEC_MEMCPY",
            Self::Dma => "DMA",
        }
    }
}

/// A method number that is not below [`NeuronMemcpyMethod::MAX_METHODS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidMethod(pub u32);

impl fmt::Display for InvalidMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "memcpy method {} is not below MAX_METHODS ({})", self.0, NeuronMemcpyMethod::MAX_METHODS)
    }
}

impl TryFrom<u32> for NeuronMemcpyMethod {
    type Error = InvalidMethod;

    fn try_from(method: u32) -> Result<Self, InvalidMethod> {
        Self::ALL.get(method as usize).copied().ok_or(InvalidMethod(method))
    }
}

/// A backend, with `memcpy`'s signature: copies `n` bytes from `src` to `dst`, which do
/// not overlap, and returns `dst`.
///
/// Calling one is `unsafe`: `src` must be readable and `dst` writable for `n` bytes, and
/// the ranges must not overlap.
pub type Backend = unsafe extern "C" fn(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;

/// The dispatch table, indexed by [`NeuronMemcpyMethod`] (the vendor's `.data` 0x200).
static BACKENDS: [Backend; NeuronMemcpyMethod::MAX_METHODS as usize] = [memcpy, vector::vec_memcpy, dma::copy];

/// The backend of `method`.
#[inline]
pub fn backend(method: NeuronMemcpyMethod) -> Backend {
    BACKENDS[method as usize]
}

/// This core's active method, as its number: one word per image, so per core. An
/// atomic only because a `static` must be `Sync`: no other core ever reads this copy,
/// and a relaxed load is a plain `l32i` on the hot path of every `neuron_memcpy`.
#[cfg(target_os = "none")]
static ACTIVE: AtomicU32 = AtomicU32::new(NeuronMemcpyMethod::DEFAULT as u32);

/// Runs `f` on this core's active-method word.
#[cfg(target_os = "none")]
#[inline(always)]
fn with_active_method<R>(f: impl FnOnce(&AtomicU32) -> R) -> R {
    f(&ACTIVE)
}

// On the host, test threads stand in for cores: each has its own word.
#[cfg(not(target_os = "none"))]
std::thread_local! {
    static ACTIVE: AtomicU32 = const { AtomicU32::new(NeuronMemcpyMethod::DEFAULT as u32) };
}

/// Runs `f` on this core's active-method word: on the host, this thread's.
#[cfg(not(target_os = "none"))]
fn with_active_method<R>(f: impl FnOnce(&AtomicU32) -> R) -> R {
    ACTIVE.with(f)
}

/// This core's active method.
#[inline]
pub fn active_method() -> NeuronMemcpyMethod {
    // Only `set_method` stores, and only valid methods.
    with_active_method(|active| NeuronMemcpyMethod::try_from(active.load(Ordering::Relaxed)))
        .unwrap_or(NeuronMemcpyMethod::DEFAULT)
}

/// Makes method number `method` the active one and returns the previous method.
///
/// # Errors
/// [`InvalidMethod`] for `method >= MAX_METHODS` (3 included, which the vendor's guard
/// lets through); the active method is then unchanged.
///
/// ```
/// use neuroncustomop::data_transfer::{InvalidMethod, NeuronMemcpyMethod, active_method, set_method};
///
/// assert_eq!(set_method(1), Ok(NeuronMemcpyMethod::Dma));
/// assert_eq!(set_method(3), Err(InvalidMethod(3)));
/// assert_eq!(active_method(), NeuronMemcpyMethod::VecMemcpy);
/// ```
pub fn set_method(method: u32) -> Result<NeuronMemcpyMethod, InvalidMethod> {
    let method = NeuronMemcpyMethod::try_from(method)?;
    let previous = with_active_method(|active| active.swap(method as u32, Ordering::Relaxed));
    Ok(NeuronMemcpyMethod::try_from(previous).unwrap_or(NeuronMemcpyMethod::DEFAULT))
}

/// Whether `[a, a + len)` and `[b, b + len)` share a byte.
#[inline]
fn overlap(a: *const u8, b: *const u8, len: usize) -> bool {
    len != 0 && a.addr().abs_diff(b.addr()) < len
}

/// Copies `len` bytes from `src` to `dst` with `method`'s backend; overlapping ranges
/// are copied as by `memmove` instead.
///
/// # Safety
/// `src` must be readable and `dst` writable for `len` bytes.
#[inline]
pub unsafe fn copy_with(method: NeuronMemcpyMethod, dst: *mut u8, src: *const u8, len: usize) {
    if overlap(dst, src, len) {
        // SAFETY: forwarded from this function's contract; memmove allows the overlap.
        unsafe { memmove(dst.cast(), src.cast(), len) };
    } else {
        // SAFETY: forwarded from this function's contract; the ranges do not overlap,
        // which is the one thing a backend adds to it.
        unsafe { backend(method)(dst.cast(), src.cast(), len) };
    }
}

/// Copies `len` bytes from `src` to `dst` through this core's active method
/// (`neuron_memcpy`); overlapping ranges are copied as by `memmove`.
///
/// # Safety
/// `src` must be readable and `dst` writable for `len` bytes.
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) {
    #[cfg(feature = "host-tsan")]
    thread_sanitizer::copying(dst, src, len);
    // The host tier keeps the cores apart: a copy into another core's memory is a finding.
    #[cfg(all(feature = "host-tier", target_arch = "x86_64"))]
    crate::arch::host_stores::copying(dst, len);
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_with(active_method(), dst, src, len) }
}

/// What ThreadSanitizer is told of a copy in the host tier's `--sanitize thread` build
/// (feature `host-tsan`): the runtime is not instrumented, so without this a race made
/// through `neuron_memcpy`, the TCM accessors' copies or the stream copies (all of
/// which are [`copy`]) would pass unseen.
#[cfg(feature = "host-tsan")]
mod thread_sanitizer {
    unsafe extern "C" {
        // TSan's public interface (sanitizer/tsan_interface.h), from its runtime, which
        // the host tier preloads into the loader's process.
        fn __tsan_read_range(addr: *const u8, size: usize);
        fn __tsan_write_range(addr: *const u8, size: usize);
    }

    /// A copy of `len` bytes from `src` to `dst` is about to be made by this thread.
    pub(super) fn copying(dst: *mut u8, src: *const u8, len: usize) {
        if len > 0 {
            // SAFETY: TSan only records the ranges as accessed by this thread.
            unsafe {
                __tsan_read_range(src, len);
                __tsan_write_range(dst, len);
            }
        }
    }
}

/// The status `neuron_set_memcpy_method` returns when it accepts the method.
pub const MEMCPY_METHOD_OK: c_int = 0;
/// The status `neuron_set_memcpy_method` returns for `m >= MAX_METHODS`.
pub const MEMCPY_METHOD_INVALID: c_int = -1;

/// C ABI `int neuron_set_memcpy_method(uint32_t m)`: [`MEMCPY_METHOD_OK`], or
/// [`MEMCPY_METHOD_INVALID`] for `m >= MAX_METHODS` with the active method unchanged.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn neuron_set_memcpy_method(m: u32) -> c_int {
    match set_method(m) {
        Ok(_) => MEMCPY_METHOD_OK,
        Err(InvalidMethod(_)) => MEMCPY_METHOD_INVALID,
    }
}

/// C ABI `NeuronMemcpyMethod neuron_get_memcpy_method(void)`: the active method.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn neuron_get_memcpy_method() -> NeuronMemcpyMethod {
    active_method()
}

/// C ABI `void neuron_memcpy(void *dst, const void *src, size_t n)`: [`copy`].
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn neuron_memcpy(dst: *mut c_void, src: *const c_void, n: usize) {
    // SAFETY: forwarded from this function's contract.
    unsafe { copy(dst.cast(), src.cast(), n) }
}

#[cfg(test)]
mod tests;
