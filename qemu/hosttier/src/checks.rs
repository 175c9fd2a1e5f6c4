//! The host tier's own memory checks, with or without a sanitizer: what the device's
//! checks (`qemu/plugin`) find that a host process can see for itself, reported as the
//! device reports it (`FINDING` and `CHECKED` lines of `neuroncustomop_wire::plugin`,
//! the kinds of `neuroncustomop_wire::finding`), so the host API reads both tiers'
//! findings alike.
//!
//! - **Stores into an input.** While an op runs, the pages of its inputs are not
//!   writable by the cores' threads ([`protect_inputs`]): a store there faults, the
//!   fault is an `input-store` finding at the store's instruction
//!   ([`on_protected_store`]), and the store is let through one instruction at a time
//!   (made writable for that thread, the instruction single-stepped with the trap flag,
//!   protected again in [`after_step`]): the kernel runs on, and every store is seen and
//!   counted. A page an input shares with another tensor would trap that tensor's
//!   stores too (they would go through the same way, unreported); the host API starts
//!   the arguments and the output on pages of their own, so none does. Where the CPU has protection
//!   keys (x86-64 PKU), the pages get a key of their own that every core's thread may
//!   read but not write, and a step lets only the faulting thread write (its PKRU, as
//!   the signal frame saved it): no other core's store slips through meanwhile. Without
//!   them the pages are made read-only for all (`mprotect`), and a step opens the page
//!   to every thread for one instruction: a store of another core into that page in
//!   that moment is missed. Under `ncop debug` nothing is protected (gdb would stop at
//!   each step).
//! - **Stores into another core's stack, data or HBM scratch** (its dataram, its heaps,
//!   its TCM pool): the author's code calls its runtime before every store, and a
//!   store into another core's part is a `cross-core-store` finding naming the owner's
//!   region ([`cross_core_store`], from `crate::apart`, which says what that leaves
//!   out); so is the runtime's own copy there. Where there are protection keys,
//!   besides, each core's scratch carries a key of its own that only that core's thread
//!   may write ([`allocate_keys`]): another core's store there faults, is the same
//!   finding (once: a store its call already reported is not reported again), and is
//!   let through the same way; so the stores of the `--sanitize thread` build, which
//!   has no store calls, are seen there too.
//! - **Double and invalid frees, leaks.** Each library copy's runtime hands the loader
//!   every heap journal record it stores (`neuron_host_journal_observer`,
//!   runtime/allocators/journal.rs): a free the runtime refused is a `double-free` (no
//!   live block starts there) or an `invalid-free` (inside a block, or outside every
//!   heap: a stack pointer); a block the op took and still holds when its kernel
//!   returns is a `leak` warning. As the device: TCM blocks are no leak (the pool is
//!   emptied every op), nor are the runtime's own blocks, nor a block taken by an
//!   earlier op (a static allocated once).
//!
//! Places are offsets into the core's library copy (`core<i>.so`): the host API names
//! them from its DWARF ([`crate::symbolizer`]).

use crate::dispatch::{OpArgs, tensor_regions};
use neuroncustomop::allocators::{Event, HeapError};
use neuroncustomop_machine::findings::SHOWN;
use neuroncustomop_wire::DecodedOp;
use neuroncustomop_wire::checks::{Region, RegionKind};
use neuroncustomop_wire::finding::FindingKind;
use neuroncustomop_wire::job::{CORES, JobHeader};
use neuroncustomop_wire::list::List;
use neuroncustomop_wire::plugin::{Block as BlockLine, Finding, Line, Place};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::RwLock;
use std::sync::atomic::{AtomicI32, Ordering};

/// The pages of the inputs of the op running, read-only while it runs, and the inputs.
struct Protected {
    /// Page-aligned `(start, end)` ranges.
    pages: Vec<(usize, usize)>,
    inputs: Vec<Region>,
}

static PROTECTED: RwLock<Protected> = RwLock::new(Protected { pages: Vec::new(), inputs: Vec::new() });

/// The host's page size.
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// The protection key of the inputs' pages (x86-64 PKU), or -1 when the CPU or the
/// kernel has none (then `mprotect`).
static INPUT_KEY: AtomicI32 = AtomicI32::new(-1);

