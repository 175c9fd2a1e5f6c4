//! Booting images under `qemu-system-xtensa`: the simulated GPSIMD cluster.
//!
//! The board is QEMU's `lx60` with `de233_fpu` cores (an LX7 with the windowed ABI, 32
//! physical address registers and a single-precision FPU; docs/toolchain.md says what
//! it has and lacks against the device's cores): RAM from physical 0 to `0x88000000`
//! holds the images at their production addresses under the MMU's reset-time identity
//! map, and semihosting carries their output and exit status.
//!
//! Semihosting also lets any code on the cores open, read, write and close host files as
//! the user running QEMU (`simcall`: open 5, read 3, write 4, close 6), and QEMU cannot
//! restrict which calls it serves. So QEMU runs sandboxed ([`spawn_sandboxed`]): on
//! Linux it is started from a thread that has given up, through Landlock, every right
//! to create, write, truncate, rename or remove a file, and to read any file but what
//! QEMU itself needs ([`READABLE`]: its binary, libraries and modules; the files the
//! boot names: images, data, the plugin), which QEMU and its guest inherit. A kernel's
//! `open` of any other host file then fails (`EACCES`); the loader's pipes, open
//! before, work as they did. The one exception for writing is what the host names in
//! [`Boot::writable`]: files it made for the TCG plugin's output, which QEMU may write
//! (not create, rename or remove). The memory checks also name a kernel's own
//! `simcall` as a finding with its line (`crate::findings`).

use crate::debugger::GdbOptions;
use crate::toolchain::QEMU;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// One boot of the simulated cluster.
#[derive(Debug, Clone)]
pub struct Boot {
    /// `images[i]` starts on core i (its ELF entry point becomes core i's PC).
    pub images: Vec<PathBuf>,
    /// ELF files to load without starting a core at them (libraries a loader enters).
    pub elf_data: Vec<PathBuf>,
    /// Raw files to place in memory before any core runs: `(file, address)`.
    pub data: Vec<(PathBuf, u32)>,
    /// Run under `-icount shift=0,sleep=off`: every core on one host thread, and CCOUNT
    /// a deterministic clock of one tick per 25 guest instructions, which the firmware
    /// benchmarks count with (`qemu/firmware/src/bench.rs`). A kernel's instruction
    /// count does not need it: the loader reports each core's own exact `ICOUNT`
    /// either way (docs/simulation.md).
    pub count_instructions: bool,
    /// Kill QEMU after this long: a hung guest fails instead of hanging the caller.
    /// Not applied under a debugger ([`Boot::gdb`]).
    pub timeout: Duration,
    /// Start halted with QEMU's gdbstub listening (`run … --gdb`).
    pub gdb: Option<GdbOptions>,
    /// QEMU's `-plugin` argument: the counting plugin and its arguments
    /// ([`crate::plugin::PluginFile::new`]).
    pub plugin: Option<String>,
    /// Existing files QEMU may write and truncate inside its sandbox: the plugin's output
    /// ([`crate::plugin::PluginFile::path`]). Nothing else is writable.
    pub writable: Vec<PathBuf>,
}

/// What a boot produced.
#[derive(Debug)]
pub struct Outcome {
    /// QEMU's exit status: the guest's semihosting exit code; `None` while it runs (a
    /// job of a [`crate::device::Session`] that finished with the device still up).
    pub status: Option<ExitStatus>,
    /// Everything the guest wrote to stdout.
    pub stdout: String,
    /// Everything the guest wrote to stderr, then QEMU's own messages.
    pub stderr: String,
    /// True if QEMU was killed at the timeout.
    pub timed_out: bool,
}

impl Outcome {
    /// The guest's exit code; `None` if it did not exit by itself.
    pub fn code(&self) -> Option<i32> {
        if self.timed_out { None } else { self.status?.code() }
    }
}

impl Boot {
    /// Boots `images`, one per core, with a generous timeout.
    pub fn new(images: Vec<PathBuf>) -> Self {
        Self {
            images,
            elf_data: Vec::new(),
            data: Vec::new(),
            count_instructions: false,
            timeout: Duration::from_secs(120),
            gdb: None,
            plugin: None,
            writable: Vec::new(),
        }
    }

    /// The full QEMU command line.
    pub fn command(&self) -> Command {
        let mut qemu = Command::new(QEMU);
        qemu.args(["-M", "lx60", "-cpu", "de233_fpu", "-m", "2176M"])
            .args(["-smp", &self.images.len().max(1).to_string()])
            .args(["-semihosting", "-display", "none", "-monitor", "none", "-serial", "none", "-nographic"])
            // The board has no sound; without this QEMU 10 probes its audio modules,
            // which fails if an older QEMU's are still installed beside it.
            .args(["-audio", "none"]);
        if self.count_instructions {
            qemu.args(["-icount", "shift=0,sleep=off"]);
        }
        if let Some(gdb) = &self.gdb {
            qemu.args(gdb.qemu_args());
        }
        if let Some(plugin) = &self.plugin {
            qemu.arg("-plugin").arg(plugin);
        }
        for (core, image) in self.images.iter().enumerate() {
            qemu.arg("-device").arg(format!("loader,file={},cpu-num={core}", image.display()));
        }
        for file in &self.elf_data {
            qemu.arg("-device").arg(format!("loader,file={}", file.display()));
        }
        for (file, address) in &self.data {
            qemu.arg("-device").arg(format!("loader,file={},addr={address:#x},force-raw=on", file.display()));
        }
        qemu
    }

