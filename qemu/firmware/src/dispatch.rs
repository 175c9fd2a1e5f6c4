//! What both loaders do to hand one op to a library before its kernel runs: the
//! simulated device's (`qemu/firmware/src/loader.rs`) and the host tier's
//! (`qemu/hosttier/src/loader.rs`, which includes this file through a symbolic link,
//! `qemu/hosttier/src/dispatch.rs`: the firmware is an Xtensa-only workspace, so it is
//! no crate the host tier can depend on). `no_std`, allocation-free, and nothing of
//! either machine in it.
//!
//! The rest of the two loaders stays apart on purpose. Their callbacks
//! (`get_data_scratch`, `register_ext_isa_fn`, ...), `entry_func`'s handoff block, the
//! stdout drain and the output dump are alike in shape, but each is the machine's own:
//! the device's state is per-image statics on bare metal, reported through semihosting
//! as each line is made; the host tier's is thread-locals of one process, gathered into
//! answers on channels; and the block's callbacks are those very functions. Sharing
//! them would take a trait over both machines for a few lines each.

use neuroncustomop::translate::{self, TranslateRecord};
use neuroncustomop::wrapper_api::ArgTensor;
use neuroncustomop_wire::checks::{Region, RegionKind};
use neuroncustomop_wire::job::{JobHeader, NEVER, TRANSLATE_REGIONS};
use neuroncustomop_wire::{DecodedOp, MAX_INPUTS};

/// `customop_set_invocation`.
pub type SetInvocationFn = unsafe extern "C" fn(*const ArgTensor, u32, *mut ArgTensor) -> u32;
/// `neuron_translate_configure`.
pub type ConfigureFn = unsafe extern "C" fn(*const u8, u32) -> i32;
/// `neuron_set_memcpy_method`.
pub type MethodFn = unsafe extern "C" fn(u32) -> i32;

/// The library's entry points an op's hand-off calls.
#[derive(Clone, Copy)]
pub struct Dispatch {
    /// `customop_set_invocation`.
    pub set_invocation: SetInvocationFn,
    /// `neuron_translate_configure`.
    pub translate_configure: ConfigureFn,
    /// `neuron_set_memcpy_method`.
    pub set_memcpy_method: MethodFn,
}

/// One op's descriptors, as its kernel's runtime reads them from the hand-off until the
/// kernel has ended: the loader keeps them (on its stack) that long.
pub struct OpArgs {
    inputs: [ArgTensor; MAX_INPUTS],
    count: usize,
    /// The output descriptor the kernel's return overwrites (zeroed when the op has none).
    pub output: ArgTensor,
}

impl OpArgs {
    /// The descriptors of `op`'s words.
    pub fn of(op: &DecodedOp) -> OpArgs {
        let mut inputs = [ArgTensor::ZEROED; MAX_INPUTS];
        for (slot, bytes) in inputs.iter_mut().zip(op.inputs()) {
            *slot = ArgTensor::from_bytes(bytes);
        }
        let output = op.output().map_or(ArgTensor::ZEROED, ArgTensor::from_bytes);
        OpArgs { inputs, count: op.inputs().len().min(MAX_INPUTS), output }
    }

    /// The input descriptors, in argument order.
    pub fn inputs(&self) -> &[ArgTensor] {
        &self.inputs[..self.count]
    }
}

impl Dispatch {
    /// Configures `job`'s translate windows, hands `args` to the library
    /// (`customop_set_invocation`), and selects the job's memcpy method when it names
    /// one (the runtime refuses an invalid one and keeps its own).
    ///
    /// # Safety
    /// The entry points are a loaded library's, of these signatures; `args` stays in
    /// place and is not otherwise touched until the kernel has ended.
    pub unsafe fn hand_off(&self, job: &JobHeader, args: &mut OpArgs) {
        let records = job.translate.as_flattened();
        // SAFETY: the records and descriptors are valid for the calls, and the
        // descriptors outlive the kernel's run (this function's contract); the count is
        // clamped to the records there are.
        unsafe {
            (self.translate_configure)(records.as_ptr(), job.translate_count.min(TRANSLATE_REGIONS as u32));
            (self.set_invocation)(args.inputs.as_ptr(), args.count as u32, &mut args.output);
            if job.memcpy_method != NEVER {
                (self.set_memcpy_method)(job.memcpy_method);
            }
        }
    }
}

/// The op's output and inputs as the memory checks name them ([`Region`]: kind, index,
/// device address, dtype, shape), each handed to `each`: their addresses translated
/// through `job`'s windows by the calling loader's own copy of the runtime (its own
/// TLB, configured here), as the kernel's runtime translates them. A job whose windows
/// it refuses has no tensor, as the kernel's own setup refuses them; so has a
/// descriptor that does not validate or translate.
pub fn tensor_regions(job: &JobHeader, inputs: &[ArgTensor], output: Option<&ArgTensor>, mut each: impl FnMut(Region)) {
    let mut records = [TranslateRecord::default(); TRANSLATE_REGIONS];
    for (record, bytes) in records.iter_mut().zip(&job.translate) {
        // SAFETY: 32 bytes read as the runtime's 32-byte little-endian record, which
        // has no invalid bit patterns.
        *record = unsafe { core::ptr::read_unaligned(bytes.as_ptr().cast::<TranslateRecord>()) };
    }
    let count = (job.translate_count as usize).min(TRANSLATE_REGIONS);
    if translate::configure(&records[..count]).is_err() {
        return;
    }
    let tensors = output
        .map(|o| (RegionKind::Output, 0, o))
        .into_iter()
        .chain(inputs.iter().enumerate().map(|(i, input)| (RegionKind::Input, i as u8, input)));
    for (kind, index, tensor) in tensors {
        let Ok(desc) = tensor.validate() else { continue };
        let len = desc.byte_len() as usize;
        let Ok(start) = translate::translate_range(desc.address(), len) else { continue };
        let mut region = Region::new(kind, index, start as u32, len as u32);
        region.dtype = desc.dtype() as u8;
        region.rank = desc.rank() as u8;
        region.shape[..desc.shape().len()].copy_from_slice(desc.shape());
        each(region);
    }
}
