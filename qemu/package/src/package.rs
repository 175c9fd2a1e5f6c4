//! Packaging an op author's library: the 8 per-core images and the `ucode_lib.json`
//! that binds each FunctionId to a kernel name, as the compiler's NEFF packager ships
//! them (schema and rules: `docs/abi/dispatch.md`, `crate::ucode_lib`).
//!
//! `target/package/<name>/` receives
//! - `lib<name>_cpu<i>.elf`, i = 0..8: core i's image. `.elf`, not the builtins' `.so`:
//!   each is a fixed-address ELF executable (linked at `0x84000000 + i * 2 MiB`), not
//!   a position-independent shared object, and the name says so;
//! - `ucode_lib.json`: one library entry per image (`cpu_id` i, `total_cpus` 8,
//!   `is_builtin` false), each listing every kernel with `opcode` 133 and its
//!   FunctionId as `sub_opcode`, allocated dense from 0 in registration order.
//!
//! The kernel names come from the image itself: the simulated loader boots the 8
//! images with an empty job, and their `register_funcs` report what they register
//! (the loader's `KERNEL` lines). That is the very registration the device's loader
//! matches FunctionIds against, whatever built the table (the Rust `kernels!` macro, a
//! C array, names computed at run time), so the package cannot disagree with it; a
//! name read out of the ELF file would depend on how the table is laid out. A library
//! whose `entry_func` fails, that registers no kernel, or whose cores disagree, is not
//! packaged.
//!
//! Versions (carried verbatim, never checked here; registering the same library again
//! with other strings is refused by the registry): `ulib_to_ucode_version` is the
//! runtime's `CUSTOMOP_LIB_VERSION` ([`ucode_version`]), `ulib_to_isa_version` the
//! target the images are compiled for ([`ISA_VERSION`]).
//!
//! A library is a project ([`crate::project`]): Rust, or the C files of its `src/`,
//! compiled by Debian's `clang-22` and linked with the runtime's `libneuroncustomop.a`
//! ([`compile_and_link_c`]).

