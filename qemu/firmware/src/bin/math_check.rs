//! The device side of `qemu/tests/libm.rs`: every `<math.h>` function of the runtime,
//! called through its C symbol (the one a C kernel links), on inputs and glibc's results
//! that the host placed in memory at [`TABLE`]; the distance of each result from glibc's
//! is measured here, on the device.
//!
//! The table's layout is `neuroncustomop_wire::math`, the model the host's side shares.
//!
//! Prints per function `MATH <name> n=<cases> max_ulp=<ulps> special=<count>
//! worst=<case's words>` and, for its first mismatches of a special value,
//! `MATHSPECIAL <name> case=<words> got=<words>`; then `MATH_DONE sections=<n>`.
//! A special-value mismatch: one result NaN and the other not, one infinite and the
//! other finite, zeros of different sign, or a different `int` result (compared where
//! C defines it: the float result finite; `remquo`'s low three bits and sign).
#![no_std]
#![no_main]

use core::ffi::c_int;
use neuroncustomop_firmware::println;
use neuroncustomop_wire::math::{Kind, MAGIC, NAME_WORDS, name_of};

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

/// Where the host's loader places the table: the job tensor area, unused by a firmware
/// boot (qemu/machine/src/job.rs, `TENSOR_AREA`).
const TABLE: usize = 0x6200_0000;
/// Special-value mismatches printed per function before only counting (the host
/// classifies each printed one; more than this many fail the test).
const REPORTED: u32 = 64;

/// The distance of a result from glibc's: ulps, or a special-value mismatch.
enum Distance {
    Ulps(u64),
    Special,
}

/// Bits as a monotonic integer: -0 and +0 both 0, each next float one more.
fn ordered(bits: u64, sign: u64) -> i64 {
    let magnitude = (bits & !sign) as i64;
    if bits & sign != 0 { -magnitude } else { magnitude }
}

/// The distance between two floats given as bits, with their format's sign and
/// exponent masks.
fn distance(got: u64, want: u64, sign: u64, exponent: u64) -> Distance {
    let mantissa = (sign - 1) & !exponent;
    let nan = |b: u64| b & exponent == exponent && b & mantissa != 0;
    let inf = |b: u64| b & !sign == exponent;
    let zero = |b: u64| b & !sign == 0;
    if nan(got) || nan(want) {
        return if nan(got) && nan(want) { Distance::Ulps(0) } else { Distance::Special };
    }
    if inf(got) || inf(want) || zero(got) && zero(want) {
        return if got == want { Distance::Ulps(0) } else { Distance::Special };
    }
    Distance::Ulps(ordered(got, sign).abs_diff(ordered(want, sign)))
}

fn distance32(got: f32, want: u32) -> Distance {
    distance(u64::from(got.to_bits()), u64::from(want), 1 << 31, 0x7f80_0000)
}

fn distance64(got: f64, want: u64) -> Distance {
    distance(got.to_bits(), want, 1 << 63, 0x7ff0_0000_0000_0000)
}

unsafe extern "C" {
    fn frexpf(x: f32, exp: *mut c_int) -> f32;
    fn frexp(x: f64, exp: *mut c_int) -> f64;
    fn lgammaf_r(x: f32, sign: *mut c_int) -> f32;
    fn lgamma_r(x: f64, sign: *mut c_int) -> f64;
    fn modff(x: f32, integral: *mut f32) -> f32;
    fn modf(x: f64, integral: *mut f64) -> f64;
    fn remquof(x: f32, y: f32, quo: *mut c_int) -> f32;
    fn remquo(x: f64, y: f64, quo: *mut c_int) -> f64;
}

/// One foreign function of a C signature given as a parenthesised list of types.
macro_rules! foreign {
    ($name:ident ($($arg:ty),+) $ret:ty) => {
        fn $name($(_: $arg),+) -> $ret;
    };
}

/// Declares the C symbols of the plain signatures and maps a name to a [`Function`].
macro_rules! functions {
    ($($variant:ident: $($name:ident),+ : fn $args:tt -> $ret:ty;)*) => {
        unsafe extern "C" {
            $($(foreign!($name $args $ret);)+)*
        }

        /// A function of the table, by its C symbol.
        #[derive(Clone, Copy)]
        enum Function {
            $($variant(unsafe extern "C" fn $args -> $ret),)*
            FOutInt(unsafe extern "C" fn(f32, *mut c_int) -> f32),
            DOutInt(unsafe extern "C" fn(f64, *mut c_int) -> f64),
            FOutF(unsafe extern "C" fn(f32, *mut f32) -> f32),
            DOutD(unsafe extern "C" fn(f64, *mut f64) -> f64),
            F2OutInt(unsafe extern "C" fn(f32, f32, *mut c_int) -> f32),
            D2OutInt(unsafe extern "C" fn(f64, f64, *mut c_int) -> f64),
        }

        fn function(name: &[u8]) -> Option<Function> {
            Some(match name {
                $($(n if n == stringify!($name).as_bytes() => Function::$variant($name),)+)*
                b"frexpf" => Function::FOutInt(frexpf),
                b"lgammaf_r" => Function::FOutInt(lgammaf_r),
                b"frexp" => Function::DOutInt(frexp),
                b"lgamma_r" => Function::DOutInt(lgamma_r),
                b"modff" => Function::FOutF(modff),
                b"modf" => Function::DOutD(modf),
                b"remquof" => Function::F2OutInt(remquof),
                b"remquo" => Function::D2OutInt(remquo),
                _ => return None,
            })
        }
    };
}

