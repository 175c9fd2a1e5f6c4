//! The platform hooks: the two services the runtime needs from whatever hosts the core.
//!
//! An image links whichever implementation it is given (see `linker/neuroncustomop.x`):
//! on the device nothing overrides them and the defaults below apply; a test image can
//! link its own, e.g. semihosting under QEMU (`qemu/firmware/src/board.rs`). The runtime calls only
//! these names, so it cannot tell which it got.

unsafe extern "C" {
    fn __neuron_platform_write(fd: i32, buf: *const u8, len: usize) -> isize;
    fn __neuron_platform_exit(code: i32) -> !;
}

/// Writes `bytes` to stream `fd` (1 = stdout, 2 = stderr).
pub fn write(fd: i32, bytes: &[u8]) {
    // SAFETY: `bytes` is a valid slice for the duration of the call.
    unsafe { __neuron_platform_write(fd, bytes.as_ptr(), bytes.len()) };
}

/// Stops this core with `code` as its status.
pub fn exit(code: i32) -> ! {
    // SAFETY: the hook never returns and takes no pointers.
    unsafe { __neuron_platform_exit(code) }
}

/// Default `__neuron_platform_write`: the device's stdout ring, drained by the loader.
#[unsafe(no_mangle)]
extern "C" fn __neuron_default_write(fd: i32, buf: *const u8, len: usize) -> isize {
    if buf.is_null() {
        return -1;
    }
    // SAFETY: the caller passes `len` readable bytes at `buf` (the hook's contract).
    let bytes = unsafe { core::slice::from_raw_parts(buf, len) };
    crate::start_exit::write_fd(fd, bytes).map_or(-1, |written| written as isize)
}

/// Default `__neuron_platform_exit`: `_Exit(code)`, which hands the core back to the
/// host's `exit` (the loader's, from `get_libc_fn`), or parks it if there is none.
#[unsafe(no_mangle)]
extern "C" fn __neuron_default_exit(code: i32) -> ! {
    crate::start_exit::_Exit(code)
}

/// Default `main`: a library image has nothing to do when booted on its own.
#[unsafe(no_mangle)]
extern "C" fn __neuron_default_main() -> i32 {
    0
}
