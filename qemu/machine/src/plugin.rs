//! The device's QEMU TCG plugin (`qemu/plugin`): building it, the arguments a boot
//! passes it, and the lines it writes.
//!
//! The plugin is GPL-2.0-or-later, like QEMU's plugin API; QEMU loads it as a file
//! (`-plugin`), and nothing here links it. At the end of each kernel run on a core
//! (the loader's `icount_read` marker) each of its modules writes its lines for that
//! op to a file this module reads back ([`PluginFile`]), closed by an `END` line. The
//! counting module's `COUNT` line is the op's exact instruction count with QEMU's
//! multi-threaded TCG, no `-icount` needed (docs/simulation.md, "Counting
//! instructions"); another module's lines reach the host in [`OpLines::lines`].

use crate::elf;
use crate::process;
use crate::toolchain::{self, Toolchain};
use neuroncustomop_wire::plugin::{Argument, Line};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// The loader's function called just before a kernel (`qemu/firmware/src/icount.S`).
const START: &str = "icount_start";
/// The loader's function called once the kernel returned or was stopped.
const STOP: &str = "icount_read";
/// The first and last-plus-one instructions of the loader's `ICOUNT` wrap handler,
/// which `ICOUNT` does not count and neither does the plugin.
const HANDLER: (&str, &str) = ("__neuron_debug_exception", "icount_handler_end");
/// The debug vector (runtime/arch/xtensa/vectors.S): three 3-byte instructions into
/// the handler, at the debug level too. The instruction an `ICOUNT` wrap interrupts
/// runs again after it: the plugin's `rerun` takes its first count back.
const DEBUG_VECTOR: (&str, u32) = ("_DebugExceptionVector", 9);
/// The vectors of the loader's table (runtime/arch/xtensa/vectors.S; the loader's
/// `_start` points VECBASE at it) whose exceptions return to the excepting instruction:
/// the plugin's `vector=PC`, where the counting module notes the block an exception
/// cut short (qemu/plugin/src/count.rs).
const VECTORS: [&str; 7] = [
    "_WindowOverflow4",
    "_WindowUnderflow4",
    "_WindowOverflow8",
    "_WindowUnderflow8",
    "_WindowOverflow12",
    "_WindowUnderflow12",
    DEBUG_VECTOR.0,
];

/// The plugin's count of a kernel less the firmware's `ICOUNT` count of it: the
/// loader's instructions between the plugin's markers and the `ICOUNT` accesses
/// (`icount_start` from its `entry` to its `wsr icount`, `icount_read`'s `entry`; the
/// Rust around them). Measured (613 against 605 for fault_probe's `copy`), and pinned
/// by `qemu/tests/counting.rs`, which compares the two on every op. (It was 10 while
/// the plugin counted an instruction a window exception interrupted twice, as it
/// started and as it ran again: `ICOUNT` counts it once.)
pub const MARKER_OVERHEAD: u64 = 8;

/// Why the plugin could not be built or set up.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The toolchain is incomplete.
    #[error(transparent)]
    Toolchain(toolchain::Missing),
    /// The QEMU on `PATH` cannot load the plugin.
    #[error(transparent)]
    OldQemu(toolchain::OldQemu),
    /// cargo failed; its diagnostics went to stderr.
    #[error("building the QEMU plugin (qemu/plugin) failed: {0}")]
    Build(String),
    /// The loader image lacks a symbol the plugin needs.
    #[error("the loader image {image} has no symbol `{symbol}`: rebuild it (`cargo sim build loader`)")]
    Symbol {
        /// The image.
        image: PathBuf,
        /// The missing symbol.
        symbol: &'static str,
    },
    /// Reading an image or the counts file failed.
    #[error("{0}")]
    Io(String),
}

/// The plugin's shared library's file name.
pub const LIBRARY_FILE: &str = "libneuroncustomop_plugin.so";

