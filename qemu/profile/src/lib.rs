//! Where a kernel's time goes: the TCG plugin's profile of an op (`qemu/plugin`,
//! `profile.rs`) parsed ([`lines`]), folded to functions and call stacks through the
//! images' DWARF ([`profile`], with the machine's symbolizer), classified
//! ([`mix`]), written as a flame graph, folded stacks and a Chrome trace ([`write`](mod@write)),
//! and costed on the device ([`cost`]).
//!
//! The crate sits on the machine (it reads images and the plugin's lines, and boots
//! nothing); the host API puts a [`profile::Profile`] on a call when asked
//! (`neuroncustomop_host::library::Options::profile`).

pub mod cost;
pub mod lines;
pub mod mix;
pub mod profile;
pub mod write;
