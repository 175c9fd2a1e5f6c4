//! C `printf`, `puts` and `putchar` into the stdout ring, for C and C++ kernels (the
//! AWS documentation's recommended way to debug one).
//!
//! [`format`] is the formatter, over any [`ArgSource`] so that host tests feed it
//! arguments without a C call; the device's `printf` feeds it its C variadic
//! arguments (the `c_variadic` feature, which device builds enable; the host build has
//! no `printf` of its own). Conversions: `d i u o x X c s p f F e E g G %`, flags
//! `- 0 + space #`, width and precision (also `*`), and the length modifiers
//! `hh h l ll z j t L` with the 32-bit device's sizes (`long`, `size_t` and pointers are
//! 32 bits). Floats are formatted with integer arithmetic, not `core::fmt` (whose f64
//! formatting crashes LLVM's Xtensa backend at the runtime's opt-level,
//! docs/toolchain.md): exact to 17 significant digits, beyond which digits are zeros.

/// What a conversion asks its argument source for, after C's default promotions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// `int` (also `char`, `short`, `long`, `size_t` and pointers: 32 bits on the device).
    Int,
    /// `long long` (`ll`, `j`).
    LongLong,
    /// `double` (also `float`, promoted).
    Double,
}

/// Where the formatter takes its arguments from, in order.
pub trait ArgSource {
    /// The next argument of `kind`, as 64 bits: integers sign-extended from their C
    /// width, a double as its bit pattern.
    fn next(&mut self, kind: ArgKind) -> u64;
}

/// A host-side [`ArgSource`]: a list of values, as the device would pass them.
impl ArgSource for core::slice::Iter<'_, u64> {
    fn next(&mut self, _kind: ArgKind) -> u64 {
        Iterator::next(self).copied().unwrap_or(0)
    }
}

#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alternate: bool,
    width: usize,
    precision: Option<usize>,
}

/// Longest text one conversion produces before padding: a float's integer part of up
/// to [`MAX_FIXED_EXPONENT`] digits, its point and up to [`MAX_PRECISION`] decimals (the
/// buffer is on the kernel's stack, which may be the 8 KiB local one).
const DIGITS: usize = 96;

/// The most decimals a float is printed with; a larger precision is cut to it.
const MAX_PRECISION: usize = 48;

/// `%f` of a value of 10^40 or more is printed in `%e` style instead (C would print all
/// its integer digits).
const MAX_FIXED_EXPONENT: i32 = 40;

