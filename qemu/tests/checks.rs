//! The device's memory checks (`qemu/plugin/src/checks.rs`): kernels in Rust, C and C++
//! that each trip one check; each finding names its kind, core, source line and region,
//! and the next op of the same session runs correctly.

use neuroncustomop_machine::device::{Session, SessionOptions};
use neuroncustomop_machine::findings::{self, FindingKind, OpFindings};
use neuroncustomop_machine::images;
use neuroncustomop_machine::symbolize::Symbolizer;

mod probe_job;
use probe_job::probe_job;

/// The 1-based line of `source` that contains `text`.
fn line_of(source: &str, text: &str) -> usize {
    source.lines().position(|line| line.contains(text)).unwrap_or_else(|| panic!("no line with {text}")) + 1
}

/// A checked session without `-icount` (the plugin runs there).
fn checked() -> SessionOptions {
    SessionOptions { count_instructions: false, ..SessionOptions::default() }
}

/// Op `index`'s findings, their lines named from the images' debug information.
fn symbolized(mut found: OpFindings, images: &[std::path::PathBuf]) -> OpFindings {
    let symbols = Symbolizer::new(images).expect("symbols");
    found.shown.iter_mut().for_each(|finding| finding.symbolize(&symbols));
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
    let found = symbolized(findings::of_op(&report, 0), &library.cores);
    assert_eq!(found.total, 1, "{found}");
    let finding = &found.shown[0];
    assert_eq!((finding.kind, finding.core, finding.accesses), (FindingKind::OutOfBoundsStore, 0, 64), "{finding}");
    assert_eq!(finding.place(), "bytes 0 to 256 past the end of output 0 ([16] int32)");
    let line = line_of(include_str!("../firmware/src/bin/fault_probe.rs"), "past.add(i).write_volatile");
    let at = finding.at.as_deref().unwrap_or_default();
    assert!(at.contains(&format!("fault_probe.rs:{line}")), "{at}");
    // The next op: no finding, its output whole.
    assert!(findings::of_op(&report, 1).is_empty(), "{}", findings::of_op(&report, 1));
    let copied: Vec<i32> = report.dumps[&1].chunks(4).map(|w| i32::from_le_bytes(w.try_into().unwrap())).collect();
    assert_eq!(copied, input);
}
