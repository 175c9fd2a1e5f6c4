//! The kernels' libm: every function of C's `<math.h>` that the `libm` crate has (a
//! port of musl's, correctly rounded where musl's are), exported under its C name for
//! C and C++ kernels and callable from Rust kernels as
//! `neuroncustomop::start_exit::math::expf` and so on.
//!
//! ```
//! use neuroncustomop::start_exit::math::{erff, expf, fmod, tanh};
//! assert_eq!(expf(0.0), 1.0);
//! assert!((erff(1.0) - 0.842_700_8).abs() < 1e-6);
//! assert_eq!(tanh(0.0), 0.0);
//! assert_eq!(fmod(1e10, 3.0), 1.0);
//! ```
//!
//! `compiler_builtins` also carries math symbols for freestanding targets, weak ones,
//! and some of them are wrong on this target (its `fmod` returned 0 for `fmod(1e10, 3)`):
//! every one of its C-named symbols that `<math.h>` declares is defined here, so a
//! kernel never links one of them. `qemu/tests/libm.rs` runs each function on the device
//! against glibc.
//!
//! Where C leaves a choice: `fmax`/`fmin` of a signalling NaN return a (quiet) NaN, as
//! glibc's do, and of `-0` and `+0` return `+0` (`fmax`) and `-0` (`fmin`) in either
//! order, as IEEE 754-2019 does (glibc returns one of them by operand order).

use core::ffi::c_int;

/// Declares each function as a C export over the `libm` crate's function of the same
/// name and signature.
macro_rules! c_math {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),+) -> $ret:ty;)*) => {$(
        $(#[$doc])*
        #[cfg_attr(c_abi, unsafe(no_mangle))]
        pub extern "C" fn $name($($arg: $ty),+) -> $ret {
            libm::$name($($arg),+)
        }
    )*};
}