/// Where PKRU is in a signal frame's XSAVE area (CPUID leaf 0xD, sub-leaf 9).
fn pkru_offset() -> Option<usize> {
    // Leaf 0xD describes the XSAVE components.
    let component = core::arch::x86_64::__cpuid_count(0xD, 9);
    (component.eax == 4 || component.eax == 8).then_some(component.ebx as usize).filter(|&at| at >= 576)
}

/// The PKRU bit that denies writes to memory of `key`.
fn write_disable(key: i32) -> u32 {
    2 << (2 * key)
}

/// Each core's protection key, for its data and HBM scratch (-1: none).
static CORE_KEYS: [AtomicI32; CORES] = [const { AtomicI32::new(-1) }; CORES];

/// A new protection key this thread may read and write, if the machine has them.
fn new_key() -> Option<i32> {
    // SAFETY: pkey_alloc(flags 0, access rights 0: this thread may read and write).
    let key = unsafe { libc::syscall(libc::SYS_pkey_alloc, 0, 0) };
    (1..16).contains(&key).then_some(key as i32)
}

/// Whether this machine gives the host tier protection keys (x86-64 PKU, and a kernel
/// that saves PKRU in signal frames): then stores into another core's data or HBM
/// scratch are seen, and a store into an input is never missed.
pub fn protection_keys() -> bool {
    pkru_offset().is_some()
        && new_key().is_some_and(|key| {
            // SAFETY: frees the key just allocated, which no memory carries.
            unsafe { libc::syscall(libc::SYS_pkey_free, key) };
            true
        })
}

/// Allocates the protection keys, if the machine has them: the inputs' and each of the
/// `cores` cores' own, which its data and HBM scratch then carry. Called by the loader
/// once the device memory is mapped and before it starts the cores' threads (which
/// inherit its access to every key).
pub(crate) fn allocate_keys(debugging: bool, cores: usize) {
    if debugging || pkru_offset().is_none() {
        return;
    }
    let Some(input) = new_key() else { return };
    INPUT_KEY.store(input, Ordering::Relaxed);
    for (core, slot) in CORE_KEYS.iter().enumerate().take(cores) {
        let Some(key) = new_key() else { return };
        for (start, len) in scratch(core as u32) {
            // SAFETY: the core's own region of the loader's device memory mapping, not
            // yet used: only its protection key changes.
            unsafe {
                libc::syscall(
                    libc::SYS_pkey_mprotect,
                    start as usize,
                    len as usize,
                    libc::PROT_READ | libc::PROT_WRITE,
                    key,
                )
            };
        }
        slot.store(key, Ordering::Relaxed);
    }
}

/// Core `core`'s thread starts: it may not write memory of the inputs' key, nor of the
/// other cores' keys.
pub(crate) fn deny_foreign_writes(core: u32) {
    let mut denied = 0;
    let input = INPUT_KEY.load(Ordering::Relaxed);
    if input > 0 {
        denied |= write_disable(input);
    }
    for (other, key) in CORE_KEYS.iter().enumerate() {
        let key = key.load(Ordering::Relaxed);
        if key > 0 && other != core as usize {
            denied |= write_disable(key);
        }
    }
    if denied != 0 {
        // SAFETY: RDPKRU and WRPKRU with ECX (and EDX) zero, as the instructions ask;
        // only this thread's rights to memory of those keys change.
        unsafe {
            let rights: u32;
            core::arch::asm!("rdpkru", out("eax") rights, in("ecx") 0, out("edx") _, options(nomem, nostack));
            core::arch::asm!("wrpkru", in("eax") rights | denied, in("ecx") 0, in("edx") 0, options(nostack));
        }
    }
}

/// Another core's data or HBM scratch holding `address`, with its owner and key.
fn foreign_scratch(address: usize) -> Option<(u32, i32, Region)> {
    let me = crate::cores::core();
    CORE_KEYS.iter().enumerate().find_map(|(core, key)| {
        let (core, key) = (core as u32, key.load(Ordering::Relaxed));
        if key <= 0 || core == me {
            return None;
        }
        let [data, hbm] = scratch(core);
        let kinds = [(RegionKind::DataScratch, data), (RegionKind::HbmScratch, hbm)];
        kinds.into_iter().find_map(|(kind, (start, len))| {
            (address >= start as usize && address < start as usize + len as usize)
                .then(|| (core, key, Region::new(kind, 0, start, len)))
        })
    })
}

