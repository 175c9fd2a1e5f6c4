//! The job block: what the host side of the simulation hands the simulated loader.
//!
//! The real device's loader learns its libraries and ops from the host runtime; ours
//! reads one block the host places in RAM at [`JOB_ADDRESS`] before any core runs.
//! Every field is a little-endian `u32` (addresses are device addresses), so the host
//! writes it with [`JobHeader::to_bytes`] and the loader reads it in place.
//!
//! | offset | what |
//! |---|---|
//! | 0 | [`JobHeader`] (512 bytes) |
//! | `ops_offset` | the ops: 0x85/0x86 dispatch-word chains, back to back |
//! | `names_offset` | FunctionId k's NUL-terminated kernel name at `+ k * NAME_LEN` |
//! | `dumps_offset` | per op, an [`OutputDump`]: the bytes the loader prints after it |

use core::mem::{offset_of, size_of};

/// Where the job block sits in the simulated device's RAM.
pub const JOB_ADDRESS: u32 = 0x6100_0000;
/// The most bytes a job block may take (the loader's shared state follows it).
pub const JOB_CAPACITY: u32 = 0x0008_0000;

// The loader's memory map and constants: what both loaders (the device's,
// qemu/firmware/src/loader.rs, and the host tier's twin) hand out, and what the host,
// the plugin and the tests expect them to.

/// Core i's dataram scratch (its TCM allocator and small heap):
/// `DATA_SCRATCH_BASE + i * DATA_SCRATCH_SIZE`.
pub const DATA_SCRATCH_BASE: u32 = 0x7F80_0000;
/// Size of each core's dataram scratch.
pub const DATA_SCRATCH_SIZE: u32 = 0x1_0000;
/// Core i's HBM scratch (its large heap): `HBM_SCRATCH_BASE + i * HBM_SCRATCH_SIZE`,
/// RAM after the tensor area (the board's I/O window starts at 0x70000000).
pub const HBM_SCRATCH_BASE: u32 = 0x6A00_0000;
/// Size of each core's HBM scratch.
pub const HBM_SCRATCH_SIZE: u32 = 0x0080_0000;
/// Core i's library handle is `HANDLE_BASE | i`: recognisable, and never dereferenced.
pub const HANDLE_BASE: u32 = 0x4C1B_0000;
/// What `register_ext_isa_fn` returns for the registration the job makes fail
/// ([`JobHeader::fail_registration_at`]): a host-specific failure, passed through.
pub const INJECTED_REGISTRATION_FAILURE: u32 = 0x0000_4C52;
/// The loader's exit status when the host sent something that is not a job.
pub const EXIT_BAD_JOB: i32 = 2;
/// Bytes from one core's DMA queues to the next core's in the SoC's queue window
/// ([`dma_queue_offsets`]).
pub const DMA_QUEUE_STRIDE: u32 = 0x2000;

/// Core `core`'s dataram scratch: its first byte and its size.
pub const fn data_scratch(core: u32) -> (u32, u32) {
    (DATA_SCRATCH_BASE + core * DATA_SCRATCH_SIZE, DATA_SCRATCH_SIZE)
}

/// Core `core`'s HBM scratch: its first byte and its size.
pub const fn hbm_scratch(core: u32) -> (u32, u32) {
    (HBM_SCRATCH_BASE + core * HBM_SCRATCH_SIZE, HBM_SCRATCH_SIZE)
}

/// Core `core`'s library handle.
pub const fn library_handle(core: u32) -> u32 {
    HANDLE_BASE | core
}

// Every core's scratch fits below the board's I/O window, and the handle's low bits
// hold every core.
const _: () = assert!(HBM_SCRATCH_BASE as u64 + CORES as u64 * HBM_SCRATCH_SIZE as u64 <= 0x7000_0000);
const _: () = assert!(HANDLE_BASE & 0xFFFF == 0 && CORES <= 0x1_0000);
/// [`JobHeader::magic`]: `NCJB`.
pub const JOB_MAGIC: u32 = u32::from_le_bytes(*b"NCJB");
/// Room for one kernel name, its NUL included.
pub const NAME_LEN: usize = 32;
/// Cores of the cluster, and so library images per job.
pub const CORES: usize = 8;
/// Translate records per op, and the size of one (the runtime's `TranslateRecord`).
pub const TRANSLATE_REGIONS: usize = 5;
/// Size of one translate record.
pub const TRANSLATE_RECORD_LEN: usize = 32;
/// The default instruction budget of one kernel run: far above any op of the examples
/// (the longest, a sort of 65,536 elements on one core, takes about 2 G), low enough
/// that an infinite loop is stopped within a minute or two of wall time.
pub const DEFAULT_MAX_INSTRUCTIONS: u64 = 10_000_000_000;
/// Instructions from one wrap of the 32-bit `ICOUNT` register to the next: the
/// firmware's debug handler restarts it at 0 each time it would pass `0xFFFFFFFF`.
pub const ICOUNT_WRAP: u64 = 0xFFFF_FFFF;

