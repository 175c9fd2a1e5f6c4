//! The one place that knows which CPU it runs on.
//!
//! On Xtensa (`target_arch = "xtensa"`) these are thin wrappers over the `.S` helpers in
//! `arch/xtensa/`; on the host they are stand-ins so the rest of the runtime can be
//! unit-tested. Names follow the `xtensa-lx` crate where it has one.

mod exit;
pub use exit::{EXIT_EXCEPTION, EXIT_PANIC, EXIT_STACK_OVERFLOW, cause_name, exit_name};

#[cfg(target_arch = "xtensa")]
mod xtensa;
#[cfg(target_arch = "xtensa")]
pub use xtensa::*;

#[cfg(not(target_arch = "xtensa"))]
mod host;
#[cfg(not(target_arch = "xtensa"))]
pub use host::*;

#[cfg(not(target_arch = "xtensa"))]
pub mod host_stores;