    /// Starts QEMU with its stdin, stdout and stderr piped to the caller, who owns the
    /// child from then on (a [`crate::device::Session`] talks to the loader over them).
    pub fn spawn(&self) -> io::Result<Child> {
        let mut command = self.command();
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        spawn_sandboxed(command, &self.readable(), &self.writable)
    }

    /// The files of the boot QEMU reads: the images, the data files, the plugin.
    fn readable(&self) -> Vec<PathBuf> {
        let plugin = self.plugin.as_deref().and_then(|plugin| plugin.split(',').next()).map(PathBuf::from);
        let data = self.data.iter().map(|(file, _)| file.clone());
        self.images.iter().chain(&self.elf_data).cloned().chain(data).chain(plugin).collect()
    }

    /// Runs QEMU to completion (or to the timeout) and collects its output.
    pub fn run(&self) -> io::Result<Outcome> {
        let mut command = self.command();
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = spawn_sandboxed(command, &self.readable(), &self.writable)?;
        let stdout = drain(child.stdout.take().expect("piped"));
        let stderr = drain(child.stderr.take().expect("piped"));
        let deadline = Instant::now() + self.timeout;
        let (status, timed_out) = loop {
            if let Some(status) = child.try_wait()? {
                break (status, false);
            }
            if self.gdb.is_none() && Instant::now() >= deadline {
                child.kill()?;
                break (child.wait()?, true);
            }
            // A watchdog poll, not synchronisation: the result comes from wait().
            thread::sleep(Duration::from_millis(5));
        };
        Ok(Outcome {
            status: Some(status),
            stdout: stdout.join().expect("reader thread"),
            stderr: stderr.join().expect("reader thread"),
            timed_out,
        })
    }
}

/// What QEMU reads besides the boot's files, and may execute: its binary, the dynamic
/// loader's cache, the shared libraries and QEMU's modules and data (under `/usr`;
/// `/lib` and `/lib64` are links into it or hold the loader), and `/dev/null`, which
/// a boot whose stdin is null (`Boot::run`) opens in the sandboxed thread before QEMU
/// starts. Nothing of a home, `/tmp` or a project.
pub const READABLE: [&str; 6] = ["/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/dev/null"];

/// Starts `command` (QEMU) unable to read any host file but [`READABLE`] and the
/// files of `readable`, and to write any but the existing files of `writable` (which
/// it may write and truncate): from a thread of its own that first restricts itself
/// with Landlock (`AccessFs::from_all`: read, execute, write, truncate, make, remove,
/// rename), a restriction its children inherit and cannot lift; the caller's other
/// threads keep their rights. Files already open (the pipes) are not affected.
///
/// # Errors
/// The spawn's error, or Landlock's when it refuses the restriction; on a kernel
/// without Landlock (before Linux 5.13, or not enabled) QEMU runs unsandboxed and a
/// warning says so once.
#[cfg(target_os = "linux")]
pub fn spawn_sandboxed(mut command: Command, readable: &[PathBuf], writable: &[PathBuf]) -> io::Result<Child> {
    use landlock::{
        ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
    };
    let (readable, writable) = (readable.to_vec(), writable.to_vec());
    thread::spawn(move || {
        // A path that does not exist here (no `/lib64`) is left out: nothing to grant.
        let system: Vec<&Path> = READABLE.iter().map(Path::new).filter(|path| path.exists()).collect();
        let status = Ruleset::default()
            .handle_access(AccessFs::from_all(ABI::V3))
            .and_then(|ruleset| ruleset.create())
            .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(&system, AccessFs::from_read(ABI::V3))))
            // Each named file (not its folder): read; write and truncate, no more.
            .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(&readable, AccessFs::ReadFile)))
            .and_then(|ruleset| {
                ruleset.add_rules(path_beneath_rules(&writable, AccessFs::WriteFile | AccessFs::Truncate))
            })
            .and_then(|ruleset| ruleset.restrict_self())
            .map_err(|error| io::Error::other(format!("sandboxing QEMU with Landlock: {error}")))?;
        if status.ruleset == RulesetStatus::NotEnforced {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                eprintln!(
                    "warning: this Linux kernel has no Landlock, so the simulated device is not sandboxed: \
                     a kernel's semihosting calls can read and write host files"
                )
            });
        }
        command.spawn()
    })
    .join()
    .unwrap_or_else(|_| Err(io::Error::other("the thread starting QEMU panicked")))
}

/// Starts `command` (QEMU): without Landlock, as it is (the sandbox is Linux's).
#[cfg(not(target_os = "linux"))]
pub fn spawn_sandboxed(mut command: Command, _readable: &[PathBuf], _writable: &[PathBuf]) -> io::Result<Child> {
    command.spawn()
}

fn drain(mut stream: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}
