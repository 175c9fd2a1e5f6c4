//! Self-test of `neuron_memcpy`: every backend (C, VEC, and the DMA slot as it is now),
//! selected through `neuron_set_memcpy_method`, copies every length 0..=257 and a few
//! large ones at every source/destination alignment pair in 0..4; each copy is compared
//! byte for byte and the canaries around the destination must stay untouched. Then the
//! method rules: 3 and 4 are rejected and leave the active method as it was. Then the
//! libc `memmove` (runtime/arch/xtensa/mem.S) for every overlap: each length in
//! [`MOVE_LENGTHS`], each distance from source to destination in [`move_shifts`] (up
//! and down, overlapping or not) at each word alignment of the source; and `memset` of
//! every length 0..=300 at every destination alignment, with canaries.
//!
//! Prints `memcpy_check lengths=<n> alignments=16 methods=3 moves=<n> sets=<n>
//! cases=<n> failures=<n>` and exits with 1 on any failure (`qemu/tests/data_movement.rs`
//! checks both).
#![no_std]
#![no_main]

use core::ptr::addr_of_mut;
use neuroncustomop::data_transfer::{
    MEMCPY_METHOD_INVALID, MEMCPY_METHOD_OK, NeuronMemcpyMethod, neuron_get_memcpy_method, neuron_memcpy,
    neuron_set_memcpy_method,
};
use neuroncustomop_firmware::println;

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

/// The lengths beyond 0..=257: around the unrolled loops' block sizes and a long copy.
const LARGE_LENGTHS: [usize; 5] = [1000, 1024, 4096, 4099, 65536 + 3];
const MAX_LENGTH: usize = 65536 + 3;
/// Canary bytes on each side of the destination.
const CANARY: usize = 16;
const CANARY_BYTE: u8 = 0xA5;
/// Failures reported line by line before only counting.
const REPORTED_FAILURES: u32 = 10;

static mut SOURCE: [u32; (MAX_LENGTH + 3).div_ceil(4)] = [0; (MAX_LENGTH + 3).div_ceil(4)];
static mut DESTINATION: [u32; (CANARY + 3 + MAX_LENGTH + CANARY).div_ceil(4)] =
    [0; (CANARY + 3 + MAX_LENGTH + CANARY).div_ceil(4)];

/// A byte stream with no short period, so a copy from a wrong offset cannot match.
fn pattern_byte(i: usize) -> u8 {
    let x = (i as u32).wrapping_mul(0x9E37_79B9) ^ 0x5bd1_e995;
    (x >> 24) as u8 ^ (x >> 11) as u8
}

fn source() -> &'static mut [u8] {
    // SAFETY: this core is the only user of SOURCE; each caller's borrow ends before
    // the next (main is single-threaded and does not hold two at once).
    unsafe { as_bytes(&mut *addr_of_mut!(SOURCE)) }
}

fn destination() -> &'static mut [u8] {
    // SAFETY: as for `source`.
    unsafe { as_bytes(&mut *addr_of_mut!(DESTINATION)) }
}

fn as_bytes(words: &mut [u32]) -> &mut [u8] {
    // SAFETY: bytes have no alignment or validity requirement; same memory, same borrow.
    unsafe { core::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), size_of_val(words)) }
}

struct Tally {
    cases: u32,
    failures: u32,
}

impl Tally {
    fn fail(&mut self, what: core::fmt::Arguments<'_>) {
        self.failures += 1;
        if self.failures <= REPORTED_FAILURES {
            println!("FAIL {what}");
        }
    }
}

