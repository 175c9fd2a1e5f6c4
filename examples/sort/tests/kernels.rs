//! sort's kernels on the simulated device against a host reference: every row sorted
//! in the examples' order (the NaN policy of `src/kernels.rs`), cut to K.

use neuroncustomop_host::array::{Array, Dtype};
use neuroncustomop_host::compare::{Tolerance, compare};
use neuroncustomop_host::generate::Rng;
use neuroncustomop_host::library::{Arg, Library, Options, Output, describe};
use neuroncustomop_host::testing::{Check, Kind, Shapes, calls};
use std::cmp::Ordering;
use std::sync::OnceLock;

fn sort() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| Library::load(env!("CARGO_MANIFEST_DIR")).unwrap_or_else(|e| panic!("{}", describe(&e))))
}

/// All 8 cores: the kernels split the rows by `get_cpu_count()`.
fn eight() -> Options {
    Options { cores: 8, ..Options::default() }
}

/// The examples' order: IEEE total order, and every NaN above `+inf` whatever its sign
/// bit, NaNs by payload and `+NaN` before `-NaN`.
fn sort_order(a: &f32, b: &f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => a.total_cmp(b),
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (true, true) => a.abs().total_cmp(&b.abs()).then(a.is_sign_negative().cmp(&b.is_sign_negative())),
    }
}

/// Each row of `row` elements sorted (`descending` or not), cut to its first `k`.
fn sort_rows(x: &[f32], row: usize, k: usize, descending: bool) -> Vec<f32> {
    x.chunks(row.max(1))
        .flat_map(|chunk| {
            let mut sorted = chunk.to_vec();
            sorted.sort_by(|a, b| if descending { sort_order(b, a) } else { sort_order(a, b) });
            sorted.truncate(k);
            sorted
        })
        .collect()
}

/// Floats for a sort: about half from the integers -8 ..= 8 and -0.0 (rows full of
/// duplicates), one in sixteen special (NaN of either sign and another payload, the
/// infinities), the rest spread over `[-1000, 1000)`.
fn sort_values(count: usize, seed: u64) -> Vec<f32> {
    const SPECIAL: [u32; 5] = [0x7FC0_0000, 0xFFC0_0000, 0x7F80_0001, 0x7F80_0000, 0xFF80_0000];
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|_| match rng.below(16) {
            0 => f32::from_bits(SPECIAL[rng.below(SPECIAL.len() as u64) as usize]),
            1..=8 => match rng.below(18) {
                17 => -0.0,
                small => small as f32 - 8.0,
            },
            _ => rng.uniform(-1000.0, 1000.0),
        })
        .collect()
}

/// Runs `kernel` on 8 cores over `x` (`rows` x `row`) with K = `k`, bit-exact.
fn check(kernel: &str, x: Vec<f32>, rows: usize, row: usize, k: usize) {
    let descending = matches!(kernel, "sort_descending" | "topk_largest");
    let want = Array::from_vec(vec![rows, k], sort_rows(&x, row, k, descending)).unwrap();
    let input = Array::from_vec(vec![rows, row], x).unwrap();
    let output = Output::Shape { dtype: Dtype::Float32, shape: vec![rows, k] };
    let call = sort().call_with(kernel, &[Arg::Tensor(input)], output, &eight()).unwrap();
    let call = call.check().unwrap_or_else(|failed| panic!("{failed}"));
    compare(&call.output, &want, Tolerance::Exact).unwrap_or_else(|m| panic!("{kernel} [{rows}, {row}] K {k}: {m}"));
}

#[test]
fn sorts_match_the_host_on_rows_with_duplicates_nans_and_zeros() {
    // Fewer rows than cores, more rows than cores, and one row longer than the TCM
    // scratch (3,072 elements), sorted on the heap.
    for (kernel, rows, row, seed) in
        [("sort_ascending", 3, 100, 6), ("sort_descending", 21, 37, 7), ("sort_ascending", 1, 4000, 8)]
    {
        let x = sort_values(rows * row, seed);
        let first_row = &x[..row];
        assert!(first_row.iter().any(|v| v.is_nan()), "the first row has a NaN");
        check(kernel, x, rows, row, row);
    }
}

