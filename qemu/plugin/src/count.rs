//! The exact instruction count of every kernel run, per core.
//!
//! Each translated block, when it starts, adds its instruction count to its vCPU's own
//! counter and stores its identity in another of the vCPU's words: two inline ops of
//! QEMU's per-vCPU scoreboard per block (generated code, no call, no lock, no shared
//! cache line), where one per instruction cost up to 2.4x an uncounted run
//! (docs/PERFORMANCE.md, "Counting with the TCG plugin"). A block that stops before its
//! end has counted instructions that did not start; they are taken back where that is
//! seen:
//! - **an exception the core returns from** (a window overflow at a callee's `entry`,
//!   an underflow at `retw`, an `ICOUNT` wrap): the excepting instruction runs again
//!   when its handler returns (`rfwo`, `rfwu`, `rfi`), as the first of a new block. A
//!   callback at the start of each of these vectors (`vector=PC`: the window vectors
//!   and the debug vector) notes the block the vCPU was in; the return instruction's
//!   callback arms a per-vCPU word, and the next block to start (a conditional
//!   callback, taken only when armed) is the excepting instruction's: the noted
//!   block's instructions from that address on are taken back, the excepting one
//!   included, which `ICOUNT` counts only when it completes. (A counter per instruction
//!   counted it twice: `qemu/tests/counting.rs`'s `deep` showed 3,940 too many for as
//!   many window exceptions; the profile's per-PC counters take it back on
//!   [`crate::Module::rerun`], which this module raises for every module there.) QEMU 10.0.2
//!   shows a plugin none of the xtensa registers (`qemu_plugin_get_registers` lists
//!   none), so `EPC1` cannot be read at the vector; API v5's discontinuity callback
//!   (QEMU 10.1) would give the address directly.
//! - **an exception the core does not return from** (a fault, a stack overflow, the
//!   instruction budget): the op's count is already not exact (`exact=no`: it runs to
//!   the loader's resumption); it may also hold the rest of the faulting block, a few
//!   instructions. A level-1 interrupt (the end of a `waiti` sleep) is taken between
//!   blocks: nothing to take back.
//! - **`waiti`**: QEMU leaves the block there (the core halts, or takes the interrupt
//!   already pending); the instructions after it run in a new block once it wakes. Nor
//!   does `ICOUNT` count the `waiti` itself: QEMU's `waiti` helper leaves the generated
//!   code before the instruction's `ICOUNT` update. A callback on the `waiti` takes
//!   back the `waiti` and what follows it, and tells every module that the `waiti` did
//!   not complete ([`crate::Module::rerun`]). (Counted, a kernel's count was one more
//!   than `ICOUNT`'s for each sleep that slept: fault_probe's `sleeps` counted 696
//!   against 695 in a run where one of its three sleeps was not skipped.)
//! - **the op markers**: the count at a marker is the counter less its block's
//!   instructions from the marker on, so both ends leave the marker out alike.
//!
//! At an op's begin the (corrected) counter is noted; at its end the difference is the
//! op's count: a `Line::Count`.
//!
//! Between the two markers lie the kernel and a fixed number of the loader's own
//! instructions, so a count is the firmware's `ICOUNT` figure plus a constant
//! (`qemu/machine/src/plugin.rs` on the host takes it off). The debug-level code that
//! `ICOUNT` does not count is not counted here either ([`Firmware::is_kernel`]), and an
//! instruction an exception interrupts, which runs again after the handler, counts
//! once, so the two counts agree however often `ICOUNT` wrapped.
//! `qemu/tests/counting.rs` checks them equal, also for kernels whose blocks window
//! exceptions and interrupts cut short.

use crate::{Arguments, Events, Firmware, Lines, Module};
use neuroncustomop_wire::plugin::{Argument, Line};
use qemu_plugin::sys::{qemu_plugin_scoreboard, qemu_plugin_scoreboard_new};
use qemu_plugin::{
    CallbackFlags, PluginCondition, PluginOp, PluginU64, TranslationBlock, VCPUIndex,
    qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu, qemu_plugin_u64_get, qemu_plugin_u64_set,
};
use std::collections::{HashMap, HashSet};
use std::mem::offset_of;
use std::sync::{Arc, Mutex, RwLock};

/// One vCPU's words in the scoreboard.
#[repr(C)]
struct PerCore {
    /// Instructions this vCPU started since boot, each block counted whole.
    executed: u64,
    /// The exact count (`executed` corrected) when its current op began.
    started: u64,
    /// The identity of the block it started last: its index in [`Blocks::list`].
    block: u64,
    /// 1 when a handler has just returned to an excepting instruction: the next block
    /// to start is that instruction's.
    armed: u64,
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

    pub(crate) fn set(self, vcpu: VCPUIndex, value: u64) {
        qemu_plugin_u64_set(self.0, vcpu, value);
    }
}

