//! Which core this is: the `parallel.o` part of the runtime.
//!
//! Every core runs the same kernel on its own image; `get_cpu_id` reads PRID.
//! [`core_range`] is the fair split of a kernel's work over the cores.

use core::ops::Range;

/// Number of GPSIMD cores in a NeuronCore-v2 cluster.
pub const CPU_COUNT: u32 = 8;

/// This core's index in `0..get_cpu_count()`, from the PRID register.
#[unsafe(no_mangle)]
pub extern "C" fn get_cpu_id() -> u32 {
    crate::arch::prid()
}

/// The number of cores the kernel runs on: always [`CPU_COUNT`].
#[unsafe(no_mangle)]
pub extern "C" fn get_cpu_count() -> u32 {
    CPU_COUNT
}

/// This core's share of `count` items (rows, elements): core i of n takes
/// `[i * count / n, (i + 1) * count / n)` ([`share`]). Every item belongs to exactly one
/// core and the shares differ by at most one item, so with fewer items than cores each
/// item still gets a core of its own, rather than the last core taking them all.
///
/// ```
/// use neuroncustomop::multicore::core_range;
/// // On the host, the core is core 0 of 8: the first eighth of 100 rows.
/// assert_eq!(core_range(100), 0..12);
/// ```
pub fn core_range(count: usize) -> Range<usize> {
    share(count, get_cpu_id() as usize, get_cpu_count() as usize)
}

/// Core `core` of `cores`' share of `count` items ([`core_range`]), for `core < cores`
/// and up to 65,536 cores.
///
/// `core * count / cores` can pass 2^32 on the 32-bit device, and a 64-bit division is a
/// library routine of about 1 KiB there (docs/PERFORMANCE.md, "Text size"). With
/// `count = q * cores + r` it is exactly `q * core + r * core / cores`, whose product
/// `r * core` is below `cores²`: 32-bit arithmetic throughout.
pub fn share(count: usize, core: usize, cores: usize) -> Range<usize> {
    let (quotient, remainder) = (count / cores, count % cores);
    let bound = |core: usize| quotient * core + remainder * core / cores;
    bound(core)..bound(core + 1)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_cover_every_item_once_and_differ_by_at_most_one() {
        for count in [0, 1, 3, 7, 8, 9, 5003] {
            let shares: [_; 8] = core::array::from_fn(|core| share(count, core, 8));
            assert_eq!((shares[0].start, shares[7].end), (0, count));
            assert!(shares.windows(2).all(|pair| pair[0].end == pair[1].start));
            let (min, max) = (shares.iter().map(|s| s.len()).min(), shares.iter().map(|s| s.len()).max());
            assert!(max.unwrap() - min.unwrap() <= 1, "{count}: {shares:?}");
        }
        assert_eq!(share(3, 7, 8), 2..3, "3 rows on 8 cores: the last core takes one, not all");
    }

    proptest::proptest! {
        #[test]
        fn shares_are_the_64_bit_products_divided(count in 0..=u32::MAX, cores in 1..=65_536u32, core_seed: u32) {
            let core = core_seed % cores;
            // The device's 32-bit arithmetic holds every intermediate.
            proptest::prop_assert!(u64::from(count % cores) * u64::from(core + 1) <= u64::from(u32::MAX));
            let bound = |core: u32| (u64::from(count) * u64::from(core) / u64::from(cores)) as usize;
            proptest::prop_assert_eq!(
                share(count as usize, core as usize, cores as usize),
                bound(core)..bound(core + 1)
            );
        }
    }
}
