//! Helpers shared by the QEMU tests: firmware programs booted directly (no loader),
//! and examples packaged for the simulated loader.

use neuroncustomop_machine::images;
use neuroncustomop_machine::machine::{Boot, Outcome};
use neuroncustomop_package::package::Package;
use neuroncustomop_package::program;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Builds `program` and boots its images on cores `0..cores`; fails the test if it hangs.
pub fn boot(program: &str, cores: usize, count_instructions: bool) -> Outcome {
    let built = images::build(program).unwrap_or_else(|e| panic!("building {program}: {e}"));
    let mut boot = Boot::new(built.cores[..cores].to_vec());
    boot.count_instructions = count_instructions;
    let outcome = boot.run().expect("QEMU runs");
    assert!(!outcome.timed_out, "{program} hung:\n{}\n{}", outcome.stdout, outcome.stderr);
    outcome
}

/// `key=value` from a line of guest output.
pub fn field<'a>(line: &'a str, key: &str) -> &'a str {
    neuroncustomop_wire::report::Fields::new(line).text(key).unwrap_or_else(|_| panic!("no {key}= in {line:?}"))
}

/// Packages example `name` (`cargo sim package`) once per test binary.
pub fn packaged(name: &str) -> Package {
    static PACKAGED: Mutex<BTreeMap<String, Package>> = Mutex::new(BTreeMap::new());
    let mut packaged = PACKAGED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    packaged
        .entry(name.to_string())
        .or_insert_with(|| program::package(name).unwrap_or_else(|e| panic!("packaging {name}: {e}")))
        .clone()
}

/// The checkout these tests are part of, which they run with as the home
/// (`NEURONCUSTOMOP_HOME`, set by `.cargo/config.toml`).
pub fn checkout() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("qemu/ is in the checkout").to_path_buf()
}
