//! The host tier (`neuroncustomop_hosttier`, `Target::Host`): every kernel of every
//! example (Rust, C, C++ on the AWS torch API) gives, on the host, exactly the bits the
//! QEMU device gives (outputs, statuses, what each core printed: C's `printf` family
//! and C++'s `printf` format with the runtime's own formatter on both); a fault on the
//! host is reported with the kernel, the core and the source line; a library loaded for
//! the host tier builds nothing for the device. The host tier's own checks (stores into
//! inputs, double and invalid frees, leaks) and ThreadSanitizer through the runtime's
//! copies, on the device checks' own test kernels.
use crate::checks::line_of;
use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_host::array::Array;
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Call, Library, Options, Output, PartialOutput, Sanitizer, Target, describe};
use neuroncustomop_hosttier::Debugger;
use neuroncustomop_machine::findings::{Finding, FindingKind, OpFindings, Severity};

/// Runs `kernel` on the device and on the host with the same arguments and asserts the
/// two calls agree bit for bit, and that the kernel succeeded.
fn same_on_both(library: &Library, kernel: &str, args: &[Arg], output: Output, cores: usize) -> Call {
    let on_device = same_status_on_both(library, kernel, args, output, cores);
    on_device.check().unwrap_or_else(|e| panic!("{kernel}: {e}"))
}

