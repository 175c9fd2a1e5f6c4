//! The simulated device's QEMU TCG plugin: it watches every kernel run, per core, with
//! QEMU's multi-threaded TCG (no `-icount`), and writes what it finds for the host.
//!
//! Licensed GPL-2.0-or-later, like QEMU's plugin API, whose bindings (the `qemu-plugin`
//! crate) it links. QEMU loads it as a file (`-plugin`); nothing of the project links
//! it, so the runtime and everything linked into a kernel stay MIT OR Apache-2.0.
//!
//! This file owns what every module shares: installing, the common arguments, the op
//! lifecycle of each core (from the loader's markers) and the one output file. Each
//! module watches one thing: `count` the kernel's instructions, `checks` its memory
//! accesses (its heap blocks with `heap`, runs of loads or stores with one callback
//! with `groups`), `profile` (when asked) where the instructions went.
//!
//! # Arguments
//!
//! `-plugin libneuroncustomop_plugin.so,out=FILE,start=PC,stop=PC,…`: each one
//! `neuroncustomop_wire::plugin::Argument`, where the whole list is defined and
//! documented (the host writes them with the same type). The common ones are taken
//! here (`Firmware`): `out` (where the modules' lines go, "Output" below), the op
//! markers `start` and `stop`, `uncounted` (the debug-level code `ICOUNT` does not
//! count) and `rerun` (the vector whose exception runs the interrupted instruction
//! again). Any other belongs to the module that takes it (`Arguments::take`); an
//! argument no module takes, or one that does not parse, stops QEMU with a message.
//!
//! # Output
//!
//! One text file, appended to at each op's end, one `write` per op so that a host
//! reading it finds whole ops: each module's lines for that op
//! (`neuroncustomop_wire::plugin::Line`, `Lines::push`), then `Line::End`, which closes
//! the op. The host (`qemu/machine/src/plugin.rs`) reads the file after the loader's
//! own report of the op, parses the lines with the same type and gives each op's lines
//! to the op they belong to.
//!
//! # Adding a module (the extension contract)
//!
//! A module is a file beside this one with a type that implements `Module`, and one
//! line in `MODULES`: its constructor. The constructor takes its own arguments from
//! `Arguments` and sets up its state (scoreboards: per-vCPU words that inline ops
//! update with no call and no lock). Then:
//! - `Module::translate` is called for every translated block, after this file has
//!   put the op markers' callbacks on it, so on a marker instruction the marker runs
//!   first. The module puts its inline ops and callbacks on the block's instructions;
//!   `Firmware::is_kernel` says which instructions are the firmware's debug-level code.
//!   A callback it registers must be `'static`: it captures copies of scoreboard
//!   entries or an `Arc` of the module's state, never `&self`.
//! - `Module::op_begin` and `Module::op_end` are called on the vCPU's own thread
//!   when that core passes a start or stop marker, in `MODULES`' order, before the
//!   marker instruction itself executes. At the markers the callback may read the
//!   vCPU's registers and memory (it is registered with `QEMU_PLUGIN_CB_R_REGS`).
//! - `Module::op_end` writes the module's findings for that op into `Lines`, as
//!   lines of its own kinds (a new kind is a new `Line` variant in the `wire` crate,
//!   which the host then parses).
//! - `Module::rerun` is called on the vCPU's own thread when an exception handler
//!   has returned to the instruction it interrupted, which runs again (`count` finds
//!   these, and tells every module through `Arguments::events`): a module that counts
//!   per instruction counted it once already, as it first started, and takes that back.
//!
//! Modules run on every vCPU thread at once: state shared between vCPUs needs a lock or
//! atomics; per-vCPU state is best in a scoreboard, indexed by the vCPU.
//!
//! # Not under `-icount`
//!
//! QEMU 10.0.2 crashes (a segfault in the generated code, on the first job) when an
//! instruction other than a block's first has an inline op and `-icount` is on; the
//! host loads the plugin only without `-icount` (`qemu/machine/src/device.rs`).

mod calls;
mod checks;
mod count;
mod dma;
mod groups;
mod guest_memory;
mod heap;
mod profile;

use neuroncustomop_wire::plugin::{Argument, Line};
use qemu_plugin::{Args, CallbackFlags, HasCallbacks, Info, PluginId, Register, TranslationBlock, VCPUIndex};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

