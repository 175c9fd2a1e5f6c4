//! The little of ELF32 the checks need: the loadable segments and the symbol table
//! (and the segments of an ELF64 file, the host tier's build).

use std::fmt;

/// A `PT_LOAD` program header: where a segment lands in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSegment {
    /// Virtual address.
    pub vaddr: u32,
    /// Size in memory (including `.bss`).
    pub memsz: u32,
}

/// Why a file could not be read as a little-endian ELF32 image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfError(pub &'static str);

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a usable ELF32 image: {}", self.0)
    }
}

impl std::error::Error for ElfError {}

const PT_LOAD: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_NOBITS: u32 = 8;

fn u16_at(bytes: &[u8], at: usize) -> Result<u16, ElfError> {
    let b = bytes.get(at..at + 2).ok_or(ElfError("truncated"))?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32, ElfError> {
    let b = bytes.get(at..at + 4).ok_or(ElfError("truncated"))?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn check_header(bytes: &[u8]) -> Result<(), ElfError> {
    if bytes.get(..6) != Some(&[0x7F, b'E', b'L', b'F', 1, 1][..]) {
        return Err(ElfError("no ELF32 little-endian header"));
    }
    Ok(())
}

fn u64_at(bytes: &[u8], at: usize) -> Result<u64, ElfError> {
    let b = bytes.get(at..at + 8).ok_or(ElfError("truncated"))?;
    Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// Every `PT_LOAD` segment with a non-zero size. Also of a little-endian ELF64 file
/// (the host tier's x86-64 build of a library, whose places are offsets into it) whose
/// segments lie in its first 4 GiB.
pub fn load_segments(bytes: &[u8]) -> Result<Vec<LoadSegment>, ElfError> {
    if bytes.get(..6) == Some(&[0x7F, b'E', b'L', b'F', 2, 1][..]) {
        return load_segments_64(bytes);
    }
    check_header(bytes)?;
    let phoff = u32_at(bytes, 0x1C)? as usize;
    let phentsize = u16_at(bytes, 0x2A)? as usize;
    let phnum = u16_at(bytes, 0x2C)? as usize;
    let mut segments = Vec::new();
    for i in 0..phnum {
        let header = phoff + i * phentsize;
        if u32_at(bytes, header)? != PT_LOAD {
            continue;
        }
        let segment = LoadSegment { vaddr: u32_at(bytes, header + 8)?, memsz: u32_at(bytes, header + 20)? };
        if segment.memsz != 0 {
            segments.push(segment);
        }
    }
    Ok(segments)
}

/// [`load_segments`] of an ELF64 file.
fn load_segments_64(bytes: &[u8]) -> Result<Vec<LoadSegment>, ElfError> {
    let phoff = usize::try_from(u64_at(bytes, 0x20)?).map_err(|_| ElfError("program headers out of reach"))?;
    let phentsize = u16_at(bytes, 0x36)? as usize;
    let phnum = u16_at(bytes, 0x38)? as usize;
    let mut segments = Vec::new();
    for i in 0..phnum {
        let header = phoff + i * phentsize;
        if u32_at(bytes, header)? != PT_LOAD {
            continue;
        }
        let narrow = |value: u64| u32::try_from(value).map_err(|_| ElfError("a segment past 4 GiB"));
        let segment =
            LoadSegment { vaddr: narrow(u64_at(bytes, header + 16)?)?, memsz: narrow(u64_at(bytes, header + 40)?)? };
        if segment.memsz != 0 {
            segments.push(segment);
        }
    }
    Ok(segments)
}

/// Writes `value` (little-endian) over the initial bytes of the 32-bit word at `vaddr`
/// in an image's file: a `.data` word as the image loads it.
///
/// # Errors
/// No `PT_LOAD` segment holds the word's four bytes in the file (`.bss`, or no segment).
pub fn patch_word(bytes: &mut [u8], vaddr: u32, value: u32) -> Result<(), ElfError> {
    check_header(bytes)?;
    let phoff = u32_at(bytes, 0x1C)? as usize;
    let phentsize = u16_at(bytes, 0x2A)? as usize;
    let phnum = u16_at(bytes, 0x2C)? as usize;
    for i in 0..phnum {
        let header = phoff + i * phentsize;
        if u32_at(bytes, header)? != PT_LOAD {
            continue;
        }
        let (offset, start, filesz) =
            (u32_at(bytes, header + 4)?, u32_at(bytes, header + 8)?, u32_at(bytes, header + 16)?);
        if vaddr >= start && vaddr.saturating_add(4) <= start.saturating_add(filesz) {
            let at = (offset + (vaddr - start)) as usize;
            let word = bytes.get_mut(at..at + 4).ok_or(ElfError("segment past the end of the file"))?;
            word.copy_from_slice(&value.to_le_bytes());
            return Ok(());
        }
    }
    Err(ElfError("no loaded segment holds the word in the file"))
}

/// The value of the global symbol `name`, if the image defines it.
pub fn symbol(bytes: &[u8], name: &str) -> Result<Option<u32>, ElfError> {
    Ok(symbol_range(bytes, name)?.map(|range| range.start))
}

/// The address range of the symbol `name` (its value and its size, as `.size` set it),
/// if the image defines it.
pub fn symbol_range(bytes: &[u8], name: &str) -> Result<Option<std::ops::Range<u32>>, ElfError> {
    check_header(bytes)?;
    let shoff = u32_at(bytes, 0x20)? as usize;
    let shentsize = u16_at(bytes, 0x2E)? as usize;
    let shnum = u16_at(bytes, 0x30)? as usize;
    let section = |i: usize| shoff + i * shentsize;
    for i in 0..shnum {
        if u32_at(bytes, section(i) + 4)? != SHT_SYMTAB {
            continue;
        }
        let offset = u32_at(bytes, section(i) + 16)? as usize;
        let size = u32_at(bytes, section(i) + 20)? as usize;
        let strtab = section(u32_at(bytes, section(i) + 24)? as usize);
        let strings = u32_at(bytes, strtab + 16)? as usize;
        for entry in (offset..offset + size).step_by(16) {
            let name_at = strings + u32_at(bytes, entry)? as usize;
            let tail = bytes.get(name_at..).ok_or(ElfError("symbol name out of range"))?;
            let end = tail.iter().position(|&b| b == 0).ok_or(ElfError("unterminated name"))?;
            if &tail[..end] == name.as_bytes() {
                let value = u32_at(bytes, entry + 4)?;
                return Ok(Some(value..value.saturating_add(u32_at(bytes, entry + 8)?)));
            }
        }
    }
    Ok(None)
}

/// The contents of the section `name` in the file, if the image has one (of any type:
/// an unallocated section's bytes are in the file too).
pub fn section<'a>(bytes: &'a [u8], name: &str) -> Result<Option<&'a [u8]>, ElfError> {
    check_header(bytes)?;
    let shoff = u32_at(bytes, 0x20)? as usize;
    let shentsize = u16_at(bytes, 0x2E)? as usize;
    let shnum = u16_at(bytes, 0x30)? as usize;
    let shstrndx = u16_at(bytes, 0x32)? as usize;
    let header = |i: usize| shoff + i * shentsize;
    let names = u32_at(bytes, header(shstrndx) + 16)? as usize;
    for i in 0..shnum {
        let name_at = names + u32_at(bytes, header(i))? as usize;
        let tail = bytes.get(name_at..).ok_or(ElfError("section name out of range"))?;
        let end = tail.iter().position(|&b| b == 0).ok_or(ElfError("unterminated name"))?;
        if &tail[..end] != name.as_bytes() {
            continue;
        }
        if u32_at(bytes, header(i) + 4)? == SHT_NOBITS {
            return Ok(Some(&[]));
        }
        let (offset, size) = (u32_at(bytes, header(i) + 16)? as usize, u32_at(bytes, header(i) + 20)? as usize);
        return bytes.get(offset..offset + size).map(Some).ok_or(ElfError("section past the end of the file"));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_elf_input() {
        assert_eq!(load_segments(b"not an elf"), Err(ElfError("no ELF32 little-endian header")));
        assert!(symbol(&[0x7F, b'E', b'L', b'F', 1, 1], "x").is_err());
    }
}
