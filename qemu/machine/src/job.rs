//! Building a job for the simulated loader (`qemu/firmware/src/loader.rs`): which
//! library to enter, which ops to dispatch, and the data they work on.
//!
//! The block's layout is `neuroncustomop_wire::job`; tensors and other data go into
//! simulated RAM as raw files. Framework addresses reach device memory through the
//! translate windows the job configures.

use crate::elf;
use crate::images::{CORES, Images};
use neuroncustomop::start_exit::MAX_STDOUT_RING_CAPACITY;
use neuroncustomop_wire::job::{
    DEFAULT_MAX_INSTRUCTIONS, DmaMode, JOB_ADDRESS, JOB_CAPACITY, JOB_MAGIC, JobHeader, LibrarySymbols, NAME_LEN,
    NEVER, OutputDump, TRANSLATE_RECORD_LEN, TRANSLATE_REGIONS,
};
use neuroncustomop_wire::{Descriptor, FunctionId, encode};
use std::fmt;

/// Where tensors live in the simulated device's RAM: after the loaders' shared state
/// and before the HBM scratch regions.
pub const TENSOR_AREA: u32 = 0x6200_0000;
/// Size of the tensor area: a power of two, so one translate window covers it.
pub const TENSOR_AREA_SIZE: u32 = 0x0800_0000;
/// The framework-address window the default translate record maps onto the tensor area.
pub const FRAMEWORK_BASE: u64 = 0x0000_7F00_0000_0000;

/// Why a job could not be built.
#[derive(Debug)]
pub enum JobError {
    /// A library image lacks a symbol the loader calls.
    MissingSymbol {
        /// The core whose image lacks it.
        core: usize,
        /// The symbol's name.
        symbol: &'static str,
    },
    /// An image is not ELF.
    Elf(elf::ElfError),
    /// The image could not be read.
    Io(std::io::Error),
    /// The dispatch words were rejected.
    Wire(neuroncustomop_wire::WireError),
    /// Kernel names, ops or data do not fit.
    TooLarge(&'static str),
    /// `NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES` is not a power of two up to 131072, or 0.
    StdoutQueueSize(String),
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingSymbol { core, symbol } => write!(f, "library image {core} has no symbol {symbol}"),
            Self::Elf(e) => e.fmt(f),
            Self::Io(e) => write!(f, "reading a library image: {e}"),
            Self::Wire(e) => write!(f, "encoding an op: {e}"),
            Self::TooLarge(what) => write!(f, "the job's {what} do not fit"),
            Self::StdoutQueueSize(value) => write!(
                f,
                "{STDOUT_QUEUE_VARIABLE}={value}: the printf ring size is a power of two up to 131072, or 0 to disable printf"
            ),
        }
    }
}

impl std::error::Error for JobError {}

/// One op to dispatch: a FunctionId, the output descriptor and the inputs.
#[derive(Debug, Clone)]
pub struct Op {
    /// Which function (an index into the job's names).
    pub function: FunctionId,
    /// The output tensor's descriptor, if the op has arguments.
    pub output: Option<Descriptor>,
    /// The input descriptors, in argument order.
    pub inputs: Vec<Descriptor>,
    /// Device bytes to print after the op (usually the output tensor).
    pub dump: OutputDump,
}

/// A job under construction.
#[derive(Debug, Clone)]
pub struct Job {
    /// The fixed part; `ops_*`, `names_*` and `dumps_offset` are filled in by [`Job::to_bytes`].
    pub header: JobHeader,
    /// Kernel names; FunctionId k is `names[k]`.
    pub names: Vec<String>,
    /// Raw dispatch words, encoded from [`Op`]s or written by hand (malformed-word tests).
    pub words: Vec<u8>,
    /// One dump per op, in op order.
    pub dumps: Vec<OutputDump>,
    /// Raw data placed in device RAM before the cores start: `(address, bytes)`.
    pub data: Vec<(u32, Vec<u8>)>,
}

/// The variable the vendor's runtime reads for the size of the GPSIMD printf ring.
pub const STDOUT_QUEUE_VARIABLE: &str = "NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES";

/// The ring capacity `value` (the variable's text) asks for: a power of two up to
/// 131072, or 0 (printf disabled).
///
/// # Errors
/// [`JobError::StdoutQueueSize`] for anything else.
pub fn stdout_queue_bytes(value: &str) -> Result<u32, JobError> {
    match value.trim().parse::<u32>() {
        Ok(bytes) if bytes == 0 || (bytes.is_power_of_two() && bytes as usize <= MAX_STDOUT_RING_CAPACITY) => Ok(bytes),
        _ => Err(JobError::StdoutQueueSize(value.to_owned())),
    }
}

