//! Device memory under QEMU (docs/abi/memory.md): the heaps and the TCM pool
//! on the regions the simulated loader hands out, and `neuron_translate` through the
//! windows it configures, on all 8 cores, with every result checked exactly; and the
//! benchmarks' goals (`bench_heap`, `bench_translate`; docs/PERFORMANCE.md, "Memory").
//!
//! The kernels are in `qemu/firmware/src/bin/memory_probe.rs`; each core writes
//! [`CORE_WORDS`] u32 words of its own into an int32 output (word 0: how many follow).

use neuroncustomop::allocators::tcm::TCM_POOL_SIZE;
use neuroncustomop::allocators::{GRANULE, metadata_words};
use neuroncustomop::test_models::translate as reference;
use neuroncustomop::translate::{TRANSLATE_PER_CORE, TranslateRecord};
use neuroncustomop::wrapper_api::{ArgTensor, Dtype, ScalarKind};
use neuroncustomop_machine::device::{self, Report};
use neuroncustomop_machine::images::{self, CORES, Images};
use neuroncustomop_machine::job::{FRAMEWORK_BASE, Job, Op, TENSOR_AREA, TENSOR_AREA_SIZE, translate_record};
use neuroncustomop_machine::machine::{Boot, Outcome};
use neuroncustomop_wire::job::OutputDump;
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Output words per core (memory_probe's `CORE_WORDS`).
const CORE_WORDS: usize = 128;

// The loader's regions (neuroncustomop_wire::job, docs/simulation.md): core i's dataram
// scratch is the TCM pool (its first 16 KiB), then the dataram heap.
use neuroncustomop_wire::job::{DATA_SCRATCH_BASE, DATA_SCRATCH_SIZE, HBM_SCRATCH_BASE, HBM_SCRATCH_SIZE};

// heap.rs statuses (docs/abi/memory.md §1.5).
const OK: u32 = 0;
const OUT_OF_MEMORY: u32 = 1;
const SIZE_OVERFLOW: u32 = 2;
const INVALID_ALIGNMENT: u32 = 3;
const DOUBLE_FREE: u32 = 4;
const NOT_BLOCK_START: u32 = 5;
const FOREIGN_POINTER: u32 = 6;
const CORRUPTED: u32 = 9;
/// newlib's errno values, as `posix_memalign` returns them.
const EINVAL: u32 = 22;
const ENOMEM: u32 = 12;
/// `TranslateError::Miss`.
const MISS: u32 = 1;

/// The memory probe library, built once per test binary.
fn probe() -> &'static Images {
    static BUILT: OnceLock<Images> = OnceLock::new();
    BUILT.get_or_init(|| images::build("memory_probe").unwrap_or_else(|e| panic!("building memory_probe: {e}")))
}

/// A region one of the heaps manages: where it is, and the arena the heap keeps after
/// its in-region metadata.
#[derive(Debug, Clone, Copy)]
struct Region {
    base: u32,
    size: u32,
    /// Granules of metadata at the region's start (0 when the metadata is elsewhere).
    metadata_granules: u32,
}

impl Region {
    /// A heap with its metadata inside (`Heap::new`): docs/abi/memory.md §0 and
    /// `metadata_words`.
    fn heap(base: u32, size: u32) -> Region {
        let bytes = metadata_words(size as usize) * 4;
        Region { base, size, metadata_granules: bytes.div_ceil(GRANULE) as u32 }
    }

    /// Core `core`'s HBM heap.
    fn hbm(core: u32) -> Region {
        Region::heap(HBM_SCRATCH_BASE + core * HBM_SCRATCH_SIZE, HBM_SCRATCH_SIZE)
    }

    /// Core `core`'s dataram heap: the data scratch after the TCM pool.
    fn dataram(core: u32) -> Region {
        let pool = TCM_POOL_SIZE as u32;
        Region::heap(DATA_SCRATCH_BASE + core * DATA_SCRATCH_SIZE + pool, DATA_SCRATCH_SIZE - pool)
    }

