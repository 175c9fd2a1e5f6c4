//! NumPy's `.npy` files in and out of [`Array`]s, through the `npyz` crate.
//!
//! Every ABI dtype has its NumPy form: `<f4`, `<f2`, `<i4`, `|i1`, `<i8`, `<i2`, `|u1`
//! (big-endian files are read too), and bfloat16, which NumPy lacks, as the 2-byte
//! void `|V2` that the `ml_dtypes` package's `bfloat16` saves as (read it back with
//! `np.load(path).view(ml_dtypes.bfloat16)`). Only C-order (row-major) arrays are
//! read; a file whose data is shorter or longer than its header says is refused, so
//! nothing is silently dropped or invented.
//!
//! ```
//! use neuroncustomop_array::{Array, npy};
//!
//! let x = Array::from_vec(vec![2, 2], vec![1i16, -2, 3, -4]).unwrap();
//! let bytes = npy::to_bytes(&x).unwrap();
//! assert_eq!(&bytes[..6], b"\x93NUMPY");
//! assert_eq!(npy::from_bytes(&bytes).unwrap(), x);
//! assert!(npy::from_bytes(&bytes[..bytes.len() - 1]).is_err(), "truncated");
//! ```

use crate::{Array, ArrayError, Element, dtype_name};
use neuroncustomop::wrapper_api::Dtype;
use npyz::{DType, FixedSizeBytes, Order, TypeChar, WriterBuilder};
use std::io;
use std::path::{Path, PathBuf};

/// Why a `.npy` file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// The file could not be opened, read or written.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The header is not NumPy's (bad magic, version, or dictionary).
    #[error("not a .npy file: {0}")]
    Header(io::Error),
    /// The dtype is not one of the ABI's.
    #[error(
        "dtype {0} is not one of the device's (float32, bfloat16 as |V2, float16, int32, int8, int64, int16, uint8)"
    )]
    Dtype(String),
    /// A Fortran-order (column-major) array.
    #[error("the array is in Fortran order: save it with np.ascontiguousarray(x) first")]
    FortranOrder,
    /// The data is shorter or longer than the header's shape and dtype say.
    #[error("the header promises {expected} data bytes ({shape:?} of {dtype}), but the file holds {got}")]
    DataLength {
        /// The header's shape.
        shape: Vec<u64>,
        /// The dtype's name.
        dtype: &'static str,
        /// Bytes the header promises.
        expected: u64,
        /// Bytes present.
        got: u64,
    },
    /// The data could not be decoded.
    #[error("reading the data: {0}")]
    Data(io::Error),
    /// The array does not fit in memory here.
    #[error(transparent)]
    Array(#[from] ArrayError),
}

/// The ABI dtype of a NumPy dtype, if it has one.
fn abi_dtype(dtype: &DType) -> Result<Dtype, NpyError> {
    let DType::Plain(type_str) = dtype else { return Err(NpyError::Dtype(dtype.descr().to_string())) };
    let unknown = || NpyError::Dtype(type_str.to_string());
    Ok(match (type_str.type_char(), type_str.size_field()) {
        (TypeChar::Float, 4) => Dtype::Float32,
        (TypeChar::Float, 2) => Dtype::Float16,
        (TypeChar::RawData, 2) => Dtype::Bfloat16,
        (TypeChar::Int, 4) => Dtype::Int32,
        (TypeChar::Int, 1) => Dtype::Int8,
        (TypeChar::Int, 8) => Dtype::Int64,
        (TypeChar::Int, 2) => Dtype::Int16,
        (TypeChar::Uint, 1) => Dtype::Uint8,
        _ => return Err(unknown()),
    })
}

/// The NumPy type string of `dtype`.
fn type_str(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::Float32 => "<f4",
        Dtype::Bfloat16 => "|V2",
        Dtype::Float16 => "<f2",
        Dtype::Int32 => "<i4",
        Dtype::Int8 => "|i1",
        Dtype::Int64 => "<i8",
        Dtype::Int16 => "<i2",
        Dtype::Uint8 => "|u1",
    }
}

