//! Helpers shared by the QEMU tests that boot firmware programs directly (no loader).

use neuroncustomop_machine::images;
use neuroncustomop_machine::machine::{Boot, Outcome};

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
