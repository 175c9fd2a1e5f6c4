//! Self-test: the same program runs on all 8 cores, each from its own image. Every core
//! reports its PRID and where its image was linked; core 0 gathers and prints them.
#![no_std]
#![no_main]

use core::ptr::{addr_of, read_volatile, write_volatile};
use neuroncustomop::arch::{memw, prid};
use neuroncustomop_firmware::{board, println};

// A library image with no kernels: these images boot through `_start` instead.
neuroncustomop::kernels! {}

/// A mailbox in shared RAM, outside every image: one (magic, prid, base) slot per core.
const MAILBOX: usize = 0x7F00_0000;
const MAGIC: u32 = 0xC0DE_0000;
const CORES: usize = 8;
/// Long enough for QEMU to start every vCPU; bounded so a missing core fails the test.
const POLLS: u32 = 50_000_000;

unsafe extern "C" {
    static _vector_table: u8;
}

fn slot(core: usize) -> *mut [u32; 3] {
    (MAILBOX + core * 16) as *mut [u32; 3]
}

/// Publishes this core's report: the magic word last, after a barrier, so a reader
/// that sees the magic sees the rest.
fn publish(core: usize, report: [u32; 3]) {
    let slot = slot(core);
    // SAFETY: the mailbox is RAM no image uses; each core writes only its own slot.
    unsafe {
        write_volatile(&raw mut (*slot)[1], report[1]);
        write_volatile(&raw mut (*slot)[2], report[2]);
        memw();
        write_volatile(&raw mut (*slot)[0], report[0]);
    }
    memw();
}

/// Core `core`'s report, once its magic word is there (bounded wait).
fn collect(core: usize) -> Option<[u32; 3]> {
    let slot = slot(core);
    for _ in 0..POLLS {
        // SAFETY: as in `publish`; core 0 only reads the other slots.
        if unsafe { read_volatile(&raw const (*slot)[0]) } & 0xFFFF_0000 == MAGIC {
            memw();
            // SAFETY: as above.
            return Some(unsafe { read_volatile(slot) });
        }
    }
    None
}

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    let id = prid();
    if id == 0 {
        board::start_all_cores();
    }
    // Only the address of the linker-defined symbol is taken.
    let base = addr_of!(_vector_table) as u32;
    publish((id as usize).min(CORES - 1), [MAGIC | id, id, base]);
    if id != 0 {
        loop {
            core::hint::spin_loop();
        }
    }
    let mut missing = 0;
    for core in 0..CORES {
        match collect(core) {
            Some([_, prid, base]) => println!("core {core} prid={prid} base={base:#010x}"),
            None => {
                println!("core {core} did not report");
                missing += 1;
            }
        }
    }
    board::exit(missing)
}
