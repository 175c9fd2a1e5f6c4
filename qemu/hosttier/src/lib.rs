//! `neuroncustomop-hosttier`: the host tier. An op author's unchanged kernels (Rust, C,
//! C++ on the AWS torch API: `cxx.rs`) built for x86-64 against the same runtime, and run by a host process that does what
//! the simulated device's loader does ([`loader`]): the same job frames, the device
//! memory at the device's addresses, the same pull stream, translate and accessors,
//! each core a thread. The QEMU device stays the reference; the host tier is for
//! debuggers and sanitizers, and for seconds instead of minutes.
//!
//! What it builds with is the home's ([`neuroncustomop_machine::home`]): the runtime's
//! headers in both layouts; a checkout builds the runtime for x86-64 from its sources
//! and has its tools build the loader, an installed home has both prebuilt
//! (`prebuilt/host/`, which `sim dist` writes with [`stage_installed`]), so C and C++
//! libraries need no Rust there.
//!
//! Layer: above the package crate (it builds an author's [`Project`]), below the host
//! API, which runs its jobs through a machine [`Session`] over [`loader_program`].

// The loader's half of the handoff (callbacks.rs) and an op's handoff (dispatch.rs),
// written once for the device loader and this one: both files are symbolic links to
// qemu/firmware/src/'s, so that this crate's package (`cargo package`) holds them.
mod apart;
mod callbacks;
mod checks;
mod cores;
mod cxx;
pub mod dispatch;
pub mod loader;
pub mod sanitize;

pub use checks::protection_keys;
pub use sanitize::keeps_cores_apart;
pub use sanitize::{Sanitizer, coverage, explain as explain_sanitizer, involved_cores, stopped_core as sanitized_core};

use neuroncustomop_machine::device::{Session, SessionOptions};
use neuroncustomop_machine::home::{Home, NoHome};
use neuroncustomop_machine::lock::Lock;
use neuroncustomop_machine::process;
use neuroncustomop_machine::toolchain::{self, Llvm};
use neuroncustomop_package::project::{Language, Project};
use neuroncustomop_package::step_cache::Step;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Why a library could not be built or run on the host.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The host build failed (cargo's or clang's diagnostics went to stderr or are here).
    #[error("building {name} for the host tier: {what}")]
    Build {
        /// The library.
        name: String,
        /// What failed.
        what: String,
    },
    /// The library's language has no host build yet.
    #[error("{0}")]
    Unsupported(String),
    /// A file could not be written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// No home was found: the host tier takes the runtime's headers from it, and its
    /// runtime and loader (built in a checkout, prebuilt in an installed home).
    #[error(transparent)]
    NoHome(#[from] NoHome),
    /// A program or archive the host tier runs with is not there: an installed home's
    /// wheel was built without it, or a checkout's tools have not built the loader yet.
    #[error("{0}")]
    Missing(String),
}

/// A library built for the host: one copy per core (each its own statics, as each
/// device core has its own image).
#[derive(Debug, Clone)]
pub struct HostLibrary {
    /// The library's name.
    pub name: String,
    /// `core<i>.so`, i = 0..8.
    pub cores: Vec<PathBuf>,
    /// The sanitizer it was built with.
    pub sanitizer: Option<Sanitizer>,
    /// A C++ library's shape driver (its shape functions, run on the host), built with it.
    pub shape_driver: Option<PathBuf>,
}

/// Builds `project` for the host: `target/hosttier/libraries/<name>/` in a checkout for
/// a built-in example, `target/neuroncustomop/host/` in an author's project. Needs no
/// Xtensa tool, and for a C or C++ library with an installed home no Rust either (its
/// runtime is prebuilt: [`stage_installed`]).
///
/// # Errors
/// [`HostError`]: the build failed, or a sanitizer was asked of a Rust library.
pub fn build(project: &Project, sanitizer: Option<Sanitizer>) -> Result<HostLibrary, HostError> {
    let home = Home::locate()?;
    let dir = host_dir(project, &home);
    let _turn = build_turn(&home, &dir)?;
    let out = dir.join(sanitizer.map_or("plain", Sanitizer::name));
    fs::create_dir_all(&out)?;
    let mut shape_driver = None;
    let built = match &project.language {
        Language::Rust { .. } if sanitizer == Some(Sanitizer::Undefined) => {
            return Err(HostError::Unsupported(format!(
                "{} is a Rust library: rustc has no UndefinedBehaviorSanitizer (Rust's own checks catch overflow \
                 and bad shifts in debug builds); use --sanitize address or thread",
                project.name
            )));
        }
        Language::Rust { bin, device_feature } => {
            build_rust(project, bin, *device_feature, &rust_target(&home, &dir), sanitizer)?
        }
        Language::C(sources) => {
            let objects = compile_c(project, sources, &home, &out, sanitizer)?;
            link(project, objects, &home, &out, sanitizer)?
        }
        Language::Cxx => {
            let compiled = cxx::compile(project, &home, &out, sanitizer)?;
            shape_driver = Some(compiled.shape_driver);
            link(project, vec![compiled.object], &home, &out, sanitizer)?
        }
    };
    let mut cores = Vec::new();
    for core in 0..neuroncustomop_wire::job::CORES {
        let copy = out.join(format!("core{core}.so"));
        // A copy per core, so the dynamic loader loads eight (it loads a path once),
        // renamed over the last: a loader of another process that has the last one
        // mapped keeps it whole (a copy over it would truncate what it runs).
        let partial = out.join(format!("core{core}.so.{}.partial", std::process::id()));
        fs::copy(&built, &partial)?;
        fs::rename(&partial, &copy)?;
        cores.push(copy);
    }
    Ok(HostLibrary { name: project.name.clone(), cores, sanitizer, shape_driver })
}

