//! Keeping each core's stack and dataram from the other cores, on the host tier, where
//! the cores are threads of one process and nothing in the hardware keeps them apart.
//!
//! An author's C, C++ and Rust code is built with a call before every store
//! ([`clang_flags`], [`rustc_flags`]: LLVM's AddressSanitizer pass reduced to its
//! callbacks, renamed; no shadow memory and no sanitizer runtime), which each library
//! copy's runtime answers (`runtime/arch/host_stores.rs`): it tests the address against
//! the cores' stacks ([`crate::cores::stack`]), datarams and HBM scratches (the heaps and
//! the TCM pool are in them), and hands a store into another core's part to
//! [`on_foreign_store`], which records a `cross-core-store` finding naming the owner's
//! region at the store's line; the store goes ahead and the kernel runs on, as on the
//! device.
//!
//! A C or C++ object's calls to `memcpy`, `memmove` and `memset` (the C library's, in a
//! freestanding build) are renamed to the runtime's checked copies
//! ([`redirect_copies`]).
//!
//! The runtime's own copies for a kernel (`neuron_memcpy`, the TCM and stream
//! accessors) are checked by the runtime, in every build, and found at their call site
//! in the runtime, the kernel's line in the backtrace under it.
//!
//! What it leaves out: the kernel's own stores in the `--sanitize address` and `thread`
//! builds, whose sanitizers' own instrumentation clang and rustc do not combine with
//! this one ([`keeps_cores_apart`]).

use crate::Sanitizer;
use crate::cores;
use neuroncustomop::arch::host_stores::{Span, StoreWatch, Watched};
use neuroncustomop_machine::process;
use neuroncustomop_machine::toolchain::Llvm;
use neuroncustomop_wire::checks::{Region, RegionKind};
use neuroncustomop_wire::job::{CORES, data_scratch, hbm_scratch};
use std::ffi::c_void;
use std::path::Path;
use std::process::Command;

/// The compiler's AddressSanitizer pass, as the host tier uses it: a call to
/// `__ncop_host_store<N>` (or `__ncop_host_mem{cpy,move,set}` for the compiler's own
/// copies) before every store, always a call (threshold 0: no inline shadow check);
/// reads, the stack's redzones, globals and the module constructor left out.
const LLVM_ARGS: [&str; 6] = [
    "-asan-instrumentation-with-call-threshold=0",
    "-asan-instrument-reads=0",
    "-asan-stack=0",
    "-asan-globals=0",
    "-asan-memory-access-callback-prefix=__ncop_host_",
    "-asan-constructor-kind=none",
];

/// Whether a build with `sanitizer` keeps the cores apart: without one or with
/// UndefinedBehaviorSanitizer; not with AddressSanitizer or ThreadSanitizer, whose
/// instrumentation clang (and rustc) will not combine with another address pass.
pub fn keeps_cores_apart(sanitizer: Option<Sanitizer>) -> bool {
    matches!(sanitizer, None | Some(Sanitizer::Undefined))
}

/// clang's flags for a C or C++ source built with `sanitizer`: the store calls, when
/// the build keeps the cores apart.
pub(crate) fn clang_flags(sanitizer: Option<Sanitizer>) -> Vec<String> {
    if !keeps_cores_apart(sanitizer) {
        return Vec::new();
    }
    let mut flags = vec!["-fsanitize=address".to_string()];
    for arg in LLVM_ARGS {
        flags.extend(["-mllvm".to_string(), arg.to_string()]);
    }
    flags
}

/// rustc's flags for a Rust library's own crate built with `sanitizer` (the runtime and
/// `core` are not instrumented): the same pass through `-Zsanitizer=address` (rustc has
/// no kernel-address sanitizer for x86-64 Linux), which needs `RUSTC_BOOTSTRAP=1` on the
/// stable toolchain; no sanitizer runtime is linked (`-Zexternal-clangrt`).
pub(crate) fn rustc_flags(sanitizer: Option<Sanitizer>) -> Vec<String> {
    if sanitizer.is_some() {
        return Vec::new();
    }
    let mut flags = crate::sanitize::rustc_sanitizer("address");
    flags.extend(LLVM_ARGS.map(|arg| format!("-Cllvm-args={arg}")));
    flags
}

/// A core's part of one kind of memory: `(start, len)` of core `core`'s.
type Part = fn(u32) -> (u32, u32);

/// The C library's copies an author's object may call by name, and the runtime's
/// checked copies of the same signatures (`runtime/arch/host_stores.rs`) its calls are
/// renamed to ([`redirect_copies`]).
const COPIES: [(&str, &str); 3] =
    [("memcpy", "__ncop_host_memcpy"), ("memmove", "__ncop_host_memmove"), ("memset", "__ncop_host_memset")];

