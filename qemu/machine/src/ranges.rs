//! The author's range markers in a library image (the runtime's `ranges` module says
//! how a kernel writes them): each record of the image's `.ncop_ranges` section, and
//! the PCs where it takes effect, from the image's DWARF line table. The device's
//! profiling plugin is told the PCs (`mark=PC`); the profile names what it saw by them.

use crate::elf;
use neuroncustomop::ranges::{BEGIN, END, Header, MAGIC, SECTION};
use std::path::Path;

/// Whether a marker begins or ends its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// `range_begin!` / `NCOP_RANGE_BEGIN`.
    Begin,
    /// `range_end!` / `NCOP_RANGE_END`.
    End,
}

/// One marker of an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// Its range's name.
    pub name: String,
    /// Begin or end.
    pub kind: Kind,
    /// Its source file, as the compiler was given it (`file!()`, `__FILE__`).
    pub file: String,
    /// Its line.
    pub line: u32,
    /// Where it takes effect: the first instruction of each place where the code of
    /// the next line with code in `file` starts (empty when no line after it has code).
    pub pcs: Vec<u32>,
}

/// Why an image's markers could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the range markers of {path}: {message}")]
pub struct RangesError {
    /// The image.
    pub path: String,
    /// What was wrong.
    pub message: String,
}

/// Text of `bytes` up to its first NUL.
fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The records of a `.ncop_ranges` section: name, kind, file, line. Zero words between
/// records (a compiler's alignment) are skipped; anything else ends the reading.
pub fn records(section: &[u8]) -> Vec<(String, Kind, String, u32)> {
    let word = |at: usize| section.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let mut records = Vec::new();
    let mut at = 0;
    while let Some(first) = word(at) {
        if first == 0 {
            at += 4;
            continue;
        }
        let header = match [0, 4, 8, 12, 16].map(|offset| word(at + offset)) {
            [Some(magic), Some(kind), Some(line), Some(name_len), Some(file_len)] => {
                Header { magic, kind, line, name_len, file_len }
            }
            _ => break,
        };
        let kind = match header.kind {
            BEGIN => Kind::Begin,
            END => Kind::End,
            _ => break,
        };
        let name_at = at + size_of::<Header>();
        let file_at = name_at + header.name_len as usize;
        let end = file_at + header.file_len as usize;
        let (Some(name), Some(file)) = (section.get(name_at..file_at), section.get(file_at..end)) else { break };
        if header.magic != MAGIC {
            break;
        }
        records.push((text(name), kind, text(file), header.line));
        at = end.next_multiple_of(4);
    }
    records
}

/// Every marker of the image at `path`, with the PCs where each takes effect.
///
/// # Errors
/// [`RangesError`]: the image or its DWARF cannot be read.
pub fn markers(path: &Path) -> Result<Vec<Marker>, RangesError> {
    let error = |message: String| RangesError { path: path.display().to_string(), message };
    let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    let Some(section) = elf::section(&bytes, SECTION).map_err(|e| error(e.to_string()))? else {
        return Ok(Vec::new());
    };
    let records = records(section);
    if records.is_empty() {
        return Ok(Vec::new());
    }
    // The line table's rows: address, file, line, in address order.
    let debug = addr2line::Loader::new(path).map_err(|e| error(e.to_string()))?;
    let mut rows: Vec<(u64, String, u32)> = Vec::new();
    for segment in elf::load_segments(&bytes).map_err(|e| error(e.to_string()))? {
        let (lo, hi) = (u64::from(segment.vaddr), u64::from(segment.vaddr) + u64::from(segment.memsz));
        let Ok(locations) = debug.find_location_range(lo, hi) else { continue };
        for (address, _, location) in locations {
            if let (Some(file), Some(line)) = (location.file, location.line) {
                rows.push((address, file.to_string(), line));
            }
        }
    }
    rows.sort_by_key(|row| row.0);
    Ok(records
        .into_iter()
        .map(|(name, kind, file, line)| {
            let pcs = match kind {
                Kind::Begin => first_pcs_after(&rows, &file, line),
                Kind::End => end_pcs(&rows, &file, line, |pc| functions_at(&debug, pc)),
            };
            Marker { name, kind, file, line, pcs }
        })
        .collect())
}

