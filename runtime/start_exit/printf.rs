//! C's formatted output: the formatter ([`format`]) and `printf`, `vprintf`, `sprintf`,
//! `snprintf`, `vsprintf`, `vsnprintf`, `puts` and `putchar`, for C and C++ kernels (the
//! AWS documentation's recommended way to debug one).
//!
//! [`format`] reads its arguments from any [`ArgSource`], so host tests feed it values
//! and compare it with glibc's `snprintf`. On the device the C variadic entry points are
//! assembly (`runtime/arch/xtensa/variadic.S`): they store the argument registers into a
//! `va_list` the way the Xtensa ABI lays it out, which [`VaList`] walks. LLVM 22's own
//! `va_arg` reads one register late (docs/toolchain.md, defect 6), so neither clang's
//! nor rustc's variadic functions can be used here. On the host tier they are C whose
//! `va_arg` is clang's for x86-64 (`runtime/arch/host_tier/variadic.c`), reading each
//! argument for this formatter through a callback (`printf/host_tier.rs`).
//!
//! Conversions: `d i u o x X c s p n f F e E g G a A %`, flags `- 0 + space #`, width and
//! precision (also `*`), length modifiers `hh h l ll j z t L` with the target's C sizes
//! (on the device `long`, `size_t`, `ptrdiff_t` and pointers are 32 bits, `intmax_t` and
//! `long double` 64). Floats print their exact decimal value rounded to nearest, ties to
//! even, at any precision, as glibc does (`printf/decimal.rs`). Not supported: wide
//! characters (`%lc` prints one byte, `%ls` is printed as written), locales, `%m`,
//! `%Lf` of a host's 80-bit long double (the device's is a double).

mod decimal;
// The host tier's variadic entries (C, `runtime/arch/host_tier/variadic.c`) call it.
#[cfg(all(c_abi, not(target_os = "none")))]
mod host_tier;
mod va_list;

use decimal::{Digits, Rounded};
pub use va_list::{VaArgs, VaList};

/// The argument a conversion reads, after C's default promotions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// `int` (also `char` and `short`, promoted; `%c`).
    Int,
    /// `long`: also `size_t`, `ptrdiff_t` and pointers, which have its width on the
    /// device (32 bits) and on 64-bit Linux hosts (64 bits).
    Long,
    /// `long long` and `intmax_t`.
    LongLong,
    /// `double` (also `float`, promoted, and `long double`, which is a double on the
    /// device).
    Double,
}

/// Where the formatter takes its arguments from, in order.
pub trait ArgSource {
    /// The next argument of `kind`, as 64 bits: an integer or pointer as its bits
    /// (higher bits unspecified beyond its C width: the formatter truncates), a double
    /// as its bit pattern.
    fn next(&mut self, kind: ArgKind) -> u64;
}

/// A host-side [`ArgSource`], and C++'s packed arguments: one 64-bit word each, as the
/// device would pass them. Missing words read as 0.
impl ArgSource for core::slice::Iter<'_, u64> {
    fn next(&mut self, _kind: ArgKind) -> u64 {
        Iterator::next(self).copied().unwrap_or(0)
    }
}

/// The bits of C's `long` (and of `size_t`, `ptrdiff_t` and pointers) on this target.
const LONG_BITS: u32 = core::ffi::c_long::BITS;

/// A length modifier: which integer type a conversion's argument has.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Length {
    Char,
    Short,
    Int,
    Long,
    LongLong,
}

impl Length {
    fn bits(self) -> u32 {
        match self {
            Length::Char => 8,
            Length::Short => 16,
            Length::Int => 32,
            Length::Long => LONG_BITS,
            Length::LongLong => 64,
        }
    }

    fn kind(self) -> ArgKind {
        match self {
            Length::Long => ArgKind::Long,
            Length::LongLong => ArgKind::LongLong,
            _ => ArgKind::Int,
        }
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

/// Output in small pieces: the formatter hands bytes one at a time to a [`Chunks`], which
/// passes them on 32 at a time.
struct Chunks<'a> {
    out: &'a mut dyn FnMut(&[u8]),
    buffer: [u8; 32],
    len: usize,
    /// Bytes passed on so far.
    passed: usize,
}

impl Chunks<'_> {
    fn push(&mut self, byte: u8) {
        if self.len == self.buffer.len() {
            self.flush();
        }
        self.buffer[self.len] = byte;
        self.len += 1;
    }

