//! Comparing a kernel's output with the expected array: bit for bit, or with NumPy's
//! `allclose` rule, and a report that names the first bad elements.
//!
//! The device's output starts filled with [`canary`] bytes, so an element the kernel
//! never wrote still holds them: the report names such elements as unwritten rather
//! than as wrong values.
//!
//! ```
//! use neuroncustomop_host::array::Array;
//! use neuroncustomop_host::compare::{Mismatch, Tolerance, compare};
//!
//! let want = Array::from_vec(vec![3], vec![1.0f32, 2.0, 3.0]).unwrap();
//! let got = Array::from_vec(vec![3], vec![1.0f32, 2.000001, 3.5]).unwrap();
//! assert!(compare(&got, &want, Tolerance::Exact).is_err());
//! let Err(Mismatch::Values(report)) = compare(&got, &want, Tolerance::NUMPY) else { panic!() };
//! assert_eq!((report.bad, report.first[0].position.clone()), (1, vec![2]));
//! ```

use crate::array::{Array, Value, dtype_name};
use neuroncustomop::wrapper_api::Dtype;
use std::fmt;

/// How elements are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// The same bytes: the only comparison for integers, and the right one for
    /// kernels that only move values (sort, gather).
    Exact,
    /// NumPy's `allclose`: `|got - want| <= atol + rtol * |want|`, infinities equal
    /// only to themselves, NaN equal to NaN only with `equal_nan`. Integers compare
    /// by the same rule on their values.
    Close {
        /// Relative tolerance (NumPy's default 1e-5).
        rtol: f64,
        /// Absolute tolerance (NumPy's default 1e-8).
        atol: f64,
        /// Whether NaN equals NaN (NumPy's default: no).
        equal_nan: bool,
    },
}

impl Tolerance {
    /// NumPy's `allclose` defaults.
    pub const NUMPY: Tolerance = Tolerance::Close { rtol: 1e-5, atol: 1e-8, equal_nan: false };
    /// Equal as numbers (`-0.0 == 0.0`), NaN equal to NaN: a computation that must be
    /// exact but may differ from the reference in a zero's sign or a NaN's payload.
    pub const VALUE: Tolerance = Tolerance::Close { rtol: 0.0, atol: 0.0, equal_nan: true };

    fn same(self, got: Value, want: Value, got_bytes: &[u8], want_bytes: &[u8]) -> bool {
        match self {
            Tolerance::Exact => got_bytes == want_bytes,
            Tolerance::Close { rtol, atol, equal_nan } => {
                let widen = |v: Value| match v {
                    Value::Float(f) => f,
                    Value::Int(i) => i as f64,
                };
                let (g, w) = (widen(got), widen(want));
                if g.is_nan() || w.is_nan() {
                    return equal_nan && g.is_nan() && w.is_nan();
                }
                if g.is_infinite() || w.is_infinite() {
                    return g == w;
                }
                (g - w).abs() <= atol + rtol * w.abs()
            }
        }
    }
}

/// The bytes one output element starts as: a NaN with a payload no arithmetic makes
/// for the float dtypes, `0xA5` in every byte for the integers. An element still
/// holding them after the op was (almost certainly) never written.
pub fn canary(dtype: Dtype) -> Vec<u8> {
    match dtype {
        Dtype::Float32 => 0xFFA5_A5A5u32.to_le_bytes().to_vec(),
        Dtype::Float16 | Dtype::Bfloat16 => 0xFFA5u16.to_le_bytes().to_vec(),
        other => vec![0xA5; other.size()],
    }
}

/// A second canary, for the dtypes whose [`canary`] a kernel can write as a real
/// value (the integers: `0xA5` bytes are -91 as `int8`, 165 as `uint8`): an element
/// that holds the first canary after one run and this one after a second run with it
/// was never written. `None` for the floats, whose canary NaN no arithmetic makes.
pub fn second_canary(dtype: Dtype) -> Option<Vec<u8>> {
    match dtype {
        Dtype::Float32 | Dtype::Float16 | Dtype::Bfloat16 => None,
        other => Some(vec![0x5A; other.size()]),
    }
}

