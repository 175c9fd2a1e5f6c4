//! Host side of the simulated device: everything the real device's loader, DMA engine
//! and compiler would do, so the runtime can be run and tested under QEMU.
