//! Guest memory read from a vCPU callback, through a `GByteArray` that glib made.
//!
//! qemu-plugin's `qemu_plugin_read_memory_vaddr` (10.1.0-v2) hands QEMU a
//! `GByteArray` built on the stack with only the two public fields over the caller's
//! buffer. QEMU sizes it with `g_byte_array_set_size`, which reads glib's private
//! fields past those two (capacity, element size, the zero and clear flags) from
//! whatever the stack holds, and so reallocates a buffer glib never allocated, or
//! clears memory it does not own: QEMU died of SIGSEGV in that `memset` (a core dump:
//! `g_byte_array_set_size` under `qemu_plugin_read_memory_vaddr`) in about 1 checked
//! call in 6 of an 8-core kernel storing past its output, the path that reads another
//! core's region table. Here glib makes and frees the array, and the bytes are copied
//! out of it.

use qemu_plugin::sys::{GByteArray, qemu_plugin_read_memory_vaddr};

// glib's, which QEMU links and exports to the plugins it loads (as it does its own
// `qemu_plugin_*` functions).
unsafe extern "C" {
    fn g_byte_array_new() -> *mut GByteArray;
    fn g_byte_array_free(array: *mut GByteArray, free_segment: i32) -> *mut u8;
}

/// Reads `buf.len()` bytes of guest memory at virtual address `address`, as the
/// current vCPU sees it; false when QEMU cannot (nothing mapped there). Only from a
/// vCPU callback (QEMU's rule for the call).
pub(crate) fn read(address: u64, buf: &mut [u8]) -> bool {
    // SAFETY: the array is glib's own, made here and freed (with its data) before
    // return; QEMU sizes it to `buf.len()` bytes and fills them when it returns true,
    // and only then are they copied, at most `len` of them, into `buf`.
    unsafe {
        let array = g_byte_array_new();
        let read = qemu_plugin_read_memory_vaddr(address, array, buf.len()) && (*array).len as usize >= buf.len();
        if read {
            std::ptr::copy_nonoverlapping((*array).data, buf.as_mut_ptr(), buf.len());
        }
        g_byte_array_free(array, 1);
        read
    }
}
