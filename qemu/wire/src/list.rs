//! Lists of numbers inside one `key=value` field of a line (a backtrace's PCs, a
//! shape, byte ranges, a fault's frames): written from a slice by the side that has
//! the numbers ([`List::Raw`]), read as checked text by the side that parses
//! ([`List::Text`]), without allocating (the crate is `no_std`).
//!
//! ```
//! use neuroncustomop_wire::list::List;
//!
//! let shape: List<'_, u16> = List::Raw(&[16, 64]);
//! assert_eq!(shape.to_string(), "16x64");
//! assert_eq!(List::<u16>::parse("16x64"), Ok(shape));
//! ```

use crate::report::ParseError;
use core::fmt;

/// `text` in hex, without `0x` and without a sign.
pub(crate) fn bare_hex(text: &str) -> Option<u64> {
    if text.starts_with('+') || text.starts_with("0x") {
        return None;
    }
    u64::from_str_radix(text, 16).ok()
}

/// One element of a [`List`]: how it is written and read, and what separates two.
pub trait Item: Copy + PartialEq + fmt::Debug {
    /// Between two elements.
    const SEPARATOR: char;
    /// Writes one element.
    ///
    /// # Errors
    /// The formatter's.
    fn write(self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    /// Reads one element.
    fn read(text: &str) -> Option<Self>;
}

/// A PC (a backtrace's, a call path's): bare hex, `;` between two.
impl Item for u32 {
    const SEPARATOR: char = ';';
    fn write(self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:x}")
    }
    fn read(text: &str) -> Option<Self> {
        bare_hex(text)?.try_into().ok()
    }
}

/// A tensor dimension: decimal, `x` between two (`16x64`).
impl Item for u16 {
    const SEPARATOR: char = 'x';
    fn write(self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
    fn read(text: &str) -> Option<Self> {
        if text.starts_with('+') { None } else { text.parse().ok() }
    }
}

/// A byte range `lo..hi`: `lo-hi` in bare hex, `,` between two.
impl Item for (u64, u64) {
    const SEPARATOR: char = ',';
    fn write(self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:x}-{:x}", self.0, self.1)
    }
    fn read(text: &str) -> Option<Self> {
        let (lo, hi) = text.split_once('-')?;
        Some((bare_hex(lo)?, bare_hex(hi)?))
    }
}

/// A fault's frame (`crate::fault`): `0x`-hex, `,` between two.
impl Item for u64 {
    const SEPARATOR: char = ',';
    fn write(self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:#010x}")
    }
    fn read(text: &str) -> Option<Self> {
        let digits = text.strip_prefix("0x")?;
        if digits.starts_with('+') {
            return None;
        }
        u64::from_str_radix(digits, 16).ok()
    }
}

/// A list of [`Item`]s in a line: the plugin writes [`List::Raw`], the host parses
/// [`List::Text`] (checked when parsed: every element reads). Two lists are equal when
/// their elements are.
#[derive(Clone, Copy, Debug)]
pub enum List<'a, T> {
    /// The elements themselves (plugin side).
    Raw(&'a [T]),
    /// Their text (host side).
    Text(&'a str),
}

impl<'a, T: Item> List<'a, T> {
    /// No element.
    pub const EMPTY: Self = Self::Text("");

    /// The elements.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        let (raw, text) = match self {
            Self::Raw(raw) => (*raw, ""),
            Self::Text(text) => (&[][..], *text),
        };
        let parsed = text.split(T::SEPARATOR).filter(|part| !part.is_empty()).filter_map(T::read);
        raw.iter().copied().chain(parsed)
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    /// The list in `text`.
    ///
    /// # Errors
    /// [`ParseError`] when an element does not read.
    pub fn parse(text: &'a str) -> Result<Self, ParseError> {
        if !text.is_empty() && !text.split(T::SEPARATOR).all(|part| T::read(part).is_some()) {
            return Err(ParseError);
        }
        Ok(Self::Text(text))
    }
}

impl<T: Item> PartialEq for List<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl<T: Item> Eq for List<'_, T> {}

impl<T: Item> fmt::Display for List<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, item) in self.iter().enumerate() {
            if index > 0 {
                write!(f, "{}", T::SEPARATOR)?;
            }
            item.write(f)?;
        }
        Ok(())
    }
}
