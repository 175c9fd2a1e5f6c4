//! The C++ ABI support a freestanding C++ kernel links against, as the vendor's
//! `start_exit` carries it: `operator new` / `delete` over the HBM heap, `__cxa_atexit`
//! and `__dso_handle`, `__cxa_pure_virtual`, the `__cxa_guard_*` functions of
//! function-local statics, `_init` (the static constructors) and `null_environ`.
//!
//! Symbols are the 32-bit Xtensa Itanium-ABI ones (`size_t` is `unsigned int`, mangled
//! `j`): `_Znwj` is `operator new(size_t)`; on the host tier (x86-64, `size_t` is
//! `unsigned long`, `m`) `_Znwm`. A failed throwing `operator new` cannot
//! throw (kernels are built with `-fno-exceptions`): it ends the op with
//! [`Status::OUT_OF_MEMORY`](crate::wrapper_api::Status::OUT_OF_MEMORY), which the
//! loader reports as the op's status (`0x60 OUT_OF_MEMORY`), instead of returning null into code that assumes it
//! is not. The `nothrow` forms return null.

use core::cell::Cell;
use core::ffi::{c_char, c_int, c_void};
use core::ptr::{self, NonNull};

use crate::allocators::{self, GRANULE, HeapError, HeapId};
use crate::wrapper_api::{Status, end_op};

/// A block for `operator new(size, align)`: from the HBM heap, at least [`GRANULE`]
/// aligned (as `malloc`), and distinct for every call even when `size` is 0, as C++
/// requires.
///
/// # Errors
/// The heap's error: exhausted, or an alignment it cannot give.
pub fn allocate_object(size: usize, align: usize) -> Result<NonNull<u8>, HeapError> {
    allocators::allocate(HeapId::Hbm, size.max(1), align.max(GRANULE))
}

/// Frees what [`allocate_object`] gave; null is ignored, as `delete` of null is a no-op.
pub fn free_object(block: *mut c_void) {
    if !block.is_null() {
        // A block the heap does not own is the author's bug; the heap reports it in
        // `neuron_heap_status` and changes nothing.
        let _ = allocators::free(block.cast());
    }
}

/// The throwing forms: the block, or the op ends with `OUT_OF_MEMORY`.
fn new_or_end_op(size: usize, align: usize) -> *mut c_void {
    match allocate_object(size, align) {
        Ok(block) => block.as_ptr().cast(),
        Err(_) => end_op(Status::OUT_OF_MEMORY, &[b"operator new: the HBM heap is exhausted"]),
    }
}

/// The `nothrow` forms: the block or null.
fn new_or_null(size: usize, align: usize) -> *mut c_void {
    allocate_object(size, align).map_or(ptr::null_mut(), |block| block.as_ptr().cast())
}

