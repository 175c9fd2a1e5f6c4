//! The simulated device's QEMU TCG plugin: the exact instruction count of every kernel
//! run, per core, with QEMU's multi-threaded TCG (no `-icount`).
//!
//! Licensed GPL-2.0-or-later, like QEMU's plugin API, whose bindings (the `qemu-plugin`
//! crate) it links. QEMU loads it as a file (`-plugin`); nothing of the project links
//! it, so the runtime and everything linked into a kernel stay MIT OR Apache-2.0.
//!
//! # Arguments
//!
//! `-plugin libneuroncustomop_plugin.so,out=FILE,start=PC,stop=PC,…`, PCs in hex:
//! - `out=FILE`: where the counts go, one line per kernel run, written as it ends.
//! - `start=PC` (one per core's loader image): the loader's `icount_start`, which it
//!   calls just before a kernel.
//! - `stop=PC` (likewise): the loader's `icount_read`, which it calls when the kernel
//!   has returned or was stopped.
//! - `uncounted=LO-HI` (any number): instructions at `LO..HI` are not counted: the
//!   debug vector and the loader's `ICOUNT` wrap handler, which the firmware's `ICOUNT`
//!   does not count either (it runs at the debug level), so the two counts agree
//!   however many times `ICOUNT` wrapped.
//! - `rerun=PC` (any number): an exception vector whose exception makes the
//!   interrupted instruction run again: the debug vector, entered when `ICOUNT` wraps.
//!   That instruction's count was added when it first started; entering the vector
//!   takes it back, so it counts once, as `ICOUNT` counts it.
//!
//! # Output
//!
//! `COUNT core=<vCPU> instructions=<n>` when a core reaches a stop PC: the instructions
//! that core executed since it last passed a start PC. Between the two PCs lie the
//! kernel and a fixed number of the loader's own instructions, so a count is the
//! firmware's `ICOUNT` figure plus a constant (`qemu/machine/src/plugin.rs` on the host takes
//! it off).
//!
//! # Cost
//!
//! Every instruction adds 1 to its vCPU's own counter inline (QEMU's per-vCPU
//! scoreboard: generated code, no call, no lock, no shared cache line); only the start
//! and stop instructions call back into the plugin.
//!
//! # Not under `-icount`
//!
//! QEMU 10.0.2 crashes (a segfault in the generated code, on the first job) when an
//! instruction other than a block's first has an inline op and `-icount` is on; a
//! block-level counter would not be exact (a block cut short by an exception counts
//! whole). The host loads the plugin only without `-icount` (`qemu/machine/src/device.rs`).

use qemu_plugin::sys::{qemu_plugin_scoreboard, qemu_plugin_scoreboard_new};
use qemu_plugin::{
    Args, CallbackFlags, HasCallbacks, Info, PluginId, PluginOp, PluginU64, Register, TranslationBlock, VCPUIndex,
    qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu, qemu_plugin_u64_get, qemu_plugin_u64_set,
};
use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::mem::offset_of;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// One vCPU's words in the scoreboard.
#[repr(C)]
struct PerCore {
    /// Instructions this vCPU executed since boot.
    executed: u64,
    /// `executed` when it last passed a start PC.
    started: u64,
}

/// A [`PluginU64`] that callbacks on any vCPU thread may hold.
#[derive(Clone, Copy)]
struct Entry(PluginU64);

// SAFETY: the scoreboard is never freed (it lives as long as QEMU), and QEMU's
// qemu_plugin_u64_* calls are made only from a vCPU's own callbacks, for its own index,
// so no two threads touch the same word.
unsafe impl Send for Entry {}
// SAFETY: as for Send.
unsafe impl Sync for Entry {}

impl Entry {
    fn get(self, vcpu: VCPUIndex) -> u64 {
        qemu_plugin_u64_get(self.0, vcpu)
    }

    fn set(self, vcpu: VCPUIndex, value: u64) {
        qemu_plugin_u64_set(self.0, vcpu, value);
    }
}

/// What the arguments say.
struct Config {
    out: File,
    starts: HashSet<u64>,
    stops: HashSet<u64>,
    uncounted: Vec<Range<u64>>,
    reruns: HashSet<u64>,
}