use crate::step_cache::Step;
use crate::ucode_lib::{UcodeLib, UcodeLibError, UcodeLibRegistry};
use neuroncustomop::start_exit::CUSTOMOP_LIB_VERSION;
use neuroncustomop_machine::device::{self, RunError};
use neuroncustomop_machine::home::Home;
use neuroncustomop_machine::images::{self, BuildError, CORES, Images};
use neuroncustomop_machine::job::{Job, JobError};
use neuroncustomop_machine::process;
use neuroncustomop_machine::toolchain::{self, Llvm, Toolchain};
use neuroncustomop_wire::FunctionId;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `ulib_to_isa_version` of every package: the target (ISA, core options, windowed
/// ABI) of `.cargo/xtensa-gpsimd-none-elf.json`.
pub const ISA_VERSION: &str = "xtensa-gpsimd-none-elf";

/// The packaged library's file name for core `cpu`.
pub fn library_file_name(name: &str, cpu: usize) -> String {
    format!("lib{name}_cpu{cpu}.elf")
}

/// `ulib_to_ucode_version` of every package: the runtime's `CUSTOMOP_LIB_VERSION`,
/// e.g. `neuroncustomop 0.1.0 (libneuroncustomop 1.21.1.0)`.
pub fn ucode_version() -> String {
    let text = CUSTOMOP_LIB_VERSION.strip_suffix(&[0]).unwrap_or(&CUSTOMOP_LIB_VERSION);
    String::from_utf8_lossy(text).into_owned()
}

/// Where `cargo sim package <name>` writes for a built-in example of the checkout at
/// `checkout`: its `target/package/<name>/`.
pub fn package_dir(checkout: &Path, name: &str) -> PathBuf {
    checkout.join("target/package").join(name)
}

/// Whether `dir` is a built-in example (`examples/<name>/` of a checkout `home`),
/// whose outputs go to the checkout's `target/` where `cargo sim` has always put them;
/// any other project keeps its outputs in its own `target/neuroncustomop/`.
pub fn is_example(home: &Home, dir: &Path) -> bool {
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let examples = home.examples_dir();
    dir.parent().zip(examples).is_some_and(|(parent, examples)| canonical(parent) == canonical(&examples))
}

/// Why a library could not be packaged.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// The Rust build failed.
    #[error(transparent)]
    Build(BuildError),
    /// A C build step failed; says which.
    #[error("the C build failed: {0}")]
    CBuild(String),
    /// The loader could not be run to read the registrations.
    #[error("reading the registered kernels")]
    Run(#[source] RunError),
    /// The empty job could not be made.
    #[error(transparent)]
    Job(JobError),
    /// A core's `entry_func` failed (or never reported); the loader's output follows.
    #[error("core {core}: entry_func {}\n{output}", match status { Some(status) => format!("returned status {status}"), None => "did not report".into() })]
    Entry {
        /// The core.
        core: usize,
        /// Its status, if it reported one.
        status: Option<u32>,
        /// The loader's raw output.
        output: String,
    },
    /// Core `core` registered other kernels than core 0.
    #[error("core {core} registered {other:?}, core 0 {first:?}")]
    KernelsDiffer {
        /// The core.
        core: usize,
        /// Core 0's kernels.
        first: Vec<String>,
        /// This core's.
        other: Vec<String>,
    },
    /// The library registers no kernel.
    #[error("the library registers no kernel")]
    NoKernels,
    /// The registry refused the library (e.g. more than 254 kernels), or a
    /// `ucode_lib.json` read back was invalid.
    #[error("ucode_lib.json")]
    UcodeLib(#[from] UcodeLibError),
    /// A package file is missing or not in the package's shape; says which.
    #[error("not a package: {0}")]
    Malformed(String),
    /// The package was built by another version of the tools, whose runtime and
    /// loader may not agree with this one's.
    #[error(
        "{dir} was built by {built_by}, and this is {this}: build it again with this version (`ncop package`, or \
         `load(...)` from Python)"
    )]
    OtherVersion {
        /// The package.
        dir: String,
        /// Its `ulib_to_ucode_version`.
        built_by: String,
        /// This version's ([`ucode_version`]).
        this: String,
    },
    /// Reading or writing the package failed.
    #[error("reading or writing the package")]
    Io(#[from] io::Error),
}

/// A packaged library: its folder, its 8 images and its `ucode_lib.json`.
#[derive(Debug, Clone)]
pub struct Package {
    /// `target/package/<name>/`.
    pub dir: PathBuf,
    /// The packaged images: `images.cores[i]` is `lib<name>_cpu<i>.elf`.
    pub images: Images,
    /// What `ucode_lib.json` holds.
    pub ucode_lib: UcodeLib,
}

impl Package {
    /// Reads the package in `dir`: `ucode_lib.json` through the strict reader, and the
    /// 8 images it names, which must be `lib<name>_cpu<i>.elf` for `cpu_id` i of 8.
    ///
    /// # Errors
    /// [`PackageError::UcodeLib`] for a `ucode_lib.json` the reader rejects,
    /// [`PackageError::Malformed`] for a library list that is not the 8 images,
    /// [`PackageError::OtherVersion`] for a package another version of the tools built,
    /// and [`PackageError::Io`] for a missing file.
    pub fn open(dir: &Path) -> Result<Self, PackageError> {
        let name =
            dir.file_name().and_then(|n| n.to_str()).ok_or(PackageError::Malformed(format!("{}", dir.display())))?;
        let ucode_lib = UcodeLib::from_json(&fs::read_to_string(dir.join("ucode_lib.json"))?)?;
        if ucode_lib.libraries.len() != CORES {
            return Err(PackageError::Malformed(format!("{} libraries, not {CORES}", ucode_lib.libraries.len())));
        }
        let this = ucode_version();
        if let Some(other) = ucode_lib.libraries.iter().find(|library| library.ulib_to_ucode_version != this) {
            return Err(PackageError::OtherVersion {
                dir: dir.display().to_string(),
                built_by: other.ulib_to_ucode_version.clone(),
                this,
            });
        }
        let mut cores = Vec::with_capacity(CORES);
        for (cpu, library) in ucode_lib.libraries.iter().enumerate() {
            let expected = library_file_name(name, cpu);
            if library.library != expected
                || usize::from(library.cpu_id) != cpu
                || usize::from(library.total_cpus) != CORES
            {
                return Err(PackageError::Malformed(format!(
                    "library {cpu} is {} for cpu {} of {}, not {expected} for cpu {cpu} of {CORES}",
                    library.library, library.cpu_id, library.total_cpus
                )));
            }
            let image = dir.join(&library.library);
            if !image.is_file() {
                return Err(PackageError::Malformed(format!("{} is missing", image.display())));
            }
            cores.push(image);
        }
        Ok(Self { dir: dir.to_path_buf(), images: Images { name: name.into(), cores }, ucode_lib })
    }

    /// The library's name.
    pub fn name(&self) -> &str {
        &self.images.name
    }

    /// The kernels, in FunctionId order (core 0's library; every core has the same).
    pub fn kernels(&self) -> Vec<&str> {
        self.ucode_lib.libraries[0].functions.iter().map(|function| function.name.as_str()).collect()
    }

    /// The FunctionId that selects kernel `name`.
    pub fn function_id(&self, name: &str) -> Option<FunctionId> {
        self.ucode_lib
            .libraries
            .iter()
            .flat_map(|library| &library.functions)
            .find(|f| f.name == name)
            .map(|f| f.sub_opcode)
    }

    /// A job for this library on `cores` cores whose name table is `ucode_lib.json`'s:
    /// FunctionId k of the dispatch words names the kernel `ucode_lib.json` binds to k.
    ///
    /// # Errors
    /// As [`Job::new`].
    pub fn job(&self, cores: usize) -> Result<Job, JobError> {
        job_for(&self.images, &self.ucode_lib, cores)
    }
}

/// A job for `images` on `cores` cores whose name table is `ucode_lib`'s (no images:
/// a job for the host tier, whose loader finds the library's entry points itself).
///
/// # Errors
/// As [`Job::new`].
pub fn job_for(images: &Images, ucode_lib: &UcodeLib, cores: usize) -> Result<Job, JobError> {
    let mut job = Job::new(images, cores)?;
    job.names = (0..=u8::MAX)
        .map_while(FunctionId::new)
        .map_while(|id| ucode_lib.function_name(id).map(str::to_owned))
        .collect();
    Ok(job)
}

/// Reads the kernels `built` registers and writes the package of library `name` into
/// `dir`: the 8 images as `lib<name>_cpu<i>.elf`, and `ucode_lib.json`.
///
/// # Errors
/// Every [`PackageError`] but [`PackageError::Malformed`] and the build errors.
pub fn package_into(name: &str, built: &Images, dir: &Path) -> Result<Package, PackageError> {
    let kernels = registered_kernels(built)?;
    let ucode_lib = ucode_lib(name, &kernels)?;
    fs::create_dir_all(dir)?;
    let mut cores = Vec::with_capacity(CORES);
    for (cpu, image) in built.cores.iter().enumerate() {
        let packaged = dir.join(library_file_name(name, cpu));
        // A link to the build's image when the folder is new (a build replaces its
        // images by renaming, never rewrites them), else a whole copy.
        if fs::hard_link(image, &packaged).is_err() {
            write_whole(&packaged, &fs::read(image)?)?;
        }
        cores.push(packaged);
    }
    write_whole(&dir.join("ucode_lib.json"), ucode_lib.to_json()?.as_bytes())?;
    Ok(Package { dir: dir.to_path_buf(), images: Images { name: name.into(), cores }, ucode_lib })
}

/// The file name of a C++ library's shape driver in its package: its shape functions
/// travel with the images, so a copy of the package still knows its output shapes.
pub const SHAPE_DRIVER: &str = "shape_driver";

/// The name of the temporary file [`write_whole`] and [`copy_whole`] write `path` through.
fn partial_path(path: &Path) -> std::ffi::OsString {
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".{}.{:?}.partial", std::process::id(), std::thread::current().id()));
    partial
}