/// Declares the `operator new` forms: `symbol / symbol64 name(..) => allocator(size,
/// align)`, `symbol64` the mangling where `size_t` is `unsigned long` (`m`: the host
/// tier's x86-64).
macro_rules! operator_new {
    ($($(#[$doc:meta])* $symbol:literal / $symbol64:literal $name:ident($($arg:ident: $ty:ty),*) => $allocate:ident($size:expr, $align:expr);)*) => {$(
        $(#[$doc])*
        #[cfg_attr(all(c_abi, target_pointer_width = "32"), unsafe(export_name = $symbol))]
        #[cfg_attr(all(c_abi, target_pointer_width = "64"), unsafe(export_name = $symbol64))]
        pub extern "C" fn $name($($arg: $ty),*) -> *mut c_void {
            $allocate($size, $align)
        }
    )*};
}

/// `std::nothrow_t`, only ever passed by reference.
type NothrowRef = *const c_void;

operator_new! {
    /// `operator new(size_t)`.
    "_Znwj" / "_Znwm" cxx_new(size: usize) => new_or_end_op(size, GRANULE);
    /// `operator new[](size_t)`.
    "_Znaj" / "_Znam" cxx_new_array(size: usize) => new_or_end_op(size, GRANULE);
    /// `operator new(size_t, std::align_val_t)`.
    "_ZnwjSt11align_val_t" / "_ZnwmSt11align_val_t" cxx_new_aligned(size: usize, align: usize) => new_or_end_op(size, align);
    /// `operator new[](size_t, std::align_val_t)`.
    "_ZnajSt11align_val_t" / "_ZnamSt11align_val_t" cxx_new_array_aligned(size: usize, align: usize) => new_or_end_op(size, align);
    /// `operator new(size_t, const std::nothrow_t&)`.
    "_ZnwjRKSt9nothrow_t" / "_ZnwmRKSt9nothrow_t" cxx_new_nothrow(size: usize, _tag: NothrowRef) => new_or_null(size, GRANULE);
    /// `operator new[](size_t, const std::nothrow_t&)`.
    "_ZnajRKSt9nothrow_t" / "_ZnamRKSt9nothrow_t" cxx_new_array_nothrow(size: usize, _tag: NothrowRef) => new_or_null(size, GRANULE);
    /// `operator new(size_t, std::align_val_t, const std::nothrow_t&)`.
    "_ZnwjSt11align_val_tRKSt9nothrow_t" / "_ZnwmSt11align_val_tRKSt9nothrow_t"
        cxx_new_aligned_nothrow(size: usize, align: usize, _tag: NothrowRef) => new_or_null(size, align);
    /// `operator new[](size_t, std::align_val_t, const std::nothrow_t&)`.
    "_ZnajSt11align_val_tRKSt9nothrow_t" / "_ZnamSt11align_val_tRKSt9nothrow_t"
        cxx_new_array_aligned_nothrow(size: usize, align: usize, _tag: NothrowRef) => new_or_null(size, align);
}

/// Declares the `operator delete` forms; every one frees the block, whatever size or
/// alignment it is told (the heap knows both).
macro_rules! operator_delete {
    ($($(#[$doc:meta])* $symbol:literal / $symbol64:literal $name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        $(#[$doc])*
        #[cfg_attr(all(c_abi, target_pointer_width = "32"), unsafe(export_name = $symbol))]
        #[cfg_attr(all(c_abi, target_pointer_width = "64"), unsafe(export_name = $symbol64))]
        pub extern "C" fn $name(block: *mut c_void $(, $arg: $ty)*) {
            free_object(block)
        }
    )*};
}

operator_delete! {
    /// `operator delete(void*)`.
    "_ZdlPv" / "_ZdlPv" cxx_delete();
    /// `operator delete[](void*)`.
    "_ZdaPv" / "_ZdaPv" cxx_delete_array();
    /// `operator delete(void*, size_t)`.
    "_ZdlPvj" / "_ZdlPvm" cxx_delete_sized(_size: usize);
    /// `operator delete[](void*, size_t)`.
    "_ZdaPvj" / "_ZdaPvm" cxx_delete_array_sized(_size: usize);
    /// `operator delete(void*, std::align_val_t)`.
    "_ZdlPvSt11align_val_t" / "_ZdlPvSt11align_val_t" cxx_delete_aligned(_align: usize);
    /// `operator delete[](void*, std::align_val_t)`.
    "_ZdaPvSt11align_val_t" / "_ZdaPvSt11align_val_t" cxx_delete_array_aligned(_align: usize);
    /// `operator delete(void*, size_t, std::align_val_t)`.
    "_ZdlPvjSt11align_val_t" / "_ZdlPvmSt11align_val_t" cxx_delete_sized_aligned(_size: usize, _align: usize);
    /// `operator delete[](void*, size_t, std::align_val_t)`.
    "_ZdaPvjSt11align_val_t" / "_ZdaPvmSt11align_val_t" cxx_delete_array_sized_aligned(_size: usize, _align: usize);
    /// `operator delete(void*, const std::nothrow_t&)`.
    "_ZdlPvRKSt9nothrow_t" / "_ZdlPvRKSt9nothrow_t" cxx_delete_nothrow(_tag: NothrowRef);
    /// `operator delete[](void*, const std::nothrow_t&)`.
    "_ZdaPvRKSt9nothrow_t" / "_ZdaPvRKSt9nothrow_t" cxx_delete_array_nothrow(_tag: NothrowRef);
    /// `operator delete(void*, std::align_val_t, const std::nothrow_t&)`.
    "_ZdlPvSt11align_val_tRKSt9nothrow_t" / "_ZdlPvSt11align_val_tRKSt9nothrow_t" cxx_delete_aligned_nothrow(_align: usize, _tag: NothrowRef);
    /// `operator delete[](void*, std::align_val_t, const std::nothrow_t&)`.
    "_ZdaPvSt11align_val_tRKSt9nothrow_t" / "_ZdaPvSt11align_val_tRKSt9nothrow_t" cxx_delete_array_aligned_nothrow(_align: usize, _tag: NothrowRef);
}

/// A destructor `__cxa_atexit` registered: `destructor(object)`.
pub type CxaDestructor = unsafe extern "C" fn(*mut c_void);

/// How many static objects' destructors fit (each static with a destructor takes one).
pub const CXA_ATEXIT_CAPACITY: usize = 64;

/// The `__cxa_atexit` table: destructors with their objects, run last-registered first.
#[derive(Debug)]
pub struct DestructorTable<const N: usize> {
    entries: [Option<(CxaDestructor, *mut c_void)>; N],
    len: usize,
}

impl<const N: usize> DestructorTable<N> {
    /// An empty table.
    pub const fn new() -> Self {
        Self { entries: [None; N], len: 0 }
    }

    /// Registers `destructor(object)`; `false` when the table is full.
    pub fn push(&mut self, destructor: CxaDestructor, object: *mut c_void) -> bool {
        let Some(slot) = self.entries.get_mut(self.len) else {
            return false;
        };
        *slot = Some((destructor, object));
        self.len += 1;
        true
    }

    /// The most recently registered entry, taken off the table.
    pub fn pop(&mut self) -> Option<(CxaDestructor, *mut c_void)> {
        self.len = self.len.checked_sub(1)?;
        self.entries[self.len].take()
    }
}

impl<const N: usize> Default for DestructorTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

crate::global::core_local_state! {
    /// This core's static destructors, and whether `exit` knows to run them.
    fn with_destructors: (DestructorTable<CXA_ATEXIT_CAPACITY>, bool) = (DestructorTable::new(), false);
}

/// Runs the static destructors, last-registered first: the `atexit` handler
/// `__cxa_atexit` installs once.
pub extern "C" fn run_static_destructors() {
    while let Some((destructor, object)) = with_destructors(|(table, _)| table.pop()) {
        // SAFETY: the compiler registered it through `__cxa_atexit` to be called so:
        // once, with its object, at exit.
        unsafe { destructor(object) };
    }
}

/// C++ ABI `int __cxa_atexit(void (*)(void*), void*, void* dso)`: registers a static
/// object's destructor, run at `exit` (before the `atexit` handlers registered before
/// it, as C++ orders them). 0, or -1 when the table (or the `atexit` table, on the
/// first call) is full.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn __cxa_atexit(destructor: Option<CxaDestructor>, object: *mut c_void, _dso: *mut c_void) -> c_int {
    let Some(destructor) = destructor else {
        return -1;
    };
    let needs_hook = with_destructors(|(_, hooked)| !*hooked);
    if needs_hook {
        if super::register_exit_handler(run_static_destructors).is_err() {
            return -1;
        }
        with_destructors(|(_, hooked)| *hooked = true);
    }
    if with_destructors(|(table, _)| table.push(destructor, object)) { 0 } else { -1 }
}

/// The image's DSO handle, whose address `__cxa_atexit` receives. One image is one
/// "shared object" here.
#[cfg_attr(c_abi, unsafe(no_mangle))]
#[allow(non_upper_case_globals, reason = "the C++ ABI name")]
pub static __dso_handle: u8 = 0;

/// C++ ABI `void __cxa_pure_virtual()`: a call through a pure virtual slot (an object
/// used during its construction or after its destruction). Ends the op with
/// [`Status::PURE_VIRTUAL_CALL`](crate::wrapper_api::Status::PURE_VIRTUAL_CALL).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn __cxa_pure_virtual() -> ! {
    end_op(Status::PURE_VIRTUAL_CALL, &[b"pure virtual function called"])
}

/// The guard of a function-local static: the Itanium ABI's 64-bit object, whose first
/// byte the compiler's inline check reads (non-zero: initialised). The second byte marks
/// an initialisation in progress. A core runs one context at a time, so no other
/// thread can be waiting on it.
#[repr(C)]
pub struct Guard {
    initialised: Cell<u8>,
    in_progress: Cell<u8>,
    _rest: [u8; 6],
}

const _: () = assert!(core::mem::size_of::<Guard>() == 8);

/// C++ ABI `int __cxa_guard_acquire(uint64_t*)`: 1 if the caller must initialise the
/// static now, 0 if it already is. An initialisation that re-enters itself (the
/// static's initialiser uses the static) is undefined in C++; it gets 0 here, never a
/// second initialisation.
///
/// # Safety
/// `guard` points to a function-local static's guard.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn __cxa_guard_acquire(guard: *const Guard) -> c_int {
    // SAFETY: a live guard (contract); its bytes are `Cell`s, shared access suffices.
    let guard = unsafe { &*guard };
    if guard.initialised.get() != 0 || guard.in_progress.get() != 0 {
        return 0;
    }
    guard.in_progress.set(1);
    1
}

