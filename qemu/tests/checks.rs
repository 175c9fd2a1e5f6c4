//! The device's memory checks (`qemu/plugin/src/checks.rs`): kernels in Rust, C and C++
//! that each trip one check; each finding names its kind, core, source line and region,
//! and the next op of the same session runs correctly.

use neuroncustomop_host::array::Dtype;
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, CallError, Library, Options, Output, describe};
use neuroncustomop_machine::device::{Session, SessionOptions};
use neuroncustomop_machine::findings::{Finding, FindingKind, OpFindings, Severity};
use neuroncustomop_machine::images;
use neuroncustomop_machine::symbolize::Symbolizer;
use std::sync::OnceLock;

use crate::probe_job::probe_job;

/// The 1-based line of `source` that contains `text`.
pub(crate) fn line_of(source: &str, text: &str) -> usize {
    source.lines().position(|line| line.contains(text)).unwrap_or_else(|| panic!("no line with {text}")) + 1
}

/// A checked session without `-icount` (the plugin runs there).
fn checked() -> SessionOptions {
    SessionOptions { count_instructions: false, ..SessionOptions::default() }
}

/// Op `index`'s findings, their lines named from the images' debug information.
fn symbolized(mut found: OpFindings, images: &[std::path::PathBuf]) -> OpFindings {
    let symbols = Symbolizer::new(images).expect("symbols");
    found.shown.iter_mut().for_each(|finding| symbols.symbolize_finding(finding));
    found
}

#[test]
fn a_rust_kernel_writing_64_floats_past_its_output_is_named_with_its_line_and_the_next_op_runs() {
    let library = images::build("fault_probe").expect("build fault_probe");
    let input: Vec<i32> = (0..16).map(|i| i * 7 - 20).collect();
    let job = probe_job(&library, &["overruns", "copy"], &input);
    let mut session = Session::boot(&library, 1, checked()).expect("boot");
    let report = session.dispatch(&job).expect("dispatch");
    assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    let found = symbolized(report.findings(0), &library.cores);
    assert_eq!(found.total, 1, "{found}");
    let finding = &found.shown[0];
    assert_eq!((finding.kind, finding.core, finding.accesses), (FindingKind::OutOfBoundsStore, 0, 64), "{finding}");
    assert_eq!(finding.place(), "elements [16] to [79], 0–256 bytes past the end of output 0 ([16] int32)");
    let line = line_of(include_str!("../firmware/src/bin/fault_probe.rs"), "past.add(i).write_volatile");
    let at = finding.at.as_deref().unwrap_or_default();
    assert!(at.contains(&format!("fault_probe.rs:{line}")), "{at}");
    // The next op: no finding, its output whole.
    assert!(report.findings(1).is_empty(), "{}", report.findings(1));
    let copied: Vec<i32> = report.dumps[&1].chunks(4).map(|w| i32::from_le_bytes(w.try_into().unwrap())).collect();
    assert_eq!(copied, input);
}

/// The C test kernels (`qemu/tests/checks_c`): a C project outside the examples.
pub(crate) fn c_library() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        Library::load(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/checks_c"))
            .unwrap_or_else(|e| panic!("{}", describe(&e)))
    })
}

pub(crate) const C_SOURCE: &str = include_str!("checks_c/src/misuse.c");

/// Calls `kernel` of `library` on x = 0, 1, ... (float32, `shape`) on `cores` cores; its
/// findings, and whether the output is x.
fn call(library: &Library, kernel: &str, shape: Vec<usize>, cores: usize) -> (OpFindings, bool) {
    let x = generate(Dtype::Float32, shape, Distribution::Range, 0);
    let options = Options { cores, partial_output: true, ..Options::default() };
    let call = library.call_with(kernel, &[Arg::Tensor(x.clone())], Output::Like(0), &options).unwrap();
    (call.findings, call.output == x)
}

/// The only finding shown, with its source line checked.
fn only(found: &OpFindings, kind: FindingKind, core: u32, source: &str, file: &str, text: &str) -> Finding {
    assert_eq!(found.total, 1, "{found}");
    let finding = found.shown[0].clone();
    assert_eq!((finding.kind, finding.core), (kind, core), "{finding}");
    let at = finding.at.clone().unwrap_or_default();
    assert!(at.contains(&format!("{file}:{}", line_of(source, text))), "{at}");
    finding
}

