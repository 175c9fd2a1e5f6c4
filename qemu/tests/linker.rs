//! The linker-script contract (`linker/neuroncustomop.x`) under the real linker: an
//! image with more code than `l32r` reaches links and runs, and every check of the
//! contract fires, with its message, on an input made to trip it (`linker/must_fail/`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use neuroncustomop_machine::elf;
use neuroncustomop_machine::toolchain;

use crate::common::{boot, field};

#[path = "../firmware/src/big_code_stages.rs"]
mod big_code_stages;

// The build scripts' half of the module (building a library) is not used here.
#[allow(dead_code)]
#[path = "../../linker/xtensa_asm.rs"]
mod xtensa_asm;

/// How far back `l32r` reaches: the most code one literal pool can serve.
const L32R_REACH: u32 = 256 * 1024;

#[test]
fn an_image_with_more_code_than_l32r_reaches_links_and_runs() {
    let outcome = boot("big_code", 1, false);
    assert_eq!(outcome.code(), Some(0), "{}{}", outcome.stdout, outcome.stderr);
    let line = outcome.stdout.lines().find(|l| l.starts_with("big_code")).expect("a result line");
    let expected = big_code_stages::chain(big_code_stages::SEED);
    assert_eq!(field(line, "result"), format!("{expected:#010x}"), "{line}");

    let image =
        fs::read(crate::common::checkout().join("target/images/big_code/core0.elf")).expect("read core 0's image");
    let symbol = |name| elf::symbol(&image, name).expect("ELF").unwrap_or_else(|| panic!("no {name}"));
    let code = symbol("_text_end") - symbol("_text_start");
    assert!(code > L32R_REACH, "only {code} bytes of code: the test no longer exceeds l32r's reach");
}

/// Where the cases' objects and outputs go.
fn scratch(case: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("linker").join(case);
    fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}

/// Links the `linker/must_fail/` sources `objects` (in this order) as a library image
/// whose window is `origin` + `length`, the way build.rs's per-image scripts do; the
/// linker's success and its messages.
fn link(case: &str, origin: u32, length: u32, sources: &[&str]) -> (bool, String) {
    let dir = scratch(case);
    let repo = crate::common::checkout();
    let features = xtensa_asm::target_features(&repo.join(".cargo/xtensa-gpsimd-none-elf.json"));
    let objects: Vec<PathBuf> = sources
        .iter()
        .map(|source| {
            let object = dir.join(format!("{source}.o"));
            xtensa_asm::assemble(&features, &repo.join("linker/must_fail").join(format!("{source}.S")), &object);
            object
        })
        .collect();
    let script = dir.join("image.x");
    fs::write(
        &script,
        format!("MEMORY {{ IMAGE : ORIGIN = {origin:#x}, LENGTH = {length:#x} }}\n__neuron_library_image = 1;\nINCLUDE neuroncustomop.x\n"),
    )
    .expect("write the image's script");
    let output = Command::new(toolchain::LD)
        .arg("-L")
        .arg(repo.join("linker"))
        .arg("-T")
        .arg(&script)
        .args(&objects)
        .arg("-o")
        .arg(dir.join("image.elf"))
        .output()
        .expect("run the linker (qemu/setup.sh installs it)");
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

const ORIGIN: u32 = 0x8400_0000;
const WINDOW: u32 = 0x20_0000;

/// The smallest image the contract accepts: a vector table, an entry point, a kernel
/// table.
const IMAGE: [&str; 3] = ["vectors", "start", "kernel_table"];

#[test]
fn the_smallest_image_links() {
    let (linked, messages) = link("smallest", ORIGIN, WINDOW, &IMAGE);
    assert!(linked, "{messages}");
    assert!(!messages.contains("ERROR") && !messages.contains("BUG"), "{messages}");
}

/// Each input made to break one rule of the contract: it must fail to link, with the
/// message that names the culprit.
#[test]
fn each_broken_rule_fails_the_link_with_its_message() {
    let with = |extra: &'static str| [&IMAGE[..], &[extra]].concat();
    let cases: [(&str, u32, u32, Vec<&str>, &str); 9] = [
        (
            "stack_too_small",
            ORIGIN,
            WINDOW,
            with("stack_too_small"),
            "ERROR(neuroncustomop): _stack_size is below the 1 KiB minimum",
        ),
        (
            "stack_misaligned",
            ORIGIN,
            WINDOW,
            with("stack_misaligned"),
            "ERROR(neuroncustomop): _stack_size is not a multiple of 16",
        ),
        (
            "too_big",
            ORIGIN,
            WINDOW,
            with("too_big"),
            "ERROR(neuroncustomop): code, data and the stack do not fit in the 2 MiB core window",
        ),
        (
            "unplaced_section",
            ORIGIN,
            WINDOW,
            with("unplaced_section"),
            "ERROR(neuroncustomop): an input section this linker script does not place",
        ),
        (
            "no_kernel_table",
            ORIGIN,
            WINDOW,
            vec!["vectors", "start"],
            "ERROR(neuroncustomop): this library image has no kernel table",
        ),
        (
            "second_vector_table",
            ORIGIN,
            WINDOW,
            [&["second_vector_table"], &IMAGE[..]].concat(),
            "ERROR(neuroncustomop): the vector table is not at the start of the image",
        ),
        (
            "short_vector_table",
            ORIGIN,
            WINDOW,
            vec!["short_vector_table", "start", "kernel_table"],
            "BUG(neuroncustomop): the vector table is shorter than",
        ),
        (
            "origin_misaligned",
            ORIGIN + 0x100,
            WINDOW,
            IMAGE.to_vec(),
            "BUG(neuroncustomop): the image does not start on a 1 KiB boundary",
        ),
        ("window_not_2_mib", ORIGIN, WINDOW / 2, IMAGE.to_vec(), "BUG(neuroncustomop): the image window is not 2 MiB"),
    ];
    for (case, origin, length, sources, message) in cases {
        let (linked, messages) = link(case, origin, length, &sources);
        assert!(!linked, "{case}: linked, but must not");
        assert!(messages.contains(message), "{case}: expected {message:?}, got:\n{messages}");
    }
}