/// Where a project's host build goes: a checkout's built-in example's in the checkout,
/// any other in the project.
fn host_dir(project: &Project, home: &Home) -> PathBuf {
    match (home.checkout(), home.examples_dir()) {
        (Some(repo), Some(examples)) if project.dir.starts_with(&examples) => {
            cargo_target(repo).join("libraries").join(&project.name)
        }
        _ => project.dir.join("target/neuroncustomop/host"),
    }
}

/// The cargo target folder of every host-tier build in a checkout: its own, so the
/// feature `host-tier` never invalidates the runtime's host tests' build.
fn cargo_target(repo: &Path) -> PathBuf {
    repo.join("target/hosttier")
}

/// The cargo target folder of a Rust library's host build: a checkout's
/// [`cargo_target`]; with an installed home, the project's own (`dir`, its host build's
/// folder), as nothing may be written into the home.
fn rust_target(home: &Home, dir: &Path) -> PathBuf {
    home.checkout().map_or_else(|| dir.join("cargo"), cargo_target)
}

/// The host tier's builds take turns, across processes as across threads. In a
/// checkout they share [`cargo_target`], whose runtime archive a build with another
/// sanitizer rebuilds under a link; with an installed home, whose runtime is prebuilt
/// and read only, what they share is a project's objects, per-core copies and cargo
/// folder, all in `dir`, the project's host build's folder. Held until dropped.
fn build_turn(home: &Home, dir: &Path) -> Result<Lock, HostError> {
    let shared = home.checkout().map_or_else(|| dir.to_path_buf(), cargo_target);
    Ok(Lock::exclusive(&shared.join("neuroncustomop-hosttier-build.lock"))?)
}

/// Compiler flags that keep results those of the device: no fast-math, no
/// floating-point contraction (the device's FPU would fuse what x86-64 does not).
const EXACT_FLOAT: [&str; 2] = ["-ffp-contract=off", "-fno-fast-math"];

/// A Rust library: its device binary, linked as a shared object against the runtime
/// built with `host-tier` (which exports the C ABI the loader calls), in the cargo
/// folder `target`. The author's crate is instrumented by rustc: with the store calls
/// that keep the cores apart ([`apart`]), or with a sanitizer ([`sanitize`]). Needs
/// Rust's cargo and rustc, with an installed home too.
fn build_rust(
    project: &Project,
    bin: &str,
    device_feature: bool,
    target: &Path,
    sanitizer: Option<Sanitizer>,
) -> Result<PathBuf, HostError> {
    let error = |what: String| HostError::Build { name: project.name.clone(), what };
    if !Path::new(toolchain::CARGO).is_file() {
        return Err(error(format!(
            "a Rust library's host build compiles it, and the runtime with it, with Rust's cargo and rustc, and \
             {} is not installed: `ncop setup --rust` installs them (C and C++ libraries need no Rust)",
            toolchain::CARGO
        )));
    }
    let mut features = String::from("neuroncustomop/host-tier");
    if let Some(feature) = sanitizer.and_then(Sanitizer::runtime_feature) {
        features.push_str(&format!(",neuroncustomop/{feature}"));
    }
    if device_feature {
        features.push_str(",device");
    }
    let mut instrument = sanitizer.and_then(Sanitizer::rustc_flags).unwrap_or_default();
    instrument.extend(apart::rustc_flags(sanitizer));
    let mut cargo = Command::new(toolchain::CARGO);
    if !instrument.is_empty() {
        // rustc's -Z flags (a sanitizer's, or the store calls') on the stable
        // toolchain, as qemu/fuzz/run.sh enables them.
        cargo.env("RUSTC_BOOTSTRAP", "1");
    }
    cargo
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTC_WRAPPER")
        .args(["rustc", "--release", "--manifest-path"])
        .arg(project.dir.join("Cargo.toml"))
        .args(["--bin", bin, "--features", &features, "--"])
        // The binary (`#![no_main]`) becomes a shared object whose own symbols bind to
        // its own definitions (-Bsymbolic): the runtime's malloc, printf and libm,
        // never the loader process's.
        .args(["-C", "link-arg=-shared", "-C", "link-arg=-nostartfiles", "-C", "link-arg=-Wl,-Bsymbolic"])
        // The author's own crate unoptimised, with full debug information: every local
        // is there for gdb (Rust never fuses float operations, so the bits are the same).
        .args(["-C", "opt-level=0", "-C", "debuginfo=2"])
        .args(&instrument);
    process::status(&mut cargo).map_err(|failed| error(failed.to_string()))?;
    Ok(target.join("release").join(bin))
}

