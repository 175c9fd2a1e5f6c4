//! A library image of test kernels for the entry-contract and pull-stream tests
//! (`qemu/tests/entry_contract.rs`, `qemu/tests/pull_stream.rs`): kernels that print,
//! one that computes over (tensor, int, float, tensor), kernels that misuse the pull
//! stream on purpose, the dispatch benchmark's kernels, and `resolve_check`, which runs
//! setup's resolver (`runtime/arch/xtensa/setup.S` here) over descriptors the host
//! test also resolves.
//!
//! C-style kernels are exported under their own names, so a test can compare the
//! pointers `register_funcs` reports with the ELF symbol table.
#![no_std]
#![no_main]

use core::ffi::CStr;
use neuroncustomop::arch::get_cycle_count;
use neuroncustomop::multicore::get_cpu_id;
use neuroncustomop::println;
use core::cell::UnsafeCell;
use neuroncustomop::translate::{TranslateRecord, configure};
use neuroncustomop::wrapper_api::{
    ARG_TENSOR_SIZE, ArgTensor, Args, Dtype, Invocation, KernelError, Status, Tensor, customop_cleanup,
    customop_invocation_status, customop_next_float, customop_next_int, customop_next_tensor, customop_return_tensor,
    customop_set_invocation, customop_setup, customop_tensor_data, get_dst_tensor,
};

/// What `mix` reports when its tensors differ in length (`0x1_0000 + 1`).
const LENGTH_MISMATCH: KernelError = KernelError::Op(1);

/// No arguments: prints `hello from core <c>` and succeeds.
#[unsafe(no_mangle)]
extern "C" fn hello() {
    customop_setup(false);
    println!("hello from core {}", get_cpu_id());
    customop_cleanup();
}

/// Arguments (int n), output ignored: prints `n` lines `flood <i, five digits>`, 12 bytes
/// each, to overrun the 16 KiB stdout ring on purpose.
#[unsafe(no_mangle)]
extern "C" fn flood() {
    customop_setup(false);
    for line in 0..customop_next_int() {
        println!("flood {line:05}");
    }
    customop_cleanup();
}

/// (tensor x: f32, int k, float alpha, tensor y: f32) -> f32 output of x's length:
/// `out[i] = (x[i] * alpha + k as f32) * y[i]`, in exactly that order of f32 operations.
fn mix(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let k = args.int()?;
    let alpha = args.float()?;
    let y = args.tensor()?;
    let mut out = args.output()?;
    let (x, y) = (x.as_slice::<f32>()?, y.as_slice::<f32>()?);
    let out_values = out.as_mut_slice::<f32>()?;
    if x.len() != y.len() || x.len() != out_values.len() {
        return Err(LENGTH_MISMATCH);
    }
    let offset = k as f32;
    for ((o, &a), &b) in out_values.iter_mut().zip(x).zip(y) {
        *o = (a * alpha + offset) * b;
    }
    Ok(out)
}

/// (tensor x: f32) -> f32 output of the same length: a copy. The control for the
/// malformed-descriptor tests: they change one field of an op this kernel accepts.
fn copy(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let mut out = args.output()?;
    let source = x.as_slice::<f32>()?;
    out.as_mut_slice::<f32>()?.get_mut(..source.len()).ok_or(LENGTH_MISMATCH)?.copy_from_slice(source);
    Ok(out)
}

/// (tensor x): pulls x, the output, then one argument more than there is.
fn pull_past_end(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let _x = args.tensor()?;
    let out = args.output()?;
    let _missing = args.tensor()?;
    Ok(out)
}

/// (int k): pulls k as a tensor.
fn tensor_for_scalar(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let _k = args.tensor()?;
    Ok(args.output()?)
}

/// (tensor x): pulls x as an int.
fn scalar_for_tensor(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let _x = args.int()?;
    Ok(args.output()?)
}

/// (tensor x): takes the output twice.
fn output_twice(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let _x = args.tensor()?;
    let _first = args.output()?;
    Ok(args.output()?)
}

/// C-style: `get_dst_tensor` twice, then cleanup.
#[unsafe(no_mangle)]
extern "C" fn dst_twice() {
    customop_setup(false);
    get_dst_tensor();
    get_dst_tensor();
    customop_cleanup();
}

/// C-style: `customop_return_tensor` of a valid tensor descriptor, without
/// `customop_setup` (and so without cleanup).
#[unsafe(no_mangle)]
extern "C" fn return_without_setup() {
    let Ok(tensor) = ArgTensor::hbm_tensor(Dtype::Float32, &[1], 0) else { return };
    // SAFETY: `tensor` is a live descriptor on the stack.
    unsafe { customop_return_tensor(&tensor) };
}