/// Builds the plugin in a checkout (once per process; cargo finds nothing to do when
/// it is up to date), or finds an installed home's prebuilt one, and returns the
/// shared library QEMU loads.
///
/// # Errors
/// [`PluginError::Toolchain`], [`PluginError::OldQemu`] (before building anything) or
/// [`PluginError::Build`].
pub fn library() -> Result<PathBuf, PluginError> {
    toolchain::qemu_for_plugin().map_err(PluginError::OldQemu)?;
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(path) = &*built {
        return Ok(path.clone());
    }
    let tools = Toolchain::locate().map_err(PluginError::Toolchain)?;
    let Some(checkout) = tools.home.checkout() else {
        let prebuilt = tools.home.prebuilt().expect("a home that is not a checkout is installed");
        let path = prebuilt.join("plugin").join(LIBRARY_FILE);
        *built = Some(path.clone());
        return Ok(path);
    };
    // Its own target directory: a build from inside `cargo test` never waits for the
    // lock of the build that started the test.
    let target = checkout.join("target/plugin");
    process::status(
        Command::new(toolchain::CARGO)
            .current_dir(checkout)
            .env("RUSTC", toolchain::RUSTC)
            .env("CARGO_TARGET_DIR", &target)
            .env_remove("RUSTC_WRAPPER")
            .env_remove("RUSTFLAGS")
            .args(["build", "--quiet", "--release", "-p", "neuroncustomop-plugin"]),
    )
    .map_err(|failed| PluginError::Build(failed.to_string()))?;
    let path = target.join("release").join(LIBRARY_FILE);
    *built = Some(path.clone());
    Ok(path)
}

/// The output file of one running device's plugin: it appends each op's lines when the
/// op ends, [`PluginFile::take`] reads the ops that are new. Removed when dropped.
#[derive(Debug)]
pub struct PluginFile {
    path: PathBuf,
    /// The plugin QEMU loads.
    library: PathBuf,
    /// Bytes of it already taken.
    taken: usize,
}

/// The plugin's lines for one op of one core.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpLines {
    /// Each module's lines (`neuroncustomop_wire::plugin::Line`, as text), in the
    /// plugin's module order.
    pub lines: Vec<String>,
}

impl OpLines {
    /// The lines, parsed (every line [`PluginFile::take`] keeps parses).
    pub fn parsed(&self) -> impl Iterator<Item = Line<'_>> {
        self.lines.iter().filter_map(|line| Line::parse(line).ok())
    }

    /// The kernel's instruction count (the `COUNT` line), less [`MARKER_OVERHEAD`].
    pub fn count(&self) -> Option<u64> {
        self.parsed().find_map(|line| match line {
            Line::Count { instructions, .. } => Some(instructions.saturating_sub(MARKER_OVERHEAD)),
            _ => None,
        })
    }
}

impl PluginFile {
    /// A fresh output file, and the plugin's arguments that make it watch the kernels
    /// the loaders `loaders` (one image per core) run: a boot gives QEMU
    /// [`PluginFile::argument`] of them and of any other module's.
    ///
    /// # Errors
    /// [`PluginError`] when the plugin does not build or a loader image lacks a marker.
    pub fn new(loaders: &[PathBuf]) -> Result<(Self, Vec<Argument<'static>>), PluginError> {
        let library = library()?;
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "neuroncustomop-plugin-{}-{}.txt",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // Made here, empty: QEMU's sandbox lets it write this one file, not create one
        // (machine::spawn_sandboxed).
        fs::File::create(&path).map_err(|e| PluginError::Io(format!("creating {}: {e}", path.display())))?;
        let mut arguments = Vec::new();
        for image in loaders {
            let bytes = fs::read(image).map_err(|e| PluginError::Io(format!("reading {}: {e}", image.display())))?;
            let symbol = |name: &'static str| match elf::symbol(&bytes, name) {
                Ok(Some(address)) => Ok(address),
                Ok(None) => Err(PluginError::Symbol { image: image.clone(), symbol: name }),
                Err(e) => Err(PluginError::Io(format!("{}: {e}", image.display()))),
            };
            let vector = symbol(DEBUG_VECTOR.0)?;
            arguments.extend([
                Argument::Start(symbol(START)?),
                Argument::Stop(symbol(STOP)?),
                Argument::Uncounted(symbol(HANDLER.0)?..symbol(HANDLER.1)?),
                Argument::Uncounted(vector..vector + DEBUG_VECTOR.1),
                Argument::Rerun(vector),
            ]);
            for name in VECTORS {
                arguments.push(Argument::Vector(symbol(name)?));
            }
        }
        Ok((Self { path, library, taken: 0 }, arguments))
    }

    /// QEMU's `-plugin` value: the plugin, its output file ([`Argument::Out`]), then
    /// `arguments`.
    ///
    /// # Errors
    /// [`PluginError::Io`] when the output file's path is not UTF-8 (QEMU's options are).
    pub fn argument(&self, arguments: &[Argument<'_>]) -> Result<String, PluginError> {
        let out = self.path.to_str().ok_or_else(|| PluginError::Io(format!("{} is not UTF-8", self.path.display())))?;
        Ok(join(self.library.display(), std::iter::once(&Argument::Out(out)).chain(arguments)))
    }

    /// The file the plugin writes: QEMU must be let write it ([`crate::machine::Boot::writable`]).
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The ops ended since the last call, per core, in the order its kernels ran.
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn take(&mut self) -> io::Result<BTreeMap<u32, Vec<OpLines>>> {
        let text = fs::read(&self.path)?;
        let new = text.get(self.taken..).unwrap_or_default();
        // Only whole ops: an op is one write, but read it again if it was cut.
        let text = String::from_utf8_lossy(new);
        let (ops, used) = parse(&text);
        self.taken += used;
        Ok(ops)
    }
}

