//! What several examples share: splitting work over the cores.
#![no_std]

use core::ops::Range;
use neuroncustomop::multicore::{get_cpu_count, get_cpu_id};

/// This core's share of `count` items: core i of n takes `[i * count / n, (i + 1) *
/// count / n)`. Every item belongs to exactly one core and the shares differ by at
/// most one item, so with fewer items than cores each item still gets a core of its
/// own (rather than the last core taking them all).
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
