//! `expf`, `logf` and `tanhf` for the core's FPU: the kernels' (and `torch::exp`'s,
//! softmax's inner call) in single-precision arithmetic and fused multiply-adds
//! (`madd.s`), 36, 45 and 58 instructions a call where the `libm` crate's, built
//! without the FPU (docs/toolchain.md, "LLVM defects" 5), take 2,400 to 4,000
//! (docs/PERFORMANCE.md, "Math on the FPU"). Each leaves the inputs outside its fast
//! range (special values, overflow; subnormals but for `tanhf`) to the crate's function.
//!
//! `expf`'s method is the classic one, with Cody and Waite's two-part ln 2 and the
//! polynomial of S. L. Moshier's Cephes `expf` (Cephes Math Library 2.2,
//! `expf.c`): x = n·ln 2 + r with n = round(x / ln 2), |r| <= ln 2 / 2;
//! e<sup>x</sup> = 2<sup>n</sup>·(1 + r + r²·P(r)), P of degree 5. The power of two is
//! built in the exponent bits, and the last step is one fused multiply-add,
//! 2<sup>n</sup> + 2<sup>n</sup>·(r + r²·P(r)), so the result is rounded once.
//! [`logf`] and [`tanhf`] say their own.
//!
//! `expf` and `logf` are within 1 ulp of the `libm` crate's (which are correctly
//! rounded in all but rare cases), `tanhf` within 1 ulp of tanh correctly rounded
//! (the crate's is up to 2 ulp from it): the host tests below check every 251st or
//! 1,021st float of each range (every one with `FPU_MATH_EXHAUSTIVE=1`), with the same
//! fused operations the device uses, so the bits are the device's;
//! `qemu/tests/libm.rs` compares the device's with glibc's on 100,000 inputs each.

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

/// What [`exp_parts`] reads, in the order of its use: the reduction's constants and
/// the coefficients of P in Horner's order (highest first).
#[repr(C)]
struct ExpConstants<const DEGREE: usize> {
    inv_ln2: f32,
    rounder: f32,
    minus_ln2_hi: f32,
    minus_ln2_lo: f32,
    p: [f32; DEGREE],
}

/// The constants of [`expf`] (Cephes' P, degree 5).
static EXPF_CONSTANTS: Opaque<ExpConstants<6>> = Opaque::new(ExpConstants {
    inv_ln2: INV_LN2,
    rounder: ROUNDER,
    minus_ln2_hi: MINUS_LN2_HI,
    minus_ln2_lo: MINUS_LN2_LO,
    p: [P[5], P[4], P[3], P[2], P[1], P[0]],
});

/// A table of constants the optimiser cannot see into, so that each is one `lsi` from
/// its address (one `l32r`); as literals LLVM 22 loads each float with `l32r` and
/// `wfr`, two instructions. An `UnsafeCell` makes the static writable in LLVM's eyes,
/// so it neither folds its loads nor, with the symbol exported (`export_name`: code
/// outside the crate could write it), proves them constant; nothing writes it.
#[repr(transparent)]
struct Opaque<T>(core::cell::UnsafeCell<T>);

// SAFETY: nothing writes the tables (their symbols are the runtime's own, named in no
// header), so sharing them between threads (the host tests) shares immutable data.
unsafe impl<T> Sync for Opaque<T> {}

impl<T> Opaque<T> {
    const fn new(table: T) -> Self {
        Opaque(core::cell::UnsafeCell::new(table))
    }

    #[inline(always)]
    fn get(&self) -> &T {
        // SAFETY: never written (see the `Sync` impl), so a shared reference is sound.
        unsafe { &*self.0.get() }
    }
}

/// e<sup>x</sup> as 2<sup>n</sup> and e<sup>r</sup> - 1 (x = n·ln 2 + r), for
/// |x| <= [`FAST_LIMIT`]: e<sup>x</sup> = 2<sup>n</sup> + 2<sup>n</sup>·(e<sup>r</sup> - 1).
/// `c.rounder` sets the bias of 2<sup>n</sup>'s exponent: 127 for 2<sup>n</sup>, 126 for
/// 2<sup>n - 1</sup>.
#[inline(always)]
fn exp_parts<const DEGREE: usize>(c: &ExpConstants<DEGREE>, x: f32) -> (f32, f32) {
    let shifted = fma(x, c.inv_ln2, c.rounder);
    let n = shifted - c.rounder;
    let r = fma(n, c.minus_ln2_lo, fma(n, c.minus_ln2_hi, x));
    // n + bias in 1..=253: shifted into the exponent field, 2^n (or 2^(n - 1)).
    let scale = f32::from_bits(shifted.to_bits() << 23);
    let mut q = c.p[0];
    for &coefficient in &c.p[1..] {
        q = fma(q, r, coefficient);
    }
    (scale, fma(r * r, q, r))
}

