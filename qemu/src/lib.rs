//! The two command-line tools around the simulated device: `ncop` (an op author's, for
//! a library anywhere on disk) and `sim` (this repository's, `cargo sim`), whose
//! commands live in [`cli`], one module each. It owns only argument parsing, the text
//! the tools print and their exit codes; what the commands do lives in the crates below
//! it: `neuroncustomop-host` (calls, arrays, `.npy`), `neuroncustomop-package`
//! (projects, packages) and `neuroncustomop-machine` (images, QEMU, the loader). Nothing
//! depends on this crate (qemu/README.md).
//!
//! Its integration tests (`qemu/tests/`) are the QEMU suite of every host crate: they
//! boot the device through the machine, package through the package crate, call
//! through the host API and run the tools, so they live here, above all of them.
// The errors of the host tools keep what the device said (the loader's lines, the
// package's state) for the author to read; they are returned once per command, never
// in a loop, so their size costs nothing worth boxing them for.
#![allow(clippy::result_large_err)]
// The commands' doc comments are their `--help` text (clap), where `<name>` is a
// placeholder the user reads as written, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

pub mod cli;
