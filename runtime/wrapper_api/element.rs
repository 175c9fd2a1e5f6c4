//! Element types a tensor can be viewed as, and the two 16-bit float formats.

use super::Dtype;

mod sealed {
    /// Only this module implements [`Element`](super::Element): the typed views rely on
    /// every implementor being plain data for which every bit pattern is valid.
    pub trait Sealed {}
}

/// A Rust type that is exactly one [`Dtype`]'s element: `f32`, `i32`, `i8`, `i64`,
/// `i16`, `u8`, [`Bf16`] and [`F16`]. Sealed: every bit pattern of an implementor is a
/// valid value, which is what lets device memory be viewed as `[T]`.
pub trait Element: sealed::Sealed + Copy + Default + PartialEq + core::fmt::Debug + 'static {
    /// The dtype whose elements this type holds.
    const DTYPE: Dtype;
}

macro_rules! element {
    ($($ty:ty => $dtype:ident),* $(,)?) => {$(
        impl sealed::Sealed for $ty {}
        impl Element for $ty {
            const DTYPE: Dtype = Dtype::$dtype;
        }
        const _: () = assert!(core::mem::size_of::<$ty>() == Dtype::$dtype.size());
    )*};
}

element! {
    f32 => Float32,
    Bf16 => Bfloat16,
    F16 => Float16,
    i32 => Int32,
    i8 => Int8,
    i64 => Int64,
    i16 => Int16,
    u8 => Uint8,
}

/// A bfloat16: the upper 16 bits of an IEEE binary32.
///
/// ```
/// use neuroncustomop::wrapper_api::Bf16;
/// assert_eq!(Bf16::from_f32(1.5).to_f32(), 1.5);
/// assert_eq!(Bf16::from_f32(1.0 + 1.0 / 256.0).to_bits(), 0x3f80); // ties to even
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Bf16(u16);

impl Bf16 {
    /// From the raw bits.
    pub const fn from_bits(bits: u16) -> Self {
        Self(bits)
    }
    /// The raw bits.
    pub const fn to_bits(self) -> u16 {
        self.0
    }
    /// Exact widening to `f32`.
    pub fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.0) << 16)
    }
    /// Nearest bfloat16, ties to even; NaN stays NaN (quieted).
    pub fn from_f32(value: f32) -> Self {
        let bits = value.to_bits();
        if value.is_nan() {
            return Self((bits >> 16) as u16 | 0x0040);
        }
        let round = 0x7fff + ((bits >> 16) & 1);
        // Cannot overflow: the largest finite input rounds to infinity's bit pattern.
        Self(((bits + round) >> 16) as u16)
    }
}

/// An IEEE binary16 half-precision float.
///
/// ```
/// use neuroncustomop::wrapper_api::F16;
/// assert_eq!(F16::from_f32(-2.5).to_f32(), -2.5);
/// assert_eq!(F16::from_f32(65520.0).to_f32(), f32::INFINITY); // past the largest finite
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F16(u16);