    fn extend(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.push(b));
    }

    fn repeat(&mut self, byte: u8, count: usize) {
        (0..count).for_each(|_| self.push(byte));
    }

    fn flush(&mut self) {
        if self.len > 0 {
            (self.out)(&self.buffer[..self.len]);
            self.passed += self.len;
            self.len = 0;
        }
    }
}

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
    format_dyn(fmt, args, out)
}

/// [`format`], compiled once: every caller shares one copy (printf's code is about its
/// size, not its speed).
#[cfg_attr(target_os = "none", optimize(size))]
fn format_dyn(fmt: &[u8], args: &mut dyn ArgSource, out: &mut dyn FnMut(&[u8])) -> usize {
    let mut text = Chunks { out, buffer: [0; 32], len: 0, passed: 0 };
    let mut rest = fmt;
    while !rest.is_empty() {
        let literal = rest.iter().position(|&b| b == b'%').unwrap_or(rest.len());
        text.extend(&rest[..literal]);
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
        let (length, tail) = length_modifier(rest);
        rest = tail;
        let Some((&conversion, tail)) = rest.split_first() else {
            break;
        };
        rest = tail;
        match conversion {
            b'd' | b'i' => {
                let bits = length.bits();
                let value = (args.next(length.kind()) << (64 - bits)) as i64 >> (64 - bits);
                let sign = sign(value < 0, spec);
                integer(&mut text, spec, sign, b"", value.unsigned_abs(), 10, false);
            }
            b'u' | b'o' | b'x' | b'X' => {
                let bits = length.bits();
                let value = args.next(length.kind()) << (64 - bits) >> (64 - bits);
                let (base, upper) = match conversion {
                    b'u' => (10, false),
                    b'o' => (8, false),
                    b'X' => (16, true),
                    _ => (16, false),
                };
                let prefix: &[u8] = match conversion {
                    b'x' if spec.alternate && value != 0 => b"0x",
                    b'X' if spec.alternate && value != 0 => b"0X",
                    _ => b"",
                };
                integer(&mut text, spec, b"", prefix, value, base, upper);
            }
            b'p' => {
                let value = args.next(ArgKind::Long) << (64 - LONG_BITS) >> (64 - LONG_BITS);
                if value == 0 {
                    // glibc's text for a null pointer.
                    pad(&mut text, Spec { zero: false, ..spec }, b"", b"", b"(nil)".len(), |t| t.extend(b"(nil)"));
                } else {
                    let spec = Spec { precision: None, ..spec };
                    integer(&mut text, spec, sign(false, spec), b"0x", value, 16, false);
                }
            }
            b'c' => {
                let byte = args.next(ArgKind::Int) as u8;
                pad(&mut text, Spec { zero: false, ..spec }, b"", b"", 1, |t| t.push(byte));
            }
            b's' if length == Length::Long => {
                // A wide string: not supported (no wide characters), printed as written.
                args.next(ArgKind::Long);
                text.extend(b"%ls");
            }
            b's' => {
                let string = c_string(args.next(ArgKind::Long) as usize, spec.precision);
                pad(&mut text, Spec { zero: false, ..spec }, b"", b"", string.len(), |t| t.extend(string));
            }
            b'n' => {
                let address = args.next(ArgKind::Long) as usize;
                // SAFETY: `%n` takes a pointer to an integer of the length modifier's
                // type: the caller's obligation in C (a null pointer is skipped).
                unsafe { store_count(address, length, text.passed + text.len) };
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                let value = f64::from_bits(args.next(ArgKind::Double));
                float(&mut text, spec, value, conversion);
            }
            b'%' => text.push(b'%'),
            // An unknown conversion is printed as written.
            other => text.extend(&[b'%', other]),
        }
    }
    text.flush();
    text.passed
}

