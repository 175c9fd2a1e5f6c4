//! Placing a call's tensors in a job's device memory, and the job of one op.

use super::arguments::MAX_ARGS;
use super::{Arg, CallError, Library, Options, Output, Target};
use crate::compare::canary;
use neuroncustomop::wrapper_api::{ArgTensor, Dtype, ScalarKind};
use neuroncustomop_machine::job::{Job, Op, TENSOR_AREA, TENSOR_AREA_SIZE, library_symbols};
use neuroncustomop_package::package::Package;
use neuroncustomop_wire::Descriptor;
use neuroncustomop_wire::job::OutputDump;
use neuroncustomop_wire::job::{CORES, LibrarySymbols};

/// An op's arguments and output, placed in a job's device memory.
#[derive(Debug, Clone)]
pub struct Staged {
    /// The output's descriptor.
    pub output: Descriptor,
    /// The arguments' descriptors, in order.
    pub inputs: Vec<Descriptor>,
    /// Where the output lands, for the loader to send back after the op.
    pub dump: OutputDump,
    /// The output's dtype.
    pub dtype: Dtype,
    /// The output's shape.
    pub shape: Vec<usize>,
}

/// Places `args` and the output `output` describes in `job`'s tensor area, after what
/// is there already (each 64-byte aligned, 256 free bytes after each: a red zone the
/// memory checks watch; the arguments start, and the output starts, on a
/// 4 KiB page boundary), and describes them. The output starts as [`canary`]
/// elements. [`Library::call_with`] stages this way; tests that write their
/// own dispatch words do too.
///
/// # Errors
/// [`CallError::TooManyArgs`], [`CallError::OutputLike`], [`CallError::DoesNotFit`],
/// [`CallError::Descriptor`].
pub fn stage(job: &mut Job, args: &[Arg], output: Output) -> Result<Staged, CallError> {
    stage_filled(job, args, output, None)
}

/// [`stage`], the output filled with `fill` (one element's bytes) rather than the canary.
pub(super) fn stage_filled(
    job: &mut Job,
    args: &[Arg],
    output: Output,
    fill: Option<&[u8]>,
) -> Result<Staged, CallError> {
    if args.len() > MAX_ARGS {
        return Err(CallError::TooManyArgs(args.len()));
    }
    let (dtype, shape) = match output {
        Output::Shape { dtype, shape } => (dtype, shape),
        Output::Like(index) => match args.get(index) {
            Some(Arg::Tensor(like)) => (like.dtype(), like.shape().to_vec()),
            other => return Err(CallError::OutputLike { index, found: other.map(Arg::describe), count: args.len() }),
        },
    };
    let out_len = crate::array::numel(&shape) as u64 * dtype.size() as u64;
    let used = job
        .data
        .iter()
        .filter(|(address, _)| *address >= TENSOR_AREA)
        .map(|(address, bytes)| u64::from(address - TENSOR_AREA) + bytes.len() as u64)
        .max()
        .unwrap_or(0)
        .next_multiple_of(u64::from(INPUT_PAGE));
    let args_len: u64 =
        args.iter().map(|arg| (arg_bytes(arg).len().max(1) as u64).next_multiple_of(64) + u64::from(RED_ZONE)).sum();
    let needed = used + args_len.next_multiple_of(u64::from(INPUT_PAGE)) + out_len.max(1);
    if needed > u64::from(TENSOR_AREA_SIZE) {
        return Err(CallError::DoesNotFit { needed, available: u64::from(TENSOR_AREA_SIZE) });
    }
    // Fits: every offset below is under TENSOR_AREA_SIZE, a u32.
    let mut offset = used as u32;
    let mut place = |mut bytes: Vec<u8>, align: u32| {
        offset = offset.next_multiple_of(align);
        // The loader places no empty file: an empty tensor still gets one byte.
        if bytes.is_empty() {
            bytes.push(0);
        }
        let padded = (bytes.len() as u32).next_multiple_of(64) + RED_ZONE;
        let placed = job.place(offset, bytes);
        offset += padded;
        placed
    };
    let describe = |what: String, dtype: Dtype, shape: &[usize], address: u64| {
        let dims: Vec<u32> = shape.iter().map(|&d| u32::try_from(d).unwrap_or(u32::MAX)).collect();
        ArgTensor::hbm_tensor(dtype, &dims, address)
            .map(|d| d.to_bytes())
            .map_err(|reason| CallError::Descriptor { what, reason })
    };
    let mut inputs = Vec::with_capacity(args.len());
    for (index, arg) in args.iter().enumerate() {
        let (framework, _) = place(arg_bytes(arg), 64);
        inputs.push(match arg {
            Arg::Tensor(array) => describe(format!("argument {index}"), array.dtype(), array.shape(), framework)?,
            Arg::Int(_) => ArgTensor::hbm_scalar(ScalarKind::Int, framework).to_bytes(),
            Arg::LongLong(_) => ArgTensor::hbm_scalar(ScalarKind::LongLong, framework).to_bytes(),
            Arg::Float(_) => ArgTensor::hbm_scalar(ScalarKind::Float, framework).to_bytes(),
        });
    }
    let element = fill.map_or_else(|| canary(dtype), <[u8]>::to_vec);
    let (framework, device) = place(element.repeat(out_len as usize / dtype.size()), INPUT_PAGE);
    let output = describe("the output".into(), dtype, &shape, framework)?;
    Ok(Staged { output, inputs, dump: OutputDump { address: device, len: out_len as u32 }, dtype, shape })
}