impl Job {
    /// A job for `library` on `cores` cores with the real handoff size, no injected
    /// failure, the default instruction budget per kernel run
    /// ([`DEFAULT_MAX_INSTRUCTIONS`]), one translate window ([`FRAMEWORK_BASE`] onto
    /// [`TENSOR_AREA`]), and the printf ring size of
    /// `NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES` when it is set (else each library
    /// keeps its own, 16 KiB). `library` without images (`cores` empty) gives a job
    /// whose library entry points are all 0: the host tier's loader finds them itself.
    ///
    /// # Errors
    /// A missing symbol, an unreadable image, or a bad ring size.
    pub fn new(library: &Images, cores: usize) -> Result<Self, JobError> {
        Self::with_symbols(library_symbols(library)?, cores)
    }

    /// [`Job::new`] for a library whose entry points were read already
    /// ([`library_symbols`]): a caller that dispatches many jobs of one library reads
    /// its images once, not per job (they are megabytes for a C++ library).
    ///
    /// # Errors
    /// A bad ring size.
    pub fn with_symbols(libraries: [LibrarySymbols; CORES], cores: usize) -> Result<Self, JobError> {
        let stdout_queue = match std::env::var(STDOUT_QUEUE_VARIABLE) {
            Ok(value) => stdout_queue_bytes(&value)?,
            Err(_) => NEVER,
        };
        let mut job = Self {
            header: JobHeader {
                magic: JOB_MAGIC,
                cores: cores as u32,
                handoff_size: 36,
                fail_registration_at: NEVER,
                ops_offset: 0,
                ops_len: 0,
                names_offset: 0,
                names_count: 0,
                dumps_offset: 0,
                translate_count: 0,
                dma_mode: DmaMode::InOrder as u32,
                faults: 0,
                memcpy_method: NEVER,
                stdout_queue_bytes: stdout_queue,
                translate: [[0; TRANSLATE_RECORD_LEN]; TRANSLATE_REGIONS],
                libraries,
                max_instructions_low: 0,
                max_instructions_high: 0,
            },
            names: Vec::new(),
            words: Vec::new(),
            dumps: Vec::new(),
            data: Vec::new(),
        };
        job.header.set_max_instructions(DEFAULT_MAX_INSTRUCTIONS);
        job.set_translate(&[translate_record(
            FRAMEWORK_BASE,
            u64::from(TENSOR_AREA_SIZE),
            u64::from(TENSOR_AREA),
            0,
            0,
        )]);
        Ok(job)
    }

    /// Replaces the translate windows every op is configured with (at most 5).
    pub fn set_translate(&mut self, records: &[[u8; TRANSLATE_RECORD_LEN]]) {
        assert!(records.len() <= TRANSLATE_REGIONS, "at most {TRANSLATE_REGIONS} translate records");
        self.header.translate = [[0; TRANSLATE_RECORD_LEN]; TRANSLATE_REGIONS];
        self.header.translate[..records.len()].copy_from_slice(records);
        self.header.translate_count = records.len() as u32;
    }

    /// The FunctionId of kernel `name`, adding it to the name table if new.
    pub fn function(&mut self, name: &str) -> FunctionId {
        let index = self.names.iter().position(|n| n == name).unwrap_or_else(|| {
            self.names.push(name.to_string());
            self.names.len() - 1
        });
        FunctionId::new(index as u8).expect("fewer than 254 functions")
    }

    /// Appends `op`'s dispatch words.
    pub fn push(&mut self, op: &Op) -> Result<(), JobError> {
        let words = encode(op.function, op.output.as_ref(), &op.inputs).map_err(JobError::Wire)?;
        self.words.extend_from_slice(words.as_bytes());
        self.dumps.push(op.dump);
        Ok(())
    }

    /// Places `bytes` at `offset` in the tensor area; returns the framework address
    /// (through the default window) and the device address.
    pub fn place(&mut self, offset: u32, bytes: Vec<u8>) -> (u64, u32) {
        assert!(u64::from(offset) + bytes.len() as u64 <= u64::from(TENSOR_AREA_SIZE), "tensor area overflow");
        self.data.push((TENSOR_AREA + offset, bytes));
        (FRAMEWORK_BASE + u64::from(offset), TENSOR_AREA + offset)
    }