/// One copy of `len` bytes from source offset `src_offset` to destination offset
/// `dst_offset` (both buffers word-aligned) through `neuron_memcpy`.
fn check(tally: &mut Tally, method: NeuronMemcpyMethod, len: usize, src_offset: usize, dst_offset: usize) {
    tally.cases += 1;
    let start = CANARY + dst_offset;
    let end = start + len;
    destination()[..end + CANARY].fill(CANARY_BYTE);
    let src = source()[src_offset..].as_ptr();
    let dst = destination()[start..].as_mut_ptr();
    // SAFETY: both ranges lie inside their own static buffers, which do not overlap.
    unsafe { neuron_memcpy(dst.cast(), src.cast(), len) };
    let (dst, src) = (&destination()[..end + CANARY], &source()[src_offset..src_offset + len]);
    if dst[start..end] != *src {
        let first = dst[start..end].iter().zip(src).position(|(d, s)| d != s).unwrap_or(0);
        tally.fail(format_args!("{} len={len} src+{src_offset} dst+{dst_offset}: first wrong byte {first}", method.name()));
    } else if dst[..start].iter().chain(&dst[end..]).any(|&b| b != CANARY_BYTE) {
        tally.fail(format_args!("{} len={len} src+{src_offset} dst+{dst_offset}: canary overwritten", method.name()));
    }
}

/// An overlapping copy through `neuron_memcpy` must behave as `memmove`.
fn check_overlap(tally: &mut Tally, method: NeuronMemcpyMethod, dst_offset: usize, src_offset: usize, len: usize) {
    tally.cases += 1;
    let buffer = &mut destination()[..512];
    for (i, byte) in buffer.iter_mut().enumerate() {
        *byte = pattern_byte(i);
    }
    let base = buffer.as_mut_ptr();
    // SAFETY: both ranges lie inside the 512-byte buffer; overlap is allowed.
    unsafe { neuron_memcpy(base.add(dst_offset).cast(), base.add(src_offset).cast(), len) };
    let moved = (0..512).all(|i| {
        let want = if (dst_offset..dst_offset + len).contains(&i) { pattern_byte(i - dst_offset + src_offset) } else { pattern_byte(i) };
        destination()[i] == want
    });
    if !moved {
        tally.fail(format_args!("{} overlapping dst+{dst_offset} src+{src_offset} len={len}", method.name()));
    }
}

/// The `memmove` lengths: every one up to the 16-byte threshold and well past a group,
/// then around the 64- and 128-byte loop bodies and one long move.
const MOVE_LENGTHS: [usize; 12] = [0, 1, 3, 4, 15, 16, 17, 63, 64, 129, 300, 1027];
/// Where the moved range starts in the destination buffer: room below for a
/// downward move of the largest shift.
const MOVE_BASE: usize = 512;

/// Destination minus source for `memmove`: every distance up to 40 bytes both ways
/// (overlapping at every word phase) and some beyond a loop body.
fn move_shifts() -> impl Iterator<Item = isize> + Clone {
    (-40..=40).chain([-300, -129, -128, -64, 64, 128, 129, 300])
}

/// `memmove` of `len` bytes from `src` to `src + shift` inside the destination buffer,
/// against the same move computed byte by byte from the pattern.
fn check_move(tally: &mut Tally, len: usize, src: usize, shift: isize) {
    tally.cases += 1;
    let dst = src.checked_add_signed(shift).expect("MOVE_BASE leaves room below");
    let (low, high) = (src.min(dst) - CANARY, src.max(dst) + len + CANARY);
    for i in low..high {
        destination()[i] = pattern_byte(i);
    }
    let base = destination().as_mut_ptr();
    // SAFETY: both ranges lie inside the destination buffer; memmove allows overlap.
    unsafe { neuroncustomop::start_exit::memmove(base.add(dst).cast(), base.add(src).cast(), len) };
    let want = |i: usize| if (dst..dst + len).contains(&i) { pattern_byte(i - dst + src) } else { pattern_byte(i) };
    if let Some(wrong) = (low..high).find(|&i| destination()[i] != want(i)) {
        tally.fail(format_args!("memmove len={len} src={src} shift={shift}: wrong byte at {wrong}"));
    }
}

