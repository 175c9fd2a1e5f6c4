//! The two tiers diffed down to the store: one call on the simulated device and on the
//! host tier, and where their outputs part: the first differing element, both values,
//! on each tier the core and source line of the store that last wrote it, how many
//! elements differ, and how many of those are the known 64-bit difference (a `long`
//! and a pointer are 32 bits on the device, 64 on the host).
//!
//! The device's writer comes from its memory checks, which keep each output byte's
//! last writer (core and PC): a second checked run with the element watched
//! (`SessionOptions::watch`) names it. The host tier's comes from a hardware watchpoint
//! on the element under gdb (`Library::debug`), the kernel run once more.

use crate::array::{Array, Value};
use crate::compare::{Mismatch, Tolerance, compare};
use crate::library::{Arg, Call, CallError, Library, Options, Output, Target, describe, stage};
use neuroncustomop_hosttier::Debugger;
use neuroncustomop_machine::device::{Session, SessionOptions};
use neuroncustomop_wire::plugin::Line;
use std::fmt;
use std::path::PathBuf;

/// Where a tier's store of an element was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// Core `core`'s store at `at` (function and `file:line`).
    Wrote {
        /// The core.
        core: usize,
        /// Its function and source line.
        at: String,
    },
    /// Not known, and why.
    NotKnown(String),
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Store::Wrote { core, at } => write!(f, "core {core}, {at}"),
            Store::NotKnown(why) => write!(f, "not known: {why}"),
        }
    }
}

/// The first element where the tiers part.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstDifference {
    /// Its index, one per dimension.
    pub index: Vec<usize>,
    /// The device's value (`None`: never written there).
    pub device: Option<Value>,
    /// The host tier's value (`None`: never written there).
    pub host: Option<Value>,
    /// The store that last wrote it on the device.
    pub device_store: Store,
    /// The store that last wrote it on the host tier.
    pub host_store: Store,
}

/// One call on both tiers, compared.
#[derive(Debug, Clone)]
pub struct TierDiff {
    /// The device's call.
    pub device: Call,
    /// The host tier's call.
    pub host: Call,
    /// Elements that differ (as values: `-0.0 == 0.0`, NaN equals NaN).
    pub differing: usize,
    /// Of all the output's elements.
    pub total: usize,
    /// Of the differing elements, those whose device value is the host's cut to 32
    /// bits (its low 32 bits, sign- or zero-extended): a `long` (or `unsigned long`)
    /// holding it, 32 bits on the device and 64 on the host.
    pub long_truncated: usize,
    /// Of the differing elements, those that are 4 on the device and 8 on the host: a
    /// pointer's or a `long`'s size (`sizeof`).
    pub pointer_sized: usize,
    /// The first differing element, when any differs.
    pub first: Option<FirstDifference>,
}

impl fmt::Display for TierDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(first) = &self.first else {
            return write!(f, "the tiers agree on all {} elements", self.total);
        };
        let shown = |value: &Option<Value>| value.map_or_else(|| "never written".to_string(), |v| v.to_string());
        writeln!(f, "{} of {} elements differ between the device and the host tier", self.differing, self.total)?;
        writeln!(f, "first at {:?}: device {}, host {}", first.index, shown(&first.device), shown(&first.host))?;
        writeln!(f, "  last written on the device by {}", first.device_store)?;
        write!(f, "  last written on the host tier by {}", first.host_store)?;
        if self.long_truncated > 0 {
            write!(
                f,
                "\n{} of them are the host's value cut to 32 bits: a `long` is 32 bits on the device (Xtensa) and 64 \
                 on the host tier (x86-64): use int64_t (or int32_t) where the width matters",
                self.long_truncated
            )?;
        }
        if self.pointer_sized > 0 {
            write!(
                f,
                "\n{} of them are 4 on the device and 8 on the host tier: a pointer's or a `long`'s size (sizeof), \
                 4 bytes on the device and 8 on x86-64",
                self.pointer_sized
            )?;
        }
        Ok(())
    }
}