/// The PKRU the signal frame of `context` saved (restored at the handler's return), when
/// the frame's XSAVE area holds it.
fn saved_pkru(context: &mut libc::ucontext_t) -> Option<*mut u32> {
    const MAGIC: u32 = 0x4650_5853; // FP_XSTATE_MAGIC1: the area is XSAVE's
    let area = context.uc_mcontext.fpregs.cast::<u8>();
    let offset = pkru_offset()?;
    if area.is_null() {
        return None;
    }
    // SAFETY: the kernel's signal frame: the FXSAVE area, its software bytes at 464
    // (magic, extended size, features, XSAVE size), the XSAVE header at 512.
    unsafe {
        let size = area.add(464 + 16).cast::<u32>().read_unaligned() as usize;
        if area.add(464).cast::<u32>().read_unaligned() != MAGIC || offset + 4 > size {
            return None;
        }
        // The component is present (XSTATE_BV bit 9), so the kernel restores it.
        let present = area.add(512).cast::<u64>();
        present.write_unaligned(present.read_unaligned() | 1 << 9);
        Some(area.add(offset).cast::<u32>())
    }
}

/// Makes the pages of `op`'s inputs unwritable by the cores until [`unprotect_inputs`]:
/// called by the loader before any core runs the op. Not under `ncop debug`
/// (`debugging`). Only inputs in the loader's device memory (`mapped`) are protected.
pub(crate) fn protect_inputs(job: &JobHeader, op: &DecodedOp, debugging: bool, mapped: fn(u32, u32) -> bool) {
    if debugging {
        return;
    }
    let args = OpArgs::of(op);
    let mut inputs = Vec::new();
    tensor_regions(job, args.inputs(), None, |region| {
        if region.kind() == Some(RegionKind::Input) && region.len > 0 && mapped(region.start, region.len) {
            inputs.push(region);
        }
    });
    let page = page_size();
    let mut pages: Vec<(usize, usize)> = inputs
        .iter()
        .map(|input| {
            let start = input.start as usize / page * page;
            (start, (input.start as usize + input.len as usize).next_multiple_of(page))
        })
        .collect();
    pages.sort_unstable();
    pages.dedup();
    let key = INPUT_KEY.load(Ordering::Relaxed);
    for &(start, end) in &pages {
        // SAFETY: whole pages of the loader's own device memory mapping; only their
        // protection changes, and no core runs until the op is handed out.
        unsafe {
            if key > 0 {
                let rights = libc::PROT_READ | libc::PROT_WRITE;
                libc::syscall(libc::SYS_pkey_mprotect, start, end - start, rights, key);
            } else {
                libc::mprotect(start as *mut c_void, end - start, libc::PROT_READ);
            }
        }
    }
    *PROTECTED.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Protected { pages, inputs };
}

/// Maps the inputs' pages writable again: every core has finished the op.
pub(crate) fn unprotect_inputs() {
    let mut protected = PROTECTED.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    let rights = libc::PROT_READ | libc::PROT_WRITE;
    for &(start, end) in &protected.pages {
        // SAFETY: as in `protect_inputs`; no core runs a kernel now. Key 0 is every
        // thread's.
        unsafe {
            if INPUT_KEY.load(Ordering::Relaxed) > 0 {
                libc::syscall(libc::SYS_pkey_mprotect, start, end - start, rights, 0);
            } else {
                libc::mprotect(start as *mut c_void, end - start, rights);
            }
        }
    }
    *protected = Protected { pages: Vec::new(), inputs: Vec::new() };
}

/// Pages at most one instruction may have made writable, before its step ends.
const STEP_PAGES: usize = 4;
/// The x86-64 trap flag in RFLAGS: one instruction, then SIGTRAP.
const TRAP_FLAG: i64 = 0x100;