/// `hh h l ll j z t L` (and none): the integer type of the argument.
fn length_modifier(text: &[u8]) -> (Length, &[u8]) {
    let (length, skip) = match text {
        [b'h', b'h', ..] => (Length::Char, 2),
        [b'h', ..] => (Length::Short, 1),
        [b'l', b'l', ..] => (Length::LongLong, 2),
        [b'l' | b'z' | b't', ..] => (Length::Long, 1),
        // glibc reads `%Ld` as `long long`; `%Lf`'s long double is a double on the device.
        [b'j' | b'L', ..] => (Length::LongLong, 1),
        _ => (Length::Int, 0),
    };
    (length, &text[skip..])
}

/// A width or precision: digits, or `*` (the next `int` argument).
fn number<'a>(text: &'a [u8], args: &mut dyn ArgSource) -> (Option<i64>, &'a [u8]) {
    if let Some(rest) = text.strip_prefix(b"*") {
        return (Some(args.next(ArgKind::Int) as i32 as i64), rest);
    }
    let len = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 {
        return (None, text);
    }
    let value = text[..len].iter().fold(0i64, |n, &d| n.saturating_mul(10).saturating_add(i64::from(d - b'0')));
    (Some(value.min(i64::from(i32::MAX))), &text[len..])
}

fn sign(negative: bool, spec: Spec) -> &'static [u8] {
    match (negative, spec.plus, spec.space) {
        (true, _, _) => b"-",
        (false, true, _) => b"+",
        (false, false, true) => b" ",
        _ => b"",
    }
}

/// The string at `address` (up to its NUL, or `precision` bytes, whichever is first), or
/// `(null)` for null, as glibc prints it.
fn c_string<'a>(address: usize, precision: Option<usize>) -> &'a [u8] {
    if address == 0 {
        return if precision.is_some_and(|p| p < 6) { b"" } else { b"(null)" };
    }
    let limit = precision.unwrap_or(usize::MAX);
    // SAFETY: `%s` takes a string NUL-terminated or at least `precision` bytes long: the
    // caller's obligation in C. No byte past the first NUL or the limit is read.
    let len = (0..limit).take_while(|&i| unsafe { *(address as *const u8).add(i) } != 0).count();
    // SAFETY: those `len` bytes were just read.
    unsafe { core::slice::from_raw_parts(address as *const u8, len) }
}

/// Stores `count` where `%n`'s pointer points, with the length modifier's width.
///
/// # Safety
/// `address` is null or valid for a write of that integer type.
unsafe fn store_count(address: usize, length: Length, count: usize) {
    if address == 0 {
        return;
    }
    // SAFETY: valid for the write (contract); C does not require alignment checks here
    // beyond the type's, which the caller's pointer has.
    unsafe {
        match length {
            Length::Char => (address as *mut i8).write_unaligned(count as i8),
            Length::Short => (address as *mut i16).write_unaligned(count as i16),
            Length::Int => (address as *mut i32).write_unaligned(count as i32),
            Length::Long => (address as *mut core::ffi::c_long).write_unaligned(count as core::ffi::c_long),
            Length::LongLong => (address as *mut i64).write_unaligned(count as i64),
        }
    }
}

/// `sign`, `prefix` and a body of `len` bytes written by `body`, padded to the width:
/// zeros between prefix and body for the `0` flag (unless left-justified), spaces
/// otherwise.
#[cfg_attr(target_os = "none", optimize(size))]
fn pad<'a>(
    text: &mut Chunks<'a>,
    spec: Spec,
    sign: &[u8],
    prefix: &[u8],
    len: usize,
    body: impl FnOnce(&mut Chunks<'a>),
) {
    let fill = spec.width.saturating_sub(sign.len() + prefix.len() + len);
    let zero_fill = spec.zero && !spec.left;
    if !spec.left && !zero_fill {
        text.repeat(b' ', fill);
    }
    text.extend(sign);
    text.extend(prefix);
    if zero_fill {
        text.repeat(b'0', fill);
    }
    body(text);
    if spec.left {
        text.repeat(b' ', fill);
    }
}

