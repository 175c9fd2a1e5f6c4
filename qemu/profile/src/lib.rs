//! Where a kernel's time goes: the TCG plugin's profile of an op (`qemu/plugin`,
//! `profile.rs`) parsed ([`lines`]), folded to functions and call stacks through the
//! images' DWARF ([`profile`], with the machine's symbolizer), classified
//! ([`mix`]), per line and instruction ([`annotate`]), costed on the device ([`cost`],
//! in device time: [`timeline`]), written as a flame graph, folded stacks, a Chrome
//! trace, annotated source and disassembly ([`write`](mod@write)), compared ([`diff`])
//! and fitted to measured times ([`fit`]).
//!
//! The crate sits on the machine (it reads images and the plugin's lines, and boots
//! nothing); the host API puts a [`profile::Profile`] on a call when asked
//! (`neuroncustomop_host::library::Options::profile`).

pub mod annotate;
pub mod cost;
pub mod diff;
pub mod fit;
pub mod fold;
pub mod lines;
pub mod mix;
pub mod profile;
pub mod timeline;
pub mod write;
