//! The C memory primitives: `memcpy`, `memmove`, `memset`, `memcmp` (and `bcmp`).
//!
//! On the device, `memcpy`, `memmove` and `memset` are assembly
//! (`runtime/arch/xtensa/mem.S`): unrolled zero-overhead loops of aligned words, with
//! SSA8L/SRC funnel shifts for a source that cannot be word-aligned with the
//! destination, at 0.52 instructions per byte aligned and 0.78 misaligned for long
//! copies, and 0.25 per byte for `memset` (docs/PERFORMANCE.md). `memcpy` is also the
//! `VEC_MEMCPY` backend of `neuron_memcpy` (`vec_memcpy` is a second name for it). These
//! are what every Rust `copy_from_slice`, struct copy and fill the compiler emits, and
//! every C call, end up in. Here are their declarations, and the Rust versions the host
//! uses in their place ([`copy_forward`], [`copy_backward`], [`copy_overlapping`],
//! [`fill`]): the host tests check them against the standard library, and the device
//! self-test (`qemu/firmware/src/bin/memcpy_check.rs`) checks the assembly the same way.
//! `memcmp` and `bcmp` are Rust on both ([`compare`]).
//!
//! The compiler lowers copy and fill loops into calls to these very functions (LLVM's
//! loop-idiom pass), so a plain loop here could compile into a call to itself. Every
//! store in the bodies is therefore a relaxed atomic store ([`store_byte`],
//! [`store_word`]): the pass rewrites a loop only when its store (and, for a copy, the
//! load feeding it) is plain or `unordered`, and a relaxed store of an aligned byte or
//! word is an ordinary store. `write_volatile` would be just as opaque to the pass, but
//! LLVM's Xtensa backend puts a `memw` barrier before every volatile access.
//!
//! Loads are plain reads ([`load_byte`], [`load_word`]): an atomic view of the source
//! would need write permission, and `memcpy`'s source may be read-only (`.rodata`, a
//! `&[u8]`). The atomic store already keeps a copy loop from being recognised, and the
//! pass has no idiom for a compare loop, so `memcmp` needs no barrier either; the
//! release disassembly shows `memcmp` calling no `mem*` function.
//!
//! To keep the loops short, the bulk of each operation moves whole words (`usize`) when
//! both pointers can be word-aligned together; only the unaligned head and tail (or a
//! copy between differently aligned pointers) go byte by byte.

use core::ffi::{c_int, c_void};
use core::mem::size_of;
#[cfg(not(target_arch = "xtensa"))]
use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

const WORD: usize = size_of::<usize>();

// The accessors. Atomic views of the destination are sound: for the duration of a call
// the C contract gives the function the only access to its ranges, so no non-atomic
// access races with these.

/// Reads the byte at `ptr`.
///
/// # Safety
/// `ptr` readable, and not written concurrently.
#[inline(always)]
unsafe fn load_byte(ptr: *const u8) -> u8 {
    // SAFETY: bytes are always aligned; readable and race-free (contract).
    unsafe { ptr.read() }
}

#[cfg(not(target_arch = "xtensa"))]
/// Writes `value` to the byte at `ptr`.
///
/// # Safety
/// `ptr` writable, and not accessed concurrently.
#[inline(always)]
unsafe fn store_byte(ptr: *mut u8, value: u8) {
    // SAFETY: bytes are always aligned; writable and race-free (contract).
    unsafe { AtomicU8::from_ptr(ptr) }.store(value, Relaxed)
}

/// Reads the word at `ptr`.
///
/// # Safety
/// `ptr` word-aligned, readable, and not written concurrently.
#[inline(always)]
unsafe fn load_word(ptr: *const usize) -> usize {
    // SAFETY: aligned, readable and race-free (contract).
    unsafe { ptr.read() }
}

#[cfg(not(target_arch = "xtensa"))]
/// Writes `value` to the word at `ptr`.
///
/// # Safety
/// `ptr` word-aligned, writable, and not accessed concurrently.
#[inline(always)]
unsafe fn store_word(ptr: *mut usize, value: usize) {
    // SAFETY: aligned, writable and race-free (contract).
    unsafe { AtomicUsize::from_ptr(ptr) }.store(value, Relaxed)
}

/// Whether `a` and `b` are at the same offset within a word, so aligning one aligns both.
fn co_aligned(a: *const u8, b: *const u8) -> bool {
    (a.addr() ^ b.addr()).is_multiple_of(WORD)
}

/// Bytes from `ptr` to the next word boundary, capped at `len`. Arithmetic on the
/// address: `align_offset` is a call at `opt-level = "s"`.
#[inline(always)]
fn bytes_to_alignment(ptr: *const u8, len: usize) -> usize {
    (ptr.addr().wrapping_neg() % WORD).min(len)
}

