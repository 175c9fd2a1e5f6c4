//! C's `<stdlib.h>` conversions, sorting and arithmetic for kernels: `strtol strtoul
//! strtoll strtoull atoi atol strtof strtod atof abs labs llabs qsort bsearch`. The C
//! locale only; no hexadecimal floats (`strtod("0x1p3")` reads the `0`).
//!
//! The floats are parsed by `core`'s `str::parse` (correctly rounded, as glibc's), after
//! C's syntax is scanned here; the rest are plain loops, tested against glibc.

use core::ffi::{c_char, c_int, c_long, c_longlong, c_ulong, c_ulonglong, c_void};

/// `ERANGE`, as newlib numbers it: a result out of range.
pub const ERANGE: c_int = 34;

fn set_errno(code: c_int) {
    // SAFETY: this core's errno, accessed only by the running kernel and the runtime.
    unsafe { super::__errno().write(code) };
}

/// The bytes of NUL-terminated `s`.
///
/// # Safety
/// `s` is NUL-terminated.
unsafe fn bytes<'a>(s: *const c_char) -> &'a [u8] {
    // SAFETY: NUL-terminated (contract).
    unsafe { core::ffi::CStr::from_ptr(s) }.to_bytes()
}

/// Stores `s + consumed` in `*end` when `end` is not null.
///
/// # Safety
/// `end` is null or writable.
unsafe fn set_end(end: *mut *mut c_char, s: *const c_char, consumed: usize) {
    if !end.is_null() {
        // SAFETY: writable (contract).
        unsafe { end.write(s.wrapping_add(consumed).cast_mut()) };
    }
}

/// C's `isspace` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `EINVAL`, as newlib numbers it: a base other than 0 and 2..=36.
pub const EINVAL: c_int = 22;

/// C's integer syntax in `base` (0: by prefix): the magnitude (saturated at `u64::MAX`,
/// with whether it overflowed), whether it was negative, and the bytes consumed (0 when
/// there are no digits). `None` for a base C does not define.
fn scan_integer(text: &[u8], base: c_int) -> Option<(u64, bool, bool, usize)> {
    if base != 0 && !(2..=36).contains(&base) {
        return None;
    }
    let mut i = text.iter().take_while(|&&b| is_space(b)).count();
    let negative = text.get(i) == Some(&b'-');
    if matches!(text.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let mut base = base as u32;
    let hex_prefix =
        matches!(text.get(i..i + 2), Some([b'0', b'x' | b'X'])) && text.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
    if (base == 0 || base == 16) && hex_prefix {
        i += 2;
        base = 16;
    } else if base == 0 {
        base = if text.get(i) == Some(&b'0') { 8 } else { 10 };
    }
    let start = i;
    let (mut value, mut overflow) = (0u64, false);
    while let Some(digit) = text.get(i).and_then(|&b| (b as char).to_digit(base)) {
        match value.checked_mul(u64::from(base)).and_then(|v| v.checked_add(u64::from(digit))) {
            Some(v) => value = v,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return Some((0, false, false, 0));
    }
    Some((if overflow { u64::MAX } else { value }, overflow, negative, i))
}

/// A signed conversion to `[min, max]`: clamped with `ERANGE` when out of range.
///
/// # Safety
/// `s` is NUL-terminated; `end` is null or writable.
unsafe fn to_signed(s: *const c_char, end: *mut *mut c_char, base: c_int, min: i64, max: i64) -> i64 {
    // SAFETY: NUL-terminated (contract).
    let Some((magnitude, overflow, negative, consumed)) = scan_integer(unsafe { bytes(s) }, base) else {
        // glibc's answer: 0, EINVAL, and `end` untouched.
        set_errno(EINVAL);
        return 0;
    };
    // SAFETY: null or writable (contract).
    unsafe { set_end(end, s, consumed) };
    let limit = if negative { min.unsigned_abs() } else { max as u64 };
    if overflow || magnitude > limit {
        set_errno(ERANGE);
        return if negative { min } else { max };
    }
    if negative { (magnitude as i64).wrapping_neg() } else { magnitude as i64 }
}

/// An unsigned conversion to `[0, max]`: a `-` negates in the unsigned type, as C says.
///
/// # Safety
/// `s` is NUL-terminated; `end` is null or writable.
unsafe fn to_unsigned(s: *const c_char, end: *mut *mut c_char, base: c_int, max: u64) -> u64 {
    // SAFETY: NUL-terminated (contract).
    let Some((magnitude, overflow, negative, consumed)) = scan_integer(unsafe { bytes(s) }, base) else {
        // glibc's answer: 0, EINVAL, and `end` untouched.
        set_errno(EINVAL);
        return 0;
    };
    // SAFETY: null or writable (contract).
    unsafe { set_end(end, s, consumed) };
    if overflow || magnitude > max {
        set_errno(ERANGE);
        return max;
    }
    if negative { magnitude.wrapping_neg() & max } else { magnitude }
}

/// C `long strtol(const char *s, char **end, int base)`.
///
/// # Safety
/// `s` is NUL-terminated; `end` is null or writable.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strtol(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_long {
    // `long` is 32 bits on the device (the conversion widens) and 64 on the host.
    #[allow(clippy::useless_conversion)]
    let (min, max) = (i64::from(c_long::MIN), i64::from(c_long::MAX));
    // SAFETY: as the contract says.
    unsafe { to_signed(s, end, base, min, max) as c_long }
}

/// C `unsigned long strtoul(const char *s, char **end, int base)`.
///
/// # Safety
/// `s` is NUL-terminated; `end` is null or writable.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strtoul(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_ulong {
    // `unsigned long` is 32 bits on the device (the conversion widens) and 64 on the host.
    #[allow(clippy::useless_conversion)]
    let max = u64::from(c_ulong::MAX);
    // SAFETY: as the contract says.
    unsafe { to_unsigned(s, end, base, max) as c_ulong }
}