/// Formats `fmt` (a C format string, without its NUL) with arguments from `args`,
/// handing the output to `out` in pieces. Returns the number of bytes produced.
///
/// ```
/// use neuroncustomop::start_exit::format;
/// let mut text = Vec::new();
/// let args = [7u64, (-2.5f64).to_bits()];
/// let n = format(b"x=%03d y=%.2f%%", &mut args.iter(), &mut |bytes: &[u8]| text.extend_from_slice(bytes));
/// assert_eq!(text, b"x=007 y=-2.50%");
/// assert_eq!(n, text.len());
/// ```
pub fn format(fmt: &[u8], args: &mut impl ArgSource, out: &mut impl FnMut(&[u8])) -> usize {
    let mut written = 0;
    let mut emit = |bytes: &[u8]| {
        written += bytes.len();
        out(bytes);
    };
    let mut rest = fmt;
    while !rest.is_empty() {
        let literal = rest.iter().position(|&b| b == b'%').unwrap_or(rest.len());
        emit(&rest[..literal]);
        rest = &rest[literal..];
        if rest.is_empty() {
            break;
        }
        rest = &rest[1..];
        let mut spec = Spec::default();
        while let Some((&flag, tail)) = rest.split_first() {
            match flag {
                b'-' => spec.left = true,
                b'0' => spec.zero = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alternate = true,
                _ => break,
            }
            rest = tail;
        }
        let (width, tail) = number(rest, args);
        rest = tail;
        if let Some(width) = width {
            // A negative `*` width means left-justified.
            spec.left |= width < 0;
            spec.width = width.unsigned_abs() as usize;
        }
        if let Some(tail) = rest.strip_prefix(b".") {
            let (precision, tail) = number(tail, args);
            rest = tail;
            // A negative `*` precision is as if none were given.
            spec.precision = match precision {
                Some(p) if p < 0 => None,
                p => Some(p.unwrap_or(0) as usize),
            };
        }
        let mut long_long = false;
        while let Some((&modifier, tail)) = rest.split_first() {
            match modifier {
                b'h' | b'l' | b'z' | b't' | b'L' => {}
                b'j' => long_long = true,
                _ => break,
            }
            long_long |= rest.starts_with(b"ll");
            rest = tail;
        }
        let Some((&conversion, tail)) = rest.split_first() else {
            break;
        };
        rest = tail;
        let mut digits = [0u8; DIGITS];
        let int_kind = if long_long { ArgKind::LongLong } else { ArgKind::Int };
        match conversion {
            b'd' | b'i' => {
                let value = args.next(int_kind) as i64;
                let value = if long_long { value } else { value as i32 as i64 };
                let body = integer(&mut digits, value.unsigned_abs(), 10, false, spec.precision);
                pad_number(&mut emit, spec, sign(value < 0, spec), b"", body);
            }
            b'u' | b'o' | b'x' | b'X' | b'p' => {
                let raw = args.next(if conversion == b'p' { ArgKind::Int } else { int_kind });
                let value = if long_long { raw } else { raw as u32 as u64 };
                let (base, upper) = match conversion {
                    b'u' => (10, false),
                    b'o' => (8, false),
                    b'X' => (16, true),
                    _ => (16, false),
                };
                let prefix: &[u8] = match conversion {
                    b'p' => b"0x",
                    b'x' if spec.alternate && value != 0 => b"0x",
                    b'X' if spec.alternate && value != 0 => b"0X",
                    b'o' if spec.alternate => b"0",
                    _ => b"",
                };
                let body = integer(&mut digits, value, base, upper, spec.precision);
                pad_number(&mut emit, spec, b"", prefix, body);
            }
            b'c' => {
                let byte = [args.next(ArgKind::Int) as u8];
                pad(&mut emit, Spec { zero: false, ..spec }, &byte);
            }
            b's' => {
                let text = c_string(args.next(ArgKind::Int) as usize);
                let text = spec.precision.map_or(text, |p| &text[..p.min(text.len())]);
                pad(&mut emit, Spec { zero: false, ..spec }, text);
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' => {
                let value = f64::from_bits(args.next(ArgKind::Double));
                let negative = value.is_sign_negative() && !value.is_nan();
                let upper = conversion.is_ascii_uppercase();
                if !value.is_finite() {
                    let text: &[u8] = match (value.is_nan(), upper) {
                        (true, false) => b"nan",
                        (true, true) => b"NAN",
                        (false, false) => b"inf",
                        (false, true) => b"INF",
                    };
                    pad_number(&mut emit, Spec { zero: false, ..spec }, sign(negative, spec), b"", text);
                } else {
                    let body = float(&mut digits, value.abs(), conversion.to_ascii_lowercase(), upper, spec);
                    pad_number(&mut emit, spec, sign(negative, spec), b"", body);
                }
            }
            b'%' => emit(b"%"),
            // An unknown conversion is printed as it was written.
            other => emit(&[b'%', other]),
        }
    }
    written
}

/// A width or precision: digits, or `*` (the next `int` argument).
fn number<'a>(text: &'a [u8], args: &mut impl ArgSource) -> (Option<i64>, &'a [u8]) {
    if let Some(rest) = text.strip_prefix(b"*") {
        return (Some(args.next(ArgKind::Int) as i32 as i64), rest);
    }
    let len = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 {
        return (None, text);
    }
    let value = text[..len].iter().fold(0i64, |n, &d| n.saturating_mul(10).saturating_add(i64::from(d - b'0')));
    (Some(value.min(i64::from(u16::MAX))), &text[len..])
}

fn sign(negative: bool, spec: Spec) -> &'static [u8] {
    match (negative, spec.plus, spec.space) {
        (true, _, _) => b"-",
        (false, true, _) => b"+",
        (false, false, true) => b" ",
        _ => b"",
    }
}

