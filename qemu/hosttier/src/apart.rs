//! Keeping each core's stack and dataram from the other cores, on the host tier, where
//! the cores are threads of one process and nothing in the hardware keeps them apart.
//!
//! An author's C, C++ and Rust code is built with a call before every store
//! ([`clang_flags`], [`rustc_flags`]: LLVM's AddressSanitizer pass reduced to its
//! callbacks, renamed; no shadow memory and no sanitizer runtime; under
//! `--sanitize address`, ASan's own checks made such calls), which each library
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
//! accessors) are checked by the runtime, in every build: found at their call site in
//! the runtime, with the backtrace under it, they are named by the kernel's line that
//! called them (`neuroncustomop_machine::symbolize`).
//!
//! What it leaves out: the kernel's own stores in the `--sanitize thread` build, whose
//! instrumentation clang and rustc do not combine with this pass
//! ([`crate::sanitize::keeps_cores_apart`]).

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

/// The compiler's AddressSanitizer pass with its checks made calls to the runtime's
/// (`runtime/arch/host_stores.rs`): always a call (threshold 0: no inline shadow
/// check), renamed from `__asan_store4` to `__ncop_host_store4` (and `__asan_memcpy`,
/// the compiler's own copies, to `__ncop_host_memcpy`, ...).
const CALLS: [&str; 2] =
    ["-asan-instrumentation-with-call-threshold=0", "-asan-memory-access-callback-prefix=__ncop_host_"];

/// The rest of the pass, left out in a build without AddressSanitizer, where the calls
/// are all there is: reads, the stack's redzones, globals and the module constructor.
const ALONE: [&str; 4] =
    ["-asan-instrument-reads=0", "-asan-stack=0", "-asan-globals=0", "-asan-constructor-kind=none"];

/// Under AddressSanitizer, a kernel's locals whose address is taken stay on its core's
/// stack, not on ASan's "fake stack" (its own memory, which would let a store into
/// another core's local pass unseen): ASan does not look for a use of a local after
/// its function returned here (the `checks` line claims no such thing).
const ON_THE_STACK: &str = "-asan-use-after-return=never";

/// The pass's LLVM arguments for a build with `sanitizer` that keeps the cores apart.
fn llvm_args(sanitizer: Option<Sanitizer>) -> Vec<&'static str> {
    match sanitizer {
        Some(Sanitizer::Address) => [&CALLS[..], &[ON_THE_STACK]].concat(),
        _ => [&CALLS[..], &ALONE[..]].concat(),
    }
}

/// clang's flags for a C or C++ source built with `sanitizer`, beside the sanitizer's
/// own: the store calls, when the build keeps the cores apart.
pub(crate) fn clang_flags(sanitizer: Option<Sanitizer>) -> Vec<String> {
    if !crate::sanitize::keeps_cores_apart(sanitizer) {
        return Vec::new();
    }
    let pass = (sanitizer != Some(Sanitizer::Address)).then(|| "-fsanitize=address".to_string());
    pass.into_iter().chain(llvm_args(sanitizer).into_iter().flat_map(|arg| ["-mllvm".into(), arg.into()])).collect()
}

/// rustc's flags for a Rust library's own crate built with `sanitizer` (the runtime and
/// `core` are not instrumented), beside the sanitizer's own: the same pass through
/// `-Zsanitizer=address` (rustc has no kernel-address sanitizer for x86-64 Linux), which
/// needs `RUSTC_BOOTSTRAP=1` on the stable toolchain; no sanitizer runtime is linked
/// (`-Zexternal-clangrt`).
pub(crate) fn rustc_flags(sanitizer: Option<Sanitizer>) -> Vec<String> {
    let mut flags = match sanitizer {
        None => crate::sanitize::rustc_sanitizer("address"),
        Some(Sanitizer::Address) => Vec::new(),
        Some(_) => return Vec::new(),
    };
    flags.extend(llvm_args(sanitizer).into_iter().map(|arg| format!("-Cllvm-args={arg}")));
    flags
}

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
    if !crate::sanitize::keeps_cores_apart(sanitizer) {
        return Ok(());
    }
    let mut objcopy = Command::new(Llvm::OBJCOPY);
    for (name, checked) in COPIES {
        objcopy.arg(format!("--redefine-sym={name}={checked}"));
    }
    process::output(objcopy.arg(object)).map(drop).map_err(|failed| failed.to_string())
}

/// A core's part of one kind of memory: `(start, len)` of core `core`'s.
type Part = fn(u32) -> (u32, u32);

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
    fn every_build_but_thread_sanitizers_gets_the_store_calls_and_address_sanitizer_keeps_its_checks() {
        let has = |flags: &[String], flag: &str| flags.iter().any(|f| f == flag);
        let prefix = "-asan-memory-access-callback-prefix=__ncop_host_";
        for sanitizer in [None, Some(Sanitizer::Undefined)] {
            let flags = clang_flags(sanitizer);
            assert!(has(&flags, "-fsanitize=address") && has(&flags, prefix) && has(&flags, "-asan-stack=0"));
        }
        let address = clang_flags(Some(Sanitizer::Address));
        assert!(has(&address, prefix) && !has(&address, "-fsanitize=address") && !has(&address, "-asan-stack=0"));
        assert!(clang_flags(Some(Sanitizer::Thread)).is_empty());
        assert!(has(&rustc_flags(None), "-Zsanitizer=address"));
        let address = rustc_flags(Some(Sanitizer::Address));
        let want: Vec<String> = CALLS.iter().chain([&ON_THE_STACK]).map(|arg| format!("-Cllvm-args={arg}")).collect();
        assert_eq!(address, want, "beside the sanitizer's own flags");
        assert!(rustc_flags(Some(Sanitizer::Thread)).is_empty());
    }
}