    /// Core `core`'s TCM pool: all of it usable (metadata in a static).
    fn tcm(core: u32) -> Region {
        Region { base: DATA_SCRATCH_BASE + core * DATA_SCRATCH_SIZE, size: TCM_POOL_SIZE as u32, metadata_granules: 0 }
    }

    fn arena_start(&self) -> u32 {
        self.base + self.metadata_granules * GRANULE as u32
    }

    fn arena_granules(&self) -> u32 {
        self.size / GRANULE as u32 - self.metadata_granules
    }

    fn end(&self) -> u32 {
        self.base + self.size
    }
}

#[test]
fn the_heaps_metadata_takes_what_the_documented_layout_says() {
    // By hand from docs/abi/memory.md §0: 8 MiB is 131,072 granules; four bitmaps (the
    // three of block boundaries and the mark's copy of live starts) of 4,096 words each,
    // 4,096 leaves, 1,365 inner nodes, 128 summary words: 21,973 words, 1,374 granules.
    assert_eq!(Region::hbm(0).metadata_granules, 1374);
    assert_eq!(Region::hbm(0).arena_granules(), 129_698);
    // 48 KiB: 768 granules, 4 x 24 words, 64 leaves, 21 inner nodes, 1 summary word: 182
    // words, 12 granules.
    assert_eq!(Region::dataram(0).metadata_granules, 12);
    assert_eq!(Region::dataram(0).arena_granules(), 756);
    assert_eq!(Region::tcm(0).arena_granules(), 256);
}

/// What the loader printed, without the output dumps.
fn loader_lines(outcome: &Outcome) -> String {
    outcome.stdout.lines().filter(|line| !line.starts_with("DUMP ")).collect::<Vec<_>>().join("\n")
}

/// Runs `job` on the probe library; every op must succeed on every core.
fn run(job: &Job) -> Report {
    let report = device::run(probe(), job).expect("QEMU runs");
    let outcome = &report.outcome;
    assert!(!outcome.timed_out && report.done, "the loader did not finish:\n{}\n{}", outcome.stdout, outcome.stderr);
    for core in 0..job.header.cores {
        let ops = report.core(core).ops;
        assert_eq!(ops.len(), job.dumps.len(), "core {core}: {ops:?}");
        for op in ops {
            assert_eq!(op.status_code(), Some(0), "core {core}: {op:?}\n{}", loader_lines(outcome));
        }
    }
    report
}

/// Adds op `kernel` with `inputs` and an int32 output for every core's words at
/// `offset` in the tensor area.
fn push_op(job: &mut Job, kernel: &str, offset: u32, inputs: Vec<[u8; 48]>) {
    let len = (CORES * CORE_WORDS) as u32;
    let (framework, device) = job.place(offset, vec![0xA5; 4 * len as usize]);
    let output = ArgTensor::hbm_tensor(Dtype::Int32, &[len], framework).expect("a valid output").to_bytes();
    let function = job.function(kernel);
    job.push(&Op { function, output: Some(output), inputs, dump: OutputDump { address: device, len: 4 * len } })
        .expect("op");
}

/// An int scalar argument holding `value`, placed at `offset`.
fn int(job: &mut Job, offset: u32, value: i32) -> [u8; 48] {
    let (framework, _) = job.place(offset, value.to_le_bytes().to_vec());
    ArgTensor::hbm_scalar(ScalarKind::Int, framework).to_bytes()
}

