//! The host tier (`neuroncustomop_hosttier`, `Target::Host`): every kernel of the Rust
//! and C examples gives, on the host, exactly the bits the QEMU device gives (outputs,
//! statuses, what each core printed); a fault on the host is reported with the kernel,
//! the core and the source line.

use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_host::array::Array;
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Call, Library, Options, Output, Sanitizer, Target};
use neuroncustomop_hosttier::Debugger;

/// Runs `kernel` on the device and on the host with the same arguments and asserts the
/// two calls agree bit for bit.
fn same_on_both(library: &Library, kernel: &str, args: &[Arg], output: Output, cores: usize) -> Call {
    let device = Options { cores, ..Options::default() };
    let host = Options { target: Target::Host, ..device };
    let on_device = library.call_with(kernel, args, output.clone(), &device).unwrap();
    let on_host = library.call_with(kernel, args, output, &host).unwrap();
    assert_eq!(on_host.output.bytes(), on_device.output.bytes(), "{kernel}: outputs differ");
    assert_eq!(on_host.statuses, on_device.statuses, "{kernel}: statuses differ");
    assert_eq!(on_host.stdout, on_device.stdout, "{kernel}: printed text differs");
    assert!(on_host.instructions.is_empty(), "the host tier counts no instructions");
    on_device.check().unwrap_or_else(|e| panic!("{kernel}: {e}"));
    on_host
}

fn floats(shape: Vec<usize>, seed: u64) -> Array {
    generate(Dtype::Float32, shape, Distribution::Uniform { low: -100.0, high: 100.0 }, seed)
}

#[test]
fn rust_examples_are_bit_identical_on_host_and_device() {
    let relu = Library::example("relu").unwrap();
    let x = floats(vec![64, 130], 1);
    for (kernel, cores) in [("relu", 1), ("relu_tcm", 1), ("relu_multicore", 8)] {
        same_on_both(&relu, kernel, &[Arg::Tensor(x.clone())], Output::Like(0), cores);
    }
    let vector_add = Library::example("vector_add").unwrap();
    let (a, b) = (floats(vec![3000], 2), floats(vec![3000], 3));
    for (kernel, cores) in [("vector_add", 1), ("vector_add_multicore", 8)] {
        same_on_both(&vector_add, kernel, &[Arg::Tensor(a.clone()), Arg::Tensor(b.clone())], Output::Like(0), cores);
    }
    let sort = Library::example("sort").unwrap();
    let x = floats(vec![8, 257], 4);
    for kernel in ["sort_ascending", "sort_descending"] {
        same_on_both(&sort, kernel, &[Arg::Tensor(x.clone())], Output::Like(0), 8);
    }
}

#[test]
fn c_examples_are_bit_identical_on_host_and_device() {
    let c_kernel = Library::example("c_kernel").unwrap();
    let x = floats(vec![40, 33], 5);
    for (kernel, cores) in [("scale", 1), ("scale_multicore", 8)] {
        same_on_both(&c_kernel, kernel, &[Arg::Tensor(x.clone()), Arg::Float(-1.7)], Output::Like(0), cores);
    }
}

#[test]
fn gdb_stops_at_a_kernel_line_and_prints_a_local_and_a_tensor_element() {
    let c_kernel = Library::example("c_kernel").unwrap();
    let x = floats(vec![4, 8], 6);
    let transcript = std::env::temp_dir().join(format!("host-tier-gdb-{}.txt", std::process::id()));
    let debugger = Debugger {
        core: 0,
        // Stopped at the kernel's entry: a breakpoint at a source line, then there.
        commands: [
            "break scale.c:41",
            "continue",
            "bt",
            "print factor",
            "print src[3]",
            "print/x *(unsigned int *)&src[3]",
            "info threads",
            "delete",
            "continue",
        ]
        .map(String::from)
        .to_vec(),
        batch: true,
        transcript: Some(transcript.clone()),
    };
    let options = Options { target: Target::Host, ..Options::default() };
    let args = [Arg::Tensor(x.clone()), Arg::Float(0.5)];
    let call = c_kernel.debug("scale", &args, Output::Like(0), &options, &debugger).unwrap().check().unwrap();
    let printed = std::fs::read_to_string(&transcript).unwrap();
    std::fs::remove_file(&transcript).unwrap();
    let values = x.to_vec::<f32>().unwrap();
    assert!(printed.contains("scale.c:41"), "{printed}");
    assert!(printed.contains("scale_share"), "the backtrace: {printed}");
    assert!(printed.contains("= 0.5"), "the local `factor`: {printed}");
    let bits = format!("= {:#x}", values[3].to_bits());
    assert!(printed.contains(&bits), "the element x[3] = {} ({bits}): {printed}", values[3]);
    assert!(printed.contains("core 0"), "the cores are threads: {printed}");
    let want: Vec<f32> = values.iter().map(|v| v * 0.5).collect();
    assert_eq!(call.output.to_vec::<f32>().unwrap(), want, "the result after gdb let it finish");
}

/// A C library whose kernel reads and writes one element past its tensors' ends (the
/// loop's `<=`, on line 11), in its own project folder.
fn overrun_project() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("host-tier-overrun-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let source = "#include <neuroncustomop.h>\n\
        static void overrun(void) {\n\
        \x20   customop_setup(false);\n\
        \x20   const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();\n\
        \x20   const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();\n\
        \x20   if (x != NULL && out != NULL) {\n\
        \x20       uint32_t count = customop_tensor_numel(x);\n\
        \x20       const float *src = customop_tensor_data(x);\n\
        \x20       float *dst = customop_tensor_data(out);\n\
        \x20       for (uint32_t i = 0; i <= count; i++) {\n\
        \x20           dst[i] = src[i] * 2.0f;\n\
        \x20       }\n\
        \x20       customop_return_tensor(out);\n\
        \x20   }\n\
        \x20   customop_cleanup();\n\
        }\n\
        int get_func_cnt(void) { return 1; }\n\
        void *get_func_ptr(int index) { return index == 0 ? (void *)overrun : NULL; }\n\
        const char *get_func_name(int index) { return index == 0 ? \"overrun\" : NULL; }\n";
    std::fs::write(dir.join("src/overrun.c"), source).unwrap();
    dir
}

#[test]
fn address_sanitizer_catches_a_seeded_overrun_at_its_line() {
    let dir = overrun_project();
    let library = Library::load(&dir).unwrap();
    let x = floats(vec![10], 7);
    let options = Options { target: Target::Host, sanitize: Some(Sanitizer::Address), ..Options::default() };
    let error = library.call_with("overrun", &[Arg::Tensor(x)], Output::Like(0), &options).unwrap_err();
    let text = neuroncustomop_host::library::describe(&error);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(text.contains("AddressSanitizer"), "{text}");
    assert!(text.contains("overrun.c:11"), "caught at its line: {text}");
    assert!(text.contains("past the end of argument 0"), "in tensor terms: {text}");
    assert!(text.contains("core 0"), "{text}");
}