/// What one translated block adds to the count, instruction by instruction.
#[derive(PartialEq, Eq, Hash)]
struct Block {
    /// Each instruction's address and what it adds: 1 for a kernel's instruction, 0 for
    /// the firmware's debug-level code.
    steps: Box<[(u64, u64)]>,
    /// The index of the op marker among the steps, if the block holds one.
    marker: Option<usize>,
}

impl Block {
    /// What the steps from `index` on add.
    fn since(&self, index: usize) -> u64 {
        self.steps.iter().skip(index).fold(0, |sum, &(_, add)| sum.wrapping_add(add))
    }

    /// What the steps from the instruction at `pc` on add: 0 if `pc` is none of the block's.
    fn since_pc(&self, pc: u64) -> u64 {
        self.steps.iter().position(|&(at, _)| at == pc).map_or(0, |index| self.since(index))
    }
}

/// Every block translated so far, each once: a block's identity is its index in `list`.
/// Only new translations write (a lock then is no cost that matters); the callbacks at
/// vectors and markers read.
#[derive(Default)]
struct Blocks {
    ids: HashMap<Arc<Block>, u64>,
    list: Vec<Arc<Block>>,
}

impl Blocks {
    /// `block`'s identity, noting it if it is new.
    fn id(&mut self, block: Block) -> u64 {
        if let Some(&id) = self.ids.get(&block) {
            return id;
        }
        let block = Arc::new(block);
        let id = self.list.len() as u64;
        self.list.push(Arc::clone(&block));
        self.ids.insert(block, id);
        id
    }
}

/// The instructions that return from the exceptions the vectors note: to the
/// excepting instruction, which runs again (the window handlers' `rfwo` and `rfwu`, the
/// `ICOUNT` wrap handler's `rfi 6`). The firmware enables only level-1 interrupts, whose
/// handler returns with `rfe`, so every `rfi` returns from a debug exception.
const RETURNS: [&str; 3] = ["rfwo", "rfwu", "rfi"];

/// The most vCPUs whose cut blocks are corrected (the device has 9).
const MAX_VCPUS: usize = 64;

/// One vCPU's exceptions in flight.
#[derive(Default)]
struct InFlight {
    /// The block each exception in flight interrupted, innermost last (an `ICOUNT`
    /// wrap can interrupt a window handler).
    interrupted: Vec<u64>,
    /// The block a handler that has just returned had interrupted.
    returned: Option<u64>,
}

/// What the counting callbacks share.
struct State {
    executed: Entry,
    started: Entry,
    block: Entry,
    armed: Entry,
    blocks: RwLock<Blocks>,
    /// The vectors whose exceptions return to the excepting instruction, by address.
    vectors: HashSet<u64>,
    /// Per vCPU (up to [`MAX_VCPUS`]).
    in_flight: Vec<Mutex<InFlight>>,
    /// Every module, told of each instruction that runs again.
    events: Arc<Events>,
}

impl State {
    /// The block vCPU `vcpu` started last.
    fn current(&self, vcpu: VCPUIndex) -> Option<Arc<Block>> {
        // A poisoned lock only means a callback panicked while holding it; the list is whole.
        let blocks = self.blocks.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        blocks.list.get(self.block.get(vcpu) as usize).cloned()
    }

