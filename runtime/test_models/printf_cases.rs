//! Generated `printf` cases, one conversion and one argument each, for comparing the
//! runtime's formatter with glibc's `snprintf`: on the host (`start_exit::printf`'s unit
//! tests) and on the device (`examples/c_libc`, the same cases through C's `snprintf`).
//!
//! Every conversion, flag, width, precision and length modifier C defines for one
//! argument, without the combinations C leaves undefined (`#` with `%d`, `0` with `%s`,
//! a precision with `%c`). `l`, `z` and `t` values fit 31 bits, so the device (32-bit
//! `long`) and a 64-bit host print the same. Doubles mix random bit patterns, short
//! decimals (0.95, 2.5, ...), exact binary ties for every precision and the special
//! values; [`TIES`] lists the cases a bug report found printed wrong.

use core::ffi::{c_char, c_int, c_long, c_longlong};
use std::ffi::CString;
use std::string::{String, ToString};
use std::vec::Vec;

unsafe extern "C" {
    /// glibc's.
    #[link_name = "snprintf"]
    fn glibc_snprintf(buffer: *mut c_char, size: usize, format: *const c_char, ...) -> c_int;
}

/// What glibc's `snprintf` prints for `case`, in full.
pub fn glibc(case: &Case) -> String {
    let format = CString::new(case.format.as_str()).expect("formats have no NUL");
    let mut buffer = [0u8; 1200];
    let (pointer, size) = (buffer.as_mut_ptr().cast::<c_char>(), buffer.len());
    // SAFETY: one argument of the type the format's conversion reads.
    let n = unsafe {
        match &case.arg {
            CaseArg::Int(v) => glibc_snprintf(pointer, size, format.as_ptr(), *v as c_int),
            CaseArg::Long(v) => glibc_snprintf(pointer, size, format.as_ptr(), *v as c_long),
            CaseArg::LongLong(v) => glibc_snprintf(pointer, size, format.as_ptr(), *v as c_longlong),
            CaseArg::Double(v) => glibc_snprintf(pointer, size, format.as_ptr(), *v),
            CaseArg::Str(s) => {
                let s = CString::new(s.as_str()).expect("strings have no NUL");
                glibc_snprintf(pointer, size, format.as_ptr(), s.as_ptr())
            }
        }
    };
    assert!((n as usize) < size, "{case:?} is longer than the buffer");
    String::from_utf8(buffer[..n as usize].to_vec()).expect("ASCII")
}

/// The argument of a case, as C receives it.
#[derive(Debug, Clone, PartialEq)]
pub enum CaseArg {
    /// `int` (also `char` and `short` through their promotion).
    Int(i32),
    /// `long`, `size_t` or `ptrdiff_t` (non-negative and below 2^31).
    Long(i64),
    /// `long long` or `intmax_t`.
    LongLong(i64),
    /// `double`.
    Double(f64),
    /// A string for `%s`.
    Str(String),
}

/// One case: a format with one conversion, and its argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The format, e.g. `[%-+8.3f]`.
    pub format: String,
    /// Its argument.
    pub arg: CaseArg,
}

/// Formats a bug report found printed wrong (halfway values, long exact expansions),
/// with their arguments.
pub const TIES: &[(&str, f64)] = &[
    ("%.0f", 0.5),
    ("%.0f", 2.5),
    ("%.0f", -0.5),
    ("%.0f", 1.5),
    ("%.2f", 0.125),
    ("%.1f", 0.95),
    ("%g", 99999.95),
    ("%.17g", 0.1),
    ("%.17g", 1.0 / 3.0),
    ("%.17g", 2.2250738585072014e-308),
    ("%.3e", 1.0005),
    ("%.20f", 0.1),
    ("%f", 1e300),
    ("%.30e", 5e-324),
    ("%a", 1.0),
    ("%.0a", 1.5),
    ("%.1a", 0.1),
];

