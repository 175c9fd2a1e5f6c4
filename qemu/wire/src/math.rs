//! The table of `<math.h>` cases the host's libm test (`qemu/tests/libm.rs`) writes and
//! the device's `math_check` firmware reads: one model of its sections, so that the two
//! sides cannot number a signature, or count its words, differently.
//!
//! The table (little-endian 32-bit words): [`MAGIC`], the number of sections; then per
//! function a section: its C name in [`NAME_WORDS`] words (NUL-padded), its [`Kind`], the
//! number of cases, and the cases, each its arguments then glibc's results (a double is
//! two words, low first; an `int` one word): [`Kind::words`].
//!
//! ```
//! use neuroncustomop_wire::math::{Kind, name_words, name_of};
//!
//! let words = name_words("remquof").unwrap();
//! assert_eq!(name_of(&words, &mut [0; 16]), b"remquof");
//! assert_eq!(Kind::from_word(Kind::F2OutInt as u32), Some(Kind::F2OutInt));
//! assert_eq!(Kind::F2OutInt.words(), (2, 2));
//! ```

/// The table's first word.
pub const MAGIC: u32 = u32::from_le_bytes(*b"MATH");

/// Words of a section's name: 16 bytes, NUL-padded.
pub const NAME_WORDS: usize = 4;

/// A function's C signature: a section's [`Kind`] word.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// `float f(float)`.
    F1 = 1,
    /// `float f(float, float)`.
    F2,
    /// `float f(float, float, float)`.
    F3,
    /// `double f(double)`.
    D1,
    /// `double f(double, double)`.
    D2,
    /// `double f(double, double, double)`.
    D3,
    /// `float f(float, int *)`: `frexpf`, `lgammaf_r`.
    FOutInt,
    /// `double f(double, int *)`.
    DOutInt,
    /// `float f(float, int)`.
    FInt,
    /// `double f(double, int)`.
    DInt,
    /// `int f(float)`.
    IntF,
    /// `int f(double)`.
    IntD,
    /// `float modff(float, float *)`.
    FOutF,
    /// `double modf(double, double *)`.
    DOutD,
    /// `float remquof(float, float, int *)`.
    F2OutInt,
    /// `double remquo(double, double, int *)`.
    D2OutInt,
}

impl Kind {
    /// Every kind, in the order of their words.
    pub const ALL: [Kind; 16] = {
        use Kind::*;
        [F1, F2, F3, D1, D2, D3, FOutInt, DOutInt, FInt, DInt, IntF, IntD, FOutF, DOutD, F2OutInt, D2OutInt]
    };

    /// The kind a section's word names; `None` for any other word.
    pub fn from_word(word: u32) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| *kind as u32 == word)
    }

    /// Words of arguments and of glibc's results per case.
    pub const fn words(self) -> (usize, usize) {
        use Kind::*;
        match self {
            F1 => (1, 1),
            F2 => (2, 1),
            F3 => (3, 1),
            D1 => (2, 2),
            D2 => (4, 2),
            D3 => (6, 2),
            FOutInt => (1, 2),
            DOutInt => (2, 3),
            FInt => (2, 1),
            DInt => (3, 2),
            IntF => (1, 1),
            IntD => (2, 1),
            FOutF => (1, 2),
            DOutD => (2, 4),
            F2OutInt => (2, 2),
            D2OutInt => (4, 3),
        }
    }
}

/// A section's name words for `name`; `None` when it does not fit (15 bytes at most,
/// keeping a NUL).
pub fn name_words(name: &str) -> Option<[u32; NAME_WORDS]> {
    let mut padded = [0u8; 4 * NAME_WORDS];
    if name.len() >= padded.len() {
        return None;
    }
    padded[..name.len()].copy_from_slice(name.as_bytes());
    Some(core::array::from_fn(|i| {
        u32::from_le_bytes([padded[4 * i], padded[4 * i + 1], padded[4 * i + 2], padded[4 * i + 3]])
    }))
}

/// The name a section's name words hold, in `bytes`: the bytes before the first NUL.
pub fn name_of<'a>(words: &[u32; NAME_WORDS], bytes: &'a mut [u8; 4 * NAME_WORDS]) -> &'a [u8] {
    *bytes = core::array::from_fn(|i| words[i / 4].to_le_bytes()[i % 4]);
    let len = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_words() {
        for (index, kind) in Kind::ALL.into_iter().enumerate() {
            assert_eq!(kind as u32, index as u32 + 1);
            assert_eq!(Kind::from_word(kind as u32), Some(kind));
        }
        assert_eq!(Kind::from_word(0), None);
        assert_eq!(Kind::from_word(17), None);
    }

    #[test]
    fn names_fit_in_fifteen_bytes() {
        let mut bytes = [0; 16];
        assert_eq!(name_of(&name_words("fmaxf").unwrap(), &mut bytes), b"fmaxf");
        assert_eq!(name_of(&name_words("a_fifteen_byte_").unwrap(), &mut bytes), b"a_fifteen_byte_");
        assert_eq!(name_words("sixteen_bytes_xx"), None);
        assert_eq!(name_of(&[0; NAME_WORDS], &mut bytes), b"");
    }
}