thread_local! {
    /// Pages this thread's current instruction made writable ([`on_protected_store`]).
    static STEPPING: Cell<[usize; STEP_PAGES]> = const { Cell::new([0; STEP_PAGES]) };
    /// The PKRU write-disable bits this thread's current instruction was let past.
    static STEPPING_KEYS: Cell<u32> = const { Cell::new(0) };
    /// The address of this thread's last store its store call reported
    /// ([`cross_core_store`]): its fault under protection keys is not reported again.
    static REPORTED: Cell<usize> = const { Cell::new(0) };
    /// This core's checks.
    static CORE: RefCell<CoreChecks> = const { RefCell::new(CoreChecks::EMPTY) };
}

/// Each core's data and HBM scratch: their starts and sizes.
fn scratch(core: u32) -> [(u32, u32); 2] {
    [neuroncustomop_wire::job::data_scratch(core), neuroncustomop_wire::job::hbm_scratch(core)]
}

/// A fault at `address` (SIGSEGV; `context` the signal's `ucontext_t`): when it is a
/// store into a page [`protect_inputs`] protected, or into another core's data or HBM
/// scratch (its protection key), records it if it hit an input or, while a kernel runs,
/// the other core's memory, lets the instruction go through (writable for this one
/// step) and returns true; false for any other fault.
pub(crate) fn on_protected_store(address: usize, context: *mut c_void) -> bool {
    let Ok(protected) = PROTECTED.try_read() else { return false };
    let page = page_size();
    let input_page = protected.pages.iter().any(|&(start, end)| (start..end).contains(&address));
    let foreign = if input_page { None } else { foreign_scratch(address) };
    if !input_page && foreign.is_none() {
        return false;
    }
    // SAFETY: the kernel passes SA_SIGINFO handlers a valid ucontext.
    let context = unsafe { &mut *context.cast::<libc::ucontext_t>() };
    let pc = context.uc_mcontext.gregs[libc::REG_RIP as usize] as usize;
    let input = protected.inputs.iter().find(|input| input.contains(address as u32)).copied();
    with_core(|checks| {
        let pc = checks.offset(pc);
        if let Some(input) = input.filter(|_| input_page) {
            checks.found(FindingKind::InputStore, pc, address as u32, None, Some(input), None, &[]);
        }
        let reported = REPORTED.replace(0) == address;
        if let Some((owner, _, region)) = foreign.filter(|_| checks.op.is_some() && !reported) {
            checks.found(FindingKind::CrossCoreStore, pc, address as u32, Some(owner), Some(region), None, &[]);
        }
    });
    let key = foreign.map_or(INPUT_KEY.load(Ordering::Relaxed), |(_, key, _)| key);
    if key > 0 {
        let Some(pkru) = saved_pkru(context) else { return false };
        // SAFETY: the saved PKRU word of this thread's signal frame (`saved_pkru`).
        unsafe { pkru.write_unaligned(pkru.read_unaligned() & !write_disable(key)) };
        STEPPING_KEYS.set(STEPPING_KEYS.get() | write_disable(key));
    } else {
        let at = address / page * page;
        let mut stepping = STEPPING.get();
        if let Some(slot) = stepping.iter_mut().find(|slot| **slot == 0) {
            *slot = at;
        }
        STEPPING.set(stepping);
        // SAFETY: a page of the device memory mapping (checked above), writable again
        // for this one instruction.
        unsafe { libc::mprotect(at as *mut c_void, page, libc::PROT_READ | libc::PROT_WRITE) };
    }
    context.uc_mcontext.gregs[libc::REG_EFL as usize] |= TRAP_FLAG;
    true
}

/// The single step [`on_protected_store`] asked for is over (SIGTRAP; `context` its
/// `ucontext_t`): the pages or keys are protected again and the trap flag cleared.
/// False when this thread was not stepping (another SIGTRAP).
pub(crate) fn after_step(context: *mut c_void) -> bool {
    // SAFETY: the kernel passes SA_SIGINFO handlers a valid ucontext.
    let context = unsafe { &mut *context.cast::<libc::ucontext_t>() };
    let stepping = STEPPING.replace([0; STEP_PAGES]);
    let keys = STEPPING_KEYS.replace(0);
    if stepping == [0; STEP_PAGES] && keys == 0 {
        return false;
    }
    let page = page_size();
    for &at in stepping.iter().filter(|&&at| at != 0) {
        // SAFETY: as in `on_protected_store`: the page's protection as the op set it.
        unsafe { libc::mprotect(at as *mut c_void, page, libc::PROT_READ) };
    }
    if keys != 0
        && let Some(pkru) = saved_pkru(context)
    {
        // SAFETY: as in `on_protected_store`.
        unsafe { pkru.write_unaligned(pkru.read_unaligned() | keys) };
    }
    context.uc_mcontext.gregs[libc::REG_EFL as usize] &= !TRAP_FLAG;
    true
}