/// `memset` of `len` bytes at destination offset `dst_offset`, with canaries. The
/// value's bits above the low byte must be ignored (C converts it to unsigned char).
fn check_set(tally: &mut Tally, len: usize, dst_offset: usize) {
    const VALUE: core::ffi::c_int = 0x13C;
    tally.cases += 1;
    let start = CANARY + dst_offset;
    let end = start + len;
    destination()[..end + CANARY].fill(CANARY_BYTE);
    // SAFETY: the range lies inside the destination buffer.
    unsafe { neuroncustomop::start_exit::memset(destination()[start..].as_mut_ptr().cast(), VALUE, len) };
    let dst = &destination()[..end + CANARY];
    if dst[start..end].iter().any(|&b| b != VALUE as u8) {
        tally.fail(format_args!("memset len={len} dst+{dst_offset}: wrong byte"));
    } else if dst[..start].iter().chain(&dst[end..]).any(|&b| b != CANARY_BYTE) {
        tally.fail(format_args!("memset len={len} dst+{dst_offset}: canary overwritten"));
    }
}

/// `neuron_set_memcpy_method(3)` and `(4)` are rejected and change nothing.
fn check_method_rules(tally: &mut Tally) {
    for active in NeuronMemcpyMethod::ALL {
        tally.cases += 1;
        if neuron_set_memcpy_method(active as u32) != MEMCPY_METHOD_OK || neuron_get_memcpy_method() != active {
            tally.fail(format_args!("method {} not accepted", active.name()));
        }
        for bad in [NeuronMemcpyMethod::MAX_METHODS, NeuronMemcpyMethod::MAX_METHODS + 1] {
            tally.cases += 1;
            let status = neuron_set_memcpy_method(bad);
            if status != MEMCPY_METHOD_INVALID || neuron_get_memcpy_method() != active {
                tally.fail(format_args!("method {bad} with {} active: status {status}", active.name()));
            }
        }
    }
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    for (i, byte) in source().iter_mut().enumerate() {
        *byte = pattern_byte(i);
    }
    let mut tally = Tally { cases: 0, failures: 0 };
    if neuron_get_memcpy_method() != NeuronMemcpyMethod::Dma {
        tally.fail(format_args!("the default method is not DMA"));
    }
    let lengths = (0..=257).chain(LARGE_LENGTHS);
    for method in NeuronMemcpyMethod::ALL {
        if neuron_set_memcpy_method(method as u32) != MEMCPY_METHOD_OK {
            tally.fail(format_args!("cannot select {}", method.name()));
            continue;
        }
        for len in lengths.clone() {
            for src_offset in 0..4 {
                for dst_offset in 0..4 {
                    check(&mut tally, method, len, src_offset, dst_offset);
                }
            }
        }
        for (dst_offset, src_offset, len) in [(0, 1, 300), (1, 0, 300), (5, 2, 200), (2, 7, 257), (0, 0, 100)] {
            check_overlap(&mut tally, method, dst_offset, src_offset, len);
        }
    }
    check_method_rules(&mut tally);
    let mut moves = 0;
    for len in MOVE_LENGTHS {
        for shift in move_shifts() {
            for src_offset in 0..4 {
                check_move(&mut tally, len, MOVE_BASE + src_offset, shift);
                moves += 1;
            }
        }
    }
    let mut sets = 0;
    for len in 0..=300 {
        for dst_offset in 0..4 {
            check_set(&mut tally, len, dst_offset);
            sets += 1;
        }
    }
    if !source().iter().enumerate().all(|(i, &byte)| byte == pattern_byte(i)) {
        tally.fail(format_args!("a copy wrote to its source"));
    }
    println!(
        "memcpy_check lengths={} alignments=16 methods={} moves={moves} sets={sets} cases={} failures={}",
        lengths.count(),
        NeuronMemcpyMethod::MAX_METHODS,
        tally.cases,
        tally.failures
    );
    i32::from(tally.failures != 0)
}
