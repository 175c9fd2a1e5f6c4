//! The host tier's store hooks: how a library copy keeps its core's stores out of the
//! other cores' memory (qemu/hosttier, `apart.rs`, is the loader's half).
//!
//! On the host tier every core is a thread of one process, so nothing in the hardware
//! keeps core 0 from storing into core 1's stack or dataram. The host tier builds an
//! author's code with the compiler's AddressSanitizer pass reduced to a call before
//! every store (no shadow memory, no sanitizer runtime, reads and stack left alone),
//! its callbacks renamed to `__ncop_host_store{1,2,4,8,16,N}` and
//! `__ncop_host_mem{cpy,move,set}`: they are defined here, in each library copy.
//! Each tests the store's address against the [`StoreWatch`] the loader gave this copy
//! (`neuron_host_watch_stores`): a store inside one of the cores' spans (their stacks,
//! datarams, HBM scratches) but outside this core's own part of it is handed to the
//! loader's observer with the return address of the hook's call, which is in the
//! author's code at the store, and the store then goes ahead (as on the device, whose
//! checks report and let the kernel run on).
//!
//! In the `--sanitize address` build (feature `host-asan`) AddressSanitizer's own checks
//! are such calls, renamed: each of these checks a store, then jumps to ASan's check of
//! the access (loads go straight there). The runtime's own copies for a kernel
//! (`data_transfer::copy`) are checked the same way (`copying`), in every host-tier
//! build.
//!
//! Invariant: the watch is written before the core's thread runs any of this copy's
//! code (the loader sets it when it loads the copy), and never again.

/// A span of host addresses, `[start, end)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// The first address.
    pub start: usize,
    /// One past the last.
    pub end: usize,
}

impl Span {
    /// Whether `address` is inside.
    #[inline(always)]
    pub const fn holds(&self, address: usize) -> bool {
        address >= self.start && address < self.end
    }
}

/// One kind of per-core memory: every core's parts together, and this core's own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watched {
    /// Every core's parts.
    pub all: Span,
    /// This core's part, inside [`Watched::all`].
    pub own: Span,
}

/// How many kinds of memory a [`StoreWatch`] holds: stacks, datarams, HBM scratches.
pub const WATCHED_KINDS: usize = 3;

/// C ABI: what a library copy's store hooks test each store against, kinds in the
/// order the loader chose (the most stored-into first: the stacks).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreWatch {
    /// Each kind of per-core memory.
    pub kinds: [Watched; WATCHED_KINDS],
}

const _: () = assert!(size_of::<Span>() == 2 * size_of::<usize>());
const _: () = assert!(size_of::<Watched>() == 4 * size_of::<usize>());
const _: () = assert!(size_of::<StoreWatch>() == WATCHED_KINDS * size_of::<Watched>());

/// `void observer(uintptr_t address, size_t bytes, uintptr_t pc)`: a store of `bytes`
/// into another core's memory, whose byte at `address` is that core's (its first, or
/// else its last), made at `pc` (a return address in the code that stores), or by the
/// runtime's own copy (`pc` 0).
pub type StoreObserver = unsafe extern "C" fn(usize, usize, usize);

#[cfg(all(feature = "host-tier", target_arch = "x86_64"))]
pub use hooks::{copying, neuron_host_watch_stores};

#[cfg(all(feature = "host-tier", target_arch = "x86_64"))]
mod hooks {
    use super::{StoreObserver, StoreWatch, WATCHED_KINDS};
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// The watch's words (`[all.start, all.end, own.start, own.end]` per kind), as
    /// atomics: written once, read by the core's thread (relaxed: the thread is started
    /// after they are written).
    static WATCH: [[AtomicUsize; 4]; WATCHED_KINDS] = [const { [const { AtomicUsize::new(0) }; 4] }; WATCHED_KINDS];
    /// The lowest address of every kind's `all` and one past the highest: a store
    /// outside them (into a tensor, a static) is nobody's in one comparison or two.
    static BOUNDS: [AtomicUsize; 2] = [const { AtomicUsize::new(0) }; 2];
    /// The loader's observer, or 0.
    static OBSERVER: AtomicUsize = AtomicUsize::new(0);