/// [`expf`] for |x| <= [`FAST_LIMIT`]: the last step one fused multiply-add.
#[inline(always)]
fn expf_core(x: f32) -> f32 {
    let (scale, expm1) = exp_parts(EXPF_CONSTANTS.get(), x);
    fma(scale, expm1, scale)
}

/// ln x, within 1 ulp of the correctly rounded result.
///
/// The method of the ARM optimized-routines `logf` (the `libm` crate's, from musl), in
/// single precision: x = 2<sup>k</sup>·z with z in [0.699, 1.398); one of 16 subintervals
/// of z gives c with ln x = k·ln 2 + ln c + ln(1 + r), r = z/c - 1, |r| < 0.041, and
/// ln(1 + r) = r + r²·P(r), P Taylor's of degree 4. 1/c has at most 7 significant bits,
/// so that r = z·(1/c) - 1 is exact in one fused multiply-add; ln 2 and ln c are split
/// in a part on a 2<sup>-16</sup> grid (so that k·ln 2 + ln c is exact too) and the rest.
/// The exact sum of k·ln 2 + ln c and r, as two floats (Dekker's Fast2Sum), leaves one
/// rounding of consequence, the last.
///
/// Zero, negative numbers, subnormals, infinity and NaN go to the `libm` crate's `logf`.
#[inline]
pub fn logf(x: f32) -> f32 {
    let ix = x.to_bits();
    // Positive normal numbers: the others wrap to above the range.
    if ix.wrapping_sub(0x0080_0000) < 0x7f80_0000 - 0x0080_0000 { logf_core(ix) } else { libm::logf(x) }
}

/// The bits of z's lowest value, 0.69921875: [`logf`] takes z in [it, 2·it).
const LOG_OFF: u32 = 0x3f33_0000;

/// Per subinterval i of z (the 4 bits below `LOG_OFF`'s exponent in z's bits less
/// `LOG_OFF`): 1/c (at most 7 significant bits), ln c on a 2<sup>-16</sup> grid, the
/// rest of ln c, and padding to 16 bytes. Subinterval 9 holds 1 and has c = 1, so that
/// near 1, ln x = ln(1 + r) with r = z - 1 exact. (Generated from 1/c = the middle of
/// the subinterval's reciprocal, rounded to the coarsest grid that keeps r exact, and
/// ln c in double precision.)
const LOG_TABLE: [[f32; 4]; 16] = {
    const fn row(invc: u32, logc_hi: u32, logc_lo: u32) -> [f32; 4] {
        [f32::from_bits(invc), f32::from_bits(logc_hi), f32::from_bits(logc_lo), 0.0]
    }
    [
        row(0x3fb4_0000, 0xbeae_8e00, 0x3510_29fe),
        row(0x3fac_0000, 0xbe97_4800, 0x36ea_28f7),
        row(0x3fa4_0000, 0xbe7d_c800, 0xb643_6af2),
        row(0x3fa0_0000, 0xbe64_8000, 0x3583_8656),
        row(0x3f98_0000, 0xbe2f_f800, 0xb6c1_c29e),
        row(0x3f94_0000, 0xbe14_ac00, 0x36b4_1f80),
        row(0x3f8c_0000, 0xbdb7_8800, 0x3635_d46a),
        row(0x3f88_0000, 0xbd78_5000, 0xb5c3_0046),
        row(0x3f84_0000, 0xbcfc_2000, 0x36b2_78c4),
        row(0x3f80_0000, 0x0000_0000, 0x0000_0000),
        row(0x3f70_0000, 0x3d84_3000, 0xb6ce_94c4),
        row(0x3f68_0000, 0x3dc9_9800, 0x36bc_bab3),
        row(0x3f58_0000, 0x3e2d_fc00, 0xb6fe_52af),
        row(0x3f50_0000, 0x3e54_a000, 0xb616_1ba9),
        row(0x3f44_0000, 0x3e88_bc00, 0x3668_227e),
        row(0x3f3c_0000, 0x3e9e_1200, 0x3693_b99a),
    ]
};

