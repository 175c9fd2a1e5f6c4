//! The exact instruction count of every kernel run, per core.
//!
//! Every kernel instruction adds 1 to its vCPU's own counter inline (QEMU's per-vCPU
//! scoreboard: generated code, no call, no lock, no shared cache line). At an op's
//! begin the counter is noted; at its end the difference is the op's count:
//! `COUNT core=<vCPU> instructions=<n>`.
//!
//! Between the two markers lie the kernel and a fixed number of the loader's own
//! instructions, so a count is the firmware's `ICOUNT` figure plus a constant
//! (`qemu/machine/src/plugin.rs` on the host takes it off). The debug-level code that
//! `ICOUNT` does not count is not counted here either ([`Firmware::is_kernel`]), and an
//! instruction an `ICOUNT` wrap interrupts, which runs again after the handler, counts
//! once ([`Firmware::reruns`]), so the two counts agree however often `ICOUNT` wrapped.

use crate::{Arguments, Firmware, Lines, Module};
use qemu_plugin::sys::{qemu_plugin_scoreboard, qemu_plugin_scoreboard_new};
use qemu_plugin::{
    PluginOp, PluginU64, TranslationBlock, VCPUIndex, qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu,
    qemu_plugin_u64_get, qemu_plugin_u64_set,
};
use std::mem::offset_of;

/// One vCPU's words in the scoreboard.
#[repr(C)]
struct PerCore {
    /// Instructions this vCPU executed since boot.
    executed: u64,
    /// `executed` when its current op began.
    started: u64,
}

/// A [`PluginU64`] that callbacks on any vCPU thread may hold (the profile module
/// keeps its own counter in one too).
#[derive(Clone, Copy)]
pub(crate) struct Entry(pub(crate) PluginU64);

// SAFETY: the scoreboard is never freed (it lives as long as QEMU), and the
// qemu_plugin_u64_* calls are made only from a vCPU's own callbacks, for its own index,
// so no two threads touch the same word.
unsafe impl Send for Entry {}
// SAFETY: as for Send.
unsafe impl Sync for Entry {}

impl Entry {
    pub(crate) fn get(self, vcpu: VCPUIndex) -> u64 {
        qemu_plugin_u64_get(self.0, vcpu)
    }

    fn set(self, vcpu: VCPUIndex, value: u64) {
        qemu_plugin_u64_set(self.0, vcpu, value);
    }
}

/// The counting module.
pub(crate) struct Count {
    executed: Entry,
    started: Entry,
}

impl Count {
    /// Allocates the scoreboard; takes no arguments.
    pub(crate) fn install(_: &mut Arguments) -> Result<Box<dyn Module>, String> {
        // SAFETY: allocates QEMU's per-vCPU array of `PerCore`, zeroed; it is never
        // freed, as `Entry` relies on.
        let board: *mut qemu_plugin_scoreboard = unsafe { qemu_plugin_scoreboard_new(size_of::<PerCore>()) };
        let entry = |offset| Entry(PluginU64 { score: board, offset });
        Ok(Box::new(Self {
            executed: entry(offset_of!(PerCore, executed)),
            started: entry(offset_of!(PerCore, started)),
        }))
    }
}

impl Module for Count {
    fn translate(&self, tb: &TranslationBlock<'_>, firmware: &Firmware) {
        for insn in tb.instructions() {
            let pc = insn.vaddr();
            // Adding 2^64 - 1 is taking one away (the counter wraps).
            let add = if firmware.reruns(pc) {
                u64::MAX
            } else if firmware.is_kernel(pc) {
                1
            } else {
                continue;
            };
            qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
                insn,
                PluginOp::QEMU_PLUGIN_INLINE_ADD_U64,
                self.executed.0,
                add,
            );
        }
    }

    // The markers' callbacks run before the marker instruction's own inline add, so
    // both ends leave their instruction out alike.
    fn op_begin(&self, vcpu: VCPUIndex) {
        self.started.set(vcpu, self.executed.get(vcpu));
    }

    fn op_end(&self, vcpu: VCPUIndex, lines: &mut Lines) {
        let count = self.executed.get(vcpu) - self.started.get(vcpu);
        lines.line("COUNT", format_args!("instructions={count}"));
    }
}
