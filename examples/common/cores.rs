//! Splitting work over the cores: shared by the examples that run on all of them.

use core::ops::Range;
use neuroncustomop::multicore::{get_cpu_count, get_cpu_id};

/// This core's share of `count` items: core i takes `[i * share, (i + 1) * share)`
/// with `share = count / cores`, and the last core also takes the remainder (as the
/// AWS samples do). Every item belongs to exactly one core.
pub fn core_range(count: usize) -> Range<usize> {
    let (core, cores) = (get_cpu_id() as usize, get_cpu_count() as usize);
    let share = count / cores;
    let end = if core + 1 == cores { count } else { (core + 1) * share };
    core * share..end
}