/// A store at `address` into core `owner`'s `region` (`crate::apart`), by the author's
/// code at `pc` (a process address), or by the runtime's own copy (`None`: at the
/// copy's call site in this core's library copy, the kernel's line in the backtrace
/// under it): a `cross-core-store` finding of the running kernel; none between kernels.
pub(crate) fn cross_core_store(pc: Option<usize>, address: usize, owner: u32, region: Region) {
    REPORTED.set(address);
    with_core(|checks| {
        if checks.op.is_none() {
            return;
        }
        let (pc, backtrace) = match pc {
            Some(pc) => (checks.offset(pc), Vec::new()),
            None => {
                let sites = sites(checks.library);
                sites.split_first().map_or((0, Vec::new()), |(pc, rest)| (*pc, rest.to_vec()))
            }
        };
        let kind = FindingKind::CrossCoreStore;
        checks.found(kind, pc, address as u32, Some(owner), Some(region), None, &backtrace);
    });
}

/// A heap or TCM block as the journal told it.
#[derive(Debug, Clone)]
struct Block {
    size: u32,
    /// The kernel run that took it (its [`CoreChecks::runs`]), if a kernel ran then.
    op: Option<u64>,
    tcm: bool,
    /// Where it was taken (library offsets, innermost first).
    alloc: Vec<u32>,
    /// Where it was freed, once freed.
    free: Option<Vec<u32>>,
}

/// One finding of the op, every access of its kind at its instruction into its
/// region folded into it. Its places are offsets into the core's library copy.
#[derive(Debug, Clone)]
struct Found {
    kind: FindingKind,
    pc: u32,
    address: u32,
    end: u32,
    accesses: u64,
    /// The core whose memory `region` is, when not this core's.
    owner: Option<u32>,
    region: Option<Region>,
    block: Option<(u32, Block)>,
    backtrace: Vec<u32>,
}

/// One core's checks: its library's load address, the op its kernel runs, its blocks,
/// the op's findings.
struct CoreChecks {
    library: usize,
    /// Kernel runs on this core so far (the one running, the last).
    runs: u64,
    /// The kernel run going on ([`CoreChecks::runs`]), if one is.
    op: Option<u64>,
    /// Every block, live or freed, by start.
    blocks: BTreeMap<usize, Block>,
    found: Vec<Found>,
    /// Findings past the first [`SHOWN`], counted only.
    more: u64,
}

impl CoreChecks {
    const EMPTY: CoreChecks =
        CoreChecks { library: 0, runs: 0, op: None, blocks: BTreeMap::new(), found: Vec::new(), more: 0 };

    /// Folds an access into the op's finding of its kind, instruction and region, or
    /// starts one (without allocating while fewer than [`SHOWN`]: a signal handler
    /// calls this).
    #[allow(clippy::too_many_arguments)] // a finding's parts
    fn found(
        &mut self,
        kind: FindingKind,
        pc: u32,
        address: u32,
        owner: Option<u32>,
        region: Option<Region>,
        block: Option<(u32, Block)>,
        backtrace: &[u32],
    ) {
        let end = address.saturating_add(1);
        let place = |r: Region| (r.kind, r.index, r.start);
        let same =
            |f: &Found| f.kind == kind && f.pc == pc && f.owner == owner && f.region.map(place) == region.map(place);
        if let Some(found) = self.found.iter_mut().find(|f| same(f)) {
            found.address = found.address.min(address);
            found.end = found.end.max(end);
            found.accesses += 1;
        } else if self.found.len() < SHOWN {
            let backtrace = backtrace.to_vec();
            self.found.push(Found { kind, pc, address, end, accesses: 1, owner, region, block, backtrace });
        } else {
            self.more += 1;
        }
    }

