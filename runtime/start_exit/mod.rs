//! The entry contract: `entry_func`, kernel registration, the device libc, the stdout ring.
//!
//! The whole contract, with the handoff layout, the STATUS values and the exact call
//! sequence, is `docs/abi/entry.md`; the C side is `runtime/include/neuroncustomop.h`.
//!
//! - [`SUNDA_UCODE_LIB`] / [`SUNDA_UCODE_LIB_STATUS`]: the 36-byte handoff block the host
//!   passes to `entry_func`, and what every entry point returns.
//! - `entry_func` / `register_funcs` (device only) are thin glue over [`enter`] and
//!   [`register_funcs_with`], which run the sequence over the [`Host`], [`KernelTable`]
//!   and [`Runtime`] traits so host tests can record every step.
//! - [`kernels!`](crate::kernels): the author's table for Rust kernels.
//! - The device libc: `memcpy` & co., `atexit` / `exit` / `abort`, the `write` shims,
//!   `CUSTOMOP_LIB_VERSION`.
//! - [`ReportLine`]: the line a fault, panic or abort report is written into.
//! - stdout: the [`StdoutRing`] the loader drains, and [`print!`](crate::print) /
//!   [`println!`](crate::println); C's `printf` family ([`format`]), `puts` and `putchar`.
//! - The C library's `<string.h>` string functions (`string`) and `<stdlib.h>`
//!   conversions, `qsort` and `bsearch` (`stdlib`).
//! - The freestanding C++ support: `operator new` / `delete`, `__cxa_*`, `_init`,
//!   `null_environ` (`cxx`), the libc++ threading stubs (`libcpp_threads`), the newlib
//!   file shims and `errno` (`files`), and the kernels' libm ([`math`]; its `expf`,
//!   `logf` and `tanhf` on the FPU, [`fpu_math`]).

mod crt;
pub mod cxx;
mod entry;
mod files;
pub mod fpu_math;
mod handoff;
mod kernels;
pub mod libcpp_threads;
pub mod math;
mod mem;
mod printf;
mod report_line;
mod stdlib;
mod stdout;
mod string;

pub use crt::{
    _Exit, ATEXIT_CAPACITY, AtexitFull, AtexitTable, CUSTOMOP_LIB_VERSION, ExitFn, HostLibc, InitFn, abort, atexit,
    exit, install_host_libc, my_exit, register_exit_handler, run_exit_handlers, run_init_array,
    run_static_constructors, version,
};
pub use cxx::{
    __cxa_atexit, __cxa_guard_abort, __cxa_guard_acquire, __cxa_guard_release, __cxa_pure_virtual, __dso_handle, _init,
    CXA_ATEXIT_CAPACITY, CxaDestructor, DestructorTable, Environment, Guard, allocate_object, free_object,
    null_environ, run_static_destructors,
};
pub use entry::{
    DeviceRuntime, ExternTable, KernelTable, RegisterFuncsFn, Runtime, dma_queue_offsets, enter, library_handle,
    register_funcs_with, run_entry,
};
#[cfg(any(c_abi, doc))]
pub use entry::{entry_func, register_funcs};
pub use files::{__errno, _close_r, _open_r, _read_r, _unlink_r, EBADF, ENOSYS, Errno};
pub use handoff::{
    ABI_SIZE, DmaQueueFn, DmaQueueOffsets, Host, HostCallbacks, LibcResolver, MAX_KERNELS, RegisterExtIsaFn,
    RegisterExtIsaTaggedFn, SUNDA_UCODE_LIB, SUNDA_UCODE_LIB_STATUS, ScratchFn, ScratchRegion,
};
pub use kernels::{KernelEntry, KernelFn, KernelList, has_duplicate_names};
pub use libcpp_threads::{OnceFlag, TLS_KEYS};
pub use mem::{bcmp, compare, memcmp, memcpy, memmove, memset};
#[cfg(not(target_arch = "xtensa"))]
pub use mem::{copy_backward, copy_forward, copy_overlapping, fill};
#[cfg(target_os = "none")]
pub use printf::{__neuron_vprintf, __neuron_vsnprintf};
pub use printf::{ArgKind, ArgSource, VaArgs, VaList, format, format_into, neuron_printf_packed, putchar, puts};
pub use report_line::{REPORT_LINE_CAPACITY, ReportLine};
pub use stdlib::{
    Compare, EINVAL, ERANGE, abs, atof, atoi, atol, bsearch, labs, llabs, qsort, strtod, strtof, strtol, strtoll,
    strtoul, strtoull,
};
#[cfg(test)]
pub(crate) use stdout::drain_this_thread;
pub use stdout::{
    _write_r, DrainPlan, MAX_STDOUT_RING_CAPACITY, RingError, RingHeader, RingWriter, STDOUT_RING_CAPACITY,
    STDOUT_RING_MAGIC, STDOUT_RING_STORAGE, StdoutRing, flush_stdout, fsync, print_args, stdout_ring, write, write_fd,
    write_stdout,
};
pub use string::{memchr, strcat, strchr, strcmp, strcpy, strncat, strncmp, strncpy, strnlen, strrchr, strstr};