c_math! {
    /// 2<sup>x</sup>.
    exp2f(x: f32) -> f32;
    /// e<sup>x</sup> - 1, accurate near 0.
    expm1f(x: f32) -> f32;
    /// Base-2 logarithm.
    log2f(x: f32) -> f32;
    /// Base-10 logarithm.
    log10f(x: f32) -> f32;
    /// ln(1 + x), accurate near 0.
    log1pf(x: f32) -> f32;
    /// Square root.
    sqrtf(x: f32) -> f32;
    /// Cube root.
    cbrtf(x: f32) -> f32;
    /// sqrt(x² + y²) without undue overflow.
    hypotf(x: f32, y: f32) -> f32;
    /// x<sup>y</sup>.
    powf(x: f32, y: f32) -> f32;
    /// Sine.
    sinf(x: f32) -> f32;
    /// Cosine.
    cosf(x: f32) -> f32;
    /// Tangent.
    tanf(x: f32) -> f32;
    /// Arc sine.
    asinf(x: f32) -> f32;
    /// Arc cosine.
    acosf(x: f32) -> f32;
    /// Arc tangent.
    atanf(x: f32) -> f32;
    /// Arc tangent of y / x, in the quadrant of (x, y).
    atan2f(y: f32, x: f32) -> f32;
    /// Hyperbolic sine.
    sinhf(x: f32) -> f32;
    /// Hyperbolic cosine.
    coshf(x: f32) -> f32;
    /// Inverse hyperbolic sine.
    asinhf(x: f32) -> f32;
    /// Inverse hyperbolic tangent.
    atanhf(x: f32) -> f32;
    /// The error function.
    erff(x: f32) -> f32;
    /// The complementary error function, 1 - erf(x).
    erfcf(x: f32) -> f32;
    /// The gamma function.
    tgammaf(x: f32) -> f32;
    /// ln |Γ(x)|.
    lgammaf(x: f32) -> f32;
    /// |x|.
    fabsf(x: f32) -> f32;
    /// Largest integer not above x.
    floorf(x: f32) -> f32;
    /// Smallest integer not below x.
    ceilf(x: f32) -> f32;
    /// x rounded toward zero.
    truncf(x: f32) -> f32;
    /// x rounded to the nearest integer, ties away from zero.
    roundf(x: f32) -> f32;
    /// x rounded to the nearest integer, ties to even.
    roundevenf(x: f32) -> f32;
    /// x rounded to an integer in the current rounding mode (to nearest, ties to even:
    /// the only mode here).
    rintf(x: f32) -> f32;
    /// The remainder of x / y, with the sign of x.
    fmodf(x: f32, y: f32) -> f32;
    /// x - n·y with n = x / y rounded to nearest, ties to even.
    remainderf(x: f32, y: f32) -> f32;
    /// |x| with the sign of y.
    copysignf(x: f32, y: f32) -> f32;
    /// x - y if x > y, else +0.
    fdimf(x: f32, y: f32) -> f32;
    /// x·y + z, rounded once.
    fmaf(x: f32, y: f32, z: f32) -> f32;
    /// The next float after x toward y.
    nextafterf(x: f32, y: f32) -> f32;
    /// x·2<sup>n</sup>.
    ldexpf(x: f32, n: c_int) -> f32;
    /// x·2<sup>n</sup>.
    scalbnf(x: f32, n: c_int) -> f32;
    /// The unbiased exponent of x (`FP_ILOGB0` = `INT_MIN` for 0, `FP_ILOGBNAN` =
    /// `INT_MIN` for NaN, `INT_MAX` for infinity).
    ilogbf(x: f32) -> c_int;
    /// The larger of x and y, -0 below +0 (NaN if either is NaN: IEEE `maximum`).
    fmaximumf(x: f32, y: f32) -> f32;
    /// The smaller of x and y, -0 below +0 (NaN if either is NaN: IEEE `minimum`).
    fminimumf(x: f32, y: f32) -> f32;
    /// The larger of x and y, -0 below +0 (the number if one is NaN).
    fmaximum_numf(x: f32, y: f32) -> f32;
    /// The smaller of x and y, -0 below +0 (the number if one is NaN).
    fminimum_numf(x: f32, y: f32) -> f32;

    /// e<sup>x</sup>.
    exp(x: f64) -> f64;
    /// 2<sup>x</sup>.
    exp2(x: f64) -> f64;
    /// e<sup>x</sup> - 1, accurate near 0.
    expm1(x: f64) -> f64;
    /// Natural logarithm.
    log(x: f64) -> f64;
    /// Base-2 logarithm.
    log2(x: f64) -> f64;
    /// Base-10 logarithm.
    log10(x: f64) -> f64;
    /// ln(1 + x), accurate near 0.
    log1p(x: f64) -> f64;
    /// Square root.
    sqrt(x: f64) -> f64;
    /// Cube root.
    cbrt(x: f64) -> f64;
    /// sqrt(x² + y²) without undue overflow.
    hypot(x: f64, y: f64) -> f64;
    /// x<sup>y</sup>.
    pow(x: f64, y: f64) -> f64;
    /// Sine.
    sin(x: f64) -> f64;
    /// Cosine.
    cos(x: f64) -> f64;
    /// Tangent.
    tan(x: f64) -> f64;
    /// Arc sine.
    asin(x: f64) -> f64;
    /// Arc cosine.
    acos(x: f64) -> f64;
    /// Arc tangent.
    atan(x: f64) -> f64;
    /// Arc tangent of y / x, in the quadrant of (x, y).
    atan2(y: f64, x: f64) -> f64;
    /// Hyperbolic sine.
    sinh(x: f64) -> f64;
    /// Hyperbolic cosine.
    cosh(x: f64) -> f64;
    /// Hyperbolic tangent.
    tanh(x: f64) -> f64;
    /// Inverse hyperbolic sine.
    asinh(x: f64) -> f64;
    /// Inverse hyperbolic tangent.
    atanh(x: f64) -> f64;
    /// The error function.
    erf(x: f64) -> f64;
    /// The complementary error function, 1 - erf(x).
    erfc(x: f64) -> f64;
    /// The gamma function.
    tgamma(x: f64) -> f64;
    /// ln |Γ(x)|.
    lgamma(x: f64) -> f64;
    /// |x|.
    fabs(x: f64) -> f64;
    /// Largest integer not above x.
    floor(x: f64) -> f64;
    /// Smallest integer not below x.
    ceil(x: f64) -> f64;
    /// x rounded toward zero.
    trunc(x: f64) -> f64;
    /// x rounded to the nearest integer, ties away from zero.
    round(x: f64) -> f64;
    /// x rounded to the nearest integer, ties to even.
    roundeven(x: f64) -> f64;
    /// x rounded to an integer in the current rounding mode (to nearest, ties to even:
    /// the only mode here).
    rint(x: f64) -> f64;
    /// x - n·y with n = x / y rounded to nearest, ties to even.
    remainder(x: f64, y: f64) -> f64;
    /// |x| with the sign of y.
    copysign(x: f64, y: f64) -> f64;
    /// x - y if x > y, else +0.
    fdim(x: f64, y: f64) -> f64;
    /// x·y + z, rounded once.
    fma(x: f64, y: f64, z: f64) -> f64;
    /// The next double after x toward y.
    nextafter(x: f64, y: f64) -> f64;
    /// x·2<sup>n</sup>.
    ldexp(x: f64, n: c_int) -> f64;
    /// x·2<sup>n</sup>.
    scalbn(x: f64, n: c_int) -> f64;
    /// The unbiased exponent of x (`INT_MIN` for 0 and NaN, `INT_MAX` for infinity).
    ilogb(x: f64) -> c_int;
    /// The larger of x and y, -0 below +0 (NaN if either is NaN: IEEE `maximum`).
    fmaximum(x: f64, y: f64) -> f64;
    /// The smaller of x and y, -0 below +0 (NaN if either is NaN: IEEE `minimum`).
    fminimum(x: f64, y: f64) -> f64;
    /// The larger of x and y, -0 below +0 (the number if one is NaN).
    fmaximum_num(x: f64, y: f64) -> f64;
    /// The smaller of x and y, -0 below +0 (the number if one is NaN).
    fminimum_num(x: f64, y: f64) -> f64;
}

