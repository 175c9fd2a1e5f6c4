//! Host arrays of any ABI dtype: the data a kernel takes and returns.
//!
//! An [`Array`] is a dtype, a shape (outermost dimension first) and its elements as
//! little-endian bytes, row-major: exactly what the device reads and writes, so no
//! conversion happens on the way in or out. Typed views go through [`Element`], which
//! every ABI dtype's Rust type implements (`f32`, [`half::bf16`], [`half::f16`], `i32`,
//! `i8`, `i64`, `i16`, `u8`).
//!
//! ```
//! use neuroncustomop_array::Array;
//! use neuroncustomop::wrapper_api::Dtype;
//!
//! let x = Array::from_vec(vec![2, 3], vec![1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0]).unwrap();
//! assert_eq!((x.dtype(), x.shape(), x.numel()), (Dtype::Float32, &[2, 3][..], 6));
//! assert_eq!(x.to_vec::<f32>().unwrap()[1], -2.0);
//! assert!(x.to_vec::<i32>().is_err(), "a typed view must name the array's dtype");
//! ```

pub use neuroncustomop::wrapper_api::Dtype;
use std::fmt;

pub mod npy;

/// A Rust type that is one element of an ABI dtype.
pub trait Element: Copy + fmt::Debug + 'static {
    /// The dtype it is an element of.
    const DTYPE: Dtype;
    /// Appends its little-endian bytes.
    fn put(self, bytes: &mut Vec<u8>);
    /// Reads it from `Self::DTYPE.size()` little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! elements {
    ($($ty:ty => $dtype:ident),* $(,)?) => {$(
        impl Element for $ty {
            const DTYPE: Dtype = Dtype::$dtype;
            fn put(self, bytes: &mut Vec<u8>) {
                bytes.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                <$ty>::from_le_bytes(bytes.try_into().expect("one element's bytes"))
            }
        }
    )*};
}

elements! {
    f32 => Float32, half::bf16 => Bfloat16, half::f16 => Float16, i32 => Int32,
    i8 => Int8, i64 => Int64, i16 => Int16, u8 => Uint8,
}

/// The short names the CLI and the reports use: NumPy's (`float32`, `int8`, …) and
/// `bfloat16`, which NumPy lacks.
pub fn dtype_name(dtype: Dtype) -> &'static str {
    dtype.name()
}

/// The dtype named `name`: [`dtype_name`]'s names, or NumPy's short codes (`f4`, `bf16`,
/// `f2`, `i4`, `i1`, `i8`, `i2`, `u1`) and the usual abbreviations (`f32`, `f16`, `i32`, …).
pub fn parse_dtype(name: &str) -> Option<Dtype> {
    Some(match name {
        "float32" | "f32" | "f4" | "float" => Dtype::Float32,
        "bfloat16" | "bf16" => Dtype::Bfloat16,
        "float16" | "f16" | "f2" | "half" => Dtype::Float16,
        "int32" | "i32" | "i4" | "int" => Dtype::Int32,
        "int8" | "i8" | "i1" => Dtype::Int8,
        "int64" | "i64" => Dtype::Int64,
        "int16" | "i16" | "i2" => Dtype::Int16,
        "uint8" | "u8" | "u1" => Dtype::Uint8,
        _ => return None,
    })
}

/// One element, widened without loss: what comparisons and reports work on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A floating-point element (every f32, bf16 and f16 value is exact in f64).
    Float(f64),
    /// An integer element.
    Int(i64),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Float(v) => write!(f, "{v:?}"),
            Value::Int(v) => write!(f, "{v}"),
        }
    }
}

