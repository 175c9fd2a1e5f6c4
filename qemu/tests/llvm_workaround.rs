//! The LLVM 22 workaround (`.cargo/llvm-190204/rustc-wrapper`) passes an author's compile
//! errors through unchanged, and speaks only when one of its own steps fails.
//!
//! The wrapper is driven with stand-ins for rustc and LLVM's tools (shell scripts that
//! fail where a test wants), and once with Debian's rustc on a crate with a type error.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neuroncustomop_machine::toolchain::RUSTC;

const PREFIX: &str = "llvm-190204 workaround";

/// A fresh folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = crate::common::checkout().join("target/llvm-workaround-tests").join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn script(path: &Path, body: &str) -> PathBuf {
    fs::write(path, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    path.to_owned()
}

/// rustc's arguments for `source` as an Xtensa library crate into `out_dir`, as cargo
/// passes them (with or without the wrapper in front).
fn author_crate<'a>(command: &'a mut Command, out_dir: &Path, source: &Path) -> &'a mut Command {
    command
        .args([
            "--crate-name",
            "author_crate",
            "--crate-type",
            "lib",
            "--emit=dep-info,metadata,link",
            "-Zunstable-options",
        ])
        .arg("--target")
        .arg(crate::common::checkout().join(".cargo/xtensa-gpsimd-none-elf.json"))
        .arg("--out-dir")
        .arg(out_dir)
        .arg(source)
        .env("RUSTC_BOOTSTRAP", "1")
}

/// The wrapper, as cargo calls it for an Xtensa crate that produces machine code.
fn wrapper(rustc: &Path, out_dir: &Path, llvm_bin: Option<&Path>, source: &str) -> Output {
    let mut command = Command::new(crate::common::checkout().join(".cargo/llvm-190204/rustc-wrapper"));
    author_crate(command.arg(rustc), out_dir, Path::new(source));
    if let Some(bin) = llvm_bin {
        command.env("LLVM_BIN", bin);
    }
    command.output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_compile_error_reaches_the_author_unchanged_with_rustcs_status() {
    let dir = scratch("stub-error");
    let diagnostic = "error[E0308]: mismatched types\n --> src/lib.rs:3:5\n";
    let rustc = script(&dir.join("rustc"), &format!("printf '%s' '{diagnostic}' >&2\nexit 1"));
    let output = wrapper(&rustc, &dir, None, "src/lib.rs");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), diagnostic, "once, unprefixed");
}

#[test]
fn a_failure_of_the_assembly_pass_alone_is_said_to_be_the_workarounds() {
    let dir = scratch("stub-asm-pass");
    // Compiles, except when asked for assembly (the workaround's own pass).
    let rustc = script(
        &dir.join("rustc"),
        r#"for a in "$@"; do [[ $a == --emit=asm ]] && { echo "LLVM ERROR: asm printer broke" >&2; exit 101; }; done; exit 0"#,
    );
    let output = wrapper(&rustc, &dir, None, "src/lib.rs");
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    assert!(said.starts_with(&format!("{PREFIX}: the assembly pass failed for author_crate")), "{said}");
    assert!(said.contains("LLVM ERROR: asm printer broke"), "{said}");
}

#[test]
fn a_failure_to_assemble_is_said_to_be_the_workarounds() {
    let dir = scratch("stub-llvm-mc");
    // rustc writes one codegen unit's assembly; llvm-mc refuses it.
    let rustc = script(
        &dir.join("rustc"),
        r#"out=; prev=; for a in "$@"; do [[ $prev == --out-dir ]] && out=$a; prev=$a; done
           echo '.text' > "$out/author_crate.0.rcgu.s"; exit 0"#,
    );
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    script(&bin.join("llvm-mc"), "echo 'llvm-mc: error: bad input' >&2; exit 1");
    let output = wrapper(&rustc, &dir, Some(&bin), "src/lib.rs");
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    assert!(said.contains(&format!("{PREFIX}: llvm-mc could not assemble")), "{said}");
}

#[test]
fn rustcs_own_diagnostics_for_a_type_error_pass_through_byte_for_byte() {
    let dir = scratch("rustc-type-error");
    let source = dir.join("lib.rs");
    // No `core` needed: the three lang items type checking asks for, then the error.
    let code = r#"#![feature(no_core, lang_items)]
#![allow(internal_features)]
#![no_core]
#[lang = "pointee_sized"]
pub trait PointeeSized {}
#[lang = "meta_sized"]
pub trait MetaSized: PointeeSized {}
#[lang = "sized"]
pub trait Sized: MetaSized {}
pub fn answer() -> u32 {
    "forty-two"
}
"#;
    fs::write(&source, code).unwrap();
    let through_wrapper = wrapper(Path::new(RUSTC), &dir.join("wrapped"), None, source.to_str().unwrap());
    fs::create_dir_all(dir.join("direct")).unwrap();
    let direct = author_crate(&mut Command::new(RUSTC), &dir.join("direct"), &source).output().unwrap();
    assert!(stderr(&direct).contains("error[E0308]: mismatched types"), "{}", stderr(&direct));
    assert_eq!(stderr(&through_wrapper), stderr(&direct));
    assert_eq!(through_wrapper.status.code(), direct.status.code());
    assert!(!stderr(&through_wrapper).contains(PREFIX));
}
