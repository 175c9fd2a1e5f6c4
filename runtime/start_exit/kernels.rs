//! The op author's kernel table for Rust authors: the [`kernels!`](crate::kernels) macro
//! and the types it expands to.
//!
//! The C ABI wants three functions from the author (`get_func_cnt`, `get_func_ptr`,
//! `get_func_name`); the macro writes all three from one list, so the names, the count
//! and the pointers cannot drift apart, and a repeated name is a compile error.

use core::ffi::{CStr, c_char, c_void};

use super::handoff::MAX_KERNELS;

/// A kernel entry point: `extern "C" fn()`.
///
/// Kernels take no C arguments and return nothing: they pull their arguments from the
/// `customop_*` stream and hand the result back through it, as the vendor's do. A C
/// author's table may hold any `void*`; the runtime never calls it, only registers it.
pub type KernelFn = extern "C" fn();

/// One kernel of the table: its C name and its entry point.
#[derive(Clone, Copy, Debug)]
pub struct KernelEntry {
    name: &'static CStr,
    func: KernelFn,
}

impl KernelEntry {
    /// An entry named `name_with_nul`, which must end in its only NUL byte and not be
    /// empty. In a `const` (as the macro uses it) a bad name is a compile error.
    ///
    /// # Panics
    /// If the name is empty, lacks the trailing NUL, or has a NUL inside.
    pub const fn new(name_with_nul: &'static str, func: KernelFn) -> Self {
        let name = match CStr::from_bytes_with_nul(name_with_nul.as_bytes()) {
            Ok(name) => name,
            Err(_) => panic!("kernels!: a kernel name contains a NUL byte"),
        };
        assert!(!name.is_empty(), "kernels!: a kernel name is empty");
        Self { name, func }
    }

    /// The kernel's name, as the host registers it.
    pub const fn name(&self) -> &'static CStr {
        self.name
    }

    /// The kernel's entry point.
    pub const fn func(&self) -> KernelFn {
        self.func
    }
}

/// The table a [`kernels!`](crate::kernels) invocation builds, behind its three
/// generated functions.
#[derive(Clone, Copy, Debug)]
pub struct KernelList {
    entries: &'static [KernelEntry],
}

impl KernelList {
    /// A table over `entries`, in registration order.
    pub const fn new(entries: &'static [KernelEntry]) -> Self {
        Self { entries }
    }

    /// The entries, in registration order.
    pub const fn entries(&self) -> &'static [KernelEntry] {
        self.entries
    }

    /// `get_func_cnt`: the number of kernels.
    ///
    /// # Panics
    /// If the table has [`MAX_KERNELS`] or more entries (the macro rejects that at
    /// compile time).
    pub const fn count(&self) -> i32 {
        assert!(self.entries.len() < MAX_KERNELS as usize, "kernels!: too many kernels");
        self.entries.len() as i32
    }

    fn entry(&self, index: i32) -> Option<&'static KernelEntry> {
        self.entries.get(usize::try_from(index).ok()?)
    }

    /// `get_func_ptr(index)`: the kernel's entry point, null when out of range.
    pub fn func_ptr(&self, index: i32) -> *const c_void {
        self.entry(index).map_or(core::ptr::null(), |entry| entry.func as *const c_void)
    }

    /// `get_func_name(index)`: the kernel's NUL-terminated name, null when out of range.
    pub fn name_ptr(&self, index: i32) -> *const c_char {
        self.entry(index).map_or(core::ptr::null(), |entry| entry.name.as_ptr())
    }
}

/// Whether two entries of `entries` have the same name: the macro's compile-time check.
/// Quadratic, which is fine for the handful of kernels a library has.
pub const fn has_duplicate_names(entries: &[KernelEntry]) -> bool {
    let mut i = 0;
    while i < entries.len() {
        let mut j = i + 1;
        while j < entries.len() {
            if bytes_equal(entries[i].name.to_bytes(), entries[j].name.to_bytes()) {
                return true;
            }
            j += 1;
        }
        i += 1;
    }
    false
}