/// Writes `path` through a temporary file and a rename, so a reader never sees half.
fn write_whole(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let partial = partial_path(path);
    fs::write(&partial, bytes)?;
    fs::rename(&partial, path)
}

/// Copies `from` to `to` (its permissions too: an executable stays one) through a
/// temporary file and a rename, so a reader never sees half.
pub fn copy_whole(from: &Path, to: &Path) -> io::Result<()> {
    let partial = partial_path(to);
    fs::copy(from, &partial)?;
    fs::rename(&partial, to)
}

/// The `ucode_lib.json` of library `name` with `kernels`, as the compiler's registry
/// builds it: the 8 per-core files, then one FunctionId per kernel, bound in every file.
///
/// # Errors
/// [`UcodeLibError::TooManyFunctions`] past 254 kernels, and whatever else the
/// registry refuses (a kernel name twice).
pub fn ucode_lib(name: &str, kernels: &[String]) -> Result<UcodeLib, UcodeLibError> {
    let mut registry = UcodeLibRegistry::new();
    let version = ucode_version();
    let libraries: Vec<String> = (0..CORES).map(|cpu| library_file_name(name, cpu)).collect();
    for (cpu, library) in libraries.iter().enumerate() {
        registry.add_lib_file(library, &version, ISA_VERSION, false, cpu as u8, CORES as u8)?;
    }
    for kernel in kernels {
        let id = registry.allocate_function_id()?;
        for library in &libraries {
            registry.add_function(library, kernel, id)?;
        }
    }
    Ok(registry.into_ucode_lib())
}