/// [`logf`]'s constants in the order of use: -1, ln 2 in two parts (the first
/// [`MINUS_LN2_HI`]'s magnitude, on the 2<sup>-16</sup> grid), and Taylor's
/// coefficients of ln(1 + r) - r: -1/2, 1/3, -1/4, 1/5, -1/6.
const LOG_CONSTANTS: [f32; 8] = [
    -1.0,
    f32::from_bits(0x3f31_7200),
    f32::from_bits(0x35bf_be8e),
    -0.5,
    f32::from_bits(0x3eaa_aaab),
    -0.25,
    f32::from_bits(0x3e4c_cccd),
    f32::from_bits(0xbe2a_aaab),
];

/// [`LOG_CONSTANTS`] and [`LOG_TABLE`] in one static, so that one address reaches both
/// (see [`Opaque`]).
#[repr(C)]
struct LogData {
    constants: [f32; 8],
    table: [[f32; 4]; 16],
}

static LOG_DATA: Opaque<LogData> = Opaque::new(LogData { constants: LOG_CONSTANTS, table: LOG_TABLE });

/// [`logf`] of the positive normal float of bits `ix`.
#[inline(always)]
fn logf_core(ix: u32) -> f32 {
    let data = LOG_DATA.get();
    let c = &data.constants;
    let tmp = ix.wrapping_sub(LOG_OFF);
    let row = &data.table[(tmp >> 19) as usize & 15];
    let k = (tmp as i32 >> 23) as f32;
    let z = f32::from_bits(ix.wrapping_sub(tmp & 0xff80_0000));
    // Exact: 1/c's few bits keep the product's difference from 1 within 24 bits.
    let r = fma(z, row[0], c[0]);
    // Exact: both terms on the 2^-16 grid, below 2^8.
    let hi = fma(k, c[1], row[1]);
    let lo = fma(k, c[2], row[2]);
    // hi + r = sum + err exactly (|hi| >= |r| where hi is not 0).
    let sum = hi + r;
    let err = (hi - sum) + r;
    let p = fma(fma(fma(fma(c[7], r, c[6]), r, c[5]), r, c[4]), r, c[3]);
    let tail = fma(r * r, p, lo);
    sum + (err + tail)
}

/// tanh x, within 1 ulp of the correctly rounded result (and within 2 of the `libm`
/// crate's `tanhf`, which is itself up to 2 ulp from it).
///
/// |x| <= ln 3 / 2 (0.549): x + x³·P(x²), P of degree 4 (from a Chebyshev interpolation
/// of (tanh x - x) / x³ over the range, the coefficients rounded to floats); zeros and
/// subnormals come out as x.
/// ln 3 / 2 < |x| <= 10: 1 - 1/h with h = (e<sup>2|x|</sup> + 1) / 2, from `exp_parts`
/// with 2<sup>n - 1</sup> and a polynomial one degree lower than [`expf`]'s (tanh needs
/// e<sup>2|x|</sup> to about 2<sup>-26</sup>, not 2<sup>-30</sup>), in one fused
/// multiply-add. The quotient without a division (`__divsf3` is 30 instructions):
/// `reciprocal`'s 1/h to 16 bits, then one step of Markstein's correction,
/// q + (1 - h·q)·q, which squares its error (2<sup>-32</sup>, far below the last
/// rounding of 1 - q). The sign of x by a branch.
/// |x| > 10 (±1), infinities and NaN go to the crate's `tanhf`.
#[inline]
pub fn tanhf(x: f32) -> f32 {
    let w = x.to_bits() & 0x7fff_ffff;
    let a = f32::from_bits(w);
    let c = TANH_CONSTANTS.get();
    let magnitude = if w <= 0x3f0c_9f54 {
        let a2 = a * a;
        let mut p = c.small[0];
        for &coefficient in &c.small[1..] {
            p = fma(p, a2, coefficient);
        }
        fma(a * a2, p, a)
    } else if w <= 0x4120_0000 {
        let (scale, expm1) = exp_parts(&c.exp, a + a);
        let h = fma(scale, expm1, scale + c.half);
        let y = reciprocal(h, c.one);
        // 2/(e^2|x| + 1) = 1/h, corrected with the exact residual 1 - h·y.
        let residual = fma(-h, y, c.one);
        c.one - fma(residual, y, y)
    } else {
        return libm::tanhf(x);
    };
    if x.is_sign_negative() { -magnitude } else { magnitude }
}