/// Why an array could not be made or viewed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArrayError {
    /// The elements do not fill the shape.
    #[error("shape {shape:?} holds {expected} elements, but {got} were given")]
    ElementCount {
        /// The shape.
        shape: Vec<usize>,
        /// Its element count.
        expected: usize,
        /// What was given.
        got: usize,
    },
    /// The bytes are not a whole number of elements of the shape.
    #[error("shape {shape:?} of {dtype} takes {expected} bytes, but {got} were given")]
    ByteCount {
        /// The shape.
        shape: Vec<usize>,
        /// The dtype's name.
        dtype: &'static str,
        /// Bytes the shape takes.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// A typed view of another dtype.
    #[error("the array holds {held}, not {asked}")]
    Dtype {
        /// The array's dtype.
        held: &'static str,
        /// The view's.
        asked: &'static str,
    },
}

/// A dtype, a shape and the elements' little-endian bytes, row-major.
#[derive(Clone, PartialEq, Eq)]
pub struct Array {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Array({} {:?}", dtype_name(self.dtype), self.shape)?;
        let shown = self.numel().min(8);
        let values: Vec<String> = (0..shown).map(|i| self.value(i).to_string()).collect();
        write!(f, " [{}{}])", values.join(", "), if shown < self.numel() { ", …" } else { "" })
    }
}

/// Elements a shape holds (1 for the empty shape, as NumPy's 0-d arrays).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

impl Array {
    /// An array of `shape` holding `values`, row-major.
    ///
    /// # Errors
    /// [`ArrayError::ElementCount`] when `values` does not fill `shape`.
    pub fn from_vec<T: Element>(shape: Vec<usize>, values: Vec<T>) -> Result<Self, ArrayError> {
        Self::from_slice(shape, &values)
    }

    /// As [`Array::from_vec`], copying from a slice.
    ///
    /// # Errors
    /// [`ArrayError::ElementCount`] when `values` does not fill `shape`.
    pub fn from_slice<T: Element>(shape: Vec<usize>, values: &[T]) -> Result<Self, ArrayError> {
        let expected = numel(&shape);
        if values.len() != expected {
            return Err(ArrayError::ElementCount { shape, expected, got: values.len() });
        }
        let mut bytes = Vec::with_capacity(expected * T::DTYPE.size());
        values.iter().for_each(|v| v.put(&mut bytes));
        Ok(Self { dtype: T::DTYPE, shape, bytes })
    }

    /// An array from its raw little-endian bytes.
    ///
    /// # Errors
    /// [`ArrayError::ByteCount`] when `bytes` is not `shape`'s elements of `dtype`.
    pub fn from_bytes(dtype: Dtype, shape: Vec<usize>, bytes: Vec<u8>) -> Result<Self, ArrayError> {
        let expected = numel(&shape) * dtype.size();
        if bytes.len() != expected {
            return Err(ArrayError::ByteCount { shape, dtype: dtype_name(dtype), expected, got: bytes.len() });
        }
        Ok(Self { dtype, shape, bytes })
    }

    /// `shape` of `dtype` with every element's bytes `element` (a canary, or zeros).
    pub fn filled(dtype: Dtype, shape: Vec<usize>, element: &[u8]) -> Self {
        assert_eq!(element.len(), dtype.size(), "one element of {}", dtype_name(dtype));
        let bytes = element.repeat(numel(&shape));
        Self { dtype, shape, bytes }
    }

    /// The dtype.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The shape, outermost dimension first.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// The elements' bytes, little-endian, row-major.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The elements' bytes, taken out of the array (no copy).
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Element `index`'s bytes (row-major index).
    pub fn element_bytes(&self, index: usize) -> &[u8] {
        let size = self.dtype.size();
        &self.bytes[index * size..(index + 1) * size]
    }