/// The kernels the 8 images register, in registration order: the simulated loader
/// boots them with an empty job and reports what `register_funcs` registered.
///
/// # Errors
/// [`PackageError::Entry`] if a core's `entry_func` fails, [`PackageError::NoKernels`],
/// [`PackageError::KernelsDiffer`], or the loader could not run.
pub fn registered_kernels(library: &Images) -> Result<Vec<String>, PackageError> {
    // No op: the loader reports every core's entry and registrations, then ends.
    let job = Job::new(library, CORES).map_err(PackageError::Job)?;
    let report = device::run(library, &job).map_err(PackageError::Run)?;
    let output = || format!("{}{}", report.outcome.stdout, report.outcome.stderr);
    let names = |core: usize| report.core(core as u32).kernels.into_iter().map(|k| k.name).collect::<Vec<_>>();
    for core in 0..CORES {
        let status = report.core(core as u32).entry_status;
        if status != Some(0) || !report.done {
            return Err(PackageError::Entry { core, status, output: output() });
        }
    }
    let first = names(0);
    if first.is_empty() {
        return Err(PackageError::NoKernels);
    }
    for core in 1..CORES {
        let other = names(core);
        if other != first {
            return Err(PackageError::KernelsDiffer { core, first, other });
        }
    }
    Ok(first)
}

/// Compiles the C `sources` of library `name` in `work` (with the library's own
/// `cflags` after the build's), links them with the runtime, and writes the 8 images
/// as `out/core<i>.elf`.
///
/// # Errors
/// [`PackageError::CBuild`] naming the step that failed, or [`PackageError::Build`]
/// when the runtime does not build.
pub fn compile_and_link_c(
    tools: &Toolchain,
    name: &str,
    sources: &[PathBuf],
    cflags: &[String],
    work: &Path,
    out: &Path,
) -> Result<Images, PackageError> {
    if !Path::new(Llvm::CLANG).is_file() {
        return Err(PackageError::CBuild(format!(
            "{} is missing: install Debian's clang-22 (qemu/setup.sh)",
            Llvm::CLANG
        )));
    }
    fs::create_dir_all(work)?;
    let features = target_features(tools)?;
    let objects = sources
        .iter()
        .map(|source| compile_c(tools, source, cflags, work, &features))
        .collect::<Result<Vec<_>, _>>()?;
    link_images(tools, name, work, &objects, &[], out)
}