#[test]
fn top_k_matches_the_host_for_every_kind_of_k() {
    // K: 1, a power of two, one past it, a third of the row, all of it, and none.
    for (kernel, rows, row, k, seed) in [
        ("topk_largest", 9, 300, 1, 9),
        ("topk_largest", 9, 300, 16, 10),
        ("topk_smallest", 9, 300, 17, 11),
        ("topk_smallest", 2, 5000, 1666, 12),
        ("topk_largest", 5, 33, 33, 13),
        ("topk_largest", 5, 33, 0, 14),
    ] {
        check(kernel, sort_values(rows * row, seed), rows, row, k);
    }
}

#[test]
fn the_nan_policy_puts_every_nan_last_whatever_its_sign() {
    let specials: Vec<f32> = [
        0xFFC0_0000u32,
        0x7F80_0000,
        0x7FC0_0000,
        0x8000_0000,
        0x0000_0000,
        0xFF80_0000,
        0x7F80_0001,
        0xBF80_0000,
        0x3F80_0000,
        0xFFC0_0000,
        0x7FC0_0000,
        0x0000_0000,
    ]
    .map(f32::from_bits)
    .to_vec();
    let bits: Vec<u32> = sort_rows(&specials, 12, 12, false).iter().map(|v| v.to_bits()).collect();
    assert_eq!(
        bits,
        [
            0xFF80_0000,
            0xBF80_0000,
            0x8000_0000,
            0x0000_0000,
            0x0000_0000,
            0x3F80_0000,
            0x7F80_0000,
            0x7F80_0001,
            0x7FC0_0000,
            0x7FC0_0000,
            0xFFC0_0000,
            0xFFC0_0000
        ],
        "the documented order"
    );
    check("sort_ascending", specials.clone(), 1, 12, 12);
    check("sort_descending", specials, 1, 12, 12);
}

#[test]
fn shapes_that_do_not_fit_fail_with_the_kernels_code() {
    let x = Array::from_vec(vec![2, 10], sort_values(20, 18)).unwrap();
    // A sort with K != n, a top-k with K > n, other leading dimensions.
    for (kernel, shape) in
        [("sort_ascending", vec![2, 9]), ("topk_largest", vec![2, 11]), ("topk_smallest", vec![3, 3])]
    {
        let output = Output::Shape { dtype: Dtype::Float32, shape };
        let call = sort().call_with(kernel, &[Arg::Tensor(x.clone())], output, &eight()).unwrap();
        assert!(call.statuses.iter().all(|s| s.kernel_code() == Some(1)), "{kernel}: {:?}", call.statuses);
    }
}

/// Property test: rows of generated lengths (1, primes, multiples of 8 and one either
/// side, ...) and counts, values of every class (±0, subnormals, ±inf, NaN of either
/// sign), each sorted bit-exactly in the examples' order; a failure shrinks to its
/// smallest call.
#[test]
fn sorts_match_the_host_on_generated_calls() {
    let sorted = |args: &[Arg]| {
        let Arg::Tensor(x) = &args[0] else { panic!("sort takes a tensor") };
        let (rows, row) = (x.shape()[0], x.shape()[1]);
        Array::from_vec(vec![rows, row], sort_rows(&x.to_vec::<f32>().unwrap(), row, row, false)).unwrap()
    };
    let bounds = Shapes { max_elements: 1 << 12, ..Shapes::default() }.rank(2);
    let mut check = Check::new(sort(), "sort_ascending");
    check.tolerance = Tolerance::Exact;
    check
        .run(calls(&[Kind::Tensor], &[Dtype::Float32], bounds), 10, sorted)
        .unwrap_or_else(|failed| panic!("{failed}"));
}