impl F16 {
    /// From the raw bits.
    pub const fn from_bits(bits: u16) -> Self {
        Self(bits)
    }
    /// The raw bits.
    pub const fn to_bits(self) -> u16 {
        self.0
    }
    /// Exact widening to `f32`.
    pub fn to_f32(self) -> f32 {
        let sign = u32::from(self.0 & 0x8000) << 16;
        let exp = u32::from(self.0 >> 10) & 0x1f;
        let mant = u32::from(self.0) & 0x3ff;
        let magnitude = match exp {
            0 => {
                // Zero or subnormal: mant * 2^-24, exact in f32.
                let scaled = mant as f32 * (1.0 / 16_777_216.0);
                scaled.to_bits()
            }
            0x1f => 0x7f80_0000 | (mant << 13),
            _ => ((exp + 127 - 15) << 23) | (mant << 13),
        };
        f32::from_bits(sign | magnitude)
    }
    /// Nearest binary16, ties to even; overflow gives infinity, NaN stays NaN (quieted).
    pub fn from_f32(value: f32) -> Self {
        let bits = value.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        let abs = bits & 0x7fff_ffff;
        if abs > 0x7f80_0000 {
            return Self(sign | 0x7e00 | ((abs >> 13) & 0x3ff) as u16);
        }
        // At or above 65520 (the midpoint past the largest finite half) rounds to infinity.
        if abs >= 0x477f_f000 {
            return Self(sign | 0x7c00);
        }
        let exp = (abs >> 23) as i32;
        if exp >= 113 {
            // Normal half: rebias the exponent, round the 13 dropped bits to even. A carry
            // out of the mantissa correctly bumps the exponent.
            let half = abs - (112 << 23);
            let round = 0x0fff + ((half >> 13) & 1);
            return Self(sign | ((half + round) >> 13) as u16);
        }
        if exp < 102 {
            // Below half the smallest subnormal (2^-25): rounds to zero.
            return Self(sign);
        }
        // Subnormal half: value = mant * 2^-24; shift the implicit-1 mantissa into place.
        let mant = (abs & 0x7f_ffff) | 0x80_0000;
        let shift = (126 - exp) as u32; // 14..=24
        let kept = mant >> shift;
        let rest = mant & ((1 << shift) - 1);
        let halfway = 1 << (shift - 1);
        let round_up = rest > halfway || (rest == halfway && kept & 1 == 1);
        Self(sign | (kept + u32::from(round_up)) as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every finite non-negative half, ordered by value (their bit patterns are ordered).
    fn finite_halves() -> impl Iterator<Item = F16> {
        (0u16..0x7c00).map(F16::from_bits)
    }

    /// Nearest half to `x` by search over all halves, ties to the even bit pattern; the
    /// reference for `F16::from_f32`.
    fn nearest_half(x: f32) -> u16 {
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        let a = f64::from(x.abs());
        let max = 65504.0f64;
        if a >= max + 16.0 {
            return sign | 0x7c00;
        }
        let mut best = 0u16;
        let mut best_err = f64::INFINITY;
        for h in finite_halves() {
            let err = (f64::from(h.to_f32()) - a).abs();
            if err < best_err || (err == best_err && h.to_bits() & 1 == 0) {
                best = h.to_bits();
                best_err = err;
            }
        }
        sign | best
    }

    #[test]
    fn f16_widening_round_trips_every_non_nan_half() {
        for bits in 0..=u16::MAX {
            let h = F16::from_bits(bits);
            let wide = h.to_f32();
            if wide.is_nan() {
                assert_eq!(bits & 0x7c00, 0x7c00);
                assert!(F16::from_f32(wide).to_f32().is_nan());
            } else {
                assert_eq!(F16::from_f32(wide).to_bits(), bits, "half {bits:#06x}");
            }
        }
    }

    /// 2^-24 and 2^-25 by their bits: `powi`'s precision is unspecified (Miri's differs
    /// in the last place).
    const TWO_POW_MINUS_24: f32 = f32::from_bits(0x3380_0000);
    const TWO_POW_MINUS_25: f32 = f32::from_bits(0x3300_0000);

    #[test]
    fn f16_known_values() {
        assert_eq!(F16::from_bits(0x3c00).to_f32(), 1.0);
        assert_eq!(F16::from_bits(0x0001).to_f32(), TWO_POW_MINUS_24);
        assert_eq!(F16::from_bits(0x7bff).to_f32(), 65504.0);
        assert_eq!(F16::from_f32(65519.0).to_bits(), 0x7bff);
        assert_eq!(F16::from_f32(65520.0).to_bits(), 0x7c00);
        assert_eq!(F16::from_f32(TWO_POW_MINUS_25).to_bits(), 0); // tie to even zero
        assert_eq!(F16::from_f32(1.5 * TWO_POW_MINUS_25).to_bits(), 1);
        assert_eq!(F16::from_f32(-0.0).to_bits(), 0x8000);
    }

    #[test]
    fn f16_midpoints_round_to_even() {
        for bits in 0u16..0x7bff {
            let lo = f64::from(F16::from_bits(bits).to_f32());
            let hi = f64::from(F16::from_bits(bits + 1).to_f32());
            let mid = ((lo + hi) / 2.0) as f32; // exact: halves have 11 significant bits
            let even = if bits & 1 == 0 { bits } else { bits + 1 };
            assert_eq!(F16::from_f32(mid).to_bits(), even, "midpoint above {bits:#06x}");
        }
    }

    #[test]
    fn bf16_known_values() {
        assert_eq!(Bf16::from_f32(1.0).to_bits(), 0x3f80);
        assert_eq!(Bf16::from_f32(f32::from_bits(0x3f80_8000)).to_bits(), 0x3f80); // tie, even
        assert_eq!(Bf16::from_f32(f32::from_bits(0x3f81_8000)).to_bits(), 0x3f82); // tie, even
        assert_eq!(Bf16::from_f32(f32::from_bits(0x3f80_8001)).to_bits(), 0x3f81);
        assert_eq!(Bf16::from_f32(f32::MAX).to_bits(), 0x7f80); // rounds to infinity
        assert!(Bf16::from_f32(f32::NAN).to_f32().is_nan());
    }

    proptest! {
        // Miri interprets about 1000x slower: a few cases there, the full count natively.
        #![proptest_config(if cfg!(miri) { ProptestConfig::with_cases(4) } else { ProptestConfig::default() })]

        #[test]
        fn f16_from_f32_is_nearest_ties_even(x in any::<f32>().prop_filter("not NaN", |x| !x.is_nan())) {
            prop_assert_eq!(F16::from_f32(x).to_bits(), nearest_half(x));
        }

        #[test]
        fn f16_from_f32_small_values(x in -1e-3f32..1e-3) {
            prop_assert_eq!(F16::from_f32(x).to_bits(), nearest_half(x));
        }

        #[test]
        fn bf16_from_f32_is_nearest_ties_even(bits in any::<u32>()) {
            let x = f32::from_bits(bits);
            prop_assume!(!x.is_nan());
            let lo = Bf16::from_bits((bits >> 16) as u16);
            let hi = Bf16::from_bits((bits >> 16) as u16 + 1);
            let got = Bf16::from_f32(x);
            // Past the largest finite bfloat16, `hi` is infinity's pattern; for rounding it
            // stands for 2^128, the next power of two.
            let value = |b: Bf16| if b.to_bits() & 0x7fff == 0x7f80 { f64::from_bits(0x47F0_0000_0000_0000) /* 2^128 */ } else { f64::from(b.to_f32()).abs() };
            let a = f64::from(x).abs();
            let (dl, dh) = (a - value(lo), value(hi) - a);
            let expected = if bits & 0xffff == 0 || dl < dh { lo } else if dh < dl { hi }
                else if lo.to_bits() & 1 == 0 { lo } else { hi };
            prop_assert_eq!(got.to_bits(), expected.to_bits());
        }
    }
}