/// `a == b` for byte strings, usable in `const` (slice `==` is not).
const fn bytes_equal(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Defines the author's kernel table: `get_func_cnt`, `get_func_ptr` and `get_func_name`,
/// from a list of kernels in registration order.
///
/// Each entry is a kernel registered under its own name, or `"name" => kernel` to
/// register it under another. A kernel is either
/// - a C-style [`extern "C" fn()`](crate::start_exit::KernelFn) that drives the
///   `customop_*` pull stream itself, or
/// - `fn kernel`: a Rust kernel, `fn(&Args) -> Result<Tensor, KernelError>`, around
///   which the runtime drives the pull stream ([`run_kernel`](crate::wrapper_api::run_kernel)).
///
/// Names become NUL-terminated strings. A repeated name, an empty name, a name with a
/// NUL inside, or [`MAX_KERNELS`](crate::start_exit::MAX_KERNELS) kernels or more fail to
/// compile.
///
/// The three functions are defined where the macro is invoked (use it once per
/// library). On the device (`target_os = "none"`), and on the host tier (the runtime's
/// feature `host-tier`), they are exported under their C names for the runtime's
/// `entry_func`; on the host they are ordinary functions tests can call.
/// A list longer than about 120 entries needs a higher `#![recursion_limit]`.
///
/// ```
/// extern "C" fn relu() {}
/// extern "C" fn vector_add() {}
/// extern "C" fn my_fn() {}
///
/// neuroncustomop::kernels! { relu, vector_add, "custom-name" => my_fn }
///
/// assert_eq!(get_func_cnt(), 3);
/// // SAFETY: in-range names are NUL-terminated static strings.
/// let name = |i| unsafe { core::ffi::CStr::from_ptr(get_func_name(i)) };
/// assert_eq!(name(0), c"relu");
/// assert_eq!(name(2), c"custom-name");
/// assert_eq!(get_func_ptr(1), vector_add as *const core::ffi::c_void);
/// assert!(get_func_ptr(3).is_null() && get_func_name(-1).is_null());
/// ```
///
/// Rust kernels take their arguments from [`Args`](crate::wrapper_api::Args):
///
/// ```
/// use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};
///
/// fn negate(args: &Args) -> Result<Tensor<'_>, KernelError> {
///     let x = args.tensor()?;
///     let mut out = args.output()?;
///     for (o, v) in out.as_mut_slice::<f32>()?.iter_mut().zip(x.as_slice::<f32>()?) {
///         *o = -v;
///     }
///     Ok(out)
/// }
///
/// neuroncustomop::kernels! { fn negate, "negate-v2" => fn negate }
/// assert_eq!(get_func_cnt(), 2);
/// assert!(!get_func_ptr(0).is_null());
/// ```
///
/// Two kernels may not share a name:
///
/// ```compile_fail,E0080
/// extern "C" fn relu() {}
/// extern "C" fn relu_v2() {}
///
/// neuroncustomop::kernels! { relu, "relu" => relu_v2 }
/// ```
#[macro_export]
macro_rules! kernels {
    ($($list:tt)*) => {
        $crate::__kernels_accumulate!([] $($list)*);
    };
}

/// The three table functions over `__NEURONCUSTOMOP_KERNELS`, exported under their C
/// names where the runtime exports its own C ABI (`cfg(c_abi)`: the device, and the host
/// tier). A macro of the runtime's, so the runtime's cfg decides, not the author's crate.
#[doc(hidden)]
#[macro_export]
#[cfg(c_abi)]
macro_rules! __kernels_table_functions {
    () => {
        /// The number of kernels in this library (the C ABI's `get_func_cnt`).
        #[unsafe(no_mangle)]
        pub extern "C" fn get_func_cnt() -> i32 {
            __NEURONCUSTOMOP_KERNELS.count()
        }

        /// Kernel `index`'s entry point, null when out of range (`get_func_ptr`).
        #[unsafe(no_mangle)]
        pub extern "C" fn get_func_ptr(index: i32) -> *const ::core::ffi::c_void {
            __NEURONCUSTOMOP_KERNELS.func_ptr(index)
        }

        /// Kernel `index`'s NUL-terminated name, null when out of range
        /// (`get_func_name`).
        #[unsafe(no_mangle)]
        pub extern "C" fn get_func_name(index: i32) -> *const ::core::ffi::c_char {
            __NEURONCUSTOMOP_KERNELS.name_ptr(index)
        }
    };
}

/// As above, unexported: on the host the functions are ordinary ones tests call.
#[doc(hidden)]
#[macro_export]
#[cfg(not(c_abi))]
macro_rules! __kernels_table_functions {
    () => {
        /// The number of kernels in this library (the C ABI's `get_func_cnt`).
        pub extern "C" fn get_func_cnt() -> i32 {
            __NEURONCUSTOMOP_KERNELS.count()
        }

        /// Kernel `index`'s entry point, null when out of range (`get_func_ptr`).
        pub extern "C" fn get_func_ptr(index: i32) -> *const ::core::ffi::c_void {
            __NEURONCUSTOMOP_KERNELS.func_ptr(index)
        }

        /// Kernel `index`'s NUL-terminated name, null when out of range
        /// (`get_func_name`).
        pub extern "C" fn get_func_name(index: i32) -> *const ::core::ffi::c_char {
            __NEURONCUSTOMOP_KERNELS.name_ptr(index)
        }
    };
}

/// The muncher behind [`kernels!`]: turns each list entry into a `KernelEntry`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernels_accumulate {
    ([$($entry:tt)*]) => {
        #[doc(hidden)]
        const __NEURONCUSTOMOP_KERNELS: $crate::start_exit::KernelList =
            $crate::start_exit::KernelList::new(&[$($entry)*]);

        const _: () = assert!(
            !$crate::start_exit::has_duplicate_names(__NEURONCUSTOMOP_KERNELS.entries()),
            "kernels!: two kernels have the same name"
        );
        const _: () = assert!(
            __NEURONCUSTOMOP_KERNELS.entries().len()
                < $crate::start_exit::MAX_KERNELS as usize,
            "kernels!: too many kernels"
        );

        $crate::__kernels_table_functions!();
    };
    ([$($entry:tt)*] $name:literal => fn $func:path $(, $($rest:tt)*)?) => {
        $crate::__kernels_accumulate!(
            [$($entry)* $crate::start_exit::KernelEntry::new(
                concat!($name, "\0"),
                $crate::__rust_kernel_entry!($func),
            ),]
            $($($rest)*)?
        );
    };
    ([$($entry:tt)*] fn $func:ident $(, $($rest:tt)*)?) => {
        $crate::__kernels_accumulate!(
            [$($entry)* $crate::start_exit::KernelEntry::new(
                concat!(stringify!($func), "\0"),
                $crate::__rust_kernel_entry!($func),
            ),]
            $($($rest)*)?
        );
    };
    ([$($entry:tt)*] $name:literal => $func:path $(, $($rest:tt)*)?) => {
        $crate::__kernels_accumulate!(
            [$($entry)* $crate::start_exit::KernelEntry::new(concat!($name, "\0"), $func),]
            $($($rest)*)?
        );
    };
    ([$($entry:tt)*] $func:ident $(, $($rest:tt)*)?) => {
        $crate::__kernels_accumulate!(
            [$($entry)* $crate::start_exit::KernelEntry::new(
                concat!(stringify!($func), "\0"),
                $func,
            ),]
            $($($rest)*)?
        );
    };
}