/// Core `core`'s words of op `op`, after the count in word 0.
fn words(report: &Report, op: u32, core: u32) -> Vec<u32> {
    let dump = &report.dumps[&op];
    let all: Vec<u32> = dump.chunks(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect();
    let mine = &all[core as usize * CORE_WORDS..][..CORE_WORDS];
    let count = mine[0] as usize;
    assert!(count < CORE_WORDS, "op {op} core {core}: {count} words");
    mine[1..=count].to_vec()
}

/// memory_probe's `Exhaustion` words, named.
const EXHAUSTION_FIELDS: [&str; 17] = [
    "blocks",
    "status",
    "small_blocks",
    "small_status",
    "lowest",
    "highest_end",
    "misaligned",
    "not_adjacent",
    "damaged",
    "refused",
    "live_after",
    "free_blocks_after",
    "free_bytes_after",
    "arena_bytes",
    "blocks_again",
    "lowest_again",
    "live_at_end",
];

/// What exhausting `region` with `size`-byte blocks must report: as many whole blocks
/// as fit in the arena, from its first byte, then the rest in 64-byte blocks up to the
/// region's very end; then one free block again, and the same blocks again.
fn expected_exhaustion(region: Region, size: u32) -> Vec<u32> {
    let granules = size.div_ceil(GRANULE as u32);
    let arena = region.arena_granules();
    let arena_bytes = arena * GRANULE as u32;
    assert_eq!(region.arena_start() + arena_bytes, region.end(), "the arena reaches the region's end");
    vec![
        arena / granules,
        OUT_OF_MEMORY,
        arena % granules,
        OUT_OF_MEMORY,
        region.arena_start(),
        region.end(),
        0,
        0,
        0,
        0,
        0,
        1,
        arena_bytes,
        arena_bytes,
        arena / granules,
        region.arena_start(),
        0,
    ]
}

fn assert_fields(what: &str, names: &[&str], got: &[u32], expected: &[u32]) {
    assert_eq!(got.len(), expected.len(), "{what}: {got:x?}");
    for ((name, value), expected_value) in names.iter().zip(got).zip(expected) {
        assert_eq!(value, expected_value, "{what}: {name} is {value:#x}, expected {expected_value:#x}\nall: {got:x?}");
    }
}

#[test]
fn every_heap_and_tcm_pool_is_exhausted_exactly_and_recovers_on_every_core() {
    type RegionOf = fn(u32) -> Region;
    // (kernel, block size, region): sizes that fill the arena exactly and sizes that
    // leave a remainder of granules, whole and not whole granules; then the first again,
    // after every other op, to show nothing was left behind.
    let cases: [(&str, u32, RegionOf); 7] = [
        ("hbm_exhaustion", 65_536, Region::hbm),
        ("hbm_exhaustion", 100_000, Region::hbm),
        ("dataram_exhaustion", 4096, Region::dataram),
        ("dataram_exhaustion", 4000, Region::dataram),
        ("tcm_exhaustion", 4096, Region::tcm),
        ("tcm_exhaustion", 5000, Region::tcm),
        ("hbm_exhaustion", 65_536, Region::hbm),
    ];
    let mut job = Job::new(probe(), CORES).expect("job");
    for (index, &(kernel, size, _)) in cases.iter().enumerate() {
        let offset = index as u32 * 0x1_0000;
        let size_arg = int(&mut job, offset, size as i32);
        push_op(&mut job, kernel, offset + 0x100, vec![size_arg]);
    }
    let report = run(&job);
    for (op, &(kernel, size, region)) in cases.iter().enumerate() {
        for core in 0..CORES as u32 {
            let what = format!("op {op} {kernel}({size}) core {core}");
            assert_fields(
                &what,
                &EXHAUSTION_FIELDS,
                &words(&report, op as u32, core),
                &expected_exhaustion(region(core), size),
            );
        }
    }
    // The brief's own numbers, for the record: 126 blocks of 64 KiB, then 674 granules
    // (930 before the heaps kept a mark bitmap for giving back a stopped op's blocks);
    // 4 x 4 KiB of TCM and no more.
    assert_eq!(words(&report, 0, 0)[..3], [126, OUT_OF_MEMORY, 674]);
    assert_eq!(words(&report, 4, 0)[..3], [4, OUT_OF_MEMORY, 0]);
}

/// The `misuse` kernel's guard size: blocks of `GUARD` bytes of dataram and TCM and
/// `4 * GUARD` of HBM stay live across the bad calls.
const GUARD: u32 = 1024;

/// memory_probe's `misuse` words for core `core`, named (see its documentation).
fn expected_misuse(core: u32) -> Vec<(&'static str, u32)> {
    let hbm = Region::hbm(core);
    let start = hbm.arena_start();
    // First fit on an empty heap: 100 B (2 granules) at the start, 5,000 B (79) after
    // it, 64 B after that; once the 5,000 are freed, 1,000 B (16) take the hole's high
    // end.
    let reference = [
        ("reference 100", start),
        ("reference 5000", start + 128),
        ("reference 64", start + 81 * 64),
        ("reference 1000 in the hole", start + (81 - 16) * 64),
    ];
    let mut expected = reference.to_vec();
    expected.extend([
        ("calloc(0x10000, 0x10001) null", 1),
        ("calloc(0x10000, 0x10001) status", SIZE_OVERFLOW),
        ("calloc(MAX, 2) null", 1),
        ("calloc(MAX, 2) status", SIZE_OVERFLOW),
        ("calloc(0, 16) null", 0),
        ("calloc(0, 16) status", OK),
        ("malloc(MAX) null", 1),
        ("malloc(MAX) status", SIZE_OVERFLOW),
        ("malloc(isize::MAX + 1) null", 1),
        ("malloc(isize::MAX + 1) status", SIZE_OVERFLOW),
        ("malloc(isize::MAX) null", 1),
        ("malloc(isize::MAX) status", OUT_OF_MEMORY),
        ("malloc(8 MiB) null", 1),
        ("malloc(8 MiB) status", OUT_OF_MEMORY),
        ("memalign(96, 64) null", 1),
        ("memalign(96, 64) status", INVALID_ALIGNMENT),
        ("posix_memalign(align 2) returns", EINVAL),
        ("posix_memalign(align 2) status", INVALID_ALIGNMENT),
        ("posix_memalign(align 2) *out untouched", 1),
        ("posix_memalign(size MAX) returns", ENOMEM),
        ("posix_memalign(size MAX) status", SIZE_OVERFLOW),
        ("posix_memalign(size MAX) *out untouched", 1),
        ("posix_memalign(4096, 100) returns", 0),
        ("posix_memalign(4096, 100) status", OK),
        ("posix_memalign(4096, 100) aligned", 1),
        ("first free", OK),
        ("double free", DOUBLE_FREE),
        ("free(p + 64)", NOT_BLOCK_START),
        ("free(p + 1)", NOT_BLOCK_START),
        ("neuron_hbm_free(p + 4)", NOT_BLOCK_START),
        ("bytes of p changed by the interior frees", 0),
        ("free(p)", OK),
        ("free(stack address)", FOREIGN_POINTER),
        ("free(HBM metadata)", FOREIGN_POINTER),
        ("free(output tensor)", FOREIGN_POINTER),
        ("free(HBM arena end)", FOREIGN_POINTER),
        ("free(null) after a failure", OK),
        ("free(never allocated, in free space)", DOUBLE_FREE),
        ("neuron_hbm_free(dataram block)", FOREIGN_POINTER),
        ("neuron_dataram_free(HBM block)", FOREIGN_POINTER),
        ("tcm_free(HBM block)", FOREIGN_POINTER),
        ("tcm_free(dataram block)", FOREIGN_POINTER),
        ("free(dataram block)", OK),
        ("free(HBM block)", OK),
        ("tcm_malloc(100) null", 0),
        ("tcm_malloc(100) status", OK),
        ("tcm_free", OK),
        ("tcm_free again", DOUBLE_FREE),
        ("tcm_malloc(MAX) null", 1),
        ("tcm_malloc(MAX) status", SIZE_OVERFLOW),
        ("tcm_malloc(rest + 1) null", 1),
        ("tcm_malloc(rest + 1) status", OUT_OF_MEMORY),
        ("tcm_malloc(rest) null", 0),
        ("tcm_malloc(rest) status", OK),
        ("tcm_free(rest)", OK),
        ("realloc(p, MAX) null", 1),
        ("realloc(p, MAX) status", SIZE_OVERFLOW),
        ("bytes of p changed by the failed realloc", 0),
        ("realloc(p, 300) null", 0),
        ("realloc(p, 300) status", OK),
        ("bytes lost by the realloc", 0),
        ("free(realloc'd)", OK),
        ("calloc reused the dirty block", 1),
        ("calloc's non-zero bytes", 0),
        ("free(x) beside an overwritten free block", CORRUPTED),
        ("bytes of x changed", 0),
        ("free(x) once restored", OK),
        ("free(z)", OK),
        // The HBM guard is at the arena's start, so the top block starts after it.
        ("global allocator, align 4096", (start + 4 * GUARD).next_multiple_of(4096)),
        ("HBM guard bytes changed", 0),
        ("dataram guard bytes changed", 0),
        ("TCM guard bytes changed", 0),
        ("HBM heap coalesced", 1),
        ("dataram heap coalesced", 1),
        ("TCM pool coalesced", 1),
    ]);
    expected.extend(reference);
    expected
}

#[test]
fn bad_calls_report_their_status_and_corrupt_nothing_on_every_core() {
    let mut job = Job::new(probe(), CORES).expect("job");
    let guard = int(&mut job, 0, GUARD as i32);
    // Twice: the second run starts from what the first left.
    push_op(&mut job, "misuse", 0x100, vec![guard]);
    push_op(&mut job, "misuse", 0x1_0000, vec![guard]);
    let report = run(&job);
    for op in 0..2 {
        for core in 0..CORES as u32 {
            let (names, expected): (Vec<&str>, Vec<u32>) = expected_misuse(core).into_iter().unzip();
            assert_fields(&format!("op {op} misuse core {core}"), &names, &words(&report, op, core), &expected);
        }
    }
}

/// A translate window of the job.
#[derive(Debug, Clone)]
struct Window {
    start: u64,
    size: u64,
    device: u32,
    core_stride: u32,
}

impl Window {
    /// The record the loader hands over for this window.
    fn record(&self) -> TranslateRecord {
        let flags = if self.core_stride != 0 { TRANSLATE_PER_CORE } else { 0 };
        TranslateRecord {
            flags,
            core_stride: self.core_stride,
            ..TranslateRecord::window(self.start, self.size, u64::from(self.device))
        }
    }
}

/// The reference model (runtime/test_models/translate.rs): the device address of
/// `addr` on `core` and status 0, or a null pointer and a miss.
fn reference_translate(windows: &[Window], addr: u64, core: u32) -> (u32, u32) {
    let records: Vec<TranslateRecord> = windows.iter().map(Window::record).collect();
    reference::translate(&records, core, addr)
        .map_or((0, MISS), |device| (u32::try_from(device).expect("a 32-bit device address"), OK))
}

/// Configures `windows` on every core, translates `addresses` there in order with
/// `neuron_translate` (runtime/arch/xtensa/translate.S) and checks each pointer and
/// status against the reference; returns how many addresses hit.
fn translate_on_every_core(windows: &[Window], addresses: &[u64]) -> usize {
    let mut job = Job::new(probe(), CORES).expect("job");
    let records: Vec<_> = windows
        .iter()
        .map(Window::record)
        .map(|r| translate_record(r.ptr, !r.mask + 1, r.device_base, r.flags, r.core_stride))
        .collect();
    job.set_translate(&records);
    let bytes = addresses.iter().flat_map(|a| a.to_le_bytes()).collect();
    let (framework, _) = job.place(0, bytes);
    let input = ArgTensor::hbm_tensor(Dtype::Int64, &[addresses.len() as u32], framework).expect("a tensor").to_bytes();
    push_op(&mut job, "translate_probe", 0x1000, vec![input]);
    let report = run(&job);
    for core in 0..CORES as u32 {
        let got = words(&report, 0, core);
        assert_eq!(got.len(), 2 * addresses.len(), "core {core}: {got:x?}");
        for (index, &addr) in addresses.iter().enumerate() {
            let (device, status) = reference_translate(windows, addr, core);
            let (got, expected) = (&got[2 * index..][..2], [device, status]);
            assert_eq!(got, expected, "core {core}: translate({addr:#x}) gave {got:x?}, expected {expected:x?}");
        }
    }
    addresses.iter().filter(|&&a| reference_translate(windows, a, 0).1 == OK).count()
}

/// Each window's first and last byte, the bytes just outside, and its middle.
fn edges(windows: &[Window]) -> Vec<u64> {
    windows
        .iter()
        .flat_map(|w| {
            let last = w.start + (w.size - 1);
            [w.start, last, w.start.wrapping_sub(1), last.wrapping_add(1), w.start + w.size / 2]
        })
        .collect()
}

/// The tensor window every job has (the kernel's own arguments use it).
fn tensor_window() -> Window {
    Window { start: FRAMEWORK_BASE, size: u64::from(TENSOR_AREA_SIZE), device: TENSOR_AREA, core_stride: 0 }
}

/// Each core's own data scratch (the SoC remap), at framework address `start`.
fn scratch_window(start: u64) -> Window {
    Window { start, size: 0x1_0000, device: DATA_SCRATCH_BASE, core_stride: DATA_SCRATCH_SIZE }
}

#[test]
fn neuron_translate_hits_and_misses_through_the_loaders_windows_on_every_core() {
    let addresses: [u64; 25] = [
        FRAMEWORK_BASE + 0x0400_0000,
        FRAMEWORK_BASE + 0x0400_0FFF,
        FRAMEWORK_BASE + 0x0400_1000,
        FRAMEWORK_BASE + 0x03FF_FFFF,
        FRAMEWORK_BASE,
        FRAMEWORK_BASE + u64::from(TENSOR_AREA_SIZE) - 1,
        FRAMEWORK_BASE + u64::from(TENSOR_AREA_SIZE),
        FRAMEWORK_BASE - 1,
        0x7E00_0000_0000,
        0x7E00_0000_1234,
        0x7E00_0000_FFFF,
        0x7E00_0001_0000,
        0x7DFF_FFFF_FFFF,
        0xFFFF_FFFF_FFFF_F000,
        u64::MAX,
        0xFFFF_FFFF_FFFF_EFFF,
        0,
        0xF_FFFF,
        0x10_0000,
        // The low half matches window 5, the high half does not.
        0x1_0000_0040,
        FRAMEWORK_BASE ^ (1 << 47),
        // Tensor-window addresses in the first window's bucket (bit 12 or bit 26 is
        // outside the field), found by searching, and the first window again: it must
        // still win there (a search in overlapping windows moves no candidate).
        (FRAMEWORK_BASE + 0x0400_0000) ^ 1 << 12,
        FRAMEWORK_BASE + 0x0400_0010,
        (FRAMEWORK_BASE + 0x0400_0000) ^ 1 << 26,
        FRAMEWORK_BASE + 0x0400_0020,
    ];
    // Overlapping windows (the first lies inside the tensor window and wins there): a
    // failed candidate means a search in configuration order.
    let windows = [
        Window { start: FRAMEWORK_BASE + 0x0400_0000, size: 0x1000, device: 0x6150_0000, core_stride: 0 },
        tensor_window(),
        scratch_window(0x7E00_0000_0000),
        // The top of the address space.
        Window { start: 0xFFFF_FFFF_FFFF_F000, size: 0x1000, device: 0x6000_0000, core_stride: 0 },
        // Framework address 0 is a valid address here.
        Window { start: 0, size: 0x10_0000, device: 0x6010_0000, core_stride: 0 },
    ];
    // Every window was hit and there were misses: the reference is not trivially agreeing.
    assert_eq!(translate_on_every_core(&windows, &addresses), 17);
}

/// Visits the windows' middles in an order that switches window at every step, and
/// comes back to each: the lookups that move candidates.
fn switching(windows: &[Window]) -> Vec<u64> {
    [0, 1, 0, 2, 3, 2, 4, 1, 4, 4, 3, 0].iter().map(|&i| windows[i].start + windows[i].size / 2 + 8).collect()
}

#[test]
fn neuron_translate_finds_each_window_through_its_bucket_when_a_field_tells_them_apart() {
    // Windows that differ in address bits 32..34: each in a bucket of its own.
    let windows = [
        tensor_window(),
        Window { start: 0x7F01_0000_0000, size: 0x10_0000, device: 0x6150_0000, core_stride: 0 },
        scratch_window(0x7F02_0000_0000),
        Window { start: 0x7F03_0000_0000, size: 0x1_0000, device: 0x6160_0000, core_stride: 0 },
        Window { start: 0x7F04_0000_0000, size: 0x1000, device: 0x6170_0000, core_stride: 0 },
    ];
    let mut addresses = edges(&windows);
    // Misses that reach each bucket: the low half of a window, another high half.
    addresses.extend([0x7F05_0000_0040, 0x7F09_0000_0040, 0x0001_0000_0040, 0x7F01_0010_0000]);
    addresses.extend(switching(&windows));
    assert_eq!(translate_on_every_core(&windows, &addresses), 15 + 12);
}

#[test]
fn neuron_translate_searches_and_moves_candidates_when_windows_share_buckets() {
    // Disjoint windows no field tells apart: the first three differ only in bits 47
    // and 48 (above the field's reach), the last two only in bit 8 (below it).
    let windows = [
        tensor_window(),
        Window { start: FRAMEWORK_BASE | 1 << 47, size: 0x10_0000, device: 0x6150_0000, core_stride: 0 },
        scratch_window(FRAMEWORK_BASE | 1 << 48),
        Window { start: 0x1000, size: 0x100, device: 0x6160_0000, core_stride: 0 },
        Window { start: 0x1100, size: 0x100, device: 0x6170_0000, core_stride: 0 },
    ];
    let mut addresses = switching(&windows);
    addresses.extend(edges(&windows));
    addresses.extend(switching(&windows));
    addresses.extend([FRAMEWORK_BASE | 1 << 49, 0x1200, 0x0FFF]);
    // Three edges of each window hit, and two more: the fourth's last byte + 1 is the
    // fifth's first, and the other way round.
    assert_eq!(translate_on_every_core(&windows, &addresses), 12 + 17 + 12);
}

/// The tensor window, then up to four windows near each other: a shared base, each at
/// a small offset `<< bit` and of a size near that bit, so that some configurations
/// have a field for every pair, some share buckets and some overlap; one per core.
fn clustered_windows() -> impl Strategy<Value = Vec<Window>> {
    let window = (0u64..8, 0u32..=8, any::<bool>());
    (any::<u64>(), 0u32..56, proptest::collection::vec(window, 1..=4)).prop_map(|(base, bit, windows)| {
        let near = windows.into_iter().enumerate().map(|(i, (offset, extra_log2, per_core))| {
            let size = 1 << (bit + extra_log2).saturating_sub(4).min(20);
            let start = (base ^ offset << bit) & !(size - 1);
            // Device windows 32 MiB apart, each with room for eight cores' slices.
            let device = 0x4000_0000 + (i as u32) * 0x200_0000;
            Window { start, size, device, core_stride: if per_core { size as u32 } else { 0 } }
        });
        std::iter::once(tensor_window()).chain(near).collect()
    })
}

proptest! {
    // Each case is one QEMU run (a fraction of a second).
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The assembly against the reference model on random tables: every window's edges
    /// and random addresses, in random orders, so that candidates move.
    #[test]
    fn neuron_translate_matches_the_reference_model_on_clustered_windows(
        windows in clustered_windows(),
        random in proptest::collection::vec(any::<u64>(), 4),
        // 25 edges, 4 random and 32 visits: what translate_probe's 63 fit.
        order in proptest::collection::vec(any::<proptest::sample::Index>(), 32),
    ) {
        let mut addresses = edges(&windows);
        addresses.extend(random);
        let visits: Vec<u64> = order.iter().map(|index| addresses[index.index(addresses.len())]).collect();
        addresses.extend(visits);
        translate_on_every_core(&windows, &addresses);
    }
}

/// Boots a firmware benchmark on one core, counting instructions.
fn bench(program: &str) -> Outcome {
    let built = images::build(program).unwrap_or_else(|e| panic!("building {program}: {e}"));
    let mut boot = Boot::new(built.cores[..1].to_vec());
    boot.count_instructions = true;
    let outcome = boot.run().expect("QEMU runs");
    assert_eq!(outcome.code(), Some(0), "{program}:\n{}\n{}", outcome.stdout, outcome.stderr);
    outcome
}

/// The numbers after `prefix` on each line that starts with it, keyed by the words
/// before them.
fn rows(outcome: &Outcome, prefix: &str, key_words: usize) -> HashMap<String, Vec<u64>> {
    outcome
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix(prefix))
        .map(|row| {
            let words: Vec<&str> = row.split_whitespace().collect();
            let numbers = words[key_words..].iter().map(|w| w.parse().expect("a number")).collect();
            (words[..key_words].join(" "), numbers)
        })
        .collect()
}