/// Declares each function as a C export over a Rust body, for the functions whose C
/// signature is not the `libm` crate's (an out-parameter instead of a tuple, or
/// behaviour C leaves open that glibc pins down).
macro_rules! c_math_with {
    ($($(#[$doc:meta])* $(unsafe $($u:lifetime)?)? fn $name:ident($($arg:ident: $ty:ty),+) -> $ret:ty $body:block)*) => {$(
        $(#[$doc])*
        #[cfg_attr(c_abi, unsafe(no_mangle))]
        pub $(unsafe $($u)?)? extern "C" fn $name($($arg: $ty),+) -> $ret $body
    )*};
}

/// Whether `x` is a signalling NaN (quiet bit clear, as IEEE 754-2008 and the Xtensa FPU
/// read it).
fn is_snan32(x: f32) -> bool {
    x.is_nan() && x.to_bits() & 0x0040_0000 == 0
}

/// [`is_snan32`] for doubles.
fn is_snan64(x: f64) -> bool {
    x.is_nan() && x.to_bits() & 0x0008_0000_0000_0000 == 0
}

/// `fmax`/`fmin`: a NaN from a signalling NaN (the sum quiets it), as glibc's; the
/// number when one argument is a quiet NaN; equal operands (±0 among them) combine
/// their bits so that `fmax` prefers +0 and `fmin` -0.
macro_rules! min_max {
    ($x:ident, $y:ident, $ty:ty, $is_snan:ident, $pick:expr, $combine:tt) => {{
        if $is_snan($x) || $is_snan($y) {
            return $x + $y;
        }
        if $x.is_nan() {
            return $y;
        }
        if $y.is_nan() {
            return $x;
        }
        if $x == $y {
            return <$ty>::from_bits($x.to_bits() $combine $y.to_bits());
        }
        if $pick { $x } else { $y }
    }};
}

c_math_with! {
    /// The larger of x and y (the number if the other is a quiet NaN; NaN if either is
    /// a signalling NaN; +0 of ±0).
    fn fmaxf(x: f32, y: f32) -> f32 { min_max!(x, y, f32, is_snan32, x > y, &) }
    /// The smaller of x and y (the number if the other is a quiet NaN; NaN if either is
    /// a signalling NaN; -0 of ±0).
    fn fminf(x: f32, y: f32) -> f32 { min_max!(x, y, f32, is_snan32, x < y, |) }
    /// The larger of x and y (the number if the other is a quiet NaN; NaN if either is
    /// a signalling NaN; +0 of ±0).
    fn fmax(x: f64, y: f64) -> f64 { min_max!(x, y, f64, is_snan64, x > y, &) }
    /// The smaller of x and y (the number if the other is a quiet NaN; NaN if either is
    /// a signalling NaN; -0 of ±0).
    fn fmin(x: f64, y: f64) -> f64 { min_max!(x, y, f64, is_snan64, x < y, |) }
    /// The remainder of x / y, with the sign of x, exact. The `libm` crate's (and
    /// `compiler_builtins`') `fmod` divides in 128-bit integers and returns 0 or NaN for
    /// a third of the inputs on this target (`fmod(1e10, 3)` = 0), so this is musl's
    /// older one instead (src/math/fmod.c, MIT): both mantissas as integers, x's
    /// reduced by y's one exponent step at a time, in 64-bit integers only.
    fn fmod(x: f64, y: f64) -> f64 { fmod_by_steps(x, y) }
    /// e<sup>x</sup>, on the FPU ([`fpu_math::expf`](super::fpu_math::expf)).
    fn expf(x: f32) -> f32 { super::fpu_math::expf(x) }
    /// Natural logarithm, on the FPU ([`fpu_math::logf`](super::fpu_math::logf)).
    fn logf(x: f32) -> f32 { super::fpu_math::logf(x) }
    /// Hyperbolic tangent, on the FPU ([`fpu_math::tanhf`](super::fpu_math::tanhf)).
    fn tanhf(x: f32) -> f32 { super::fpu_math::tanhf(x) }
    /// Inverse hyperbolic cosine (NaN below 1: the `libm` crate's, musl's, returns a
    /// number for x <= -2).
    fn acoshf(x: f32) -> f32 { if x < 1.0 { f32::NAN } else { libm::acoshf(x) } }
    /// Inverse hyperbolic cosine (NaN below 1).
    fn acosh(x: f64) -> f64 { if x < 1.0 { f64::NAN } else { libm::acosh(x) } }
    /// x rounded to an integer, as [`rintf`] (there are no floating-point exceptions to
    /// leave unraised).
    fn nearbyintf(x: f32) -> f32 { libm::rintf(x) }
    /// x rounded to an integer, as [`rint`].
    fn nearbyint(x: f64) -> f64 { libm::rint(x) }

    /// Splits x into a fraction in [0.5, 1) (or 0, inf, NaN as x) and a power of two,
    /// stored at `exp`.
    ///
    /// # Safety
    /// `exp` is valid for a write of one `int`.
    unsafe fn frexpf(x: f32, exp: *mut c_int) -> f32 {
        let (fraction, e) = libm::frexpf(x);
        // SAFETY: the caller's contract.
        unsafe { exp.write(e) };
        fraction
    }
    /// Splits x into a fraction in [0.5, 1) and a power of two, stored at `exp`.
    ///
    /// # Safety
    /// `exp` is valid for a write of one `int`.
    unsafe fn frexp(x: f64, exp: *mut c_int) -> f64 {
        let (fraction, e) = libm::frexp(x);
        // SAFETY: the caller's contract.
        unsafe { exp.write(e) };
        fraction
    }
    /// The fractional part of x (with x's sign), its integral part stored at `integral`.
    ///
    /// # Safety
    /// `integral` is valid for a write of one `float`.
    unsafe fn modff(x: f32, integral: *mut f32) -> f32 {
        let (fraction, whole) = libm::modff(x);
        // SAFETY: the caller's contract.
        unsafe { integral.write(whole) };
        fraction
    }
    /// The fractional part of x (with x's sign), its integral part stored at `integral`.
    ///
    /// # Safety
    /// `integral` is valid for a write of one `double`.
    unsafe fn modf(x: f64, integral: *mut f64) -> f64 {
        let (fraction, whole) = libm::modf(x);
        // SAFETY: the caller's contract.
        unsafe { integral.write(whole) };
        fraction
    }
    /// [`remainderf`], and the low bits (at least 3) of the quotient with its sign,
    /// stored at `quo`.
    ///
    /// # Safety
    /// `quo` is valid for a write of one `int`.
    unsafe fn remquof(x: f32, y: f32, quo: *mut c_int) -> f32 {
        let (remainder, q) = libm::remquof(x, y);
        // SAFETY: the caller's contract.
        unsafe { quo.write(q) };
        remainder
    }
    /// [`remainder`], and the low bits (at least 3) of the quotient with its sign,
    /// stored at `quo`.
    ///
    /// # Safety
    /// `quo` is valid for a write of one `int`.
    unsafe fn remquo(x: f64, y: f64, quo: *mut c_int) -> f64 {
        let (remainder, q) = libm::remquo(x, y);
        // SAFETY: the caller's contract.
        unsafe { quo.write(q) };
        remainder
    }
    /// ln |Γ(x)|, and the sign of Γ(x) (1 or -1) stored at `sign` (POSIX's reentrant
    /// form).
    ///
    /// # Safety
    /// `sign` is valid for a write of one `int`.
    unsafe fn lgammaf_r(x: f32, sign: *mut c_int) -> f32 {
        let (value, s) = libm::lgammaf_r(x);
        // SAFETY: the caller's contract.
        unsafe { sign.write(s) };
        value
    }
    /// ln |Γ(x)|, and the sign of Γ(x) (1 or -1) stored at `sign` (POSIX's reentrant
    /// form).
    ///
    /// # Safety
    /// `sign` is valid for a write of one `int`.
    unsafe fn lgamma_r(x: f64, sign: *mut c_int) -> f64 {
        let (value, s) = libm::lgamma_r(x);
        // SAFETY: the caller's contract.
        unsafe { sign.write(s) };
        value
    }
}

/// [`fmod`]'s body: musl's shift-and-subtract remainder.
fn fmod_by_steps(x: f64, y: f64) -> f64 {
    const MANTISSA: u32 = 52;
    const IMPLICIT: u64 = 1 << MANTISSA;
    let (mut ux, mut uy) = (x.to_bits(), y.to_bits());
    let (mut ex, mut ey) = (((ux >> MANTISSA) & 0x7ff) as i32, ((uy >> MANTISSA) & 0x7ff) as i32);
    let sign = ux & (1 << 63);
    if uy << 1 == 0 || y.is_nan() || ex == 0x7ff {
        // NaN for a NaN, an infinite x or a zero y.
        return f64::NAN;
    }
    if ux << 1 <= uy << 1 {
        return if ux << 1 == uy << 1 { 0.0 * x } else { x };
    }
    // Both as integer mantissas with the implicit bit, subnormals normalised.
    let normalise = |bits: &mut u64, exponent: &mut i32| {
        if *exponent == 0 {
            let zeros = (*bits << 12).leading_zeros() as i32;
            *exponent = -zeros;
            *bits <<= zeros + 1;
        } else {
            *bits = (*bits & (IMPLICIT - 1)) | IMPLICIT;
        }
    };
    normalise(&mut ux, &mut ex);
    normalise(&mut uy, &mut ey);
    // x mod y, one exponent step at a time.
    while ex > ey {
        let difference = ux.wrapping_sub(uy);
        if difference >> 63 == 0 {
            if difference == 0 {
                return 0.0 * x;
            }
            ux = difference;
        }
        ux <<= 1;
        ex -= 1;
    }
    let difference = ux.wrapping_sub(uy);
    if difference >> 63 == 0 {
        if difference == 0 {
            return 0.0 * x;
        }
        ux = difference;
    }
    while ux >> MANTISSA == 0 {
        ux <<= 1;
        ex -= 1;
    }
    // Back to a double: normal, or shifted down to a subnormal.
    if ex > 0 {
        ux = (ux - IMPLICIT) | ((ex as u64) << MANTISSA);
    } else {
        ux >>= -ex + 1;
    }
    f64::from_bits(ux | sign)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each export against the host's own libm (through `std`), to a few ulps. The full
    /// comparison with glibc runs on the device: `qemu/tests/libm.rs`.
    #[test]
    #[cfg_attr(miri, ignore = "libm's sqrtf on x86 is inline assembly, which Miri cannot run")]
    fn the_exports_match_the_host_libm() {
        let close32 = |a: f32, b: f32| (a - b).abs() <= 4.0 * f32::EPSILON * b.abs().max(1.0);
        let close64 = |a: f64, b: f64| (a - b).abs() <= 4.0 * f64::EPSILON * b.abs().max(1.0);
        for &x in &[0.3f32, 1.0, 2.5, 7.75, 20.0] {
            assert!(close32(expf(x), x.exp()) && close32(logf(x), x.ln()) && close32(sqrtf(x), x.sqrt()), "{x}");
            assert!(close32(tanhf(x), x.tanh()) && close32(powf(x, 1.5), x.powf(1.5)), "{x}");
            assert!(close32(log2f(x), x.log2()) && close32(log10f(x), x.log10()), "{x}");
            assert!(close32(sinf(x), x.sin()) && close32(cosf(x), x.cos()) && close32(tanf(x), x.tan()), "{x}");
            let y = f64::from(x);
            assert!(close64(exp(y), y.exp()) && close64(log(y), y.ln()) && close64(sqrt(y), y.sqrt()), "{y}");
            assert!(close64(tanh(y), y.tanh()) && close64(pow(y, 1.5), y.powf(1.5)), "{y}");
            assert!(close64(sin(y), y.sin()) && close64(cos(y), y.cos()) && close64(tan(y), y.tan()), "{y}");
            assert!(close64(log2(y), y.log2()) && close64(log10(y), y.log10()), "{y}");
        }
        assert_eq!((fabsf(-2.0), floorf(-1.5), ceilf(-1.5)), (2.0, -2.0, -1.0));
        assert_eq!((fabs(-2.0), floor(-1.5), ceil(-1.5)), (2.0, -2.0, -1.0));
        // erf(1) = 0.8427007929497149 (Abramowitz & Stegun, 7.1).
        assert!(close32(erff(1.0), 0.842_700_8) && close64(erf(1.0), 0.842_700_792_949_714_9));
        assert!((erf(-0.5) + erf(0.5)).abs() < 1e-16, "odd");
        assert_eq!((fmod(1e10, 3.0), fmodf(-7.5, 2.0)), (1.0, -1.5));
    }

    /// `fmod` against the host's exact remainder (Rust's `%` on f64 is C's fmod), over
    /// normal, subnormal and special operands.
    #[test]
    fn fmod_is_exact() {
        let values = [
            0.0,
            -0.0,
            1.0,
            3.0,
            -3.0,
            1e10,
            1e-310,
            5e-324,
            2.5e-308,
            1e308,
            f64::MAX,
            0.1,
            7.5,
            f64::INFINITY,
            f64::NAN,
            123_456.789,
            -9.87e-5,
        ];
        for &x in &values {
            for &y in &values {
                let (got, want) = (fmod(x, y), x % y);
                assert!(
                    got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
                    "fmod({x:e}, {y:e}) = {got:e}, want {want:e}"
                );
            }
        }
    }

    /// `fmax`/`fmin`: the number for a quiet NaN, a NaN for a signalling one (glibc 2.36
    /// on x86-64 does the same), +0 / -0 of the two zeros in either order.
    #[test]
    fn min_and_max_follow_glibc_for_nans_and_zeros() {
        let snan32 = f32::from_bits(0x7fa0_0000);
        let snan64 = f64::from_bits(0x7ff4_0000_0000_0000);
        assert!(is_snan32(snan32) && !is_snan32(f32::NAN) && is_snan64(snan64) && !is_snan64(f64::NAN));
        assert_eq!((fmaxf(1.0, f32::NAN), fminf(f32::NAN, -1.0)), (1.0, -1.0));
        assert_eq!((fmax(1.0, f64::NAN), fmin(f64::NAN, -1.0)), (1.0, -1.0));
        for (a, b) in [(snan32, 1.0), (1.0, snan32), (snan32, f32::NAN)] {
            assert!(fmaxf(a, b).is_nan() && fminf(a, b).is_nan(), "{a} {b}");
        }
        for (a, b) in [(snan64, 1.0), (1.0, snan64)] {
            assert!(fmax(a, b).is_nan() && fmin(a, b).is_nan(), "{a} {b}");
        }
        for (a, b) in [(0.0f32, -0.0f32), (-0.0, 0.0)] {
            assert_eq!((fmaxf(a, b).to_bits(), fminf(a, b).to_bits()), (0, 0x8000_0000), "{a} {b}");
            let (a, b) = (f64::from(a), f64::from(b));
            assert_eq!((fmax(a, b).to_bits(), fmin(a, b).to_bits()), (0, 1 << 63), "{a} {b}");
        }
        assert_eq!((fmaxf(2.0, 3.0), fminf(2.0, 3.0), fmax(-2.0, -3.0), fmin(-2.0, -3.0)), (3.0, 2.0, -2.0, -3.0));
    }
}