#[cfg(not(target_arch = "xtensa"))]
/// Copies `len` bytes from `src` to `dst`, lowest address first, so it is also correct
/// for overlapping ranges when `dst <= src`.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
pub unsafe fn copy_forward(dst: *mut u8, src: *const u8, len: usize) {
    let mut done = 0;
    if co_aligned(dst, src) {
        let head = bytes_to_alignment(dst, len);
        while done < head {
            // SAFETY: `done < len`, inside both ranges (contract).
            unsafe { store_byte(dst.add(done), load_byte(src.add(done))) };
            done += 1;
        }
        let words = (len - done) / WORD;
        // SAFETY: (pointer arithmetic) `done + words * WORD <= len`, inside both ranges.
        let (mut to, mut from) = unsafe { (dst.add(done).cast::<usize>(), src.add(done).cast::<usize>()) };
        // Four words per iteration (the loop's own three instructions amortised), then
        // one at a time. In both loops: whole words left in both ranges, both aligned
        // (co-aligned, and `dst + done` is aligned after the head); each word is read
        // before it is written, and with `dst <= src` a write never reaches bytes not
        // yet read.
        let mut left = words;
        while left >= 4 {
            // SAFETY: see above; four words are left.
            unsafe {
                store_word(to, load_word(from));
                store_word(to.add(1), load_word(from.add(1)));
                store_word(to.add(2), load_word(from.add(2)));
                store_word(to.add(3), load_word(from.add(3)));
                (to, from) = (to.add(4), from.add(4));
            }
            left -= 4;
        }
        while left > 0 {
            // SAFETY: see above; a word is left.
            unsafe {
                store_word(to, load_word(from));
                (to, from) = (to.add(1), from.add(1));
            }
            left -= 1;
        }
        done += words * WORD;
    }
    while done < len {
        // SAFETY: `done < len`, inside both ranges (contract).
        unsafe { store_byte(dst.add(done), load_byte(src.add(done))) };
        done += 1;
    }
}

#[cfg(not(target_arch = "xtensa"))]
/// Copies `len` bytes from `src` to `dst`, highest address first, so it is correct for
/// overlapping ranges when `dst >= src`.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
pub unsafe fn copy_backward(dst: *mut u8, src: *const u8, len: usize) {
    // `left` bytes, [0, left), remain to be copied.
    let mut left = len;
    if co_aligned(dst, src) {
        // SAFETY: (pointer arithmetic) one past the end of the range, in bounds.
        let tail = unsafe { dst.add(len) }.addr() % WORD;
        let stop = left - tail.min(left);
        while left > stop {
            left -= 1;
            // SAFETY: `left < len`, inside both ranges (contract).
            unsafe { store_byte(dst.add(left), load_byte(src.add(left))) };
        }
        while left >= WORD {
            left -= WORD;
            // SAFETY: the word [left, left + WORD) is inside both ranges, and aligned in
            // both (`dst + left + WORD` is aligned after the tail; co-aligned). Read before
            // write, and with `dst >= src` no unread byte is overwritten.
            unsafe {
                store_word(dst.add(left).cast(), load_word(src.add(left).cast()));
            }
        }
    }
    while left > 0 {
        left -= 1;
        // SAFETY: `left < len`, inside both ranges (contract).
        unsafe { store_byte(dst.add(left), load_byte(src.add(left))) };
    }
}

#[cfg(not(target_arch = "xtensa"))]
/// `memmove`: copies `len` bytes from `src` to `dst`; the ranges may overlap.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
pub unsafe fn copy_overlapping(dst: *mut u8, src: *const u8, len: usize) {
    if dst.addr() <= src.addr() {
        // SAFETY: forwarded; forward is correct when `dst <= src`.
        unsafe { copy_forward(dst, src, len) }
    } else {
        // SAFETY: forwarded; backward is correct when `dst > src`.
        unsafe { copy_backward(dst, src, len) }
    }
}

#[cfg(not(target_arch = "xtensa"))]
/// `memset`: writes `byte` to `len` bytes at `dst`.
///
/// # Safety
/// `dst` writable for `len` bytes.
pub unsafe fn fill(dst: *mut u8, byte: u8, len: usize) {
    let pattern = usize::from_ne_bytes([byte; WORD]);
    let head = bytes_to_alignment(dst, len);
    let mut done = 0;
    while done < head {
        // SAFETY: `done < len`, inside the range (contract).
        unsafe { store_byte(dst.add(done), byte) };
        done += 1;
    }
    while len - done >= WORD {
        // SAFETY: a whole aligned word left in the range (aligned after the head).
        unsafe { store_word(dst.add(done).cast(), pattern) };
        done += WORD;
    }
    while done < len {
        // SAFETY: `done < len`, inside the range (contract).
        unsafe { store_byte(dst.add(done), byte) };
        done += 1;
    }
}

