//! The foundation under QEMU: real Xtensa code, the windowed ABI, the production link
//! addresses. Each test builds its images (Debian's toolchain, see docs/toolchain.md)
//! and boots them.

use neuroncustomop_machine::elf;
use neuroncustomop_machine::images::{self, CORES};
use neuroncustomop_machine::machine::Outcome;

// This test uses `boot` and `field` only.
#[allow(dead_code)]
mod common;
use common::{boot, field};

const CORE_IMAGE_BASE: u32 = 0x8400_0000;
const IMAGE_SIZE: u32 = 0x20_0000;

fn hex(value: &str) -> u32 {
    u32::from_str_radix(value.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("not hex: {value}"))
}

#[test]
fn deep_recursion_spills_and_refills_windows_correctly() {
    let outcome = boot("recursion", 1, false);
    assert_eq!(outcome.code(), Some(0), "{}{}", outcome.stdout, outcome.stderr);
    let line = outcome.stdout.lines().find(|l| l.starts_with("recursion")).expect("a result line");
    assert_eq!(field(line, "depth"), "600");
    assert_eq!(field(line, "recursive"), field(line, "iterative"));
}

#[test]
fn an_illegal_access_is_reported_with_cause_and_addresses() {
    let outcome = boot("bad_access", 1, false);
    assert_eq!(outcome.code(), Some(3), "exit status of an exception");
    let report = outcome.stderr.lines().find(|l| l.contains("exception")).expect("an exception report");
    // 15: LoadStorePIFAddrError, what QEMU raises for an address no memory answers.
    assert_eq!(field(report, "EXCCAUSE"), "15", "{report}");
    assert_eq!(hex(field(report, "EXCVADDR")), 0xA000_0000, "{report}");
    let pc = hex(field(report, "EPC1"));
    assert!((CORE_IMAGE_BASE..CORE_IMAGE_BASE + IMAGE_SIZE).contains(&pc), "EPC1 {pc:#x} outside image 0");
    assert!(!outcome.stdout.contains("no exception was raised"), "the load completed");
}

#[test]
fn all_eight_cores_boot_their_own_image_and_know_their_prid() {
    let outcome = boot("cores", CORES, false);
    assert_eq!(outcome.code(), Some(0), "{}{}", outcome.stdout, outcome.stderr);
    let reports: Vec<&str> = outcome.stdout.lines().filter(|l| l.starts_with("core ")).collect();
    assert_eq!(reports.len(), CORES, "{}", outcome.stdout);
    for (core, line) in reports.iter().enumerate() {
        let expected_base = CORE_IMAGE_BASE + core as u32 * IMAGE_SIZE;
        assert!(line.starts_with(&format!("core {core} ")), "{line}");
        assert_eq!(field(line, "prid"), core.to_string(), "{line}");
        assert_eq!(hex(field(line, "base")), expected_base, "{line}");
    }
}

#[test]
fn every_core_image_lies_inside_its_own_two_mebibytes() {
    let built = images::build("cores").expect("build");
    for (core, image) in built.cores.iter().enumerate() {
        let bytes = std::fs::read(image).expect("read image");
        let start = CORE_IMAGE_BASE + core as u32 * IMAGE_SIZE;
        let segments = elf::load_segments(&bytes).expect("ELF");
        assert!(!segments.is_empty());
        for segment in segments {
            let end = u64::from(segment.vaddr) + u64::from(segment.memsz);
            assert!(
                segment.vaddr >= start && end <= u64::from(start + IMAGE_SIZE),
                "core {core}: segment {:#x}+{:#x} outside [{start:#x}, +2 MiB)",
                segment.vaddr,
                segment.memsz
            );
        }
        assert_eq!(elf::symbol(&bytes, "_vector_table").expect("ELF"), Some(start), "core {core}");
    }
}

/// `BENCH <name> <total> <repetitions> <per repetition x 100>` lines.
fn bench_lines(outcome: &Outcome) -> Vec<(String, u64)> {
    outcome
        .stdout
        .lines()
        .filter_map(|line| {
            let mut words = line.strip_prefix("BENCH ")?.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.parse().ok()?))
        })
        .collect()
}

#[test]
fn instruction_counts_are_exact_and_repeatable() {
    let first = boot("bench_copy", 1, true);
    let second = boot("bench_copy", 1, true);
    assert_eq!(first.code(), Some(0));
    let counts = bench_lines(&first);
    assert_eq!(counts, bench_lines(&second), "two runs, two counts");
    let calibration = counts.iter().find(|(name, _)| name == "calibrate_nops_100000").expect("calibration");
    // 100,000 nops, plus the call, loop set-up and one CCOUNT tick (25) of resolution.
    assert!((100_000..=100_050).contains(&calibration.1), "{calibration:?}");
}

#[test]
fn a_panic_reports_its_message_and_location_and_exits_101() {
    let outcome = boot("panics", 1, false);
    assert_eq!(outcome.code(), Some(101), "{}{}", outcome.stdout, outcome.stderr);
    let report = outcome.stderr.lines().find(|l| l.starts_with("panicked")).expect("a panic report");
    assert!(report.contains("src/bin/panics.rs:16:"), "{report}");
    assert!(report.ends_with("the divisor of 7 must not be zero"), "{report}");
}

#[test]
fn float_arithmetic_runs_on_the_fpu() {
    let outcome = boot("fpu", 1, true);
    assert_eq!(outcome.code(), Some(0), "{}{}", outcome.stdout, outcome.stderr);
    let line = outcome.stdout.lines().find(|l| l.starts_with("fpu ")).expect("a result line");
    let len: usize = field(line, "len").parse().unwrap();
    let expected =
        (0..len).fold(0.0f32, |sum, i| sum + ((i % 17) as f32 * 0.25 - 1.5) * ((i % 5) as f32 * 1.125 + 0.5));
    assert_eq!(hex(field(line, "dot")), expected.to_bits(), "{line}");
    // Per element: two conversions, two multiply-adds for the vectors, the product and
    // the sum, the loop. On the FPU that is tens of instructions; in software (the
    // de212 core had none) each float operation alone is a call of 30 to 100.
    let per_element = field(line, "instructions").parse::<u64>().unwrap() / len as u64;
    assert!(per_element < 40, "{per_element} instructions per element: software float? {line}");
    let image = &images::build("fpu").expect("build").cores[0];
    let disassembly = std::process::Command::new(neuroncustomop_machine::toolchain::Llvm::OBJDUMP)
        // Without the FPU feature the disassembler prints FPU opcodes as unknown words.
        .args(["-d", "--triple=xtensa", "--mattr=+fp,+bool,+windowed,+density"])
        .arg(image)
        .output()
        .expect("llvm-objdump runs");
    let text = String::from_utf8_lossy(&disassembly.stdout);
    assert!(text.contains("mul.s") || text.contains("madd.s"), "no FPU multiply in the image");
}

#[test]
fn float_code_llvm_cannot_compile_for_the_fpu_still_builds_and_is_right() {
    let outcome = boot("fpu_fallback", 1, false);
    assert_eq!(outcome.code(), Some(0), "{}{}", outcome.stdout, outcome.stderr);
    let line = outcome.stdout.lines().find(|l| l.starts_with("fpu_fallback")).expect("a result line");
    let expected: Vec<String> = [1.0f32, -0.5, -0.5, 1.0].iter().map(|v| format!("{:#010x}", v.to_bits())).collect();
    assert_eq!(field(line, "signs"), expected.join(","), "{line}");
}
