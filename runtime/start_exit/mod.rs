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
//! - stdout: the [`StdoutRing`] the loader drains, and [`print!`](crate::print) /
//!   [`println!`](crate::println).

mod crt;
mod entry;
mod handoff;
mod kernels;
mod mem;
mod stdout;

pub use crt::{
    ATEXIT_CAPACITY, AtexitFull, AtexitTable, CUSTOMOP_LIB_VERSION, ExitFn, HostLibc, InitFn,
    _Exit, abort, atexit, exit, install_host_libc, my_exit, register_exit_handler, run_exit_handlers,
    run_init_array, run_static_constructors, version,
};
pub use entry::{
    DeviceRuntime, ExternTable, KernelTable, RegisterFuncsFn, Runtime, dma_queue_offsets, enter,
    library_handle, register_funcs_with, run_entry,
};
#[cfg(any(target_os = "none", doc))]
pub use entry::{entry_func, register_funcs};
pub use handoff::{
    ABI_SIZE, DmaQueueFn, DmaQueueOffsets, Host, HostCallbacks, LibcResolver, MAX_KERNELS,
    RegisterExtIsaFn, RegisterExtIsaTaggedFn, SUNDA_UCODE_LIB, SUNDA_UCODE_LIB_STATUS, ScratchFn,
    ScratchRegion,
};
pub use kernels::{KernelEntry, KernelFn, KernelList, has_duplicate_names};
pub use mem::{bcmp, compare, memcmp, memcpy, memmove, memset};
#[cfg(not(target_arch = "xtensa"))]
pub use mem::{copy_backward, copy_forward, copy_overlapping, fill};
pub use stdout::{
    _write_r, DrainPlan, MAX_STDOUT_RING_CAPACITY, RingError, RingHeader, RingWriter,
    STDOUT_RING_CAPACITY, STDOUT_RING_MAGIC, StdoutRing, flush_stdout, fsync, print_args,
    stdout_ring, write, write_fd, write_stdout,
};