functions! {
    F1: expf, exp2f, expm1f, logf, log2f, log10f, log1pf, sqrtf, cbrtf, sinf, cosf, tanf, asinf,
        acosf, atanf, sinhf, coshf, tanhf, asinhf, acoshf, atanhf, erff, erfcf, tgammaf, lgammaf,
        fabsf, floorf, ceilf, truncf, roundf, roundevenf, rintf, nearbyintf: fn(f32) -> f32;
    F2: hypotf, powf, atan2f, fmodf, remainderf, copysignf, fdimf, nextafterf, fmaxf, fminf,
        fmaximumf, fminimumf, fmaximum_numf, fminimum_numf, __divsf3: fn(f32, f32) -> f32;
    F3: fmaf: fn(f32, f32, f32) -> f32;
    D1: exp, exp2, expm1, log, log2, log10, log1p, sqrt, cbrt, sin, cos, tan, asin, acos, atan,
        sinh, cosh, tanh, asinh, acosh, atanh, erf, erfc, tgamma, lgamma, fabs, floor, ceil, trunc,
        round, roundeven, rint, nearbyint: fn(f64) -> f64;
    D2: hypot, pow, atan2, fmod, remainder, copysign, fdim, nextafter, fmax, fmin, fmaximum,
        fminimum, fmaximum_num, fminimum_num: fn(f64, f64) -> f64;
    D3: fma: fn(f64, f64, f64) -> f64;
    FInt: ldexpf, scalbnf: fn(f32, c_int) -> f32;
    DInt: ldexp, scalbn: fn(f64, c_int) -> f64;
    IntF: ilogbf: fn(f32) -> c_int;
    IntD: ilogb: fn(f64) -> c_int;
}

/// One case's results, as the table's words.
struct Results([u32; 4]);

fn f(w: u32) -> f32 {
    f32::from_bits(w)
}

fn d(words: &[u32]) -> f64 {
    f64::from_bits(u64::from(words[0]) | u64::from(words[1]) << 32)
}

fn d_words(x: f64) -> [u32; 2] {
    let bits = x.to_bits();
    [bits as u32, (bits >> 32) as u32]
}

/// Calls `function` on a case's arguments.
fn call(function: Function, a: &[u32]) -> Results {
    let mut int: c_int = 0;
    let mut r = [0u32; 4];
    // SAFETY: each symbol is the runtime's C function of exactly this signature (the
    // `functions!` table, math.rs); the out-pointers are to live locals.
    unsafe {
        match function {
            Function::F1(g) => r[0] = g(f(a[0])).to_bits(),
            Function::F2(g) => r[0] = g(f(a[0]), f(a[1])).to_bits(),
            Function::F3(g) => r[0] = g(f(a[0]), f(a[1]), f(a[2])).to_bits(),
            Function::D1(g) => r[..2].copy_from_slice(&d_words(g(d(a)))),
            Function::D2(g) => r[..2].copy_from_slice(&d_words(g(d(a), d(&a[2..])))),
            Function::D3(g) => r[..2].copy_from_slice(&d_words(g(d(a), d(&a[2..]), d(&a[4..])))),
            Function::FOutInt(g) => {
                r[0] = g(f(a[0]), &mut int).to_bits();
                r[1] = int as u32;
            }
            Function::DOutInt(g) => {
                r[..2].copy_from_slice(&d_words(g(d(a), &mut int)));
                r[2] = int as u32;
            }
            Function::FInt(g) => r[0] = g(f(a[0]), a[1] as c_int).to_bits(),
            Function::DInt(g) => r[..2].copy_from_slice(&d_words(g(d(a), a[2] as c_int))),
            Function::IntF(g) => r[0] = g(f(a[0])) as u32,
            Function::IntD(g) => r[0] = g(d(a)) as u32,
            Function::FOutF(g) => {
                let mut whole = 0.0f32;
                r[0] = g(f(a[0]), &mut whole).to_bits();
                r[1] = whole.to_bits();
            }
            Function::DOutD(g) => {
                let mut whole = 0.0f64;
                r[..2].copy_from_slice(&d_words(g(d(a), &mut whole)));
                r[2..].copy_from_slice(&d_words(whole));
            }
            Function::F2OutInt(g) => {
                r[0] = g(f(a[0]), f(a[1]), &mut int).to_bits();
                r[1] = int as u32;
            }
            Function::D2OutInt(g) => {
                r[..2].copy_from_slice(&d_words(g(d(a), d(&a[2..]), &mut int)));
                r[2] = int as u32;
            }
        }
    }
    Results(r)
}

