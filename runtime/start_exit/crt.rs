//! The C runtime bootstrap `entry_func` performs, and the libc pieces tied to it: static
//! constructors (`.init_array`), `atexit` / `exit`, `abort`, the host libc functions the
//! resolver supplies, and `CUSTOMOP_LIB_VERSION`.

use core::ffi::{c_char, c_int, c_void};

use super::handoff::LibcResolver;

/// A static constructor: one `.init_array` entry.
pub type InitFn = unsafe extern "C" fn();

/// Runs the constructors in `[start, end)` in order, skipping null entries (some
/// toolchains pad the array with them).
///
/// # Safety
/// `[start, end)` must be an array of `Option<InitFn>` (or `start == end`), each a
/// function that is sound to call now, once.
pub unsafe fn run_init_array(start: *const Option<InitFn>, end: *const Option<InitFn>) {
    let mut entry = start;
    while entry < end {
        // SAFETY: `entry` is inside the array (contract), and so is the entry it reads.
        if let Some(constructor) = unsafe { entry.read() } {
            // SAFETY: the contract makes every constructor sound to call now.
            unsafe { constructor() };
        }
        // SAFETY: at most one past the end of the array.
        entry = unsafe { entry.add(1) };
    }
}

/// Runs this image's static constructors: the `.init_array` section, which the linker
/// script (`linker/neuroncustomop.x`) brackets with `__init_array_start` and
/// `__init_array_end`. On the host the process's own C runtime has already run them, so
/// there this does nothing.
pub fn run_static_constructors() {
    #[cfg(target_os = "none")]
    {
        unsafe extern "C" {
            static __init_array_start: Option<InitFn>;
            static __init_array_end: Option<InitFn>;
        }
        // SAFETY: the two symbols bracket the image's `.init_array`, an array of
        // constructors the compiler emitted to run once before any other code of the
        // image; the device runtime calls this once per loaded image.
        unsafe { run_init_array(&raw const __init_array_start, &raw const __init_array_end) }
    }
}

/// A function `atexit` registered.
pub type ExitFn = unsafe extern "C" fn();

/// How many `atexit` handlers fit: the 32 C guarantees an author, and the one slot the
/// runtime's own exit handler (`my_exit`) takes.
pub const ATEXIT_CAPACITY: usize = 33;

/// `atexit` found its table full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtexitFull;

/// The `atexit` table: a fixed stack of handlers, run last-registered first.
#[derive(Debug)]
pub struct AtexitTable<const N: usize> {
    handlers: [Option<ExitFn>; N],
    len: usize,
}

impl<const N: usize> Default for AtexitTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> AtexitTable<N> {
    /// An empty table.
    pub const fn new() -> Self {
        Self { handlers: [None; N], len: 0 }
    }

    /// Registers `handler`.
    ///
    /// # Errors
    /// [`AtexitFull`] when `N` handlers are registered already.
    pub fn push(&mut self, handler: ExitFn) -> Result<(), AtexitFull> {
        let slot = self.handlers.get_mut(self.len).ok_or(AtexitFull)?;
        *slot = Some(handler);
        self.len += 1;
        Ok(())
    }

    /// Takes the most recently registered handler off the table.
    pub fn pop(&mut self) -> Option<ExitFn> {
        self.len = self.len.checked_sub(1)?;
        self.handlers[self.len].take()
    }

    /// Handlers registered and not yet run.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no handler is waiting.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

crate::global::core_local_state! {
    /// This core's `atexit` table.
    fn with_atexit_table: AtexitTable<ATEXIT_CAPACITY> = AtexitTable::new();
}

/// Registers `handler` to run at [`exit`].
///
/// # Errors
/// [`AtexitFull`] when [`ATEXIT_CAPACITY`] handlers are registered already.
pub fn register_exit_handler(handler: ExitFn) -> Result<(), AtexitFull> {
    with_atexit_table(|table| table.push(handler))
}

/// Runs and removes every registered handler, last-registered first. Each runs outside
/// the table's borrow, so a handler may itself call `atexit` (its handler runs next).
pub fn run_exit_handlers() {
    while let Some(handler) = with_atexit_table(AtexitTable::pop) {
        // SAFETY: C code registered it through `atexit` to be called exactly so: once,
        // with no arguments, at exit.
        unsafe { handler() };
    }
}

/// C `int atexit(void (*f)(void))`: 0 on success, nonzero when `f` is null or the
/// table is full.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn atexit(handler: Option<ExitFn>) -> c_int {
    match handler.map(register_exit_handler) {
        Some(Ok(())) => 0,
        _ => -1,
    }
}

/// The handler the CRT bootstrap registers with `atexit`: makes everything printed
/// visible to the loader before the core stops.
pub extern "C" fn my_exit() {
    super::stdout::flush_stdout();
}

