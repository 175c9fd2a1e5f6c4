//! The profile of each kernel run (argument `profile=1`): where a core's instructions
//! went, by PC and by call path, which memory they touched, and a timeline. Without
//! `profile=1` the module instruments nothing. Its other arguments: `dma=HEX`, the
//! SoC's DMA queue window (for the DMA bytes), `tensors=LO-HI`, the tensor area (for
//! the output elements each core wrote), `code=LO-HI` (any number): the code to
//! profile, the library's and the loaders' images (the DMA engine's core runs
//! elsewhere and is left at full speed: a slowed engine makes the cores' DMA waits
//! time out), and `mark=PC` (any number): where the author's range markers take
//! effect (the host reads them from the library's `.ncop_ranges` section).
//!
//! Counting stays cheap; profiling is asked for (`ncop run --profile`) and costs more:
//!
//! | what | how | exact? |
//! |---|---|---|
//! | instructions per PC | one per-vCPU inline counter per instruction (QEMU's scoreboard, 8-byte slots in chunks of [`CHUNK`]), and one more for the core's running total | yes: the same instructions as the count |
//! | instructions per call path | a shadow call stack per vCPU (`calls.rs`): a call instruction's callback notes its return address, the next block's callback pushes the callee; a block starting at a frame's return address pops to it; at each push and pop the core's count since the last one goes to the path on top | yes: every instruction lies between two such events |
//! | loads and stores | a memory callback per access, counted per 16 MiB page of the address, and per PC and page, per vCPU | yes |
//! | DMA bytes | the `len` the core stores into its m2s queue's descriptors (`dma.rs`) | yes |
//! | the timeline | the host's monotonic clock at the op's start and end, each `waiti` and its wake, each DMA transfer queued | wall time of the simulation, not of the device |
//! | each call (a frame) | the shadow call stack's push and pop, at the core's instruction count | yes, down to the depth kept (below) |
//! | range markers | a callback on each `mark=PC` instruction, at the core's instruction count | yes |
//!
//! The call stack is the real calls only (`call0`/`call4`/`call8`/`call12` and their
//! `callx` forms); inlined functions show in the per-PC figures, which the host folds
//! to functions through the images' DWARF. A window overflow or underflow handler runs
//! inside the frame that caused it. An instruction that an exception interrupts (a
//! window overflow at `entry`, an underflow at `retw`, an ICOUNT wrap) starts twice:
//! once before the exception, again after its handler returns. Its counter and the
//! running total take the first start back when the count module says it runs again
//! ([`Module::rerun`]), so a core's per-PC figures add up to its count (plus the
//! loader's op markers), as `ICOUNT` counts.
//!
//! # Output
//!
//! At an op's end, for that core (`neuroncustomop_wire::plugin::Line`, [`Lines::push`]):
//! - `Line::Profile`: each PC it ran since its start PC, with its count and mnemonic;
//! - `Line::Stack`: instructions run with that call path on top, outermost first; the
//!   first frame `0` is the loader, which called the kernel;
//! - `Line::Memory`: accesses to addresses `HH000000..+16 MiB`, per page `HH`;
//! - `Line::Access`: the same, of one instruction;
//! - `Line::Dma`: the bytes and transfers it queued;
//! - `Line::Wrote`: the byte ranges it stored to in the tensor area, itself or by the
//!   DMA transfers it queued (their s2m descriptors' destinations) (`tensors=LO-HI`),
//!   merged, at most [`MAX_RANGES`] (else none): the host intersects them with the op's
//!   output to count the elements each core wrote;
//! - `Line::Event`: the op, each sleep, each DMA transfer: `ns` from the plugin's
//!   start, `at` the core's instructions since its start PC; at most [`MAX_EVENTS`]
//!   (then `Line::Events` counts those dropped);
//! - `Line::Frame`: each call, its entry and length in the core's instructions; at
//!   most [`MAX_FRAMES`]: past it the deepest level kept is dropped whole, so the top
//!   frames stay complete (`Line::Frames` says the depth kept and the calls dropped);
//! - `Line::Mark`: each range marker the core passed, in order, a marker reached again
//!   with no other between written once (at most [`MAX_EVENTS`], counted with the
//!   events past it).