/// Each function at `pc`, innermost first, with the source line the PC (innermost)
/// or the call (the others) is at.
fn functions_at(debug: &addr2line::Loader, pc: u64) -> Vec<(String, Option<String>, Option<u32>)> {
    let mut functions = Vec::new();
    if let Ok(mut frames) = debug.find_frames(pc) {
        while let Ok(Some(frame)) = frames.next() {
            let name = frame.function.as_ref().and_then(|f| f.raw_name().ok()).map(|n| n.into_owned());
            let (file, line) = frame.location.map_or((None, None), |l| (l.file.map(str::to_string), l.line));
            functions.push((name.unwrap_or_default(), file, line));
        }
    }
    functions
}

/// Where an end marker at `file:line` takes effect: where the next line with code
/// starts, if that is in the function the range's last line is in; else (the code
/// after the marker was moved or merged away: a Rust function's tail expression
/// inlined into its caller) where that function's code ends after its last line
/// before the marker: the first instruction, in address order, no longer in it.
/// `functions` gives the functions at a PC, as [`functions_at`].
fn end_pcs<F>(rows: &[(u64, String, u32)], file: &str, line: u32, functions: F) -> Vec<u32>
where
    F: Fn(u64) -> Vec<(String, Option<String>, Option<u32>)>,
{
    let natural = first_pcs_after(rows, file, line);
    // The range's last line with code, and its last instruction in address order.
    let ours = |row: &(u64, String, u32)| same_file(&row.1, file) && row.2 < line;
    let Some(last_line) = rows.iter().filter(|row| ours(row)).map(|row| row.2).max() else { return natural };
    let Some(last) = rows.iter().rposition(|row| ours(row) && row.2 == last_line) else { return natural };
    // The function that line is in: the frame at that instruction whose line it is.
    let at_last = functions(rows[last].0);
    let function = at_last
        .iter()
        .find(|(_, f, l)| f.as_deref().is_some_and(|f| same_file(f, file)) && *l == Some(last_line))
        .map(|(name, _, _)| name.clone());
    let Some(function) = function else { return natural };
    let inside = |pc: u64| functions(pc).iter().any(|(name, _, _)| *name == function);
    let in_function: Vec<u32> = natural.iter().copied().filter(|&pc| inside(u64::from(pc))).collect();
    if !in_function.is_empty() {
        return in_function;
    }
    rows[last + 1..].iter().find(|row| !inside(row.0)).map_or(natural, |row| vec![row.0 as u32])
}

/// Whether the line table's `table` file is the compiler's `given` (an absolute path
/// in the table, the one given or one relative to the build's folder in `file!()`).
fn same_file(table: &str, given: &str) -> bool {
    let given = given.strip_prefix("./").unwrap_or(given);
    table == given || Path::new(table).ends_with(given)
}

/// The first PC of each run of `rows` (address order) at the first line after `line`
/// in `file` that has any: a breakpoint's addresses on that line.
fn first_pcs_after(rows: &[(u64, String, u32)], file: &str, line: u32) -> Vec<u32> {
    let in_file: Vec<bool> = rows.iter().map(|row| same_file(&row.1, file)).collect();
    let later = rows.iter().zip(&in_file).filter(|&(row, &ours)| ours && row.2 > line);
    let Some(next) = later.map(|(row, _)| row.2).min() else { return Vec::new() };
    let on_it = |i: usize| in_file[i] && rows[i].2 == next;
    let mut pcs: Vec<u32> =
        (0..rows.len()).filter(|&i| on_it(i) && (i == 0 || !on_it(i - 1))).map(|i| rows[i].0 as u32).collect();
    pcs.dedup();
    pcs
}