/// `memcmp`: compares `len` bytes as unsigned chars; negative, zero or positive as the
/// first differing byte of `a` is below, absent, or above that of `b`.
///
/// # Safety
/// `a` and `b` readable for `len` bytes.
pub unsafe fn compare(a: *const u8, b: *const u8, len: usize) -> c_int {
    let mut done = 0;
    if co_aligned(a, b) {
        let head = bytes_to_alignment(a, len);
        while done < head {
            // SAFETY: `done < len`, inside both ranges (contract).
            let (x, y) = unsafe { (load_byte(a.add(done)), load_byte(b.add(done))) };
            if x != y {
                return c_int::from(x) - c_int::from(y);
            }
            done += 1;
        }
        // Skip equal words; the byte loop below finds the difference in the first
        // unequal one.
        while len - done >= WORD {
            // SAFETY: a whole aligned word left in both ranges (co-aligned, after head).
            let equal = unsafe { load_word(a.add(done).cast()) == load_word(b.add(done).cast()) };
            if !equal {
                break;
            }
            done += WORD;
        }
    }
    while done < len {
        // SAFETY: `done < len`, inside both ranges (contract).
        let (x, y) = unsafe { (load_byte(a.add(done)), load_byte(b.add(done))) };
        if x != y {
            return c_int::from(x) - c_int::from(y);
        }
        done += 1;
    }
    0
}