/// The runtime's cargo feature a C or C++ library's runtime archive is built with for
/// `sanitizer` (none: `host-tier`; each sanitizer's feature implies it).
fn runtime_feature(sanitizer: Option<Sanitizer>) -> &'static str {
    sanitizer.and_then(Sanitizer::runtime_feature).unwrap_or("host-tier")
}

/// The runtime as a static library for the host tier (C and C++ libraries link it),
/// with the sanitizer's feature if it has one: built in a checkout, an installed
/// home's prebuilt one ([`stage_installed`]) else.
///
/// # Errors
/// [`HostError::Build`] when it does not build; [`HostError::Missing`] when the
/// installed home has none for `sanitizer`.
fn runtime_archive(home: &Home, sanitizer: Option<Sanitizer>) -> Result<PathBuf, HostError> {
    let Some(repo) = home.checkout() else {
        let prebuilt = home.prebuilt().expect("a home that is not a checkout is installed");
        let archive = installed_archive(&prebuilt, sanitizer);
        if archive.is_file() {
            return Ok(archive);
        }
        let installation = home.root().display();
        let Some(asked) = sanitizer else {
            return Err(HostError::Missing(format!(
                "this installation of neuroncustomop ({installation}) has no host-tier runtime ({}): its wheel was \
                 built without the host tier; install a wheel `cargo sim dist` builds now",
                archive.display()
            )));
        };
        // UndefinedBehaviorSanitizer's is the plain runtime.
        let shipped: Vec<&str> = [Sanitizer::Address, Sanitizer::Undefined, Sanitizer::Thread]
            .into_iter()
            .filter(|other| installed_archive(&prebuilt, Some(*other)).is_file())
            .map(Sanitizer::name)
            .collect();
        return Err(HostError::Missing(format!(
            "this installation of neuroncustomop ({installation}) has no host-tier runtime built for --sanitize {} \
             ({}: its wheel was built without it; it has those for --sanitize {}): run without --sanitize or with \
             one of those, or point NEURONCUSTOMOP_HOME at a source checkout of neuroncustomop, which builds that \
             runtime at its first use",
            asked.name(),
            archive.display(),
            shipped.join(", ")
        )));
    };
    process::status(
        Command::new(toolchain::CARGO)
            .env("CARGO_TARGET_DIR", cargo_target(repo))
            .env_remove("RUSTC_WRAPPER")
            .args(["build", "--release", "--lib", "--features", runtime_feature(sanitizer), "--manifest-path"])
            .arg(repo.join("Cargo.toml")),
    )
    .map_err(|failed| HostError::Build { name: "neuroncustomop".into(), what: failed.to_string() })?;
    Ok(cargo_target(repo).join("release").join(RUNTIME_ARCHIVE))
}

/// The runtime archive's file name.
const RUNTIME_ARCHIVE: &str = "libneuroncustomop.a";

/// The sanitizers whose runtime archive `sim dist` ships, beside the one without
/// (UndefinedBehaviorSanitizer links that one: the runtime has no feature for it).
pub const INSTALLED_SANITIZERS: [Sanitizer; 2] = [Sanitizer::Address, Sanitizer::Thread];

/// An installed home's host-tier runtime archive for `sanitizer`:
/// `prebuilt/host/<feature>/libneuroncustomop.a`, by the runtime feature it was built with.
fn installed_archive(prebuilt: &Path, sanitizer: Option<Sanitizer>) -> PathBuf {
    prebuilt.join("host").join(runtime_feature(sanitizer)).join(RUNTIME_ARCHIVE)
}

/// An installed home's host-tier loader program: `prebuilt/host/ncop-hostrun`.
pub fn installed_loader(prebuilt: &Path) -> PathBuf {
    prebuilt.join("host").join(LOADER_FILE)
}

/// The C source every C and C++ library's host build links (its variadic `printf`
/// family), at the same path in a checkout and an installed home.
pub const VARIADIC_SOURCE: &str = "runtime/arch/host_tier/variadic.c";