/// The string at `address` (up to its NUL), or `(null)` for null.
fn c_string<'a>(address: usize) -> &'a [u8] {
    if address == 0 {
        return b"(null)";
    }
    // SAFETY: `%s` takes a NUL-terminated string: the caller's obligation in C.
    unsafe { core::ffi::CStr::from_ptr(address as *const core::ffi::c_char) }.to_bytes()
}

/// `value` in `base` into the end of `buffer`, at least `precision` digits (C: a
/// precision of 0 prints nothing for 0). Returns the digits.
fn integer(buffer: &mut [u8; DIGITS], mut value: u64, base: u64, upper: bool, precision: Option<usize>) -> &[u8] {
    let alphabet: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let mut start = DIGITS;
    while value != 0 {
        start -= 1;
        buffer[start] = alphabet[(value % base) as usize];
        value /= base;
    }
    let minimum = precision.unwrap_or(1).min(MAX_PRECISION);
    while DIGITS - start < minimum {
        start -= 1;
        buffer[start] = b'0';
    }
    &buffer[start..]
}

/// Pads `text` to the width with spaces, on the side the flags say.
fn pad(emit: &mut impl FnMut(&[u8]), spec: Spec, text: &[u8]) {
    pad_number(emit, spec, b"", b"", text);
}

/// `sign`, `prefix` and `body`, padded to the width: zeros between prefix and body for
/// `0` (unless left-justified, or an integer with a precision), spaces otherwise.
fn pad_number(emit: &mut impl FnMut(&[u8]), spec: Spec, sign: &[u8], prefix: &[u8], body: &[u8]) {
    let len = sign.len() + prefix.len() + body.len();
    let fill = spec.width.saturating_sub(len);
    let spaces = [b' '; 16];
    let zeros = [b'0'; 16];
    let repeat = |emit: &mut dyn FnMut(&[u8]), piece: &[u8; 16], mut count: usize| {
        while count > 0 {
            let n = count.min(16);
            emit(&piece[..n]);
            count -= n;
        }
    };
    let zero_fill = spec.zero && !spec.left;
    if !spec.left && !zero_fill {
        repeat(emit, &spaces, fill);
    }
    emit(sign);
    emit(prefix);
    if zero_fill {
        repeat(emit, &zeros, fill);
    }
    emit(body);
    if spec.left {
        repeat(emit, &spaces, fill);
    }
}

/// Significant decimal digits an f64 carries; later digits print as zeros.
const SIGNIFICANT: i32 = 17;

/// The decimal digits of `value` (finite, >= 0): `(digits, exponent)` with `value` ≈
/// `0.d1 d2 d3 ... × 10^exponent`, [`SIGNIFICANT`] digits, rounded to nearest.
fn decimal(value: f64) -> ([u8; SIGNIFICANT as usize], i32) {
    let mut digits = [0u8; SIGNIFICANT as usize];
    if value == 0.0 {
        return (digits, 1);
    }
    let mut exponent = libm::floor(libm::log10(value)) as i32 + 1;
    // value / 10^(exponent - 17) is an integer of 17 digits (give or take one, fixed
    // below); computed in two steps so that neither power of ten overflows.
    let scale = SIGNIFICANT - exponent;
    let scaled =
        libm::round(value * libm::pow(10.0, f64::from(scale / 2)) * libm::pow(10.0, f64::from(scale - scale / 2)));
    let mut mantissa = scaled as u64;
    let upper = 10u64.pow(SIGNIFICANT as u32);
    if mantissa >= upper {
        mantissa = libm::round(scaled / 10.0) as u64;
        exponent += 1;
    } else if mantissa < upper / 10 {
        mantissa *= 10;
        exponent -= 1;
    }
    for digit in digits.iter_mut().rev() {
        *digit = (mantissa % 10) as u8;
        mantissa /= 10;
    }
    (digits, exponent)
}