/// C `long long strtoll(const char *s, char **end, int base)`.
///
/// # Safety
/// `s` is NUL-terminated; `end` is null or writable.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strtoll(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_longlong {
    // SAFETY: as the contract says.
    unsafe { to_signed(s, end, base, i64::MIN, i64::MAX) }
}

/// C `unsigned long long strtoull(const char *s, char **end, int base)`.
///
/// # Safety
/// `s` is NUL-terminated; `end` is null or writable.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strtoull(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_ulonglong {
    // SAFETY: as the contract says.
    unsafe { to_unsigned(s, end, base, u64::MAX) }
}

/// C `int atoi(const char *s)`: `(int)strtol(s, NULL, 10)`.
///
/// # Safety
/// `s` is NUL-terminated.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn atoi(s: *const c_char) -> c_int {
    // SAFETY: NUL-terminated (contract).
    unsafe { strtol(s, core::ptr::null_mut(), 10) as c_int }
}

/// C `long atol(const char *s)`: `strtol(s, NULL, 10)`.
///
/// # Safety
/// `s` is NUL-terminated.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn atol(s: *const c_char) -> c_long {
    // SAFETY: NUL-terminated (contract).
    unsafe { strtol(s, core::ptr::null_mut(), 10) }
}

/// C's decimal floating-point syntax at the start of `text` (after white space): the
/// text `core`'s parser reads (sign, digits, point, exponent; or `inf`, `infinity`,
/// `nan`, `nan(...)` in any case), and the bytes consumed (0: none).
fn scan_float(text: &[u8]) -> (&[u8], usize) {
    let start = text.iter().take_while(|&&b| is_space(b)).count();
    let mut i = start + usize::from(matches!(text.get(start), Some(b'+' | b'-')));
    let rest = &text[i..];
    let word = |w: &[u8]| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w);
    if word(b"infinity") {
        return (&text[start..i + 3], i + 8);
    }
    if word(b"inf") {
        return (&text[start..i + 3], i + 3);
    }
    if word(b"nan") {
        let mut end = i + 3;
        if text.get(end) == Some(&b'(') {
            let inner = text[end + 1..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
            if text.get(end + 1 + inner) == Some(&b')') {
                end += inner + 2;
            }
        }
        return (&text[start..i + 3], end);
    }
    let digits = |from: usize| text[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let whole = digits(i);
    i += whole;
    let mut fraction = 0;
    if text.get(i) == Some(&b'.') {
        fraction = digits(i + 1);
        if whole + fraction > 0 {
            i += 1 + fraction;
        }
    }
    if whole + fraction == 0 {
        return (b"", 0);
    }
    if matches!(text.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(text.get(i + 1), Some(b'+' | b'-')));
        let exponent = digits(i + 1 + sign);
        if exponent > 0 {
            i += 1 + sign + exponent;
        }
    }
    (&text[start..i], i)
}