/// The dispatch benchmark's op: pulls (tensor, int, float), takes the output and
/// returns it untouched.
fn dispatch3(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let _x = args.tensor()?;
    let _k = args.int()?;
    let _alpha = args.float()?;
    Ok(args.output()?)
}

/// The benchmark's baseline: a kernel that does nothing, not even setup; its count is
/// the loader's call and clock reads around any kernel.
#[unsafe(no_mangle)]
extern "C" fn empty() {}

/// The C-style form of `dispatch3`, cut after `steps` of its steps (then cleanup), so
/// the benchmark can say what each step costs: 0 setup, 1 the tensor, 2 the int,
/// 3 the float, 4 `get_dst_tensor`, 5 `customop_return_tensor`.
fn dispatch3_steps(steps: u32) {
    customop_setup(false);
    if steps >= 1 {
        customop_next_tensor();
    }
    if steps >= 2 {
        customop_next_int();
    }
    if steps >= 3 {
        customop_next_float();
    }
    let dst = if steps >= 4 { get_dst_tensor() } else { core::ptr::null() };
    if steps >= 5 {
        // SAFETY: `dst` is null or the runtime's live output descriptor.
        unsafe { customop_return_tensor(dst) };
    }
    customop_cleanup();
}

extern "C" fn steps_setup() {
    dispatch3_steps(0);
}
extern "C" fn steps_tensor() {
    dispatch3_steps(1);
}
extern "C" fn steps_int() {
    dispatch3_steps(2);
}
extern "C" fn steps_float() {
    dispatch3_steps(3);
}
extern "C" fn steps_dst() {
    dispatch3_steps(4);
}
extern "C" fn steps_return() {
    dispatch3_steps(5);
}

/// One component of setup alone: emptying the op's TCM pool.
extern "C" fn tcm_reset_only() {
    neuroncustomop::allocators::tcm::tcm_reset();
}

/// The kernels `dispatch_loop` times, `empty` (the baseline) first.
const TIMED: [&CStr; 9] = [
    c"empty",
    c"dispatch3",
    c"steps_setup",
    c"steps_tensor",
    c"steps_int",
    c"steps_float",
    c"steps_dst",
    c"steps_return",
    c"tcm_reset_only",
];

/// The registered entry point of kernel `name`, looked up as a loader does.
fn kernel_named(name: &CStr) -> Option<extern "C" fn()> {
    let index = (0..get_func_cnt()).find(|&i| {
        // SAFETY: in-range names are the table's NUL-terminated static strings.
        let candidate = unsafe { CStr::from_ptr(get_func_name(i)) };
        candidate == name
    })?;
    // SAFETY: the table's pointers are `extern "C" fn()` kernels.
    Some(unsafe { core::mem::transmute::<*const core::ffi::c_void, extern "C" fn()>(get_func_ptr(index)) })
}