/// An integer conversion: `value`'s digits in `base`, at least `precision` of them (C: a
/// precision of 0 prints nothing for 0; `#` with `%o` makes the first digit a 0). The `0`
/// flag is ignored when a precision is given.
#[cfg_attr(target_os = "none", optimize(size))]
fn integer(text: &mut Chunks<'_>, spec: Spec, sign: &[u8], prefix: &[u8], value: u64, base: u64, upper: bool) {
    let alphabet: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let mut digits = [0u8; 22]; // u64::MAX in octal
    let mut start = digits.len();
    let mut rest = value;
    while rest != 0 {
        start -= 1;
        digits[start] = alphabet[(rest % base) as usize];
        rest /= base;
    }
    let digits = &digits[start..];
    let mut minimum = spec.precision.unwrap_or(1);
    if base == 8 && spec.alternate && minimum <= digits.len() {
        minimum = digits.len() + 1;
    }
    let zeros = minimum.saturating_sub(digits.len());
    let spec = Spec { zero: spec.zero && spec.precision.is_none(), ..spec };
    pad(text, spec, sign, prefix, zeros + digits.len(), |t| {
        t.repeat(b'0', zeros);
        t.extend(digits);
    });
}

/// A floating-point conversion (`f F e E g G a A`) of `value`.
#[cfg_attr(target_os = "none", optimize(size))]
fn float(text: &mut Chunks<'_>, spec: Spec, value: f64, conversion: u8) {
    // glibc prints a NaN's sign too (`-nan`).
    let negative = value.is_sign_negative();
    let upper = conversion.is_ascii_uppercase();
    let sign = sign(negative, spec);
    if !value.is_finite() {
        let word: &[u8] = match (value.is_nan(), upper) {
            (true, false) => b"nan",
            (true, true) => b"NAN",
            (false, false) => b"inf",
            (false, true) => b"INF",
        };
        return pad(text, Spec { zero: false, ..spec }, sign, b"", word.len(), |t| t.extend(word));
    }
    let value = value.abs();
    match conversion.to_ascii_lowercase() {
        b'a' => hexadecimal(text, spec, sign, value, upper),
        b'f' => fixed(text, spec, sign, value, spec.precision.unwrap_or(6), false),
        b'e' => scientific(text, spec, sign, value, spec.precision.unwrap_or(6), upper, false),
        _ => {
            // %g: the style %e would use an exponent X with precision P: %f with P-1-X
            // decimals when P > X >= -4, else %e with P-1; trailing zeros cut without `#`.
            let significant = spec.precision.unwrap_or(6).max(1);
            let exponent = if value == 0.0 { 0 } else { decimal_exponent(value, significant as u32) };
            let strip = !spec.alternate;
            if exponent < significant as i32 && exponent >= -4 {
                fixed(text, spec, sign, value, (significant as i32 - 1 - exponent) as usize, strip);
            } else {
                scientific(text, spec, sign, value, significant - 1, upper, strip);
            }
        }
    }
}

/// The decimal exponent of `value` (> 0) once rounded to `significant` digits.
fn decimal_exponent(value: f64, significant: u32) -> i32 {
    let mut digits = Digits::new(value);
    let zeros = digits.skip_leading_zeros();
    let exponent = leading_exponent(&digits, zeros);
    exponent + i32::from(Rounded::new(digits, significant).carried_out())
}

/// The exponent of the first significant digit, before rounding.
fn leading_exponent(digits: &Digits, zeros: u32) -> i32 {
    if digits.int_digits() > 0 { digits.int_digits() as i32 - 1 } else { -(zeros as i32) - 1 }
}

/// `%f`: the integer digits, and `precision` decimals (without their trailing zeros
/// and, if none remain, the point, when `strip`: `%g`).
#[cfg_attr(target_os = "none", optimize(size))]
fn fixed(text: &mut Chunks<'_>, spec: Spec, sign: &[u8], value: f64, precision: usize, strip: bool) {
    let digits = Digits::new(value);
    let int_digits = digits.int_digits() as usize;
    let rounded = Rounded::new(digits.clone(), (int_digits + precision) as u32);
    let int_len = int_digits + usize::from(rounded.carried_out());
    let decimals = if strip {
        (rounded.len_without_trailing_zeros() as usize).saturating_sub(int_len).min(precision)
    } else {
        precision
    };
    let point = decimals > 0 || spec.alternate;
    let len = int_len.max(1) + usize::from(point) + decimals;
    pad(text, spec, sign, b"", len, |t| {
        let mut rounded_digits = rounded.digits(digits);
        if int_len == 0 {
            t.push(b'0');
        }
        for _ in 0..int_len {
            t.push(rounded_digits.next().unwrap_or(b'0'));
        }
        if point {
            t.push(b'.');
        }
        for _ in 0..decimals {
            t.push(rounded_digits.next().unwrap_or(b'0'));
        }
    });
}

