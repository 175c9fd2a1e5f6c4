//! The simulated device loader (see `neuroncustomop_firmware::loader`).
#![no_std]
#![no_main]

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    neuroncustomop_firmware::loader::run()
}