/// Rounds the decimal digits `digits` (value `0.d1 d2 ... × 10^exponent`) to keep `keep`
/// of them; returns the new digits and exponent (a carry can add a digit in front).
fn round_digits(
    mut digits: [u8; SIGNIFICANT as usize],
    mut exponent: i32,
    keep: i32,
) -> ([u8; SIGNIFICANT as usize], i32) {
    if keep < 0 {
        return ([0; SIGNIFICANT as usize], exponent);
    }
    let keep = keep as usize;
    if keep >= digits.len() {
        return (digits, exponent);
    }
    let round_up = digits[keep] >= 5;
    digits[keep..].fill(0);
    if round_up {
        let mut index = keep;
        loop {
            if index == 0 {
                // 9.99 -> 10.0: one digit more in front.
                let last = digits.len() - 1;
                digits.copy_within(0..last, 1);
                digits[0] = 1;
                exponent += 1;
                break;
            }
            index -= 1;
            if digits[index] == 9 {
                digits[index] = 0;
            } else {
                digits[index] += 1;
                break;
            }
        }
    }
    (digits, exponent)
}

/// Digit `index` (0: the first) of the decimal expansion, 0 past the significant ones.
fn digit_at(digits: &[u8; SIGNIFICANT as usize], index: i32) -> u8 {
    b'0' + usize::try_from(index).ok().and_then(|i| digits.get(i)).copied().unwrap_or(0)
}

/// Text built up in a fixed buffer; bytes past its end are dropped.
struct Text<'a> {
    buffer: &'a mut [u8; DIGITS],
    len: usize,
}

