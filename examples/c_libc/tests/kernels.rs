//! c_libc's C kernels on the simulated device: the C library called from C, against
//! glibc on the host (the same `snprintf`, with the same arguments).

use neuroncustomop::test_models::printf_cases::{Case, CaseArg, TIES, cases, glibc};
use neuroncustomop_host::array::{Array, Dtype};
use neuroncustomop_host::compare::Tolerance;
use neuroncustomop_host::library::{Arg, Library, Options, Output, describe};
use neuroncustomop_host::testing::proptest::prelude::*;
use neuroncustomop_host::testing::{Check, proptest};
use std::ffi::{CString, c_char, c_int};
use std::sync::OnceLock;

unsafe extern "C" {
    fn snprintf(buffer: *mut c_char, size: usize, format: *const c_char, ...) -> c_int;
}

fn c_libc() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| Library::load(env!("CARGO_MANIFEST_DIR")).unwrap_or_else(|e| panic!("{}", describe(&e))))
}

/// glibc's `snprintf` into `size` bytes: (its return value, the text stored).
macro_rules! glibc_sized {
    ($size:expr, $format:literal $(, $arg:expr)*) => {{
        let mut buffer = vec![0u8; $size];
        let format = CString::new($format).unwrap();
        // SAFETY: arguments of the types the format reads; `size` bytes of buffer.
        let n = unsafe { snprintf(buffer.as_mut_ptr().cast(), $size, format.as_ptr() $(, $arg)*) };
        let len = buffer.iter().position(|&b| b == 0).unwrap();
        (n, String::from_utf8(buffer[..len].to_vec()).unwrap())
    }};
}

/// glibc's `snprintf` text, whole.
macro_rules! glibc {
    ($format:literal $(, $arg:expr)*) => { glibc_sized!(4096, $format $(, $arg)*).1 };
}

/// The one-byte input and output of the kernels that only print (a call has at least
/// one input).
fn unused() -> (Vec<Arg>, Output) {
    (vec![Arg::Tensor(Array::from_bytes(Dtype::Uint8, vec![1], vec![0]).unwrap())], Output::Like(0))
}

/// What `printf_lines` prints on `core`, by glibc.
fn printf_lines_by_glibc(core: c_int) -> String {
    let (three, text, x, ab, truncated) = (c"three", c"str", c"x", c"ab", c"truncated");
    let mut want = String::new();
    want += &glibc!("A %d %d %d %d %d\n", 11, 22, 33, 44, 55);
    want += &glibc!("C %d\n", 7);
    want += &glibc!("%d %s %.3f\n", core, three.as_ptr(), 1.23456);
    want += &glibc!(
        "core %d: %d %.3f %lld %s %d %.17g %lld %u %c %x %e\n",
        core,
        11,
        2.5,
        3i64,
        text.as_ptr(),
        4,
        5.0 / 3.0,
        -7i64,
        8u32,
        c_int::from(b'z'),
        0xbeef,
        -1e-300
    );
    want += &glibc!(
        "%d %d %d %d %.1f %d %lld %hhd %hd %zu %g\n",
        1,
        2,
        3,
        4,
        5.5,
        6,
        7i64 << 40,
        300,
        70000,
        9usize,
        0.0001
    );
    want += &glibc!("log %d %s %.2f %lld %d %d %d %d\n", core, x.as_ptr(), 0.125, -1i64, 5, 6, 7, 8);
    let (n, buffer) = glibc_sized!(64, "%05d|%-4s|%+.2e", core * 100, ab.as_ptr(), 12345.678);
    want += &format!("sprintf {n} [{buffer}]\n");
    let (n, buffer) = glibc_sized!(8, "%s-%d-%f", truncated.as_ptr(), core, 1.5);
    want += &format!("snprintf {n} [{buffer}]\n");
    let (n, buffer) =
        glibc_sized!(64, "%c%c %.0f %.0f %#o %#x", c_int::from(b'o'), c_int::from(b'k'), 0.5, 2.5, 8, 255);
    want += &format!("vsnprintf {n} [{buffer}]\n");
    want
}

#[test]
fn printf_from_c_on_eight_cores_prints_what_glibc_prints() {
    let options = Options { cores: 8, ..Options::default() };
    let (args, output) = unused();
    let call = c_libc().call_with("printf_lines", &args, output, &options);
    let call = call.unwrap().check().unwrap_or_else(|failed| panic!("{failed}"));
    assert_eq!(call.stdout.len(), 8);
    for (core, stdout) in call.stdout.iter().enumerate() {
        assert_eq!(stdout.lost, 0);
        assert_eq!(stdout.text, printf_lines_by_glibc(core as c_int), "core {core}");
    }
}

/// A record of `format_table`'s input (its layout: `examples/c_libc/src/libc.c`).
fn record(case: &Case) -> [u8; 64] {
    let mut record = [0u8; 64];
    let (kind, value) = match &case.arg {
        CaseArg::Int(v) => (0, *v as u64),
        CaseArg::Long(v) => (1, *v as u64),
        CaseArg::LongLong(v) => (2, *v as u64),
        CaseArg::Double(v) => (3, v.to_bits()),
        CaseArg::Str(s) => {
            record[40..40 + s.len()].copy_from_slice(s.as_bytes());
            (4, 0)
        }
    };
    record[0] = kind;
    record[8..16].copy_from_slice(&value.to_le_bytes());
    record[16..16 + case.format.len()].copy_from_slice(case.format.as_bytes());
    record
}