impl Drop for PluginFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// QEMU's `-plugin` value: the library, then each argument, `,` between them.
fn join<'a>(library: impl std::fmt::Display, arguments: impl IntoIterator<Item = &'a Argument<'a>>) -> String {
    let mut joined = library.to_string();
    for argument in arguments {
        // Writing into a String cannot fail.
        let _ = write!(joined, ",{argument}");
    }
    joined
}

/// Groups whole ops' lines per core; returns them and the bytes they span (up to the
/// last `END` line). A line that does not parse is skipped.
fn parse(text: &str) -> (BTreeMap<u32, Vec<OpLines>>, usize) {
    let mut ops: BTreeMap<u32, Vec<OpLines>> = BTreeMap::new();
    let mut open: BTreeMap<u32, OpLines> = BTreeMap::new();
    let mut used = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        at += line.len();
        let Some(line) = line.strip_suffix('\n') else { break };
        match Line::parse(line) {
            Ok(Line::End { core }) => {
                ops.entry(core).or_default().push(open.remove(&core).unwrap_or_default());
                used = at;
            }
            Ok(parsed) => open.entry(parsed.core()).or_default().lines.push(line.to_string()),
            Err(_) => {}
        }
    }
    (ops, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_whole_ops_per_core_in_order_and_counts_less_the_markers() {
        assert_eq!(MARKER_OVERHEAD, 8);
        let lines = [
            Line::Count { core: 1, instructions: 508 },
            Line::End { core: 1 },
            Line::Count { core: 0, instructions: 15 },
            Line::Dma { core: 0, bytes: 64, transfers: 1 },
            Line::End { core: 0 },
            Line::Count { core: 1, instructions: 17 },
            Line::End { core: 1 },
            Line::Count { core: 0, instructions: 30 },
        ];
        let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
        let (ops, used) = parse(&text);
        assert_eq!(&text[used..], "COUNT core=0 instructions=30\n", "an op without its END waits");
        assert_eq!(ops[&0].len(), 1);
        assert_eq!(ops[&0][0].count(), Some(7));
        assert_eq!(ops[&0][0].parsed().nth(1), Some(lines[3]));
        assert_eq!(ops[&1].iter().map(OpLines::count).collect::<Vec<_>>(), [Some(500), Some(9)]);
    }

    #[test]
    fn the_arguments_are_the_library_then_each_one() {
        let arguments = [Argument::Out("/tmp/x.txt"), Argument::Start(0x8400_0010), Argument::Profile];
        assert_eq!(join("lib.so", &arguments), "lib.so,out=/tmp/x.txt,start=84000010,profile=1");
    }
}