/// Reads the array a `.npy` file's bytes hold.
///
/// # Errors
/// [`NpyError::Header`] for a malformed header, [`NpyError::Dtype`] for a dtype the
/// device has not, [`NpyError::FortranOrder`], [`NpyError::DataLength`] for data that
/// does not match the header (a truncated file among them).
pub fn from_bytes(bytes: &[u8]) -> Result<Array, NpyError> {
    precheck_header(bytes)?;
    let mut rest = bytes;
    let header = npyz::NpyHeader::from_reader(&mut rest).map_err(NpyError::Header)?;
    let dtype = abi_dtype(&header.dtype())?;
    if header.order() == Order::Fortran && header.shape().len() > 1 {
        return Err(NpyError::FortranOrder);
    }
    let shape = header.shape().to_vec();
    let expected = shape
        .iter()
        .try_fold(dtype.size() as u64, |total, &dim| total.checked_mul(dim))
        .filter(|&total| total <= usize::MAX as u64);
    let got = rest.len() as u64;
    if expected != Some(got) {
        return Err(NpyError::DataLength {
            shape,
            dtype: dtype_name(dtype),
            expected: expected.unwrap_or(u64::MAX),
            got,
        });
    }
    // The data length fits the host's memory, so does every dimension.
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let file = npyz::NpyFile::with_header(header, rest);
    fn decode<T: Element + npyz::Deserialize>(file: npyz::NpyFile<&[u8]>, dims: Vec<usize>) -> Result<Array, NpyError> {
        Ok(Array::from_vec(dims, file.into_vec::<T>().map_err(NpyError::Data)?)?)
    }
    match dtype {
        Dtype::Float32 => decode::<f32>(file, dims),
        Dtype::Float16 => decode::<half::f16>(file, dims),
        Dtype::Int32 => decode::<i32>(file, dims),
        Dtype::Int8 => decode::<i8>(file, dims),
        Dtype::Int64 => decode::<i64>(file, dims),
        Dtype::Int16 => decode::<i16>(file, dims),
        Dtype::Uint8 => decode::<u8>(file, dims),
        // Raw 2-byte records: the bfloat16 bit patterns, little-endian as saved.
        Dtype::Bfloat16 => {
            let raw: Vec<FixedSizeBytes<2>> = file.into_vec().map_err(NpyError::Data)?;
            Ok(Array::from_bytes(Dtype::Bfloat16, dims, raw.iter().flat_map(|b| b.0).collect())?)
        }
    }
}

/// How deep brackets may nest in a header: NumPy's own headers of the dtypes read
/// here nest 2 deep (the dictionary, the shape's tuple).
const MAX_HEADER_NESTING: usize = 4;