/// A small seeded generator (xorshift64*): the same cases on every run and machine.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; 0 is replaced).
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..bound`.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// `count` cases from `seed`; `max_digits` bounds the widths and precisions (the device
/// test keeps its outputs short).
pub fn cases(seed: u64, count: usize, max_digits: u64) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    (0..count).map(|_| case(&mut rng, max_digits)).collect()
}

fn case(rng: &mut Rng, max_digits: u64) -> Case {
    const CONVERSIONS: &[u8] = b"diuoxXcsfFeEgGaA";
    let conversion = CONVERSIONS[rng.below(CONVERSIONS.len() as u64) as usize];
    let integer = b"diuoxX".contains(&conversion);
    let signed = b"di".contains(&conversion);
    let floating = !integer && !b"cs".contains(&conversion);
    let mut format = String::from("[%");
    for flag in ['-', '+', ' ', '#', '0'] {
        let allowed = match flag {
            '+' | ' ' => signed || floating,
            '#' => b"oxX".contains(&conversion) || floating,
            '0' => integer || floating,
            _ => true,
        };
        if allowed && rng.chance(20) {
            format.push(flag);
        }
    }
    if rng.chance(50) {
        format.push_str(&rng.below(max_digits + 1).to_string());
    }
    if conversion != b'c' && rng.chance(60) {
        format.push('.');
        if rng.chance(90) {
            format.push_str(&rng.below(max_digits + 1).to_string());
        }
    }
    let arg = if integer {
        let (length, arg) = match rng.below(6) {
            0 => ("hh", CaseArg::Int(random_int(rng) as i32)),
            1 => ("h", CaseArg::Int(random_int(rng) as i32)),
            2 => ("", CaseArg::Int(random_int(rng) as i32)),
            3 => (["l", "z", "t"][rng.below(3) as usize], CaseArg::Long(random_int(rng) & 0x7fff_ffff)),
            4 => ("ll", CaseArg::LongLong(random_int(rng))),
            _ => ("j", CaseArg::LongLong(random_int(rng))),
        };
        format.push_str(length);
        arg
    } else if conversion == b'c' {
        CaseArg::Int(i32::from(b' ') + rng.below(95) as i32)
    } else if conversion == b's' {
        let len = rng.below(12) as usize;
        CaseArg::Str((0..len).map(|_| char::from(b'a' + rng.below(26) as u8)).collect())
    } else {
        CaseArg::Double(random_double(rng))
    };
    format.push(char::from(conversion));
    format.push(']');
    Case { format, arg }
}

/// Integers of every size, with the edges often.
fn random_int(rng: &mut Rng) -> i64 {
    match rng.below(5) {
        0 => [
            0,
            1,
            -1,
            127,
            128,
            255,
            256,
            300,
            -129,
            32767,
            65536,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            i64::MAX,
            i64::MIN,
        ][rng.below(15) as usize],
        1 => rng.below(1000) as i64 - 500,
        2 => rng.next_u64() as i32 as i64,
        _ => rng.next_u64() as i64 >> rng.below(64),
    }
}

/// Doubles: random bit patterns, short decimals, exact binary ties, special values.
fn random_double(rng: &mut Rng) -> f64 {
    let sign = if rng.chance(50) { -1.0 } else { 1.0 };
    sign * match rng.below(6) {
        0 => f64::from_bits(rng.next_u64() >> 1),
        // Short decimals, the values that sit just off a rounding midpoint.
        1 => (rng.below(100_000) as f64) / [1.0, 10.0, 100.0, 1000.0, 1e4][rng.below(5) as usize],
        // Exact ties: an odd multiple of 2^-k.
        2 => (2 * rng.below(1000) + 1) as f64 / (1u64 << rng.below(12)) as f64,
        3 => [0.0, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE, 5e-324, f64::MAX, 1e15, 1e16, 1e17, 0.1, 1e-5]
            [rng.below(11) as usize],
        // Powers of ten and neighbours: %g's style switch and carries (9.9995).
        4 => 10f64.powi(rng.below(40) as i32 - 20) * (1.0 - (rng.below(3) as f64) * 5e-5),
        _ => f64::from_bits(0x3f00_0000_0000_0000 + (rng.next_u64() >> 14)),
    }
}
