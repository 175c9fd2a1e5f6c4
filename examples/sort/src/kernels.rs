//! Sort and top-k along the last axis of an f32 tensor with bitonic networks: the job
//! of the compiler's builtin SORT / TOPK kernels. As with the builtins, nothing but the
//! call says what to do: the function gives the order, and the output's shape gives K,
//! its last dimension. The leading dimensions are rows, each handled on its own, and
//! the op has one output: the values (an op has at most one output).
//!
//! | function | output row | K |
//! |---|---|---|
//! | `sort_ascending` | the row, smallest first | n |
//! | `sort_descending` | the row, largest first | n |
//! | `topk_largest` | the K largest, largest first | 0 ..= n |
//! | `topk_smallest` | the K smallest, smallest first | 0 ..= n |
//!
//! The order, NaN included, is a total order on bit patterns, so every result is fully
//! determined although a bitonic network is not stable:
//! `-inf < … < -0.0 < +0.0 < … < +inf < NaN`. Every NaN is larger than `+inf`,
//! whatever its sign (as in PyTorch's `sort` and `topk`); NaNs order by payload, and
//! `+NaN` comes before the `-NaN` of the same payload.
//!
//! The rows are split over the 8 cores (`common/cores.rs`). Each core works in a
//! scratch buffer: TCM when it fits, else the heap (HBM).
//! - Sort: Lang's bitonic network for any length, in place, O(n log² n) steps.
//! - Top-k: the row in blocks of P (K rounded up to a power of two). The best P so far
//!   stay sorted; each new block is sorted the other way, and the better element of
//!   each pair of the two is a bitonic sequence holding the best P of both, which one
//!   bitonic merge sorts: O(n log² P) steps.
//!
//! Kernel failure codes (status `0x1_0000 + code`): 1, the shapes do not fit the
//! function (leading dimensions differ, K > n, or a sort with K != n); 2, no memory for
//! the scratch buffer.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::ops::{Deref, DerefMut};
use neuroncustomop::wrapper_api::{Args, KernelError, TcmBuffer, Tensor};

/// Failure code: the output's shape does not fit the input and the function.
const SHAPE_MISMATCH: u16 = 1;
/// Failure code: the scratch buffer could not be allocated.
const OUT_OF_MEMORY: u16 = 2;
/// The most scratch elements taken from TCM: 12 KiB of the op's 16 KiB pool.
const TCM_SCRATCH: usize = 3 * 1024;

/// Where a row's elements go.
#[derive(Clone, Copy)]
enum Order {
    Ascending,
    Descending,
}

impl Order {
    fn reversed(self) -> Self {
        match self {
            Order::Ascending => Order::Descending,
            Order::Descending => Order::Ascending,
        }
    }

    /// Whether `a` may stand before `b`.
    fn in_order(self, a: f32, b: f32) -> bool {
        match self {
            Order::Ascending => not_after(a, b),
            Order::Descending => not_after(b, a),
        }
    }

    /// The value that sorts after every other: padding that never displaces an element.
    fn last(self) -> f32 {
        match self {
            Order::Ascending => f32::from_bits(u32::MAX), // -NaN, the largest payload
            Order::Descending => f32::NEG_INFINITY,
        }
    }
}

/// `x`'s place in the order, up to the sign of a NaN: the IEEE total order (negatives
/// with their bits flipped, below positives with the sign bit set), and NaNs above
/// `+inf`, by payload.
fn key(x: f32) -> u32 {
    let bits = x.to_bits();
    let magnitude = bits & 0x7FFF_FFFF;
    if magnitude > f32::INFINITY.to_bits() {
        magnitude | 0x8000_0000
    } else if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// Whether `a` comes before `b`, or is `b`. Distinct values with equal keys are the
/// `+NaN` and `-NaN` of one payload, and `+NaN` has the smaller bits.
fn not_after(a: f32, b: f32) -> bool {
    let (ka, kb) = (key(a), key(b));
    ka < kb || (ka == kb && a.to_bits() <= b.to_bits())
}

/// Sorts `values` (any length): sort the halves in opposite orders, then merge.
fn sort(values: &mut [f32], order: Order) {
    if values.len() > 1 {
        let (low, high) = values.split_at_mut(values.len() / 2);
        sort(low, order.reversed());
        sort(high, order);
        merge(values, order);
    }
}

/// Sorts a bitonic sequence of any length (Lang): compare across the largest power of
/// two below the length, then merge both sides.
fn merge(values: &mut [f32], order: Order) {
    let len = values.len();
    if len > 1 {
        let (low, high) = values.split_at_mut(1 << (len - 1).ilog2());
        for (a, b) in low.iter_mut().zip(high.iter_mut()) {
            if !order.in_order(*a, *b) {
                core::mem::swap(a, b);
            }
        }
        merge(low, order);
        merge(high, order);
    }
}

/// A scratch buffer: TCM when it fits, else the heap.
enum Scratch<'a> {
    Tcm(TcmBuffer<'a, f32>),
    Heap(Vec<f32>),
}

impl<'a> Scratch<'a> {
    fn new(args: &'a Args, len: usize) -> Result<Self, KernelError> {
        if len <= TCM_SCRATCH {
            return Ok(Scratch::Tcm(args.tcm_buffer(len)?));
        }
        let mut heap = Vec::new();
        heap.try_reserve_exact(len).map_err(|_| KernelError::Op(OUT_OF_MEMORY))?;
        heap.resize(len, 0.0);
        Ok(Scratch::Heap(heap))
    }
}

impl Deref for Scratch<'_> {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        match self {
            Scratch::Tcm(buffer) => buffer,
            Scratch::Heap(buffer) => buffer,
        }
    }
}