    /// `pc`'s offset in this core's library copy (0 when outside its first 4 GiB).
    fn offset(&self, pc: usize) -> u32 {
        pc.checked_sub(self.library).and_then(|offset| u32::try_from(offset).ok()).unwrap_or(0)
    }

    /// The block `address` is the start of, or inside.
    fn block_at(&self, address: usize) -> Option<(usize, &Block)> {
        let (&start, block) = self.blocks.range(..=address).next_back()?;
        (address < start + block.size.max(1) as usize).then_some((start, block))
    }
}

/// Runs `f` on this core's checks (nothing if they are in use: a fault inside them).
fn with_core(f: impl FnOnce(&mut CoreChecks)) {
    CORE.with(|core| {
        if let Ok(mut checks) = core.try_borrow_mut() {
            f(&mut checks);
        }
    });
}

/// The core's thread starts: its library copy is loaded at `library` (for places as
/// offsets into it); its findings list is made ready.
pub(crate) fn start_core(library: usize) {
    with_core(|checks| {
        checks.library = library;
        checks.found.reserve(SHOWN);
    });
}

/// The core's kernel starts running an op.
pub(crate) fn start_op() {
    with_core(|checks| {
        checks.runs += 1;
        checks.op = Some(checks.runs);
        checks.found.clear();
        checks.more = 0;
    });
}

/// The core's kernel of op `op` returned: its leaks found, its findings as the
/// device's `FINDING` lines and the `CHECKED` line of their totals (none when nothing
/// was found).
pub(crate) fn end_op(core: u32, op: u32) -> Vec<String> {
    let mut lines = Vec::new();
    with_core(|checks| {
        let run = checks.op.take();
        let leaks: Vec<(usize, Block)> = checks
            .blocks
            .iter()
            .filter(|(_, block)| block.op.is_some() && block.op == run && block.free.is_none() && !block.tcm)
            .map(|(&start, block)| (start, block.clone()))
            .collect();
        for (start, block) in leaks {
            let (pc, backtrace) = block.alloc.split_first().map_or((0, &[][..]), |(pc, rest)| (*pc, rest));
            let found = Found {
                kind: FindingKind::Leak,
                pc,
                address: start as u32,
                end: start as u32 + block.size,
                accesses: 1,
                owner: None,
                region: None,
                backtrace: backtrace.to_vec(),
                block: Some((start as u32, block)),
            };
            if checks.found.len() < SHOWN { checks.found.push(found) } else { checks.more += 1 }
        }
        for found in &checks.found {
            lines.push(line(core, op, found));
        }
        let accesses = checks.found.iter().map(|f| f.accesses).sum::<u64>() + checks.more;
        let findings = checks.found.len() as u64 + checks.more;
        if findings > 0 {
            lines.push(Line::Checked { core, op, findings, accesses }.to_string());
        }
        checks.found.clear();
        checks.more = 0;
    });
    lines
}

/// `found` as the device's `FINDING` line.
fn line(core: u32, op: u32, found: &Found) -> String {
    let shape: Vec<u16> = found.region.map(|region| region.shape().to_vec()).unwrap_or_default();
    let region = found.region.and_then(|region| {
        Some(Place {
            kind: region.kind()?,
            index: region.index,
            start: region.start,
            len: region.len,
            dtype: region.dtype,
            shape: List::Raw(&shape),
        })
    });
    let block = found.block.as_ref().map(|(start, block)| BlockLine {
        start: *start,
        size: block.size,
        tcm: block.tcm,
        alloc: List::Raw(&block.alloc),
        free: block.free.as_deref().map(List::Raw),
    });
    let finding = Finding {
        op,
        kind: found.kind,
        pc: found.pc,
        address: found.address,
        bytes: found.end - found.address,
        accesses: found.accesses,
        other_core: None,
        other_pc: None,
        dma: false,
        backtrace: List::Raw(&found.backtrace),
        block,
        reached: None,
        owner: found.owner,
        region,
    };
    Line::Finding { core, finding }.to_string()
}

