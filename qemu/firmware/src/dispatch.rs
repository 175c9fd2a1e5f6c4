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

use neuroncustomop::wrapper_api::ArgTensor;
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