/// Where `ICOUNT` starts, and after how many wraps the budget is spent, for a kernel
/// run with an instruction budget of `budget` (0: none): the first wrap comes after
/// `ICOUNT_WRAP - start` instructions, each later one after [`ICOUNT_WRAP`] more, so
/// the budget runs out exactly at wrap `wraps + 1`.
///
/// ```
/// use neuroncustomop_wire::job::{icount_plan, icount_total, ICOUNT_WRAP};
///
/// let (start, wraps) = icount_plan(10_000_000_000);
/// assert_eq!(wraps, 2);
/// // The budget runs out at wrap 3, with ICOUNT at 0: exactly 10 G instructions.
/// assert_eq!(icount_total(start, 3, 0), 10_000_000_000);
/// ```
pub const fn icount_plan(budget: u64) -> (u32, u32) {
    if budget == 0 {
        return (0, u32::MAX);
    }
    let wraps = budget.div_ceil(ICOUNT_WRAP);
    let first = budget - (wraps - 1) * ICOUNT_WRAP;
    // A budget of more than 2^32 wraps (18 * 10^18 instructions) is as good as none.
    let later = if wraps > u32::MAX as u64 { u32::MAX - 1 } else { (wraps - 1) as u32 };
    ((ICOUNT_WRAP - first) as u32, later)
}

/// The instructions counted since `ICOUNT` was set to `start`, after `wraps` wraps,
/// with `ICOUNT` now at `end`.
pub const fn icount_total(start: u32, wraps: u32, end: u32) -> u64 {
    if wraps == 0 {
        end as u64 - start as u64
    } else {
        (ICOUNT_WRAP - start as u64) + (wraps as u64 - 1) * ICOUNT_WRAP + end as u64
    }
}

/// [`JobHeader::fail_registration_at`] when every registration succeeds.
pub const NEVER: u32 = u32::MAX;
/// [`JobHeader::faults`]: `get_data_scratch` hands out a null region.
pub const FAULT_NULL_DATA_SCRATCH: u32 = 1 << 0;
/// [`JobHeader::faults`]: `get_hbm_scratch` hands out an empty region.
pub const FAULT_EMPTY_HBM_SCRATCH: u32 = 1 << 1;

/// How the simulated DMA engine serves the queues ([`JobHeader::dma_mode`]).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaMode {
    /// Every transfer, in queue order.
    InOrder = 0,
    /// Each batch of transfers it finds, last first (completion out of order).
    Reversed = 1,
    /// Nothing ever completes (the runtime must time out, not hang).
    Stuck = 2,
}

impl DmaMode {
    /// The mode numbered `value`; unknown values serve in order.
    pub fn from_u32(value: u32) -> Self {
        match value {
            1 => Self::Reversed,
            2 => Self::Stuck,
            _ => Self::InOrder,
        }
    }
}

/// Where core `core`'s DMA queues sit in the SoC's queue window (what the loader's
/// `get_dma_queue` hands out and the engine serves): m2s, then s2m half a stride on.
pub const fn dma_queue_offsets(core: u32) -> (u32, u32) {
    (core * DMA_QUEUE_STRIDE, core * DMA_QUEUE_STRIDE + DMA_QUEUE_STRIDE / 2)
}

/// Addresses, in one core's library image, of the entry points the loader calls. The
/// host reads them from the image's symbol table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LibrarySymbols {
    /// `entry_func`.
    pub entry_func: u32,
    /// `register_funcs`.
    pub register_funcs: u32,
    /// `customop_set_invocation`.
    pub set_invocation: u32,
    /// `customop_invocation_status`.
    pub invocation_status: u32,
    /// `neuron_translate_configure`.
    pub translate_configure: u32,
    /// `neuron_stdout_ring`.
    pub stdout_ring: u32,
    /// `neuron_set_memcpy_method`.
    pub set_memcpy_method: u32,
    /// `neuron_heaps_mark`.
    pub heaps_mark: u32,
    /// `neuron_heaps_give_back`.
    pub heaps_give_back: u32,
}

