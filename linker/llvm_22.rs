//! Where LLVM 22 lives, written once: Debian's `llvm-22` and `clang-22`, the one LLVM
//! here with an Xtensa backend. Shared through `#[path]` by the build scripts'
//! assembler (`linker/xtensa_asm.rs`) and by the machine crate's `toolchain::Llvm`,
//! through a symbolic link in that crate's `src/` (which its `cargo package` follows): a
//! build script cannot depend on that crate, which depends on the runtime it builds.

/// A program of LLVM 22's `bin` folder as a `&'static str` (`llvm_22!("llvm-mc")`);
/// `llvm_22!("")` is the folder itself, with its trailing `/`.
macro_rules! llvm_22 {
    ($tool:literal) => {
        concat!("/usr/lib/llvm-22/bin/", $tool)
    };
}