/// Renames an author's object's calls to `memcpy`, `memmove` and `memset` to the
/// runtime's checked copies, when its build with `sanitizer` keeps the cores apart: in
/// a freestanding build these are calls to the C library's functions, which have no
/// store calls, and the compiler's pass sees none of them. Only the author's objects:
/// the runtime's own copies keep calling the C library's.
pub(crate) fn redirect_copies(object: &Path, sanitizer: Option<Sanitizer>) -> Result<(), String> {
    if !keeps_cores_apart(sanitizer) {
        return Ok(());
    }
    let mut objcopy = Command::new(Llvm::OBJCOPY);
    for (name, checked) in COPIES {
        objcopy.arg(format!("--redefine-sym={name}={checked}"));
    }
    process::output(objcopy.arg(object)).map(drop).map_err(|failed| failed.to_string())
}

/// Each core's part of each kind of memory the store calls watch, the most
/// stored-into first (a kernel's locals): its stack, dataram, HBM scratch.
const KINDS: [(RegionKind, Part); 3] =
    [(RegionKind::Stack, cores::stack), (RegionKind::DataScratch, data_scratch), (RegionKind::HbmScratch, hbm_scratch)];

/// `(start, len)` as a span.
fn span((start, len): (u32, u32)) -> Span {
    Span { start: start as usize, end: start as usize + len as usize }
}

/// What core `core`'s library copy watches: each kind's parts of every core (each kind's
/// parts lie one after the other), and its own.
fn watch(core: u32) -> StoreWatch {
    let mut watch = StoreWatch::default();
    for (watched, (_, part)) in watch.kinds.iter_mut().zip(KINDS) {
        let (first, last) = (span(part(0)), span(part(CORES as u32 - 1)));
        *watched = Watched { all: Span { start: first.start, end: last.end }, own: span(part(core)) };
    }
    watch
}

/// Has the library copy (dlopen `handle`) of core `core` report its stores into
/// another core's memory to [`on_foreign_store`], if it has store calls to answer
/// (its runtime exports `neuron_host_watch_stores`).
pub(crate) fn watch_stores(handle: *mut c_void, core: u32) {
    // SAFETY: a loaded handle and a NUL-terminated name.
    let setter = unsafe { libc::dlsym(handle, c"neuron_host_watch_stores".as_ptr()) };
    if setter.is_null() {
        return;
    }
    type Observer = unsafe extern "C" fn(usize, usize, usize);
    // SAFETY: the runtime's `void neuron_host_watch_stores(const StoreWatch *, observer)`.
    let setter = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*const StoreWatch, Option<Observer>)>(setter)
    };
    let watch = watch(core);
    // SAFETY: a valid watch, read during the call; the observer has that signature.
    unsafe { setter(&watch, Some(on_foreign_store)) };
}

/// The core and region of another core's memory `address` is in, if it is.
pub(crate) fn owner_of(address: usize) -> Option<(u32, Region)> {
    KINDS.into_iter().find_map(|(kind, part)| {
        (0..CORES as u32).find_map(|core| {
            let (start, len) = part(core);
            span((start, len)).holds(address).then(|| (core, Region::new(kind, 0, start, len)))
        })
    })
}

/// A library copy's store call found a store of `bytes` at `address`, made at `pc` (the
/// call's return address; 0 for the runtime's own copy), into another core's memory: a
/// `cross-core-store` finding of the running kernel, at the call's instruction (inside
/// it: its line is the store's).
unsafe extern "C" fn on_foreign_store(address: usize, _bytes: usize, pc: usize) {
    if let Some((owner, region)) = owner_of(address).filter(|(owner, _)| *owner != cores::core()) {
        crate::checks::cross_core_store(pc.checked_sub(1), address, owner, region);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_watches_every_cores_parts_and_knows_its_own() {
        let watch = watch(2);
        let [stacks, datarams, hbm] = watch.kinds;
        assert_eq!(stacks.own, span(cores::stack(2)));
        assert!(stacks.all.holds(cores::stack(0).0 as usize) && stacks.all.holds(stacks.own.end - 1));
        assert_eq!(datarams.own, span(data_scratch(2)));
        assert_eq!(datarams.all.end - datarams.all.start, CORES * data_scratch(0).1 as usize);
        assert_eq!(hbm.own, span(hbm_scratch(2)));
        let (start, _) = data_scratch(3);
        let (owner, region) = owner_of(start as usize + 4).unwrap();
        assert_eq!((owner, region.kind(), region.start), (3, Some(RegionKind::DataScratch), start));
        assert_eq!(
            owner_of(cores::stack(1).0 as usize).map(|(core, r)| (core, r.kind())),
            Some((1, Some(RegionKind::Stack)))
        );
        assert!(owner_of(0x6200_0000).is_none(), "the tensor area is no core's");
    }

    #[test]
    fn only_builds_without_address_or_thread_sanitizer_get_the_store_calls() {
        assert!(clang_flags(None).iter().any(|flag| flag == "-asan-memory-access-callback-prefix=__ncop_host_"));
        assert!(!clang_flags(Some(Sanitizer::Undefined)).is_empty());
        assert!(clang_flags(Some(Sanitizer::Address)).is_empty() && clang_flags(Some(Sanitizer::Thread)).is_empty());
        assert!(rustc_flags(None).contains(&"-Zsanitizer=address".to_string()));
        assert!(rustc_flags(Some(Sanitizer::Address)).is_empty());
    }
}