/// Bytes left free after each tensor: a small overrun of one lands in no tensor, where
/// the memory checks see it, rather than in the next one.
const RED_ZONE: u32 = 256;

/// The arguments' pages hold no other tensor: the host tier makes them read-only while
/// an op runs (without x86-64 protection keys, for every thread), and a store the
/// kernel makes into another tensor on such a page would open the page to every core
/// for one instruction, and a store into an input in that instant would go unseen.
/// The host's page size (x86-64: 4 KiB); the device's addresses are the same on both
/// tiers, so both place tensors alike.
const INPUT_PAGE: u32 = 4096;

/// The bytes an argument occupies in device memory.
fn arg_bytes(arg: &Arg) -> Vec<u8> {
    match arg {
        Arg::Tensor(array) => array.bytes().to_vec(),
        Arg::Int(v) => v.to_le_bytes().to_vec(),
        Arg::LongLong(v) => v.to_le_bytes().to_vec(),
        Arg::Float(v) => v.to_le_bytes().to_vec(),
    }
}

impl Library {
    /// The job of one op of `function` on `options.cores` cores: the library's images
    /// (none for the host tier, whose loader finds the library's entry points itself),
    /// the options in its header, and `args` and the output staged ([`stage`]; the
    /// output filled with `fill`, else the canary).
    pub(crate) fn op_job(
        &self,
        function: neuroncustomop_wire::FunctionId,
        args: &[Arg],
        output: Output,
        options: &Options,
        fill: Option<&[u8]>,
    ) -> Result<(Job, Staged), CallError> {
        // No images: the job's entry points are the device package's, read once
        // ([`Library::entry_points`]); the host tier's loader finds them itself.
        let images = neuroncustomop_machine::images::Images { name: self.name.clone(), cores: Vec::new() };
        let mut job = match options.target {
            Target::Device => {
                let package = self.package()?;
                let mut job = neuroncustomop_package::package::job_for(&images, &package.ucode_lib, options.cores)
                    .map_err(CallError::Job)?;
                job.header.libraries = self.entry_points(package)?;
                job
            }
            Target::Host => {
                neuroncustomop_package::package::job_for(&images, &self.table, options.cores).map_err(CallError::Job)?
            }
        };
        job.header.memcpy_method = options.memcpy as u32;
        job.header.set_max_instructions(options.max_instructions);
        let staged = stage_filled(&mut job, args, output, fill)?;
        let op = Op { function, output: Some(staged.output), inputs: staged.inputs.clone(), dump: staged.dump };
        job.push(&op).map_err(CallError::Job)?;
        Ok((job, staged))
    }
}

impl Library {
    /// The entry points the loader calls in each of `package`'s images (this library's
    /// device package), read from the images the first time and kept: reading them is
    /// most of a warm call's host time for a C++ library, whose images are megabytes.
    fn entry_points(&self, package: &Package) -> Result<[LibrarySymbols; CORES], CallError> {
        if let Some(symbols) = self.entry_points.get() {
            return Ok(*symbols);
        }
        let symbols = library_symbols(&package.images).map_err(CallError::Job)?;
        Ok(*self.entry_points.get_or_init(|| symbols))
    }
}

/// The tensors of a job staged with `args` arguments, by name, in the order they were
/// placed (the arguments, then the output): name, address and length, as the host
/// tier's sanitizer reports are explained in.
pub(super) fn tensor_names(job: &Job, args: usize) -> Vec<(String, u32, u32)> {
    job.data
        .iter()
        .enumerate()
        .map(|(index, (address, bytes))| {
            let name = if index < args { format!("argument {index}") } else { "the output".into() };
            (name, *address, bytes.len() as u32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::Array;
    use neuroncustomop_machine::images::Images;

    /// The device pages `[start, start + len)` spans.
    fn pages(start: u32, len: usize) -> std::ops::Range<u32> {
        start / INPUT_PAGE..(start + len.max(1) as u32).div_ceil(INPUT_PAGE)
    }

    /// The host tier without protection keys opens an input's page to every core while
    /// one core's store into another tensor on it goes through: a small output after a
    /// small input must not share its page (a store into the input at that moment was
    /// missed in 3 of 20 runs of `host_tier_c_store_into_an_input_…` when it did).
    #[test]
    fn no_tensor_shares_a_page_with_an_input() {
        let mut job =
            Job::with_symbols(library_symbols(&Images { name: "t".into(), cores: Vec::new() }).unwrap(), 8).unwrap();
        // What an earlier op of the job left in the tensor area.
        job.place(0, vec![7; 100]);
        let x = Array::from_vec(vec![128], vec![0f32; 128]).unwrap();
        let args = [Arg::Tensor(x.clone()), Arg::Float(0.5), Arg::Tensor(x)];
        let staged = stage(&mut job, &args, Output::Like(0)).unwrap();
        let inputs: Vec<(u32, usize)> =
            job.data.iter().skip(1).take(args.len()).map(|(address, bytes)| (*address, bytes.len())).collect();
        let output = pages(staged.dump.address, staged.dump.len as usize);
        let earlier = pages(job.data[0].0, job.data[0].1.len());
        for (start, len) in inputs {
            let input = pages(start, len);
            for other in [&output, &earlier] {
                assert!(input.end <= other.start || other.end <= input.start, "{input:?} and {other:?}");
            }
        }
    }
}
