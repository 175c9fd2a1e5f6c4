//! The host tier's sanitizers (`--sanitize address|thread`) on seeded bugs: each report
//! is said again in the device's terms, and these tests check its kernel, core, source
//! line and region; and the host tier's own checks on a Rust library's. Each builds a
//! small library of its own, in a folder of its own.

use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_host::array::Array;
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, CallError, Library, Options, Output, Sanitizer, Target, describe};
use neuroncustomop_machine::findings::FindingKind;
use std::path::PathBuf;

fn floats(shape: Vec<usize>, seed: u64) -> Array {
    generate(Dtype::Float32, shape, Distribution::Uniform { low: -100.0, high: 100.0 }, seed)
}

/// A project folder of its own for the test `name`, removed when dropped.
struct Project(PathBuf);

impl Project {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("host-sanitizers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        Self(dir)
    }

    /// A C library: `source` as `src/<name>.c`, its one kernel `kernel` in a table.
    fn c(name: &str, kernel: &str, source: &str) -> Self {
        let project = Self::new(name);
        let table = format!(
            "int get_func_cnt(void) {{ return 1; }}\n\
             void *get_func_ptr(int index) {{ return index == 0 ? (void *){kernel} : NULL; }}\n\
             const char *get_func_name(int index) {{ return index == 0 ? \"{kernel}\" : NULL; }}\n"
        );
        std::fs::write(project.0.join(format!("src/{name}.c")), format!("{source}{table}")).unwrap();
        project
    }

    /// A Rust library: `kernels` as `src/kernels.rs`, its binary `name`, on this
    /// checkout's runtime.
    fn rust(name: &str, kernels: &str) -> Self {
        let project = Self::new(name);
        let manifest = format!(
            "[package]\nname = \"{}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\
             [features]\ndevice = []\n\
             [[bin]]\nname = \"{name}\"\npath = \"src/kernels.rs\"\nrequired-features = [\"device\"]\n\
             test = false\nbench = false\n\
             [dependencies]\nneuroncustomop = {{ path = \"{}\" }}\n\
             [profile.release]\nopt-level = \"s\"\npanic = \"abort\"\ndebug = true\ncodegen-units = 1\n\
             [workspace]\n",
            name.replace('_', "-"),
            crate::common::checkout().display()
        );
        std::fs::write(project.0.join("Cargo.toml"), manifest).unwrap();
        std::fs::write(project.0.join("src/kernels.rs"), kernels).unwrap();
        project
    }

