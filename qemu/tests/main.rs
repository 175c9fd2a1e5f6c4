//! The integration tests of the host tools and the simulated device, one test binary
//! (`cargo test -p neuroncustomop-sim --test integration <file>::`): each file of
//! qemu/tests/ is a module here, so the host stack is linked once, not once per file,
//! and the tests of different files share the cores (docs/PERFORMANCE.md, "CI time").
//! A new test file needs its `mod` line below. No test may change process-wide state
//! (the environment, the working directory): every test of every file runs in this
//! one process.

mod common;
mod probe_job;

mod c_header;
mod checks;
mod concurrency;
mod counting;
mod cxx;
mod data_movement;
mod debugger;
mod dma;
mod entry_contract;
mod faults;
mod foundation;
mod host_api;
mod host_sanitizers;
mod host_tier;
mod hot_paths;
mod libm;
mod linker;
mod llvm_workaround;
mod memory;
mod op_flow;
mod outside_project;
mod profile;
mod pull_stream;
mod sandbox;
mod session;
mod text_size;

/// With `autotests = false` (qemu/Cargo.toml) a file of tests/ without its `mod` line
/// above would silently never run: this fails instead.
#[test]
fn every_test_file_is_a_module_here() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = std::fs::read_to_string(dir.join("main.rs")).expect("tests/main.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests/") {
        let path = entry.expect("a folder entry").path();
        let Some(name) = path.file_stem().and_then(|n| n.to_str()) else { continue };
        let is_file = path.extension().is_some_and(|ext| ext == "rs");
        // The folders with a mod.rs are the shared helpers; the others (checks_c, ...)
        // are libraries the tests load.
        let is_module = is_file || path.join("mod.rs").is_file();
        if is_module && !["main", "module_graph"].contains(&name) && !main.contains(&format!("\nmod {name};\n")) {
            missing.push(name.to_owned());
        }
    }
    assert!(missing.is_empty(), "tests/{missing:?} have no `mod` line in tests/main.rs, so they never run");
}