/// Writes into the installed home `home` (a folder laid out as `sim dist` stages it)
/// what the host tier reads there for a C or C++ library, built in the checkout
/// `repo`: [`VARIADIC_SOURCE`], and the runtime's archive without a sanitizer and for
/// each of `sanitizers` (`prebuilt/host/<feature>/libneuroncustomop.a`, by the runtime
/// feature it was built with). The loader, [`installed_loader`], is the caller's to
/// put there (a release build, stripped, for the wheel).
///
/// # Errors
/// [`HostError`]: the home is not `repo`'s checkout, an archive does not build, or
/// copying failed.
pub fn stage_installed(repo: &Path, home: &Path, sanitizers: &[Sanitizer]) -> Result<(), HostError> {
    let checkout = Home::at(repo)?;
    let prebuilt = home.join("prebuilt");
    let variadic = home.join(VARIADIC_SOURCE);
    fs::create_dir_all(variadic.parent().expect("a file is in a folder"))?;
    fs::copy(repo.join(VARIADIC_SOURCE), &variadic)?;
    // Its turn: every variant is built into the one cargo folder, in turn.
    let _turn = build_turn(&checkout, &cargo_target(repo))?;
    for sanitizer in std::iter::once(None).chain(sanitizers.iter().copied().map(Some)) {
        let archive = installed_archive(&prebuilt, sanitizer);
        fs::create_dir_all(archive.parent().expect("a file is in a folder"))?;
        fs::copy(runtime_archive(&checkout, sanitizer)?, &archive)?;
    }
    Ok(())
}

/// The flags an author's C or C++ source is compiled with for `sanitizer`, beside the
/// build's own: the sanitizer's, and the store calls that keep the cores apart
/// ([`apart`]; not the runtime's own C source, whose stores are the runtime's).
fn author_flags(sanitizer: Option<Sanitizer>) -> Vec<String> {
    let mut flags = sanitizer.map(Sanitizer::clang_flags).unwrap_or_default();
    flags.extend(apart::clang_flags(sanitizer));
    flags
}

/// Compiles one C source for x86-64 with the home's runtime headers and `flags` into
/// `object`.
fn compile_c_source(source: &Path, object: &Path, home: &Home, flags: &[String]) -> Result<(), String> {
    run(Command::new(Llvm::CLANG)
        // -O0: every local is there for gdb; no optimisation changes a float's bits.
        .args(["-std=c11", "-g", "-O0", "-fPIC", "-ffreestanding", "-nostdlibinc", "-Wall", "-Wextra", "-Werror"])
        .args(EXACT_FLOAT)
        .args(flags)
        .arg("-I")
        .arg(home.include_dir().join("libc"))
        .arg("-I")
        .arg(home.include_dir())
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(object))
}

/// A C library's sources, each compiled by clang for x86-64 with the runtime's headers.
fn compile_c(
    project: &Project,
    sources: &[PathBuf],
    home: &Home,
    out: &Path,
    sanitizer: Option<Sanitizer>,
) -> Result<Vec<PathBuf>, HostError> {
    let mut objects = Vec::new();
    for source in sources {
        let stem = source.file_stem().expect("a .c file has a stem").to_string_lossy();
        let object = out.join(format!("{stem}.o"));
        compile_c_source(source, &object, home, &author_flags(sanitizer))
            .and_then(|()| apart::redirect_copies(&object, sanitizer))
            .map_err(|what| HostError::Build { name: project.name.clone(), what })?;
        objects.push(object);
    }
    Ok(objects)
}

/// Links a C or C++ library's `objects` with the runtime, and with the host tier's C
/// variadic `printf` family ([`VARIADIC_SOURCE`], which hands its arguments to the
/// runtime's formatter), into one shared object.
fn link(
    project: &Project,
    mut objects: Vec<PathBuf>,
    home: &Home,
    out: &Path,
    sanitizer: Option<Sanitizer>,
) -> Result<PathBuf, HostError> {
    let error = |what: String| HostError::Build { name: project.name.clone(), what };
    let archive = runtime_archive(home, sanitizer)?;
    let variadic = out.join("neuroncustomop_variadic.o");
    compile_c_source(&home.root().join(VARIADIC_SOURCE), &variadic, home, &[]).map_err(error)?;
    objects.push(variadic);
    let sanitize = sanitizer.map(Sanitizer::clang_flags).unwrap_or_default();
    let library = out.join(format!("lib{}.so", project.name));
    let mut command = Command::new(Llvm::CLANG);
    command
        // No C start files: the runtime defines `__dso_handle` and `_init` itself.
        .args(["-shared", "-nostartfiles", "-Wl,-Bsymbolic"])
        .args(&sanitize)
        // Every symbol resolved at the link, so a missing one is a build error here, not
        // the loader's at dlopen (a sanitized library takes its runtime's at load).
        .args(sanitizer.is_none().then_some("-Wl,--no-undefined"))
        .args(sanitizer.map(|_| "-shared-libsan"))
        .arg("-o")
        .arg(&library)
        .args(&objects)
        .arg("-Wl,--whole-archive")
        .arg(&archive)
        .arg("-Wl,--no-whole-archive")
        .args(["-lm", "-lpthread", "-ldl", "-lgcc_s"]);
    // Skipped when the objects, the runtime's archive, the flags and the linkers are
    // those of the last link (the system's libraries it names are linked dynamically).
    let mut inputs = objects.clone();
    inputs.push(archive);
    let stamp = library.with_extension("so.stamp");
    Step::new(&command, &[PathBuf::from("ld")], inputs, vec![library.clone()], stamp)
        .run(|| run(&mut command))
        .map_err(error)?;
    Ok(library)
}