    /// C ABI `void neuron_host_watch_stores(const StoreWatch *watch, observer)`, the
    /// host tier loader's: this copy's hooks report every store inside a kind's
    /// `all` but outside its `own` to `observer`. Called before the core runs.
    ///
    /// # Safety
    /// `watch` is null or points to a valid [`StoreWatch`].
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn neuron_host_watch_stores(watch: *const StoreWatch, observer: Option<StoreObserver>) {
        // SAFETY: the caller's contract.
        let Some(watch) = (unsafe { watch.as_ref() }) else { return };
        for (words, kind) in WATCH.iter().zip(&watch.kinds) {
            let values = [kind.all.start, kind.all.end, kind.own.start, kind.own.end];
            for (word, value) in words.iter().zip(values) {
                word.store(value, Ordering::Relaxed);
            }
        }
        let lowest = watch.kinds.iter().map(|kind| kind.all.start).min().unwrap_or(0);
        let highest = watch.kinds.iter().map(|kind| kind.all.end).max().unwrap_or(0);
        BOUNDS[0].store(lowest, Ordering::Relaxed);
        BOUNDS[1].store(highest, Ordering::Relaxed);
        OBSERVER.store(observer.map_or(0, |f| f as usize), Ordering::Release);
    }

    /// Whether a store at `address` is another core's: inside a kind's span of every
    /// core, outside this core's part. A store outside every kind (into a tensor) is
    /// answered first; then the stacks: at `-O0` nearly every other store is into the
    /// core's own stack.
    #[inline(always)]
    fn foreign(address: usize) -> bool {
        if address < BOUNDS[0].load(Ordering::Relaxed) || address >= BOUNDS[1].load(Ordering::Relaxed) {
            return false;
        }
        for [all_start, all_end, own_start, own_end] in &WATCH {
            if address >= all_start.load(Ordering::Relaxed) && address < all_end.load(Ordering::Relaxed) {
                return address < own_start.load(Ordering::Relaxed) || address >= own_end.load(Ordering::Relaxed);
            }
        }
        false
    }

    /// A store of `bytes` at `address`, made at `pc`: reported if its first or last
    /// byte is another core's (that byte's address: a copy that runs on from this core's
    /// memory into the next core's is named by the next core's).
    #[inline(always)]
    fn check(address: usize, bytes: usize, pc: usize) {
        let last = address.wrapping_add(bytes.max(1) - 1);
        let hit = if foreign(address) {
            address
        } else if bytes > 1 && foreign(last) {
            last
        } else {
            return;
        };
        let observer = OBSERVER.load(Ordering::Acquire);
        if observer != 0 {
            // SAFETY: only `neuron_host_watch_stores` stores here, a `StoreObserver`.
            let observer = unsafe { core::mem::transmute::<usize, StoreObserver>(observer) };
            // SAFETY: the loader's function of that signature; it only records.
            unsafe { observer(hit, bytes, pc) };
        }
    }

    /// The runtime's own copy of `len` bytes to `dst` is about to be made for a kernel
    /// (`data_transfer::copy`: `neuron_memcpy`, the TCM and stream accessors), whose
    /// code has no store calls: checked as a store call's copy, at no place (pc 0: the
    /// loader takes the place from the call stack, the copy's call site in the runtime
    /// and the kernel's line under it).
    #[inline(always)]
    pub fn copying(dst: *mut u8, len: usize) {
        if len > 0 {
            check(dst as usize, len, 0);
        }
    }

    /// The hooks' common half: `address`, the hook's return address, the store's size
    /// (the System V registers the trampolines below fill).
    extern "C" fn checked_store(address: usize, pc: usize, bytes: usize) {
        check(address, bytes, pc);
    }

    /// The calls of a build without AddressSanitizer: each checks, then returns to the
    /// store (or makes the copy).
    #[cfg(not(feature = "host-asan"))]
    mod alone {
        use super::{check, checked_store};
        use core::ffi::c_void;