/// Refuses, before `npyz` parses the header, two headers it does not survive well:
/// brackets nested deeper than [`MAX_HEADER_NESTING`] (its Python-literal parser takes
/// time exponential in the nesting: a 190-byte header of nested `{` took over 15 s;
/// found by the `npy` fuzz target), and a shape whose element count overflows `u64`
/// (it multiplies the dimensions unchecked, which panics in a debug build).
fn precheck_header(bytes: &[u8]) -> Result<(), NpyError> {
    let invalid = |what: String| NpyError::Header(io::Error::new(io::ErrorKind::InvalidData, what));
    // Magic (6 bytes), version (2), header length (2 bytes in version 1, 4 after).
    let Some(&major) = bytes.get(6) else { return Ok(()) };
    let start = if major == 1 { 10 } else { 12 };
    let header = bytes.get(start..).unwrap_or_default();
    let header = &header[..header.iter().position(|&b| b == b'\n').unwrap_or(header.len())];
    let (mut depth, mut quote) = (0usize, None);
    for &byte in header {
        match (quote, byte) {
            (Some(open), b) if b == open => quote = None,
            (Some(_), _) => {}
            (None, b'\'' | b'"') => quote = Some(byte),
            (None, b'{' | b'(' | b'[') => {
                depth += 1;
                if depth > MAX_HEADER_NESTING {
                    return Err(invalid(format!("the header nests brackets deeper than {MAX_HEADER_NESTING}")));
                }
            }
            (None, b'}' | b')' | b']') => depth = depth.saturating_sub(1),
            (None, _) => {}
        }
    }
    // The shape's tuple: the digits between the parentheses after `shape`.
    let text = String::from_utf8_lossy(header);
    let Some(after) = text.find("shape").map(|at| &text[at..]) else { return Ok(()) };
    let Some(tuple) = after.split_once('(').and_then(|(_, rest)| rest.split_once(')')).map(|(tuple, _)| tuple) else {
        return Ok(());
    };
    let mut count = 1u64;
    for dim in tuple.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        // Not a plain number: npyz's parser decides.
        let Ok(dim) = dim.trim_end_matches('L').parse::<u64>() else { return Ok(()) };
        count = count
            .checked_mul(dim)
            .ok_or_else(|| invalid(format!("the shape ({tuple}) has more than 2^64 elements")))?;
    }
    Ok(())
}

/// The `.npy` bytes of `array`.
///
/// # Errors
/// [`NpyError::Data`] if `npyz` refuses to write it (it does not for an ABI dtype).
pub fn to_bytes(array: &Array) -> Result<Vec<u8>, NpyError> {
    fn encode<T: Element + npyz::Serialize>(array: &Array) -> io::Result<Vec<u8>> {
        let values = array.to_vec::<T>().map_err(io::Error::other)?;
        encode_as(array, type_str(T::DTYPE), values)
    }
    fn encode_as<T: npyz::Serialize>(array: &Array, descr: &str, rows: Vec<T>) -> io::Result<Vec<u8>> {
        let shape: Vec<u64> = array.shape().iter().map(|&d| d as u64).collect();
        let descr = DType::Plain(descr.parse().expect("a valid type string"));
        let mut bytes = Vec::new();
        let mut writer = npyz::WriteOptions::<T>::new().dtype(descr).shape(&shape).writer(&mut bytes).begin_nd()?;
        writer.extend(rows)?;
        writer.finish()?;
        Ok(bytes)
    }
    match array.dtype() {
        Dtype::Float32 => encode::<f32>(array),
        Dtype::Float16 => encode::<half::f16>(array),
        Dtype::Int32 => encode::<i32>(array),
        Dtype::Int8 => encode::<i8>(array),
        Dtype::Int64 => encode::<i64>(array),
        Dtype::Int16 => encode::<i16>(array),
        Dtype::Uint8 => encode::<u8>(array),
        Dtype::Bfloat16 => {
            let raw = array.bytes().chunks_exact(2).map(|c| FixedSizeBytes([c[0], c[1]])).collect();
            encode_as::<FixedSizeBytes<2>>(array, type_str(Dtype::Bfloat16), raw)
        }
    }
    .map_err(NpyError::Data)
}

/// Reads the `.npy` file at `path`.
///
/// # Errors
/// [`NpyError::Io`] naming the file, or as [`from_bytes`].
pub fn read(path: &Path) -> Result<Array, NpyError> {
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io { path: path.into(), source })?;
    from_bytes(&bytes)
}