/// Links `objects` with the runtime's `libneuroncustomop.a` into the 8 images of
/// library `name`, written as `out/core<i>.elf` by the per-core link; `extra` goes to
/// the linker (C++ libraries keep the runtime's C++ support symbols with it).
///
/// # Errors
/// [`PackageError::CBuild`] when the link fails, [`PackageError::Build`] when the
/// runtime does not build.
pub(crate) fn link_images(
    tools: &Toolchain,
    name: &str,
    work: &Path,
    objects: &[PathBuf],
    extra: &[String],
    out: &Path,
) -> Result<Images, PackageError> {
    let runtime = runtime_archive(tools)?;
    let mut link = Command::new(tools.home.link_cores());
    link.args(["--gc-sections", "-z", "noexecstack", "--no-warn-rwx-segments", "-L"])
        .arg(&runtime.scripts) // before -T: ld looks the script up in the paths given so far
        .arg("-Tcore0.x")
        .args(extra)
        .arg(format!("--neuron-image-dir={}", out.display()))
        .arg("-o")
        .arg(work.join(format!("{name}.elf")))
        .args(objects)
        .arg(&runtime.archive);
    // What else changes link-cores' work: its linker and the cores it links for, passed
    // on as they are, so the step's key holds them.
    for variable in [LINKER_VARIABLE, CORES_VARIABLE] {
        if let Some(value) = std::env::var_os(variable) {
            link.env(variable, value);
        }
    }
    let linker = std::env::var_os(LINKER_VARIABLE).map_or_else(|| PathBuf::from(LINKER), PathBuf::from);
    let cores = std::env::var(CORES_VARIABLE).ok().and_then(|v| v.parse().ok()).unwrap_or(CORES);
    let mut inputs = objects.to_vec();
    inputs.extend([runtime.archive.clone(), runtime.scripts.clone()]);
    let images = (0..cores).map(|core| out.join(format!("core{core}.elf"))).collect();
    let stamp = work.join(format!("{name}.link-stamp"));
    Step::new(&link, &[linker], inputs, images, stamp).run(|| run(&mut link))?;
    images::read_dir(name, out).map_err(PackageError::Build)
}

/// The variable naming the Xtensa linker `linker/link-cores` runs, and its default.
const LINKER_VARIABLE: &str = "XTENSA_LD";
const LINKER: &str = "xtensa-lx106-elf-ld";
/// The variable limiting how many cores `linker/link-cores` links images for (all 8
/// unless set).
const CORES_VARIABLE: &str = "NEURON_CORES";

/// The runtime's static library for the device, and the folder of the linker scripts
/// its build wrote.
struct RuntimeArchive {
    archive: PathBuf,
    scripts: PathBuf,
    /// A checkout's: the device builds' lock, shared, so no build replaces the archive
    /// before the link that reads it is done.
    _in_use: Option<neuroncustomop_machine::lock::Lock>,
}

/// The runtime's archive and linker scripts: an installed home's prebuilt ones
/// (`prebuilt/lib/`), or built in a checkout ([`build_runtime_archive`]).
fn runtime_archive(tools: &Toolchain) -> Result<RuntimeArchive, PackageError> {
    match tools.home.prebuilt() {
        Some(prebuilt) => {
            let scripts = prebuilt.join("lib");
            Ok(RuntimeArchive { archive: scripts.join(RUNTIME_ARCHIVE), scripts, _in_use: None })
        }
        None => build_runtime_archive(tools),
    }
}

/// Builds, in a checkout, the runtime's archive for the device (with the device's
/// `core` and `alloc`: about a minute of one core on a fresh checkout), which the
/// first C, C++ or Rust library's build would otherwise wait for; nothing to do in an
/// installed home (it is prebuilt) or when it is up to date. `sim setup` runs it
/// beside the host tier's builds.
///
/// # Errors
/// The runtime's build failed.
pub fn prebuild_runtime(tools: &Toolchain) -> Result<(), PackageError> {
    runtime_archive(tools).map(drop)
}