/// Runs a compiler or linker; a failure carries its diagnostics.
fn run(command: &mut Command) -> Result<(), String> {
    process::output(command).map(drop).map_err(|failed| failed.to_string())
}

/// The host tier's loader program's file name.
pub const LOADER_FILE: &str = "ncop-hostrun";

/// The host tier's loader program (`ncop-hostrun`, `qemu/src/bin/ncop-hostrun.rs`):
/// an installed home's prebuilt one ([`installed_loader`]); in a checkout, the one
/// beside the running executable (`ncop`, `sim`, or one folder up from a test binary
/// in `deps/`), else (a program of another package: the Python extension) the newest
/// the checkout's tools built, `target/release/` (`cargo sim setup`) or `target/debug/`
/// (`cargo test`, `cargo build`). Nothing is built here.
///
/// # Errors
/// [`HostError`] when there is none, saying what builds or installs it.
pub fn loader_program() -> Result<PathBuf, HostError> {
    static FOUND: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut found = FOUND.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(path) = &*found {
        return Ok(path.clone());
    }
    let home = Home::locate()?;
    let path = match home.prebuilt() {
        Some(prebuilt) => {
            let path = installed_loader(&prebuilt);
            if !path.is_file() {
                return Err(HostError::Missing(format!(
                    "this installation of neuroncustomop ({}) has no host-tier loader ({}): its wheel was built \
                     without it; install a wheel `cargo sim dist` builds now",
                    home.root().display(),
                    path.display()
                )));
            }
            path
        }
        None => checkout_loader(home.root())?,
    };
    *found = Some(path.clone());
    Ok(path)
}

/// A checkout's loader program ([`loader_program`]).
fn checkout_loader(repo: &Path) -> Result<PathBuf, HostError> {
    let beside = std::env::current_exe().ok().and_then(|exe| {
        let folder = exe.parent()?.to_path_buf();
        let up = (folder.file_name()? == "deps").then(|| folder.parent().map(Path::to_path_buf)).flatten();
        [Some(folder), up].into_iter().flatten().map(|dir| dir.join(LOADER_FILE)).find(|path| path.is_file())
    });
    if let Some(path) = beside {
        return Ok(path);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo.join("target"), PathBuf::from);
    let modified = |path: &PathBuf| fs::metadata(path).and_then(|meta| meta.modified()).ok();
    ["release", "debug"]
        .map(|profile| target.join(profile).join(LOADER_FILE))
        .into_iter()
        .filter(|path| path.is_file())
        .max_by_key(modified)
        .ok_or_else(|| {
            HostError::Missing(format!(
                "the host tier's loader, {LOADER_FILE}, is not built in the checkout {} (neither in {}/release nor \
                 in debug): `cargo sim setup` builds it (`cargo build --release -p neuroncustomop-sim --bin \
                 {LOADER_FILE}`)",
                repo.display(),
                target.display()
            ))
        })
}

/// Builds, in a checkout, what the first `--host` run of a C or C++ library would
/// otherwise build: the runtime for the host tier without a sanitizer (a sanitizer's
/// is built at its first use). `sim setup` (and so `cargo sim run` and `cargo sim test`)
/// calls it, beside building the loader; cargo finds nothing to do when it is up to
/// date. An installed home has it prebuilt: nothing to do.
///
/// # Errors
/// [`HostError`]: no home, or the build failed.
pub fn prebuild() -> Result<(), HostError> {
    let home = Home::locate()?;
    let Some(repo) = home.checkout() else { return Ok(()) };
    // Its turn, as every build of the archive: another process may be linking with it.
    let _turn = build_turn(&home, &cargo_target(repo))?;
    runtime_archive(&home, None).map(drop)
}

/// A session whose jobs the host tier's loader runs on `cores` copies of `library`.
///
/// # Errors
/// [`HostError`] when the loader does not build or cannot start.
pub fn session(library: &HostLibrary, cores: usize) -> Result<Session, HostError> {
    let (program, args) = loader_command(library, cores)?;
    Session::process(&library.name, &program, args, cores, SessionOptions::default())
        .map_err(|e| HostError::Build { name: library.name.clone(), what: format!("starting the host loader: {e}") })
}