    /// The job block's bytes, as the loader reads them at `JOB_ADDRESS`.
    pub fn to_bytes(&self) -> Result<Vec<u8>, JobError> {
        let mut header = self.header;
        let header_len = header.to_bytes().len() as u32;
        header.names_offset = header_len;
        header.names_count = self.names.len() as u32;
        header.dumps_offset = header.names_offset + (self.names.len() * NAME_LEN) as u32;
        header.ops_offset = header.dumps_offset + (self.dumps.len() * size_of::<OutputDump>()) as u32;
        header.ops_len = self.words.len() as u32;
        let mut bytes = header.to_bytes().to_vec();
        for name in &self.names {
            if name.len() >= NAME_LEN || name.contains('\0') {
                return Err(JobError::TooLarge("kernel names"));
            }
            let mut slot = [0u8; NAME_LEN];
            slot[..name.len()].copy_from_slice(name.as_bytes());
            bytes.extend_from_slice(&slot);
        }
        for dump in &self.dumps {
            bytes.extend_from_slice(&dump.address.to_le_bytes());
            bytes.extend_from_slice(&dump.len.to_le_bytes());
        }
        bytes.extend_from_slice(&self.words);
        if bytes.len() > JOB_CAPACITY as usize {
            return Err(JobError::TooLarge("ops"));
        }
        Ok(bytes)
    }

    /// Where the job block goes.
    pub const ADDRESS: u32 = JOB_ADDRESS;
}

/// The entry points the loader calls in each of `library`'s images, read from their
/// symbol tables (all 0 for a library without images: the host tier's loader finds
/// them itself).
///
/// # Errors
/// A missing symbol, an unreadable image.
pub fn library_symbols(library: &Images) -> Result<[LibrarySymbols; CORES], JobError> {
    let mut libraries = [LibrarySymbols::default(); CORES];
    for (core, image) in library.cores.iter().enumerate() {
        let bytes = std::fs::read(image).map_err(JobError::Io)?;
        let mut addresses = [0u32; LibrarySymbols::NAMES.len()];
        for (address, symbol) in addresses.iter_mut().zip(LibrarySymbols::NAMES) {
            *address =
                elf::symbol(&bytes, symbol).map_err(JobError::Elf)?.ok_or(JobError::MissingSymbol { core, symbol })?;
        }
        libraries[core] = LibrarySymbols::from_addresses(addresses);
    }
    Ok(libraries)
}

/// The bytes of one translate record (the runtime's `TranslateRecord`): framework
/// addresses `[start, start + size)` (size a power of two, `start` aligned to it) map
/// to `device_base + (addr - start)`, plus `core * core_stride` when `flags` has the
/// per-core bit.
pub fn translate_record(
    start: u64,
    size: u64,
    device_base: u64,
    flags: u32,
    core_stride: u32,
) -> [u8; TRANSLATE_RECORD_LEN] {
    let mut record = [0u8; TRANSLATE_RECORD_LEN];
    record[0..8].copy_from_slice(&start.to_le_bytes());
    record[8..16].copy_from_slice(&(!(size - 1)).to_le_bytes());
    record[16..24].copy_from_slice(&device_base.to_le_bytes());
    record[24..28].copy_from_slice(&flags.to_le_bytes());
    record[28..32].copy_from_slice(&core_stride.to_le_bytes());
    record
}

// The offsets `translate_record` writes are those of the runtime's `TranslateRecord`,
// which the loader hands `neuron_translate_configure` in place.
const _: () = {
    use neuroncustomop::translate::TranslateRecord;
    use std::mem::{offset_of, size_of};
    assert!(size_of::<TranslateRecord>() == TRANSLATE_RECORD_LEN);
    assert!(offset_of!(TranslateRecord, ptr) == 0 && offset_of!(TranslateRecord, mask) == 8);
    assert!(offset_of!(TranslateRecord, device_base) == 16 && offset_of!(TranslateRecord, flags) == 24);
    assert!(offset_of!(TranslateRecord, core_stride) == 28);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_size_is_a_power_of_two_up_to_128_kib_or_0() {
        for (text, bytes) in [("0", 0), ("1", 1), ("4096", 4096), (" 131072\n", 131_072)] {
            assert_eq!(stdout_queue_bytes(text).unwrap(), bytes, "{text:?}");
        }
        for text in ["262144", "3000", "-1", "", "16k"] {
            let error = stdout_queue_bytes(text).unwrap_err().to_string();
            assert!(error.starts_with("NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES="), "{error}");
        }
    }
}
