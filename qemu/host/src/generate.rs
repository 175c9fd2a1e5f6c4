//! Generated inputs: a shape, a dtype, a distribution and a seed make the same array
//! on every machine.
//!
//! ```
//! use neuroncustomop_host::generate::{Distribution, generate};
//! use neuroncustomop::wrapper_api::Dtype;
//!
//! let x = generate(Dtype::Int8, vec![4, 4], Distribution::Uniform { low: -3.0, high: 3.0 }, 7);
//! assert_eq!(x, generate(Dtype::Int8, vec![4, 4], Distribution::Uniform { low: -3.0, high: 3.0 }, 7));
//! assert!(x.to_vec::<i8>().unwrap().iter().all(|v| (-3..3).contains(v)));
//! ```

use crate::array::{Array, Element, numel};
use neuroncustomop::allocators::tcm::TCM_POOL_SIZE;
use neuroncustomop::wrapper_api::{Dtype, MAX_DIM};
use std::str::FromStr;

/// How generated values are spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Uniform in `[low, high)` (integers: rounded down, so `high` is excluded).
    Uniform {
        /// Smallest value.
        low: f64,
        /// Bound above every value.
        high: f64,
    },
    /// Normal with this mean and standard deviation (integers: rounded to nearest).
    Normal {
        /// The mean.
        mean: f64,
        /// The standard deviation.
        std: f64,
    },
    /// `0, 1, 2, …` in row-major order (wrapping for the narrow integer dtypes).
    Range,
}

impl FromStr for Distribution {
    type Err = String;

    /// `uniform` (in `[-1, 1)`), `uniform:LOW:HIGH`, `normal` (0, 1),
    /// `normal:MEAN:STD`, or `range`.
    fn from_str(text: &str) -> Result<Self, String> {
        let mut parts = text.split(':');
        let kind = parts.next().unwrap_or_default();
        let numbers: Vec<f64> = parts
            .map(|p| p.parse::<f64>().map_err(|_| format!("{p} is not a number in distribution {text}")))
            .collect::<Result<_, _>>()?;
        match (kind, &numbers[..]) {
            ("uniform", []) => Ok(Distribution::Uniform { low: -1.0, high: 1.0 }),
            ("uniform", &[low, high]) if low < high => Ok(Distribution::Uniform { low, high }),
            ("normal", []) => Ok(Distribution::Normal { mean: 0.0, std: 1.0 }),
            ("normal", &[mean, std]) if std >= 0.0 => Ok(Distribution::Normal { mean, std }),
            ("range", []) => Ok(Distribution::Range),
            _ => Err(format!(
                "unknown distribution {text}: expected uniform, uniform:LOW:HIGH (LOW < HIGH), normal, normal:MEAN:STD or range"
            )),
        }
    }
}

/// An array of `dtype` and `shape` whose values follow `distribution`, from `seed`.
pub fn generate(dtype: Dtype, shape: Vec<usize>, distribution: Distribution, seed: u64) -> Array {
    let mut rng = Rng::new(seed);
    let count = numel(&shape);
    let values: Vec<f64> = (0..count)
        .map(|index| match distribution {
            Distribution::Uniform { low, high } => low + rng.unit() * (high - low),
            Distribution::Normal { mean, std } => mean + std * rng.standard_normal(),
            Distribution::Range => index as f64,
        })
        .collect();
    fn cast<T: Element>(shape: Vec<usize>, values: &[f64], convert: impl Fn(f64) -> T) -> Array {
        let typed: Vec<T> = values.iter().map(|&v| convert(v)).collect();
        Array::from_vec(shape, typed).expect("one value per element")
    }
    let integer = |v: f64, round: bool| if round { v.round() } else { v.floor() };
    let round = matches!(distribution, Distribution::Normal { .. });
    // `as` saturates at the integer type's bounds; Range wraps instead, as NumPy's
    // `np.arange(n).astype(np.int8)` does.
    let wrap = matches!(distribution, Distribution::Range);
    match dtype {
        Dtype::Float32 => cast(shape, &values, |v| v as f32),
        Dtype::Bfloat16 => cast(shape, &values, half::bf16::from_f64),
        Dtype::Float16 => cast(shape, &values, half::f16::from_f64),
        Dtype::Int32 => cast(shape, &values, |v| if wrap { v as i64 as i32 } else { integer(v, round) as i32 }),
        Dtype::Int8 => cast(shape, &values, |v| if wrap { v as i64 as i8 } else { integer(v, round) as i8 }),
        Dtype::Int64 => cast(shape, &values, |v| integer(v, round) as i64),
        Dtype::Int16 => cast(shape, &values, |v| if wrap { v as i64 as i16 } else { integer(v, round) as i16 }),
        Dtype::Uint8 => cast(shape, &values, |v| if wrap { v as i64 as u8 } else { integer(v, round) as u8 }),
    }
}

