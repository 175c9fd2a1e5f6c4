//! The conversions, `qsort` and `bsearch` against glibc's.

use super::*;
use crate::test_models::printf_cases::Rng;
use std::ffi::CString;
use std::vec::Vec;

mod glibc {
    use core::ffi::{c_char, c_int, c_long, c_ulong, c_void};
    unsafe extern "C" {
        pub fn strtol(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_long;
        pub fn strtoul(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_ulong;
        pub fn strtod(s: *const c_char, end: *mut *mut c_char) -> f64;
        pub fn strtof(s: *const c_char, end: *mut *mut c_char) -> f32;
        pub fn qsort(base: *mut c_void, count: usize, size: usize, compare: super::Compare);
        pub fn __errno_location() -> *mut c_int;
    }
}

/// Texts C's number syntax takes apart: signs, prefixes, bases, overflow, junk after.
fn integer_text(rng: &mut Rng) -> CString {
    let pieces: [&[u8]; 12] =
        [b" ", b"\t", b"-", b"+", b"0", b"0x", b"7", b"9", b"z", b"f", b"123456789", b"99999999999999999999"];
    let text: Vec<u8> = (0..rng.below(6)).flat_map(|_| pieces[rng.below(12) as usize].iter().copied()).collect();
    CString::new(text).unwrap()
}

fn float_text(rng: &mut Rng) -> CString {
    let pieces: [&[u8]; 16] = [
        b" ",
        b"-",
        b"+",
        b"0",
        b"1",
        b"5",
        b"9",
        b".",
        b"e",
        b"E-",
        b"e+3",
        b"inf",
        b"INFINITY",
        b"nan",
        b"0.1",
        b"e400",
    ];
    let text: Vec<u8> = (0..rng.below(7)).flat_map(|_| pieces[rng.below(16) as usize].iter().copied()).collect();
    CString::new(text).unwrap()
}

#[test]
fn integer_conversions_match_glibc_with_end_and_errno() {
    let mut rng = Rng::new(9);
    for _ in 0..5000 {
        let text = integer_text(&mut rng);
        let base = [0, 0, 10, 16, 8, 2, 36, 1, 37][rng.below(9) as usize];
        let (mut ours_end, mut glibc_end) = (core::ptr::null_mut(), core::ptr::null_mut());
        // SAFETY: NUL-terminated text; ends are locals; errno is this thread's.
        unsafe {
            *crate::start_exit::__errno() = 0;
            *glibc::__errno_location() = 0;
            let ours = strtol(text.as_ptr(), &mut ours_end, base);
            let glibc_value = glibc::strtol(text.as_ptr(), &mut glibc_end, base);
            assert_eq!((ours, ours_end), (glibc_value, glibc_end), "strtol({text:?}, {base})");
            let range = |errno: c_int| errno == ERANGE;
            assert_eq!(
                range(*crate::start_exit::__errno()),
                range(*glibc::__errno_location()),
                "ERANGE of strtol({text:?})"
            );
            let ours = strtoul(text.as_ptr(), &mut ours_end, base);
            let glibc_value = glibc::strtoul(text.as_ptr(), &mut glibc_end, base);
            assert_eq!((ours, ours_end), (glibc_value, glibc_end), "strtoul({text:?}, {base})");
            if base == 10 {
                assert_eq!(atoi(text.as_ptr()), glibc::strtol(text.as_ptr(), core::ptr::null_mut(), 10) as c_int);
            }
        }
    }
}

#[test]
fn float_conversions_match_glibc_bit_for_bit() {
    let mut rng = Rng::new(10);
    for _ in 0..5000 {
        let text = float_text(&mut rng);
        let (mut ours_end, mut glibc_end) = (core::ptr::null_mut(), core::ptr::null_mut());
        // SAFETY: NUL-terminated text; ends are locals.
        unsafe {
            let ours = strtod(text.as_ptr(), &mut ours_end);
            let glibc_value = glibc::strtod(text.as_ptr(), &mut glibc_end);
            let same = ours.to_bits() == glibc_value.to_bits() || (ours.is_nan() && glibc_value.is_nan());
            assert!(same && ours_end == glibc_end, "strtod({text:?}): {ours:e} vs {glibc_value:e}");
            let ours = strtof(text.as_ptr(), &mut ours_end);
            let glibc_value = glibc::strtof(text.as_ptr(), &mut glibc_end);
            let same = ours.to_bits() == glibc_value.to_bits() || (ours.is_nan() && glibc_value.is_nan());
            assert!(same && ours_end == glibc_end, "strtof({text:?}): {ours:e} vs {glibc_value:e}");
            assert_eq!(atof(text.as_ptr()).to_bits(), strtod(text.as_ptr(), core::ptr::null_mut()).to_bits());
        }
    }
    // Correct rounding where a naive parser errs: halfway cases and long inputs.
    for text in [
        c"9007199254740993",
        c"2.2250738585072011e-308",
        c"0.1000000000000000055511151231257827",
        c"1e23",
        c"3.4028235677973366e38",
    ] {
        // SAFETY: NUL-terminated.
        unsafe {
            assert_eq!(
                strtod(text.as_ptr(), core::ptr::null_mut()).to_bits(),
                glibc::strtod(text.as_ptr(), core::ptr::null_mut()).to_bits()
            );
            assert_eq!(
                strtof(text.as_ptr(), core::ptr::null_mut()).to_bits(),
                glibc::strtof(text.as_ptr(), core::ptr::null_mut()).to_bits()
            );
        }
    }
}

unsafe extern "C" fn by_value(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: qsort and bsearch pass elements of the i32 arrays below.
    let (a, b) = unsafe { (*a.cast::<i32>(), *b.cast::<i32>()) };
    a.cmp(&b) as c_int
}

#[test]
fn qsort_sorts_as_glibc_and_bsearch_finds_every_element() {
    let mut rng = Rng::new(11);
    for count in (0..300).step_by(7) {
        let values: Vec<i32> = (0..count).map(|_| rng.below(50) as i32 - 25).collect();
        let (mut ours, mut theirs) = (values.clone(), values.clone());
        // SAFETY: arrays of `count` i32s and a comparator of i32s.
        unsafe {
            qsort(ours.as_mut_ptr().cast(), count, 4, Some(by_value));
            glibc::qsort(theirs.as_mut_ptr().cast(), count, 4, by_value);
        }
        assert_eq!(ours, theirs);
        let mut unique = ours.clone();
        unique.dedup();
        for key in -26..26 {
            // SAFETY: a sorted array of i32s.
            let found = unsafe {
                bsearch((&key as *const i32).cast(), unique.as_ptr().cast(), unique.len(), 4, Some(by_value))
            };
            let want = unique.iter().position(|&v| v == key).map_or(core::ptr::null(), |i| &unique[i] as *const i32);
            assert_eq!(found.cast_const().cast::<i32>(), want, "key {key}");
        }
    }
    assert_eq!((abs(-5), labs(c_long::MIN + 1), llabs(-7)), (5, c_long::MAX, 7));
}