/// The worst distance of a case's results from glibc's `want`.
fn compare(kind: Kind, got: &Results, want: &[u32]) -> Distance {
    let g = &got.0;
    // An int result where C defines it: after a finite float result.
    let int_matches = |float_finite: bool, got: u32, want: u32, quotient: bool| {
        if !float_finite {
            return true;
        }
        if quotient {
            // remquo: at least the low three bits of the quotient's magnitude, and its
            // sign where they are not all zero.
            let (got, want) = (got as i32, want as i32);
            let low = |q: i32| q.unsigned_abs() % 8;
            return low(got) == low(want) && (low(got) == 0 || got.signum() == want.signum());
        }
        got == want
    };
    let with_int = |distance: Distance, finite: bool, at: usize, quotient: bool| match distance {
        Distance::Ulps(u) if int_matches(finite, g[at], want[at], quotient) => Distance::Ulps(u),
        _ => Distance::Special,
    };
    let want64 = |at: usize| u64::from(want[at]) | u64::from(want[at + 1]) << 32;
    match kind {
        Kind::F1 | Kind::F2 | Kind::F3 | Kind::FInt => distance32(f(g[0]), want[0]),
        Kind::D1 | Kind::D2 | Kind::D3 | Kind::DInt => distance64(d(g), want64(0)),
        Kind::IntF | Kind::IntD => {
            if g[0] == want[0] {
                Distance::Ulps(0)
            } else {
                Distance::Special
            }
        }
        Kind::FOutInt => with_int(distance32(f(g[0]), want[0]), f(want[0]).is_finite(), 1, false),
        Kind::DOutInt => with_int(distance64(d(g), want64(0)), d(want).is_finite(), 2, false),
        Kind::F2OutInt => with_int(distance32(f(g[0]), want[0]), f(want[0]).is_finite(), 1, true),
        Kind::D2OutInt => with_int(distance64(d(g), want64(0)), d(want).is_finite(), 2, true),
        Kind::FOutF => match (distance32(f(g[0]), want[0]), distance32(f(g[1]), want[1])) {
            (Distance::Ulps(a), Distance::Ulps(b)) => Distance::Ulps(a.max(b)),
            _ => Distance::Special,
        },
        Kind::DOutD => match (distance64(d(g), want64(0)), distance64(d(&g[2..]), want64(2))) {
            (Distance::Ulps(a), Distance::Ulps(b)) => Distance::Ulps(a.max(b)),
            _ => Distance::Special,
        },
    }
}

/// Words as one hexadecimal run, `:`-separated.
struct Hex<'a>(&'a [u32]);

impl core::fmt::Display for Hex<'_> {
    fn fmt(&self, out: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, word) in self.0.iter().enumerate() {
            write!(out, "{}{word:08x}", if i == 0 { "" } else { ":" })?;
        }
        Ok(())
    }
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    // SAFETY: the host loaded the table at TABLE before the core started; nothing else
    // writes that memory during this boot. Its header is read first, then each
    // section's words, within the length the header and section headers give.
    let word = |at: usize| unsafe { ((TABLE + 4 * at) as *const u32).read() };
    if word(0) != MAGIC {
        println!("MATH_ERROR no table at {TABLE:#x}");
        return 1;
    }
    let sections = word(1) as usize;
    let mut at = 2;
    for _ in 0..sections {
        let name_words: [u32; NAME_WORDS] = core::array::from_fn(|i| word(at + i));
        let mut name_bytes = [0; 4 * NAME_WORDS];
        let name = name_of(&name_words, &mut name_bytes);
        let name_str = core::str::from_utf8(name).unwrap_or("?");
        let (Some(kind), Some(function)) = (Kind::from_word(word(at + NAME_WORDS)), function(name)) else {
            println!("MATH_ERROR unknown function or kind: {name_str}");
            return 1;
        };
        let cases = word(at + NAME_WORDS + 1) as usize;
        at += NAME_WORDS + 2;
        let (arg_words, result_words) = kind.words();
        let (mut max_ulp, mut worst, mut special) = (0u64, at, 0u32);
        for _ in 0..cases {
            let case: [u32; 10] = core::array::from_fn(|i| if i < arg_words + result_words { word(at + i) } else { 0 });
            let got = call(function, &case[..arg_words]);
            match compare(kind, &got, &case[arg_words..]) {
                Distance::Ulps(u) if u > max_ulp => (max_ulp, worst) = (u, at),
                Distance::Ulps(_) => {}
                Distance::Special => {
                    if special < REPORTED {
                        let all = &case[..arg_words + result_words];
                        println!("MATHSPECIAL {name_str} case={} got={}", Hex(all), Hex(&got.0[..result_words]));
                    }
                    special += 1;
                }
            }
            at += arg_words + result_words;
        }
        let worst_case: [u32; 10] = core::array::from_fn(|i| word(worst + i));
        let worst_got = call(function, &worst_case[..arg_words]);
        println!(
            "MATH {name_str} n={cases} max_ulp={max_ulp} special={special} worst={} got={}",
            Hex(&worst_case[..arg_words + result_words]),
            Hex(&worst_got.0[..result_words])
        );
    }
    println!("MATH_DONE sections={sections}");
    0
}
