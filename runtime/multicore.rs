//! Which core this is: the `parallel.o` part of the runtime.
//!
//! Every core runs the same kernel on its own image; `get_cpu_id` reads PRID.

/// Number of GPSIMD cores in a NeuronCore-v2 cluster.
pub const CPU_COUNT: u32 = 8;

/// This core's index in `0..get_cpu_count()`, from the PRID register.
#[unsafe(no_mangle)]
pub extern "C" fn get_cpu_id() -> u32 {
    crate::arch::prid()
}

/// The number of cores the kernel runs on: always [`CPU_COUNT`].
#[unsafe(no_mangle)]
pub extern "C" fn get_cpu_count() -> u32 {
    CPU_COUNT
}