/// The kernels `library` registers, in registration order: the loader enters core 0's
/// copy with a job of no op and reports what `register_funcs` registered, as the
/// device's packaging asks the simulated device (so a host-first library needs no
/// device build to know its kernels).
///
/// # Errors
/// [`HostError::Build`] when the loader does not start, the library's entry fails, or
/// it registers no kernel.
pub fn kernels(library: &HostLibrary) -> Result<Vec<String>, HostError> {
    let error = |what: String| HostError::Build { name: library.name.clone(), what };
    // No images: the host tier's loader finds a library's entry points itself (dlsym).
    let images = neuroncustomop_machine::images::Images { name: library.name.clone(), cores: Vec::new() };
    let job = neuroncustomop_machine::job::Job::new(&images, 1).map_err(|e| error(format!("the job: {e}")))?;
    let mut session = session(library, 1)?;
    let report = session.dispatch(&job).map_err(|e| error(format!("entering the library: {e}")))?;
    let core = report.core(0);
    if core.entry_status != Some(0) || !report.done {
        return Err(error(format!(
            "its entry_func failed (status {:?}):\n{}{}",
            core.entry_status, report.outcome.stdout, report.outcome.stderr
        )));
    }
    let names: Vec<String> = core.kernels.into_iter().map(|kernel| kernel.name).collect();
    if names.is_empty() {
        return Err(error("the library registers no kernel".into()));
    }
    Ok(names)
}

/// The loader's command line for `cores` copies of `library`: `env` with the loader's
/// environment, then the loader. A Rust library is an executable's code made a shared
/// object, whose thread-locals take static TLS: glibc lends dlopen'ed libraries only a
/// little of it, so the loader asks for 1 MiB (eight copies of a library need a few
/// KiB). A sanitized library needs the sanitizer's runtime preloaded (the loader is not
/// instrumented; the runtime must come first), its reports symbolized.
fn loader_command(library: &HostLibrary, cores: usize) -> Result<(PathBuf, Vec<OsString>), HostError> {
    let program = loader_program()?;
    let mut args: Vec<OsString> = vec!["GLIBC_TUNABLES=glibc.rtld.optional_static_tls=1048576".into()];
    if let Some(sanitizer) = library.sanitizer {
        args.extend(sanitizer.environment().into_iter().map(OsString::from));
    }
    args.push(program.into_os_string());
    args.extend(library.cores[..cores].iter().map(|p| p.clone().into_os_string()));
    Ok((PathBuf::from("/usr/bin/env"), args))
}

/// Names the places of the host tier's own findings (`checks`: offsets into a library
/// copy) from the DWARF of `library`'s build.
pub fn symbolizer(library: &HostLibrary) -> Option<neuroncustomop_machine::symbolize::Symbolizer> {
    neuroncustomop_machine::symbolize::Symbolizer::new(&library.cores[..1]).ok()
}

/// Where `pc` is, for a fault report: `function (file:line)` from the library's DWARF,
/// else the library and the offset.
pub fn place(pc: usize) -> String {
    match locate(pc) {
        Some((function, file, line)) => format!("{function} ({file}:{line})"),
        None => object_of(pc).map_or_else(|| format!("{pc:#x}"), |(path, offset)| format!("{path}+{offset:#x}")),
    }
}

/// The loaded object `pc` is in, and its offset there.
fn object_of(pc: usize) -> Option<(String, usize)> {
    let (info, base) = object_base(pc)?;
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr filled a NUL-terminated path.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Some((path, pc - base))
}

/// What `dladdr` says of `pc`, and the load address of its object.
fn object_base(pc: usize) -> Option<(libc::Dl_info, usize)> {
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    if unsafe { libc::dladdr(pc as *const libc::c_void, &mut info) } == 0 || info.dli_fbase.is_null() {
        return None;
    }
    let base = info.dli_fbase as usize;
    Some((info, base))
}

/// The load address of the object `pc` is in.
pub(crate) fn base_of(pc: usize) -> Option<usize> {
    object_base(pc).map(|(_, base)| base)
}

/// `(function, file, line)` of `pc`, from the DWARF of the object it is in.
pub(crate) fn locate(pc: usize) -> Option<(String, String, u32)> {
    let (path, offset) = object_of(pc)?;
    let loader = addr2line::Loader::new(&path).ok()?;
    let function = loader
        .find_frames(offset as u64)
        .ok()
        .and_then(|mut frames| frames.next().ok().flatten())
        .and_then(|frame| frame.function.and_then(|f| f.demangle().ok().map(|n| n.into_owned())));
    let location = loader.find_location(offset as u64).ok().flatten()?;
    Some((function.unwrap_or_else(|| "?".into()), location.file.unwrap_or("?").to_string(), location.line.unwrap_or(0)))
}