/// Which elements of `bytes` (elements of `pattern.len()` bytes) hold `pattern`.
pub fn holding(bytes: &[u8], pattern: &[u8]) -> Vec<bool> {
    bytes.chunks_exact(pattern.len()).map(|element| element == pattern).collect()
}

/// One bad element.
#[derive(Debug, Clone, PartialEq)]
pub struct BadElement {
    /// Its index, one per dimension.
    pub position: Vec<usize>,
    /// What the kernel wrote; `None` when the element still holds the canary.
    pub got: Option<Value>,
    /// What was expected.
    pub want: Value,
}

/// Why an output does not match.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Mismatch {
    /// The output has another shape or dtype than expected.
    #[error("the output is {got_dtype} {got_shape:?}, the expected array {want_dtype} {want_shape:?}")]
    Form {
        /// Output dtype name.
        got_dtype: &'static str,
        /// Output shape.
        got_shape: Vec<usize>,
        /// Expected dtype name.
        want_dtype: &'static str,
        /// Expected shape.
        want_shape: Vec<usize>,
    },
    /// Some elements differ.
    #[error("{0}")]
    Values(Report),
}

/// Which elements differ, and the first of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// How many elements differ.
    pub bad: usize,
    /// How many of those still hold the canary (never written).
    pub unwritten: usize,
    /// Of all elements.
    pub total: usize,
    /// The first few bad elements, in row-major order.
    pub first: Vec<BadElement>,
}

/// Bad elements a report lists.
pub const LISTED: usize = 10;

/// As `ncop run`'s flags spell it: `bit for bit`, or `--rtol 1e-06 --atol 1e-08`
/// (and `--equal-nan`).
///
/// ```
/// use neuroncustomop_host::compare::Tolerance;
///
/// assert_eq!(Tolerance::Exact.to_string(), "bit for bit");
/// assert_eq!(Tolerance::NUMPY.to_string(), "--rtol 1e-5 --atol 1e-8");
/// assert_eq!(Tolerance::VALUE.to_string(), "--rtol 0 --atol 0 --equal-nan");
/// ```
impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Exact => f.write_str("bit for bit"),
            Tolerance::Close { rtol, atol, equal_nan } => {
                // 1e-5 rather than 0.00001, as an author types it; 0 rather than 0e0.
                let number = |value: f64| if value == 0.0 { "0".to_owned() } else { format!("{value:e}") };
                write!(f, "--rtol {} --atol {}", number(*rtol), number(*atol))?;
                if *equal_nan { f.write_str(" --equal-nan") } else { Ok(()) }
            }
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} of {} elements differ", self.bad, self.total)?;
        if self.unwritten > 0 {
            write!(f, " ({} never written by the kernel)", self.unwritten)?;
        }
        for element in &self.first {
            let got = element.got.map_or_else(|| "never written".to_string(), |v| format!("got {v}"));
            write!(f, "\n  at {:?}: {got}, want {}", element.position, element.want)?;
        }
        if self.bad > self.first.len() {
            write!(f, "\n  …")?;
        }
        Ok(())
    }
}

impl std::error::Error for Report {}