#[cfg(test)]
mod tests {
    use super::*;
    use neuroncustomop::ranges::Record;

    fn bytes<const N: usize, const F: usize>(record: &Record<N, F>) -> Vec<u8> {
        let Header { magic, kind, line, name_len, file_len } = record.header;
        let mut out: Vec<u8> = [magic, kind, line, name_len, file_len].iter().flat_map(|w| w.to_le_bytes()).collect();
        out.extend(record.name);
        out.extend(record.file);
        out.resize(out.len().next_multiple_of(4), 0);
        out
    }

    #[test]
    fn records_read_back_with_padding_between_them_skipped() {
        let mut section = bytes(&Record::<4, 8>::new(BEGIN, 12, "rows", "src/k.rs"));
        section.extend([0; 8]);
        // C's record: the name and file with their NULs.
        section.extend(bytes(&Record::<5, 9>::new(END, 20, "rows\0", "src/k.c\0\0")));
        assert_eq!(
            records(&section),
            [
                ("rows".to_string(), Kind::Begin, "src/k.rs".to_string(), 12),
                ("rows".to_string(), Kind::End, "src/k.c".to_string(), 20)
            ]
        );
        assert_eq!(records(&[0xFF; 24]), [], "no magic");
    }

    #[test]
    fn a_marker_takes_effect_where_the_next_line_with_code_starts() {
        let row = |address, file: &str, line| (address, file.to_string(), line);
        let file = "/home/me/lib/src/k.c";
        let rows = [
            row(0x100, file, 10),
            row(0x104, file, 13),
            row(0x108, file, 13),
            row(0x10c, "/usr/include/x.h", 3),
            row(0x110, file, 13),
            row(0x114, file, 14),
        ];
        // A marker on line 11: line 13 is the next with code, entered at 0x104 and 0x110.
        assert_eq!(first_pcs_after(&rows, "src/k.c", 11), [0x104, 0x110]);
        assert_eq!(first_pcs_after(&rows, file, 13), [0x114]);
        assert_eq!(first_pcs_after(&rows, "src/k.c", 14), [] as [u32; 0], "no code after it");
        assert_eq!(first_pcs_after(&rows, "other.c", 1), [] as [u32; 0]);
        assert!(!same_file("/a/xsrc/k.c", "src/k.c"));
    }

    #[test]
    fn an_end_marker_with_no_code_after_it_in_its_function_ends_where_the_function_does() {
        let row = |address, file: &str, line| (address, file.to_string(), line);
        let k = "/lib/src/k.rs";
        // softmax (k.rs 60..80) inlined into run (glue.rs): its loop at line 76, an
        // iterator's code inlined into it, then the caller's code; line 79 (`Ok(out)`)
        // has none, and the next line with code (85) is another function's.
        let rows =
            [row(0x10, k, 76), row(0x14, "/rust/iter.rs", 180), row(0x18, "/lib/src/glue.rs", 1258), row(0x40, k, 85)];
        let functions = |pc: u64| match pc {
            0x10 => vec![("softmax".to_string(), Some(k.to_string()), Some(76)), ("run".into(), None, None)],
            0x14 => vec![("next".to_string(), None, Some(180)), ("softmax".into(), None, None)],
            0x18 => vec![("run".to_string(), None, Some(1258))],
            _ => vec![("table".to_string(), Some(k.to_string()), Some(85))],
        };
        assert_eq!(end_pcs(&rows, "src/k.rs", 78, functions), [0x18]);
        // With code after it in the function, the next line's.
        let rows = [row(0x10, k, 76), row(0x14, k, 79), row(0x18, "/lib/src/glue.rs", 1258)];
        let functions = |pc: u64| match pc {
            0x18 => vec![("run".to_string(), None, Some(1258))],
            _ => vec![("softmax".to_string(), Some(k.to_string()), Some(if pc == 0x10 { 76 } else { 79 }))],
        };
        assert_eq!(end_pcs(&rows, "src/k.rs", 78, functions), [0x14]);
    }
}