/// SplitMix64: small, seedable, and good enough for test inputs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator that always yields the same sequence for `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `bound` (`bound > 0`).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    /// A float in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A float in `[low, high)`.
    pub fn uniform(&mut self, low: f32, high: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        low + unit * (high - low)
    }

    /// A standard normal value (Box–Muller).
    pub fn standard_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // (0, 1]: the logarithm is finite
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// The dimensions a kernel's bugs live at, ascending: 1, primes, multiples of 8 and of
/// `cores` with one either side, the TCM pool's elements (of 1, 2, 4 and 8 bytes) with
/// one either side, and the largest dimensions.
///
/// ```
/// let edges = neuroncustomop_host::generate::edge_sizes(8);
/// assert!([1, 7, 8, 9, 4095, 4096, 4097, 65535].iter().all(|size| edges.contains(size)));
/// ```
pub fn edge_sizes(cores: usize) -> Vec<usize> {
    let max = MAX_DIM as usize;
    let mut sizes = vec![1, max - 1, max, 2, 3, 5, 7, 11, 13, 31, 37, 61, 127, 251, 509, 1021, 4093, 8191, 65521];
    for multiple in [8, cores.max(1)] {
        for k in [1, 2, 3, 8, 128] {
            sizes.extend([multiple * k - 1, multiple * k, multiple * k + 1]);
        }
    }
    for element in [1, 2, 4, 8] {
        let pool = TCM_POOL_SIZE / element;
        sizes.extend([pool - 1, pool, pool + 1]);
    }
    sizes.retain(|&size| (1..=max).contains(&size));
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_parse_and_refuse_nonsense() {
        assert_eq!("uniform:-2:5".parse(), Ok(Distribution::Uniform { low: -2.0, high: 5.0 }));
        assert_eq!("normal".parse(), Ok(Distribution::Normal { mean: 0.0, std: 1.0 }));
        assert_eq!("range".parse(), Ok(Distribution::Range));
        assert!("uniform:5:2".parse::<Distribution>().is_err());
        assert!("uniform:a:2".parse::<Distribution>().unwrap_err().contains("a is not a number"));
        assert!("poisson".parse::<Distribution>().is_err());
    }

    #[test]
    fn values_follow_the_distribution_in_every_dtype() {
        let uniform = Distribution::Uniform { low: 10.0, high: 20.0 };
        let x = generate(Dtype::Float32, vec![1000], uniform, 1).to_vec::<f32>().unwrap();
        assert!(x.iter().all(|v| (10.0..20.0).contains(v)));
        let mean = x.iter().sum::<f32>() / 1000.0;
        assert!((mean - 15.0).abs() < 0.5, "{mean}");
        let normal = generate(Dtype::Float32, vec![4000], Distribution::Normal { mean: 3.0, std: 2.0 }, 2);
        let n = normal.to_vec::<f32>().unwrap();
        let mean = n.iter().sum::<f32>() / 4000.0;
        let var = n.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / 4000.0;
        assert!((mean - 3.0).abs() < 0.15 && (var.sqrt() - 2.0).abs() < 0.15, "{mean} {var}");
        let range = generate(Dtype::Int8, vec![300], Distribution::Range, 0).to_vec::<i8>().unwrap();
        assert_eq!((range[127], range[128], range[299]), (127, -128, 43));
        for dtype in Dtype::ALL {
            let array = generate(dtype, vec![3, 5], uniform, 9);
            assert_eq!((array.dtype(), array.numel()), (dtype, 15));
            assert_ne!(array, generate(dtype, vec![3, 5], uniform, 10), "{dtype:?}: the seed matters");
        }
    }
}
