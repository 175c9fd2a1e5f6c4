//! The string functions against glibc's, on generated strings from a small alphabet (so
//! that matches, prefixes and repeats are common), every `n` around their lengths.

use super::*;
use crate::test_models::printf_cases::Rng;
use std::ffi::CString;
use std::vec::Vec;

mod glibc {
    use core::ffi::{c_char, c_int, c_void};
    unsafe extern "C" {
        pub fn strcmp(a: *const c_char, b: *const c_char) -> c_int;
        pub fn strncmp(a: *const c_char, b: *const c_char, n: usize) -> c_int;
        pub fn strncpy(d: *mut c_char, s: *const c_char, n: usize) -> *mut c_char;
        pub fn strncat(d: *mut c_char, s: *const c_char, n: usize) -> *mut c_char;
        pub fn strchr(s: *const c_char, c: c_int) -> *mut c_char;
        pub fn strrchr(s: *const c_char, c: c_int) -> *mut c_char;
        pub fn strstr(h: *const c_char, n: *const c_char) -> *mut c_char;
        pub fn strnlen(s: *const c_char, n: usize) -> usize;
        pub fn memchr(s: *const c_void, c: c_int, n: usize) -> *mut c_void;
    }
}

fn random_string(rng: &mut Rng) -> CString {
    let len = rng.below(12) as usize;
    // Bytes above 127 too: comparisons are of unsigned char.
    CString::new((0..len).map(|_| [b'a', b'b', b'c', 0xe9][rng.below(4) as usize]).collect::<Vec<u8>>()).unwrap()
}

fn sign(n: c_int) -> c_int {
    n.signum()
}

#[test]
fn comparisons_searches_and_lengths_match_glibc() {
    let mut rng = Rng::new(7);
    for _ in 0..3000 {
        let (a, b) = (random_string(&mut rng), random_string(&mut rng));
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let c = [0, c_int::from(b'a'), c_int::from(b'c'), 0xe9, 0x1e9 /* (char)c: 0xe9 */][rng.below(5) as usize];
        // SAFETY: NUL-terminated strings; every n reads at most to their NULs.
        unsafe {
            assert_eq!(sign(strcmp(pa, pb)), sign(glibc::strcmp(pa, pb)), "{a:?} {b:?}");
            for n in 0..14 {
                assert_eq!(sign(strncmp(pa, pb, n)), sign(glibc::strncmp(pa, pb, n)), "{a:?} {b:?} {n}");
                assert_eq!(strnlen(pa, n), glibc::strnlen(pa, n));
            }
            assert_eq!(strchr(pa, c), glibc::strchr(pa, c), "{a:?} {c}");
            assert_eq!(strrchr(pa, c), glibc::strrchr(pa, c), "{a:?} {c}");
            assert_eq!(strstr(pa, pb), glibc::strstr(pa, pb), "{a:?} {b:?}");
            let len = a.as_bytes().len();
            assert_eq!(memchr(pa.cast(), c, len), glibc::memchr(pa.cast(), c, len));
        }
    }
}

#[test]
fn copies_and_concatenations_match_glibc() {
    let mut rng = Rng::new(8);
    for _ in 0..2000 {
        let (a, b) = (random_string(&mut rng), random_string(&mut rng));
        let n = rng.below(16) as usize;
        let (mut ours, mut theirs) = ([0x55u8; 48], [0x55u8; 48]);
        // SAFETY: 48-byte buffers hold any copy (n < 16) and the longest string the steps
        // build: `a`, then up to all of `b` twice (each below 12 bytes), and the NUL (34).
        unsafe {
            let (o, t) = (ours.as_mut_ptr().cast::<c_char>(), theirs.as_mut_ptr().cast::<c_char>());
            assert_eq!(strncpy(o, a.as_ptr(), n), o);
            glibc::strncpy(t, a.as_ptr(), n);
            assert_eq!(ours, theirs, "strncpy {a:?} {n}");
            strcpy(o, a.as_ptr());
            core::ptr::copy_nonoverlapping(a.as_ptr(), t, a.as_bytes().len() + 1);
            assert_eq!(ours, theirs, "strcpy {a:?}");
            assert_eq!(strncat(o, b.as_ptr(), n), o);
            glibc::strncat(t, b.as_ptr(), n);
            assert_eq!(ours, theirs, "strncat {a:?} {b:?} {n}");
            strcat(o, b.as_ptr());
            glibc::strncat(t, b.as_ptr(), usize::MAX);
            assert_eq!(ours, theirs, "strcat");
        }
    }
}