/// The runtime's static library's file name.
pub const RUNTIME_ARCHIVE: &str = "libneuroncustomop.a";

/// Writes the runtime an installed home holds prebuilt into `dir` (its `prebuilt/lib/`):
/// `libneuroncustomop.a` built in the checkout, and the linker scripts a library's
/// link reads (`core<i>.x`, i = 0..8, and the `neuroncustomop.x` they include).
///
/// # Errors
/// The runtime's build, or copying, failed.
pub fn stage_runtime(tools: &Toolchain, dir: &Path) -> Result<(), PackageError> {
    let runtime = runtime_archive(tools)?;
    fs::create_dir_all(dir)?;
    fs::copy(&runtime.archive, dir.join(RUNTIME_ARCHIVE))?;
    let scripts = (0..CORES).map(|core| format!("core{core}.x")).chain(["neuroncustomop.x".to_owned()]);
    for script in scripts {
        fs::copy(runtime.scripts.join(&script), dir.join(&script))?;
    }
    Ok(())
}

/// Builds the runtime library for Xtensa and finds, in cargo's JSON messages, the
/// `libneuroncustomop.a` it wrote and its build script's output folder (the scripts
/// `core<i>.x` and the assembled `.S` files, which the archive already holds).
fn build_runtime_archive(tools: &Toolchain) -> Result<RuntimeArchive, PackageError> {
    let building = images::build_lock(&tools.home)?;
    // The root package's library alone, as a Rust library's build compiles it.
    let output = images::xtensa_cargo(tools)
        .args(["build", "--release", "--lib", "--message-format=json-render-diagnostics"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| PackageError::CBuild(format!("cannot run {}: {e}", toolchain::CARGO)))?;
    if !output.status.success() {
        return Err(PackageError::Build(BuildError::Cargo(format!("cargo exited with {}", output.status))));
    }
    let (mut archive, mut scripts) = (None, None);
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let is_runtime = message["package_id"].as_str().is_some_and(|id| id.contains("#neuroncustomop@"));
        match message["reason"].as_str() {
            Some("compiler-artifact") if is_runtime => {
                let files = message["filenames"].as_array().into_iter().flatten().filter_map(|f| f.as_str());
                archive = files.map(PathBuf::from).find(|f| f.extension().is_some_and(|ext| ext == "a")).or(archive);
            }
            Some("build-script-executed") if is_runtime => scripts = message["out_dir"].as_str().map(PathBuf::from),
            _ => {}
        }
    }
    drop(building);
    // Another build may come between: the archive is then its build's, whole.
    let in_use = images::build_lock_shared(&tools.home)?;
    match (archive, scripts) {
        (Some(archive), Some(scripts)) => Ok(RuntimeArchive { archive, scripts, _in_use: Some(in_use) }),
        _ => Err(PackageError::CBuild("cargo did not report libneuroncustomop.a and its build script's folder".into())),
    }
}

/// The ISA features of `.cargo/xtensa-gpsimd-none-elf.json`, so C, Rust and assembly
/// agree on the core (the windowed ABI among them).
pub(crate) fn target_features(tools: &Toolchain) -> Result<Vec<String>, PackageError> {
    let spec = tools.home.target_spec();
    let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&spec)?)
        .map_err(|e| PackageError::CBuild(format!("{}: {e}", spec.display())))?;
    let features =
        json["features"].as_str().ok_or_else(|| PackageError::CBuild(format!("{} has no features", spec.display())))?;
    Ok(features.split(',').map(str::to_owned).collect())
}

