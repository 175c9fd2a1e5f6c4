//! [`ReportLine`]: one line of a report the runtime writes when a core stops (a fault,
//! a panic, an abort), built on the stack with its own decimal and hex digits.
//!
//! `core::fmt` would do the same through its padding and width machinery, about 2 KiB of
//! code in every image (docs/PERFORMANCE.md, "Text size"); only a panic message with
//! arguments, which is the op author's, still goes through it ([`core::fmt::Write`]).

use core::fmt;

/// The longest line: a `FAULT` line with 16 frames is about 280 bytes.
pub const REPORT_LINE_CAPACITY: usize = 320;

/// A line of at most [`REPORT_LINE_CAPACITY`] bytes. What does not fit is dropped, but
/// [`ReportLine::end`] always ends the line with its newline.
///
/// Its methods are never inlined, and the digit loops not unrolled: a report is a chain
/// of a dozen calls, which the runtime's `opt-level = 3` would otherwise copy into every
/// report, with each loop unrolled ten times (440 bytes for `decimal` alone).
///
/// ```
/// use neuroncustomop::start_exit::ReportLine;
///
/// let mut line = ReportLine::new();
/// line.text("pc=").hex(0xBEEF).text(" depth=").decimal(42).end();
/// assert_eq!(line.as_bytes(), b"pc=0x0000beef depth=42\n");
/// ```
pub struct ReportLine {
    bytes: [u8; REPORT_LINE_CAPACITY],
    len: usize,
}

impl Default for ReportLine {
    fn default() -> Self {
        Self::new()
    }
}

impl ReportLine {
    /// An empty line.
    pub const fn new() -> Self {
        ReportLine { bytes: [0; REPORT_LINE_CAPACITY], len: 0 }
    }

    /// Appends `text`, as much of it as fits.
    pub fn text(&mut self, text: &str) -> &mut Self {
        self.append(text.as_bytes())
    }

    /// Appends `value` in decimal (`{}`).
    #[inline(never)]
    #[cfg_attr(target_os = "none", optimize(size))]
    pub fn decimal(&mut self, value: u32) -> &mut Self {
        let mut digits = [0u8; 10];
        let mut count = 0;
        let mut rest = value;
        for digit in digits.iter_mut().rev() {
            *digit = b'0' + (rest % 10) as u8;
            count += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        self.append(digits.split_at(digits.len().saturating_sub(count)).1)
    }

    /// Appends `value` as `0x` and 8 lowercase hex digits (`{:#010x}`).
    #[inline(never)]
    pub fn hex(&mut self, value: u32) -> &mut Self {
        let mut digits = *b"0x00000000";
        let mut rest = value;
        for digit in digits[2..].iter_mut().rev() {
            *digit = b"0123456789abcdef"[(rest & 0xF) as usize];
            rest >>= 4;
        }
        self.append(&digits)
    }

    /// Ends the line with `\n`, in place of its last byte if it is full.
    #[inline(never)]
    pub fn end(&mut self) -> &mut Self {
        self.len = self.len.min(REPORT_LINE_CAPACITY - 1);
        self.append(b"\n")
    }

    /// Writes the line where the runtime's reports go: on the device through the
    /// platform's write hook on stderr (the stdout ring the loader drains, unless the
    /// platform routes it elsewhere), as a fault report; on the host to this thread's
    /// stdout ring.
    pub fn report(&self) {
        #[cfg(target_arch = "xtensa")]
        crate::arch::platform::write(2, self.as_bytes());
        #[cfg(not(target_arch = "xtensa"))]
        crate::start_exit::write_stdout(self.as_bytes());
    }

    /// Empties the line, to build another in the same buffer.
    pub fn clear(&mut self) -> &mut Self {
        self.len = 0;
        self
    }

    /// The line so far.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.split_at(self.len.min(REPORT_LINE_CAPACITY)).0
    }

    #[inline(never)]
    fn append(&mut self, bytes: &[u8]) -> &mut Self {
        let (_, free) = self.bytes.split_at_mut(self.len.min(REPORT_LINE_CAPACITY));
        let kept = bytes.len().min(free.len());
        free[..kept].copy_from_slice(&bytes[..kept]);
        self.len += kept;
        self
    }
}

/// For a panic message with arguments. A message longer than the line is cut, and the
/// cut reported as [`fmt::Error`], which ends the formatting.
impl fmt::Write for ReportLine {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let fits = text.len() <= REPORT_LINE_CAPACITY - self.len;
        self.text(text);
        if fits { Ok(()) } else { Err(fmt::Error) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write as _;

    #[test]
    fn decimal_and_hex_match_core_fmt() {
        for value in [0, 1, 9, 10, 99, 100, 4_096, 65_535, 1_000_000_007, u32::MAX - 1, u32::MAX] {
            let mut line = ReportLine::new();
            line.decimal(value).text(" ").hex(value);
            assert_eq!(line.as_bytes(), std::format!("{value} {value:#010x}").as_bytes());
        }
    }

    #[test]
    fn a_full_line_keeps_what_fits_and_still_ends_with_its_newline() {
        let mut line = ReportLine::new();
        let long = "x".repeat(REPORT_LINE_CAPACITY + 5);
        assert!(write!(line, "ab{long}").is_err(), "a cut message is reported");
        line.end();
        assert_eq!(line.as_bytes().len(), REPORT_LINE_CAPACITY);
        assert!(line.as_bytes().starts_with(b"abxxx"));
        assert_eq!(line.as_bytes().last(), Some(&b'\n'));
    }

    #[test]
    fn clear_starts_a_new_line_and_formatting_matches_core_fmt() {
        let mut line = ReportLine::new();
        line.text("first").clear();
        let (file, line_number) = ("file.rs", 12);
        write!(line, "{file}:{line_number}").unwrap();
        line.end();
        assert_eq!(line.as_bytes(), b"file.rs:12\n");
    }
}
