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

/// Core `core` of `cores`' share of `count` items ([`core_range`]).
pub fn share(count: usize, core: usize, cores: usize) -> Range<usize> {
    // In u64: on the 32-bit device `count * cores` passes usize past 2^29 items.
    let bound = |core: usize| (count as u64 * core as u64 / cores as u64) as usize;
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
}