/// `source` to an object in `work`: clang to assembly, llvm-mc to the object
/// ([`compile_to_object`]).
fn compile_c(
    tools: &Toolchain,
    source: &Path,
    cflags: &[String],
    work: &Path,
    features: &[String],
) -> Result<PathBuf, PackageError> {
    let stem = source.file_stem().expect("a .c file has a stem").to_string_lossy();
    let (assembly, object) = (work.join(format!("{stem}.s")), work.join(format!("{stem}.o")));
    let clang = |features: &[String]| {
        let mut clang = xtensa_clang(Llvm::CLANG, tools, features);
        clang.args(["-std=c11", "-g", "-Wall", "-Wextra", "-Werror"]).args(cflags);
        clang.arg(source).arg("-o").arg(&assembly);
        clang
    };
    compile_to_object(clang, source, &assembly, &object, features)?;
    Ok(object)
}

/// The clang command the C and the C++ builds both start from: `compiler` (C or C++)
/// for Xtensa with `features`, freestanding, to assembly (`-S`, which llvm-mc then
/// assembles), a section per function and datum for the link's garbage collection,
/// and the runtime's headers. The caller adds its language's flags, the source and
/// `-o`.
pub(crate) fn xtensa_clang(compiler: &str, tools: &Toolchain, features: &[String]) -> Command {
    let mut clang = Command::new(compiler);
    clang
        .args(["--target=xtensa-none-elf", "-Os", "-ffreestanding", "-nostdlibinc", "-S"])
        .args(["-ffunction-sections", "-fdata-sections"])
        // As rustc does: a frame pointer would make clang write `.cfi_def_cfa a7`,
        // which llvm-mc 22 cannot parse for Xtensa.
        .arg("-fomit-frame-pointer")
        // The C library's headers (<stdio.h>, <string.h>, ...) first, then the runtime's.
        .arg("-I")
        .arg(tools.home.include_dir().join("libc"))
        .arg("-I")
        .arg(tools.home.include_dir());
    for feature in features {
        clang.args(["-Xclang", "-target-feature", "-Xclang", feature]);
    }
    clang
}

/// Runs `compiler(features)` (C or C++ to `assembly`), then llvm-mc to `object`.
///
/// A source whose float code LLVM 22 cannot compile for the FPU (docs/toolchain.md,
/// "LLVM defects" 4 and 5: the compiler aborts with "Cannot select") is compiled again
/// without `+fp`, with a warning, as the Rust build does for a crate.
///
/// # Errors
/// [`PackageError::CBuild`] with the compiler's diagnostics, or naming the failed step.
pub(crate) fn compile_to_object(
    compiler: impl Fn(&[String]) -> Command,
    source: &Path,
    assembly: &Path,
    object: &Path,
    features: &[String],
) -> Result<(), PackageError> {
    let mut first = compiler(features);
    let program = first.get_program().to_string_lossy().into_owned();
    let first = first.output().map_err(|e| PackageError::CBuild(format!("cannot run {program}: {e}")))?;
    let diagnostics = String::from_utf8_lossy(&first.stderr);
    if !first.status.success() && diagnostics.contains("Cannot select") && features.iter().any(|f| f == "+fp") {
        eprintln!(
            "warning: LLVM 22 cannot compile the float code of {} for the FPU (an f16 conversion or a select \
             between two float constants: docs/toolchain.md, \"LLVM defects\"); it is built with software \
             floating point instead. Results are exact; instruction counts of its float code are not the device's.",
            source.display()
        );
        let soft: Vec<String> = features.iter().filter(|f| *f != "+fp").cloned().collect();
        run(&mut compiler(&soft))?;
    } else {
        if !first.status.success() {
            return Err(PackageError::CBuild(format!(
                "{program} failed on {} ({}):\n{}",
                source.display(),
                first.status,
                diagnostics.trim_end()
            )));
        }
        eprint!("{diagnostics}");
    }
    run(Command::new(Llvm::MC)
        .args(["-triple=xtensa-none-elf", &format!("-mattr={}", features.join(",")), "-filetype=obj"])
        .arg(assembly)
        .arg("-o")
        .arg(object))
}