/// C++ ABI `void __cxa_guard_release(uint64_t*)`: the static is initialised.
///
/// # Safety
/// As [`__cxa_guard_acquire`].
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn __cxa_guard_release(guard: *const Guard) {
    // SAFETY: a live guard (contract).
    let guard = unsafe { &*guard };
    guard.in_progress.set(0);
    guard.initialised.set(1);
}

/// C++ ABI `void __cxa_guard_abort(uint64_t*)`: the initialisation did not complete;
/// the next pass tries again.
///
/// # Safety
/// As [`__cxa_guard_acquire`].
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn __cxa_guard_abort(guard: *const Guard) {
    // SAFETY: a live guard (contract).
    unsafe { &*guard }.in_progress.set(0);
}

/// C `void _init(void)`: runs the image's static constructors (`.init_array`); what
/// `entry_func`'s CRT bootstrap calls, once per loaded image.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn _init() {
    super::run_static_constructors();
}

/// The environment a kernel sees: empty (a null-terminated array with no entry), as
/// the vendor's `null_environ`.
#[repr(transparent)]
pub struct Environment([*const c_char; 1]);

// SAFETY: the one entry is a null pointer that is never written.
unsafe impl Sync for Environment {}

/// C `char *null_environ[]`: `{ NULL }`.
#[cfg_attr(c_abi, unsafe(no_mangle))]
#[allow(non_upper_case_globals, reason = "the C name")]
pub static null_environ: Environment = Environment([ptr::null()]);

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::vec::Vec;

    /// Runs `f` with this thread's heaps over a fresh 64 KiB HBM region.
    fn with_heap(f: impl FnOnce()) {
        let mut region = std::vec![0u64; 8 * 1024];
        // SAFETY: the region outlives `f`, the only user of the heaps it backs.
        // (the dataram heap is left empty: these tests use HBM only)
        let _ = unsafe { crate::allocators::init_heaps(region.as_mut_ptr().cast(), 64 * 1024, ptr::null_mut(), 0) };
        f();
        // SAFETY: an empty heap forgets the region before it is freed.
        let _ = unsafe { crate::allocators::init_heaps(ptr::null_mut(), 0, ptr::null_mut(), 0) };
    }

    #[test]
    fn new_gives_distinct_aligned_blocks_and_delete_returns_them() {
        with_heap(|| {
            let before = crate::allocators::heap_stats(HeapId::Hbm);
            let empty = cxx_new(0);
            let other = cxx_new_array(0);
            assert!(!empty.is_null() && !other.is_null() && empty != other, "size 0 still gives distinct blocks");
            let aligned = cxx_new_aligned(100, 256);
            assert_eq!(aligned as usize % 256, 0);
            assert_eq!(cxx_new(24) as usize % GRANULE, 0);
            for block in [empty, other, aligned] {
                cxx_delete(block);
            }
            cxx_delete(ptr::null_mut());
            cxx_delete_array_sized_aligned(ptr::null_mut(), 0, 64);
            let after_free = crate::allocators::heap_stats(HeapId::Hbm);
            assert_eq!(after_free.live_blocks, before.live_blocks + 1, "only the 24-byte block is left");
        });
    }

    #[test]
    fn nothrow_new_is_null_when_the_heap_is_exhausted() {
        with_heap(|| {
            assert!(cxx_new_nothrow(usize::MAX / 2, ptr::null()).is_null());
            assert!(cxx_new_array_aligned_nothrow(usize::MAX / 2, 64, ptr::null()).is_null());
            assert!(allocate_object(usize::MAX / 2, 8).is_err(), "what the throwing form would end the op for");
        });
    }

    std::thread_local! {
        static DESTROYED: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }
    unsafe extern "C" fn destroy(object: *mut c_void) {
        DESTROYED.with(|log| log.borrow_mut().push(object as usize));
    }

    #[test]
    fn static_destructors_run_last_first_at_exit() {
        assert_eq!(__cxa_atexit(None, ptr::null_mut(), ptr::null_mut()), -1);
        for object in 1..=3 {
            assert_eq!(
                __cxa_atexit(Some(destroy), object as *mut c_void, (&raw const __dso_handle).cast_mut().cast()),
                0
            );
        }
        super::super::run_exit_handlers();
        assert_eq!(DESTROYED.with(|log| log.take()), [3, 2, 1]);
    }

    #[test]
    fn a_full_destructor_table_refuses() {
        let mut table = DestructorTable::<2>::new();
        assert!(table.push(destroy, ptr::null_mut()));
        assert!(table.push(destroy, ptr::null_mut()));
        assert!(!table.push(destroy, ptr::null_mut()));
        assert!(table.pop().is_some() && table.pop().is_some() && table.pop().is_none());
    }

    #[test]
    fn a_guard_lets_one_initialisation_through() {
        let guard = Guard { initialised: Cell::new(0), in_progress: Cell::new(0), _rest: [0; 6] };
        // SAFETY: a live guard.
        unsafe {
            assert_eq!(__cxa_guard_acquire(&guard), 1);
            assert_eq!(__cxa_guard_acquire(&guard), 0, "re-entered during its own initialisation");
            __cxa_guard_abort(&guard);
            assert_eq!(__cxa_guard_acquire(&guard), 1, "an aborted initialisation is retried");
            __cxa_guard_release(&guard);
            assert_eq!(__cxa_guard_acquire(&guard), 0);
        }
        assert_eq!(guard.initialised.get(), 1, "the byte the compiler's inline check reads");
    }

    #[test]
    fn the_environment_is_empty() {
        assert!(null_environ.0[0].is_null());
    }
}
