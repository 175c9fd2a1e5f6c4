//! A library image whose kernel table is written by hand, as a C author writes it
//! (docs/abi/entry.md §7), instead of by `neuroncustomop::kernels!`: the entry-contract
//! tests (`qemu/tests/entry_contract.rs`) steer it from the host.
//!
//! - `get_func_cnt()` returns the 32-bit word the test placed at [`COUNT_ADDRESS`]
//!   (`job.data`), so one image covers 0, 3, 0x7FFF, 0x8000 and 0xFFFFFFFF (-1) kernels.
//! - `get_func_name(i)` is `"k"` and `i` in five decimal digits (`k00000`, `k00001`, ...),
//!   static and distinct, for every `i < 0x8000`; null otherwise.
//! - `get_func_ptr(i)` is one of three real kernels, `table_probe_kernel_<i mod 3>`,
//!   exported under those names so the test can compare with the ELF symbol table; null
//!   for `i >= 0x8000`. Each kernel prints its own name and `i mod 3` to stdout.
#![no_std]
#![no_main]

use neuroncustomop::println;
use neuroncustomop::wrapper_api::{customop_cleanup, customop_setup};

/// Where the test puts the kernel count: a word of simulated RAM outside every image,
/// the job block, the tensor area, and the loader's dataram (0x7F800000..) and HBM
/// (0x70000000..0x78000000) scratch regions. Zero (no kernels) when the test sets none.
const COUNT_ADDRESS: usize = 0x7F70_0000;

/// One more than the largest count `entry_func` accepts: names exist below it.
const NAME_SLOTS: usize = 0x8000;
/// `k`, five digits, NUL.
const NAME_LEN: usize = 7;

/// Every name, built at compile time: `NAMES[i]` is `k<i, five digits>\0`.
static NAMES: [[u8; NAME_LEN]; NAME_SLOTS] = {
    let mut names = [[0u8; NAME_LEN]; NAME_SLOTS];
    let mut i = 0;
    while i < NAME_SLOTS {
        names[i][0] = b'k';
        let mut rest = i;
        let mut digit = 5;
        while digit > 0 {
            names[i][digit] = b'0' + (rest % 10) as u8;
            rest /= 10;
            digit -= 1;
        }
        i += 1;
    }
    names
};

/// Runs one op: set up, print which kernel this is, clean up.
fn announce(kernel: u32) {
    customop_setup(false);
    println!("table_probe_kernel_{kernel}");
    customop_cleanup();
}

#[unsafe(no_mangle)]
extern "C" fn table_probe_kernel_0() {
    announce(0);
}

#[unsafe(no_mangle)]
extern "C" fn table_probe_kernel_1() {
    announce(1);
}

#[unsafe(no_mangle)]
extern "C" fn table_probe_kernel_2() {
    announce(2);
}

const KERNELS: [extern "C" fn(); 3] = [table_probe_kernel_0, table_probe_kernel_1, table_probe_kernel_2];

/// The slot of `index`, if it has a name and a kernel.
fn slot(index: i32) -> Option<usize> {
    usize::try_from(index).ok().filter(|&i| i < NAME_SLOTS)
}

#[unsafe(no_mangle)]
extern "C" fn get_func_cnt() -> i32 {
    // SAFETY: COUNT_ADDRESS is simulated RAM no image or loader uses (see the constant),
    // aligned for an i32; the host wrote it before any core ran, and nothing writes it now.
    unsafe { core::ptr::read_volatile(COUNT_ADDRESS as *const i32) }
}

#[unsafe(no_mangle)]
extern "C" fn get_func_name(index: i32) -> *const core::ffi::c_char {
    slot(index).map_or(core::ptr::null(), |i| NAMES[i].as_ptr().cast())
}

#[unsafe(no_mangle)]
extern "C" fn get_func_ptr(index: i32) -> *const core::ffi::c_void {
    slot(index).map_or(core::ptr::null(), |i| KERNELS[i % KERNELS.len()] as *const core::ffi::c_void)
}