/// Runs a build step; its diagnostics go to stderr.
fn run(command: &mut Command) -> Result<(), PackageError> {
    process::status(command).map_err(|failed| PackageError::CBuild(failed.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernels(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn every_core_gets_every_kernel_under_one_dense_id() {
        let lib = ucode_lib("relu", &kernels(&["relu", "relu_tcm", "relu_multicore"])).unwrap();
        assert_eq!(lib.libraries.len(), CORES);
        for (cpu, library) in lib.libraries.iter().enumerate() {
            assert_eq!(library.library, format!("librelu_cpu{cpu}.elf"));
            assert_eq!((library.cpu_id as usize, library.total_cpus as usize, library.is_builtin), (cpu, CORES, false));
            assert_eq!(library.ulib_to_ucode_version, ucode_version());
            assert_eq!(library.ulib_to_isa_version, ISA_VERSION);
            let bound: Vec<(&str, u8)> =
                library.functions.iter().map(|f| (f.name.as_str(), f.sub_opcode.get())).collect();
            assert_eq!(bound, [("relu", 0), ("relu_tcm", 1), ("relu_multicore", 2)]);
        }
        assert_eq!(UcodeLib::from_json(&lib.to_json().unwrap()).unwrap(), lib);
    }

    #[test]
    fn the_version_is_the_runtimes_text_without_its_nul() {
        let version = ucode_version();
        assert!(
            version.starts_with("neuroncustomop ") && version.ends_with("(libneuroncustomop 1.21.1.0)"),
            "{version}"
        );
    }

    #[test]
    fn at_most_254_kernels_are_packaged() {
        let names: Vec<String> = (0..255).map(|i| format!("k{i}")).collect();
        assert!(ucode_lib("big", &names[..254]).is_ok());
        assert!(matches!(ucode_lib("big", &names), Err(UcodeLibError::TooManyFunctions)));
    }

    #[test]
    fn a_kernel_name_twice_is_refused() {
        assert!(matches!(
            ucode_lib("twice", &kernels(&["a", "b", "a"])),
            Err(UcodeLibError::ConflictingFunctionId { .. } | UcodeLibError::FunctionRebound { .. })
        ));
    }

    #[test]
    fn opening_a_package_checks_its_files() {
        let dir = std::env::temp_dir().join(format!("opflow-open-{}", std::process::id())).join("tiny");
        fs::create_dir_all(&dir).unwrap();
        let lib = ucode_lib("tiny", &kernels(&["k"])).unwrap();
        fs::write(dir.join("ucode_lib.json"), lib.to_json().unwrap()).unwrap();
        assert!(
            matches!(Package::open(&dir), Err(PackageError::Malformed(what)) if what.contains("libtiny_cpu0.elf is missing"))
        );
        for cpu in 0..CORES {
            fs::write(dir.join(library_file_name("tiny", cpu)), b"").unwrap();
        }
        let package = Package::open(&dir).unwrap();
        assert_eq!((package.name(), package.kernels()), ("tiny", vec!["k"]));
        assert_eq!(package.function_id("k"), FunctionId::new(0));
        assert_eq!(package.function_id("other"), None);

        let renamed = lib.to_json().unwrap().replace("libtiny_cpu3.elf", "libother_cpu3.elf");
        fs::write(dir.join("ucode_lib.json"), renamed).unwrap();
        assert!(
            matches!(Package::open(&dir), Err(PackageError::Malformed(what)) if what.contains("libother_cpu3.elf"))
        );
        let older =
            lib.to_json().unwrap().replace(&ucode_version(), "neuroncustomop 0.0.1 (libneuroncustomop 1.21.1.0)");
        fs::write(dir.join("ucode_lib.json"), older).unwrap();
        let refused = Package::open(&dir).unwrap_err().to_string();
        assert!(
            refused.contains("was built by neuroncustomop 0.0.1") && refused.contains("build it again"),
            "{refused}"
        );
        fs::write(dir.join("ucode_lib.json"), "{}").unwrap();
        assert!(matches!(Package::open(&dir), Err(PackageError::UcodeLib(_))));
        fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }
}
