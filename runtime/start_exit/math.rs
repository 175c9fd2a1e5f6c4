//! The kernels' libm: the `libm` crate's functions (a port of musl's, correctly
//! rounded where musl's are), exported under their C names for C and C++ kernels and
//! callable from Rust kernels as `neuroncustomop::start_exit::math::expf` and so on.
//!
//! ```
//! use neuroncustomop::start_exit::math::{erff, expf, tanh};
//! assert_eq!(expf(0.0), 1.0);
//! assert!((erff(1.0) - 0.842_700_8).abs() < 1e-6);
//! assert_eq!(tanh(0.0), 0.0);
//! ```
//!
//! `compiler_builtins` also carries math symbols for freestanding targets, but weak
//! ones: these definitions are the ones a kernel links.

/// Declares each function as a C export over the `libm` crate's function of the same
/// name.
macro_rules! c_math {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),+) -> $ret:ty;)*) => {$(
        $(#[$doc])*
        #[cfg_attr(target_os = "none", unsafe(no_mangle))]
        pub extern "C" fn $name($($arg: $ty),+) -> $ret {
            libm::$name($($arg),+)
        }
    )*};
}

c_math! {
    /// e<sup>x</sup>.
    expf(x: f32) -> f32;
    /// Natural logarithm.
    logf(x: f32) -> f32;
    /// Base-2 logarithm.
    log2f(x: f32) -> f32;
    /// Base-10 logarithm.
    log10f(x: f32) -> f32;
    /// Square root.
    sqrtf(x: f32) -> f32;
    /// Hyperbolic tangent.
    tanhf(x: f32) -> f32;
    /// x<sup>y</sup>.
    powf(x: f32, y: f32) -> f32;
    /// |x|.
    fabsf(x: f32) -> f32;
    /// Largest integer not above x.
    floorf(x: f32) -> f32;
    /// Smallest integer not below x.
    ceilf(x: f32) -> f32;
    /// The larger of x and y (the other one if either is NaN).
    fmaxf(x: f32, y: f32) -> f32;
    /// The smaller of x and y (the other one if either is NaN).
    fminf(x: f32, y: f32) -> f32;
    /// The error function.
    erff(x: f32) -> f32;
    /// Sine.
    sinf(x: f32) -> f32;
    /// Cosine.
    cosf(x: f32) -> f32;
    /// Tangent.
    tanf(x: f32) -> f32;
    /// e<sup>x</sup>.
    exp(x: f64) -> f64;
    /// Natural logarithm.
    log(x: f64) -> f64;
    /// Base-2 logarithm.
    log2(x: f64) -> f64;
    /// Base-10 logarithm.
    log10(x: f64) -> f64;
    /// Square root.
    sqrt(x: f64) -> f64;
    /// Hyperbolic tangent.
    tanh(x: f64) -> f64;
    /// x<sup>y</sup>.
    pow(x: f64, y: f64) -> f64;
    /// |x|.
    fabs(x: f64) -> f64;
    /// Largest integer not above x.
    floor(x: f64) -> f64;
    /// Smallest integer not below x.
    ceil(x: f64) -> f64;
    /// The larger of x and y (the other one if either is NaN).
    fmax(x: f64, y: f64) -> f64;
    /// The smaller of x and y (the other one if either is NaN).
    fmin(x: f64, y: f64) -> f64;
    /// The error function.
    erf(x: f64) -> f64;
    /// Sine.
    sin(x: f64) -> f64;
    /// Cosine.
    cos(x: f64) -> f64;
    /// Tangent.
    tan(x: f64) -> f64;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each export against the host's own libm (through `std`), to a few ulps.
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
        assert_eq!((fmaxf(1.0, f32::NAN), fminf(f32::NAN, -1.0)), (1.0, -1.0));
        assert_eq!((fmax(1.0, 2.0), fmin(1.0, 2.0)), (2.0, 1.0));
        // erf(1) = 0.8427007929497149 (Abramowitz & Stegun, 7.1).
        assert!(close32(erff(1.0), 0.842_700_8) && close64(erf(1.0), 0.842_700_792_949_714_9));
        assert!((erf(-0.5) + erf(0.5)).abs() < 1e-16, "odd");
    }
}
