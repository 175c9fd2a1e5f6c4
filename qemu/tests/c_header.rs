//! The C header compiles as C11 and C++11, 32- and 64-bit (the 32-bit build is where
//! its compile-time asserts pin the device's sizes, the 36-byte handoff block among
//! them), and after the system libc's headers (64-bit: the machine has no 32-bit libc);
//! and its dtype values are the runtime's.

use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_machine::toolchain::repo_root;
use std::process::Command;

/// Whether `prelude`, the header and `after` compile together.
fn compiles_with(compiler: &str, args: &[&str], prelude: &str, after: &str) -> Result<(), String> {
    let source = format!("{prelude}\n#include \"neuroncustomop.h\"\n{after}\nint neuroncustomop_header_check;\n");
    let mut child = Command::new(compiler)
        .args(args)
        .args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(repo_root().join("runtime/include"))
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {compiler}: {e}"))?;
    use std::io::Write;
    child.stdin.take().expect("piped").write_all(source.as_bytes()).expect("write");
    let output = child.wait_with_output().expect("wait");
    if output.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&output.stderr).into_owned()) }
}

fn compiles(compiler: &str, args: &[&str], prelude: &str) -> Result<(), String> {
    compiles_with(compiler, args, prelude, "")
}

#[test]
fn the_header_compiles_as_c_and_cpp() {
    for (compiler, language) in [("gcc", "c"), ("g++", "c++")] {
        let standard = if language == "c" { "-std=c11" } else { "-std=c++11" };
        for width in ["-m64", "-m32"] {
            let system = if width == "-m64" { "#include <stdlib.h>\n#include <string.h>" } else { "" };
            for prelude in ["", system] {
                let args = ["-x", language, standard, width, "-ffreestanding"];
                if let Err(error) = compiles(compiler, &args, prelude) {
                    panic!("{compiler} {args:?} with {prelude:?}:\n{error}");
                }
            }
        }
    }
}

#[test]
fn a_wrong_size_would_not_compile() {
    // The same checks the header makes, against a deliberately wrong size: proof that
    // its static asserts are live in this compiler mode.
    let wrong = "#include <stdint.h>\n_Static_assert(sizeof(uint64_t) == 4, \"wrong\");";
    assert!(compiles("gcc", &["-x", "c", "-std=c11"], wrong).is_err());
}

#[test]
fn the_headers_dtype_values_are_the_runtimes() {
    let checks: String = Dtype::ALL
        .iter()
        .map(|&dtype| {
            let name = format!("{dtype:?}").to_uppercase();
            format!("_Static_assert(NEURON_ISA_TPB_DTYPE_{name} == {}, \"{name}\");\n", dtype as u8)
        })
        .collect();
    compiles_with("gcc", &["-x", "c", "-std=c11", "-m32", "-ffreestanding"], "", &checks).unwrap();
    let wrong = "_Static_assert(NEURON_ISA_TPB_DTYPE_UINT8 == 9, \"wrong\");";
    assert!(compiles_with("gcc", &["-x", "c", "-std=c11", "-m32", "-ffreestanding"], "", wrong).is_err());
}
