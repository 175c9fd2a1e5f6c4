//! The host tier's way into the formatter for C's variadic functions: the x86-64
//! `printf`, `sprintf`, `snprintf`, `vprintf`, `vsprintf` and `vsnprintf` are C
//! (`runtime/arch/host_tier/variadic.c`, compiled into every C and C++ library the host
//! tier builds), whose `va_arg` is clang's, right for x86-64. They hand the formatter a
//! callback that reads the next argument of a kind, so the text is this formatter's,
//! byte for byte the device's, never glibc's.

use super::{ArgKind, ArgSource, c_int_length, format, format_into};
use core::ffi::{c_char, c_int, c_void};

/// `uint64_t next(void *list, uint32_t kind)`: the next argument of `kind`
/// ([`kind_code`]) from the C caller's `va_list` at `list`.
pub type NextArg = unsafe extern "C" fn(list: *mut c_void, kind: u32) -> u64;

/// The number `variadic.c` knows a kind by (its `enum kind`).
fn kind_code(kind: ArgKind) -> u32 {
    match kind {
        ArgKind::Int => 0,
        ArgKind::Long => 1,
        ArgKind::LongLong => 2,
        ArgKind::Double => 3,
    }
}

/// A C `va_list`, read through `variadic.c`'s callback.
struct CallbackArgs {
    next: NextArg,
    list: *mut c_void,
}

impl ArgSource for CallbackArgs {
    fn next(&mut self, kind: ArgKind) -> u64 {
        // SAFETY: `list` is the caller's live `va_list` and the formatter asks for the
        // arguments the format names ([`__neuron_host_vprintf`]'s contract).
        unsafe { (self.next)(self.list, kind_code(kind)) }
    }
}

/// `vprintf` for the host tier: `format_string` formatted with the arguments `next`
/// reads from `list`, into this core's stdout ring.
///
/// # Safety
/// `format_string` is NUL-terminated; `next(list, …)` yields arguments that match it,
/// as `printf`'s must.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __neuron_host_vprintf(
    format_string: *const c_char,
    next: NextArg,
    list: *mut c_void,
) -> c_int {
    // SAFETY: NUL-terminated (contract).
    let text = unsafe { core::ffi::CStr::from_ptr(format_string) }.to_bytes();
    c_int_length(format(text, &mut CallbackArgs { next, list }, &mut crate::start_exit::write_stdout))
}

/// `vsnprintf` for the host tier (`sprintf`'s size is `SIZE_MAX`).
///
/// # Safety
/// As [`format_into`] and [`__neuron_host_vprintf`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __neuron_host_vsnprintf(
    buffer: *mut c_char,
    size: usize,
    format_string: *const c_char,
    next: NextArg,
    list: *mut c_void,
) -> c_int {
    // SAFETY: as the contract says.
    unsafe {
        let text = core::ffi::CStr::from_ptr(format_string).to_bytes();
        c_int_length(format_into(buffer.cast(), size, text, &mut CallbackArgs { next, list }))
    }
}