#[cfg(target_arch = "xtensa")]
unsafe extern "C" {
    /// C `void* memcpy(void* dst, const void* src, size_t n)` (mem.S). Also correct
    /// when the ranges overlap with `dst` below `src`.
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` bytes, not overlapping.
    pub fn memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;

    /// C `void* memmove(void* dst, const void* src, size_t n)` (mem.S).
    ///
    /// # Safety
    /// `src` readable and `dst` writable for `n` bytes; they may overlap.
    pub fn memmove(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;

    /// C `void* memset(void* dst, int c, size_t n)` (mem.S): writes `(unsigned char)c`.
    ///
    /// # Safety
    /// `dst` writable for `n` bytes.
    pub fn memset(dst: *mut c_void, c: c_int, n: usize) -> *mut c_void;
}

/// The host's stand-in for C `memcpy` (mem.S on the device).
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes, not overlapping.
#[cfg(not(target_arch = "xtensa"))]
pub unsafe extern "C" fn memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_forward(dst.cast(), src.cast(), n) };
    dst
}

/// The host's stand-in for C `memmove` (mem.S on the device).
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes; they may overlap.
#[cfg(not(target_arch = "xtensa"))]
pub unsafe extern "C" fn memmove(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void {
    // SAFETY: forwarded from this function's contract.
    unsafe { copy_overlapping(dst.cast(), src.cast(), n) };
    dst
}

/// The host's stand-in for C `memset` (mem.S on the device): writes `(unsigned char)c`.
///
/// # Safety
/// `dst` writable for `n` bytes.
#[cfg(not(target_arch = "xtensa"))]
pub unsafe extern "C" fn memset(dst: *mut c_void, c: c_int, n: usize) -> *mut c_void {
    // SAFETY: forwarded from this function's contract. C converts `c` to unsigned char.
    unsafe { fill(dst.cast(), c as u8, n) };
    dst
}

/// C `int memcmp(const void* a, const void* b, size_t n)`.
///
/// # Safety
/// `a` and `b` readable for `n` bytes.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn memcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    // SAFETY: forwarded from this function's contract.
    unsafe { compare(a.cast(), b.cast(), n) }
}

/// C `int bcmp(const void* a, const void* b, size_t n)`: zero iff equal. LLVM turns
/// `memcmp(...) == 0` (and Rust slice `==`) into calls to it.
///
/// # Safety
/// `a` and `b` readable for `n` bytes.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn bcmp(a: *const c_void, b: *const c_void, n: usize) -> c_int {
    // SAFETY: forwarded from this function's contract.
    unsafe { compare(a.cast(), b.cast(), n) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    const BUF: usize = 96;

    fn pattern(seed: u8) -> Vec<u8> {
        (0..BUF as u8).map(|i| i.wrapping_mul(37).wrapping_add(seed)).collect()
    }

    /// (offset, offset, length) triples inside a BUF-byte buffer.
    fn ranges() -> impl Strategy<Value = (usize, usize, usize)> {
        (0..BUF, 0..BUF).prop_flat_map(|(a, b)| (Just(a), Just(b), 0..=BUF - a.max(b)))
    }

    proptest! {
        // Miri interprets about 1000x slower: a few cases there, the full count natively.
        #![proptest_config(if cfg!(miri) { ProptestConfig::with_cases(8) } else { ProptestConfig::default() })]

        #[test]
        fn copy_forward_matches_copy_from_slice((d, s, n) in ranges(), seed: u8) {
            let src = pattern(seed);
            let mut got = std::vec![0xAAu8; BUF];
            let mut want = got.clone();
            // SAFETY: both ranges lie inside their BUF-byte buffers.
            unsafe { memcpy(got.as_mut_ptr().add(d).cast(), src.as_ptr().add(s).cast(), n) };
            want[d..d + n].copy_from_slice(&src[s..s + n]);
            prop_assert_eq!(got, want);
        }

        #[test]
        fn copy_overlapping_matches_copy_within((d, s, n) in ranges(), seed: u8) {
            let mut got = pattern(seed);
            let mut want = got.clone();
            let base = got.as_mut_ptr();
            // SAFETY: both ranges lie inside the one BUF-byte buffer; memmove allows overlap.
            unsafe { memmove(base.add(d).cast(), base.add(s).cast(), n) };
            want.copy_within(s..s + n, d);
            prop_assert_eq!(got, want);
        }

        #[test]
        fn directional_copies_handle_their_overlap((d, s, n) in ranges(), seed: u8) {
            let (d, s) = (d.min(s), d.max(s));
            let mut forward = pattern(seed);
            let mut want = forward.clone();
            want.copy_within(s..s + n, d);
            // SAFETY: inside the buffer; forward copies allow dst <= src.
            unsafe { copy_forward(forward.as_mut_ptr().add(d), forward.as_ptr().add(s), n) };
            prop_assert_eq!(&forward, &want);

            let mut backward = pattern(seed);
            let mut want = backward.clone();
            want.copy_within(d..d + n, s);
            // SAFETY: inside the buffer; backward copies allow dst >= src.
            unsafe { copy_backward(backward.as_mut_ptr().add(s), backward.as_ptr().add(d), n) };
            prop_assert_eq!(backward, want);
        }

        #[test]
        fn fill_matches_slice_fill((d, _, n) in ranges(), c: c_int) {
            let mut got = pattern(1);
            let mut want = got.clone();
            // SAFETY: the range lies inside the buffer.
            unsafe { memset(got.as_mut_ptr().add(d).cast(), c, n) };
            want[d..d + n].fill(c as u8);
            prop_assert_eq!(got, want);
        }

        #[test]
        fn compare_matches_slice_ordering(
            (x, y, n) in ranges(),
            seed: u8,
            flip in proptest::option::of((0..BUF, any::<u8>())),
        ) {
            let a = pattern(seed);
            // Same bytes at the same stream positions, so most pairs are equal up to the
            // (optional) flipped byte, which exercises the word-skipping path.
            let mut b = std::vec![0u8; BUF];
            b[y..y + n].copy_from_slice(&a[x..x + n]);
            if let Some((at, value)) = flip && n > 0 {
                b[y + at % n] = value;
            }
            // SAFETY: both ranges lie inside their buffers.
            let got = unsafe { memcmp(a.as_ptr().add(x).cast(), b.as_ptr().add(y).cast(), n) };
            let want = a[x..x + n].cmp(&b[y..y + n]);
            prop_assert_eq!(got.signum(), want as c_int);
            // SAFETY: as above.
            let equal = unsafe { bcmp(a.as_ptr().add(x).cast(), b.as_ptr().add(y).cast(), n) };
            prop_assert_eq!(equal == 0, want.is_eq());
        }
    }

    #[test]
    fn compare_returns_the_byte_difference_as_unsigned() {
        let (a, b) = ([1u8, 0x80, 3], [1u8, 0x7F, 9]);
        // SAFETY: three readable bytes each.
        assert_eq!(unsafe { compare(a.as_ptr(), b.as_ptr(), 3) }, 1);
        // SAFETY: as above.
        assert_eq!(unsafe { compare(b.as_ptr(), a.as_ptr(), 3) }, -1);
    }

    #[test]
    fn zero_length_touches_nothing() {
        let dangling = core::ptr::NonNull::<u8>::dangling().as_ptr();
        // SAFETY: zero-length operations read and write nothing.
        unsafe {
            copy_overlapping(dangling, dangling, 0);
            fill(dangling, 0, 0);
            assert_eq!(compare(dangling, dangling, 0), 0);
        }
    }
}