impl LibrarySymbols {
    /// The symbol of each field, in field order: what the host looks up in every
    /// library image (a library without one of them cannot be loaded).
    pub const NAMES: [&'static str; 9] = [
        "entry_func",
        "register_funcs",
        "customop_set_invocation",
        "customop_invocation_status",
        "neuron_translate_configure",
        "neuron_stdout_ring",
        "neuron_set_memcpy_method",
        "neuron_heaps_mark",
        "neuron_heaps_give_back",
    ];

    /// The entry points at `addresses`, one for each of [`NAMES`](Self::NAMES), in
    /// its order.
    pub const fn from_addresses(addresses: [u32; 9]) -> Self {
        Self {
            entry_func: addresses[0],
            register_funcs: addresses[1],
            set_invocation: addresses[2],
            invocation_status: addresses[3],
            translate_configure: addresses[4],
            stdout_ring: addresses[5],
            set_memcpy_method: addresses[6],
            heaps_mark: addresses[7],
            heaps_give_back: addresses[8],
        }
    }
}

/// What the loader prints after op k (all of it, once every core has run the op).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputDump {
    /// Device address of the first byte.
    pub address: u32,
    /// How many bytes.
    pub len: u32,
}

/// The fixed part of the job block.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobHeader {
    /// [`JOB_MAGIC`].
    pub magic: u32,
    /// Cores taking part: core i runs library image i.
    pub cores: u32,
    /// The `sizeof_ncore_ucode_lib` the loader writes into the handoff block (36 for
    /// the real layout; other values test the size gate).
    pub handoff_size: u32,
    /// The registration index whose `register_ext_isa_fn` fails ([`NEVER`]: none).
    pub fail_registration_at: u32,
    /// Where the ops start, from [`JOB_ADDRESS`].
    pub ops_offset: u32,
    /// Total length of the ops in bytes.
    pub ops_len: u32,
    /// Where the FunctionId name table starts, from [`JOB_ADDRESS`].
    pub names_offset: u32,
    /// FunctionIds with a name: ids `0..names_count`.
    pub names_count: u32,
    /// Where the [`OutputDump`]s start (one per op), from [`JOB_ADDRESS`].
    pub dumps_offset: u32,
    /// Translate records in use (at most [`TRANSLATE_REGIONS`]).
    pub translate_count: u32,
    /// How the simulated DMA engine behaves: a [`DmaMode`] value.
    pub dma_mode: u32,
    /// Faults the loader injects: [`FAULT_NULL_DATA_SCRATCH`], [`FAULT_EMPTY_HBM_SCRATCH`].
    pub faults: u32,
    /// The `neuron_memcpy` backend the loader selects before every op (a
    /// `NeuronMemcpyMethod`: 0 C, 1 vector, 2 DMA); [`NEVER`]: the library's own.
    pub memcpy_method: u32,
    /// The stdout ring capacity the loader sets in every library before `entry_func`,
    /// as the vendor's runtime does from `NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES`: a
    /// power of two up to 131072, or 0 (printing disabled); [`NEVER`]: the library's own.
    pub stdout_queue_bytes: u32,
    /// The translate records every op is configured with (the runtime's 32-byte
    /// `TranslateRecord`, little-endian).
    pub translate: [[u8; TRANSLATE_RECORD_LEN]; TRANSLATE_REGIONS],
    /// Core i's library entry points.
    pub libraries: [LibrarySymbols; CORES],
    /// The instruction budget of each kernel run (one op on one core), low word: a
    /// kernel still running after this many instructions is stopped and reported
    /// (`OVER_BUDGET`), and the job goes on.
    pub max_instructions_low: u32,
    /// The budget's high word.
    pub max_instructions_high: u32,
}