/// Calls `kernel` with `args` on the device (checked) and on the host tier, as
/// `options` say otherwise, and compares the outputs; when they differ, runs it once
/// more on each tier to name the store that last wrote the first differing element.
///
/// # Errors
/// [`CallError`] of either call (a kernel that fails is not an error: both calls are
/// returned as they are).
pub fn diff_tiers(
    library: &Library,
    kernel: &str,
    args: &[Arg],
    output: Output,
    options: &Options,
) -> Result<TierDiff, CallError> {
    let on_device = Options { target: Target::Device, checked: true, sanitize: None, ..*options };
    let on_host = Options { target: Target::Host, sanitize: None, ..*options };
    let device = library.call_with(kernel, args, output.clone(), &on_device)?;
    let host = library.call_with(kernel, args, output.clone(), &on_host)?;
    let total = device.output.numel();
    let mut diff = TierDiff {
        differing: 0,
        total,
        long_truncated: 0,
        pointer_sized: 0,
        first: None,
        device: device.clone(),
        host: host.clone(),
    };
    let report = match compare(&device.output, &host.output, Tolerance::VALUE) {
        Ok(()) => return Ok(diff),
        Err(Mismatch::Values(report)) => report,
        Err(Mismatch::Form { .. }) => unreachable!("both calls were given one output"),
    };
    diff.differing = report.bad;
    for index in 0..total {
        if let (Value::Int(on_device), Value::Int(on_host)) = (device.output.value(index), host.output.value(index))
            && on_device != on_host
        {
            diff.long_truncated +=
                usize::from(on_device == i64::from(on_host as i32) || on_device == on_host as u32 as i64);
            diff.pointer_sized += usize::from(on_device == 4 && on_host == 8);
        }
    }
    let element = &report.first[0];
    let index = flat_index(&element.position, device.output.shape());
    let host_value = (!holds_canary(&host.output, index)).then(|| host.output.value(index));
    let (device_store, host_store) =
        match element_address(library, args, output.clone(), options.cores, index, &device.output) {
            Ok((address, size)) => (
                device_writer(library, kernel, args, output.clone(), &on_device, (address, size)),
                host_writer(library, kernel, args, output, &on_host, (address, size)),
            ),
            Err(why) => (Store::NotKnown(why.clone()), Store::NotKnown(why)),
        };
    diff.first = Some(FirstDifference {
        index: element.position.clone(),
        device: element.got,
        host: host_value,
        device_store,
        host_store,
    });
    Ok(diff)
}

fn flat_index(position: &[usize], shape: &[usize]) -> usize {
    position.iter().zip(shape).fold(0, |flat, (&i, &dim)| flat * dim + i)
}

fn holds_canary(array: &Array, index: usize) -> bool {
    array.element_bytes(index) == crate::compare::canary(array.dtype()).as_slice()
}

/// The device address and size of output element `index`: the output is placed at the
/// same address on both tiers (the host tier maps device memory at its own addresses).
fn element_address(
    library: &Library,
    args: &[Arg],
    output: Output,
    cores: usize,
    index: usize,
    like: &Array,
) -> Result<(u32, u32), String> {
    let package = library.package().map_err(|e| describe(&e))?;
    let mut job = package.job(cores).map_err(|e| e.to_string())?;
    let staged = stage(&mut job, args, output).map_err(|e| describe(&e))?;
    let size = like.dtype().size() as u32;
    Ok((staged.dump.address + index as u32 * size, size))
}

/// The device's last store to the element: the call once more, checked, with the
/// element watched.
fn device_writer(
    library: &Library,
    kernel: &str,
    args: &[Arg],
    output: Output,
    options: &Options,
    (address, size): (u32, u32),
) -> Store {
    let run = || -> Result<Store, String> {
        // The job `Library::call_with` would run, from the same staging.
        let function = library.function_id(kernel).map_err(|e| describe(&e))?;
        let (job, _) = library.op_job(function, args, output, options, None).map_err(|e| describe(&e))?;
        let package = library.package().map_err(|e| describe(&e))?;
        let watching =
            SessionOptions { count_instructions: false, watch: Some((address, size)), ..SessionOptions::default() };
        let mut session = Session::boot(&package.images, options.cores, watching).map_err(|e| describe(&e))?;
        let report = session.dispatch(&job).map_err(|e| describe(&e))?;
        let wrote = (0..options.cores as u32).find_map(|core| {
            let ran = report.core(core);
            ran.ops.first()?.plugin.lines.iter().find_map(|line| match Line::parse(line) {
                Ok(Line::Writer { core, pc, .. }) => Some((core as usize, pc)),
                _ => None,
            })
        });
        let Some((core, pc)) = wrote else {
            return Ok(Store::NotKnown("no core's store wrote it in the watched run".into()));
        };
        let loader = neuroncustomop_machine::images::build("loader").map_err(|e| describe(&e))?;
        let images: Vec<PathBuf> = package.images.cores.iter().chain(&loader.cores).cloned().collect();
        let symbols = neuroncustomop_machine::symbolize::Symbolizer::new(&images).map_err(|e| e.to_string())?;
        Ok(Store::Wrote { core, at: symbols.describe(pc) })
    };
    run().unwrap_or_else(Store::NotKnown)
}