    /// The elements as `T`.
    ///
    /// # Errors
    /// [`ArrayError::Dtype`] when `T` is not of the array's dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, ArrayError> {
        if T::DTYPE != self.dtype {
            return Err(ArrayError::Dtype { held: dtype_name(self.dtype), asked: dtype_name(T::DTYPE) });
        }
        Ok(self.bytes.chunks_exact(self.dtype.size()).map(T::get).collect())
    }

    /// Element `index` (row-major), widened.
    pub fn value(&self, index: usize) -> Value {
        let b = self.element_bytes(index);
        match self.dtype {
            Dtype::Float32 => Value::Float(f64::from(f32::get(b))),
            Dtype::Bfloat16 => Value::Float(half::bf16::get(b).to_f64()),
            Dtype::Float16 => Value::Float(half::f16::get(b).to_f64()),
            Dtype::Int32 => Value::Int(i64::from(i32::get(b))),
            Dtype::Int8 => Value::Int(i64::from(i8::get(b))),
            Dtype::Int64 => Value::Int(i64::get(b)),
            Dtype::Int16 => Value::Int(i64::from(i16::get(b))),
            Dtype::Uint8 => Value::Int(i64::from(u8::get(b))),
        }
    }

    /// The multi-dimensional index of row-major element `index`.
    pub fn unravel(&self, mut index: usize) -> Vec<usize> {
        let mut position = vec![0; self.shape.len()];
        for (axis, &dim) in self.shape.iter().enumerate().rev() {
            if dim > 0 {
                position[axis] = index % dim;
                index /= dim;
            }
        }
        position
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips_through_bytes() {
        fn round_trip<T: Element + PartialEq>(values: Vec<T>) {
            let array = Array::from_vec(vec![values.len()], values.clone()).unwrap();
            assert_eq!(array.bytes().len(), values.len() * T::DTYPE.size());
            assert_eq!(array.to_vec::<T>().unwrap(), values);
            let again = Array::from_bytes(T::DTYPE, vec![values.len()], array.bytes().to_vec()).unwrap();
            assert_eq!(again, array);
        }
        round_trip(vec![1.5f32, -0.0, f32::INFINITY]);
        round_trip(vec![half::bf16::from_f32(1.5), half::bf16::from_f32(-3.0)]);
        round_trip(vec![half::f16::from_f32(0.25), half::f16::MAX]);
        round_trip(vec![i32::MIN, 7]);
        round_trip(vec![i8::MIN, -1]);
        round_trip(vec![i64::MAX, -5]);
        round_trip(vec![i16::MIN, 300]);
        round_trip(vec![u8::MAX, 0]);
    }

    #[test]
    fn values_are_widened_exactly() {
        let x = Array::from_vec(vec![2], vec![half::bf16::from_f32(-2.5), half::bf16::from_f32(1e30)]).unwrap();
        assert_eq!(x.value(0), Value::Float(-2.5));
        assert_eq!(x.value(1), Value::Float(half::bf16::from_f32(1e30).to_f64()));
        let y = Array::from_vec(vec![1], vec![-3i8]).unwrap();
        assert_eq!(y.value(0), Value::Int(-3));
        assert_eq!(y.value(0).to_string(), "-3");
    }

    #[test]
    fn wrong_counts_and_views_are_named() {
        assert_eq!(
            Array::from_vec(vec![2, 2], vec![1i32; 3]),
            Err(ArrayError::ElementCount { shape: vec![2, 2], expected: 4, got: 3 })
        );
        let err = Array::from_bytes(Dtype::Int64, vec![2], vec![0; 15]).unwrap_err();
        assert_eq!(err.to_string(), "shape [2] of int64 takes 16 bytes, but 15 were given");
        let x = Array::from_vec(vec![1], vec![1u8]).unwrap();
        assert_eq!(x.to_vec::<i8>().unwrap_err().to_string(), "the array holds uint8, not int8");
    }

    #[test]
    fn indices_unravel_row_major() {
        let x = Array::filled(Dtype::Uint8, vec![2, 3, 4], &[0]);
        assert_eq!(x.unravel(0), [0, 0, 0]);
        assert_eq!(x.unravel(23), [1, 2, 3]);
        assert_eq!(x.unravel(13), [1, 0, 1]);
    }

    #[test]
    fn dtype_names_parse_back() {
        for dtype in Dtype::ALL {
            assert_eq!(parse_dtype(dtype_name(dtype)), Some(dtype));
        }
        assert_eq!(parse_dtype("bf16"), Some(Dtype::Bfloat16));
        assert_eq!(parse_dtype("complex64"), None);
    }
}