/// 1/d for a normal positive `d`, to about 16 bits: the bit pattern's estimate
/// (0x7ef311c3 less d's bits, about 4 correct bits), then two Newton-Raphson steps
/// y + y·(1 - d·y) in fused multiply-adds, each doubling them. (Enough for [`tanhf`]:
/// the correction step of the quotient squares the error again.)
#[inline(always)]
fn reciprocal(d: f32, one: f32) -> f32 {
    let mut y = f32::from_bits(0x7ef3_11c3 - d.to_bits());
    for _ in 0..2 {
        y = fma(y, fma(-d, y, one), y);
    }
    y
}

/// [`tanhf`]'s constants, both branches' from one address.
#[repr(C)]
struct TanhConstants {
    /// For e<sup>2|x|</sup>: the rounder with the exponent bias 126 (2<sup>n - 1</sup>),
    /// and P of degree 4, a Chebyshev interpolation of (e<sup>r</sup> - 1 - r) / r² on
    /// |r| <= ln 2 / 2 (within 7·10⁻⁸; the coefficients rounded to floats).
    exp: ExpConstants<5>,
    one: f32,
    half: f32,
    /// P of the small branch, highest first: (tanh x - x) / x³ ≈ P(x²) on
    /// |x| <= ln 3 / 2, within 6·10⁻⁹ relative.
    small: [f32; 5],
}

static TANH_CONSTANTS: Opaque<TanhConstants> = Opaque::new(TanhConstants {
    exp: ExpConstants {
        inv_ln2: INV_LN2,
        rounder: f32::from_bits(ROUNDER.to_bits() - 1),
        minus_ln2_hi: MINUS_LN2_HI,
        minus_ln2_lo: MINUS_LN2_LO,
        p: [
            f32::from_bits(0x3ab6_887e),
            f32::from_bits(0x3c09_05b1),
            f32::from_bits(0x3d2a_aa8d),
            f32::from_bits(0x3e2a_aa6f),
            f32::from_bits(0x3f00_0000),
        ],
    },
    one: 1.0,
    half: 0.5,
    small: [
        f32::from_bits(0xbbd8_c1e8),
        f32::from_bits(0x3cae_963e),
        f32::from_bits(0xbd5c_d08f),
        f32::from_bits(0x3e08_87f7),
        f32::from_bits(0xbeaa_aaaa),
    ],
});

#[cfg(test)]
mod tests {
    use super::*;

    /// Units in the last place between two floats (-0 and +0 the same), or `u32::MAX`
    /// when one is NaN and the other not.
    fn ulps(a: f32, b: f32) -> u32 {
        if a.is_nan() || b.is_nan() {
            return if a.is_nan() && b.is_nan() { 0 } else { u32::MAX };
        }
        let ordered = |x: f32| {
            let bits = x.to_bits();
            if bits >> 31 == 1 { -i64::from(bits & 0x7fff_ffff) } else { i64::from(bits) }
        };
        ordered(a).abs_diff(ordered(b)) as u32
    }

    /// The largest distance of `ours` from `theirs` on every `step`th float of `ranges`
    /// (every one with `FPU_MATH_EXHAUSTIVE=1`) and on `extra`, with the input where it
    /// is; and how many inputs were compared.
    fn worst(
        ours: impl Fn(f32) -> f32,
        theirs: impl Fn(f32) -> f32,
        ranges: &[core::ops::Range<u32>],
        step: usize,
        extra: &[f32],
    ) -> ((u32, f32), u64) {
        let step = if std::env::var_os("FPU_MATH_EXHAUSTIVE").is_some() { 1 } else { step };
        let mut worst = (0, 0.0f32);
        let mut count = 0u64;
        let inputs = ranges.iter().flat_map(|range| range.clone().step_by(step)).map(f32::from_bits);
        for x in inputs.chain(extra.iter().copied()) {
            let distance = ulps(ours(x), theirs(x));
            if distance > worst.0 {
                worst = (distance, x);
            }
            count += 1;
        }
        (worst, count)
    }

