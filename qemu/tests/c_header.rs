//! The C header compiles as C11 and C++11, 32- and 64-bit (the 32-bit build is where
//! its compile-time asserts pin the device's sizes, the 36-byte handoff block among
//! them), and after the system libc's headers (64-bit: the machine has no 32-bit libc);
//! and its dtype values are the runtime's.
//!
//! Each runtime function is declared once for C and C++ (`neuroncustomop.h`; the torch
//! API includes it), and what repeats it (the device libc headers) is held to it: all
//! the headers compile together as the device's C and C++ and the host's C++, in both
//! orders, so two declarations that disagree are a compile error; each part of the
//! torch API compiles on its own; and every function and object the headers declare is
//! defined by the runtime (a table of them all links into a C library's images).

use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_machine::toolchain::{Llvm, Toolchain};
use neuroncustomop_package::package;
use std::collections::BTreeSet;
use std::fs;
use std::process::Command;

/// Whether `prelude`, the header and `after` compile together.
fn compiles_with(compiler: &str, args: &[&str], prelude: &str, after: &str) -> Result<(), String> {
    let source = format!("{prelude}\n#include \"neuroncustomop.h\"\n{after}\nint neuroncustomop_header_check;\n");
    let mut child = Command::new(compiler)
        .args(args)
        .args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(crate::common::checkout().join("runtime/include"))
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

/// The headers that declare the runtime's C functions, C and C++ alike; the first two
/// lines are what a C kernel includes.
const C_HEADERS: [&str; 6] = ["neuroncustomop.h", "assert.h", "math.h", "stdio.h", "stdlib.h", "string.h"];
const CXX_HEADERS: [&str; 4] =
    ["torch/torch.h", "neuron/neuron-utils.hpp", "torchneuron/entry.h", "torchneuron/register.h"];

/// `#include` lines for `headers`.
fn includes(headers: &[&str]) -> String {
    headers.iter().map(|header| format!("#include <{header}>\n")).collect()
}

/// clang (or clang++) for the device, as `cargo sim package` compiles a kernel: the
/// device C library first, then the runtime's headers. Reads the unit from stdin.
fn device_compiler(language: &str, extra: &[&str]) -> Command {
    let include = crate::common::checkout().join("runtime/include");
    let (compiler, standard) = if language == "c" { (Llvm::CLANG, "-std=c11") } else { (Llvm::CLANGXX, "-std=c++17") };
    let mut command = Command::new(compiler);
    command
        .args(["--target=xtensa-none-elf", "-x", language, standard, "-ffreestanding", "-nostdlibinc"])
        .args(["-fno-exceptions", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter", "-fsyntax-only", "-I"])
        .arg(include.join("libc"))
        .arg("-I")
        .arg(&include)
        .args(extra)
        .arg("-");
    command
}

/// Runs `command` on `source` (stdin); its stdout, or its diagnostics.
fn run_on(mut command: Command, source: &str) -> Result<Vec<u8>, String> {
    use std::io::Write;
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    child.stdin.take().expect("piped").write_all(source.as_bytes()).expect("write");
    let output = child.wait_with_output().expect("wait");
    if output.status.success() { Ok(output.stdout) } else { Err(String::from_utf8_lossy(&output.stderr).into_owned()) }
}

#[test]
fn every_header_compiles_with_every_other_so_two_declarations_of_a_function_agree() {
    // A C function declared twice with different types does not compile (C's
    // "conflicting types"; in C++, extern "C" functions cannot overload): each C
    // declaration the torch API relies on is the C header's, or agrees with it.
    run_on(device_compiler("c", &[]), &includes(&C_HEADERS)).unwrap_or_else(|e| panic!("the C headers together:\n{e}"));
    // The device libc before and after the torch API (which must come before the C
    // header itself: see the next test).
    let mut reversed = C_HEADERS;
    reversed.reverse();
    let orders = [
        format!("{}{}{}", includes(&C_HEADERS[1..]), includes(&CXX_HEADERS), includes(&C_HEADERS[..1])),
        format!("{}{}", includes(&CXX_HEADERS), includes(&reversed)),
    ];
    for unit in &orders {
        run_on(device_compiler("c++", &[]), unit).unwrap_or_else(|e| panic!("{unit}\n{e}"));
    }
    // The host form (the shape functions'), after and before the system's C++ headers.
    for unit in [
        "#include <torch/torch.h>\n#include <torchneuron/register.h>\n#include <cstdlib>\n#include <cstring>\n#include <cstdio>\n",
        "#include <cstdlib>\n#include <cstring>\n#include <cstdio>\n#include <torchneuron/register.h>\n",
    ] {
        let mut host = Command::new("g++");
        host.args(["-x", "c++", "-std=c++17", "-DTORCHNEURON_HOST", "-Wall", "-Werror", "-fsyntax-only", "-I"])
            .arg(crate::common::checkout().join("runtime/include"))
            .arg("-");
        run_on(host, unit).unwrap_or_else(|e| panic!("host form:\n{unit}\n{e}"));
    }
}

#[test]
fn a_declaration_that_disagrees_with_the_headers_does_not_compile() {
    // Proof that the check above is live: one wrong return type, one wrong parameter,
    // each before the headers as a stale copy would be.
    for wrong in ["extern \"C\" int64_t customop_next_int(void);", "extern \"C\" void get_cpu_count(int);"] {
        let unit = format!("#include <stdint.h>\n{wrong}\n{}", includes(&CXX_HEADERS));
        let error = run_on(device_compiler("c++", &[]), &unit).expect_err(wrong);
        assert!(error.contains("conflicting types"), "{wrong}: {error}");
    }
    // In C++, the torch API owns ::get_dst_tensor(): the C header first is refused with
    // a sentence saying what to do.
    let error = run_on(device_compiler("c++", &[]), "#include <neuroncustomop.h>\n#include <torch/torch.h>\n")
        .expect_err("the C header before the torch API");
    assert!(error.contains("include <torch/torch.h> (or <neuron/neuron-utils.hpp>) first"), "{error}");
}

#[test]
fn each_part_of_the_torch_api_compiles_on_its_own() {
    let parts = fs::read_dir(crate::common::checkout().join("runtime/include/torch")).unwrap();
    let mut names: Vec<String> = parts.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    for name in names {
        let unit = format!("#include <torch/{name}>\n");
        run_on(device_compiler("c++", &[]), &unit).unwrap_or_else(|e| panic!("<torch/{name}> alone:\n{e}"));
    }
}

/// The functions and objects the device headers declare with external linkage, by
/// name: clang's syntax tree of a C unit that includes them all.
fn declared_symbols() -> BTreeSet<String> {
    let json = run_on(device_compiler("c", &["-Xclang", "-ast-dump=json"]), &includes(&C_HEADERS))
        .unwrap_or_else(|e| panic!("the C headers:\n{e}"));
    let tree: serde_json::Value = serde_json::from_slice(&json).expect("clang's JSON syntax tree");
    let top = tree["inner"].as_array().expect("a translation unit's declarations");
    top.iter()
        .filter(|node| matches!(node["kind"].as_str(), Some("FunctionDecl" | "VarDecl")))
        .filter(|node| node["isImplicit"] != true && node["inline"] != true && node["storageClass"] != "static")
        .map(|node| node["name"].as_str().expect("a named declaration").to_owned())
        .collect()
}

#[test]
fn every_function_the_headers_declare_is_defined_by_the_runtime() {
    let symbols = declared_symbols();
    // Spot checks that the list is the headers' (C, libc, libm, the C++ API's).
    for name in ["entry_func", "customop_next_tensor", "memcpy", "printf", "expf", "__assert_func", "neuron_cxx_fail"] {
        assert!(symbols.contains(name), "{name} is not among {symbols:?}");
    }
    // A C library whose kernel table points at a table of every declared symbol: the
    // per-core link fails, naming each undefined one, unless the runtime defines them
    // all. (The table is assembly: it needs no C declaration of its own.)
    let words: String = symbols.iter().map(|name| format!("    \".4byte {name}\\n\"\n")).collect();
    let source = format!(
        "/* Generated by qemu/tests/c_header.rs: every symbol the device headers declare. */\n\
         extern const char header_symbols[];\n\
         __asm__(\".section .rodata.header_symbols,\\\"a\\\"\\n\"\n    \".balign 4\\n\"\n    \"header_symbols:\\n\"\n{words}    \".previous\\n\");\n\
         int get_func_cnt(void) {{ return 0; }}\n\
         void *get_func_ptr(int index) {{ (void)index; return (void *)header_symbols; }}\n\
         const char *get_func_name(int index) {{ (void)index; return \"header_symbols\"; }}\n"
    );
    let work = crate::common::checkout().join("target/c-header-test");
    fs::create_dir_all(&work).unwrap();
    let file = work.join("header_symbols.c");
    fs::write(&file, source).unwrap();
    let tools = Toolchain::locate().expect("the toolchain");
    if let Err(error) = package::compile_and_link_c(&tools, "header_symbols", &[file], &[], &work, &work.join("images"))
    {
        panic!("a function the headers declare is not defined by the runtime (the linker names it above): {error}");
    }
}