/// The `extern "C" fn()` entry of a Rust kernel: the runtime drives the pull stream
/// around it (`run_kernel`), and the loader reads the invocation status.
#[doc(hidden)]
#[macro_export]
macro_rules! __rust_kernel_entry {
    ($func:path) => {{
        extern "C" fn rust_kernel_entry() {
            // The status also stays in the invocation, where the loader reads it.
            let _ = $crate::wrapper_api::run_kernel($func);
        }
        rust_kernel_entry
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn first() {}
    extern "C" fn second() {}

    #[test]
    fn duplicate_detection_compares_whole_names() {
        let distinct = [KernelEntry::new("ab\0", first), KernelEntry::new("abc\0", second)];
        assert!(!has_duplicate_names(&distinct));
        let repeated =
            [KernelEntry::new("ab\0", first), KernelEntry::new("x\0", first), KernelEntry::new("ab\0", second)];
        assert!(has_duplicate_names(&repeated));
        assert!(!has_duplicate_names(&[]));
    }

    #[test]
    #[should_panic(expected = "NUL")]
    fn inner_nul_is_refused() {
        KernelEntry::new("a\0b\0", first);
    }

    #[test]
    #[should_panic(expected = "NUL")]
    fn missing_terminator_is_refused() {
        KernelEntry::new("ab", first);
    }

    #[test]
    #[should_panic(expected = "empty")]
    fn empty_name_is_refused() {
        KernelEntry::new("\0", first);
    }

    mod generated {
        // Each kernel says who it is: the table is checked by calling its entries, since
        // function pointers have no guaranteed identity (Miri gives a function several
        // addresses, so comparing them fails there).
        std::thread_local! {
            static CALLED: core::cell::Cell<&'static str> = const { core::cell::Cell::new("") };
        }
        extern "C" fn relu() {
            CALLED.set("relu");
        }
        extern "C" fn vector_add() {
            CALLED.set("vector_add");
        }
        extern "C" fn scale() {
            CALLED.set("scale");
        }

        crate::kernels! { relu, vector_add, "scale-by-k" => scale, }

        #[test]
        fn table_matches_the_list() {
            assert_eq!(get_func_cnt(), 3);
            let names: std::vec::Vec<_> = (0..get_func_cnt())
                // SAFETY: in-range names are NUL-terminated static strings.
                .map(|i| unsafe { core::ffi::CStr::from_ptr(get_func_name(i)) })
                .collect();
            assert_eq!(names, [c"relu", c"vector_add", c"scale-by-k"]);
            for (i, name) in ["relu", "vector_add", "scale"].into_iter().enumerate() {
                let ptr = get_func_ptr(i as i32);
                assert!(!ptr.is_null());
                // SAFETY: `kernels!` fills the table with `KernelFn`s.
                let func: super::KernelFn = unsafe { core::mem::transmute(ptr) };
                func();
                assert_eq!(CALLED.get(), name, "entry {i}");
            }
        }

        #[test]
        fn out_of_range_is_null() {
            for index in [-1, 3, i32::MAX, i32::MIN] {
                assert!(get_func_ptr(index).is_null());
                assert!(get_func_name(index).is_null());
            }
        }
    }
}
