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
use std::fs::File;
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

    /// How QEMU ended, when it ended before the job did, in words for an error
    /// message: stopped at the wall limit, killed by a signal (the simulator crashed,
    /// not the kernel), or exited with a status; `None` while it still runs.
    pub fn ending(&self) -> Option<String> {
        use std::os::unix::process::ExitStatusExt;
        if self.timed_out {
            return Some("the device passed the call's wall-time limit and was stopped".into());
        }
        let status = self.status?;
        if let Some(signal) = status.signal() {
            let name = match signal {
                libc::SIGILL => " (SIGILL)",
                libc::SIGABRT => " (SIGABRT)",
                libc::SIGBUS => " (SIGBUS)",
                libc::SIGFPE => " (SIGFPE)",
                libc::SIGKILL => " (SIGKILL: killed from outside, or by the kernel's out-of-memory killer)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGTERM => " (SIGTERM)",
                _ => "",
            };
            return Some(format!(
                "QEMU died of signal {signal}{name}: the simulator stopped, not the kernel; run the call again, \
                 and report it with this message if it repeats"
            ));
        }
        status.code().filter(|&code| code != 0).map(|code| format!("the device stopped with exit status {code}"))
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

    /// The full QEMU command line, naming each file of the boot (an image, a data
    /// file, the plugin) as `name` gives it.
    fn command(&self, name: impl Fn(&Path) -> String) -> Command {
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
        if let Some((plugin, arguments)) = self.plugin_file() {
            qemu.arg("-plugin").arg(format!("{}{arguments}", name(plugin)));
        }
        for (core, image) in self.images.iter().enumerate() {
            qemu.arg("-device").arg(format!("loader,file={},cpu-num={core}", name(image)));
        }
        for file in &self.elf_data {
            qemu.arg("-device").arg(format!("loader,file={}", name(file)));
        }
        for (file, address) in &self.data {
            qemu.arg("-device").arg(format!("loader,file={},addr={address:#x},force-raw=on", name(file)));
        }
        qemu
    }

    /// The plugin's file, and the rest of [`Boot::plugin`] (its arguments, from the
    /// first `,`).
    fn plugin_file(&self) -> Option<(&Path, &str)> {
        let plugin = self.plugin.as_deref()?;
        let (file, arguments) = plugin.find(',').map_or((plugin, ""), |comma| plugin.split_at(comma));
        Some((Path::new(file), arguments))
    }

    /// The files of the boot QEMU reads: the images, the data files, the plugin.
    fn readable(&self) -> Vec<&Path> {
        let data = self.data.iter().map(|(file, _)| file.as_path());
        let plugin = self.plugin_file().map(|(file, _)| file);
        self.images.iter().chain(&self.elf_data).map(PathBuf::as_path).chain(data).chain(plugin).collect()
    }

    /// Opens the boot's files, then starts QEMU on them, sandboxed ([`spawn_sandboxed`]),
    /// with the standard streams `stdin` and piped stdout and stderr.
    fn start(&self, stdin: Stdio) -> io::Result<Child> {
        let files = BootFiles::open(&self.readable())?;
        let mut command = self.command(|path| files.name(path));
        command.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        spawn_sandboxed(command, &files, &self.writable)
    }

    /// Starts QEMU with its stdin, stdout and stderr piped to the caller, who owns the
    /// child from then on (a [`crate::device::Session`] talks to the loader over them).
    ///
    /// # Errors
    /// A file of the boot cannot be opened (the error names it), or QEMU cannot start.
    pub fn spawn(&self) -> io::Result<Child> {
        self.start(Stdio::piped())
    }

    /// Runs QEMU to completion (or to the timeout) and collects its output.
    ///
    /// # Errors
    /// As [`Boot::spawn`], or waiting for QEMU failed.
    pub fn run(&self) -> io::Result<Outcome> {
        let mut child = self.start(Stdio::null())?;
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

/// The files of a boot, open from before QEMU starts until it has started: QEMU reads
/// each through its inherited descriptor (`/proc/self/fd/<n>`) and its Landlock rule
/// names the very file opened ([`spawn_sandboxed`]). So whatever happens to a name
/// afterwards (another process renames a rebuilt image over it, or removes an old
/// package version), QEMU boots the files this boot named when it started, and never
/// finds its rule naming a file that has been replaced.
#[derive(Debug)]
pub struct BootFiles {
    /// Each file's path as the boot names it, and the file open for reading.
    files: Vec<(PathBuf, File)>,
}

impl BootFiles {
    /// Opens `paths` for reading (each once).
    ///
    /// # Errors
    /// A file cannot be opened; the error names it.
    pub fn open(paths: &[&Path]) -> io::Result<Self> {
        let mut files: Vec<(PathBuf, File)> = Vec::new();
        for path in paths {
            if files.iter().all(|(open, _)| open != path) {
                let file = File::open(path)
                    .map_err(|error| io::Error::new(error.kind(), format!("opening {}: {error}", path.display())))?;
                files.push((path.to_path_buf(), file));
            }
        }
        Ok(Self { files })
    }

    /// The name QEMU opens `path` by: its descriptor's, on Linux (QEMU inherits the
    /// descriptor at the same number); elsewhere the path itself.
    fn name(&self, path: &Path) -> String {
        match self.files.iter().find(|(open, _)| open == path) {
            #[cfg(target_os = "linux")]
            Some((_, file)) => format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(file)),
            _ => path.display().to_string(),
        }
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
/// The rules for `readable` name the files it holds open, and QEMU inherits their
/// descriptors (their close-on-exec flag cleared in the child alone), so a command that
/// names them by their descriptors (`/proc/self/fd/<n>`, as [`Boot`] does) reads exactly
/// those files.
///
/// # Errors
/// The spawn's error, or Landlock's when it refuses the restriction; on a kernel
/// without Landlock (before Linux 5.13, or not enabled) QEMU runs unsandboxed and a
/// warning says so once.
#[cfg(target_os = "linux")]
pub fn spawn_sandboxed(mut command: Command, readable: &BootFiles, writable: &[PathBuf]) -> io::Result<Child> {
    use landlock::{
        ABI, Access, AccessFs, PathBeneath, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus,
        path_beneath_rules,
    };
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let inherited: Vec<i32> = readable.files.iter().map(|(_, file)| file.as_raw_fd()).collect();
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls belong: it makes fcntl calls alone, on descriptors that
    // `readable`, borrowed until the spawn below returns, keeps open.
    unsafe {
        command.pre_exec(move || {
            for &fd in &inherited {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let sandboxed = || {
        // A path that does not exist here (no `/lib64`) is left out: nothing to grant.
        let system: Vec<&Path> = READABLE.iter().map(Path::new).filter(|path| path.exists()).collect();
        // Each file of the boot (not its folder), the very file open: read, no more.
        let boot_files =
            readable.files.iter().map(|(_, file)| Ok::<_, RulesetError>(PathBeneath::new(file, AccessFs::ReadFile)));
        let status = Ruleset::default()
            .handle_access(AccessFs::from_all(ABI::V3))
            .and_then(|ruleset| ruleset.create())
            .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(&system, AccessFs::from_read(ABI::V3))))
            .and_then(|ruleset| ruleset.add_rules(boot_files))
            // Each writable file: write and truncate, no more.
            .and_then(|ruleset| {
                ruleset.add_rules(path_beneath_rules(writable, AccessFs::WriteFile | AccessFs::Truncate))
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
    };
    thread::scope(|scope| {
        scope.spawn(sandboxed).join().unwrap_or_else(|_| Err(io::Error::other("the thread starting QEMU panicked")))
    })
}

/// Starts `command` (QEMU): without Landlock, as it is (the sandbox is Linux's).
#[cfg(not(target_os = "linux"))]
pub fn spawn_sandboxed(mut command: Command, _readable: &BootFiles, _writable: &[PathBuf]) -> io::Result<Child> {
    command.spawn()
}

fn drain(mut stream: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::Outcome;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    fn ended(status: Option<ExitStatus>, timed_out: bool) -> Option<String> {
        Outcome { status, stdout: String::new(), stderr: String::new(), timed_out }.ending()
    }

    #[test]
    fn an_error_says_how_qemu_ended_before_the_job() {
        // A wait status of 11 is death by signal 11; 3 << 8 is exit status 3.
        let crashed = ended(Some(ExitStatus::from_raw(11)), false).expect("a crash is said");
        assert!(
            crashed.starts_with("QEMU died of signal 11 (SIGSEGV): the simulator stopped, not the kernel"),
            "{crashed}"
        );
        assert_eq!(
            ended(Some(ExitStatus::from_raw(3 << 8)), false).as_deref(),
            Some("the device stopped with exit status 3")
        );
        assert_eq!(
            ended(Some(ExitStatus::from_raw(9)), true).as_deref(),
            Some("the device passed the call's wall-time limit and was stopped")
        );
        assert_eq!(ended(Some(ExitStatus::from_raw(0)), false), None, "a clean exit needs no word");
        assert_eq!(ended(None, false), None, "a device still running ended nothing");
    }
}