impl Config {
    fn parse(args: &Args) -> Result<Self, String> {
        let mut out = None;
        let (mut starts, mut stops, mut reruns, mut uncounted) =
            (HashSet::new(), HashSet::new(), HashSet::new(), Vec::new());
        for arg in &args.raw {
            let (key, value) = arg.split_once('=').ok_or_else(|| format!("argument `{arg}` is not key=value"))?;
            let pc = |text: &str| {
                u64::from_str_radix(text.trim_start_matches("0x"), 16)
                    .map_err(|_| format!("`{key}={value}`: `{text}` is not a hex address"))
            };
            match key {
                "out" => out = Some(File::create(value).map_err(|e| format!("cannot create `{value}`: {e}"))?),
                "start" => _ = starts.insert(pc(value)?),
                "stop" => _ = stops.insert(pc(value)?),
                "rerun" => _ = reruns.insert(pc(value)?),
                "uncounted" => {
                    let (lo, hi) = value.split_once('-').ok_or_else(|| format!("`{arg}` is not uncounted=LO-HI"))?;
                    uncounted.push(pc(lo)?..pc(hi)?);
                }
                _ => return Err(format!("unknown argument `{key}` (out, start, stop, uncounted, rerun)")),
            }
        }
        let out = out.ok_or("no out=FILE argument")?;
        if starts.is_empty() || stops.is_empty() {
            return Err("no start=PC or no stop=PC argument: nothing would be counted".into());
        }
        Ok(Self { out, starts, stops, uncounted, reruns })
    }
}

/// The plugin: set up by [`Register::register`] from the arguments.
#[derive(Default)]
struct Counter {
    /// `executed` and `started` of each vCPU, once registered.
    entries: Option<(Entry, Entry)>,
    starts: HashSet<u64>,
    stops: HashSet<u64>,
    uncounted: Vec<Range<u64>>,
    reruns: HashSet<u64>,
    /// Shared by every vCPU's stop callback: one line at a time.
    out: Option<Arc<Mutex<File>>>,
}

impl Register for Counter {
    fn register(&mut self, _: PluginId, args: &Args, _: &Info) -> qemu_plugin::Result<()> {
        let config = Config::parse(args).unwrap_or_else(|message| {
            // QEMU gives a plugin no way to refuse with a message: say it and stop
            // before the guest runs (only the host tools pass these arguments).
            eprintln!("neuroncustomop-plugin: {message}");
            std::process::exit(1)
        });
        // SAFETY: allocates QEMU's per-vCPU array of `PerCore`, zeroed; it is never
        // freed, as `Entry` relies on.
        let board: *mut qemu_plugin_scoreboard = unsafe { qemu_plugin_scoreboard_new(size_of::<PerCore>()) };
        let entry = |offset| Entry(PluginU64 { score: board, offset });
        self.entries = Some((entry(offset_of!(PerCore, executed)), entry(offset_of!(PerCore, started))));
        self.starts = config.starts;
        self.stops = config.stops;
        self.uncounted = config.uncounted;
        self.reruns = config.reruns;
        self.out = Some(Arc::new(Mutex::new(config.out)));
        Ok(())
    }
}

impl HasCallbacks for Counter {
    fn on_translation_block_translate(&mut self, _: PluginId, tb: TranslationBlock) -> qemu_plugin::Result<()> {
        let (Some((executed, started)), Some(out)) = (self.entries, &self.out) else { return Ok(()) };
        for insn in tb.instructions() {
            let pc = insn.vaddr();
            // The marker's callback comes first, so a start or stop reads the counter
            // before its own instruction is added: both ends alike.
            if self.starts.contains(&pc) {
                insn.register_execute_callback_flags(
                    move |vcpu| started.set(vcpu, executed.get(vcpu)),
                    CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
                );
            }
            if self.stops.contains(&pc) {
                let out = Arc::clone(out);
                insn.register_execute_callback_flags(
                    move |vcpu| report(&out, vcpu, executed, started),
                    CallbackFlags::QEMU_PLUGIN_CB_NO_REGS,
                );
            }
            // Adding 2^64 - 1 is taking one away (the counter wraps).
            let add = if self.reruns.contains(&pc) {
                u64::MAX
            } else if self.uncounted.iter().any(|range| range.contains(&pc)) {
                continue;
            } else {
                1
            };
            qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(
                insn,
                PluginOp::QEMU_PLUGIN_INLINE_ADD_U64,
                executed.0,
                add,
            );
        }
        Ok(())
    }
}

/// Writes `vcpu`'s count since its start, in one `write` so that the host, reading the
/// file after the loader's own report of the op, finds it whole.
fn report(out: &Mutex<File>, vcpu: VCPUIndex, executed: Entry, started: Entry) {
    let count = executed.get(vcpu) - started.get(vcpu);
    let line = format!("COUNT core={vcpu} instructions={count}\n");
    // A poisoned lock only means another vCPU's write panicked; the file is still good.
    let mut file = out.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Err(e) = file.write_all(line.as_bytes()) {
        eprintln!("neuroncustomop-plugin: cannot write a count: {e}");
    }
}

qemu_plugin::register!(Counter::default());