/// [`same_on_both`] for a kernel that may fail: its status, output and printed text
/// are the same on both; the device's call is returned.
fn same_status_on_both(library: &Library, kernel: &str, args: &[Arg], output: Output, cores: usize) -> Call {
    let device = Options { cores, ..Options::default() };
    let host = Options { target: Target::Host, ..device };
    let on_device = library.call_with(kernel, args, output.clone(), &device).unwrap();
    let on_host = library.call_with(kernel, args, output, &host).unwrap();
    assert_eq!(on_host.output.bytes(), on_device.output.bytes(), "{kernel}: outputs differ");
    assert_eq!(on_host.statuses, on_device.statuses, "{kernel}: statuses differ");
    assert_eq!(on_host.stdout, on_device.stdout, "{kernel}: printed text differs");
    assert!(on_host.instructions.is_empty(), "the host tier counts no instructions");
    on_device
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
fn c_printf_prints_the_same_text_on_host_and_device() {
    let c_libc = Library::example("c_libc").unwrap();
    let byte = || vec![Arg::Tensor(Array::from_bytes(Dtype::Uint8, vec![1], vec![0]).unwrap())];
    // printf, sprintf, snprintf, and vprintf / vsnprintf through the kernel's own
    // variadic functions, with arguments of every size, on every core.
    let call = same_on_both(&c_libc, "printf_lines", &byte(), Output::Like(0), 8);
    assert!(call.stdout[3].text.starts_with("A 11 22 33 44 55\nC 7\n3 three 1.235\n"), "{}", call.stdout[3].text);
    assert!(call.stdout[3].text.contains("vsnprintf 15 [ok 0 2 010 0xff]"), "{}", call.stdout[3].text);
    // snprintf of each kind into the output (its return value and text); one
    // conversion each, as format_table passes one argument.
    let mut records = Vec::new();
    for (kind, value, format) in [
        (0u8, (-42i64) as u64, "%+08d|"),
        (1, 1 << 20, "%#lx"),
        (2, (-1i64 << 40) as u64, "%lld"),
        (3, 1.0e-7f64.to_bits(), "%.3e"),
        (3, 2.5f64.to_bits(), "%10.4f"),
    ] {
        let mut record = [0u8; 64];
        record[0] = kind;
        record[8..16].copy_from_slice(&value.to_le_bytes());
        record[16..16 + format.len()].copy_from_slice(format.as_bytes());
        records.extend_from_slice(&record);
    }
    let table = Array::from_bytes(Dtype::Uint8, vec![records.len()], records).unwrap();
    let output = Output::Shape { dtype: Dtype::Uint8, shape: vec![5 * 128] };
    let call = same_on_both(&c_libc, "format_table", &[Arg::Tensor(table)], output, 1);
    assert_eq!(&call.output.bytes()[4..13], b"-0000042|", "snprintf's text");
    // string.h and stdlib.h: the same, but for C's `long`, 64 bits on the host (the
    // guide's "What the host tier cannot tell"): strtol("99999999999") fits there, and
    // saturates at LONG_MAX on the device.
    let device = c_libc.call("string_checks", &byte(), Output::Like(0)).unwrap().check().unwrap();
    let options = Options { target: Target::Host, ..Options::default() };
    let host = c_libc.call_with("string_checks", &byte(), Output::Like(0), &options).unwrap().check().unwrap();
    assert_eq!(host.output, device.output);
    assert!(device.stdout[0].text.contains(" 2147483647 "), "{}", device.stdout[0].text);
    assert_eq!(host.stdout[0].text, device.stdout[0].text.replace(" 2147483647 ", " 99999999999 "));
}

/// Arguments for each kernel of the C++ examples (every kernel they register), and
/// the cores it runs on.
fn cxx_calls(example: &str, kernel: &str) -> (Vec<Arg>, usize) {
    let x = floats(vec![300], 11);
    let y = floats(vec![300], 12);
    let ints = |seed| generate(Dtype::Int32, vec![300], Distribution::Uniform { low: 1.0, high: 1000.0 }, seed);
    let t = |array: &Array| Arg::Tensor(array.clone());
    let args = match (example, kernel) {
        ("cxx_ops", "int_ops") => vec![Arg::Tensor(ints(13)), Arg::Tensor(ints(14))],
        ("cxx_scalars", "affine") => vec![t(&x), Arg::LongLong(-3), Arg::Float(0.25)],
        ("cxx_scalars", "mask_minus_one") => vec![Arg::Tensor(ints(15)), Arg::LongLong(0xF0)],
        ("cxx_scalars", "scale_add") => vec![t(&x), Arg::Int(-7), Arg::Float(1.5)],
        ("cxx_softmax", _) => vec![Arg::Tensor(floats(vec![6, 50], 16))],
        ("cxx_misuse", "cxx_runtime") => vec![Arg::Tensor(floats(vec![1], 17))],
        ("cxx_add" | "cxx_ops" | "cxx_stream", _) | ("cxx_relu", "relu_backward") => vec![t(&x), t(&y)],
        _ => vec![t(&x)],
    };
    (args, if example == "cxx_relu_multicore" { 8 } else { 1 })
}

#[test]
fn cxx_examples_are_bit_identical_on_host_and_device() {
    // Every C++ example with a customop.json (cxx_mlp_training is built by its
    // build.py for PyTorch: its relu.cpp is cxx_relu's kernel).
    for example in [
        "cxx_add",
        "cxx_relu",
        "cxx_relu_multicore",
        "cxx_relu_tcm",
        "cxx_ops",
        "cxx_scalars",
        "cxx_softmax",
        "cxx_stream",
        "cxx_misuse",
    ] {
        let library = Library::example(example).unwrap_or_else(|e| panic!("{}", describe(&e)));
        let kernels: Vec<String> = library.kernels().iter().map(|k| k.to_string()).collect();
        for kernel in &kernels {
            let (args, cores) = cxx_calls(example, kernel);
            let (dtype, shape) = library.resolve_output(kernel, &args, PartialOutput::default(), None).unwrap();
            let output = Output::Shape { dtype, shape };
            if kernel == "stack_sum" {
                // Its output is the sum, then the page of its stack array: HBM on the
                // device (-DSTACK_SIZE), the thread's own stack on the host.
                let device = library.call_with(kernel, &args, output.clone(), &Options::default()).unwrap();
                let options = Options { target: Target::Host, ..Options::default() };
                let host = library.call_with(kernel, &args, output, &options).unwrap();
                assert_eq!((host.status, &host.output.bytes()[..4]), (device.status, &device.output.bytes()[..4]));
                continue;
            }
            let call = same_status_on_both(&library, kernel, &args, output, cores);
            // The misuse example's kernels fail on purpose, each with its status (but
            // two: the C++ runtime's use, and a TCM pool used within its bounds too), and
            // so does cxx_stream's copy_coherent (the coherence policy refuses it).
            let succeeds = match example {
                "cxx_misuse" => ["cxx_runtime", "tcm_past_pool"].contains(&kernel.as_str()),
                "cxx_stream" => kernel != "copy_coherent",
                _ => true,
            };
            assert_eq!(call.status.is_ok(), succeeds, "{example} {kernel}: {}", call.status);
        }
    }
}

#[test]
fn a_library_loaded_for_the_host_tier_builds_nothing_for_the_device() {
    let dir = std::env::temp_dir().join(format!("host-tier-first-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/c_kernel/src/scale.c")).unwrap();
    std::fs::write(dir.join("src/scale.c"), source).unwrap();
    let library = Library::load_for(&dir, Target::Host).unwrap_or_else(|e| panic!("{}", describe(&e)));
    assert_eq!(library.kernels(), ["scale", "scale_multicore"]);
    let x = floats(vec![5, 7], 8);
    let options = Options { target: Target::Host, ..Options::default() };
    let call = library.call_with("scale", &[Arg::Tensor(x.clone()), Arg::Float(3.0)], Output::Like(0), &options);
    let call = call.unwrap().check().unwrap();
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v * 3.0).collect();
    assert_eq!(call.output.to_vec::<f32>().unwrap(), want);
    let device_build = dir.join("target/neuroncustomop");
    let made: Vec<String> = std::fs::read_dir(&device_build)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(made, ["host"], "only the host build in {}", device_build.display());
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

#[test]
fn gdb_holds_every_core_at_its_entry_so_a_breakpoint_on_core_2s_rows_is_hit_5_of_5_runs() {
    let c_kernel = Library::example("c_kernel").unwrap();
    let x = floats(vec![8, 64], 7);
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v * 0.5).collect();
    let options = Options { target: Target::Host, cores: 8, ..Options::default() };
    let args = [Arg::Tensor(x.clone()), Arg::Float(0.5)];
    for run in 0..5 {
        let transcript = std::env::temp_dir().join(format!("host-tier-gdb-all-{}-{run}.txt", std::process::id()));
        let debugger = Debugger {
            core: 0,
            // No --gdb-core 2: core 0 shows first, and core 2 has not run ahead.
            commands: ["frame", "break scale.c:41 if core == 2", "continue", "print core", "delete", "continue"]
                .map(String::from)
                .to_vec(),
            batch: true,
            transcript: Some(transcript.clone()),
        };
        let call = c_kernel.debug("scale_multicore", &args, Output::Like(0), &options, &debugger).unwrap();
        let printed = std::fs::read_to_string(&transcript).unwrap();
        std::fs::remove_file(&transcript).unwrap();
        assert!(
            printed.contains("scale_multicore ()"),
            "run {run}: the first stop, in the author's function: {printed}"
        );
        assert!(printed.contains("$1 = 2"), "run {run}: core 2 stopped at its row: {printed}");
        assert_eq!(call.check().unwrap().output.to_vec::<f32>().unwrap(), want, "run {run}");
    }
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

/// The newcomer's path: a project made by `ncop new` outside
/// the checkout, debugged with `ncop debug` as the guide shows, stops at a line of its
/// kernel and prints a local, a tensor element and an argument's descriptor, and the
/// op's result is still right.
#[test]
fn a_new_project_stops_under_gdb_at_its_kernel_line_and_prints_a_local_and_an_element() {
    let root = std::env::temp_dir().join(format!("host-tier-newcomer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let dir = root.join("mykernel");
    let ncop = |cwd: &std::path::Path, args: &[&str]| {
        let output =
            std::process::Command::new(env!("CARGO_BIN_EXE_ncop")).current_dir(cwd).args(args).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.success(), text)
    };
    assert!(ncop(&root, &["new", "mykernel", "--lang", "c"]).0);
    // x[i] = 1.5 i: element 3 is 4.5; the result is x * 0.5.
    let x = Array::from_vec(vec![2, 5], (0..10).map(|i| i as f32 * 1.5).collect::<Vec<f32>>()).unwrap();
    let want = Array::from_vec(vec![2, 5], (0..10).map(|i| i as f32 * 0.75).collect::<Vec<f32>>()).unwrap();
    neuroncustomop_host::npy::write(&dir.join("x.npy"), &x).unwrap();
    neuroncustomop_host::npy::write(&dir.join("want.npy"), &want).unwrap();
    // In the project's folder, as the guide shows.
    let (ok, text) = ncop(
        &dir,
        &[
            "debug",
            "scale",
            "--arg",
            "x.npy",
            "--arg",
            "float:0.5",
            "--expect",
            "want.npy",
            "--gdb-batch",
            "--gdb-ex",
            "break kernels.c:28 if i == 3",
            "--gdb-ex",
            "continue",
            "--gdb-ex",
            "bt",
            "--gdb-ex",
            "print i",
            "--gdb-ex",
            "print factor",
            "--gdb-ex",
            "print src[i]",
            "--gdb-ex",
            "print x",
            "--gdb-ex",
            "delete",
            "--gdb-ex",
            "continue",
        ],
    );
    std::fs::remove_dir_all(&root).unwrap();
    assert!(ok, "{text}");
    assert!(text.contains("kernels.c:28"), "stopped at the line: {text}");
    assert!(text.contains("in scale ()") || text.contains(" scale () at"), "the backtrace: {text}");
    assert!(text.contains("$1 = 3\n"), "the local i: {text}");
    assert!(text.contains("$2 = 0.5\n"), "the local factor: {text}");
    assert!(text.contains("$3 = 4.5\n"), "the element x[3]: {text}");
    // The argument's descriptor: its dtype, shape, address, where it translates to, and
    // its first elements (the descriptor printer).
    let descriptor = text.lines().find_map(|line| line.strip_prefix("$4 = ")).unwrap_or_else(|| panic!("{text}"));
    assert!(descriptor.starts_with("descriptor float32 [2, 5] hbm 0x"), "{descriptor}");
    assert!(descriptor.ends_with(" = {0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5, ...}"), "{descriptor}");
    assert!(text.contains("result      OK: matches want.npy"), "the op's result: {text}");
}

/// `ncop run --expect` on a kernel that left elements unwritten: the call fails for
/// them, and the comparison still names them by their index (a kernel written for 8
/// cores, run on 1).
#[test]
fn unwritten_elements_are_named_by_index_when_there_is_an_expected_output() {
    let dir = std::env::temp_dir().join(format!("host-tier-unwritten-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let x = Array::from_vec(vec![16], (0..16).map(|i| i as f32).collect::<Vec<f32>>()).unwrap();
    let want = Array::from_vec(vec![16], (0..16).map(|i| i as f32 * 0.5).collect::<Vec<f32>>()).unwrap();
    neuroncustomop_host::npy::write(&dir.join("x.npy"), &x).unwrap();
    neuroncustomop_host::npy::write(&dir.join("want.npy"), &want).unwrap();
    let lib = crate::common::checkout().join("examples/c_kernel");
    let args = ["--arg", "x.npy", "--arg", "float:0.5", "--expect", "want.npy", "--host", "--cores", "1"];
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ncop"))
            .current_dir(&dir)
            .args(["run", "scale_multicore", "--lib", lib.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap()
    };
    let output = run(&args);
    // Without --expect: the first elements still holding the canary.
    let alone = run(&["--arg", "x.npy", "--arg", "float:0.5", "--host", "--cores", "1"]);
    std::fs::remove_dir_all(&dir).unwrap();
    let alone = String::from_utf8_lossy(&alone.stdout);
    assert!(
        alone.contains("unwritten   still holding the canary at [2], [3], [4], [5], [6], [7], [8], [9], [10], [11], …"),
        "{alone}"
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("result      FAILED: kernel scale_multicore failed: 14 of 16 output elements"), "{text}");
    assert!(text.contains("checks      the host tier's own: stores into inputs"), "{text}");
    assert!(
        text.contains("compared    with want.npy (bit for bit): 14 of 16 elements differ (14 never written by the kernel)\n  at [2]: never written, want 1.0"),
        "{text}"
    );
}

/// Calls `kernel` of one of the device checks' test libraries on the host tier, on x =
/// 0, 1, ... ([128] float32) on `cores` cores: its findings (their lines named), and
/// whether the output is x.
fn on_host(library: &Library, kernel: &str, cores: usize, sanitize: Option<Sanitizer>) -> (OpFindings, bool) {
    let x = generate(Dtype::Float32, vec![128], Distribution::Range, 0);
    let options = Options { cores, partial_output: true, target: Target::Host, sanitize, ..Options::default() };
    let call = library
        .call_with(kernel, &[Arg::Tensor(x.clone())], Output::Like(0), &options)
        .unwrap_or_else(|e| panic!("{kernel}: {}", describe(&e)));
    (call.findings, call.output == x)
}

/// The only finding of `found`: of `kind`, on `core`, at the line of `source` (the file
/// `file`) that holds `text`.
fn only_finding(found: &OpFindings, kind: FindingKind, core: u32, (file, source): (&str, &str), text: &str) -> Finding {
    assert_eq!(found.total, 1, "{found}");
    let finding = found.shown[0].clone();
    assert_eq!((finding.kind, finding.core), (kind, core), "{finding}");
    let line = line_of(source, text);
    assert!(finding.at.as_deref().unwrap_or_default().contains(&format!("{file}:{line}")), "{finding}");
    finding
}

const MISUSE_C: (&str, &str) = ("misuse.c", crate::checks::C_SOURCE);
const MISUSE_CXX: (&str, &str) = ("misuse.cpp", include_str!("checks_cxx/misuse.cpp"));

#[test]
fn host_tier_c_store_into_an_input_is_a_finding_with_its_core_and_line_and_the_next_op_runs() {
    let library = crate::checks::c_library();
    for sanitize in [None, Some(Sanitizer::Address)] {
        let (found, _) = on_host(library, "into_input", 8, sanitize);
        let finding = only_finding(&found, FindingKind::InputStore, 0, MISUSE_C, "((float *)x)[17] = 0.0f");
        assert_eq!(finding.place(), "input 0 ([128] float32), element [17]");
        let (found, whole) = on_host(library, "copy", 8, sanitize);
        assert!(found.is_empty() && whole, "{found}");
    }
}

#[test]
fn host_tier_c_double_and_invalid_frees_and_a_leak_are_findings_with_their_lines_and_the_next_op_runs() {
    let library = crate::checks::c_library();
    for sanitize in [None, Some(Sanitizer::Address)] {
        let (found, _) = on_host(library, "double_free", 8, sanitize);
        let finding = only_finding(&found, FindingKind::DoubleFree, 0, MISUSE_C, "free((void *)p); /* twice */");
        let place = finding.place();
        // Its lines in `double_free`: the first of each text after the function's own.
        let start = line_of(MISUSE_C.1, "static void double_free(void)");
        let in_it =
            |text: &str| MISUSE_C.1.lines().skip(start).position(|line| line.contains(text)).unwrap() + start + 1;
        let (allocated, freed) = (in_it("p = malloc(64);"), in_it("free((void *)p);"));
        assert!(place.starts_with("a heap block of 64 bytes allocated at double_free ("), "{place}");
        assert!(place.contains(&format!("misuse.c:{allocated}), freed at double_free (")), "{place}");
        assert!(place.ends_with(&format!("misuse.c:{freed}), freed already")), "{place}");

        let (found, _) = on_host(library, "foreign_free", 8, sanitize);
        let finding = only_finding(&found, FindingKind::InvalidFree, 0, MISUSE_C, "free((void *)x); /* not a block */");
        assert!(finding.place().ends_with(", which no heap gave out"), "{}", finding.place());

        let (found, _) = on_host(library, "leaks", 8, sanitize);
        let finding = only_finding(&found, FindingKind::Leak, 0, MISUSE_C, "malloc(64); /* kept */");
        assert_eq!(finding.kind.severity(), Severity::Warning);
        assert!(finding.place().ends_with(", still held when the op ended"), "{}", finding.place());

        let (found, whole) = on_host(library, "heap_ok", 8, sanitize);
        assert!(found.is_empty() && whole, "{found}");
    }
}

#[test]
fn host_tier_cxx_store_into_an_input_a_kept_array_and_a_double_delete_are_findings_and_the_next_op_runs() {
    let library = crate::checks::cxx_library();
    let (found, whole) = on_host(library, "into_input", 1, None);
    let finding = only_finding(&found, FindingKind::InputStore, 0, MISUSE_CXX, "// into the input");
    assert_eq!(finding.place(), "input 0 ([128] float32), element [5]");
    assert!(whole);
    let (found, _) = on_host(library, "keeps_new", 1, None);
    only_finding(&found, FindingKind::Leak, 0, MISUSE_CXX, "new float[16];  // kept");
    let (found, _) = on_host(library, "deletes_twice", 1, None);
    let finding = only_finding(&found, FindingKind::DoubleFree, 0, MISUSE_CXX, "delete[] p;  // twice");
    assert!(finding.place().starts_with("a heap block of 64 bytes allocated at deletes_twice("), "{}", finding.place());
    let (found, whole) = on_host(library, "copy", 1, None);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn host_tier_cxx_race_through_the_tcm_accessor_is_named_by_thread_sanitizer() {
    let library = crate::checks::cxx_library();
    let x = generate(Dtype::Float32, vec![4, 32], Distribution::Range, 0);
    let options = Options {
        cores: 2,
        partial_output: true,
        target: Target::Host,
        sanitize: Some(Sanitizer::Thread),
        ..Options::default()
    };
    let error = library.call_with("tcm_race", &[Arg::Tensor(x)], Output::Like(0), &options).unwrap_err();
    let text = describe(&error);
    assert!(text.contains("WARNING: ThreadSanitizer: data race"), "{text}");
    let said =
        text.lines().find_map(|line| line.strip_prefix("in the device's terms: ")).unwrap_or_else(|| panic!("{text}"));
    let line = line_of(MISUSE_CXX.1, "// every core");
    assert!(said.starts_with("two cores accessed element 0 of the output"), "{said}");
    for core in ["core 0", "core 1"] {
        assert!(said.contains(&format!("{core} wrote")), "{core}: {said}");
    }
    assert!(said.contains(&format!("(misuse.cpp:{line})")), "{said}");
}

/// Calls `into_published_stack` (core 0 stores into core 1's stack) on the host tier
/// with `sanitize`, and asserts it is a `cross-core-store` naming core 1's stack at the
/// store's line, and that the kernel ran on.
fn store_into_core_1s_stack_is_found(library: &Library, sanitize: Option<Sanitizer>) {
    let (found, whole) = on_host(library, "into_published_stack", 8, sanitize);
    let finding = only_finding(&found, FindingKind::CrossCoreStore, 0, MISUSE_C, "/* into core 1's stack */");
    assert_eq!(finding.owner, Some(1), "{finding}");
    assert!(finding.place().starts_with("core 1's stack, byte "), "{}", finding.place());
    let said = finding.to_string();
    assert!(said.starts_with("store into another core's memory on core 0: core 1's stack"), "{said}");
    assert!(whole, "core 1 saw the store and wrote its share again");
}

#[test]
fn host_tier_c_stores_into_core_1s_stack_and_core_3s_dataram_name_that_core_and_the_line_and_the_next_op_runs() {
    let library = crate::checks::c_library();
    // Without a sanitizer and with UndefinedBehaviorSanitizer: the builds whose store
    // calls are all the pass leaves.
    for sanitize in [None, Some(Sanitizer::Undefined)] {
        store_into_core_1s_stack_is_found(library, sanitize);
        let (found, _) = on_host(library, "into_other_dataram", 8, sanitize);
        let finding = only_finding(&found, FindingKind::CrossCoreStore, 0, MISUSE_C, "/* core 3's dataram */");
        assert_eq!(finding.owner, Some(3), "{finding}");
        assert!(finding.place().starts_with("core 3's dataram, byte 0 of 65536"), "{}", finding.place());
        // C's memcpy called by name: the C library's, renamed to the runtime's checked copy.
        let (found, _) = on_host(library, "memcpy_into_other_dataram", 8, sanitize);
        let text = "/* memcpy into core 3's dataram */";
        let finding = only_finding(&found, FindingKind::CrossCoreStore, 0, MISUSE_C, text);
        assert!(finding.place().starts_with("core 3's dataram, byte 0 of 65536"), "{}", finding.place());
        runtime_copy_into_core_3s_dataram_is_found(library, sanitize);

        let (found, whole) = on_host(library, "copy", 8, sanitize);
        assert!(found.is_empty() && whole, "{found}");
    }
}

#[test]
fn host_tier_address_sanitizer_builds_keep_the_cores_apart_too() {
    // The store calls are ASan's own checks, renamed: each checked, then ASan's. (A
    // store into another core's heap or TCM pool outside its blocks is ASan's report
    // first: its arenas are poisoned.)
    let library = crate::checks::c_library();
    store_into_core_1s_stack_is_found(library, Some(Sanitizer::Address));
    runtime_copy_into_core_3s_dataram_is_found(library, Some(Sanitizer::Address));
    let (found, whole) = on_host(library, "copy", 8, Some(Sanitizer::Address));
    assert!(found.is_empty() && whole, "{found}");
    let checks = neuroncustomop_hosttier::coverage(Some(Sanitizer::Address));
    assert!(checks.split_once("unseen").unwrap().0.contains("into another core's stack, data or HBM"), "{checks}");
}

#[test]
fn host_tier_cxx_store_into_core_3s_dataram_is_named_by_its_owner_at_its_line_and_the_next_op_runs() {
    let library = crate::checks::cxx_library();
    let (found, whole) = on_host(library, "into_other_dataram", 8, None);
    let finding = only_finding(&found, FindingKind::CrossCoreStore, 0, MISUSE_CXX, "// core 3's dataram");
    assert_eq!(finding.owner, Some(3), "{finding}");
    assert!(finding.place().starts_with("core 3's dataram, byte 0 of 65536"), "{}", finding.place());
    assert!(whole, "the kernel ran on");
    let (found, whole) = on_host(library, "copy", 1, None);
    assert!(found.is_empty() && whole, "{found}");
}

/// The runtime's own copy (`neuron_memcpy`) into core 3's dataram, checked by the
/// runtime in every build: a `cross-core-store` named by the kernel's line.
fn runtime_copy_into_core_3s_dataram_is_found(library: &Library, sanitize: Option<Sanitizer>) {
    let (found, _) = on_host(library, "neuron_memcpy_into_dataram", 8, sanitize);
    let text = "/* neuron_memcpy into core 3's dataram */";
    let finding = only_finding(&found, FindingKind::CrossCoreStore, 0, MISUSE_C, text);
    assert!(finding.place().starts_with("core 3's dataram, byte 0 of 65536"), "{}", finding.place());
}

#[test]
fn host_tier_thread_sanitizer_builds_do_not_keep_a_kernels_own_stores_apart_and_their_checks_line_says_so() {
    let library = crate::checks::c_library();
    let (found, whole) = on_host(library, "into_other_dataram", 8, Some(Sanitizer::Thread));
    assert!(found.is_empty() && whole, "{found}");
    assert!(!neuroncustomop_hosttier::keeps_cores_apart(Some(Sanitizer::Thread)));
    // The runtime's own copies are checked there too.
    runtime_copy_into_core_3s_dataram_is_found(library, Some(Sanitizer::Thread));
    let checks = neuroncustomop_hosttier::coverage(Some(Sanitizer::Thread));
    let (seen, unseen) = checks.split_once("unseen").unwrap();
    assert!(unseen.contains("a kernel's own stores into another core's stack"), "{checks}");
    assert!(seen.contains("the runtime's copies into another core's stack"), "{checks}");
}

/// The host tier from an installed home, as the wheel lays it out (`sim dist`: the
/// headers, the C source every C and C++ host build links, and `prebuilt/host/`: the
/// loader and the runtime built for x86-64, staged by the same function): a new C
/// project and the AWS C++ sample run on it with no Rust build (`RUSTC` names no
/// compiler, so any cargo build would fail), with the device's results; a sanitizer
/// whose runtime the home lacks is refused in words that say what to do.
#[test]
fn an_installed_home_runs_c_and_cxx_libraries_on_the_host_tier_with_no_rust_build() {
    use neuroncustomop_machine::home::{INSTALLED_DIR, VERSION_FILE};
    let checkout = crate::common::checkout();
    let root = std::env::temp_dir().join(format!("host-tier-installed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let home = root.join(INSTALLED_DIR);
    std::fs::create_dir_all(home.join("runtime")).unwrap();
    std::fs::write(home.join(VERSION_FILE), format!("{}\n", neuroncustomop::VERSION)).unwrap();
    std::os::unix::fs::symlink(checkout.join("runtime/include"), home.join("runtime/include")).unwrap();
    // Without a sanitizer's runtime: a wheel built without one.
    neuroncustomop_hosttier::stage_installed(&checkout, &home, &[]).unwrap();
    let loader = neuroncustomop_hosttier::installed_loader(&home.join("prebuilt"));
    std::fs::copy(env!("CARGO_BIN_EXE_ncop-hostrun"), &loader).unwrap();
    let ncop = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_ncop"))
            .current_dir(&root)
            .env("NEURONCUSTOMOP_HOME", &home)
            .env("RUSTC", root.join("no-rustc"))
            .args(args)
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.success(), text)
    };
    let project = root.join("my_op");
    assert!(ncop(&["new", project.to_str().unwrap(), "--lang", "c"]).0);
    let scale = ["run", "scale", "--lib", project.to_str().unwrap(), "--arg", "gen:float32:4x128", "--arg", "float:2"];
    let (ok, text) = ncop(&[&scale[..], &["--host"]].concat());
    assert!(ok && text.contains("result      OK"), "{text}");
    let sample = root.join("relu_sample");
    std::fs::create_dir_all(&sample).unwrap();
    for file in ["customop.json", "relu.cpp", "shape.cpp"] {
        std::fs::copy(checkout.join("examples/cxx_relu_multicore").join(file), sample.join(file)).unwrap();
    }
    let relu = ["run", "relu_forward", "--lib", sample.to_str().unwrap(), "--arg", "gen:float32:1000", "--host"];
    let (ok, text) = ncop(&relu);
    assert!(ok && text.contains("on 8 core(s)") && text.contains("result      OK"), "{text}");
    let (ok, text) = ncop(&[&scale[..], &["--host", "--sanitize", "address"]].concat());
    std::fs::remove_dir_all(&root).unwrap();
    assert!(!ok, "{text}");
    assert!(text.contains("has no host-tier runtime built for --sanitize address"), "{text}");
    assert!(text.contains("run without --sanitize"), "{text}");
}
