//! The code of the `big_code` program: 400 stages of 64 rounds, each round with its own
//! 32-bit constant, so each stage is ~1 KiB of straight-line Xtensa code with a literal
//! pool of 64 words. Together more than 256 KiB of code: the reach of `l32r`, which
//! loads each constant from a literal pool below it (linker/README.md, "Literals").
//!
//! Shared, through `#[path]`, by the program (`src/bin/big_code.rs`) and the test that
//! checks its result on the host (`qemu/tests/linker.rs`).

/// How many stages the chain runs through, in order.
pub const STAGES: usize = 400;

/// The chain's input.
pub const SEED: u32 = 0x1234_5678;

/// The constant of round `round` of stage `stage`: distinct for every pair, so no two
/// rounds share a literal.
const fn constant(stage: u32, round: u32) -> u32 {
    (stage * 64 + round + 1).wrapping_mul(0x9E37_79B9)
}

/// Stage `K`: 64 rounds of xor with a constant and rotate, none of which fold.
#[inline(never)]
fn stage<const K: u32>(mut x: u32) -> u32 {
    macro_rules! rounds {
        ($($round:literal)*) => {
            $( x = (x ^ const { constant(K, $round) }).rotate_left($round % 31 + 1); )*
        };
    }
    rounds!(
        0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
        32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
    );
    x
}

/// Stages `100 * h + 10 * t + 0..=9`.
macro_rules! ones {
    ($h:literal $t:literal) => {
        [
            stage::<{ 100 * $h + 10 * $t }>,
            stage::<{ 100 * $h + 10 * $t + 1 }>,
            stage::<{ 100 * $h + 10 * $t + 2 }>,
            stage::<{ 100 * $h + 10 * $t + 3 }>,
            stage::<{ 100 * $h + 10 * $t + 4 }>,
            stage::<{ 100 * $h + 10 * $t + 5 }>,
            stage::<{ 100 * $h + 10 * $t + 6 }>,
            stage::<{ 100 * $h + 10 * $t + 7 }>,
            stage::<{ 100 * $h + 10 * $t + 8 }>,
            stage::<{ 100 * $h + 10 * $t + 9 }>,
        ]
    };
}

/// Stages `100 * h + 0..=99`.
macro_rules! tens {
    ($h:literal) => {
        [ones!($h 0), ones!($h 1), ones!($h 2), ones!($h 3), ones!($h 4), ones!($h 5), ones!($h 6), ones!($h 7), ones!($h 8), ones!($h 9)]
    };
}

/// One stage: the chain's value in, the next out.
type Stage = fn(u32) -> u32;

/// Every stage, by number (`[h][t][o]` is stage `100h + 10t + o`).
static TABLE: [[[Stage; 10]; 10]; STAGES / 100] = [tens!(0), tens!(1), tens!(2), tens!(3)];

/// `seed` through every stage, in order.
pub fn chain(seed: u32) -> u32 {
    TABLE.iter().flatten().flatten().fold(seed, |x, stage| stage(x))
}
