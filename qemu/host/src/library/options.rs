//! How a call runs: its cores, its checks, its profile, its target.

use neuroncustomop::data_transfer::NeuronMemcpyMethod;
use neuroncustomop_hosttier::Sanitizer;

/// How a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Cores that run the kernel, 1 to 8: a kernel that splits its work by
    /// `get_cpu_count()` (which is 8) needs all 8.
    pub cores: usize,
    /// The backend of the runtime's `neuron_memcpy` for this op; the default is the
    /// library's own, the DMA engine (a core waiting for it sleeps, docs/kernel-cost.md, "DMA or the vector copy").
    pub memcpy: NeuronMemcpyMethod,
    /// Run QEMU under `-icount` (off by default): all cores in turn on one host
    /// thread, with a deterministic virtual clock, so a sleeping core's wake-up costs
    /// no wall time and a kernel that waits (for DMA, for other cores) counts the same
    /// every run. Off, each core runs on a host thread of its own (QEMU's MTTCG) and
    /// the TCG plugin counts; each core's count is exact either way (its ICOUNT
    /// register under `-icount`). Only an unchecked, unprofiled call can have it: the
    /// checks and the profile run in the plugin, which QEMU 10.0.2 cannot run there.
    pub count_instructions: bool,
    /// Stop the kernel after this many instructions on a core ([`CallError::Stopped`](super::CallError::Stopped),
    /// naming where it was): an infinite loop ends instead of hanging the call.
    pub max_instructions: u64,
    /// The kernel writes only part of its output on purpose: elements it never wrote
    /// do not make [`Call::check`](super::Call::check) fail. Off by default: an output element no core
    /// wrote is a failure ([`Unwritten`](super::Unwritten)).
    pub partial_output: bool,
    /// Check every load and store of the kernel against what its op may touch (the
    /// default): a store past the output, into an input or another core's image, a load
    /// outside what the op was given, output bytes two cores wrote ([`Call::findings`](super::Call::findings),
    /// and [`Call::check`](super::Call::check) fails on them). The checks run in the device's TCG plugin,
    /// which runs without `-icount`: a checked call runs without it whatever
    /// [`Options::count_instructions`] says.
    pub checked: bool,
    /// Profile the call ([`Call::profile`](super::Call::profile)): where each core's instructions went, by
    /// function, call path, class and memory region, and its timeline. Slower (every
    /// instruction and memory access is instrumented) and needs the TCG plugin, so the
    /// device runs without `-icount` (`count_instructions` is ignored).
    pub profile: bool,
    /// Where the kernel runs: the simulated device (the default, and the reference), or
    /// the host tier (the same source built for x86-64, each core a thread: no
    /// instruction counts; for debuggers and sanitizers, docs/op-author-guide.md).
    pub target: Target,
    /// On the host tier: build the library with this sanitizer (C, C++ and Rust libraries; `undefined` C and C++ only).
    pub sanitize: Option<Sanitizer>,
}

/// Where a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Target {
    /// The simulated Xtensa device under QEMU: the reference.
    #[default]
    Device,
    /// The host tier (`neuroncustomop_hosttier`): the library built for x86-64, run on
    /// a simulated device memory at the device's addresses, each core a thread.
    Host,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            cores: 1,
            memcpy: NeuronMemcpyMethod::Dma,
            count_instructions: false,
            max_instructions: neuroncustomop_wire::job::DEFAULT_MAX_INSTRUCTIONS,
            partial_output: false,
            checked: true,
            target: Target::Device,
            sanitize: None,
            profile: false,
        }
    }
}