/// `%e`: one digit, `precision` decimals (cut as in [`fixed`] when `strip`), and the
/// exponent, at least two digits.
#[cfg_attr(target_os = "none", optimize(size))]
fn scientific(text: &mut Chunks<'_>, spec: Spec, sign: &[u8], value: f64, precision: usize, upper: bool, strip: bool) {
    let mut digits = Digits::new(value);
    let (exponent, rounded) = if value == 0.0 {
        (0, Rounded::new(digits.clone(), precision as u32 + 1))
    } else {
        let zeros = digits.skip_leading_zeros();
        let rounded = Rounded::new(digits.clone(), precision as u32 + 1);
        (leading_exponent(&digits, zeros) + i32::from(rounded.carried_out()), rounded)
    };
    let decimals = if strip {
        (rounded.len_without_trailing_zeros() as usize).saturating_sub(1).min(precision)
    } else {
        precision
    };
    let point = decimals > 0 || spec.alternate;
    let magnitude = exponent.unsigned_abs();
    let exponent_digits = if magnitude >= 100 { 3 } else { 2 };
    let len = 1 + usize::from(point) + decimals + 2 + exponent_digits;
    pad(text, spec, sign, b"", len, |t| {
        let mut rounded_digits = rounded.digits(digits);
        t.push(rounded_digits.next().unwrap_or(b'0'));
        if point {
            t.push(b'.');
        }
        for _ in 0..decimals {
            t.push(rounded_digits.next().unwrap_or(b'0'));
        }
        t.push(if upper { b'E' } else { b'e' });
        t.push(if exponent < 0 { b'-' } else { b'+' });
        if magnitude >= 100 {
            t.push(b'0' + (magnitude / 100) as u8);
        }
        t.push(b'0' + (magnitude / 10 % 10) as u8);
        t.push(b'0' + (magnitude % 10) as u8);
    });
}

/// `%a`: `0x1.8p+1`, glibc's form: the leading digit 1 for normal values and 0 for
/// subnormal ones (exponent -1022), the 52-bit fraction in hex, all 13 digits' worth
/// without trailing zeros when no precision is given, else rounded to nearest, ties to
/// even (a carry into the leading digit makes it 2, as glibc prints).
#[cfg_attr(target_os = "none", optimize(size))]
fn hexadecimal(text: &mut Chunks<'_>, spec: Spec, sign: &[u8], value: f64, upper: bool) {
    let bits = value.to_bits();
    let biased = (bits >> 52) as i32;
    let mut fraction = bits & ((1 << 52) - 1);
    let mut lead = u64::from(biased != 0);
    let exponent = if value == 0.0 {
        0
    } else if biased == 0 {
        -1022
    } else {
        biased - 1023
    };
    let decimals = match spec.precision {
        Some(precision) => {
            if precision < 13 {
                let drop = 4 * (13 - precision as u32);
                let kept = (lead << 52 | fraction) >> drop;
                let rest = fraction & ((1 << drop) - 1);
                let half = 1 << (drop - 1);
                let up = rest > half || (rest == half && kept & 1 == 1);
                let rounded = kept + u64::from(up);
                lead = rounded >> (52 - drop);
                fraction = (rounded & ((1 << (52 - drop)) - 1)) << drop;
            }
            precision
        }
        None => 13 - (fraction.trailing_zeros() / 4).min(13) as usize,
    };
    let alphabet: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let point = decimals > 0 || spec.alternate;
    let magnitude = exponent.unsigned_abs();
    let exponent_digits = POWERS.iter().take_while(|&&p| p <= magnitude).count().max(1);
    let len = 1 + usize::from(point) + decimals + 2 + exponent_digits;
    let prefix: &[u8] = if upper { b"0X" } else { b"0x" };
    pad(text, spec, sign, prefix, len, |t| {
        t.push(alphabet[lead as usize]);
        if point {
            t.push(b'.');
        }
        for index in 0..decimals {
            let nibble = if index < 13 { (fraction >> (48 - 4 * index)) & 0xf } else { 0 };
            t.push(alphabet[nibble as usize]);
        }
        t.push(if upper { b'P' } else { b'p' });
        t.push(if exponent < 0 { b'-' } else { b'+' });
        for &power in POWERS[..exponent_digits].iter().rev() {
            t.push(b'0' + (magnitude / power % 10) as u8);
        }
    });
}

