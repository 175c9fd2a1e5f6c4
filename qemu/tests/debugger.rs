//! `run … --gdb` (`neuroncustomop_machine::debugger`): QEMU starts halted with its gdbstub
//! listening, and a debugger that sets a breakpoint at a kernel's entry stops there.
//!
//! Debian's gdb-multiarch cannot attach to this core (docs/simulation.md, "Debugger"),
//! so the test speaks the GDB remote protocol itself: the few packets a debugger sends
//! to read the PC, set a breakpoint, continue and read the PC again.

use neuroncustomop::wrapper_api::{ArgTensor, Dtype};
use neuroncustomop_machine::debugger::GdbOptions;
use neuroncustomop_machine::device;
use neuroncustomop_machine::elf;
use neuroncustomop_machine::images;
use neuroncustomop_machine::job::{Job, Op};
use neuroncustomop_wire::job::OutputDump;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A GDB remote protocol connection (acknowledged mode).
struct Remote(TcpStream);

impl Remote {
    /// Connects once QEMU listens (it starts in another thread: this polls the port).
    fn connect(port: u16) -> Remote {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(stream) => {
                    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
                    return Remote(stream);
                }
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => panic!("QEMU's gdbstub never listened on {port}: {e}"),
            }
        }
    }

    fn byte(&mut self) -> u8 {
        let mut byte = [0];
        self.0.read_exact(&mut byte).expect("the stub answers");
        byte[0]
    }

    /// Sends `$body#checksum`, waits for the stub's `+`, returns its reply's body.
    fn ask(&mut self, body: &str) -> String {
        let checksum = body.bytes().fold(0u8, |sum, b| sum.wrapping_add(b));
        self.0.write_all(format!("${body}#{checksum:02x}").as_bytes()).unwrap();
        while self.byte() != b'+' {}
        while self.byte() != b'$' {}
        let mut reply = Vec::new();
        loop {
            match self.byte() {
                b'#' => break,
                b => reply.push(b),
            }
        }
        let _ = (self.byte(), self.byte());
        self.0.write_all(b"+").unwrap();
        String::from_utf8(reply).unwrap()
    }

    /// The PC of the thread `Hg` chose: the first register of the `g` reply, in
    /// QEMU's Xtensa register map (its stub answers no `p` packet for this core).
    fn pc(&mut self) -> u32 {
        let registers = self.ask("g");
        let pc = registers.get(..8).and_then(|hex| u32::from_str_radix(hex, 16).ok());
        pc.map(u32::swap_bytes).unwrap_or_else(|| panic!("registers, not {registers:?}"))
    }
}

/// A failed test must not leave QEMU halted for ever: `k` ends it (a no-op once the
/// simulation has finished and the connection is gone).
impl Drop for Remote {
    fn drop(&mut self) {
        let _ = self.0.write_all(b"$k#6b");
    }
}

/// The ELF entry point (`e_entry`).
fn entry(image: &std::path::Path) -> u32 {
    let bytes = std::fs::read(image).unwrap();
    u32::from_le_bytes(bytes[0x18..0x1C].try_into().unwrap())
}

#[test]
fn qemu_starts_halted_and_a_breakpoint_at_the_kernel_entry_stops_there() {
    let library = images::build("fault_probe").expect("build fault_probe");
    let loader = images::build("loader").expect("build loader");
    let kernel =
        elf::symbol(&std::fs::read(&library.cores[0]).unwrap(), "exits").unwrap().expect("the kernel's symbol");
    let mut job = Job::new(&library, 1).expect("job");
    let (x, _) = job.place(0, vec![0; 64]);
    let (out, out_device) = job.place(0x1000, vec![0; 64]);
    let function = job.function("exits");
    job.push(&Op {
        function,
        output: Some(ArgTensor::hbm_tensor(Dtype::Int32, &[16], out).unwrap().to_bytes()),
        inputs: vec![ArgTensor::hbm_tensor(Dtype::Int32, &[16], x).unwrap().to_bytes()],
        dump: OutputDump { address: out_device, len: 64 },
    })
    .expect("op");
    // A free port of the loopback interface: the OS picks one, then lets it go for QEMU.
    let gdb = GdbOptions::free_port().expect("a free port");
    let port = gdb.port;
    let help = gdb.attach_instructions("exits", &library.cores[0], &loader.cores[..1]);
    assert!(help.contains(&format!("target remote localhost:{port}")) && help.contains("break exits"), "{help}");
    let qemu = std::thread::spawn(move || device::run_under_gdb(&library, &job, gdb).expect("QEMU runs"));

    let mut remote = Remote::connect(port);
    let stopped = remote.ask("?");
    assert!(stopped.starts_with('T') || stopped.starts_with('S'), "halted at the start: {stopped}");
    assert_eq!(remote.ask("Hg1"), "OK");
    assert_eq!(remote.pc(), entry(&loader.cores[0]), "core 0 waits at the loader's first instruction");

    assert_eq!(remote.ask(&format!("Z0,{kernel:x},3")), "OK");
    let stop = remote.ask("c");
    assert!(stop.starts_with("T05"), "a breakpoint stop: {stop}");
    // The core that hit the breakpoint is the stub's current thread.
    let current = remote.ask("qC");
    let thread =
        current.strip_prefix("QC").unwrap_or_else(|| panic!("the current thread, not {current:?}")).to_string();
    assert_eq!(remote.ask(&format!("Hg{thread}")), "OK");
    assert_eq!(remote.pc(), kernel, "stopped at the kernel's entry");

    // Let it run to the end: the kernel exits, the loader reports it and finishes.
    assert_eq!(remote.ask(&format!("z0,{kernel:x},3")), "OK");
    remote.0.write_all(b"$c#63").unwrap();
    let report = qemu.join().expect("the QEMU thread");
    assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    assert_eq!(report.core(0).ops[0].status, device::OpStatus::Exit(7));
}
