//! Benchmark of `neuron_memcpy`: guest instructions per byte of every backend, from
//! 64 B to 64 KiB, with the source word-aligned and not, next to a plain byte loop,
//! compiler_builtins' `memcpy` and the runtime's own libc `memcpy`. Run it with
//! `cargo sim run bench_memcpy --count-instructions` (see qemu/firmware/src/bench.rs).
//!
//! Contenders:
//! - `c`, `vec`, `dma`: `neuron_memcpy` with that method selected (the dispatch is
//!   included, as a caller pays it);
//! - `nothing`: a call that copies nothing: the harness's own cost, to subtract;
//! - `vec_direct`: the `vec_memcpy` backend called directly, without the dispatch;
//! - `byte_loop`: one `l8ui` + `s8i` per byte (relaxed atomics, which LLVM cannot turn
//!   into a `memcpy` call);
//! - `builtins`: `compiler_builtins::mem::memcpy`, called by its Rust path. Its
//!   exported `memcpy` symbol is weak, and the runtime's libc defines a strong one
//!   (start_exit/mem.rs), so in an image the symbol `memcpy` is the runtime's;
//! - `libc`: that symbol, the runtime's `memcpy`;
//! - `memmove`: the runtime's `memmove` between the two buffers (no overlap);
//! - `memmove_overlap`: the runtime's `memmove` inside one buffer, 64 bytes up, so the
//!   ranges overlap and the copy must run from the top down;
//! - `memset`: the runtime's `memset` of the destination (at the source's offset).
//!
//! Each measurement prints a `BENCH` line (the harness's) and a table row:
//! `MEMCPY <contender> <aligned|misaligned> <bytes> <instructions per copy x100>
//! <instructions per byte x1000>`. Misaligned means the source is 1 byte past a word
//! boundary and the destination on one, so the two can never be aligned together.
#![no_std]
#![no_main]
#![feature(rustc_private)]

extern crate compiler_builtins;

use core::ffi::c_void;
use core::hint::black_box;
use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicU8, Ordering::Relaxed};
use neuroncustomop::data_transfer::{self, NeuronMemcpyMethod, neuron_memcpy, neuron_set_memcpy_method};
use neuroncustomop_firmware::{bench, println};

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

const MAX_LENGTH: usize = 64 * 1024;
/// Bytes copied per measurement, spread over as many repetitions as that takes, so
/// every measurement spans thousands of CCOUNT ticks (25 instructions each).
const BYTES_PER_MEASUREMENT: usize = 256 * 1024;
/// At least this many repetitions, so the first (cold) one weighs little.
const MIN_REPETITIONS: usize = 4;

/// How far up `memmove_overlap` moves its bytes.
const OVERLAP_SHIFT: usize = 64;
/// Words in each buffer: the longest copy, its offset, and the overlapping move's shift.
const BUFFER_WORDS: usize = (MAX_LENGTH + OVERLAP_SHIFT) / 4 + 1;

static mut SOURCE: [u32; BUFFER_WORDS] = [0; BUFFER_WORDS];
static mut DESTINATION: [u32; BUFFER_WORDS] = [0; BUFFER_WORDS];

/// Measures `copy` on `len` bytes from source offset `src_offset` and prints the
/// table row. Generic, so each contender is called directly, as a caller would.
fn measure(name: &str, len: usize, src_offset: usize, copy: impl Fn(*mut u8, *const u8, usize)) {
    // Raw pointers only: this core is the only user of the buffers.
    let (src, dst) = (addr_of_mut!(SOURCE).cast::<u8>(), addr_of_mut!(DESTINATION).cast::<u8>());
    let alignment = if src_offset == 0 { "aligned" } else { "misaligned" };
    let repetitions = (BYTES_PER_MEASUREMENT / len.max(1)).max(MIN_REPETITIONS) as u32;
    let per_copy_x100 = bench::measure(bench_name(name, alignment, len).as_str(), repetitions, || {
        // SAFETY: (pointer arithmetic) `src_offset + len <= MAX_LENGTH + 3` bytes
        // fit in both buffers, which are distinct statics.
        copy(black_box(dst), black_box(unsafe { src.add(src_offset) }), black_box(len))
    });
    let per_byte_x1000 = per_copy_x100 * 10 / len.max(1) as u64;
    println!("MEMCPY {name} {alignment} {len} {per_copy_x100} {per_byte_x1000}");
}