/// A module's constructor: takes its arguments, sets up its state.
type Install = fn(&mut Arguments<'_>) -> Result<Box<dyn Module>, String>;

/// Each module's constructor, in the order the modules see each event.
const MODULES: &[Install] = &[count::Count::install, checks::Checks::install, profile::Profile::install];

/// One thing the plugin watches: the extension contract is in the crate doc.
trait Module: Send + Sync {
    /// Puts this module's inline ops and callbacks on a block's instructions.
    fn translate(&self, tb: &TranslationBlock<'_>, firmware: &Firmware);

    /// Core `vcpu` is about to run a kernel.
    fn op_begin(&self, _vcpu: VCPUIndex) {}

    /// Core `vcpu`'s kernel has returned or was stopped: write what this module found.
    fn op_end(&self, _vcpu: VCPUIndex, _lines: &mut Lines) {}

    /// On core `vcpu` the instruction at `pc` started once more than `ICOUNT` counts it:
    /// - an exception interrupted it and its handler has returned to it: it starts
    ///   again, as the first of a new block, and this is called before any of that
    ///   block's inline ops or other callbacks run. Its first start did not complete.
    /// - it is a `waiti`, which `ICOUNT` never counts (QEMU's helper leaves the
    ///   generated code before the update): called as it starts.
    fn rerun(&self, _vcpu: VCPUIndex, _pc: u64) {}
}

/// What the modules' constructors get: the arguments no common key took, and the way
/// to tell every module of an event ([`Events`]).
struct Arguments<'a> {
    /// In the order given.
    rest: Vec<Argument<'a>>,
    events: Arc<Events>,
}

impl<'a> Arguments<'a> {
    /// What `pick` takes of the arguments (none if it takes none), in the order given;
    /// later modules no longer see them.
    fn take<T>(&mut self, mut pick: impl FnMut(&Argument<'a>) -> Option<T>) -> Vec<T> {
        let mut taken = Vec::new();
        self.rest.retain(|argument| match pick(argument) {
            Some(value) => {
                taken.push(value);
                false
            }
            None => true,
        });
        taken
    }

    /// What a module's callbacks call to tell every module of an event.
    fn events(&self) -> Arc<Events> {
        Arc::clone(&self.events)
    }
}

/// Every module, for the callbacks of one module to tell them all of an event: filled
/// once all are installed, before any block is translated.
#[derive(Default)]
struct Events(OnceLock<Arc<Ops>>);

impl Events {
    /// [`Module::rerun`] on every module.
    fn rerun(&self, vcpu: VCPUIndex, pc: u64) {
        for module in self.0.get().iter().flat_map(|ops| &ops.modules) {
            module.rerun(vcpu, pc);
        }
    }
}

/// The loader's markers and the firmware's own code, from the common arguments.
struct Firmware {
    starts: HashSet<u64>,
    stops: HashSet<u64>,
    uncounted: Vec<Range<u64>>,
    reruns: HashSet<u64>,
}

impl Firmware {
    /// False for the debug vector and the `ICOUNT` wrap handler, which run at the debug
    /// level and are no kernel's work (`uncounted=`).
    fn is_kernel(&self, pc: u64) -> bool {
        !self.uncounted.iter().any(|range| range.contains(&pc))
    }

    /// True for an exception vector whose exception runs the interrupted instruction
    /// again (`rerun=`): it was seen once already when it first started.
    fn reruns(&self, pc: u64) -> bool {
        self.reruns.contains(&pc)
    }

    /// True for an op marker (`start=` or `stop=`).
    fn is_marker(&self, pc: u64) -> bool {
        self.starts.contains(&pc) || self.stops.contains(&pc)
    }
}

/// Splits the arguments into the output file, the firmware's markers and the rest.
fn parse(args: &Args) -> Result<(File, Firmware, Arguments<'_>), String> {
    let mut out = None;
    let mut firmware =
        Firmware { starts: HashSet::new(), stops: HashSet::new(), uncounted: Vec::new(), reruns: HashSet::new() };
    let mut rest = Vec::new();
    for raw in &args.raw {
        match Argument::parse(raw).map_err(|e| e.to_string())? {
            Argument::Out(path) => out = Some(File::create(path).map_err(|e| format!("cannot create `{path}`: {e}"))?),
            Argument::Start(pc) => _ = firmware.starts.insert(pc.into()),
            Argument::Stop(pc) => _ = firmware.stops.insert(pc.into()),
            Argument::Rerun(pc) => _ = firmware.reruns.insert(pc.into()),
            Argument::Uncounted(range) => firmware.uncounted.push(range.start.into()..range.end.into()),
            argument => rest.push(argument),
        }
    }
    let out = out.ok_or("no out=FILE argument")?;
    if firmware.starts.is_empty() || firmware.stops.is_empty() {
        return Err("no start=PC or no stop=PC argument: no op would begin or end".into());
    }
    Ok((out, firmware, Arguments { rest, events: Arc::default() }))
}

/// One op's lines, written to the output file in one piece when the op ends.
struct Lines {
    vcpu: VCPUIndex,
    text: String,
}

impl Lines {
    /// Core `vcpu`'s lines so far.
    fn core(&self) -> u32 {
        self.vcpu
    }

    /// Adds `line` (its `core` is [`Lines::core`]).
    fn push(&mut self, line: Line<'_>) {
        // Writing into a String cannot fail.
        let _ = writeln!(self.text, "{line}");
    }
}

/// What the marker callbacks share: the modules and the output file.
struct Ops {
    modules: Vec<Box<dyn Module>>,
    out: Mutex<File>,
}

impl Ops {
    fn begin(&self, vcpu: VCPUIndex) {
        for module in &self.modules {
            module.op_begin(vcpu);
        }
    }

    /// Collects every module's lines for the op and writes them, then `END`, at once.
    fn end(&self, vcpu: VCPUIndex) {
        let mut lines = Lines { vcpu, text: String::new() };
        for module in &self.modules {
            module.op_end(vcpu, &mut lines);
        }
        lines.push(Line::End { core: vcpu });
        // A poisoned lock only means another vCPU's write panicked; the file is still good.
        let mut file = self.out.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Err(e) = file.write_all(lines.text.as_bytes()) {
            eprintln!("neuroncustomop-plugin: cannot write an op's lines: {e}");
        }
    }
}

/// The plugin as QEMU holds it: set up by [`Register::register`] from the arguments.
#[derive(Default)]
struct Plugin {
    /// `None` until registered.
    setup: Option<(Firmware, Arc<Ops>)>,
}

impl Register for Plugin {
    fn register(&mut self, _: PluginId, args: &Args, _: &Info) -> qemu_plugin::Result<()> {
        let setup = || {
            let (out, firmware, mut arguments) = parse(args)?;
            let modules = MODULES.iter().map(|install| install(&mut arguments)).collect::<Result<_, _>>()?;
            if let Some(argument) = arguments.rest.first() {
                return Err(format!("plugin argument `{argument}`: no module of the plugin takes it"));
            }
            let ops = Arc::new(Ops { modules, out: Mutex::new(out) });
            // Set once, here: the cell was new.
            let _ = arguments.events.0.set(Arc::clone(&ops));
            Ok((firmware, ops))
        };
        let setup = setup().unwrap_or_else(|message: String| {
            // QEMU gives a plugin no way to refuse with a message: say it and stop
            // before the guest runs (only the host tools pass these arguments).
            eprintln!("neuroncustomop-plugin: {message}");
            std::process::exit(1)
        });
        self.setup = Some(setup);
        Ok(())
    }
}

impl HasCallbacks for Plugin {
    fn on_translation_block_translate(&mut self, _: PluginId, tb: TranslationBlock) -> qemu_plugin::Result<()> {
        let Some((firmware, ops)) = &self.setup else { return Ok(()) };
        // The markers first, so on a marker instruction they run before any module's
        // inline op or callback on it.
        for insn in tb.instructions() {
            let pc = insn.vaddr();
            if firmware.starts.contains(&pc) {
                let ops = Arc::clone(ops);
                insn.register_execute_callback_flags(move |vcpu| ops.begin(vcpu), CallbackFlags::QEMU_PLUGIN_CB_R_REGS);
            }
            if firmware.stops.contains(&pc) {
                let ops = Arc::clone(ops);
                insn.register_execute_callback_flags(move |vcpu| ops.end(vcpu), CallbackFlags::QEMU_PLUGIN_CB_R_REGS);
            }
        }
        for module in &ops.modules {
            module.translate(&tb, firmware);
        }
        Ok(())
    }
}

qemu_plugin::register!(Plugin::default());