impl DerefMut for Scratch<'_> {
    fn deref_mut(&mut self) -> &mut [f32] {
        match self {
            Scratch::Tcm(buffer) => buffer,
            Scratch::Heap(buffer) => buffer,
        }
    }
}

/// What a function writes per row: the whole row sorted, or its first K after sorting.
#[derive(Clone, Copy, PartialEq)]
enum Select {
    All,
    TopK,
}

/// The input's row length n and the output's K, checked against the function.
fn row_lengths(x: &Tensor<'_>, out: &Tensor<'_>, select: Select) -> Result<(usize, usize), KernelError> {
    let mismatch = KernelError::Op(SHAPE_MISMATCH);
    let ((&n, x_rows), (&k, out_rows)) =
        (x.shape().split_last().ok_or(mismatch)?, out.shape().split_last().ok_or(mismatch)?);
    if x_rows != out_rows || k > n || (select == Select::All && k != n) {
        return Err(mismatch);
    }
    Ok((usize::from(n), usize::from(k)))
}

/// Row `row` of `x` (n elements) sorted in `order`; its first `k` become row `row` of `out`.
fn sort_row(
    x: &Tensor<'_>,
    out: &mut Tensor<'_>,
    row: usize,
    values: &mut [f32],
    k: usize,
    order: Order,
) -> Result<(), KernelError> {
    let n = values.len();
    x.tensor_to_tcm(values, row * n)?;
    sort(values, order);
    out.tcm_to_tensor(&values[..k], row * k)?;
    Ok(())
}

/// Elements `start ..` of a row at `row_start` (n elements) into `block`, padded with
/// values that sort last.
fn load_block(
    x: &Tensor<'_>,
    row_start: usize,
    n: usize,
    start: usize,
    block: &mut [f32],
    order: Order,
) -> Result<(), KernelError> {
    let len = block.len().min(n - start);
    x.tensor_to_tcm(&mut block[..len], row_start + start)?;
    block[len..].fill(order.last());
    Ok(())
}

/// The first `k` of row `row` of `x` (n elements) in `order`, by blocks of
/// `scratch.len() / 2`, into row `row` of `out`.
fn top_k_row(
    x: &Tensor<'_>,
    out: &mut Tensor<'_>,
    row: usize,
    n: usize,
    k: usize,
    scratch: &mut [f32],
    order: Order,
) -> Result<(), KernelError> {
    let (best, block) = scratch.split_at_mut(scratch.len() / 2);
    load_block(x, row * n, n, 0, best, order)?;
    sort(best, order);
    for start in (best.len()..n).step_by(best.len()) {
        load_block(x, row * n, n, start, block, order)?;
        sort(block, order.reversed());
        for (kept, candidate) in best.iter_mut().zip(block.iter()) {
            if !order.in_order(*kept, *candidate) {
                *kept = *candidate;
            }
        }
        merge(best, order);
    }
    out.tcm_to_tensor(&best[..k], row * k)?;
    Ok(())
}

/// The kernels' common body: this core's rows, sorted or reduced to their top K.
fn sort_rows(args: &Args, order: Order, select: Select) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let mut out = args.output()?;
    let (n, k) = row_lengths(&x, &out, select)?;
    // This core's rows: none when K = 0 (n may be 0 too).
    let rows = if k == 0 { 0..0 } else { neuroncustomop::multicore::core_range(x.numel() / n) };
    if rows.is_empty() {
        return Ok(out);
    }
    let block = k.next_power_of_two();
    if select == Select::All || block >= n {
        // Sorting the whole row costs no more than blocks of (nearly) its length.
        let mut values = Scratch::new(args, n)?;
        for row in rows {
            sort_row(&x, &mut out, row, &mut values, k, order)?;
        }
    } else {
        let mut scratch = Scratch::new(args, 2 * block)?;
        for row in rows {
            top_k_row(&x, &mut out, row, n, k, &mut scratch, order)?;
        }
    }
    Ok(out)
}

fn sort_ascending(args: &Args) -> Result<Tensor<'_>, KernelError> {
    sort_rows(args, Order::Ascending, Select::All)
}

fn sort_descending(args: &Args) -> Result<Tensor<'_>, KernelError> {
    sort_rows(args, Order::Descending, Select::All)
}

fn topk_largest(args: &Args) -> Result<Tensor<'_>, KernelError> {
    sort_rows(args, Order::Descending, Select::TopK)
}

fn topk_smallest(args: &Args) -> Result<Tensor<'_>, KernelError> {
    sort_rows(args, Order::Ascending, Select::TopK)
}

neuroncustomop::kernels! { fn sort_ascending, fn sort_descending, fn topk_largest, fn topk_smallest }