#[test]
fn the_heap_beats_linked_list_allocator_tenfold_when_churning_and_on_immediate_pairs() {
    let outcome = bench("bench_heap");
    let heap = rows(&outcome, "HEAP ", 2);
    let net = |allocator: &str, scenario: &str| {
        let count =
            |name: &str| heap.get(&format!("{name} {scenario}")).unwrap_or_else(|| panic!("no {name} {scenario}"))[0];
        count(allocator) - count("baseline")
    };
    for scenario in ["churn_log_uniform", "churn_uniform"] {
        let (ours, list) = (net("ours", scenario), net("linked_list_allocator", scenario));
        assert!(list >= 10 * ours, "{scenario}: {ours} vs {list} instructions x100 per pair");
    }
    // The pairs' goal: a block freed right after it was taken (and taken again) is never slower
    // than linked_list_allocator's, at any size.
    for scenario in ["pair_16", "pair_256", "pair_4k", "pair_16k", "pair_64k"] {
        let (ours, list) = (net("ours", scenario), net("linked_list_allocator", scenario));
        assert!(ours <= list, "{scenario}: {ours} vs {list} instructions x100 per pair");
    }
}

#[test]
fn a_translate_hit_takes_at_most_20_instructions_in_the_record_used_last_and_30_in_any() {
    let outcome = bench("bench_translate");
    let translate = rows(&outcome, "TRANSLATE ", 1);
    let own = |case: &str| translate.get(case).unwrap_or_else(|| panic!("no {case}"))[1];
    // The goals (docs/runtime-figures.md, "Memory"; measured: 20 for every one of these): a
    // hit in the record used last within 20, whatever its index, in any record within
    // 30, and misses no worse than before (48 when the low half matches, 27 else).
    for case in ["hit_1", "hit_2", "hit_3", "hit_4", "hit_5"] {
        assert!(own(case) <= 20 * 100, "{case}: {} instructions x100", own(case));
    }
    for case in ["switch_1", "switch_2", "switch_3", "switch_4"] {
        assert!(own(case) <= 30 * 100, "{case}: {} instructions x100", own(case));
    }
    assert!(own("miss_high_word") <= 48 * 100, "miss, low half matches: {}", own("miss_high_word"));
    assert!(own("miss_low_word") <= 27 * 100, "miss, low half differs: {}", own("miss_low_word"));
    // Setup's lookup (no goal; held at the measurement, its wrapper included).
    assert!(own("range_hit") <= 22 * 100, "translate_range: {}", own("range_hit"));
    // Windows that share buckets: the record used last is still the candidate (the
    // first goal); another costs a search of all five (no goal; held at the measured
    // 54 four records apart, and 70 for a miss).
    for case in ["shared_hit_1", "shared_hit_2", "shared_hit_3", "shared_hit_4", "shared_hit_5"] {
        assert!(own(case) <= 20 * 100, "{case}: {} instructions x100", own(case));
    }
    assert!(own("shared_switch_4") <= 54 * 100, "shared, 4 records apart: {}", own("shared_switch_4"));
    assert!(own("shared_miss") <= 70 * 100, "shared, a miss: {}", own("shared_miss"));
    // Overlapping windows (no goal; held at the measurements): each bucket's first
    // window in 20, the window behind one found by a search in 50.
    for case in ["overlap_away_0", "overlap_away_1", "overlap_away_2", "overlap_away_3"] {
        assert!(own(case) <= 20 * 100, "{case}: {} instructions x100", own(case));
    }
    assert!(own("overlap_away_4") <= 50 * 100, "overlapping, behind a candidate: {}", own("overlap_away_4"));
}
