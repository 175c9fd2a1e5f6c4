//! The formatter against glibc's `snprintf`: hand-picked cases, the cases a bug report
//! found printed wrong (`TIES`), and 20,000 generated ones (`test_models::printf_cases`, the table the device test runs).

use super::*;
use crate::test_models::printf_cases::{Case, CaseArg, TIES, cases, glibc};
use std::ffi::CString;
use std::string::{String, ToString};
use std::vec::Vec;

fn f(value: f64) -> u64 {
    value.to_bits()
}

fn printf(fmt: &str, args: &[u64]) -> String {
    let mut text = Vec::new();
    let n = format(fmt.as_bytes(), &mut args.iter(), &mut |b: &[u8]| text.extend_from_slice(b));
    assert_eq!(n, text.len());
    String::from_utf8(text).unwrap()
}

/// What the runtime's formatter prints for `case`.
fn ours(case: &Case) -> String {
    let string;
    let word = match &case.arg {
        CaseArg::Int(v) => *v as u64,
        CaseArg::Long(v) | CaseArg::LongLong(v) => *v as u64,
        CaseArg::Double(v) => v.to_bits(),
        CaseArg::Str(s) => {
            string = CString::new(s.as_str()).unwrap();
            string.as_ptr() as u64
        }
    };
    printf(&case.format, &[word])
}

#[test]
fn generated_cases_match_glibc() {
    let mut mismatches = Vec::new();
    let all = cases(25, 20_000, 30);
    for case in &all {
        let (want, got) = (glibc(case), ours(case));
        if want != got {
            mismatches.push(std::format!("{case:?}: glibc {want:?}, ours {got:?}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        all.len(),
        mismatches[..mismatches.len().min(30)].join("\n")
    );
}

#[test]
fn issue_25s_ties_and_digits_match_glibc() {
    for &(format, value) in TIES {
        let case = Case { format: format.to_string(), arg: CaseArg::Double(value) };
        assert_eq!(ours(&case), glibc(&case), "{format} of {value:e}");
    }
}

#[test]
fn every_precision_of_a_few_values_matches_glibc() {
    for value in [0.1, 2.0 / 3.0, 123456.789, 1e-7, 9.999_999_5, 5e-324, 1.7976931348623157e308] {
        for precision in 0..=40 {
            for conversion in ["f", "e", "g", "a"] {
                let case = Case { format: std::format!("%.{precision}{conversion}"), arg: CaseArg::Double(value) };
                assert_eq!(ours(&case), glibc(&case), "{}", case.format);
            }
        }
    }
}

#[test]
fn integers_as_c_prints_them() {
    let minus_one = -1i64 as u64;
    assert_eq!(printf("%d %i %u", &[42, minus_one, minus_one]), "42 -1 4294967295");
    assert_eq!(printf("%lld %llu", &[i64::MIN as u64, u64::MAX]), "-9223372036854775808 18446744073709551615");
    assert_eq!(printf("[%5d][%-5d][%05d][%+d][% d]", &[42, 42, minus_one, 7, 7]), "[   42][42   ][-0001][+7][ 7]");
    assert_eq!(printf("%x %X %#x %o %#o %#o", &[255, 255, 255, 8, 8, 0]), "ff FF 0xff 10 010 0");
    assert_eq!(printf("[%.3d][%.0d][%*d][%-*d][%08.3d]", &[5, 0, 4, 9, 3, 9, 7]), "[005][][   9][9  ][     007]");
    assert_eq!(printf("%hhd %hhu %hd %hu", &[300, minus_one, 70000, minus_one]), "44 255 4464 65535");
    assert_eq!(printf("%p %p", &[0x1000, 0]), "0x1000 (nil)");
}

#[test]
fn strings_characters_and_counts() {
    let text = c"hello";
    let p = text.as_ptr() as u64;
    assert_eq!(printf("%s|%.2s|%7s|%-7s|%c%%", &[p, p, p, p, b'!' as u64]), "hello|he|  hello|hello  |!%");
    assert_eq!(printf("%s|%.3s", &[0, 0]), "(null)|");
    assert_eq!(printf("100%", &[]), "100", "a lone % at the end prints nothing");
    assert_eq!(printf("%q", &[]), "%q");
    assert_eq!(printf("%ls", &[p]), "%ls", "no wide characters");
    let mut count = 0i32;
    assert_eq!(printf("abc%n!", &[&mut count as *mut i32 as u64]), "abc!");
    assert_eq!(count, 3);
}

#[test]
fn floats_in_every_style() {
    assert_eq!(
        printf("%f %F %f %+.1f", &[f(f64::NAN), f(f64::INFINITY), f(f64::NEG_INFINITY), f(0.75)]),
        "nan INF -inf +0.8"
    );
    assert_eq!(
        printf("%010.3f|%-8.1f|%#.0f|%#g", &[f(-3.5), f(2.0), f(3.0), f(1.0)]),
        "-00003.500|2.0     |3.|1.00000"
    );
    assert_eq!(printf("%.0e %g %g", &[f(1e300), f(1e-300), f(100000.0)]), "1e+300 1e-300 100000");
    assert_eq!(printf("%.1f %.2f %.0f", &[f(9.96), f(0.125), f(2.5)]), "10.0 0.12 2");
}

#[test]
fn snprintf_truncates_and_counts_the_whole_text() {
    let mut buffer = [0xffu8; 8];
    // SAFETY: 8 bytes; no pointer conversions.
    let n = unsafe { format_into(buffer.as_mut_ptr(), 5, b"%d-%s", &mut [12345u64, 0].iter()) };
    assert_eq!(n, "12345-(null)".len());
    assert_eq!(&buffer, b"1234\0\xff\xff\xff");
    // SAFETY: size 0 writes nothing, not even the NUL.
    let n = unsafe { format_into(core::ptr::null_mut(), 0, b"abc", &mut [].iter()) };
    assert_eq!(n, 3);
}

#[test]
fn packed_printf_formats_its_words() {
    let ring = super::super::stdout_ring();
    // SAFETY: the header is the ring's first field; this thread is its only user.
    let before = unsafe { ring.as_ptr().cast::<super::super::RingHeader>().read() }.write_count;
    let words = [6u64, 50, 0.25f64.to_bits()];
    // SAFETY: a NUL-terminated format and three words that match it.
    let n = unsafe { neuron_printf_packed(c"%d rows of %d: %.2f\n".as_ptr(), words.as_ptr(), 3) };
    assert_eq!(n as usize, "6 rows of 50: 0.25\n".len());
    // SAFETY: as above.
    let after = unsafe { ring.as_ptr().cast::<super::super::RingHeader>().read() }.write_count;
    assert_eq!((after - before) as usize, n as usize);
}

#[test]
fn puts_and_putchar_append_to_the_ring() {
    let ring = super::super::stdout_ring();
    // SAFETY: the header is the ring's first field; this thread is its only user.
    let before = unsafe { ring.as_ptr().cast::<super::super::RingHeader>().read() }.write_count;
    assert_eq!(putchar(i32::from(b'>')), i32::from(b'>'));
    // SAFETY: NUL-terminated.
    assert!(unsafe { puts(c"ok".as_ptr()) } >= 0);
    // SAFETY: as above.
    let after = unsafe { ring.as_ptr().cast::<super::super::RingHeader>().read() }.write_count;
    assert_eq!(after - before, 4);
}
