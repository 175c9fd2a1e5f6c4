//! The author's own ranges in a profile: a begin and an end marker around code whose
//! instructions and predicted device time the author wants to see on their own
//! (`ncop run --profile`: a span on the trace's range lane of each core, and a row of
//! the summary's range table).
//!
//! A marker costs the kernel nothing: it is a record in the ELF section
//! [`SECTION`], which the linker script keeps out of the loaded image (`INFO`), and no
//! instruction. The profile reads the records from the image, finds in its DWARF line
//! table the first instruction of the first source line with code after each marker,
//! and has the profiling plugin note each time a core reaches one. An unprofiled run
//! instruments nothing: the records are not even loaded.
//!
//! In Rust, [`range_begin!`](crate::range_begin) and [`range_end!`](crate::range_end);
//! in C and C++, `NCOP_RANGE_BEGIN("name")` and `NCOP_RANGE_END("name")`
//! (`neuroncustomop_range.h`, which `neuroncustomop.h` includes). Both write the one
//! record [`Record`] lays out:
//!
//! | offset | field | |
//! |---:|---|---|
//! | 0 | `magic` | [`MAGIC`] |
//! | 4 | `kind` | [`BEGIN`] or [`END`] |
//! | 8 | `line` | the marker's source line |
//! | 12 | `name_len` | bytes of `name` (C: with its NUL) |
//! | 16 | `file_len` | bytes of `file` (likewise) |
//! | 20 | `name` | the range's name |
//! | 20 + `name_len` | `file` | the marker's source file (`file!()`, `__FILE__`) |
//!
//! then zeros to a 4-byte boundary; a reader skips zero words between records (a
//! compiler may align a record further).
//!
//! # Where a range begins and ends
//!
//! A marker takes effect where a debugger's breakpoint on the next source line with
//! code would: at the first instruction of each place that line's code starts. An end
//! marker whose next line has no code in the same function (a Rust function's tail
//! `Ok(out)`, merged into the caller that inlined it) takes effect where the code of
//! that function ends after the range's last line. A range is open from its begin
//! marker to its end marker (a begin while open and an end while closed change
//! nothing), on each core; the functions it calls are in it. Markers emit no code, so
//! they do not stop the compiler from moving code across them: in optimised code a
//! range is as precise as the line table (the code of the lines between the markers,
//! as the compiler scheduled it).

/// The ELF section of the records.
pub const SECTION: &str = ".ncop_ranges";
/// A record's first word: `NCRG` read as a little-endian word.
pub const MAGIC: u32 = u32::from_le_bytes(*b"NCRG");
/// A begin marker.
pub const BEGIN: u32 = 1;
/// An end marker.
pub const END: u32 = 2;

/// A record's fixed part (the module's table).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: u32,
    /// [`BEGIN`] or [`END`].
    pub kind: u32,
    /// The marker's source line.
    pub line: u32,
    /// Bytes of the name that follows.
    pub name_len: u32,
    /// Bytes of the file name after it.
    pub file_len: u32,
}

const _: () = assert!(size_of::<Header>() == 20 && align_of::<Header>() == 4);

/// One marker's record: [`Header`], then its name's `N` bytes and its file's `F`.
#[repr(C)]
#[derive(Debug)]
pub struct Record<const N: usize, const F: usize> {
    /// Its fixed part.
    pub header: Header,
    /// The range's name.
    pub name: [u8; N],
    /// The marker's source file.
    pub file: [u8; F],
}

const _: () = assert!(size_of::<Record<3, 5>>() == 28 && align_of::<Record<3, 5>>() == 4);

impl<const N: usize, const F: usize> Record<N, F> {
    /// The record of a marker of `kind` named `name` at `file:line` (`N` and `F` are
    /// their lengths).
    pub const fn new(kind: u32, line: u32, name: &str, file: &str) -> Self {
        Self {
            header: Header { magic: MAGIC, kind, line, name_len: N as u32, file_len: F as u32 },
            name: bytes(name),
            file: bytes(file),
        }
    }
}

/// `text`'s first `L` bytes.
const fn bytes<const L: usize>(text: &str) -> [u8; L] {
    let (mut out, text) = ([0; L], text.as_bytes());
    let mut i = 0;
    while i < L && i < text.len() {
        out[i] = text[i];
        i += 1;
    }
    out
}

/// Writes a marker's record; [`range_begin!`](crate::range_begin) and
/// [`range_end!`](crate::range_end) call it.
#[doc(hidden)]
#[macro_export]
macro_rules! range_marker {
    ($kind:expr, $name:literal) => {{
        const NAME: &str = $name;
        const FILE: &str = ::core::file!();
        #[used]
        #[unsafe(link_section = ".ncop_ranges")]
        static RECORD: $crate::ranges::Record<{ NAME.len() }, { FILE.len() }> =
            $crate::ranges::Record::new($kind, ::core::line!(), NAME, FILE);
    }};
}

/// Begins the author's range `name` (a string literal) in a profile, at the next source
/// line with code; no instruction, no cost ([the module's documentation](crate::ranges)).
///
/// ```
/// fn kernel(x: &mut [f32]) {
///     neuroncustomop::range_begin!("scale");
///     for v in x.iter_mut() {
///         *v *= 2.0;
///     }
///     neuroncustomop::range_end!("scale");
/// }
/// # kernel(&mut [1.0]);
/// ```
#[macro_export]
macro_rules! range_begin {
    ($name:literal) => {
        $crate::range_marker!($crate::ranges::BEGIN, $name)
    };
}

/// Ends the author's range `name`, begun by [`range_begin!`](crate::range_begin), at the
/// next source line with code.
#[macro_export]
macro_rules! range_end {
    ($name:literal) => {
        $crate::range_marker!($crate::ranges::END, $name)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_holds_its_kind_line_name_and_file() {
        let record: Record<3, 7> = Record::new(BEGIN, 42, "abc", "src/k.rs");
        assert_eq!(record.header, Header { magic: MAGIC, kind: BEGIN, line: 42, name_len: 3, file_len: 7 });
        assert_eq!((&record.name, &record.file), (b"abc", b"src/k.r"));
        assert_eq!(&MAGIC.to_le_bytes(), b"NCRG");
    }
}