/// Asks the runtime of a library copy (dlopen `handle`) to hand its heap journal
/// records to [`observe_journal`].
pub(crate) fn watch_journal(handle: *mut c_void) {
    // SAFETY: a loaded handle and a NUL-terminated name.
    let setter = unsafe { libc::dlsym(handle, c"neuron_host_journal_observer".as_ptr()) };
    if setter.is_null() {
        return;
    }
    type Observer = unsafe extern "C" fn(u32, usize, usize, usize, u32);
    // SAFETY: the runtime's `void neuron_host_journal_observer(observer)` (journal.rs).
    let setter = unsafe { std::mem::transmute::<*mut c_void, extern "C" fn(Option<Observer>)>(setter) };
    setter(Some(observe_journal));
}

/// The call sites of the runtime's call into the observer that are in this core's
/// library copy, as offsets, innermost first: each return address less one, inside
/// its call instruction, so its line is the call's.
fn sites(library: usize) -> Vec<u32> {
    let mut frames = [std::ptr::null_mut::<c_void>(); 32];
    // SAFETY: `backtrace` fills at most `frames.len()` entries.
    let count = unsafe { libc::backtrace(frames.as_mut_ptr(), frames.len() as i32) };
    frames[..count.max(0) as usize]
        .iter()
        .map(|&pc| pc as usize)
        .filter(|&pc| crate::base_of(pc) == Some(library))
        .filter_map(|pc| u32::try_from(pc - 1 - library).ok())
        .collect()
}

/// The runtime's heap journal observer: follows the blocks, and finds the refused
/// frees (the runtime's own verdict, `HeapError`'s codes, as the device's checks read it).
unsafe extern "C" fn observe_journal(event: u32, start: usize, size: usize, old: usize, status: u32) {
    with_core(|checks| {
        let library = checks.library;
        let taken = |checks: &mut CoreChecks, start: usize, size: usize, tcm: bool, op: Option<u64>| {
            let end = start + size.max(1);
            checks.blocks.retain(|&at, block| at + block.size.max(1) as usize <= start || at >= end);
            let block = Block { size: size as u32, op, tcm, alloc: sites(library), free: None };
            checks.blocks.insert(start, block);
        };
        let op = checks.op;
        let is = |one: Event| event == one as u32;
        let took = status == 0 && start != 0;
        if took && (is(Event::Alloc) || is(Event::AllocZeroed) || is(Event::TcmAlloc)) {
            taken(checks, start, size, is(Event::TcmAlloc), op);
        } else if took && is(Event::Realloc) {
            let kept = checks.blocks.get(&old).and_then(|block| block.op);
            if old != start
                && let Some(block) = checks.blocks.get_mut(&old)
            {
                block.free = Some(sites(library));
            }
            taken(checks, start, size, false, kept.or(op));
        } else if is(Event::Free) || is(Event::TcmFree) {
            refused_or_freed(checks, start, status, is(Event::TcmFree));
        } else if is(Event::HeapsReset) {
            checks.blocks.retain(|_, block| block.tcm);
        } else if is(Event::TcmReset) {
            checks.blocks.retain(|_, block| !block.tcm);
        } else if is(Event::GiveBack) {
            // A stopped kernel's blocks, given back by the runtime: no leak.
            checks.blocks.retain(|_, block| block.free.is_some() || block.op.is_none() || block.op != op);
        }
    });
}

/// A free of `start`: the block marked freed, or, refused, a finding.
fn refused_or_freed(checks: &mut CoreChecks, start: usize, status: u32, tcm: bool) {
    let sites = sites(checks.library);
    let (pc, backtrace) = sites.split_first().map_or((0, &[][..]), |(pc, rest)| (*pc, rest));
    let code = |error: HeapError| error.code() as u32;
    if status == 0 {
        if let Some(block) = checks.blocks.get_mut(&start) {
            block.free = Some(sites.clone());
        }
        return;
    }
    let kind = if status == code(HeapError::DoubleFree) {
        FindingKind::DoubleFree
    } else if status == code(HeapError::NotBlockStart) || status == code(HeapError::ForeignPointer) {
        FindingKind::InvalidFree
    } else {
        return;
    };
    let block = checks.block_at(start).map(|(at, block)| (at as u32, Block { tcm: block.tcm || tcm, ..block.clone() }));
    let backtrace = backtrace.to_vec();
    checks.found(kind, pc, start as u32, None, None, block, &backtrace);
}
