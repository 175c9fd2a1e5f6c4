//! `expf` for the core's FPU: the kernels' `expf` (and `torch::exp`, softmax's inner
//! call) in single-precision arithmetic and fused multiply-adds (`madd.s`), about 45
//! instructions a call where the `libm` crate's, built without the FPU (docs/toolchain.md,
//! "LLVM defects" 5), takes about 2,400.
//!
//! The method is the classic one, with Cody and Waite's two-part ln 2 and the
//! polynomial of S. L. Moshier's Cephes `expf` (Cephes Math Library 2.2,
//! `expf.c`): x = n·ln 2 + r with n = round(x / ln 2), |r| <= ln 2 / 2;
//! e<sup>x</sup> = 2<sup>n</sup>·(1 + r + r²·P(r)), P of degree 5. The power of two is
//! built in the exponent bits, and the last step is one fused multiply-add,
//! 2<sup>n</sup> + 2<sup>n</sup>·(r + r²·P(r)), so the result is rounded once.
//!
//! Inputs outside [-87, 87] (where the result overflows, is subnormal or is about to
//! be) and NaN go to the `libm` crate's `expf`. Every result is within 1 ulp of the
//! `libm` crate's (which is correctly rounded in all but rare cases): the host test
//! below checks every 1,021st float of the fast range (every one with
//! `FPU_MATH_EXHAUSTIVE=1`), with the same fused operations the device uses, so the
//! bits are the device's; `qemu/tests/libm.rs` compares the device's with glibc's.

/// A fused multiply-add, `a·b + c` rounded once: `madd.s` on the device. On the host
/// (the tests) the same operation from `std`, so both compute identical bits.
#[inline(always)]
fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_os = "none")]
    {
        core::f32::math::mul_add(a, b, c)
    }
    #[cfg(not(target_os = "none"))]
    {
        a.mul_add(b, c)
    }
}

/// 1 / ln 2.
const INV_LN2: f32 = f32::from_bits(0x3fb8_aa3b);
/// 1.5·2<sup>23</sup> + 127: adding it rounds x / ln 2 to an integer n, kept in the low
/// bits of the sum's bit pattern as n + 127, the biased exponent of 2<sup>n</sup>.
const ROUNDER: f32 = f32::from_bits(0x4b40_007f);
/// -ln 2 in two parts, the first with its low 8 bits zero so that n times it is exact
/// for |n| < 256 (Cody and Waite).
/// -0.693145751953125.
const MINUS_LN2_HI: f32 = f32::from_bits(0xbf31_7200);
/// -1.4286068e-6: -ln 2 less the first part, rounded.
const MINUS_LN2_LO: f32 = f32::from_bits(0xb5bf_be8e);
/// Cephes `expf`'s polynomial: e<sup>r</sup> - 1 - r = r²·(P0 + P1·r + ... + P5·r⁵)
/// on [-ln 2 / 2, ln 2 / 2]: Cephes' decimals 5.0000001201e-1, 1.6666665459e-1,
/// 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3 and 1.9875691500e-4, as the floats
/// they round to.
const P: [f32; 6] = [
    f32::from_bits(0x3f00_0000),
    f32::from_bits(0x3e2a_aaaa),
    f32::from_bits(0x3d2a_a9c1),
    f32::from_bits(0x3c08_8908),
    f32::from_bits(0x3ab7_43ce),
    f32::from_bits(0x3950_6967),
];
/// The fast path's range: e<sup>±87</sup> and 2<sup>n</sup> for its n are normal floats.
const FAST_LIMIT: f32 = 87.0;

/// e<sup>x</sup>, within 1 ulp of the correctly rounded result.
#[inline]
pub fn expf(x: f32) -> f32 {
    // NaN fails the comparison too.
    if x.abs() <= FAST_LIMIT { expf_core(x) } else { libm::expf(x) }
}

/// [`expf`]'s constants, in the order of [`expf_core`]'s use.
static CONSTANTS: [f32; 10] = [INV_LN2, ROUNDER, MINUS_LN2_HI, MINUS_LN2_LO, P[5], P[4], P[3], P[2], P[1], P[0]];

/// [`expf`] for |x| <= [`FAST_LIMIT`].
#[inline(always)]
fn expf_core(x: f32) -> f32 {
    // Through an address the optimiser cannot see into, each constant is one `lsi` from
    // the table; as literals LLVM 22 loads each with `l32r` and `wfr`, two instructions.
    let c = core::hint::black_box(&CONSTANTS);
    let shifted = fma(x, c[0], c[1]);
    let n = shifted - c[1];
    let r = fma(n, c[3], fma(n, c[2], x));
    // n + 127 in 1..=253: shifted into the exponent field, 2^n.
    let scale = f32::from_bits(shifted.to_bits() << 23);
    let q = fma(fma(fma(fma(fma(c[4], r, c[5]), r, c[6]), r, c[7]), r, c[8]), r, c[9]);
    let expm1 = fma(r * r, q, r);
    fma(scale, expm1, scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Units in the last place between two finite floats of the same sign.
    fn ulps(a: f32, b: f32) -> u32 {
        a.to_bits().abs_diff(b.to_bits())
    }

    /// Every 61st float of the fast range (every one with `FPU_MATH_EXHAUSTIVE=1`), and
    /// the special values, against the `libm` crate's `expf` (what the kernels' `expf`
    /// was): at most 1 ulp apart.
    #[test]
    #[cfg_attr(miri, ignore = "millions of evaluations")]
    fn expf_is_within_one_ulp_of_libm_everywhere() {
        let step = if std::env::var_os("FPU_MATH_EXHAUSTIVE").is_some() { 1 } else { 1021 };
        let mut worst = (0, 0.0f32);
        let mut count = 0u64;
        for bits in (0..0x42ae_0000u32).chain(0x8000_0000..0xc2ae_0001).step_by(step) {
            let x = f32::from_bits(bits);
            let (got, want) = (expf(x), libm::expf(x));
            let distance = ulps(got, want);
            if distance > worst.0 {
                worst = (distance, x);
            }
            count += 1;
        }
        assert!(count > 2_000_000_000 / step as u64, "{count}");
        assert!(worst.0 <= 1, "{} ulps at expf({:e}) ({:#010x})", worst.0, worst.1, worst.1.to_bits());
        for x in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 88.72, 88.73, -87.5, -103.0, -104.0, 0.0, -0.0] {
            let (got, want) = (expf(x), libm::expf(x));
            assert!(got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(), "expf({x}) = {got}, want {want}");
        }
    }
}