        /// `__ncop_host_store<N>(address)`: a store of N bytes is about to be made. A
        /// naked trampoline: the return address (at the stack pointer on entry) goes to
        /// [`checked_store`] as its second argument, the size as its third, and it
        /// returns straight to the store.
        macro_rules! store_hook {
            ($name:ident, $bytes:literal) => {
                #[unsafe(naked)]
                #[unsafe(no_mangle)]
                pub extern "C" fn $name(_address: usize) {
                    core::arch::naked_asm!(
                        "mov rsi, [rsp]",
                        concat!("mov edx, ", $bytes),
                        "jmp {check}",
                        check = sym checked_store,
                    )
                }
            };
        }
        store_hook!(__ncop_host_store1, 1);
        store_hook!(__ncop_host_store2, 2);
        store_hook!(__ncop_host_store4, 4);
        store_hook!(__ncop_host_store8, 8);
        store_hook!(__ncop_host_store16, 16);

        /// `__ncop_host_storeN(address, bytes)`: a store of another size.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub extern "C" fn __ncop_host_storeN(_address: usize, _bytes: usize) {
            core::arch::naked_asm!("mov rdx, rsi", "mov rsi, [rsp]", "jmp {check}", check = sym checked_store)
        }

        /// [`__ncop_host_memcpy`]'s body, with its return address `pc`.
        unsafe extern "C" fn checked_memcpy(dst: *mut c_void, src: *const c_void, n: usize, pc: usize) -> *mut c_void {
            check(dst as usize, n, pc);
            // SAFETY: the instrumented `memcpy`'s own contract (its caller's).
            unsafe { core::ptr::copy_nonoverlapping(src.cast::<u8>(), dst.cast::<u8>(), n) };
            dst
        }