/// The harness alone: a call that copies nothing, to subtract from the others.
#[inline(never)]
extern "C" fn nothing(dst: *mut c_void, _src: *const c_void, _n: usize) -> *mut c_void {
    black_box(dst)
}

fn byte_loop(dst: *mut u8, src: *const u8, len: usize) {
    for i in 0..len {
        // SAFETY: `i < len`, inside both ranges (the caller's), accessed by nothing else.
        unsafe { AtomicU8::from_ptr(dst.add(i)).store(AtomicU8::from_ptr(src.add(i).cast_mut()).load(Relaxed), Relaxed) }
    }
}

/// Every contender on every length, with the source at `src_offset`.
fn run_all(src_offset: usize) {
    let lengths = || {
        [1, 4, 8, 16]
            .into_iter()
            .chain(core::iter::successors(Some(64), |len| Some(len * 4)).take_while(|&len| len <= MAX_LENGTH))
            .chain([0])
    };
    for len in lengths() {
        measure("nothing", len, src_offset, |d, s, n| {
            nothing(d.cast(), s.cast(), n);
        });
    }
    for method in NeuronMemcpyMethod::ALL {
        neuron_set_memcpy_method(method as u32);
        let name = ["c", "vec", "dma"][method as usize];
        for len in lengths() {
            // SAFETY: `measure` passes valid, disjoint ranges.
            measure(name, len, src_offset, |d, s, n| unsafe { neuron_memcpy(d.cast(), s.cast(), n) });
        }
    }
    let vec_memcpy = data_transfer::backend(NeuronMemcpyMethod::VecMemcpy);
    for len in lengths() {
        // SAFETY: as above.
        measure("vec_direct", len, src_offset, |d, s, n| unsafe {
            vec_memcpy(d.cast(), s.cast(), n);
        });
        measure("byte_loop", len, src_offset, byte_loop);
        // SAFETY: as above.
        measure("builtins", len, src_offset, |d, s, n| unsafe {
            compiler_builtins::mem::memcpy(d, s, n);
        });
        // SAFETY: as above.
        measure("libc", len, src_offset, |d, s, n| unsafe {
            neuroncustomop::start_exit::memcpy(d.cast(), s.cast(), n);
        });
        // SAFETY: as above (memmove also allows what memcpy does).
        measure("memmove", len, src_offset, |d, s, n| unsafe {
            neuroncustomop::start_exit::memmove(d.cast(), s.cast(), n);
        });
        // SAFETY: [src, src + n) and the range OVERLAP_SHIFT above it both lie in the
        // destination buffer (BUFFER_WORDS); memmove allows the overlap.
        measure("memmove_overlap", len, src_offset, |d, _, n| unsafe {
            let from = d.add(src_offset);
            neuroncustomop::start_exit::memmove(from.add(OVERLAP_SHIFT - src_offset).cast(), from.cast(), n);
        });
        // SAFETY: [d + src_offset, + n) lies in the destination buffer.
        measure("memset", len, src_offset, |d, _, n| unsafe {
            neuroncustomop::start_exit::memset(d.add(src_offset).cast(), 0x5A, n);
        });
    }
}

/// `<name>_<alignment>_<len>`, the BENCH line's name.
fn bench_name(name: &str, alignment: &str, len: usize) -> heapless::String<64> {
    use core::fmt::Write;
    let mut label = heapless::String::<64>::new();
    let _ = write!(label, "memcpy_{name}_{alignment}_{len}");
    label
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    // SAFETY: main is the only user of SOURCE.
    for (i, word) in unsafe { &mut *addr_of_mut!(SOURCE) }.iter_mut().enumerate() {
        *word = (i as u32).wrapping_mul(0x9E37_79B9);
    }
    run_all(0);
    run_all(1);
    0
}
