//! The kernels of {{name}}: one device image for the 8 GPSIMD cores. Every kernel
//! listed in `kernels!` at the end is called by its name (`ncop run <kernel>`,
//! `Library::call`).
#![no_std]
#![no_main]

use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};

/// The kernel's own failure code for tensors that do not fit: the op's status becomes
/// `0x1_0000 + 1`.
const SHAPE_MISMATCH: u16 = 1;
/// The failure code for arguments left over: the caller passed more than the kernel takes.
const TOO_MANY_ARGS: u16 = 2;

/// `out = x * factor`: an f32 tensor `x` and a float scalar `factor`; the output has
/// the shape of `x`. Single core (every core that runs it computes the whole output).
fn scale(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let factor = args.float()?;
    let mut out = args.output()?;
    if args.remaining() != 0 {
        return Err(KernelError::Op(TOO_MANY_ARGS));
    }
    if x.shape() != out.shape() {
        return Err(KernelError::Op(SHAPE_MISMATCH));
    }
    for (o, v) in out.as_mut_slice::<f32>()?.iter_mut().zip(x.as_slice::<f32>()?) {
        *o = v * factor;
    }
    Ok(out)
}

neuroncustomop::kernels! { fn scale }