impl Text<'_> {
    fn push(&mut self, byte: u8) {
        if let Some(slot) = self.buffer.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    /// `e+05`, `E-123`: the exponent of `%e`, at least two digits.
    fn push_exponent(&mut self, exponent: i32, upper: bool) {
        self.push(if upper { b'E' } else { b'e' });
        self.push(if exponent < 0 { b'-' } else { b'+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude >= 100 {
            self.push(b'0' + (magnitude / 100 % 10) as u8);
        }
        self.push(b'0' + (magnitude / 10 % 10) as u8);
        self.push(b'0' + (magnitude % 10) as u8);
    }

    /// `%g` without `#`: drops trailing zeros of the fraction that starts at `point`
    /// (the `.`), and the point if none remain.
    fn strip_zeros(&mut self, point: usize) {
        if self.len <= point {
            return;
        }
        while self.len > point + 1 && self.buffer[self.len - 1] == b'0' {
            self.len -= 1;
        }
        if self.len == point + 1 {
            self.len = point;
        }
    }
}

/// A finite, non-negative `value` in `%f`, `%e` or `%g` style (`style` lowercase),
/// into `buffer`. Returns the text, without sign.
fn float(buffer: &mut [u8; DIGITS], value: f64, style: u8, upper: bool, spec: Spec) -> &[u8] {
    let precision = spec.precision.unwrap_or(6).min(MAX_PRECISION) as i32;
    let (digits, exponent) = decimal(value);
    let style = if style == b'f' && exponent > MAX_FIXED_EXPONENT { b'e' } else { style };
    let (style, precision, strip) = if style == b'g' {
        let significant = precision.max(1);
        let (_, rounded_exponent) = round_digits(digits, exponent, significant);
        let x = if value == 0.0 { 0 } else { rounded_exponent - 1 };
        if x < -4 || x >= significant {
            (b'e', significant - 1, !spec.alternate)
        } else {
            (b'f', significant - 1 - x, !spec.alternate)
        }
    } else {
        (style, precision, false)
    };
    let mut text = Text { buffer, len: 0 };
    let (digits, exponent, first_fraction) = if style == b'f' {
        let (digits, exponent) = round_digits(digits, exponent, exponent + precision);
        if exponent <= 0 {
            text.push(b'0');
        }
        for index in 0..exponent.max(0) {
            text.push(digit_at(&digits, index));
        }
        (digits, exponent, exponent)
    } else {
        let (digits, exponent) = round_digits(digits, exponent, precision + 1);
        text.push(digit_at(&digits, 0));
        (digits, exponent, 1)
    };
    let point = text.len;
    if precision > 0 || spec.alternate {
        text.push(b'.');
    }
    for index in first_fraction..first_fraction + precision {
        text.push(digit_at(&digits, index));
    }
    if strip {
        text.strip_zeros(point);
    }
    if style == b'e' {
        text.push_exponent(if value == 0.0 { 0 } else { exponent - 1 }, upper);
    }
    let len = text.len;
    &buffer[..len]
}

/// C `int printf(const char *format, ...)`: formats into the stdout ring; returns the
/// number of bytes produced.
///
/// # Safety
/// `format` is a NUL-terminated format string and the arguments match it, as C
/// requires.
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn printf(format_string: *const core::ffi::c_char, mut args: ...) -> core::ffi::c_int {
    struct Variadic<F: FnMut(ArgKind) -> u64>(F);
    impl<F: FnMut(ArgKind) -> u64> ArgSource for Variadic<F> {
        fn next(&mut self, kind: ArgKind) -> u64 {
            (self.0)(kind)
        }
    }
    // SAFETY: each conversion reads the argument type C's promotions give it (the
    // caller's contract makes the arguments match the format).
    let mut source = Variadic(|kind| unsafe {
        match kind {
            ArgKind::Int => args.arg::<i32>() as i64 as u64,
            ArgKind::LongLong => args.arg::<i64>() as u64,
            ArgKind::Double => args.arg::<f64>().to_bits(),
        }
    });
    // SAFETY: NUL-terminated (contract).
    let text = unsafe { core::ffi::CStr::from_ptr(format_string) }.to_bytes();
    format(text, &mut source, &mut super::write_stdout) as core::ffi::c_int
}

/// C ABI `int neuron_printf_packed(const char *format, const uint64_t *words, uint32_t
/// count)`: `printf` with its arguments already in an array, one 64-bit word each
/// (integers and pointers sign- or zero-extended, `float` and `double` as a double's
/// bits). What C++ kernels' `printf` calls (`<stdio.h>` packs the arguments with a
/// variadic template): a C variadic callee built by LLVM 22 for Xtensa reads its
/// arguments one register late (docs/toolchain.md), a caller packing them does not
/// depend on that. Missing words read as 0.
///
/// # Safety
/// `format` is a NUL-terminated format string; `words` is valid for `count` words (or
/// null with `count` 0); the words match the format, as `printf`'s arguments must.
#[cfg_attr(target_os = "none", unsafe(no_mangle))]
pub unsafe extern "C" fn neuron_printf_packed(
    format_string: *const core::ffi::c_char,
    words: *const u64,
    count: u32,
) -> core::ffi::c_int {
    let words = if words.is_null() {
        &[][..]
    } else {
        // SAFETY: valid for `count` words (contract).
        unsafe { core::slice::from_raw_parts(words, count as usize) }
    };
    // SAFETY: NUL-terminated (contract).
    let text = unsafe { core::ffi::CStr::from_ptr(format_string) }.to_bytes();
    format(text, &mut words.iter(), &mut super::write_stdout) as core::ffi::c_int
}

/// C `int puts(const char *text)`: the text and a newline; returns a non-negative value.
///
/// # Safety
/// `text` is NUL-terminated.
#[cfg_attr(target_os = "none", unsafe(no_mangle))]
pub unsafe extern "C" fn puts(text: *const core::ffi::c_char) -> core::ffi::c_int {
    // SAFETY: NUL-terminated (contract).
    let bytes = unsafe { core::ffi::CStr::from_ptr(text) }.to_bytes();
    super::write_stdout(bytes);
    super::write_stdout(b"\n");
    1
}

/// C `int putchar(int c)`: one byte; returns it.
#[cfg_attr(target_os = "none", unsafe(no_mangle))]
pub extern "C" fn putchar(c: core::ffi::c_int) -> core::ffi::c_int {
    super::write_stdout(&[c as u8]);
    c & 0xFF
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    fn f(value: f64) -> u64 {
        value.to_bits()
    }

    fn printf(fmt: &str, args: &[u64]) -> String {
        let mut text = Vec::new();
        let n = format(fmt.as_bytes(), &mut args.iter(), &mut |b: &[u8]| text.extend_from_slice(b));
        assert_eq!(n, text.len());
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn integers_as_c_prints_them() {
        let minus_one = -1i64 as u64;
        assert_eq!(printf("%d %i %u", &[42, minus_one, minus_one]), "42 -1 4294967295");
        assert_eq!(printf("%lld %llu", &[i64::MIN as u64, u64::MAX]), "-9223372036854775808 18446744073709551615");
        assert_eq!(printf("[%5d][%-5d][%05d][%+d][% d]", &[42, 42, minus_one, 7, 7]), "[   42][42   ][-0001][+7][ 7]");
        assert_eq!(printf("%x %X %#x %o %#o %p", &[255, 255, 255, 8, 8, 0x1000]), "ff FF 0xff 10 010 0x1000");
        assert_eq!(printf("[%.3d][%.0d][%*d][%-*d]", &[5, 0, 4, 9, 3, 9]), "[005][][   9][9  ]");
        assert_eq!(printf("%hhd %zu %ld", &[300, 7, minus_one]), "300 7 -1", "promoted ints are printed whole");
    }

    #[test]
    fn strings_and_characters() {
        let text = c"hello";
        assert_eq!(
            printf(
                "%s|%.2s|%7s|%-7s|%c%%",
                &[text.as_ptr() as u64, text.as_ptr() as u64, text.as_ptr() as u64, text.as_ptr() as u64, b'!' as u64]
            ),
            "hello|he|  hello|hello  |!%"
        );
        assert_eq!(printf("%s", &[0]), "(null)");
        assert_eq!(printf("100%", &[]), "100", "a lone % at the end prints nothing");
        assert_eq!(printf("%q", &[]), "%q");
    }

    #[test]
    fn floats_in_f_e_and_g_styles() {
        assert_eq!(printf("%f", &[f(-1.0)]), "-1.000000");
        assert_eq!(
            printf("Assigning element %d to a value of %f", &[3, f(-4.0)]),
            "Assigning element 3 to a value of -4.000000"
        );
        assert_eq!(printf("%.2f %.0f %.1f %8.3f", &[f(3.14659), f(2.6), f(0.05), f(-1.5)]), "3.15 3 0.1   -1.500");
        assert_eq!(printf("%f", &[f(123456789.125)]), "123456789.125000");
        assert_eq!(printf("%.3f", &[f(0.0005)]), "0.001");
        assert_eq!(printf("%.1f", &[f(9.96)]), "10.0");
        assert_eq!(printf("%e %E %.2e", &[f(12345.678), f(0.00012), f(0.0)]), "1.234568e+04 1.200000E-04 0.00e+00");
        assert_eq!(
            printf("%g %g %g %g %g", &[f(100000.0), f(1e6), f(0.0001), f(1e-5), f(1.5)]),
            "100000 1e+06 0.0001 1e-05 1.5"
        );
        assert_eq!(
            printf("%f %F %f %+.1f", &[f(f64::NAN), f(f64::INFINITY), f(f64::NEG_INFINITY), f(0.75)]),
            "nan INF -inf +0.8"
        );
        assert_eq!(printf("%010.3f|%-8.1f|", &[f(-3.5), f(2.0)]), "-00003.500|2.0     |");
        assert_eq!(printf("%.0e %g", &[f(1e300), f(1e-300)]), "1e+300 1e-300");
    }

    #[test]
    fn packed_printf_formats_its_words() {
        let ring = super::super::stdout_ring();
        // SAFETY: the header is the ring's first field; this thread is its only user.
        let before = unsafe { ring.as_ptr().cast::<super::super::RingHeader>().read() }.write_count;
        let words = [6u64, 50, 0.25f64.to_bits()];
        // SAFETY: a NUL-terminated format and three words that match it.
        let n = unsafe { neuron_printf_packed(c"%d rows of %d: %.2f\n".as_ptr(), words.as_ptr(), 3) };
        assert_eq!(n as usize, "6 rows of 50: 0.25\n".len());
        // SAFETY: as above.
        let after = unsafe { ring.as_ptr().cast::<super::super::RingHeader>().read() }.write_count;
        assert_eq!((after - before) as usize, n as usize);
    }

    #[test]
    fn puts_and_putchar_append_to_the_ring() {
        let ring = super::super::stdout_ring();
        // SAFETY: the header is the ring's first field; this thread is its only user.
        let before = unsafe { ring.as_ptr().cast::<super::super::RingHeader>().read() }.write_count;
        assert_eq!(putchar(i32::from(b'>')), i32::from(b'>'));
        // SAFETY: NUL-terminated.
        assert!(unsafe { puts(c"ok".as_ptr()) } >= 0);
        // SAFETY: as above.
        let after = unsafe { ring.as_ptr().cast::<super::super::RingHeader>().read() }.write_count;
        assert_eq!(after - before, 4);
    }
}