    /// `ours` and `theirs` give the same bits on each of `specials` (or both NaN).
    fn same_on(ours: fn(f32) -> f32, theirs: fn(f32) -> f32, specials: &[f32]) {
        for &x in specials {
            let (got, want) = (ours(x), theirs(x));
            assert!(
                got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
                "f({x:e}) = {got:e}, want {want:e}"
            );
        }
    }

    /// The special values the fast paths leave to the `libm` crate, with both signs.
    const SPECIALS: [f32; 10] = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        f32::from_bits(1),
        f32::from_bits(0x8000_0001),
        f32::from_bits(0x007f_ffff),
        f32::from_bits(0x807f_ffff),
        f32::MAX,
    ];

    /// Every 1,021st float of the fast range, its edges and the special values against
    /// the `libm` crate's `expf` (what the kernels' `expf` was).
    #[test]
    #[cfg_attr(miri, ignore = "millions of evaluations")]
    fn expf_is_within_one_ulp_of_libm_everywhere() {
        let edges = [88.72, 88.73, -87.5, -103.0, -104.0, 87.0, -87.0];
        let ((ulps, at), count) = worst(expf, libm::expf, &[0..0x42ae_0000, 0x8000_0000..0xc2ae_0001], 1021, &edges);
        assert!(count > 2_000_000, "{count}");
        assert!(ulps <= 1, "{ulps} ulps at expf({at:e}) ({:#010x})", at.to_bits());
        same_on(expf, libm::expf, &SPECIALS);
    }

    /// Every 1,021st positive float (every 1,021st negative one below -2^-126 too: NaN
    /// for both), the subintervals' edges and the special values, against the `libm`
    /// crate's `logf`, which is within 1 ulp of the correctly rounded result (this one
    /// is correctly rounded but for about 1 input in 100,000).
    #[test]
    #[cfg_attr(miri, ignore = "millions of evaluations")]
    fn logf_is_within_one_ulp_of_libm_everywhere() {
        let edges: std::vec::Vec<f32> =
            (0..=16).map(|i| f32::from_bits(LOG_OFF + (i << 19))).chain([1.0, -1.0]).collect();
        let ((ulps, at), count) = worst(logf, libm::logf, &[0..0x7f80_0001, 0x8000_0000..0x8100_0000], 1021, &edges);
        assert!(count > 2_000_000, "{count}");
        assert!(ulps <= 1, "{ulps} ulps at logf({at:e}) ({:#010x})", at.to_bits());
        same_on(logf, libm::logf, &SPECIALS);
    }

    /// Every 251st float of |x| <= 10 and the branches' edges: within 1 ulp of tanh
    /// correctly rounded (the host's double-precision `tanh`, rounded to float), and
    /// within 2 of the `libm` crate's `tanhf`, which is itself up to 2 ulp from it
    /// (musl's formulas in float: 20,640 of every 7th float of the range; this one
    /// none). The special values: as the crate's.
    #[test]
    #[cfg_attr(miri, ignore = "millions of evaluations")]
    fn tanhf_is_within_one_ulp_of_tanh_and_two_of_libm() {
        // ±10, the next float, and ln 3 / 2 (where the method changes) and the next.
        let edges = [10.0, -10.0, 10.000001, f32::from_bits(0x3f0c_9f54), f32::from_bits(0xbf0c_9f55)];
        let ranges = [0..0x4120_0001, 0x8000_0000..0xc120_0001];
        let correctly_rounded = |x: f32| f64::from(x).tanh() as f32;
        let ((ulps, at), count) = worst(tanhf, correctly_rounded, &ranges, 251, &edges);
        assert!(count > 1_000_000, "{count}");
        assert!(ulps <= 1, "{ulps} ulps from tanh at tanhf({at:e}) ({:#010x})", at.to_bits());
        let ((ulps, at), _) = worst(tanhf, libm::tanhf, &ranges, 251, &edges);
        assert!(ulps <= 2, "{ulps} ulps from the libm crate's at tanhf({at:e}) ({:#010x})", at.to_bits());
        same_on(tanhf, libm::tanhf, &SPECIALS);
    }
}
