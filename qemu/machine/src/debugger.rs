//! Debugging a kernel under QEMU's gdbstub (`run … --gdb`).
//!
//! [`GdbOptions`] on a [`Boot`](crate::machine::Boot) starts QEMU with `-gdb
//! tcp:127.0.0.1:<port> -S`: every core halts before its first instruction and waits for a
//! debugger, with no wall limit. A breakpoint at the kernel's entry then stops the
//! core there. What works with which debugger is in docs/simulation.md ("Debugger"):
//! QEMU's stub answers the GDB remote protocol (registers, memory, breakpoints,
//! stepping); Debian's `gdb-multiarch` reads the images' symbols and lines but cannot
//! attach: it has no Xtensa support, and takes the images for i386.
//!
//! ```
//! use neuroncustomop_machine::debugger::GdbOptions;
//!
//! let gdb = GdbOptions { port: 1234 };
//! assert_eq!(gdb.qemu_args(), ["-gdb", "tcp:127.0.0.1:1234", "-S"]);
//! assert_ne!(GdbOptions::free_port()?.port, 0);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Start QEMU halted, with its gdbstub on a TCP port of this machine's loopback
/// interface only: the stub hands the whole emulator (memory, registers) to whoever
/// connects, so nothing off this machine may reach it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GdbOptions {
    /// The TCP port (`localhost:<port>`).
    pub port: u16,
}

impl GdbOptions {
    /// A port of the loopback interface that is free now, as the system hands one out
    /// (bound and released: another program may still take it before QEMU does, and
    /// QEMU then fails to start, saying the address is in use).
    ///
    /// # Errors
    /// The system gave no port.
    pub fn free_port() -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
        Ok(GdbOptions { port: listener.local_addr()?.port() })
    }

    /// QEMU's arguments: the stub on the loopback port, every core halted until told to go.
    pub fn qemu_args(&self) -> [String; 3] {
        ["-gdb".into(), format!("tcp:127.0.0.1:{}", self.port), "-S".into()]
    }

    /// How to attach and stop at `kernel`'s entry (a function of `image`; `others`
    /// are the other images whose symbols help, e.g. the loader's): what `run … --gdb`
    /// prints before QEMU starts.
    pub fn attach_instructions(&self, kernel: &str, image: &Path, others: &[PathBuf]) -> String {
        let port = self.port;
        let mut text = format!(
            "QEMU is halted before the first instruction, its gdbstub on localhost:{port}.\n\
             To stop at the kernel `{kernel}`, with a GDB for this Xtensa core (one whose \
             register layout is QEMU's de233_fpu):\n  gdb {} \\\n",
            image.display()
        );
        for other in others {
            let _ = writeln!(text, "      -ex 'add-symbol-file {}' \\", other.display());
        }
        let _ = writeln!(text, "      -ex 'target remote localhost:{port}' -ex 'break {kernel}' -ex continue");
        let _ = writeln!(
            text,
            "Debian's gdb-multiarch reads the symbols (`info line`, `info functions`, `list`) \
             but cannot attach: docs/simulation.md, \"Debugger\", says what works."
        );
        text
    }
}
