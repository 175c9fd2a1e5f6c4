//! ReLU (`out = max(x, 0)` over an f32 tensor) in the three styles op authors know,
//! slowest to fastest: element access, the TCM accessor, and the TCM accessor on all
//! 8 cores. One library; the op names which kernel runs.
#![no_std]
#![no_main]

use neuroncustomop::multicore::core_range;
use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};

/// Elements per TCM round trip: 4 KiB of f32.
const CHUNK: usize = 1024;

/// Element access: reads and writes device memory directly. Single core only.
fn relu(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let mut out = args.output()?;
    for (o, v) in out.as_mut_slice::<f32>()?.iter_mut().zip(x.as_slice::<f32>()?) {
        *o = v.max(0.0);
    }
    Ok(out)
}

/// `elements` in `CHUNK`-sized pieces through one TCM buffer.
fn relu_through_tcm(
    args: &Args,
    x: &Tensor<'_>,
    out: &mut Tensor<'_>,
    elements: core::ops::Range<usize>,
) -> Result<(), KernelError> {
    let mut buffer = args.tcm_buffer::<f32>(CHUNK)?;
    let mut start = elements.start;
    while start < elements.end {
        let chunk = &mut buffer[..CHUNK.min(elements.end - start)];
        x.tensor_to_tcm(chunk, start)?;
        for v in chunk.iter_mut() {
            *v = v.max(0.0);
        }
        out.tcm_to_tensor(chunk, start)?;
        start += chunk.len();
    }
    Ok(())
}

/// The TCM accessor: bulk copies into TCM, compute there, bulk copies back.
fn relu_tcm(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let mut out = args.output()?;
    relu_through_tcm(args, &x, &mut out, 0..x.numel())?;
    Ok(out)
}

/// All cores: each takes its own slice of the tensor.
fn relu_multicore(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let mut out = args.output()?;
    // This core's fair share of the elements (they differ by at most one).
    relu_through_tcm(args, &x, &mut out, core_range(x.numel()))?;
    Ok(out)
}

neuroncustomop::kernels! { fn relu, fn relu_tcm, fn relu_multicore }