/// The dispatch benchmark without the loader's 25-instruction clock resolution per op.
/// Arguments: (u8 tensor: four descriptors, 192 bytes, int repetitions). The four
/// descriptors are a (tensor, int, float) argument list and an output. After its own
/// cleanup, for each kernel of [`TIMED`] this kernel plays the loader `repetitions`
/// times in a row, `customop_set_invocation` then the kernel, between two CCOUNT reads,
/// and prints `LOOP <kernel> <ticks> <status of the last invocation>`; then the same for
/// `empty` and `dispatch3` with new arguments each time, as `LOOP <kernel>/new ...`.
#[unsafe(no_mangle)]
extern "C" fn dispatch_loop() {
    const BLOCK: usize = 4 * ARG_TENSOR_SIZE;
    customop_setup(false);
    let block = customop_next_tensor();
    let repetitions = customop_next_int();
    // SAFETY: `block` is null or the runtime's copy of the descriptor, valid until the
    // next setup.
    let block_len = unsafe { block.as_ref() }.and_then(|d| d.validate().ok()).map(|view| view.byte_len());
    // SAFETY: as above.
    let data = unsafe { customop_tensor_data(block) }.cast::<[[u8; ARG_TENSOR_SIZE]; 4]>();
    let descriptors = (block_len == Some(BLOCK as u64) && !data.is_null()).then(|| {
        // SAFETY: `customop_tensor_data` translated all `BLOCK` bytes of the tensor to
        // `data`, readable until cleanup; `read_unaligned` takes any alignment.
        unsafe { data.read_unaligned() }
    });
    customop_cleanup();
    let Some(descriptors) = descriptors else { return };
    let [x, k, alpha, mut output] = descriptors.map(|bytes| ArgTensor::from_bytes(&bytes));
    let inputs = [x, k, alpha];
    for name in TIMED {
        let Some(kernel) = kernel_named(name) else { continue };
        let start = get_cycle_count();
        for _ in 0..repetitions {
            // SAFETY: `inputs` and `output` outlive the kernel's run.
            unsafe { customop_set_invocation(inputs.as_ptr(), inputs.len() as u32, &mut output) };
            kernel();
        }
        let ticks = get_cycle_count().wrapping_sub(start);
        println!("LOOP {} {ticks} {}", name.to_str().unwrap_or("?"), customop_invocation_status());
    }
    // New arguments every time: the same op over the same data, alternately described
    // by the rank-1 descriptors and by rank-2 ones, so setup copies, checks and
    // translates every descriptor of every dispatch.
    let (other_inputs, mut other_output) = (inputs.map(reshaped), reshaped(output));
    for name in [c"empty", c"dispatch3"] {
        let Some(kernel) = kernel_named(name) else { continue };
        let start = get_cycle_count();
        for _ in 0..repetitions / 2 {
            // SAFETY: the argument sets and outputs outlive the kernel's runs.
            unsafe { customop_set_invocation(inputs.as_ptr(), inputs.len() as u32, &mut output) };
            kernel();
            // SAFETY: as above.
            unsafe { customop_set_invocation(other_inputs.as_ptr(), other_inputs.len() as u32, &mut other_output) };
            kernel();
        }
        let ticks = get_cycle_count().wrapping_sub(start);
        println!("LOOP {}/new {ticks} {}", name.to_str().unwrap_or("?"), customop_invocation_status());
    }
}

/// A rank-1 descriptor of `n` elements as rank 2: `[n / 4, 4]`, or `[n, 1]`.
fn reshaped(mut desc: ArgTensor) -> ArgTensor {
    let n = desc.shape[0];
    (desc.shape[0], desc.shape[1]) = if n % 4 == 0 { (n / 4, 4) } else { (n, 1) };
    desc.num_dim = 2;
    desc
}

/// The bytes of one `resolve_check` case: `[num_args, flags, 0 x 6]`, then, from byte
/// 8 (9 with [`CASE_MISALIGNED`]), the output's descriptor and `num_args` argument
/// descriptors (at most 10). `qemu/tests/pull_stream.rs` writes them.
const CASE_SIZE: usize = 540;
/// `flags` bit: the op has an output (`result` is not null).
const CASE_HAS_OUTPUT: u8 = 1;
/// `flags` bit: the descriptors start one byte later, not 4-aligned.
const CASE_MISALIGNED: u8 = 2;
/// The framework address and size of the two translate windows `resolve_check` maps
/// onto [`RESOLVE_MEMORY`] (the first and the second half).
const RESOLVE_WINDOWS: [u64; 2] = [0x7f00_0000_0000, 0x7f00_0001_0000];
const RESOLVE_WINDOW_SIZE: usize = 4096;

/// The device memory behind `resolve_check`'s windows: byte `i` holds `i * 7 + 3`.
#[repr(align(8))]
struct ResolveMemory(UnsafeCell<[u8; 2 * RESOLVE_WINDOW_SIZE]>);
// SAFETY: written once per `resolve_check`, on the core that runs it, before any read.
unsafe impl Sync for ResolveMemory {}
static RESOLVE_MEMORY: ResolveMemory = ResolveMemory(UnsafeCell::new([0; 2 * RESOLVE_WINDOW_SIZE]));

