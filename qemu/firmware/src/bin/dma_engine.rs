//! The simulated DMA engine (see `neuroncustomop_firmware::dma_engine`).
#![no_std]
#![no_main]

#[unsafe(no_mangle)]
extern "C" fn main() -> i32 {
    neuroncustomop_firmware::dma_engine::run()
}