/// The host's libc functions, as the CRT bootstrap resolved them. The CRT asks the
/// resolver for exactly these two names; a null answer (or no resolver) leaves the
/// device's own fallback in place.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostLibc {
    /// `"abort"`: `void abort(void)`; called by the device's [`abort`].
    pub abort: Option<unsafe extern "C" fn()>,
    /// `"exit"`: `void exit(int)`; called by the device's [`exit`] after the handlers.
    pub exit: Option<unsafe extern "C" fn(c_int)>,
}

impl HostLibc {
    /// Asks `resolver` for `"abort"` and `"exit"`.
    ///
    /// # Safety
    /// `resolver` must return null or a function of the documented signature for each
    /// name (the handoff contract of `get_libc_fn`).
    pub unsafe fn resolve(resolver: Option<LibcResolver>) -> Self {
        let Some(resolver) = resolver else {
            return Self::default();
        };
        let lookup = |name: &core::ffi::CStr| {
            // SAFETY: `name` is NUL-terminated, which is all the resolver asks.
            unsafe { resolver(name.as_ptr()) }
        };
        // SAFETY: a data pointer and an `Option` of a function pointer have the same
        // size, null maps to `None`, and a non-null answer is a function of this
        // signature (this function's contract).
        unsafe {
            Self {
                abort: core::mem::transmute::<*mut c_void, Option<unsafe extern "C" fn()>>(lookup(c"abort")),
                exit: core::mem::transmute::<*mut c_void, Option<unsafe extern "C" fn(c_int)>>(lookup(c"exit")),
            }
        }
    }
}

crate::global::core_local_state! {
    /// What the resolver supplied, for `abort` and `exit`.
    fn with_host_libc: HostLibc = HostLibc { abort: None, exit: None };
}

/// Keeps what the resolver supplied for [`abort`] and [`exit`].
pub fn install_host_libc(host_libc: HostLibc) {
    with_host_libc(|installed| *installed = host_libc);
}

/// The last resort of [`abort`] and [`exit`]: the core idles forever; the loader sees
/// the kernel never return.
fn park() -> ! {
    loop {
        core::hint::spin_loop();
    }
}

/// C `void abort(void)`: reports where it was called from (a backtrace, on the device),
/// flushes stdout, calls the host's `abort` if the resolver
/// supplied one, and parks the core if that returns (or there is none). Exit handlers
/// do not run, as C specifies.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn abort() -> ! {
    crate::arch::report_abort();
    super::stdout::flush_stdout();
    if let Some(host_abort) = with_host_libc(|libc| libc.abort) {
        // SAFETY: the host's resolver supplied it as `void abort(void)`.
        unsafe { host_abort() };
    }
    park()
}

/// C `void exit(int status)`: runs the `atexit` handlers (the CRT's flushes stdout),
/// then calls the host's `exit(status)` if the resolver supplied one, and parks the core
/// if that returns (or there is none).
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn exit(status: c_int) -> ! {
    run_exit_handlers();
    _Exit(status)
}

/// C `void _Exit(int status)`: [`exit`] without the `atexit` handlers (what a panic
/// ends with: nothing more of the kernel's runs). Flushes stdout, hands the core to the
/// host's `exit(status)` if the resolver supplied one (the host discards the kernel's
/// stack, see `crate::global`), and parks the core if that returns.
#[cfg_attr(c_abi, unsafe(no_mangle))]
#[allow(non_snake_case, reason = "the C name")]
pub extern "C" fn _Exit(status: c_int) -> ! {
    super::stdout::flush_stdout();
    if let Some(host_exit) = with_host_libc(|libc| libc.exit) {
        // SAFETY: the host's resolver supplied it as `void exit(int)`.
        unsafe { host_exit(status) };
    }
    park()
}

const VERSION_TEXT: &str = concat!("neuroncustomop ", env!("CARGO_PKG_VERSION"), " (libneuroncustomop 1.21.1.0)\0");

/// C `const char CUSTOMOP_LIB_VERSION[]`: this runtime's version and the vendor library
/// version whose ABI it implements (1.21.1.0, the string in the vendor's archive).
///
/// ```
/// use neuroncustomop::start_exit::CUSTOMOP_LIB_VERSION;
/// let text = core::ffi::CStr::from_bytes_with_nul(&CUSTOMOP_LIB_VERSION).unwrap();
/// assert!(text.to_str().unwrap().ends_with("(libneuroncustomop 1.21.1.0)"));
/// ```
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub static CUSTOMOP_LIB_VERSION: [u8; VERSION_TEXT.len()] =
    *VERSION_TEXT.as_bytes().first_chunk().expect("the length is the text's own");