/// Writes `array` to `path` as a `.npy` file (through a temporary file and a rename,
/// so a reader never sees half of it).
///
/// # Errors
/// [`NpyError::Io`] naming the file.
pub fn write(path: &Path, array: &Array) -> Result<(), NpyError> {
    let bytes = to_bytes(array)?;
    let io = |source| NpyError::Io { path: path.into(), source };
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".{}.partial", std::process::id()));
    std::fs::write(&partial, bytes).map_err(io)?;
    std::fs::rename(&partial, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(descr: &str, fortran: bool, shape: &str) -> Vec<u8> {
        let dict = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        let mut text = dict.into_bytes();
        while (10 + text.len() + 1) % 64 != 0 {
            text.push(b' ');
        }
        text.push(b'\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
        bytes.extend(text);
        bytes
    }

    #[test]
    fn every_dtype_round_trips_with_numpys_type_string() {
        let arrays = [
            Array::from_vec(vec![2, 1], vec![1.5f32, -2.0]).unwrap(),
            Array::from_vec(vec![3], vec![half::bf16::from_f32(-1.0), half::bf16::ONE, half::bf16::NAN]).unwrap(),
            Array::from_vec(vec![1], vec![half::f16::from_f32(0.5)]).unwrap(),
            Array::from_vec(vec![2], vec![i32::MIN, 1]).unwrap(),
            Array::from_vec(vec![2], vec![-128i8, 127]).unwrap(),
            Array::from_vec(vec![1, 1, 1], vec![i64::MIN]).unwrap(),
            Array::from_vec(vec![2], vec![-3i16, 4]).unwrap(),
            Array::from_vec(vec![0], Vec::<u8>::new()).unwrap(),
        ];
        for array in arrays {
            let bytes = to_bytes(&array).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(text.contains(type_str(array.dtype())), "{text}");
            assert_eq!((bytes.len() - array.bytes().len()) % 64, 0, "the header is padded to 64 bytes");
            assert_eq!(from_bytes(&bytes).unwrap(), array);
        }
    }

    #[test]
    fn files_numpy_writes_are_read() {
        // np.save of np.array([[1, 2], [3, 4]], dtype='>i4') (big-endian).
        let mut file = header(">i4", false, "(2, 2)");
        for v in [1i32, 2, 3, 4] {
            file.extend(v.to_be_bytes());
        }
        assert_eq!(from_bytes(&file).unwrap(), Array::from_vec(vec![2, 2], vec![1i32, 2, 3, 4]).unwrap());
        // A 0-d array (a NumPy scalar) has one element.
        let mut scalar = header("<f4", false, "()");
        scalar.extend(2.5f32.to_le_bytes());
        assert_eq!(from_bytes(&scalar).unwrap().to_vec::<f32>().unwrap(), [2.5]);
    }

    #[test]
    fn bad_files_are_named() {
        let bad = |bytes: &[u8]| from_bytes(bytes).unwrap_err().to_string();
        assert!(bad(b"not numpy at all").starts_with("not a .npy file"), "{}", bad(b"not numpy"));
        assert!(bad(&header("<f8", false, "(1,)")).contains("dtype <f8 is not one of the device's"));
        assert!(bad(&header("<f4", true, "(2, 2)")).contains("Fortran order"));
        let mut short = header("<f4", false, "(3,)");
        short.extend([0; 11]);
        assert_eq!(bad(&short), "the header promises 12 data bytes ([3] of float32), but the file holds 11");
        short.extend([0; 2]);
        assert!(bad(&short).contains("holds 13"), "trailing bytes are not dropped silently");
        let nested = header("<f4", false, &format!("(4, 8, {}", "{".repeat(60)));
        assert!(bad(&nested).contains("nests brackets deeper than 4"), "{}", bad(&nested));
        let huge = header("<i8", false, "(4294967296, 4294967296)");
        assert!(bad(&huge).contains("has more than 2^64 elements"), "{}", bad(&huge));
        let large = header("<i8", false, "(4294967296, 4294967295)");
        assert!(bad(&large).contains("promises"), "{}", bad(&large));
    }

    #[test]
    fn files_are_read_and_written_whole() {
        let dir = std::env::temp_dir().join(format!("npy-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.npy");
        let x = Array::from_vec(vec![2], vec![7u8, 9]).unwrap();
        write(&path, &x).unwrap();
        assert_eq!(read(&path).unwrap(), x);
        let missing = read(&dir.join("missing.npy")).unwrap_err().to_string();
        assert!(missing.contains("missing.npy"), "{missing}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
