//! The newlib reentrant file shims the vendor's `start_exit` defines next to
//! `_write_r`: `_open_r`, `_close_r`, `_read_r`, `_unlink_r`, and `errno`. The device
//! has no file system and no input: each fails, returning -1 with `errno` set, both in
//! the reentrancy structure it is given (newlib's `struct _reent` starts with its
//! `_errno`) and in this core's `errno` ([`__errno`]). Writing to stdout and stderr is
//! the one file operation that works (`_write_r`, `write`, `crate::start_exit::stdout`).

use core::cell::UnsafeCell;
use core::ffi::{c_char, c_int, c_void};

/// `EBADF`, as newlib numbers it: no such open file.
pub const EBADF: c_int = 9;
/// `ENOSYS`, as newlib numbers it: the device has no file system.
pub const ENOSYS: c_int = 88;

/// One core's `errno`, at a fixed address `__errno` returns.
#[repr(transparent)]
pub struct Errno(UnsafeCell<c_int>);

// SAFETY: each core has its own image, hence its own `Errno`, and runs one context at
// a time (the `crate::global` invariant); it is only accessed through raw pointers.
unsafe impl Sync for Errno {}

#[cfg(target_os = "none")]
static ERRNO: Errno = Errno(UnsafeCell::new(0));

/// C `int *__errno(void)`: where this core's `errno` lives (newlib's accessor, which
/// its `<errno.h>` expands `errno` to).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn __errno() -> *mut c_int {
    #[cfg(target_os = "none")]
    {
        ERRNO.0.get()
    }
    #[cfg(not(target_os = "none"))]
    {
        std::thread_local! {
            static ERRNO: Errno = const { Errno(UnsafeCell::new(0)) };
        }
        ERRNO.with(|errno| errno.0.get())
    }
}

/// Sets `errno` to `code` (in `reent` too when it is not null) and returns -1.
///
/// # Safety
/// `reent` is null or points to a newlib `struct _reent`.
unsafe fn fail(reent: *mut c_void, code: c_int) -> c_int {
    if !reent.is_null() {
        // SAFETY: `struct _reent` begins with `int _errno` (contract).
        unsafe { reent.cast::<c_int>().write(code) };
    }
    // SAFETY: this core's errno, accessed only here and by the kernel between calls.
    unsafe { __errno().write(code) };
    -1
}

/// C `int _open_r(struct _reent*, const char *path, int flags, int mode)`: -1, `ENOSYS`.
///
/// # Safety
/// `reent` is null or a newlib `struct _reent`.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn _open_r(reent: *mut c_void, _path: *const c_char, _flags: c_int, _mode: c_int) -> c_int {
    // SAFETY: forwarded from this function's contract.
    unsafe { fail(reent, ENOSYS) }
}

/// C `int _close_r(struct _reent*, int fd)`: -1, `EBADF` (no file was opened; the
/// standard streams stay open).
///
/// # Safety
/// As [`_open_r`].
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn _close_r(reent: *mut c_void, _fd: c_int) -> c_int {
    // SAFETY: forwarded from this function's contract.
    unsafe { fail(reent, EBADF) }
}

/// C `ssize_t _read_r(struct _reent*, int fd, void *buf, size_t len)`: -1, `EBADF`
/// (the device has no input).
///
/// # Safety
/// As [`_open_r`].
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn _read_r(reent: *mut c_void, _fd: c_int, _buf: *mut c_void, _len: usize) -> isize {
    // SAFETY: forwarded from this function's contract.
    unsafe { fail(reent, EBADF) as isize }
}

/// C `int _unlink_r(struct _reent*, const char *path)`: -1, `ENOSYS`.
///
/// # Safety
/// As [`_open_r`].
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn _unlink_r(reent: *mut c_void, _path: *const c_char) -> c_int {
    // SAFETY: forwarded from this function's contract.
    unsafe { fail(reent, ENOSYS) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shim_fails_with_errno_in_the_reent_and_the_core() {
        let mut reent = [0 as c_int; 4];
        let reent_ptr = reent.as_mut_ptr().cast::<c_void>();
        // SAFETY: a stand-in `struct _reent` whose first int is `_errno`; null paths
        // and buffers are never read.
        unsafe {
            assert_eq!(_open_r(reent_ptr, c"/tmp/x".as_ptr(), 0, 0), -1);
            assert_eq!((reent[0], *__errno()), (ENOSYS, ENOSYS));
            assert_eq!(_close_r(reent_ptr, 3), -1);
            assert_eq!((reent[0], *__errno()), (EBADF, EBADF));
            assert_eq!(_unlink_r(core::ptr::null_mut(), c"x".as_ptr()), -1);
            assert_eq!((reent[0], *__errno()), (EBADF, ENOSYS), "a null reent leaves the struct alone");
            assert_eq!(_read_r(reent_ptr, 0, core::ptr::null_mut(), 10), -1);
            assert_eq!((reent[0], *__errno()), (EBADF, EBADF));
        }
    }
}
