//! Vector add, `out = a + b` over two f32 tensors of the output's shape, in two
//! styles: element access on one core, and the TCM accessor on all 8 cores.
#![no_std]
#![no_main]

use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};

/// Elements per TCM round trip: two 4 KiB buffers of the op's 16 KiB pool.
const CHUNK: usize = 1024;

/// Kernel failure code (status `0x1_0000 + 1`): an input's shape is not the output's.
const SHAPE_MISMATCH: u16 = 1;

/// The two inputs and the output, checked to have one shape.
fn operands<'a>(args: &'a Args) -> Result<(Tensor<'a>, Tensor<'a>, Tensor<'a>), KernelError> {
    let a = args.tensor()?;
    let b = args.tensor()?;
    let out = args.output()?;
    if a.shape() != out.shape() || b.shape() != out.shape() {
        return Err(KernelError::Op(SHAPE_MISMATCH));
    }
    Ok((a, b, out))
}

/// Element access: reads and writes device memory directly. Single core only.
fn vector_add(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let (a, b, mut out) = operands(args)?;
    let sums = out.as_mut_slice::<f32>()?.iter_mut().zip(a.as_slice::<f32>()?.iter().zip(b.as_slice::<f32>()?));
    for (o, (x, y)) in sums {
        *o = x + y;
    }
    Ok(out)
}

/// The TCM accessor on all cores: each core adds its own slice, `CHUNK` elements at a
/// time, in TCM.
fn vector_add_multicore(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let (a, b, mut out) = operands(args)?;
    let mut sums = args.tcm_buffer::<f32>(CHUNK)?;
    let mut addends = args.tcm_buffer::<f32>(CHUNK)?;
    let elements = neuroncustomop::multicore::core_range(out.numel());
    let mut start = elements.start;
    while start < elements.end {
        let len = CHUNK.min(elements.end - start);
        let (sum, addend) = (&mut sums[..len], &mut addends[..len]);
        a.tensor_to_tcm(sum, start)?;
        b.tensor_to_tcm(addend, start)?;
        for (s, y) in sum.iter_mut().zip(addend.iter()) {
            *s += y;
        }
        out.tcm_to_tensor(sum, start)?;
        start += len;
    }
    Ok(out)
}

neuroncustomop::kernels! { fn vector_add, fn vector_add_multicore }
