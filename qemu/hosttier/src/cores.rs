//! Which simulated core a thread is: what the loader sets up and what runs on a core's
//! thread asks (the runtime's callbacks in `loader`, the sanitizers' heap observer in
//! `sanitize`), and the cores' threads themselves, each on a stack the host tier places.
//!
//! Each core's thread runs on a stack at a fixed address below 4 GiB, [`stack`], as each
//! device core's kernel runs on its own image's stack: so the host tier knows whose
//! stack an address is in (`apart`: a store into another core's stack is a finding),
//! and a finding names it in the device's 32-bit words. Each stack has an inaccessible
//! page below it, so a runaway recursion faults there (a reported fault) instead of
//! running into the next core's stack.

use std::cell::Cell;
use std::ffi::c_void;

thread_local! {
    /// This thread's core.
    static CORE: Cell<u32> = const { Cell::new(0) };
}

/// Makes this thread core `core`'s.
pub(crate) fn set_core(core: u32) {
    CORE.with(|c| c.set(core));
}

/// The core whose thread this is.
pub(crate) fn core() -> u32 {
    CORE.with(Cell::get)
}

/// Where core 0's stack area starts: above the device memory's HBM scratch
/// (`neuroncustomop_wire::job`: 0x6A00_0000 + 8 × 8 MiB) and below its datarams
/// (0x7F80_0000), so the host mapping of neither touches it.
const STACKS_BASE: u32 = 0x7000_0000;
/// Each core's stack area: its guard page and its stack. 8 MiB, glibc's default thread
/// stack (a kernel built at `-O0`, or under a sanitizer, takes more than the device's
/// stack); glibc keeps the thread's own block and its static TLS at its top, and only
/// the pages a thread touches are backed.
const STACK_AREA: u32 = 0x0080_0000;
/// The inaccessible page under each stack.
const GUARD: u32 = 0x1000;

/// Core `core`'s stack: its lowest address and its size (its guard page below).
pub(crate) const fn stack(core: u32) -> (u32, u32) {
    (STACKS_BASE + core * STACK_AREA + GUARD, STACK_AREA - GUARD)
}

/// Starts core `core`'s thread, named `core <core>` (for gdb, the sanitizers' reports),
/// running `body` on its stack ([`stack`]): a thread of `pthread_create`, as std's
/// threads are, but on memory the host tier mapped.
///
/// # Errors
/// The stack cannot be mapped (its addresses are taken), or the thread not started.
pub(crate) fn spawn(core: u32, body: Box<dyn FnOnce() + Send>) -> Result<(), String> {
    let (start, len) = stack(core);
    let area = (start - GUARD) as usize as *mut c_void;
    // SAFETY: a fresh anonymous mapping at addresses nothing of this process uses
    // (MAP_FIXED_NOREPLACE refuses to replace one); its lowest page made inaccessible.
    unsafe {
        let mapped = libc::mmap(
            area,
            STACK_AREA as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        );
        if mapped != area {
            return Err(format!("cannot map core {core}'s stack at {area:p}: {}", std::io::Error::last_os_error()));
        }
        libc::mprotect(area, GUARD as usize, libc::PROT_NONE);
    }
    let body = Box::into_raw(Box::new(body));
    // SAFETY: an attribute object initialised, given the stack just mapped (which this
    // thread alone uses, for the process's life), used once and destroyed; the thread
    // takes `body` back from the raw pointer exactly once (`run_core`).
    let status = unsafe {
        let mut attributes: libc::pthread_attr_t = std::mem::zeroed();
        libc::pthread_attr_init(&mut attributes);
        libc::pthread_attr_setstack(&mut attributes, start as usize as *mut c_void, len as usize);
        let mut thread: libc::pthread_t = 0;
        let status = libc::pthread_create(&mut thread, &attributes, run_core, body.cast());
        libc::pthread_attr_destroy(&mut attributes);
        if status == 0 {
            let name = std::ffi::CString::new(format!("core {core}")).expect("no NUL");
            libc::pthread_setname_np(thread, name.as_ptr());
            libc::pthread_detach(thread);
        }
        status
    };
    if status != 0 {
        // SAFETY: no thread took it.
        drop(unsafe { Box::from_raw(body) });
        return Err(format!("starting core {core}'s thread: {}", std::io::Error::from_raw_os_error(status)));
    }
    Ok(())
}

/// A core's thread: runs its body; a panic ends the thread, not the process (the
/// loader sees the core's channel close).
extern "C" fn run_core(body: *mut c_void) -> *mut c_void {
    // SAFETY: `spawn` passed a leaked `Box<Box<dyn FnOnce() + Send>>`, taken back once.
    let body = unsafe { Box::from_raw(body.cast::<Box<dyn FnOnce() + Send>>()) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    std::ptr::null_mut()
}

#[cfg(test)]
mod tests {
    use super::*;
    use neuroncustomop_wire::job::{CORES, DATA_SCRATCH_BASE, HBM_SCRATCH_BASE, HBM_SCRATCH_SIZE};

    #[test]
    fn the_stacks_lie_between_the_hbm_scratches_and_the_datarams_one_after_the_other() {
        let hbm_end = HBM_SCRATCH_BASE + CORES as u32 * HBM_SCRATCH_SIZE;
        let (first, len) = stack(0);
        let (last, _) = stack(CORES as u32 - 1);
        assert!(first - GUARD >= hbm_end && last + len <= DATA_SCRATCH_BASE);
        assert_eq!(stack(1).0, first + len + GUARD);
    }
}