/// Compares the kernel's output `got` with `want`.
///
/// # Errors
/// [`Mismatch::Form`] when shapes or dtypes differ, [`Mismatch::Values`] naming the
/// first [`LISTED`] bad elements.
pub fn compare(got: &Array, want: &Array, tolerance: Tolerance) -> Result<(), Mismatch> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(Mismatch::Form {
            got_dtype: dtype_name(got.dtype()),
            got_shape: got.shape().to_vec(),
            want_dtype: dtype_name(want.dtype()),
            want_shape: want.shape().to_vec(),
        });
    }
    let canary = canary(got.dtype());
    let mut report = Report { bad: 0, unwritten: 0, total: got.numel(), first: Vec::new() };
    for index in 0..got.numel() {
        let (got_bytes, want_bytes) = (got.element_bytes(index), want.element_bytes(index));
        if tolerance.same(got.value(index), want.value(index), got_bytes, want_bytes) {
            continue;
        }
        let unwritten = got_bytes == canary;
        report.bad += 1;
        report.unwritten += usize::from(unwritten);
        if report.first.len() < LISTED {
            let got = (!unwritten).then(|| got.value(index));
            report.first.push(BadElement { position: want.unravel(index), got, want: want.value(index) });
        }
    }
    if report.bad == 0 { Ok(()) } else { Err(Mismatch::Values(report)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(values: &[f32]) -> Array {
        Array::from_slice(vec![values.len()], values).unwrap()
    }

    #[test]
    fn allclose_follows_numpy() {
        let close = |got: f32, want: f32, equal_nan| {
            let tolerance = Tolerance::Close { rtol: 1e-5, atol: 1e-8, equal_nan };
            compare(&f32s(&[got]), &f32s(&[want]), tolerance).is_ok()
        };
        assert!(close(1.0, 1.0 + 1e-6, false));
        assert!(!close(1.0, 1.0 + 1e-4, false));
        assert!(close(f32::INFINITY, f32::INFINITY, false));
        assert!(!close(f32::INFINITY, f32::NEG_INFINITY, false));
        assert!(!close(f32::INFINITY, f32::MAX, false));
        assert!(!close(f32::NAN, f32::NAN, false));
        assert!(close(f32::NAN, f32::NAN, true));
        assert!(!close(f32::NAN, 1.0, true));
        assert!(close(-0.0, 0.0, false));
        let value = |got: f32, want: f32| compare(&f32s(&[got]), &f32s(&[want]), Tolerance::VALUE).is_ok();
        assert!(value(-0.0, 0.0) && value(f32::NAN, -f32::NAN) && !value(1.0, 1.0 + f32::EPSILON));
    }

    #[test]
    fn exact_compares_bits() {
        assert!(compare(&f32s(&[-0.0]), &f32s(&[0.0]), Tolerance::Exact).is_err());
        assert!(compare(&f32s(&[f32::NAN]), &f32s(&[f32::NAN]), Tolerance::Exact).is_ok());
        let ints = |v: &[i64]| Array::from_slice(vec![v.len()], v).unwrap();
        assert!(compare(&ints(&[i64::MAX]), &ints(&[i64::MAX - 1]), Tolerance::Exact).is_err());
    }

    #[test]
    fn reports_name_positions_and_unwritten_elements() {
        let canary = f32::from_le_bytes(canary(Dtype::Float32).try_into().unwrap());
        let got = Array::from_vec(vec![2, 3], vec![0.0f32, 1.0, 9.0, canary, 4.0, canary]).unwrap();
        let want = Array::from_vec(vec![2, 3], vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let Err(Mismatch::Values(report)) = compare(&got, &want, Tolerance::NUMPY) else { panic!() };
        assert_eq!((report.bad, report.unwritten, report.total), (3, 2, 6));
        assert_eq!(
            report.first[0],
            BadElement { position: vec![0, 2], got: Some(Value::Float(9.0)), want: Value::Float(2.0) }
        );
        assert_eq!(report.first[1].got, None);
        assert_eq!(
            report.to_string(),
            "3 of 6 elements differ (2 never written by the kernel)\n  at [0, 2]: got 9.0, want 2.0\n  \
             at [1, 0]: never written, want 3.0\n  at [1, 2]: never written, want 5.0"
        );
    }

    #[test]
    fn forms_must_agree() {
        let err = compare(&f32s(&[1.0]), &Array::from_vec(vec![1], vec![1i32]).unwrap(), Tolerance::Exact).unwrap_err();
        assert_eq!(err.to_string(), "the output is float32 [1], the expected array int32 [1]");
    }

    #[test]
    fn every_canary_is_one_element_and_a_nan_for_floats() {
        for dtype in Dtype::ALL {
            let bytes = canary(dtype);
            assert_eq!(bytes.len(), dtype.size());
            let array = Array::from_bytes(dtype, vec![1], bytes).unwrap();
            if let Value::Float(v) = array.value(0) {
                assert!(v.is_nan(), "{dtype:?}");
            }
        }
    }
}