        /// [`__ncop_host_memmove`]'s body, with its return address `pc`.
        unsafe extern "C" fn checked_memmove(dst: *mut c_void, src: *const c_void, n: usize, pc: usize) -> *mut c_void {
            check(dst as usize, n, pc);
            // SAFETY: the instrumented `memmove`'s own contract (its caller's).
            unsafe { core::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), n) };
            dst
        }

        /// [`__ncop_host_memset`]'s body, with its return address `pc`.
        unsafe extern "C" fn checked_memset(dst: *mut c_void, value: i32, n: usize, pc: usize) -> *mut c_void {
            check(dst as usize, n, pc);
            // SAFETY: the instrumented `memset`'s own contract (its caller's); C stores
            // `(unsigned char)value`.
            unsafe { core::ptr::write_bytes(dst.cast::<u8>(), value as u8, n) };
            dst
        }

        /// `__ncop_host_mem{cpy,move,set}(dst, src or value, n)`: what the compiler
        /// makes of a copy or fill of its own (a structure assigned, `__builtin_memset`).
        /// A naked trampoline: the return address goes to the body as its fourth
        /// argument.
        macro_rules! copy_hook {
            ($name:ident, $body:ident, $second:ty) => {
                #[unsafe(naked)]
                #[unsafe(no_mangle)]
                pub unsafe extern "C" fn $name(_dst: *mut c_void, _second: $second, _n: usize) -> *mut c_void {
                    core::arch::naked_asm!("mov rcx, [rsp]", "jmp {body}", body = sym $body)
                }
            };
        }
        copy_hook!(__ncop_host_memcpy, checked_memcpy, *const c_void);
        copy_hook!(__ncop_host_memmove, checked_memmove, *const c_void);
        copy_hook!(__ncop_host_memset, checked_memset, i32);

        /// What the AddressSanitizer pass calls before a call that does not return (to
        /// forget the frames it leaves): with no shadow memory, nothing to do.
        #[unsafe(no_mangle)]
        pub extern "C" fn __asan_handle_no_return() {}
    }

    /// The calls of the `--sanitize address` build, whose author's code calls these for
    /// every access in place of ASan's own checks (renamed): a store is checked, then
    /// each goes on to ASan's check of the access (`__asan_store4`, ...; its report
    /// names the author's instruction: the trampolines jump there, the return address
    /// untouched).
    #[cfg(feature = "host-asan")]
    mod with_asan {
        use super::checked_store;
        use core::ffi::c_void;

        unsafe extern "C" {
            // AddressSanitizer's callbacks (its runtime, which the loader preloads).
            fn __asan_store1(address: usize);
            fn __asan_store2(address: usize);
            fn __asan_store4(address: usize);
            fn __asan_store8(address: usize);
            fn __asan_store16(address: usize);
            fn __asan_storeN(address: usize, bytes: usize);
            fn __asan_load1(address: usize);
            fn __asan_load2(address: usize);
            fn __asan_load4(address: usize);
            fn __asan_load8(address: usize);
            fn __asan_load16(address: usize);
            fn __asan_loadN(address: usize, bytes: usize);
            fn __asan_memcpy(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
            fn __asan_memmove(dst: *mut c_void, src: *const c_void, n: usize) -> *mut c_void;
            fn __asan_memset(dst: *mut c_void, value: i32, n: usize) -> *mut c_void;
        }

        /// `__ncop_host_store<N>(address)`: [`checked_store`] (the address kept on the
        /// stack, which the push aligns for the call), then ASan's own.
        macro_rules! store_hook {
            ($name:ident, $bytes:literal, $asan:ident) => {
                #[unsafe(naked)]
                #[unsafe(no_mangle)]
                pub extern "C" fn $name(_address: usize) {
                    core::arch::naked_asm!(
                        "push rdi",
                        "mov rsi, [rsp + 8]",
                        concat!("mov edx, ", $bytes),
                        "call {check}",
                        "pop rdi",
                        "jmp {asan}",
                        check = sym checked_store,
                        asan = sym $asan,
                    )
                }
            };
        }
        store_hook!(__ncop_host_store1, 1, __asan_store1);
        store_hook!(__ncop_host_store2, 2, __asan_store2);
        store_hook!(__ncop_host_store4, 4, __asan_store4);
        store_hook!(__ncop_host_store8, 8, __asan_store8);
        store_hook!(__ncop_host_store16, 16, __asan_store16);

        /// `__ncop_host_storeN(address, bytes)`: a store of another size.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub extern "C" fn __ncop_host_storeN(_address: usize, _bytes: usize) {
            core::arch::naked_asm!(
                "push rdi",
                "push rsi",
                "sub rsp, 8",
                "mov rdx, rsi",
                "mov rsi, [rsp + 24]",
                "call {check}",
                "add rsp, 8",
                "pop rsi",
                "pop rdi",
                "jmp {asan}",
                check = sym checked_store,
                asan = sym __asan_storeN,
            )
        }

        /// `__ncop_host_load<N>`: ASan's own check, nothing of ours (a load is no
        /// other core's business).
        macro_rules! load_hook {
            ($name:ident, $asan:ident) => {
                #[unsafe(naked)]
                #[unsafe(no_mangle)]
                pub extern "C" fn $name(_address: usize) {
                    core::arch::naked_asm!("jmp {asan}", asan = sym $asan)
                }
            };
        }
        load_hook!(__ncop_host_load1, __asan_load1);
        load_hook!(__ncop_host_load2, __asan_load2);
        load_hook!(__ncop_host_load4, __asan_load4);
        load_hook!(__ncop_host_load8, __asan_load8);
        load_hook!(__ncop_host_load16, __asan_load16);

        /// `__ncop_host_loadN(address, bytes)`.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub extern "C" fn __ncop_host_loadN(_address: usize, _bytes: usize) {
            core::arch::naked_asm!("jmp {asan}", asan = sym __asan_loadN)
        }

        /// `__ncop_host_mem{cpy,move,set}(dst, src or value, n)`: the destination
        /// checked (its three arguments kept on the stack, which the pushes align), then
        /// ASan's own, which checks both ranges and copies.
        macro_rules! copy_hook {
            ($name:ident, $asan:ident, $second:ty) => {
                #[unsafe(naked)]
                #[unsafe(no_mangle)]
                pub unsafe extern "C" fn $name(_dst: *mut c_void, _second: $second, _n: usize) -> *mut c_void {
                    core::arch::naked_asm!(
                        "push rdi",
                        "push rsi",
                        "push rdx",
                        "mov rsi, [rsp + 24]",
                        "call {check}",
                        "pop rdx",
                        "pop rsi",
                        "pop rdi",
                        "jmp {asan}",
                        check = sym checked_store,
                        asan = sym $asan,
                    )
                }
            };
        }
        copy_hook!(__ncop_host_memcpy, __asan_memcpy, *const c_void);
        copy_hook!(__ncop_host_memmove, __asan_memmove, *const c_void);
        copy_hook!(__ncop_host_memset, __asan_memset, i32);
    }
}
