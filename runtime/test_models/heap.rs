//! The reference for `Heap` placement: one flag per 64-byte granule, searched the slow
//! way, against which the heap's first fit (bins, boundary tags) is checked.

use std::vec;
use std::vec::Vec;

use crate::allocators::{GRANULE, HeapError};

/// Which granules of an arena are in use.
pub struct Granules {
    used: Vec<bool>,
}

impl Granules {
    /// An arena of `granules` free granules.
    pub fn new(granules: usize) -> Granules {
        Granules { used: vec![false; granules] }
    }

    /// The first granule of the lowest free run of at least `count` granules.
    pub fn lowest_run(&self, count: usize) -> Option<usize> {
        let mut run = 0;
        for (granule, &used) in self.used.iter().enumerate() {
            run = if used { 0 } else { run + 1 };
            if run == count {
                return Some(granule + 1 - count);
            }
        }
        None
    }

    /// The granule where `allocate(size, align)` must put the block (arena at `base`),
    /// or its error: in the lowest free run of `size + align - 64` bytes, at its low end
    /// if the run reaches the arena's end (the top block), else at its high end.
    pub fn place(&self, base: usize, size: usize, align: usize) -> Result<usize, HeapError> {
        if !align.is_power_of_two() {
            return Err(HeapError::InvalidAlignment);
        }
        if size > isize::MAX as usize {
            return Err(HeapError::SizeOverflow);
        }
        let count = size.div_ceil(GRANULE).max(1);
        let search = count + (align / GRANULE).max(1) - 1;
        let run = self.lowest_run(search).ok_or(HeapError::OutOfMemory)?;
        let run_end = run + self.used[run..].iter().position(|&used| used).unwrap_or(self.used.len() - run);
        let address = if run_end == self.used.len() {
            (base + run * GRANULE).next_multiple_of(align)
        } else {
            let last_fit = base + (run_end - count) * GRANULE;
            last_fit - last_fit % align
        };
        Ok((address - base) / GRANULE)
    }

    /// Whether the block of `count` granules at `first` can become `new_count` granules
    /// where it is: it shrinks, or the granules it grows into are free.
    pub fn resizes_in_place(&self, first: usize, count: usize, new_count: usize) -> bool {
        let end = first + new_count;
        new_count <= count || (end <= self.used.len() && !self.used[first + count..end].contains(&true))
    }

    /// Marks `count` granules from `first` used or free.
    pub fn set(&mut self, first: usize, count: usize, used: bool) {
        self.used[first..first + count].fill(used);
    }

    /// (free granules, free runs, longest free run).
    pub fn free_summary(&self) -> (usize, usize, usize) {
        let (mut free, mut runs, mut longest, mut run) = (0, 0, 0, 0);
        for &used in &self.used {
            if used {
                run = 0;
            } else {
                free += 1;
                run += 1;
                runs += usize::from(run == 1);
                longest = longest.max(run);
            }
        }
        (free, runs, longest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_like_first_fit() {
        let mut granules = Granules::new(8);
        granules.set(2, 1, true);
        // The hole at 0..2 is indexed (a live block follows): the high end is taken.
        assert_eq!(granules.place(0, 64, 64), Ok(1));
        // Three granules only fit in the top block, from its low end.
        assert_eq!(granules.place(0, 192, 64), Ok(3));
        assert_eq!(granules.place(0, 64, 3), Err(HeapError::InvalidAlignment));
    }
}