    /// Calls `kernel` on the host tier under `sanitizer` and returns its error's text.
    fn sanitized_error(&self, kernel: &str, sanitizer: Sanitizer, args: &[Arg], cores: usize) -> String {
        let library = Library::load(&self.0).unwrap();
        let options = Options { target: Target::Host, sanitize: Some(sanitizer), cores, ..Options::default() };
        let error = library.call_with(kernel, args, Output::Like(0), &options).unwrap_err();
        assert!(matches!(error, CallError::Unfinished { .. }), "{error:?}");
        describe(&error)
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The sentence after "in the device's terms:" in `text`.
fn device_terms(text: &str) -> &str {
    text.lines().find_map(|line| line.strip_prefix("in the device's terms: ")).unwrap_or_else(|| panic!("{text}"))
}

/// The arguments' preamble the C kernels below share: lines 1 to 7.
const C_PREAMBLE: &str = "#include <neuroncustomop.h>\n\
    #include <stdlib.h>\n\
    static void KERNEL(void) {\n\
    \x20   customop_setup(false);\n\
    \x20   const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();\n\
    \x20   const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();\n\
    \x20   const float *src = customop_tensor_data(x);\n";

/// The rest of each C kernel: its output returned, the invocation ended.
const C_END: &str = "    customop_return_tensor(out);\n\
    \x20   customop_cleanup();\n\
    }\n";

#[test]
fn a_heap_block_overrun_is_caught_at_its_line() {
    let body = "    float *scratch = malloc(16 * sizeof(float));\n\
        \x20   for (int i = 0; i <= 16; i++) {\n\
        \x20       scratch[i] = src[0];\n\
        \x20   }\n\
        \x20   free(scratch);\n";
    let source = format!("{}{body}{C_END}", C_PREAMBLE.replace("KERNEL", "heap_overrun"));
    let project = Project::c("heap_overrun", "heap_overrun", &source);
    let text = project.sanitized_error("heap_overrun", Sanitizer::Address, &[Arg::Tensor(floats(vec![8], 1))], 1);
    assert!(text.contains("ERROR: AddressSanitizer"), "{text}");
    let said = device_terms(&text);
    assert!(said.starts_with("a write of 4 bytes 0 bytes past the end of a 64-byte block of the HBM heap"), "{said}");
    assert!(said.contains("allocated on core 0 at heap_overrun.c:8 (heap_overrun)"), "{said}");
    assert!(said.contains("at heap_overrun (heap_overrun.c:10)"), "caught at its line: {said}");
}

#[test]
fn a_use_after_free_names_the_block_and_where_it_was_freed() {
    let body = "    float *scratch = neuron_hbm_malloc(8 * sizeof(float));\n\
        \x20   scratch[1] = src[0];\n\
        \x20   neuron_hbm_free(scratch);\n\
        \x20   ((float *)customop_tensor_data(out))[0] = scratch[1];\n";
    let source = format!("{}{body}{C_END}", C_PREAMBLE.replace("KERNEL", "stale"));
    let project = Project::c("stale", "stale", &source);
    let text = project.sanitized_error("stale", Sanitizer::Address, &[Arg::Tensor(floats(vec![8], 2))], 1);
    let said = device_terms(&text);
    assert!(said.starts_with("a read of 4 bytes at byte 4 of a freed 32-byte block of the HBM heap"), "{said}");
    assert!(said.contains("allocated on core 0 at stale.c:8 (stale), freed at stale.c:10 (stale)"), "{said}");
    assert!(said.contains("at stale (stale.c:11)"), "{said}");
}

#[test]
fn the_core_a_sanitizer_caught_is_the_one_named() {
    // Only core 1 writes one element past the output (line 8): the error names core 1,
    // not core 0, and shows ASan's report without the loader's protocol lines.
    let body = "    if (get_cpu_id() == 1) ((float *)customop_tensor_data(out))[8] = src[0];\n";
    let source = format!("{}{body}{C_END}", C_PREAMBLE.replace("KERNEL", "one_core"));
    let project = Project::c("one_core", "one_core", &source);
    let text = project.sanitized_error("one_core", Sanitizer::Address, &[Arg::Tensor(floats(vec![8], 4))], 2);
    assert!(text.starts_with("core 1 did not finish kernel one_core"), "{text}");
    let said = device_terms(&text);
    assert!(said.contains(", on core 1, at one_core (one_core.c:8)"), "{said}");
    assert!(!text.lines().any(|line| line.starts_with("CALLBACK ") || line.starts_with("REGISTER ")), "{text}");
}

#[test]
fn two_cores_writing_one_element_are_named_by_thread_sanitizer() {
    // Every core writes its id into element 3 of the output: a race on lines 8.
    let body = "    ((float *)customop_tensor_data(out))[3] = src[0] + (float)get_cpu_id();\n";
    let source = format!("{}{body}{C_END}", C_PREAMBLE.replace("KERNEL", "clash"));
    let project = Project::c("clash", "clash", &source);
    let text = project.sanitized_error("clash", Sanitizer::Thread, &[Arg::Tensor(floats(vec![8], 3))], 2);
    assert!(text.contains("WARNING: ThreadSanitizer: data race"), "{text}");
    let said = device_terms(&text);
    assert!(said.starts_with("two cores accessed element 3 of the output (byte 12 of its 32)"), "{said}");
    for core in ["core 0", "core 1"] {
        assert!(said.contains(&format!("{core} wrote 4 bytes at clash (clash.c:8)")), "{core}: {said}");
    }
}

#[test]
fn a_rust_kernels_unsafe_overrun_is_caught_at_its_line() {
    let kernels = "#![no_std]\n\
        #![no_main]\n\
        use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};\n\
        fn doubled(args: &Args) -> Result<Tensor<'_>, KernelError> {\n\
        \x20   let x = args.tensor()?;\n\
        \x20   let mut out = args.output()?;\n\
        \x20   let (src, dst) = (x.as_slice::<f32>()?, out.as_mut_slice::<f32>()?.as_mut_ptr());\n\
        \x20   for i in 0..=src.len() {\n\
        \x20       // SAFETY: not at i = len: the seeded overrun.\n\
        \x20       unsafe { *dst.add(i) = src[i.min(src.len() - 1)] * 2.0 };\n\
        \x20   }\n\
        \x20   Ok(out)\n\
        }\n\
        neuroncustomop::kernels! { fn doubled }\n";
    let project = Project::rust("rust_overrun", kernels);
    let text = project.sanitized_error("doubled", Sanitizer::Address, &[Arg::Tensor(floats(vec![10], 4))], 1);
    let said = device_terms(&text);
    assert!(said.starts_with("a write of 4 bytes 0 bytes past the end of the output (40 bytes at"), "{said}");
    assert!(said.contains("on core 0"), "{said}");
    assert!(said.contains("(kernels.rs:10)"), "caught at its line: {said}");
}

#[test]
fn a_rust_kernels_store_into_its_input_and_kept_vector_are_the_host_tiers_findings_and_the_next_op_runs() {
    let kernels = "#![no_std]\n\
        #![no_main]\n\
        extern crate alloc;\n\
        use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};\n\
        fn copied<'a>(args: &'a Args) -> Result<(Tensor<'a>, Tensor<'a>), KernelError> {\n\
        \x20   let x = args.tensor()?;\n\
        \x20   let mut out = args.output()?;\n\
        \x20   out.as_mut_slice::<f32>()?.copy_from_slice(x.as_slice::<f32>()?);\n\
        \x20   Ok((x, out))\n\
        }\n\
        fn into_input(args: &Args) -> Result<Tensor<'_>, KernelError> {\n\
        \x20   let (x, out) = copied(args)?;\n\
        \x20   // SAFETY: none: the seeded store into the read-only input.\n\
        \x20   unsafe { x.as_slice::<f32>()?.as_ptr().cast_mut().add(3).write_volatile(0.0) };\n\
        \x20   Ok(out)\n\
        }\n\
        fn keeps(args: &Args) -> Result<Tensor<'_>, KernelError> {\n\
        \x20   let (_, out) = copied(args)?;\n\
        \x20   core::mem::forget(alloc::vec![1.0f32; 16]);\n\
        \x20   Ok(out)\n\
        }\n\
        fn copy(args: &Args) -> Result<Tensor<'_>, KernelError> {\n\
        \x20   Ok(copied(args)?.1)\n\
        }\n\
        neuroncustomop::kernels! { fn into_input, fn keeps, fn copy }\n";
    let project = Project::rust("rust_misuse", kernels);
    // Built for the host tier only: no device package.
    let library = Library::load_for(&project.0, Target::Host).unwrap();
    let x = floats(vec![10], 5);
    let call = |kernel: &str| {
        let options = Options { target: Target::Host, ..Options::default() };
        library.call_with(kernel, &[Arg::Tensor(x.clone())], Output::Like(0), &options).unwrap()
    };
    let stored = call("into_input");
    let finding = stored.findings.first_error().unwrap_or_else(|| panic!("{}", stored.findings)).clone();
    assert_eq!((finding.kind, finding.core, stored.findings.total), (FindingKind::InputStore, 0, 1), "{finding}");
    assert_eq!(finding.place(), "input 0 ([10] float32), element [3]");
    assert!(finding.at.as_deref().unwrap_or_default().contains("kernels.rs:14"), "{finding}");
    let kept = call("keeps");
    let leak = kept.findings.shown.first().unwrap_or_else(|| panic!("no leak found"));
    assert_eq!((leak.kind, leak.core), (FindingKind::Leak, 0), "{leak}");
    assert!(leak.place().starts_with("a heap block of 64 bytes allocated at "), "{leak}");
    let copied = call("copy");
    assert!(copied.findings.is_empty(), "{}", copied.findings);
    assert_eq!(copied.output, x);
}

#[test]
fn a_rust_kernels_stores_into_core_1s_stack_and_core_3s_dataram_are_cross_core_findings_at_their_lines() {
    // Core 1 publishes a local's address in its share of the output (then a mark) and
    // waits for core 0's store into it; core 0 stores into core 3's dataram at its own
    // TCM block's offset there. Each wait gives up after 2^30 looks.
    let kernels = "#![no_std]\n\
        #![no_main]\n\
        use neuroncustomop::allocators::tcm::{tcm_alloc, tcm_release};\n\
        use neuroncustomop::multicore::{core_range, get_cpu_count, get_cpu_id};\n\
        use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};\n\
        const PUBLISHED: usize = 0x5354_414b;\n\
        fn copied<'a>(args: &'a Args) -> Result<(Tensor<'a>, Tensor<'a>), KernelError> {\n\
        \x20   let x = args.tensor()?;\n\
        \x20   let mut out = args.output()?;\n\
        \x20   let share = core_range(x.numel());\n\
        \x20   out.as_mut_slice::<f32>()?[share.clone()].copy_from_slice(&x.as_slice::<f32>()?[share]);\n\
        \x20   Ok((x, out))\n\
        }\n\
        fn into_other_stack(args: &Args) -> Result<Tensor<'_>, KernelError> {\n\
        \x20   let (x, mut out) = copied(args)?;\n\
        \x20   let (n, cores) = (x.numel(), get_cpu_count() as usize);\n\
        \x20   let share = &mut out.as_mut_slice::<f32>()?[n / cores..];\n\
        \x20   let mailbox = share.as_mut_ptr().cast::<usize>();\n\
        \x20   let mut local = 0u32;\n\
        \x20   let at = &raw mut local;\n\
        \x20   // SAFETY: none: the seeded store into another core's stack.\n\
        \x20   unsafe {\n\
        \x20       if get_cpu_id() == 0 && cores >= 2 {\n\
        \x20           let mut looks = 0u32;\n\
        \x20           while mailbox.add(1).read_volatile() != PUBLISHED && looks < 1 << 30 { looks += 1; }\n\
        \x20           if mailbox.add(1).read_volatile() == PUBLISHED { (mailbox.read_volatile() as *mut u32).write_volatile(0xDEAD); } // into core 1's stack\n\
        \x20       } else if get_cpu_id() == 1 {\n\
        \x20           mailbox.write_volatile(at as usize);\n\
        \x20           mailbox.add(1).write_volatile(PUBLISHED);\n\
        \x20           let mut looks = 0u32;\n\
        \x20           while at.read_volatile() == 0 && looks < 1 << 30 { looks += 1; }\n\
        \x20           share[..4].copy_from_slice(&x.as_slice::<f32>()?[n / cores..][..4]);\n\
        \x20       }\n\
        \x20   }\n\
        \x20   Ok(out)\n\
        }\n\
        fn into_other_dataram(args: &Args) -> Result<Tensor<'_>, KernelError> {\n\
        \x20   let (_, out) = copied(args)?;\n\
        \x20   let mine = tcm_alloc(64);\n\
        \x20   // SAFETY: none: the seeded store into another core's dataram.\n\
        \x20   if get_cpu_id() == 0 && !mine.is_null() { unsafe { mine.add(3 * 0x10000).cast::<u32>().write_volatile(0xDEAD) }; } // into core 3's dataram\n\
        \x20   tcm_release(mine);\n\
        \x20   Ok(out)\n\
        }\n\
        fn copy(args: &Args) -> Result<Tensor<'_>, KernelError> {\n\
        \x20   Ok(copied(args)?.1)\n\
        }\n\
        neuroncustomop::kernels! { fn into_other_stack, fn into_other_dataram, fn copy }\n";
    let project = Project::rust("rust_apart", kernels);
    let library = Library::load_for(&project.0, Target::Host).unwrap();
    let x = floats(vec![128], 6);
    let call = |kernel: &str| {
        let options = Options { target: Target::Host, cores: 8, partial_output: true, ..Options::default() };
        library.call_with(kernel, &[Arg::Tensor(x.clone())], Output::Like(0), &options).unwrap()
    };
    let line = |text: &str| kernels.lines().position(|line| line.ends_with(text)).unwrap() + 1;
    for (kernel, owner, region, marked) in [
        ("into_other_stack", 1, "core 1's stack, byte ", "// into core 1's stack"),
        ("into_other_dataram", 3, "core 3's dataram, byte 0 of ", "// into core 3's dataram"),
    ] {
        let line = line(marked);
        let stored = call(kernel);
        let finding = stored.findings.first_error().unwrap_or_else(|| panic!("{kernel}: {}", stored.findings)).clone();
        assert_eq!(
            (finding.kind, finding.core, stored.findings.total),
            (FindingKind::CrossCoreStore, 0, 1),
            "{finding}"
        );
        assert_eq!(finding.owner, Some(owner), "{finding}");
        assert!(finding.place().starts_with(region), "{kernel}: {}", finding.place());
        assert!(finding.at.as_deref().unwrap_or_default().contains(&format!("kernels.rs:{line}")), "{finding}");
        assert_eq!(stored.output, x, "{kernel}: the kernel ran on");
    }
    let copied = call("copy");
    assert!(copied.findings.is_empty(), "{}", copied.findings);
    assert_eq!(copied.output, x);
}