// The loader reads the job block in place with these types and the host writes it
// word by word (`to_bytes`), so the whole layout is pinned: a field added, moved or
// resized fails the build instead of shifting every later field between the two.
const _: () = {
    assert!(size_of::<LibrarySymbols>() == 36);
    assert!(offset_of!(LibrarySymbols, entry_func) == 0);
    assert!(offset_of!(LibrarySymbols, register_funcs) == 4);
    assert!(offset_of!(LibrarySymbols, set_invocation) == 8);
    assert!(offset_of!(LibrarySymbols, invocation_status) == 12);
    assert!(offset_of!(LibrarySymbols, translate_configure) == 16);
    assert!(offset_of!(LibrarySymbols, stdout_ring) == 20);
    assert!(offset_of!(LibrarySymbols, set_memcpy_method) == 24);
    assert!(offset_of!(LibrarySymbols, heaps_mark) == 28);
    assert!(offset_of!(LibrarySymbols, heaps_give_back) == 32);

    assert!(size_of::<OutputDump>() == 8);
    assert!(offset_of!(OutputDump, address) == 0);
    assert!(offset_of!(OutputDump, len) == 4);

    assert!(offset_of!(JobHeader, magic) == 0);
    assert!(offset_of!(JobHeader, cores) == 4);
    assert!(offset_of!(JobHeader, handoff_size) == 8);
    assert!(offset_of!(JobHeader, fail_registration_at) == 12);
    assert!(offset_of!(JobHeader, ops_offset) == 16);
    assert!(offset_of!(JobHeader, ops_len) == 20);
    assert!(offset_of!(JobHeader, names_offset) == 24);
    assert!(offset_of!(JobHeader, names_count) == 28);
    assert!(offset_of!(JobHeader, dumps_offset) == 32);
    assert!(offset_of!(JobHeader, translate_count) == 36);
    assert!(offset_of!(JobHeader, dma_mode) == 40);
    assert!(offset_of!(JobHeader, faults) == 44);
    assert!(offset_of!(JobHeader, memcpy_method) == 48);
    assert!(offset_of!(JobHeader, stdout_queue_bytes) == 52);
    assert!(offset_of!(JobHeader, translate) == 56);
    assert!(offset_of!(JobHeader, libraries) == 56 + TRANSLATE_REGIONS * TRANSLATE_RECORD_LEN);
    assert!(offset_of!(JobHeader, libraries) == 216);
    assert!(size_of::<DmaMode>() == 4);
    assert!(offset_of!(JobHeader, max_instructions_low) == 504);
    assert!(size_of::<JobHeader>() == 512);
};

impl JobHeader {
    /// The instruction budget of each kernel run.
    pub const fn max_instructions(&self) -> u64 {
        (self.max_instructions_high as u64) << 32 | self.max_instructions_low as u64
    }

    /// Sets the instruction budget of each kernel run.
    pub fn set_max_instructions(&mut self, budget: u64) {
        (self.max_instructions_low, self.max_instructions_high) = (budget as u32, (budget >> 32) as u32);
    }

    /// The header's bytes, as the loader reads them.
    pub fn to_bytes(&self) -> [u8; size_of::<JobHeader>()] {
        let mut bytes = [0u8; size_of::<JobHeader>()];
        let mut words = bytes.chunks_exact_mut(4);
        let mut put = |value: u32| words.next().expect("header fits").copy_from_slice(&value.to_le_bytes());
        for value in [
            self.magic,
            self.cores,
            self.handoff_size,
            self.fail_registration_at,
            self.ops_offset,
            self.ops_len,
            self.names_offset,
            self.names_count,
            self.dumps_offset,
            self.translate_count,
            self.dma_mode,
            self.faults,
            self.memcpy_method,
            self.stdout_queue_bytes,
        ] {
            put(value);
        }
        for record in &self.translate {
            for word in record.chunks_exact(4) {
                put(u32::from_le_bytes([word[0], word[1], word[2], word[3]]));
            }
        }
        for library in &self.libraries {
            for value in [
                library.entry_func,
                library.register_funcs,
                library.set_invocation,
                library.invocation_status,
                library.translate_configure,
                library.stdout_ring,
                library.set_memcpy_method,
                library.heaps_mark,
                library.heaps_give_back,
            ] {
                put(value);
            }
        }
        put(self.max_instructions_low);
        put(self.max_instructions_high);
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_runs_out_after_exactly_its_instructions() {
        for budget in
            [1, 2, 1000, ICOUNT_WRAP - 1, ICOUNT_WRAP, ICOUNT_WRAP + 1, 3 * ICOUNT_WRAP, 10_000_000_000, u64::MAX / 2]
        {
            let (start, wraps) = icount_plan(budget);
            // The wrap that spends the budget comes with ICOUNT about to pass
            // 0xFFFFFFFF once more: after `wraps` earlier wraps, at ICOUNT = 0xFFFFFFFF.
            let spent =
                if wraps == 0 { icount_total(start, 0, u32::MAX) } else { icount_total(start, wraps, u32::MAX) };
            assert_eq!(spent, budget, "budget {budget}");
        }
        assert_eq!(icount_plan(0), (0, u32::MAX), "no budget: never");
    }

    #[test]
    fn totals_add_up_across_wraps() {
        assert_eq!(icount_total(100, 0, 350), 250);
        assert_eq!(icount_total(u32::MAX - 9, 1, 5), 9 + 5);
        assert_eq!(icount_total(0, 3, 7), 2 * ICOUNT_WRAP + ICOUNT_WRAP + 7);
    }
}
