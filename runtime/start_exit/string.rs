//! C's `<string.h>` string functions for kernels: `strcmp strncmp strcpy strncpy strchr
//! strrchr strcat strncat strstr strnlen memchr` (`strlen` and the `mem*` functions are
//! `compiler_builtins`' and [`super::mem`]'s). Byte strings, no locale: comparisons are
//! of `unsigned char`, as C says. Each is a plain loop (no crate provides C's string
//! functions for `no_std`; these are small enough to read), tested against glibc.

use core::ffi::{c_char, c_int, c_void};

/// The byte at `s + i`.
///
/// # Safety
/// `s + i` is readable.
unsafe fn at(s: *const c_char, i: usize) -> u8 {
    // SAFETY: readable (contract).
    unsafe { *s.cast::<u8>().add(i) }
}

/// C `int strncmp(const char *a, const char *b, size_t n)`: the first difference of the
/// first `n` bytes, up to a NUL, as `unsigned char`s.
///
/// # Safety
/// `a` and `b` are NUL-terminated or at least `n` bytes long.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strncmp(a: *const c_char, b: *const c_char, n: usize) -> c_int {
    for i in 0..n {
        // SAFETY: before both strings' ends (contract; the loop stops at a NUL).
        let (x, y) = unsafe { (at(a, i), at(b, i)) };
        if x != y || x == 0 {
            return c_int::from(x) - c_int::from(y);
        }
    }
    0
}

/// C `int strcmp(const char *a, const char *b)`.
///
/// # Safety
/// `a` and `b` are NUL-terminated.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strcmp(a: *const c_char, b: *const c_char) -> c_int {
    // SAFETY: NUL-terminated (contract): strncmp stops at the first NUL.
    unsafe { strncmp(a, b, usize::MAX) }
}

/// C `size_t strnlen(const char *s, size_t n)`: the length, at most `n`.
///
/// # Safety
/// `s` is NUL-terminated or at least `n` bytes long.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strnlen(s: *const c_char, n: usize) -> usize {
    // SAFETY: reads stop at the NUL or at n (contract).
    (0..n).find(|&i| unsafe { at(s, i) } == 0).unwrap_or(n)
}

/// The length of NUL-terminated `s`.
///
/// # Safety
/// `s` is NUL-terminated.
unsafe fn length(s: *const c_char) -> usize {
    // SAFETY: NUL-terminated (contract).
    unsafe { strnlen(s, usize::MAX) }
}

/// C `char *strncpy(char *dst, const char *src, size_t n)`: `src`'s bytes up to its NUL
/// or `n`, then NULs up to `n` (no NUL when `src` is `n` bytes or longer). Returns `dst`.
///
/// # Safety
/// `dst` is writable for `n` bytes; `src` is NUL-terminated or at least `n` bytes
/// long; they do not overlap.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strncpy(dst: *mut c_char, src: *const c_char, n: usize) -> *mut c_char {
    // SAFETY: within both (contract).
    unsafe {
        let len = strnlen(src, n);
        core::ptr::copy_nonoverlapping(src, dst, len);
        core::ptr::write_bytes(dst.add(len), 0, n - len);
    }
    dst
}

/// C `char *strcpy(char *dst, const char *src)`: `src` with its NUL. Returns `dst`.
///
/// # Safety
/// `src` is NUL-terminated; `dst` has room for it; they do not overlap.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strcpy(dst: *mut c_char, src: *const c_char) -> *mut c_char {
    // SAFETY: as the contract says.
    unsafe { core::ptr::copy_nonoverlapping(src, dst, length(src) + 1) };
    dst
}

/// C `char *strncat(char *dst, const char *src, size_t n)`: at most `n` bytes of `src`
/// after `dst`'s, then a NUL. Returns `dst`.
///
/// # Safety
/// `dst` is NUL-terminated with room for the result; `src` is NUL-terminated or at
/// least `n` bytes long; they do not overlap.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strncat(dst: *mut c_char, src: *const c_char, n: usize) -> *mut c_char {
    // SAFETY: as the contract says.
    unsafe {
        let end = dst.add(length(dst));
        let len = strnlen(src, n);
        core::ptr::copy_nonoverlapping(src, end, len);
        end.add(len).write(0);
    }
    dst
}

/// C `char *strcat(char *dst, const char *src)`.
///
/// # Safety
/// As [`strncat`], `src` NUL-terminated.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strcat(dst: *mut c_char, src: *const c_char) -> *mut c_char {
    // SAFETY: as the contract says.
    unsafe { strncat(dst, src, usize::MAX) }
}

/// C `void *memchr(const void *s, int c, size_t n)`: the first byte `(unsigned char)c`
/// of the `n` at `s`, or null.
///
/// # Safety
/// `s` is readable for `n` bytes.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn memchr(s: *const c_void, c: c_int, n: usize) -> *mut c_void {
    // SAFETY: readable for n bytes (contract).
    let bytes = unsafe { core::slice::from_raw_parts(s.cast::<u8>(), n) };
    bytes
        .iter()
        .position(|&b| b == c as u8)
        .map_or(core::ptr::null_mut(), |i| s.cast::<u8>().wrapping_add(i).cast_mut().cast())
}

/// C `char *strchr(const char *s, int c)`: the first `(char)c` in `s` (its NUL when `c` is
/// 0), or null.
///
/// # Safety
/// `s` is NUL-terminated.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strchr(s: *const c_char, c: c_int) -> *mut c_char {
    // SAFETY: the string and its NUL are readable (contract).
    unsafe { memchr(s.cast(), c, length(s) + 1).cast() }
}

/// C `char *strrchr(const char *s, int c)`: the last `(char)c` in `s`, or null.
///
/// # Safety
/// `s` is NUL-terminated.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strrchr(s: *const c_char, c: c_int) -> *mut c_char {
    // SAFETY: the string and its NUL are readable (contract).
    let bytes = unsafe { core::slice::from_raw_parts(s.cast::<u8>(), length(s) + 1) };
    bytes.iter().rposition(|&b| b == c as u8).map_or(core::ptr::null_mut(), |i| s.wrapping_add(i).cast_mut())
}

/// C `char *strstr(const char *haystack, const char *needle)`: the first occurrence of
/// `needle` in `haystack` (`haystack` itself for an empty needle), or null.
///
/// # Safety
/// Both are NUL-terminated.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strstr(haystack: *const c_char, needle: *const c_char) -> *mut c_char {
    // SAFETY: NUL-terminated (contract).
    let (hay, pin) = unsafe {
        (
            core::slice::from_raw_parts(haystack.cast::<u8>(), length(haystack)),
            core::slice::from_raw_parts(needle.cast::<u8>(), length(needle)),
        )
    };
    if pin.is_empty() {
        return haystack.cast_mut();
    }
    hay.windows(pin.len()).position(|w| w == pin).map_or(core::ptr::null_mut(), |i| haystack.wrapping_add(i).cast_mut())
}

#[cfg(test)]
mod tests;