/// [`CUSTOMOP_LIB_VERSION`] as a C string pointer.
pub fn version() -> *const c_char {
    CUSTOMOP_LIB_VERSION.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::vec::Vec;

    std::thread_local! {
        static CALLS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    }
    fn record(call: &'static str) {
        CALLS.with(|calls| calls.borrow_mut().push(call));
    }
    fn take_calls() -> Vec<&'static str> {
        CALLS.with(|calls| calls.take())
    }

    extern "C" fn first() {
        record("first");
    }
    extern "C" fn second() {
        record("second");
    }
    extern "C" fn third() {
        record("third");
    }

    #[test]
    fn init_array_runs_in_order_and_skips_nulls() {
        let array: [Option<InitFn>; 4] = [Some(first), None, Some(second), Some(third)];
        // SAFETY: a real array of constructors that only record themselves.
        unsafe { run_init_array(array.as_ptr(), array.as_ptr().add(array.len())) };
        assert_eq!(take_calls(), ["first", "second", "third"]);
        // SAFETY: an empty range, and an inverted one, call nothing.
        unsafe {
            run_init_array(array.as_ptr(), array.as_ptr());
            run_init_array(array.as_ptr().add(1), array.as_ptr());
        }
        assert_eq!(take_calls(), [] as [&str; 0]);
    }

    #[test]
    fn atexit_table_is_lifo_and_bounded() {
        let mut table = AtexitTable::<3>::new();
        assert!(table.is_empty());
        for handler in [first, second, third] {
            assert_eq!(table.push(handler), Ok(()));
        }
        assert_eq!(table.push(first), Err(AtexitFull));
        assert_eq!(table.len(), 3);
        while let Some(handler) = table.pop() {
            // SAFETY: the handlers only record themselves.
            unsafe { handler() };
        }
        assert_eq!(take_calls(), ["third", "second", "first"]);
        assert!(table.pop().is_none());
        assert_eq!(table.push(first), Ok(()), "popping frees the slots");
    }

    extern "C" fn registers_another() {
        record("registers_another");
        assert_eq!(atexit(Some(third)), 0);
    }

    #[test]
    fn c_atexit_fills_the_image_table_and_exit_handlers_drain_it() {
        assert_ne!(atexit(None), 0);
        assert_eq!(atexit(Some(first)), 0);
        assert_eq!(atexit(Some(registers_another)), 0);
        for _ in 2..ATEXIT_CAPACITY {
            assert_eq!(atexit(Some(second)), 0);
        }
        assert_ne!(atexit(Some(first)), 0, "the 33rd registration fails");
        run_exit_handlers();
        let mut expected = std::vec!["second"; ATEXIT_CAPACITY - 2];
        expected.extend(["registers_another", "third", "first"]);
        assert_eq!(take_calls(), expected);
        assert!(with_atexit_table(|table| table.is_empty()));
    }

    unsafe extern "C" fn resolver(name: *const c_char) -> *mut c_void {
        extern "C" fn host_abort() {}
        extern "C" fn host_exit(_: c_int) {}
        // SAFETY: the CRT passes NUL-terminated names.
        let name = unsafe { core::ffi::CStr::from_ptr(name) };
        record(if name == c"abort" { "abort" } else { "exit" });
        match name.to_bytes() {
            b"abort" => host_abort as *mut c_void,
            b"exit" => host_exit as *mut c_void,
            _ => core::ptr::null_mut(),
        }
    }

    unsafe extern "C" fn empty_resolver(_: *const c_char) -> *mut c_void {
        core::ptr::null_mut()
    }

    #[test]
    fn host_libc_asks_for_abort_and_exit() {
        // SAFETY: the resolvers return null or functions of the documented signatures.
        let resolved = unsafe { HostLibc::resolve(Some(resolver)) };
        assert!(resolved.abort.is_some() && resolved.exit.is_some());
        assert_eq!(take_calls(), ["abort", "exit"]);
        // SAFETY: as above.
        let empty = unsafe { HostLibc::resolve(Some(empty_resolver)) };
        assert!(empty.abort.is_none() && empty.exit.is_none());
        // SAFETY: no resolver is never called.
        let none = unsafe { HostLibc::resolve(None) };
        assert!(none.abort.is_none() && none.exit.is_none());
    }

    #[test]
    fn version_is_one_nul_terminated_string() {
        let text = core::ffi::CStr::from_bytes_with_nul(&CUSTOMOP_LIB_VERSION).unwrap();
        assert_eq!(
            text.to_str().unwrap(),
            std::format!("neuroncustomop {} (libneuroncustomop 1.21.1.0)", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(version(), CUSTOMOP_LIB_VERSION.as_ptr().cast());
    }
}