#[test]
fn c_stores_256_bytes_and_1_mib_past_the_output_and_into_an_input_are_named_and_the_next_op_runs() {
    let library = c_library();
    let (found, _) = call(library, "past_end_256", vec![4, 32], 8);
    let finding = only(&found, FindingKind::OutOfBoundsStore, 0, C_SOURCE, "misuse.c", "out[n + i] = 1.0f");
    assert_eq!(finding.place(), "elements [4, 0] to [5, 31], 0–256 bytes past the end of output 0 ([4, 32] float32)");
    assert_eq!(finding.accesses, 64);
    let (found, whole) = call(library, "copy", vec![4, 32], 8);
    assert!(found.is_empty() && whole, "{found}");

    let (found, _) = call(library, "past_end_1m", vec![4, 32], 8);
    let finding = only(&found, FindingKind::OutOfBoundsStore, 0, C_SOURCE, "misuse.c", "out[n + i] = 2.0f");
    assert_eq!(
        finding.place(),
        "elements [4, 0] to [8195, 31], 0–1048576 bytes past the end of output 0 ([4, 32] float32)"
    );

    let (found, _) = call(library, "into_input", vec![4, 32], 8);
    let finding = only(&found, FindingKind::InputStore, 0, C_SOURCE, "misuse.c", "((float *)x)[17] = 0.0f");
    assert_eq!(finding.place(), "input 0 ([4, 32] float32), element [0, 17]");

    let (found, _) = call(library, "reads_past", vec![4, 32], 8);
    let finding = only(&found, FindingKind::OutOfBoundsLoad, 0, C_SOURCE, "misuse.c", "out[0] = x[n + 3]");
    assert_eq!(finding.place(), "element [4, 3], 12–16 bytes past the end of input 0 ([4, 32] float32)");

    let (found, whole) = call(library, "copy", vec![4, 32], 8);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_c_store_into_another_cores_image_names_the_writer_and_the_session_stays_usable() {
    let library = c_library();
    let (found, _) = call(library, "cross_core", vec![1000], 8);
    let finding = only(&found, FindingKind::CrossCoreStore, 0, C_SOURCE, "misuse.c", "3 * 0x200000) = 0xDEAD");
    assert_eq!(finding.other_core, Some(3));
    assert!(finding.place().starts_with("core 3's image window"), "{}", finding.place());
    for _ in 0..2 {
        let (found, whole) = call(library, "copy", vec![1000], 8);
        assert!(found.is_empty() && whole, "{found}");
    }
}

#[test]
fn two_cores_writing_one_output_byte_are_a_race_naming_both_cores_and_lines() {
    let library = c_library();
    let (found, whole) = call(library, "race", vec![64], 8);
    assert!(whole);
    let race = found.of(FindingKind::Race).next().unwrap_or_else(|| panic!("no race in {found}"));
    assert!(race.other_core.is_some() && race.other_core != Some(race.core), "{race}");
    let line = |text| format!("misuse.c:{}", line_of(C_SOURCE, text));
    let (at, other_at) = (race.at.clone().unwrap_or_default(), race.other_at.clone().unwrap_or_default());
    let lines = [line("out[0] = x[0]"), line("dst[i] = src[i]")];
    assert!(lines.iter().any(|l| at.contains(l)) && lines.iter().any(|l| other_at.contains(l)), "{race}");
    let (found, whole) = call(library, "copy", vec![64], 8);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_finding_in_a_helper_carries_its_backtrace_to_the_kernels_line() {
    let library = c_library();
    let (found, _) = call(library, "past_end_nested", vec![64], 8);
    let finding =
        only(&found, FindingKind::OutOfBoundsStore, 0, C_SOURCE, "misuse.c", "((volatile float *)p)[i] = 4.0f");
    assert_eq!(finding.place(), "elements [64] to [79], 0–64 bytes past the end of output 0 ([64] float32)");
    // Innermost first: the kernel's call of the helper.
    let caller = format!("misuse.c:{}", line_of(C_SOURCE, "scribble(out + n, 16)"));
    assert!(!finding.backtrace.is_empty(), "{finding}");
    assert!(
        finding.backtrace_at[0].starts_with("past_end_nested (") && finding.backtrace_at[0].contains(&caller),
        "{finding}"
    );
    assert!(finding.to_string().contains("\n  called from past_end_nested ("), "{finding}");
    let (found, whole) = call(library, "copy", vec![64], 8);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_dma_transfer_past_the_output_or_the_input_names_the_kernels_line_and_the_next_op_runs() {
    let library = c_library();
    let (found, _) = call(library, "dma_past_end", vec![4, 32], 8);
    let finding = only(&found, FindingKind::OutOfBoundsStore, 0, C_SOURCE, "misuse.c", "neuron_memcpy(dst, src,");
    assert!(finding.dma, "{finding}");
    assert_eq!(finding.place(), "elements [4, 0] to [5, 31], 0–256 bytes past the end of output 0 ([4, 32] float32)");
    assert!(finding.to_string().starts_with("out-of-bounds store by a DMA transfer on core 0: "), "{finding}");
    // The backtrace reaches the kernel's call of the helper.
    let caller = format!("misuse.c:{}", line_of(C_SOURCE, "send(out + n, x, 64)"));
    assert!(finding.backtrace_at.iter().any(|site| site.contains(&caller)), "{finding}");
    let (found, whole) = call(library, "copy", vec![4, 32], 8);
    assert!(found.is_empty() && whole, "{found}");

    let (found, _) = call(library, "dma_reads_past", vec![4, 32], 8);
    let finding = only(&found, FindingKind::OutOfBoundsLoad, 0, C_SOURCE, "misuse.c", "neuron_memcpy(dst, src,");
    assert!(finding.dma, "{finding}");
    assert_eq!(finding.place(), "elements [4, 0] to [4, 3], 0–16 bytes past the end of input 0 ([4, 32] float32)");
    let (found, whole) = call(library, "copy", vec![4, 32], 8);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_cxx_store_past_the_output_is_named_and_the_next_op_runs() {
    let library = cxx_library();
    let source = include_str!("checks_cxx/misuse.cpp");
    let (found, _) = call(library, "past_end", vec![100], 1);
    let finding =
        only(&found, FindingKind::OutOfBoundsStore, 0, source, "misuse.cpp", "data[t_out.numel() + i] = 3.0f");
    assert_eq!(finding.place(), "elements [100] to [115], 0–64 bytes past the end of output 0 ([100] float32)");
    let (found, whole) = call(library, "copy", vec![100], 1);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_c_kernel_stopped_holding_6_mib_of_its_heap_gives_them_back_and_the_next_op_takes_them() {
    let library = c_library();
    let x = generate(Dtype::Float32, vec![64], Distribution::Range, 0);
    let options = Options { cores: 1, ..Options::default() };
    match library.call_with("hoards_and_aborts", &[Arg::Tensor(x.clone())], Output::Like(0), &options) {
        Err(CallError::Stopped { given_back: Some(given), .. }) => {
            assert_eq!(given.blocks, 1, "{given:?}");
            assert!(given.bytes >= 6 << 20, "{given:?}");
        }
        other => panic!("not stopped with its heap given back: {other:?}"),
    }
    // Twice: the first call gives its block back too, so the heap stays whole.
    for _ in 0..2 {
        let call = library.call_with("needs_6_mib", &[Arg::Tensor(x.clone())], Output::Like(0), &options).unwrap();
        assert!(call.findings.is_empty(), "{}", call.findings);
        assert_eq!(call.output, x, "6 MiB of the HBM heap were not there: the stopped op's block was kept");
    }
}

/// Core 0's only finding of `kernel` (8 cores), a heap one: its kind and line, the
/// kernel's line that allocated its block; then `copy` runs clean in the same session.
/// Returns where the finding is, in words.
fn c_heap_case(kernel: &str, kind: FindingKind, text: &str) -> String {
    let library = c_library();
    let (found, _) = call(library, kernel, vec![4, 32], 8);
    let finding = only(&found, kind, 0, C_SOURCE, "misuse.c", text);
    assert_eq!(kind.severity() == Severity::Warning, found.first_error().is_none(), "{found}");
    let (found, whole) = call(library, "copy", vec![4, 32], 8);
    assert!(found.is_empty() && whole, "after {kernel}: {found}");
    finding.place()
}

#[test]
fn c_heap_misuse_is_named_with_its_line_and_block_and_the_next_op_runs() {
    let line = |text| format!("misuse.c:{}", line_of(C_SOURCE, text));
    let (found, whole) = call(c_library(), "heap_ok", vec![4, 32], 8);
    assert!(found.is_empty() && whole, "{found}");
    // memcpy's and memmove's word loads that hold bytes just past a block, or before
    // the copy in a word of it never written, are no misuse (qemu/plugin/src/checks.rs).
    let (found, whole) = call(c_library(), "copies_odd", vec![4, 32], 8);
    assert!(found.is_empty() && whole, "{found}");

    let place = c_heap_case("use_after_free", FindingKind::UseAfterFree, "p[1] = 2.0f; /* after free */");
    let (alloc, free) = (line("volatile float *p = malloc(64); /* uaf */"), line("free((void *)p); /* uaf */"));
    assert!(place.starts_with("a heap block of 64 bytes allocated at use_after_free ("), "{place}");
    let freed = place.split_once("), freed at use_after_free (").map(|(_, freed)| freed).unwrap_or_default();
    assert!(place.contains(&alloc) && freed.contains(&free), "{place}");
    assert!(place.ends_with(", byte 4"), "{place}");

    let place = c_heap_case("heap_overrun", FindingKind::HeapOutside, "p[16 + 3] = 2.0f; /* past the block */");
    assert!(place.starts_with("a heap block of 64 bytes allocated at heap_overrun ("), "{place}");
    assert!(place.ends_with("), 12 bytes past its end"), "{place}");

    let place = c_heap_case("double_free", FindingKind::DoubleFree, "free((void *)p); /* twice */");
    assert!(place.starts_with("a heap block of 64 bytes allocated at double_free ("), "{place}");
    assert!(place.ends_with(", freed already"), "{place}");

    let place = c_heap_case("foreign_free", FindingKind::InvalidFree, "free((void *)x); /* not a block */");
    assert!(place.ends_with(", which no heap gave out"), "{place}");

    let place = c_heap_case("leaks", FindingKind::Leak, "volatile float *p = malloc(64); /* kept */");
    assert!(place.contains(&line("/* kept */")) && place.ends_with(", still held when the op ended"), "{place}");

    let place = c_heap_case("reads_unwritten", FindingKind::UninitializedRead, "out[0] = p[2] * 0.0f + x[0];");
    assert!(place.starts_with("a heap block of 64 bytes allocated at reads_unwritten ("), "{place}");
    assert!(place.ends_with(", bytes 8 to 12 never written") || place.ends_with(", byte 8 never written"), "{place}");

    let place = c_heap_case("reads_output_first", FindingKind::UninitializedRead, "(void)early[1]; /* output read");
    assert!(place.starts_with("output 0 ") && place.ends_with(", element [0, 1]"), "{place}");
}

#[test]
fn a_cxx_use_after_delete_and_a_kept_new_are_named_and_the_next_op_runs() {
    let library = cxx_library();
    let source = include_str!("checks_cxx/misuse.cpp");
    let (found, _) = call(library, "uses_deleted", vec![100], 1);
    let finding = only(&found, FindingKind::UseAfterFree, 0, source, "misuse.cpp", "p[1] = 2.0f;  // after delete");
    assert!(finding.place().starts_with("a heap block of 64 bytes allocated at "), "{}", finding.place());
    let (found, whole) = call(library, "copy", vec![100], 1);
    assert!(found.is_empty() && whole, "{found}");
    let (found, whole) = call(library, "keeps_new", vec![100], 1);
    only(&found, FindingKind::Leak, 0, source, "misuse.cpp", "new float[16];  // kept");
    assert!(whole && found.first_error().is_none(), "a leak is a warning: {found}");
    let (found, whole) = call(library, "copy", vec![100], 1);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_rust_kernel_writing_into_a_dropped_box_and_one_leaking_a_box_are_named_and_the_next_op_runs() {
    let library = images::build("heap_probe").expect("build heap_probe");
    let input: Vec<i32> = (0..16).map(|i| i * 3 - 5).collect();
    let job = probe_job(&library, &["uses_freed", "copy", "leaks", "copy"], &input);
    let mut session = Session::boot(&library, 1, checked()).expect("boot");
    let report = session.dispatch(&job).expect("dispatch");
    assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    let source = include_str!("../firmware/src/bin/heap_probe.rs");
    let expect = |op: usize, kind: FindingKind, text: &str| {
        let found = symbolized(report.findings(op), &library.cores);
        assert_eq!(found.total, 1, "op {op}: {found}");
        let finding = &found.shown[0];
        assert_eq!((finding.kind, finding.core), (kind, 0), "{finding}");
        let at = finding.at.as_deref().unwrap_or_default();
        assert!(at.contains(&format!("heap_probe.rs:{}", line_of(source, text))), "{finding}");
        finding.place()
    };
    let place = expect(0, FindingKind::UseAfterFree, "add(1).write_volatile(2)");
    assert!(place.starts_with("a heap block of 64 bytes allocated at "), "{place}");
    assert!(place.ends_with(", byte 4"), "{place}");
    let place = expect(2, FindingKind::Leak, "Box::leak(Box::new([7u32; 16]))");
    assert!(place.ends_with(", still held when the op ended"), "{place}");
    for op in [1u32, 3] {
        assert!(report.findings(op as usize).is_empty(), "{}", report.findings(op as usize));
        let copied: Vec<i32> = report.dumps[&op].chunks(4).map(|w| i32::from_le_bytes(w.try_into().unwrap())).collect();
        assert_eq!(copied, input);
    }
}

#[test]
fn a_kernel_using_its_heap_counts_within_8_instructions_per_allocation_checked_and_unchecked() {
    // The heap journal is written whether the device is checked or not; a checked call
    // gives each block a red zone (runtime/allocators/redzone.rs), which changes only
    // how the allocator splits its free space: 4 instructions more for heap_ok's one
    // malloc and free. A library of its own: each device runs the same ops from boot (a
    // heap's history changes how many instructions its next allocation takes).
    let library = Library::load(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/checks_c"))
        .unwrap_or_else(|e| panic!("{}", describe(&e)));
    let x = generate(Dtype::Float32, vec![4, 32], Distribution::Range, 0);
    let count = |checked| {
        let options = Options { cores: 8, checked, partial_output: true, ..Options::default() };
        let call = library.call_with("heap_ok", &[Arg::Tensor(x.clone())], Output::Like(0), &options).unwrap();
        assert!(call.findings.is_empty() && call.exact.iter().all(|&exact| exact), "{}", call.findings);
        call.instructions
    };
    let (unchecked, checked) = (count(false), count(true));
    assert!(checked.iter().all(|&n| n > 0), "{checked:?}");
    let more: Vec<i64> = checked.iter().zip(&unchecked).map(|(&c, &u)| c as i64 - u as i64).collect();
    assert!(more.iter().all(|more| (0..=8).contains(more)), "checked {checked:?}, unchecked {unchecked:?}");
}

#[test]
fn a_c_dma_copy_of_300_floats_into_a_256_float_tcm_block_is_named_with_its_line_and_the_next_op_runs() {
    let library = c_library();
    let (found, _) = call(library, "tcm_copy_past", vec![4, 128], 8);
    let finding = only(&found, FindingKind::HeapOutside, 0, C_SOURCE, "misuse.c", "/* past the TCM block */");
    assert!(finding.dma, "{finding}");
    let place = finding.place();
    assert!(place.starts_with("a TCM block of 1024 bytes allocated at tcm_copy_past ("), "{place}");
    assert!(place.ends_with(", bytes 0 to 1200, 176 past its end"), "{place}");
    let (found, whole) = call(library, "copy", vec![4, 128], 8);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_c_store_16_floats_past_a_block_into_the_next_live_ones_place_is_named_and_the_next_op_runs() {
    let library = c_library();
    let (found, _) = call(library, "into_next_block", vec![4, 32], 8);
    let finding = only(&found, FindingKind::HeapOutside, 0, C_SOURCE, "misuse.c", "/* past the first block */");
    assert_eq!(finding.accesses, 16, "{finding}");
    let place = finding.place();
    assert!(place.starts_with("a heap block of 256 bytes allocated at into_next_block ("), "{place}");
    assert!(place.ends_with(", bytes 0 to 64 past its end"), "{place}");
    let (found, whole) = call(library, "copy", vec![4, 32], 8);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn c_stores_into_core_1s_stack_and_core_3s_dataram_name_that_core_and_the_writers_line() {
    let library = c_library();
    let (found, _) = call(library, "into_other_stack", vec![64], 8);
    let finding = only(&found, FindingKind::CrossCoreStore, 0, C_SOURCE, "misuse.c", "/* core 1's stack */");
    assert_eq!(finding.owner, Some(1), "{finding}");
    assert!(finding.place().starts_with("core 1's stack, byte "), "{}", finding.place());
    assert!(finding.to_string().starts_with("store into another core's memory on core 0: core 1's stack"), "{finding}");

    let (found, _) = call(library, "into_other_dataram", vec![64], 8);
    let finding = only(&found, FindingKind::CrossCoreStore, 0, C_SOURCE, "misuse.c", "/* core 3's dataram */");
    assert_eq!(finding.owner, Some(3), "{finding}");
    assert!(finding.place().starts_with("core 3's dataram, byte "), "{}", finding.place());
    let (found, whole) = call(library, "copy", vec![64], 8);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_c_copy_of_a_never_written_block_into_the_output_is_one_warning_naming_the_elements_it_reached() {
    let library = c_library();
    for (kernel, line) in
        [("unwritten_to_output", "/* unwritten, by DMA */"), ("unwritten_memcpy", "/* unwritten, by memcpy */")]
    {
        let (found, _) = call(library, kernel, vec![4, 32], 8);
        let finding = only(&found, FindingKind::UninitializedRead, 0, C_SOURCE, "misuse.c", line);
        assert!(found.first_error().is_none(), "a warning: {found}");
        let place = finding.place();
        assert!(place.starts_with(&format!("a heap block of 64 bytes allocated at {kernel} (")), "{place}");
        assert!(
            place.ends_with(
                ", bytes 0 to 64 never written, copied into output 0 ([4, 32] float32), elements [0, 0] to [0, 15]"
            ),
            "{kernel}: {place}"
        );
        let (found, whole) = call(library, "copy", vec![4, 32], 8);
        assert!(found.is_empty() && whole, "{found}");
    }
}

#[test]
fn a_c_load_one_element_past_the_input_names_the_element_and_folds_its_64_loads() {
    let library = c_library();
    let (found, _) = call(library, "reads_one_past", vec![1000], 8);
    let finding = only(&found, FindingKind::OutOfBoundsLoad, 0, C_SOURCE, "misuse.c", "/* one past */");
    assert_eq!(finding.accesses, 64, "{finding}");
    assert_eq!(finding.place(), "element [1000], 0–4 bytes past the end of input 0 ([1000] float32)");
    let (found, whole) = call(library, "copy", vec![1000], 8);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_memset_running_56_elements_past_the_output_is_56_stores_found_each_at_its_own_pc() {
    // mem.S's unrolled loop is one run of 64 stores off one register, checked from its
    // first store's callback (qemu/plugin/src/groups.rs): the 8 inside the output pass,
    // each of the 56 past it is found, as when every store had a callback.
    let library = c_library();
    // One core: the output's last elements are its own (on 8 their copy is another
    // core's, and the memset races with it).
    let (found, _) = call(library, "memset_past_end", vec![4, 32], 1);
    assert_eq!(found.total, 56, "{found}");
    assert_eq!(found.shown.len(), 10, "{found}");
    for (at, finding) in found.shown.iter().enumerate() {
        assert_eq!((finding.kind, finding.core, finding.accesses), (FindingKind::OutOfBoundsStore, 0, 1), "{finding}");
        assert_eq!(finding.address, found.shown[0].address + 4 * at as u32, "{finding}");
    }
    assert_eq!(found.shown[0].place(), "element [4, 0], 0–4 bytes past the end of output 0 ([4, 32] float32)");
    let caller = format!("misuse.c:{}", line_of(C_SOURCE, "/* 56 elements past */"));
    assert!(found.shown[0].backtrace_at.iter().any(|frame| frame.contains(&caller)), "{}", found.shown[0]);
    let (found, whole) = call(library, "copy", vec![4, 32], 8);
    assert!(found.is_empty() && whole, "{found}");
}

/// The C++ test kernels (`qemu/tests/checks_cxx`).
pub(crate) fn cxx_library() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        Library::load(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/checks_cxx"))
            .unwrap_or_else(|e| panic!("{}", describe(&e)))
    })
}

#[test]
fn a_cxx_tensor_to_tcm_past_its_block_and_a_store_past_an_empty_tensor_are_named_and_the_next_op_runs() {
    let library = cxx_library();
    let source = include_str!("checks_cxx/misuse.cpp");
    let (found, _) = call(library, "tcm_copy_past", vec![512], 1);
    let finding = only(&found, FindingKind::HeapOutside, 0, source, "misuse.cpp", "// past the TCM block");
    assert!(finding.dma, "{finding}");
    assert!(finding.place().starts_with("a TCM block of 1024 bytes allocated at "), "{}", finding.place());
    assert!(finding.place().ends_with(", bytes 0 to 1200, 176 past its end"), "{}", finding.place());
    let (found, whole) = call(library, "copy", vec![512], 1);
    assert!(found.is_empty() && whole, "{found}");

    let (found, _) = call(library, "past_empty", vec![100], 1);
    let finding = only(&found, FindingKind::HeapOutside, 0, source, "misuse.cpp", "// past the empty tensor");
    assert_eq!(finding.accesses, 16, "{finding}");
    assert!(finding.place().starts_with("a heap block of 256 bytes allocated at "), "{}", finding.place());
    assert!(finding.place().ends_with(", bytes 0 to 64 past its end"), "{}", finding.place());
    let (found, whole) = call(library, "copy", vec![100], 1);
    assert!(found.is_empty() && whole, "{found}");
}

#[test]
fn a_rust_store_past_a_box_and_a_copy_of_a_never_written_box_are_named_and_the_next_op_runs() {
    let library = images::build("heap_probe").expect("build heap_probe");
    let input: Vec<i32> = (0..16).map(|i| i * 3 - 5).collect();
    let job = probe_job(&library, &["past_box", "copy", "unwritten_out", "copy", "keeps_and_panics", "copy"], &input);
    let mut session = Session::boot(&library, 1, checked()).expect("boot");
    let report = session.dispatch(&job).expect("dispatch");
    assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    let source = include_str!("../firmware/src/bin/heap_probe.rs");
    let only = |op: usize, kind: FindingKind, text: &str| {
        let found = symbolized(report.findings(op), &library.cores);
        assert_eq!(found.total, 1, "op {op}: {found}");
        let finding = found.shown[0].clone();
        assert_eq!((finding.kind, finding.core), (kind, 0), "{finding}");
        let at = finding.at.as_deref().unwrap_or_default();
        assert!(at.contains(&format!("heap_probe.rs:{}", line_of(source, text))), "{finding}");
        finding
    };
    let finding = only(0, FindingKind::HeapOutside, "add(16 + i).write_volatile(3)");
    assert_eq!(finding.accesses, 4, "{finding}");
    assert!(finding.place().starts_with("a heap block of 64 bytes allocated at "), "{}", finding.place());
    assert!(finding.place().ends_with(", bytes 0 to 16 past its end"), "{}", finding.place());
    let finding = only(2, FindingKind::UninitializedRead, "out.tcm_to_tensor(unwritten, 0)");
    assert!(
        finding
            .place()
            .ends_with(", bytes 0 to 64 never written, copied into output 0 ([16] int32), elements [0] to [15]"),
        "{}",
        finding.place()
    );
    // The backtrace does not name the kernel's line again.
    let line = format!("heap_probe.rs:{}", line_of(source, "out.tcm_to_tensor(unwritten, 0)"));
    assert!(finding.backtrace_at.iter().all(|site| !site.contains(&line)), "{finding}");
    // A kernel that stops holding a box: the loader gives it back, so it is no leak.
    assert!(report.findings(4).is_empty(), "{}", report.findings(4));
    for op in [1u32, 3, 5] {
        assert!(report.findings(op as usize).is_empty(), "{}", report.findings(op as usize));
        let copied: Vec<i32> = report.dumps[&op].chunks(4).map(|w| i32::from_le_bytes(w.try_into().unwrap())).collect();
        assert_eq!(copied, input);
    }
}