    fn in_flight(&self, vcpu: VCPUIndex) -> Option<std::sync::MutexGuard<'_, InFlight>> {
        let slot = self.in_flight.get(vcpu as usize)?;
        Some(slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// At a vector, before its block's own inline ops: notes the block it interrupted.
    fn exception(&self, vcpu: VCPUIndex) {
        let block = self.block.get(vcpu);
        if let Some(mut in_flight) = self.in_flight(vcpu) {
            in_flight.interrupted.push(block);
        }
    }

    /// At a return to the excepting instruction: arms the next block's correction.
    fn returning(&self, vcpu: VCPUIndex) {
        if let Some(mut in_flight) = self.in_flight(vcpu) {
            in_flight.returned = in_flight.interrupted.pop();
            if in_flight.returned.is_some() {
                self.armed.set(vcpu, 1);
            }
        }
    }

    /// The first block after a return starts at the excepting instruction, `pc`: takes
    /// back the interrupted block's instructions from it on, and tells every module.
    fn resumed(&self, vcpu: VCPUIndex, pc: u64) {
        self.armed.set(vcpu, 0);
        let Some(id) = self.in_flight(vcpu).and_then(|mut in_flight| in_flight.returned.take()) else { return };
        {
            let blocks = self.blocks.read().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(block) = blocks.list.get(id as usize) {
                self.executed.set(vcpu, self.executed.get(vcpu).wrapping_sub(block.since_pc(pc)));
            }
        }
        self.events.rerun(vcpu, pc);
    }

    /// The exact count of vCPU `vcpu` before the marker of the block it is in.
    fn at_marker(&self, vcpu: VCPUIndex) -> u64 {
        let rest = self.current(vcpu).and_then(|block| Some(block.since(block.marker?))).unwrap_or(0);
        self.executed.get(vcpu).wrapping_sub(rest)
    }
}

/// The counting module.
pub(crate) struct Count {
    state: Arc<State>,
}

impl Count {
    /// Allocates the scoreboard; takes the vectors whose exceptions return to the
    /// excepting instruction (`vector=PC`).
    pub(crate) fn install(arguments: &mut Arguments<'_>) -> Result<Box<dyn Module>, String> {
        let vectors = arguments
            .take(|argument| match argument {
                Argument::Vector(pc) => Some(u64::from(*pc)),
                _ => None,
            })
            .into_iter()
            .collect();
        // SAFETY: allocates QEMU's per-vCPU array of `PerCore`, zeroed; it is never
        // freed, as `Entry` relies on.
        let board: *mut qemu_plugin_scoreboard = unsafe { qemu_plugin_scoreboard_new(size_of::<PerCore>()) };
        let entry = |offset| Entry(PluginU64 { score: board, offset });
        Ok(Box::new(Self {
            state: Arc::new(State {
                executed: entry(offset_of!(PerCore, executed)),
                started: entry(offset_of!(PerCore, started)),
                block: entry(offset_of!(PerCore, block)),
                armed: entry(offset_of!(PerCore, armed)),
                blocks: RwLock::default(),
                vectors,
                in_flight: (0..MAX_VCPUS).map(|_| Mutex::default()).collect(),
                events: arguments.events(),
            }),
        }))
    }
}

impl Module for Count {
    fn translate(&self, tb: &TranslationBlock<'_>, firmware: &Firmware) {
        let steps: Box<[(u64, u64)]> = tb
            .instructions()
            .map(|insn| {
                let pc = insn.vaddr();
                (pc, u64::from(firmware.is_kernel(pc)))
            })
            .collect();
        let marker = steps.iter().position(|&(pc, _)| firmware.is_marker(pc));
        let block = Block { steps, marker };
        let total = block.since(0);
        let first = block.steps.first().map_or(0, |&(pc, _)| pc);
        // At a vector, the callback reads the interrupted block's identity: it runs
        // before this block's own store (QEMU runs a block's callbacks and inline ops
        // in the order registered).
        if self.state.vectors.contains(&first) {
            let state = Arc::clone(&self.state);
            tb.register_execute_callback_flags(
                move |vcpu| state.exception(vcpu),
                CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
            );
        }
        let state = Arc::clone(&self.state);
        tb.register_conditional_execute_callback_flags(
            move |vcpu| state.resumed(vcpu, first),
            CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
            PluginCondition::QEMU_PLUGIN_COND_NE,
            self.state.armed.0,
            0,
        );
        for (index, insn) in tb.instructions().enumerate() {
            let text = insn.disas().unwrap_or_default();
            let mnemonic = text.split_whitespace().next().unwrap_or_default();
            if RETURNS.contains(&mnemonic) {
                let state = Arc::clone(&self.state);
                insn.register_execute_callback_flags(
                    move |vcpu| state.returning(vcpu),
                    CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
                );
            }
            // QEMU leaves a block at `waiti` (the core halts, or takes its interrupt):
            // what follows runs in a new block after the wake-up, and `ICOUNT` never
            // counts the `waiti` (its helper leaves before the update).
            let rest = block.since(index);
            if mnemonic == "waiti" && rest != 0 {
                let (state, pc) = (Arc::clone(&self.state), insn.vaddr());
                insn.register_execute_callback_flags(
                    move |vcpu| {
                        state.executed.set(vcpu, state.executed.get(vcpu).wrapping_sub(rest));
                        state.events.rerun(vcpu, pc);
                    },
                    CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
                );
            }
        }
        let id = self.state.blocks.write().unwrap_or_else(|poisoned| poisoned.into_inner()).id(block);
        let state = &self.state;
        if total != 0 {
            qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(
                tb.clone(),
                PluginOp::QEMU_PLUGIN_INLINE_ADD_U64,
                state.executed.0,
                total,
            );
        }
        qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(
            tb.clone(),
            PluginOp::QEMU_PLUGIN_INLINE_STORE_U64,
            state.block.0,
            id,
        );
    }

    fn op_begin(&self, vcpu: VCPUIndex) {
        // A handler that never returned (a fault, the budget) left its block behind.
        if let Some(mut in_flight) = self.state.in_flight(vcpu) {
            *in_flight = InFlight::default();
        }
        self.state.armed.set(vcpu, 0);
        self.state.started.set(vcpu, self.state.at_marker(vcpu));
    }

    fn op_end(&self, vcpu: VCPUIndex, lines: &mut Lines) {
        let count = self.state.at_marker(vcpu).wrapping_sub(self.state.started.get(vcpu));
        lines.push(Line::Count { core: lines.core(), instructions: count });
    }
}