/// Watchpoint hits gdb follows at most: the last one seen is the element's last store.
const HOST_HITS: usize = 64;

/// The host tier's last store to the element: the call once more under gdb, with a
/// hardware watchpoint on it from the kernel's entry on core 0.
fn host_writer(
    library: &Library,
    kernel: &str,
    args: &[Arg],
    output: Output,
    options: &Options,
    (address, size): (u32, u32),
) -> Store {
    let transcript = std::env::temp_dir().join(format!("ncop-diff-tiers-{}.gdb", std::process::id()));
    let _ = std::fs::remove_file(&transcript);
    // gdb's account goes to the transcript only; each hit is followed by the line of
    // the instruction before the stop (the store: a watchpoint stops after it), and
    // the loop ends quietly when the loader exits.
    let follow = format!(
        "python exec(\"try:\\n for _ in range({HOST_HITS}):\\n  gdb.execute('continue')\\n  \
         gdb.execute('info line *($pc - 1)')\\nexcept gdb.error:\\n pass\")"
    );
    let commands = vec![
        "set logging enabled off".to_string(),
        "set logging redirect on".into(),
        "set logging enabled on".into(),
        format!("watch -location *(unsigned char (*)[{size}]){address:#x}"),
        follow,
    ];
    let debugger = Debugger { core: 0, commands, batch: true, transcript: Some(transcript.clone()) };
    // The call's own result is the first run's: this one is for gdb's account only.
    let _ = library.debug(kernel, args, output, options, &debugger);
    let said = std::fs::read_to_string(&transcript).unwrap_or_default();
    let _ = std::fs::remove_file(&transcript);
    last_hit(&said).unwrap_or_else(|| {
        Store::NotKnown("gdb saw no store to it after core 0 entered the kernel (or could not watch it)".into())
    })
}

/// The last watchpoint hit in a gdb transcript: its thread (`core <i>`), and the line
/// and function of the store (`info line *($pc - 1)`: `Line 58 of "src/k.c" starts at
/// address 0x… <sum_long+83> and ends at …`).
fn last_hit(transcript: &str) -> Option<Store> {
    let mut last = None;
    let mut core = None;
    for line in transcript.lines() {
        if let Some((thread, _)) = line.split_once(" hit Hardware watchpoint") {
            core = thread.split('"').nth(1).and_then(|name| name.strip_prefix("core ")?.parse::<usize>().ok());
        } else if let (Some(core), Some(rest)) = (core, line.strip_prefix("Line ")) {
            let (number, rest) = rest.split_once(" of \"")?;
            let (file, rest) = rest.split_once('"')?;
            let function = rest.split_once('<').and_then(|(_, name)| name.split(['+', '>']).next()).unwrap_or("?");
            last = Some(Store::Wrote { core, at: format!("{function} ({file}:{number})") });
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_watchpoint_hit_names_the_core_and_the_line() {
        let transcript = "\
Hardware watchpoint 2: -location *(unsigned char (*)[8])0x80001000

Thread 2 \"core 0\" hit Hardware watchpoint 2: -location *(unsigned char (*)[8])0x80001000

Old value = \"\\245\\245\"
New value = \"\\001\"
sum_long () at /tmp/partition.c:56
56\t            for (uint32_t i = 0; i < count; i++) {
Line 58 of \"/tmp/partition.c\" starts at address 0x7ffff7fb1220 <sum_long+80> and ends at 0x7ffff7fb1234 <sum_long+100>.

Thread 3 \"core 1\" hit Hardware watchpoint 2: -location *(unsigned char (*)[8])0x80001000

Old value = \"\\001\"
New value = \"\\002\"
Line 61 of \"/tmp/partition.c\" starts at address 0x7ffff7fb1240 <other+4> and ends at 0x7ffff7fb1250 <other+20>.
[Inferior 1 (process 4) exited normally]
";
        assert_eq!(last_hit(transcript), Some(Store::Wrote { core: 1, at: "other (/tmp/partition.c:61)".into() }));
        assert_eq!(last_hit("Hardware watchpoint 2: x\n[Inferior 1 (process 4) exited normally]"), None);
    }

    #[test]
    fn indices_flatten_row_major() {
        assert_eq!(flat_index(&[1, 2], &[3, 4]), 6);
        assert_eq!(flat_index(&[0], &[5]), 0);
    }
}