use crate::calls::{CallStack, Step, is_call};
use crate::count::Entry;
use crate::dma::{Descriptors, Side};
use crate::{Arguments, Firmware, Lines, Module};
use neuroncustomop_wire::plugin::{Argument, EventKind, Line, List};
use qemu_plugin::sys::{qemu_plugin_scoreboard, qemu_plugin_scoreboard_new};
use qemu_plugin::{
    CallbackFlags, Instruction, MemRW, MemValue, PluginOp, PluginU64, TranslationBlock, VCPUIndex,
    qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu, qemu_plugin_u64_get, qemu_plugin_u64_set,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// PC slots per scoreboard: 8 KiB per vCPU each.
const CHUNK: usize = 1024;
/// vCPUs profiled: the board's 8 library cores and the DMA engine's, with room.
const MAX_VCPUS: usize = 16;
/// Timeline events kept per core and op; past it they are dropped (and counted).
pub const MAX_EVENTS: usize = 100_000;
/// Calls kept per core and op ([`Line::Frame`]); past it the deepest level goes.
pub const MAX_FRAMES: usize = 50_000;
/// Written ranges kept per core and op before they are merged, and the most reported.
const MAX_RANGES: usize = 1 << 16;
/// The queues' window: room for far more cores than the board's.
const DMA_QUEUE_WINDOW: u64 = 0x10_0000;

/// The per-PC counters: a slot per distinct PC, in scoreboards of [`CHUNK`] slots.
#[derive(Default)]
struct Slots {
    index: HashMap<u64, usize>,
    /// Each slot's PC and mnemonic.
    pcs: Vec<(u64, String)>,
    boards: Vec<Board>,
}

/// A scoreboard of [`CHUNK`] `u64` slots per vCPU.
#[derive(Clone, Copy)]
struct Board(*mut qemu_plugin_scoreboard);

// SAFETY: a board is never freed (it lives as long as QEMU); each vCPU's words are
// touched by inline ops and by that vCPU's own callbacks only.
unsafe impl Send for Board {}
// SAFETY: as for Send.
unsafe impl Sync for Board {}

impl Slots {
    fn entry(&self, slot: usize) -> PluginU64 {
        PluginU64 { score: self.boards[slot / CHUNK].0, offset: (slot % CHUNK) * size_of::<u64>() }
    }

    /// The slot of `pc`, made on first sight.
    fn slot(&mut self, pc: u64, mnemonic: impl FnOnce() -> String) -> usize {
        if let Some(&slot) = self.index.get(&pc) {
            return slot;
        }
        let slot = self.pcs.len();
        if slot.is_multiple_of(CHUNK) {
            // SAFETY: allocates QEMU's zeroed per-vCPU array; never freed, as `Board` relies on.
            self.boards.push(Board(unsafe { qemu_plugin_scoreboard_new(CHUNK * size_of::<u64>()) }));
        }
        self.pcs.push((pc, mnemonic()));
        self.index.insert(pc, slot);
        slot
    }
}

/// One node of a core's call tree: a function entry under its caller.
struct Node {
    pc: u64,
    parent: usize,
    /// Instructions run with this node on top of the stack.
    count: u64,
}

/// One timeline event.
struct Event {
    kind: EventKind,
    ns: u64,
    dur: u64,
    bytes: u64,
    at: u64,
}

/// One call, closed: its entry, depth, and instructions at entry and in all.
struct Frame {
    pc: u32,
    depth: u32,
    at: u64,
    len: u64,
}

/// What one vCPU gathered since its start PC.
#[derive(Default)]
struct Core {
    active: bool,
    /// `executed` at the start PC and at the last stack event.
    started: u64,
    last: u64,
    started_ns: u64,
    nodes: Vec<Node>,
    children: HashMap<(usize, u64), usize>,
    /// The shadow call stack.
    calls: CallStack,
    /// The node of each of its frames, the loader's root at the bottom.
    path: Vec<usize>,
    /// Each frame above the root: its entry and the instructions run before it.
    open: Vec<(u32, u64)>,
    /// The calls that returned, down to `frame_depth`.
    frames: Vec<Frame>,
    /// The deepest call kept (lowered when [`MAX_FRAMES`] is passed).
    frame_depth: u32,
    /// Calls not kept: deeper than `frame_depth`.
    frames_dropped: u64,
    /// Each range marker passed: its PC and the instructions run before it.
    marks: Vec<(u32, u64)>,
    /// Loads and stores per 16 MiB page.
    memory: Vec<[u64; 2]>,
    /// Loads and stores per PC and 16 MiB page.
    accesses: HashMap<(u64, u8), [u64; 2]>,
    dma_bytes: u64,
    dma_transfers: u64,
    /// A `waiti`'s clock and count, until the core runs again.
    waiting: Option<(u64, u64)>,
    events: Vec<Event>,
    dropped: u64,
    /// Byte ranges stored to in the tensor area, the last one growing.
    written: Vec<(u64, u64)>,
    /// More ranges than [`MAX_RANGES`] even merged: no longer tracked.
    written_overflow: bool,
    /// The DMA descriptors the core is writing: a transfer writes the tensor area
    /// for the core.
    descriptors: Descriptors,
}

impl Core {
    fn reset(&mut self, executed: u64, ns: u64) {
        *self = Core {
            active: true,
            started: executed,
            last: executed,
            started_ns: ns,
            nodes: vec![Node { pc: 0, parent: 0, count: 0 }],
            path: vec![0],
            frame_depth: u32::MAX,
            memory: vec![[0; 2]; 256],
            ..Core::default()
        };
    }

    /// Gives the instructions since the last event to the path on top of the stack.
    fn attribute(&mut self, executed: u64) {
        let top = self.path.last().copied().unwrap_or(0);
        self.nodes[top].count += executed - self.last;
        self.last = executed;
    }

    fn event(&mut self, event: Event) {
        if self.events.len() < MAX_EVENTS {
            self.events.push(event);
        } else {
            self.dropped += 1;
        }
    }

    /// A block starting at `pc`: a callee entered, or a return to a frame's caller.
    fn block(&mut self, pc: u64, executed: u64, ns: u64) {
        if let Some((since, at)) = self.waiting.take() {
            self.event(Event { kind: EventKind::Wait, ns: since, dur: ns - since, bytes: 0, at });
        }
        match self.calls.block(pc) {
            Step::Entered => {
                self.attribute(executed);
                let parent = self.path.last().copied().unwrap_or(0);
                let next = self.nodes.len();
                let node = *self.children.entry((parent, pc)).or_insert(next);
                if node == next {
                    self.nodes.push(Node { pc, parent, count: 0 });
                }
                self.path.push(node);
                self.open.push((pc as u32, executed - self.started));
            }
            Step::Returned => {
                self.attribute(executed);
                let frames = self.calls.frames().len();
                self.path.truncate(frames + 1);
                self.close_frames(frames, executed);
            }
            Step::Within => {}
        }
    }

    /// The frames above the first `keep` have returned (or the op ended) at `executed`.
    fn close_frames(&mut self, keep: usize, executed: u64) {
        let now = executed - self.started;
        while self.open.len() > keep {
            let Some((pc, at)) = self.open.pop() else { break };
            let depth = self.open.len() as u32 + 1;
            if depth > self.frame_depth {
                self.frames_dropped += 1;
                continue;
            }
            self.frames.push(Frame { pc, depth, at, len: now - at });
            if self.frames.len() > MAX_FRAMES {
                // Too many calls: the deepest level goes whole, so the top frames stay
                // complete; at depth 1 (the loader's calls) the newest go.
                let deepest = self.frames.iter().map(|f| f.depth).max().unwrap_or(1);
                self.frame_depth = deepest.saturating_sub(1).max(1);
                let before = self.frames.len();
                let limit = self.frame_depth;
                self.frames.retain(|f| f.depth <= limit);
                self.frames.truncate(MAX_FRAMES);
                self.frames_dropped += (before - self.frames.len()) as u64;
            }
        }
    }

    /// A store of `size` bytes at `address`: kept as a range, merged with the last
    /// when it continues or overlaps it (a kernel writes its output in order).
    fn wrote(&mut self, address: u64, size: u64) {
        if self.written_overflow {
            return;
        }
        let end = address + size;
        match self.written.last_mut() {
            Some(last) if address >= last.0 && address <= last.1 => last.1 = last.1.max(end),
            _ => self.written.push((address, end)),
        }
        if self.written.len() > MAX_RANGES {
            self.merge_written();
            self.written_overflow = self.written.len() > MAX_RANGES / 2;
        }
    }

    /// Sorts and merges the written ranges.
    fn merge_written(&mut self) {
        self.written.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.written.len());
        for &(lo, hi) in &self.written {
            match merged.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        self.written = merged;
    }

    /// The path of `node`: function entries, outermost first.
    fn path(&self, mut node: usize) -> Vec<u32> {
        let mut pcs = vec![self.nodes[node].pc as u32];
        while node != 0 {
            node = self.nodes[node].parent;
            pcs.push(self.nodes[node].pc as u32);
        }
        pcs.reverse();
        pcs
    }
}

/// The profiling module: `None` inside when the arguments do not say `profile=1`.
pub(crate) struct Profile(Option<(Arc<Profiler>, Vec<std::ops::Range<u64>>)>);

/// The range markers' PCs (`mark=PC`).
type Marks = std::collections::HashSet<u64>;

impl Profile {
    /// Takes `profile`, `dma` and `tensors`; allocates the running totals.
    pub(crate) fn install(args: &mut Arguments<'_>) -> Result<Box<dyn Module>, String> {
        let profile = !args.take(|argument| matches!(argument, Argument::Profile).then_some(())).is_empty();
        let range = |range: &std::ops::Range<u32>| u64::from(range.start)..u64::from(range.end);
        let dma = args.take(|argument| match argument {
            Argument::DmaWindow(window) => Some(u64::from(*window)),
            _ => None,
        });
        let tensors = args.take(|argument| match argument {
            Argument::Tensors(tensors) => Some(range(tensors)),
            _ => None,
        });
        let code = args.take(|argument| match argument {
            Argument::Code(code) => Some(range(code)),
            _ => None,
        });
        let marks: Marks = args
            .take(|argument| match argument {
                Argument::Mark(pc) => Some(u64::from(*pc)),
                _ => None,
            })
            .into_iter()
            .collect();
        let (dma, tensors) = (dma.last().copied(), tensors.last().cloned());
        if !profile {
            return Ok(Box::new(Profile(None)));
        }
        // SAFETY: allocates QEMU's zeroed per-vCPU u64; never freed, as `Entry` relies on.
        let board = unsafe { qemu_plugin_scoreboard_new(size_of::<u64>()) };
        let executed = Entry(PluginU64 { score: board, offset: 0 });
        Ok(Box::new(Profile(Some((Profiler::new(executed, dma, tensors, marks), code)))))
    }
}

impl Module for Profile {
    fn translate(&self, tb: &TranslationBlock<'_>, firmware: &Firmware) {
        let Some((profiler, code)) = &self.0 else { return };
        let profiled = |pc: u64| code.is_empty() || code.iter().any(|range| range.contains(&pc));
        if !profiled(tb.vaddr()) {
            return;
        }
        profiler.block(tb);
        for index in 0..tb.size() {
            let Ok(insn) = tb.instruction(index) else { continue };
            let pc = insn.vaddr();
            if firmware.is_kernel(pc) && !firmware.reruns(pc) && profiled(pc) {
                profiler.instruction(tb, index);
            }
        }
    }

    fn op_begin(&self, vcpu: VCPUIndex) {
        if let Some((profiler, _)) = &self.0 {
            profiler.start(vcpu);
        }
    }

    fn op_end(&self, vcpu: VCPUIndex, lines: &mut Lines) {
        if let Some((profiler, _)) = &self.0 {
            profiler.stop(vcpu, lines);
        }
    }

    fn rerun(&self, vcpu: VCPUIndex, pc: u64) {
        if let Some((profiler, _)) = &self.0 {
            profiler.rerun(vcpu, pc);
        }
    }
}

/// The profiler's state, shared by its callbacks.
struct Profiler {
    executed: Entry,
    slots: Mutex<Slots>,
    cores: Vec<Mutex<Core>>,
    /// Whether each vCPU is between an op's start and end: callbacks on the other
    /// vCPUs (the DMA engine's, a core between ops) return without taking a lock.
    active: Vec<AtomicBool>,
    epoch: Instant,
    /// The SoC's DMA queue window, when given (`dma=HEX`).
    dma: Option<u64>,
    /// The tensor area, when given (`tensors=LO-HI`).
    tensors: Option<std::ops::Range<u64>>,
    /// The range markers' PCs.
    marks: Marks,
}

impl Profiler {
    /// A profiler keeping each vCPU's running total in `executed`; `dma` is the DMA
    /// queue window, `tensors` the tensor area, `marks` the range markers' PCs.
    fn new(executed: Entry, dma: Option<u64>, tensors: Option<std::ops::Range<u64>>, marks: Marks) -> Arc<Self> {
        Arc::new(Self {
            executed,
            slots: Mutex::default(),
            cores: (0..MAX_VCPUS).map(|_| Mutex::default()).collect(),
            active: (0..MAX_VCPUS).map(|_| AtomicBool::new(false)).collect(),
            epoch: Instant::now(),
            dma,
            tensors,
            marks,
        })
    }

    fn core(&self, vcpu: VCPUIndex) -> Option<MutexGuard<'_, Core>> {
        // A poisoned lock only means a callback panicked; the figures are still whole.
        self.cores.get(vcpu as usize).map(|core| core.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// The core's state if it is in an op (its own thread set `active`, so a relaxed
    /// load sees it).
    fn active(&self, vcpu: VCPUIndex) -> Option<MutexGuard<'_, Core>> {
        let active = self.active.get(vcpu as usize).is_some_and(|active| active.load(Ordering::Relaxed));
        if active { self.core(vcpu) } else { None }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Instruments a block: its first instruction's callback keeps the shadow stack.
    fn block(self: &Arc<Self>, tb: &TranslationBlock<'_>) {
        let (me, pc) = (Arc::clone(self), tb.vaddr());
        tb.register_execute_callback_flags(
            move |vcpu| {
                let executed = me.executed.get(vcpu);
                let ns = me.now();
                if let Some(mut core) = me.active(vcpu) {
                    core.block(pc, executed, ns);
                }
            },
            CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
        );
    }

    /// Instruments one counted instruction: its PC's counter, its memory accesses, and
    /// a callback on calls and on `waiti`.
    fn instruction(self: &Arc<Self>, tb: &TranslationBlock<'_>, index: usize) {
        let Ok(insn) = tb.instruction(index) else { return };
        let pc = insn.vaddr();
        let text = insn.disas().unwrap_or_default();
        let mnemonic = text.split_whitespace().next().unwrap_or("?").to_string();
        if self.marks.contains(&pc) {
            // Before the instruction's own counter: `at` is the instructions before it.
            self.marker(&insn);
        }
        let entry = {
            let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let slot = slots.slot(pc, || mnemonic.clone());
            slots.entry(slot)
        };
        for counter in [entry, self.executed.0] {
            let Ok(handle) = tb.instruction(index) else { return };
            qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
                handle,
                PluginOp::QEMU_PLUGIN_INLINE_ADD_U64,
                counter,
                1,
            );
        }
        if is_call(&mnemonic) {
            let (me, ret) = (Arc::clone(self), pc + insn.size() as u64);
            insn.register_execute_callback_flags(
                move |vcpu| {
                    if let Some(mut core) = me.active(vcpu) {
                        core.calls.call(pc, ret);
                    }
                },
                CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
            );
        }
        if mnemonic == "waiti" {
            let me = Arc::clone(self);
            insn.register_execute_callback_flags(
                move |vcpu| {
                    let at = me.executed.get(vcpu);
                    let ns = me.now();
                    if let Some(mut core) = me.active(vcpu) {
                        let started = core.started;
                        core.waiting = Some((ns, at - started));
                    }
                },
                CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
            );
        }
        self.accesses(&insn);
    }

    /// A range marker's callback: where in the op's instructions the core passed it.
    fn marker(self: &Arc<Self>, insn: &Instruction<'_>) {
        let pc = insn.vaddr();
        let me = Arc::clone(self);
        insn.register_execute_callback_flags(
            move |vcpu| {
                let executed = me.executed.get(vcpu);
                if let Some(mut core) = me.active(vcpu) {
                    let at = executed - core.started;
                    // The same marker again, with no other between (a marker on a
                    // loop's line, reached each turn): it changes nothing the first
                    // did not (a range already open, or already closed).
                    if core.marks.last().is_some_and(|&(last, _)| last == pc as u32) {
                        return;
                    }
                    if core.marks.len() < MAX_EVENTS {
                        core.marks.push((pc as u32, at));
                    } else {
                        core.dropped += 1;
                    }
                }
            },
            CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
        );
    }

    /// The memory callback of a counted instruction: its loads and stores by page and
    /// PC, what it writes of the tensors, and the DMA transfers its stores to the
    /// queues start.
    fn accesses(self: &Arc<Self>, insn: &Instruction<'_>) {
        let pc = insn.vaddr();
        let me = Arc::clone(self);
        insn.register_memory_access_callback(
            move |vcpu, info, vaddr| {
                let Some(mut core) = me.active(vcpu) else { return };
                let store = info.is_store();
                let page = (vaddr >> 24) as u8;
                core.memory[usize::from(page)][usize::from(store)] += 1;
                core.accesses.entry((pc, page)).or_default()[usize::from(store)] += 1;
                if store && me.tensors.as_ref().is_some_and(|tensors| tensors.contains(&vaddr)) {
                    core.wrote(vaddr, 1 << info.size_shift());
                }
                let queues = |window: &u64| (*window..*window + DMA_QUEUE_WINDOW).contains(&vaddr);
                let Some(window) = me.dma.filter(|window| store && queues(window)) else { return };
                let MemValue::U32(value) = info.value() else { return };
                let Some(transfer) = core.descriptors.store((vaddr - window) as u32, value) else { return };
                let (address, bytes) = (u64::from(transfer.address), u64::from(transfer.len));
                match transfer.side {
                    // Where a transfer writes (the engine's addresses are device addresses).
                    Side::Write => {
                        if me.tensors.as_ref().is_some_and(|tensors| tensors.contains(&address)) {
                            core.wrote(address, bytes);
                        }
                    }
                    // One m2s descriptor per transfer.
                    Side::Read => {
                        let (ns, at) = (me.now(), me.executed.get(vcpu) - core.started);
                        core.dma_bytes += bytes;
                        core.dma_transfers += 1;
                        core.event(Event { kind: EventKind::Dma, ns, dur: 0, bytes, at });
                    }
                }
            },
            MemRW::QEMU_PLUGIN_MEM_RW,
        );
    }

    /// The instruction at `pc` started once more than `ICOUNT` counts it (an exception's
    /// handler returned to it, or it is a `waiti`: [`Module::rerun`]): that start, counted
    /// in its PC's counter and the running total, is taken back. After a handler this
    /// runs before the block's inline ops, so the block's callback reads the total taken
    /// back.
    fn rerun(&self, vcpu: VCPUIndex, pc: u64) {
        let slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // A PC with no slot is not profiled: nothing was counted.
        let Some(&slot) = slots.index.get(&pc) else { return };
        let entry = slots.entry(slot);
        qemu_plugin_u64_set(entry, vcpu, qemu_plugin_u64_get(entry, vcpu).wrapping_sub(1));
        drop(slots);
        self.executed.set(vcpu, self.executed.get(vcpu).wrapping_sub(1));
    }

    /// At a start PC: forget what the core gathered before, zero its PC counters.
    fn start(&self, vcpu: VCPUIndex) {
        let executed = self.executed.get(vcpu);
        let ns = self.now();
        let Some(mut core) = self.core(vcpu) else { return };
        let slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for slot in 0..slots.pcs.len() {
            qemu_plugin_u64_set(slots.entry(slot), vcpu, 0);
        }
        core.reset(executed, ns);
        if let Some(active) = self.active.get(vcpu as usize) {
            active.store(true, Ordering::Relaxed);
        }
    }

    /// At a stop PC: the core's profile lines (see the module's documentation).
    fn stop(&self, vcpu: VCPUIndex, lines: &mut Lines) {
        let executed = self.executed.get(vcpu);
        let ns = self.now();
        let Some(mut core) = self.core(vcpu).filter(|core| core.active) else { return };
        core.attribute(executed);
        core.close_frames(0, executed);
        core.active = false;
        if let Some(active) = self.active.get(vcpu as usize) {
            active.store(false, Ordering::Relaxed);
        }
        let slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for (slot, (pc, mnemonic)) in slots.pcs.iter().enumerate() {
            let count = qemu_plugin_u64_get(slots.entry(slot), vcpu);
            if count > 0 {
                lines.push(Line::Profile { core: vcpu, pc: *pc as u32, count, mnemonic });
            }
        }
        drop(slots);
        for (node, found) in core.nodes.iter().enumerate().filter(|(_, node)| node.count > 0) {
            lines.push(Line::Stack { core: vcpu, count: found.count, frames: List::Raw(&core.path(node)) });
        }
        for (page, [loads, stores]) in core.memory.iter().enumerate().filter(|(_, c)| c[0] + c[1] > 0) {
            lines.push(Line::Memory { core: vcpu, page: page as u8, loads: *loads, stores: *stores });
        }
        let mut accesses: Vec<_> = core.accesses.iter().collect();
        accesses.sort_unstable();
        for (&(pc, page), &[loads, stores]) in accesses {
            lines.push(Line::Access { core: vcpu, pc: pc as u32, page, loads, stores });
        }
        lines.push(Line::Dma { core: vcpu, bytes: core.dma_bytes, transfers: core.dma_transfers });
        core.merge_written();
        let ranges = (!core.written_overflow).then_some(List::Raw(&core.written));
        lines.push(Line::Wrote { core: vcpu, ranges });
        let (started_ns, total) = (core.started_ns, executed - core.started);
        core.events.insert(0, Event { kind: EventKind::Op, ns: started_ns, dur: ns - started_ns, bytes: 0, at: total });
        for &Event { kind, ns, dur, bytes, at } in &core.events {
            lines.push(Line::Event { core: vcpu, kind, ns, dur, bytes, at });
        }
        for &Frame { pc, depth, at, len } in &core.frames {
            lines.push(Line::Frame { core: vcpu, pc, depth, at, len });
        }
        let deepest = core.frames.iter().map(|f| f.depth).max().unwrap_or(0);
        let depth = if core.frames_dropped > 0 { core.frame_depth } else { deepest };
        lines.push(Line::Frames { core: vcpu, depth, dropped: core.frames_dropped });
        for &(pc, at) in &core.marks {
            lines.push(Line::Mark { core: vcpu, pc, at });
        }
        if core.dropped > 0 {
            lines.push(Line::Events { core: vcpu, dropped: core.dropped });
        }
    }
}