/// Setup's resolver against the host's (`qemu/tests/pull_stream.rs`,
/// `setup_resolves_as_the_host`): arguments (u8 tensor: cases of [`CASE_SIZE`] bytes).
/// Maps [`RESOLVE_WINDOWS`] onto [`RESOLVE_MEMORY`] and runs the cases in turn through
/// one invocation of its own (so that setup's reuse of unchanged descriptors is
/// exercised too): a Rust kernel pulls each argument as the type its descriptor names,
/// until a pull fails, then the output. Prints `RESOLVE <case> <slot> <status> <value>` for each
/// pull (slot 99: the output; the value: a scalar's bits, or a tensor's offset in
/// [`RESOLVE_MEMORY`] times 2^32 plus its element count), then
/// `RESOLVE <case> status <invocation status>`.
#[unsafe(no_mangle)]
extern "C" fn resolve_check() {
    customop_setup(false);
    let block = customop_next_tensor();
    // SAFETY: `block` is null or the runtime's copy of the descriptor.
    let len = unsafe { block.as_ref() }.and_then(|d| d.validate().ok()).map_or(0, |view| view.byte_len() as usize);
    // SAFETY: as above.
    let data = unsafe { customop_tensor_data(block) }.cast::<u8>();
    customop_cleanup();
    if data.is_null() {
        return;
    }
    let memory = RESOLVE_MEMORY.0.get().cast::<u8>();
    for i in 0..2 * RESOLVE_WINDOW_SIZE {
        // SAFETY: byte `i` of the static, which nothing else uses now.
        unsafe { memory.add(i).write((i * 7 + 3) as u8) };
    }
    let base = memory.addr();
    let records = [0, 1].map(|i| {
        TranslateRecord::window(RESOLVE_WINDOWS[i], RESOLVE_WINDOW_SIZE as u64, (base + i * RESOLVE_WINDOW_SIZE) as u64)
    });
    if configure(&records).is_err() {
        println!("RESOLVE configure failed");
        return;
    }
    let mut invocation = Invocation::new();
    for case in 0..len / CASE_SIZE {
        // SAFETY: `customop_tensor_data` translated the whole block; it stays in place
        // (the loader's tensor area) after cleanup.
        let record = unsafe { data.add(case * CASE_SIZE) };
        // SAFETY: as above: the case's bytes.
        let (num_args, flags) = unsafe { (record.read(), record.add(1).read()) };
        let descriptors = record.wrapping_add(8 + usize::from(flags & CASE_MISALIGNED != 0));
        let result = if flags & CASE_HAS_OUTPUT != 0 { descriptors } else { core::ptr::null_mut() };
        let args = descriptors.wrapping_add(ARG_TENSOR_SIZE).cast::<ArgTensor>();
        // SAFETY: `args` holds `num_args` (at most 10) descriptors and `result` one, in
        // the block, readable and writable until the next case.
        unsafe { invocation.set_invocation(args, u32::from(num_args), result.cast()) };
        let status = invocation.run(|pulls| {
            for slot in 0..num_args {
                // SAFETY: argument `slot`'s type byte, in the block.
                let raw_type = unsafe { descriptors.add((usize::from(slot) + 1) * ARG_TENSOR_SIZE + 1).read() };
                let pulled = match raw_type {
                    2 => pulls.int().map(|v| u64::from(v as u32)),
                    3 => pulls.longlong().map(|v| v as u64),
                    4 => pulls.float().map(|v| u64::from(v.to_bits())),
                    _ => pulls.tensor().map(|t| tensor_value(&t, base)),
                };
                println!("RESOLVE {case} {slot} {} {}", status_of(&pulled), pulled.as_ref().map_or(0, |v| *v));
                pulled?;
            }
            let output = pulls.output();
            let value = output.as_ref().map(|t| tensor_value(t, base)).map_err(|e| *e);
            println!("RESOLVE {case} 99 {} {}", status_of(&value), value.unwrap_or(0));
            Ok(output?)
        });
        println!("RESOLVE {case} status {}", status.0);
    }
}

/// A pulled tensor as `resolve_check` prints it: its offset in the windows' memory
/// times 2^32 plus its element count; an empty one (no data) as its count alone.
fn tensor_value(tensor: &Tensor<'_>, base: usize) -> u64 {
    let data = tensor.data_ptr();
    let offset = if data.is_null() { 0 } else { data.addr() - base };
    ((offset as u64) << 32) | tensor.numel() as u64
}

fn status_of<T>(pulled: &Result<T, neuroncustomop::wrapper_api::ArgError>) -> u32 {
    pulled.as_ref().map_or_else(|e| Status::from(*e).0, |_| 0)
}

neuroncustomop::kernels! {
    hello,
    flood,
    fn mix,
    fn copy,
    fn pull_past_end,
    fn tensor_for_scalar,
    fn scalar_for_tensor,
    fn output_twice,
    dst_twice,
    return_without_setup,
    fn dispatch3,
    empty,
    steps_setup,
    steps_tensor,
    steps_int,
    steps_float,
    steps_dst,
    steps_return,
    tcm_reset_only,
    dispatch_loop,
    resolve_check,
}