/// `format_table`'s input for `table`: a record a case.
fn records(table: &[Case]) -> Array {
    let bytes: Vec<u8> = table.iter().flat_map(record).collect();
    Array::from_bytes(Dtype::Uint8, vec![table.len(), 64], bytes).unwrap()
}

/// The case a record holds (`record`'s inverse).
fn case_of(record: &[u8]) -> Case {
    let text = |bytes: &[u8]| {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8(bytes[..end].to_vec()).unwrap()
    };
    let value = u64::from_le_bytes(record[8..16].try_into().unwrap());
    let arg = match record[0] {
        0 => CaseArg::Int(value as i32),
        1 => CaseArg::Long(value as i64),
        2 => CaseArg::LongLong(value as i64),
        3 => CaseArg::Double(f64::from_bits(value)),
        _ => CaseArg::Str(text(&record[40..])),
    };
    Case { format: text(&record[16..40]), arg }
}

/// What `format_table` writes for `case`, as glibc formats it: the whole text's length,
/// then its first 123 bytes, zeros to 124 (`snprintf` into 124 bytes).
fn result_by_glibc(case: &Case) -> Vec<u8> {
    let text = glibc(case);
    let mut result = (text.len() as i32).to_le_bytes().to_vec();
    result.extend(&text.as_bytes()[..text.len().min(123)]);
    result.resize(128, 0);
    result
}

/// Property test: tables of up to 12 generated cases (every conversion, flag, width,
/// precision and length modifier; integers at their edges; doubles of every class),
/// formatted on the device byte for byte as glibc formats them; a failure shrinks to
/// the fewest cases. Few tables, from a fixed seed: they run in CI.
#[test]
fn snprintf_matches_glibc_on_generated_tables() {
    let tables = proptest::collection::vec(any::<u64>(), 1..=12).prop_map(|seeds| {
        let table: Vec<Case> = seeds.iter().flat_map(|&seed| cases(seed, 1, 30)).collect();
        vec![Arg::Tensor(records(&table))]
    });
    let formatted = |args: &[Arg]| {
        let Arg::Tensor(input) = &args[0] else { panic!("format_table takes a tensor") };
        let bytes: Vec<u8> = input.bytes().chunks(64).flat_map(|record| result_by_glibc(&case_of(record))).collect();
        Array::from_bytes(Dtype::Uint8, vec![input.shape()[0], 128], bytes).unwrap()
    };
    let mut check = Check::new(c_libc(), "format_table");
    check.tolerance = Tolerance::Exact;
    check.output = Some(|args| match &args[0] {
        Arg::Tensor(input) => (Dtype::Uint8, vec![input.shape()[0], 128]),
        _ => panic!("format_table takes a tensor"),
    });
    check.run(tables, 6, formatted).unwrap_or_else(|failed| panic!("{failed}"));
}

#[test]
fn snprintf_on_the_device_matches_glibc_on_the_generated_table() {
    let mut table = cases(25, 1500, 30);
    table.extend(TIES.iter().map(|&(format, value)| Case { format: format.into(), arg: CaseArg::Double(value) }));
    let input = records(&table);
    let output = Output::Shape { dtype: Dtype::Uint8, shape: vec![table.len(), 128] };
    let call = c_libc().call("format_table", &[Arg::Tensor(input)], output).unwrap();
    let call = call.check().unwrap_or_else(|failed| panic!("{failed}"));
    let mut mismatches = Vec::new();
    for (case, result) in table.iter().zip(call.output.bytes().chunks(128)) {
        let want = glibc(case);
        let n = i32::from_le_bytes(result[..4].try_into().unwrap());
        let text = &result[4..];
        let stored = String::from_utf8_lossy(&text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())]);
        // snprintf into 124 bytes: the first 123 of glibc's text, and its whole length.
        let want_stored = &want[..want.len().min(123)];
        if n as usize != want.len() || stored != want_stored {
            mismatches.push(format!("{case:?}: glibc {want:?}, device {n} {stored:?}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        table.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
}

#[test]
fn string_and_stdlib_functions_from_c() {
    let (args, output) = unused();
    let call = c_libc().call("string_checks", &args, output).unwrap();
    let call = call.check().unwrap_or_else(|failed| panic!("{failed}"));
    // Floats through glibc: strtof's and strtod's results are the correctly rounded
    // values, which Rust's parse gives too.
    let floats = glibc!(
        "%.9g %.17g %.17g %g\n",
        f64::from("3.14159265358979".parse::<f32>().unwrap()),
        0.1,
        -2.5e-3,
        f64::INFINITY
    );
    let want = format!(
        "kernel-lib 10 4\n1 1 0 1\nnel-lib|el-lib|-lib|1\n0 0 1 x\n-31 511 [ rest] 42 2147483647 5\n{floats}\
         -8 -3 0 1 5 7 9 12 | 7 70000\n"
    );
    assert_eq!(call.stdout[0].text, want);
}
