//! The device's QEMU TCG plugin (`qemu/plugin`): building it, the arguments a boot
//! passes it, and the counts it writes.
//!
//! The plugin is GPL-2.0-or-later, like QEMU's plugin API; QEMU loads it as a file
//! (`-plugin`), and nothing here links it. It counts every instruction of every core
//! with per-vCPU inline counters, and at the loader's `icount_stop` marker writes the
//! kernel's count to a file this module reads back ([`Counts`]): exact counts with
//! QEMU's multi-threaded TCG, no `-icount` needed (docs/simulation.md, "Counting
//! instructions").

use crate::elf;
use crate::toolchain::{self, Toolchain};
use std::collections::BTreeMap;
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

/// The plugin's count of a kernel less the firmware's `ICOUNT` count of it: the
/// loader's instructions between the plugin's markers and the `ICOUNT` accesses
/// (`icount_start` from its `entry` to its `wsr icount`, `icount_read`'s `entry`; the
/// Rust around them). Measured (615 against 605 for fault_probe's `copy`), and pinned
/// by `qemu/tests/counting.rs`, which compares the two on every op.
pub const MARKER_OVERHEAD: u64 = 10;

/// Why the plugin could not be built or set up.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The toolchain is incomplete.
    #[error(transparent)]
    Toolchain(toolchain::Missing),
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

/// Builds the plugin (once per process; cargo finds nothing to do when it is up to
/// date) and returns the shared library QEMU loads.
///
/// # Errors
/// [`PluginError::Toolchain`] or [`PluginError::Build`].
pub fn library() -> Result<PathBuf, PluginError> {
    static BUILT: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(path) = &*built {
        return Ok(path.clone());
    }
    let tools = Toolchain::locate().map_err(PluginError::Toolchain)?;
    // Its own target directory: a build from inside `cargo test` never waits for the
    // lock of the build that started the test.
    let target = tools.repo.join("target/plugin");
    let status = Command::new(toolchain::CARGO)
        .current_dir(&tools.repo)
        .env("RUSTC", toolchain::RUSTC)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTFLAGS")
        .args(["build", "--quiet", "--release", "-p", "neuroncustomop-plugin"])
        .status()
        .map_err(|e| PluginError::Build(format!("cannot run {}: {e}", toolchain::CARGO)))?;
    if !status.success() {
        return Err(PluginError::Build(format!("cargo exited with {status}")));
    }
    let path = target.join("release/libneuroncustomop_plugin.so");
    *built = Some(path.clone());
    Ok(path)
}

/// The counts file of one running device: the plugin appends a line per kernel run,
/// [`Counts::take`] reads what is new. Removed when dropped.
#[derive(Debug)]
pub struct Counts {
    path: PathBuf,
    /// Bytes of it already taken.
    taken: usize,
}

impl Counts {
    /// A fresh counts file and the `-plugin` argument that makes QEMU count the kernels
    /// the loaders `loaders` (one image per core) run.
    ///
    /// # Errors
    /// [`PluginError`] when the plugin does not build or a loader image lacks a marker.
    pub fn new(loaders: &[PathBuf]) -> Result<(Self, String), PluginError> {
        let library = library()?;
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "neuroncustomop-counts-{}-{}.txt",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut argument = format!("{},out={}", library.display(), path.display());
        for image in loaders {
            let bytes = fs::read(image).map_err(|e| PluginError::Io(format!("reading {}: {e}", image.display())))?;
            let symbol = |name: &'static str| match elf::symbol(&bytes, name) {
                Ok(Some(address)) => Ok(address),
                Ok(None) => Err(PluginError::Symbol { image: image.clone(), symbol: name }),
                Err(e) => Err(PluginError::Io(format!("{}: {e}", image.display()))),
            };
            let vector = symbol(DEBUG_VECTOR.0)?;
            argument += &format!(
                ",start={:x},stop={:x},uncounted={:x}-{:x},uncounted={vector:x}-{:x},rerun={vector:x}",
                symbol(START)?,
                symbol(STOP)?,
                symbol(HANDLER.0)?,
                symbol(HANDLER.1)?,
                vector + DEBUG_VECTOR.1,
            );
        }
        Ok((Self { path, taken: 0 }, argument))
    }

    /// The counts written since the last call, per core, in the order its kernels
    /// ran, less [`MARKER_OVERHEAD`].
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn take(&mut self) -> io::Result<BTreeMap<u32, Vec<u64>>> {
        let text = fs::read(&self.path)?;
        let new = text.get(self.taken..).unwrap_or_default();
        // Only whole lines: a line is one write, but read it again if it was cut.
        let whole = new.iter().rposition(|&b| b == b'\n').map_or(0, |end| end + 1);
        self.taken += whole;
        Ok(parse(&String::from_utf8_lossy(&new[..whole])))
    }
}

impl Drop for Counts {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// `COUNT core=<c> instructions=<n>` lines, per core in order; other lines are skipped.
fn parse(text: &str) -> BTreeMap<u32, Vec<u64>> {
    let mut counts: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split(' ');
        if fields.next() != Some("COUNT") {
            continue;
        }
        let mut value = |key: &str| fields.next()?.strip_prefix(key)?.parse::<u64>().ok();
        if let (Some(core), Some(count)) = (value("core="), value("instructions=")) {
            counts.entry(core as u32).or_default().push(count.saturating_sub(MARKER_OVERHEAD));
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_count_lines_per_core_in_order_less_the_markers() {
        assert_eq!(MARKER_OVERHEAD, 10);
        let text = "COUNT core=1 instructions=510\nCOUNT core=0 instructions=17\nnoise\nCOUNT core=1 instructions=19\n";
        let counts = parse(text);
        assert_eq!(counts[&0], [7]);
        assert_eq!(counts[&1], [500, 9]);
    }
}
