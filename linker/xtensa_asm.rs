//! How this project assembles Xtensa `.S` files, shared by the build scripts that
//! need it (`build.rs`, `qemu/firmware/build.rs`) and by the linker tests
//! (`qemu/tests/linker.rs`), through `#[path]`.

#[path = "llvm_22.rs"]
#[macro_use]
mod llvm_22;

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Assembles `sources` with llvm-mc (the ISA features of the target JSON at
/// `target_spec`) into `lib<name>.a` in `out`, and tells cargo to link it.
pub fn assemble_into_library(sources: &[PathBuf], target_spec: &Path, out: &Path, name: &str) {
    println!("cargo:rerun-if-changed={}", target_spec.display());
    let features = target_features(target_spec);
    let mut objects = Vec::new();
    for source in sources {
        println!("cargo:rerun-if-changed={}", source.display());
        let stem = source.file_stem().expect("source has a name").to_string_lossy();
        let object = out.join(format!("{name}-{stem}.o"));
        assemble(&features, source, &object);
        objects.push(object);
    }
    let archive = out.join(format!("lib{name}.a"));
    let _ = fs::remove_file(&archive);
    run(Command::new(llvm_bin().join("llvm-ar")).arg("crs").arg(&archive).args(&objects));
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static={name}");
}

/// Assembles one `.S` file into `object` for the ISA `features` (see [`target_features`]).
pub fn assemble(features: &str, source: &Path, object: &Path) {
    run(Command::new(llvm_bin().join("llvm-mc"))
        .args(["-triple=xtensa-none-elf", &format!("-mattr={features}"), "-filetype=obj"])
        .arg(source)
        .arg("-o")
        .arg(object));
}

/// The `features` string of the target JSON, so assembly and Rust agree on the ISA.
pub fn target_features(target_spec: &Path) -> String {
    let spec = fs::read_to_string(target_spec).expect("read the target JSON");
    let key = "\"features\": \"";
    let start = spec.find(key).expect("the target JSON has features") + key.len();
    let len = spec[start..].find('"').expect("the features string ends");
    spec[start..start + len].to_string()
}

/// LLVM 22's tools: `LLVM_BIN`, or where Debian's llvm-22 installs them.
fn llvm_bin() -> PathBuf {
    env::var_os("LLVM_BIN").map_or_else(|| PathBuf::from(llvm_22!("")), PathBuf::from)
}

fn run(command: &mut Command) {
    let status =
        command.status().unwrap_or_else(|e| panic!("cannot run {:?}: {e} (run qemu/setup.sh)", command.get_program()));
    assert!(status.success(), "{command:?} failed");
}