/// Powers of ten for `%a`'s exponent (at most 1,074: four digits).
const POWERS: [u32; 4] = [1, 10, 100, 1000];

/// Formats into `size` bytes at `buffer`, as C's `snprintf`: at most `size - 1` bytes
/// and a NUL (nothing when `size` is 0). Returns the length of the whole text, which
/// may be more than was stored.
///
/// # Safety
/// `buffer` is valid for `size` bytes (any pointer when `size` is 0); `fmt`'s pointer
/// conversions (`%s`, `%n`) get valid pointers from `args`.
pub unsafe fn format_into(buffer: *mut u8, size: usize, fmt: &[u8], args: &mut impl ArgSource) -> usize {
    let room = size.saturating_sub(1);
    let mut stored = 0;
    let len = format(fmt, args, &mut |bytes: &[u8]| {
        let n = bytes.len().min(room - stored);
        // SAFETY: `stored + n <= size - 1`, within the buffer (contract).
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.add(stored), n) };
        stored += n;
    });
    if size > 0 {
        // SAFETY: `stored <= size - 1`.
        unsafe { buffer.add(stored).write(0) };
    }
    len
}

/// C's `int` for a length: C asks for a negative value when it does not fit.
#[cfg(c_abi)]
fn c_int_length(len: usize) -> core::ffi::c_int {
    core::ffi::c_int::try_from(len).unwrap_or(-1)
}

/// `vprintf` with the Xtensa `va_list` (what the assembly `printf` and `vprintf` call).
///
/// # Safety
/// `format_string` is NUL-terminated; `list` describes arguments that match it, as
/// `printf`'s must.
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __neuron_vprintf(
    format_string: *const core::ffi::c_char,
    list: *mut VaList,
) -> core::ffi::c_int {
    // SAFETY: NUL-terminated; `list` is the caller's `va_list` (contract).
    let (text, mut args) = unsafe { (core::ffi::CStr::from_ptr(format_string).to_bytes(), VaArgs::new(&mut *list)) };
    c_int_length(format(text, &mut args, &mut super::write_stdout))
}

/// `vsnprintf` with the Xtensa `va_list` (what the assembly `sprintf`, `snprintf`,
/// `vsprintf` and `vsnprintf` call; `sprintf`'s size is `SIZE_MAX`).
///
/// # Safety
/// As [`format_into`]; `format_string` is NUL-terminated; `list` describes arguments that
/// match it.
#[cfg(target_os = "none")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __neuron_vsnprintf(
    buffer: *mut core::ffi::c_char,
    size: usize,
    format_string: *const core::ffi::c_char,
    list: *mut VaList,
) -> core::ffi::c_int {
    // SAFETY: as the contract says.
    unsafe {
        let text = core::ffi::CStr::from_ptr(format_string).to_bytes();
        c_int_length(format_into(buffer.cast(), size, text, &mut VaArgs::new(&mut *list)))
    }
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
#[cfg_attr(c_abi, unsafe(no_mangle))]
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
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn puts(text: *const core::ffi::c_char) -> core::ffi::c_int {
    // SAFETY: NUL-terminated (contract).
    let bytes = unsafe { core::ffi::CStr::from_ptr(text) }.to_bytes();
    super::write_stdout(bytes);
    super::write_stdout(b"\n");
    1
}

/// C `int putchar(int c)`: one byte; returns it.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn putchar(c: core::ffi::c_int) -> core::ffi::c_int {
    super::write_stdout(&[c as u8]);
    c & 0xFF
}

#[cfg(test)]
mod tests;