/// How a host-tier call runs under gdb ([`debug`]).
#[derive(Debug, Clone, Default)]
pub struct Debugger {
    /// The core whose kernel entry gdb stops at (the others run on).
    pub core: usize,
    /// gdb commands run once it stopped there (`-ex` each), e.g. `break kernels.c:30`,
    /// `continue`, `bt`, `print x[3]`.
    pub commands: Vec<String>,
    /// `gdb --batch`: run the commands and exit (for scripts and tests); else gdb takes
    /// the terminal once the commands ran.
    pub batch: bool,
    /// Where to keep a copy of what gdb printed (gdb's `set logging`), for scripts.
    pub transcript: Option<PathBuf>,
}

/// gdb's pretty-printers for the torch C++ API (`torch::Tensor` and its accessors: dtype,
/// shape, first elements) and for argument descriptors, sourced by [`debug`]; kept in the
/// binary, so an installed tool has them.
const PRINTERS: &str = include_str!("../gdb/printers.py");

/// The call's translate windows for the descriptor printer (`_WINDOWS` of
/// `gdb/printers.py`), as a line of Python.
fn printer_windows(job: &neuroncustomop_wire::job::JobHeader) -> String {
    use neuroncustomop::translate::{TRANSLATE_PER_CORE, TranslateRecord};
    let count = (job.translate_count as usize).min(job.translate.len());
    let windows: Vec<String> = job.translate[..count]
        .iter()
        .map(|bytes| {
            // SAFETY: 32 bytes read as the runtime's 32-byte little-endian record, which
            // has no invalid bit patterns.
            let record = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<TranslateRecord>()) };
            let per_core = if record.flags & TRANSLATE_PER_CORE != 0 { "True" } else { "False" };
            format!("({}, {}, {}, {per_core}, {})", record.ptr, record.mask, record.device_base, record.core_stride)
        })
        .collect();
    format!("_WINDOWS.extend([{}])\n", windows.join(", "))
}

/// The gdb the host tier starts: Debian's (`gdb`, installed by qemu/setup.sh).
pub const GDB: &str = "gdb";

/// The gdb script that stops at `kernel`'s entry on `core` with every core held at its
/// own (all-stop):
/// - the loader holds every core before its first kernel (`NCOP_HOSTRUN_HOLD`) until
///   `core` is there; a breakpoint at the loader's `ncop_hostrun_before_kernel`,
///   conditioned on its first argument, the core, in `rdi`, sets a one-time one at
///   its second, the kernel, in `rsi` (the x86-64 calling convention);
/// - at that stop the held cores are let go (`NCOP_HOSTRUN_RELEASE`): they run when gdb
///   lets the program continue, so a breakpoint set now is hit on any core;
/// - from the entry (the C++ build's generated wrapper, the Rust runtime's shim) that
///   core alone runs on to the author's function named `kernel` (a global function of
///   that name, the Rust crate's, else any function of that name);
/// - under a sanitizer, gdb stops where it reports an error (the sanitizers' report
///   hooks, `__asan_on_error`, `__tsan_on_report`, `__ubsan_on_report`), before the
///   report ends the process: the kernel's frames are there to read.
fn stop_script(core: usize, kernel: &str, sanitized: bool) -> String {
    let reports =
        if sanitized { "break __asan_on_error\nbreak __tsan_on_report\nbreak __ubsan_on_report\n" } else { "" };
    format!(
        r#"set pagination off
set confirm off
set breakpoint pending on
{reports}set language c
break *ncop_hostrun_before_kernel if $rdi == {core}
set language auto
commands
silent
tbreak *$rsi
continue
end
run
set language c
set var *(unsigned int *)&NCOP_HOSTRUN_RELEASE = 1
set language auto
python
import re
def _authors(frame):
    name = frame.name() or ""
    return re.fullmatch(r"(.*::)?{kernel}(\(.*\))?", name) is not None
if not _authors(gdb.selected_frame()):
    # A Rust kernel is its crate's: the crate is the shim's first path segment.
    crate = (gdb.selected_frame().name() or "").split("::")[0]
    for spec in ("-qualified {kernel}", "-qualified " + crate + "::{kernel}", "-function {kernel}"):
        stop = gdb.Breakpoint(spec, internal=True, temporary=True)
        if not stop.pending:
            break
        stop.delete()
    else:
        stop = None
    if stop is not None:
        gdb.execute("set scheduler-locking on")
        gdb.execute("continue")
        gdb.execute("set scheduler-locking replay")
end
"#
    )
}