/// Parses C's float syntax at `s` into `T`, `ERANGE` when a finite text overflows.
///
/// # Safety
/// `s` is NUL-terminated; `end` is null or writable.
unsafe fn to_float<T: core::str::FromStr + Default + Copy>(
    s: *const c_char,
    end: *mut *mut c_char,
    is_infinite: impl Fn(T) -> bool,
) -> T {
    // SAFETY: NUL-terminated (contract).
    let (text, consumed) = scan_float(unsafe { bytes(s) });
    // SAFETY: null or writable (contract).
    unsafe { set_end(end, s, consumed) };
    // The scanned text is ASCII, and in the syntax `core`'s parser takes.
    let value = core::str::from_utf8(text).ok().and_then(|t| t.parse::<T>().ok()).unwrap_or_default();
    if is_infinite(value) && text.last().is_some_and(u8::is_ascii_digit) {
        set_errno(ERANGE);
    }
    value
}

/// C `double strtod(const char *s, char **end)`.
///
/// # Safety
/// `s` is NUL-terminated; `end` is null or writable.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strtod(s: *const c_char, end: *mut *mut c_char) -> f64 {
    // SAFETY: as the contract says.
    unsafe { to_float(s, end, f64::is_infinite) }
}

/// C `float strtof(const char *s, char **end)`.
///
/// # Safety
/// `s` is NUL-terminated; `end` is null or writable.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn strtof(s: *const c_char, end: *mut *mut c_char) -> f32 {
    // SAFETY: as the contract says.
    unsafe { to_float(s, end, f32::is_infinite) }
}

/// C `double atof(const char *s)`: `strtod(s, NULL)`.
///
/// # Safety
/// `s` is NUL-terminated.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn atof(s: *const c_char) -> f64 {
    // SAFETY: NUL-terminated (contract).
    unsafe { strtod(s, core::ptr::null_mut()) }
}

/// C `int abs(int n)` (`abs(INT_MIN)` is INT_MIN, as on every two's-complement libc).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn abs(n: c_int) -> c_int {
    n.wrapping_abs()
}

/// C `long labs(long n)`.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn labs(n: c_long) -> c_long {
    n.wrapping_abs()
}

/// C `long long llabs(long long n)`.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn llabs(n: c_longlong) -> c_longlong {
    n.wrapping_abs()
}

/// C's comparison function: negative, 0 or positive as the first element sorts before,
/// with or after the second.
pub type Compare = unsafe extern "C" fn(*const c_void, *const c_void) -> c_int;

/// C `void qsort(void *base, size_t count, size_t size, int (*compare)(const void *,
/// const void *))`: sorts in place by heapsort (O(n log n) in the worst case, no
/// recursion and no allocation; like C's qsort, not stable).
///
/// # Safety
/// `base` holds `count` elements of `size` bytes; `compare` is a consistent order on them.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn qsort(base: *mut c_void, count: usize, size: usize, compare: Option<Compare>) {
    let Some(compare) = compare else { return };
    if size == 0 || count < 2 {
        return;
    }
    let element = |i: usize| base.cast::<u8>().wrapping_add(i * size);
    // SAFETY: indices below `count` (contract: the elements are there).
    let less = |a: usize, b: usize| unsafe { compare(element(a).cast(), element(b).cast()) } < 0;
    // SAFETY: two distinct elements of the array.
    let swap = |a: usize, b: usize| unsafe { core::ptr::swap_nonoverlapping(element(a), element(b), size) };
    let sift_down = |mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            break;
        }
        if child + 1 < end && less(child, child + 1) {
            child += 1;
        }
        if !less(root, child) {
            break;
        }
        swap(root, child);
        root = child;
    };
    for root in (0..count / 2).rev() {
        sift_down(root, count);
    }
    for end in (1..count).rev() {
        swap(0, end);
        sift_down(0, end);
    }
}

/// C `void *bsearch(const void *key, const void *base, size_t count, size_t size, int
/// (*compare)(const void *key, const void *element))`: an element equal to `key` in the
/// sorted array, or null.
///
/// # Safety
/// `base` holds `count` elements of `size` bytes, sorted by `compare`.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn bsearch(
    key: *const c_void,
    base: *const c_void,
    count: usize,
    size: usize,
    compare: Option<Compare>,
) -> *mut c_void {
    let Some(compare) = compare else { return core::ptr::null_mut() };
    let (mut low, mut high) = (0, count);
    while low < high {
        let middle = low + (high - low) / 2;
        let element = base.cast::<u8>().wrapping_add(middle * size).cast::<c_void>();
        // SAFETY: an element of the array (contract).
        match unsafe { compare(key, element) } {
            0 => return element.cast_mut(),
            order if order < 0 => high = middle,
            _ => low = middle + 1,
        }
    }
    core::ptr::null_mut()
}

#[cfg(test)]
mod tests;