/// Runs `job` once on the host tier's loader under gdb, stopped at the kernel's entry
/// on `debugger.core` (a breakpoint at the first instruction of the loader's
/// `ncop_hostrun_before_kernel`, conditioned on its first argument, the core, in `rdi`,
/// sets a one-time one at its second, the kernel, in `rsi`: the x86-64 calling
/// convention), then `debugger.commands`. The loader
/// reads the job from a file and writes its report to one, so gdb keeps the terminal;
/// the report is returned as soon as it says the job is done, gdb still running
/// ([`wait_for_debugger`] waits for it), or, under `--batch`, once gdb has exited.
///
/// # Errors
/// [`HostError`] when the loader does not build, gdb cannot start, or the files
/// cannot be written or read.
pub fn debug(
    library: &HostLibrary,
    job: &neuroncustomop_machine::job::Job,
    debugger: &Debugger,
) -> Result<neuroncustomop_machine::device::Report, HostError> {
    // One folder per call: two calls of one process may debug at once.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let work = std::env::temp_dir().join(format!("ncop-gdb-{}-{call}", std::process::id()));
    fs::create_dir_all(&work)?;
    let (job_file, report_file, script) = (work.join("job"), work.join("report"), work.join("stop.gdb"));
    let printers = work.join("printers.py");
    fs::write(&printers, format!("{PRINTERS}\n{}", printer_windows(&job.header)))?;
    let frame = neuroncustomop_machine::device::frame(job)
        .map_err(|e| HostError::Build { name: library.name.clone(), what: format!("the job: {e}") })?;
    fs::write(&job_file, frame)?;
    // The op's kernel: its function id in the first word, a name of the job's table.
    let kernel = job
        .words
        .get(neuroncustomop_wire::layout::HEADER_FUNCTION_ID)
        .and_then(|&raw| job.names.get(usize::from(raw)))
        .map_or("", String::as_str);
    fs::write(&script, stop_script(debugger.core, kernel, library.sanitizer.is_some()))?;
    let cores = job.header.cores as usize;
    // gdb runs the loader itself (its symbols known from the start), with the
    // variables `env` would set as gdb's own environment settings.
    let (_, mut loader_args) = loader_command(library, cores)?;
    let copies = loader_args.split_off(loader_args.len() - cores);
    let program = loader_args.pop().expect("the loader follows the variables");
    let mut gdb = Command::new(GDB);
    gdb.args(["-q", "-nx"]);
    if debugger.batch {
        gdb.arg("--batch");
    }
    if let Some(transcript) = &debugger.transcript {
        gdb.arg("-ex").arg(format!("set logging file {}", transcript.display()));
        gdb.args(["-ex", "set logging overwrite on", "-ex", "set logging enabled on"]);
    }
    for variable in &loader_args {
        gdb.arg("-ex").arg(format!("set environment {}", variable.to_string_lossy()));
    }
    // Every core waits before its kernel until gdb's first stop (the loader's `hold`).
    gdb.arg("-ex").arg(format!("set environment NCOP_HOSTRUN_HOLD={}", debugger.core));
    gdb.arg("-x").arg(&printers).arg("-x").arg(&script);
    for command in &debugger.commands {
        gdb.args(["-ex", command]);
    }
    gdb.arg("--args").arg(&program);
    gdb.arg("--job").arg(&job_file).arg("--report").arg(&report_file).args(&copies);
    let mut child = gdb.spawn().map_err(|e| {
        HostError::Unsupported(format!("cannot start {GDB}: {e}; install Debian's gdb (qemu/setup.sh does)"))
    })?;
    // A person at gdb gets the result as soon as the kernel has finished (the loader's
    // report says the job is done), gdb still theirs; a script's gdb (`--batch`) ends.
    let finished = loop {
        if let Some(status) = child.try_wait()? {
            break Err(status);
        }
        let report = fs::read(&report_file).unwrap_or_default();
        if !debugger.batch && !report.is_empty() {
            let report = neuroncustomop_machine::device::report_from(report, Vec::new());
            if report.done {
                *RUNNING_DEBUGGER.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(child);
                break Ok(report);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let report = match finished {
        Ok(report) => report,
        Err(status) => {
            let report = fs::read(&report_file).unwrap_or_default();
            if report.is_empty() {
                let _ = fs::remove_dir_all(&work);
                return Err(HostError::Unsupported(format!(
                    "{GDB} exited ({status}) before the kernel finished: the call has no result (let it run to the \
                     end: `continue`)"
                )));
            }
            neuroncustomop_machine::device::report_from(report, Vec::new())
        }
    };
    let _ = fs::remove_dir_all(&work);
    Ok(report)
}

/// The gdb of a [`debug`] call that returned its result while gdb still ran (a person
/// at it): [`wait_for_debugger`] waits for it.
static RUNNING_DEBUGGER: Mutex<Option<std::process::Child>> = Mutex::new(None);

/// Waits until the gdb of the last [`debug`] call (if it still runs: its result was
/// returned when the kernel finished) exits: a front end that printed the result calls
/// it before it exits itself, so gdb keeps the terminal until the person quits it.
pub fn wait_for_debugger() {
    let running = RUNNING_DEBUGGER.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    if let Some(mut gdb) = running {
        let _ = gdb.wait();
    }
}
