//! An op author's own project, anywhere on disk: a kernel library in Rust (a Cargo
//! package whose binary is the device image), in C (`src/*.c`) or in C++ on the AWS
//! torch API (`customop.json`), built for the device with the home's Xtensa set-up
//! ([`neuroncustomop_machine::home`]) and packaged beside it.
//!
//! The set-up is the home's: `.cargo/xtensa.toml`, the target specification, the LLVM
//! 22 workaround in `.cargo/llvm-190204/`, the per-core linker, and an installed home's
//! prebuilt runtime; so a project needs no copy of them.
//!
//! What a project folder holds (`ncop new` writes all of it):
//! - Rust: `Cargo.toml` with a binary that needs the feature `device`, depending on
//!   the runtime (`neuroncustomop`) and, for its tests, on this crate; the
//!   binary is `#![no_std]`, `#![no_main]`, with a `neuroncustomop::kernels!` table.
//! - C: the kernels in `src/*.c` (against `neuroncustomop.h`), linked with the
//!   runtime's `libneuroncustomop.a`, and an optional [`LIBRARY_MANIFEST`],
//!   `neuroncustomop.toml`, for its name, `multicore` and `cflags`; no `Cargo.toml` (one
//!   of an older project still gives the name and `multicore`, when there is no
//!   `neuroncustomop.toml`). Its tests are a pytest file or `ncop run --expect`.
//! - C++: a `customop.json` naming its compute and shape sources, as the vendor's
//!   `custom_op.load` does (`crate::cxx`).
//!
//! A library whose every op splits its work over the 8 cores says so, and its calls then
//! run on 8 cores unless they say otherwise ([`Project::multicore`]): a C++ library with
//! `"multicore": true` in its `customop.json`, a C library with `multicore = true` in its
//! `neuroncustomop.toml`, a Rust library in its `Cargo.toml`:
//!
//! ```toml
//! [package.metadata.neuroncustomop]
//! multicore = true
//! ```
//!
//! Outputs go to `target/neuroncustomop/` in the project: `images/core<i>.elf`, and
//! the package in `package/<name>/` (the built-in examples of a checkout's `examples/`
//! keep theirs in the checkout's `target/images/<name>/` and `target/package/<name>/`).
//! A Rust library's device build shares one Xtensa target folder with every project
//! built with the same home ([`neuroncustomop_machine::images::xtensa_target_dir`]), so
//! `core` and `alloc` are compiled once for all of them.

use crate::cxx;
use crate::package::{self, Package, PackageError};
use crate::publish;
use neuroncustomop_machine::home::Home;
use neuroncustomop_machine::images::{self, BuildError, Images};
use neuroncustomop_machine::toolchain::{self, Toolchain};
use serde::Deserialize;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How a project's kernels are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Language {
    /// A Cargo binary crate.
    Rust {
        /// The binary target that is the device image.
        bin: String,
        /// Whether the package has a `device` feature (the binary requires it, so
        /// host builds and tests skip the device image).
        device_feature: bool,
    },
    /// The `.c` files of `src/`, in name order.
    C(Vec<PathBuf>),
    /// A C++ library on the AWS torch API: compute and shape sources named by its
    /// `customop.json` (`crate::cxx`).
    Cxx,
}

/// An op author's project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Its folder.
    pub dir: PathBuf,
    /// The library's name: the packaged images are `lib<name>_cpu<i>.elf`.
    pub name: String,
    /// Rust, C or C++.
    pub language: Language,
    /// Where the build writes the 8 images (`core<i>.elf`).
    pub image_dir: PathBuf,
    /// Where [`Project::package`] writes the package.
    pub package_dir: PathBuf,
    /// Scratch for the C build's objects.
    pub work_dir: PathBuf,
    /// Every op splits its work over all 8 cores, so calls run on 8 unless they say
    /// otherwise: `multicore = true` under `[package.metadata.neuroncustomop]` in the
    /// `Cargo.toml`, or a C++ library's `"multicore": true` in its `customop.json`.
    pub multicore: bool,
    /// A C library's compiler flags ([`LIBRARY_MANIFEST`]'s `cflags`).
    pub cflags: Vec<String>,
}

/// The manifest of a C library: `neuroncustomop.toml` beside its `src/`.
pub const LIBRARY_MANIFEST: &str = "neuroncustomop.toml";

/// What a C library's [`LIBRARY_MANIFEST`] says (every key optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LibraryManifest {
    /// The library's name (default: its folder's, `-` read as `_`).
    name: Option<String>,
    /// Every op runs on all 8 cores unless a call says otherwise.
    #[serde(default)]
    multicore: bool,
    /// Compiler flags after the build's own (`-DTILE=128`).
    #[serde(default)]
    cflags: Vec<String>,
}

/// What a `Cargo.toml` says to this tool: its `[package.metadata.neuroncustomop]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CargoMetadata {
    /// Every op runs on all 8 cores unless a call says otherwise.
    #[serde(default)]
    multicore: bool,
}

/// Why a project could not be read, built or packaged.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// Reading the project folder failed.
    #[error("reading {}", path.display())]
    Io {
        /// What was read.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// `cargo metadata` failed or said something unexpected.
    #[error("reading {}: {what}", manifest.display())]
    Manifest {
        /// The `Cargo.toml`.
        manifest: PathBuf,
        /// What went wrong.
        what: String,
    },
    /// The Rust package has no binary target to build as the device image.
    #[error("{} has no binary target: the device image is a `[[bin]]` (see `ncop new`)", manifest.display())]
    NoBinary {
        /// The `Cargo.toml`.
        manifest: PathBuf,
    },
    /// The device build failed.
    #[error("building {name} for the device")]
    Build {
        /// The library.
        name: String,
        /// Why.
        #[source]
        source: BuildError,
    },
    /// No built-in example has that name; the names there are.
    #[error("no example named {} in examples/; there are: {}", .0, .1.join(", "))]
    UnknownExample(String, Vec<String>),
    /// Packaging failed (the C build among it).
    #[error("packaging {name}")]
    Package {
        /// The library.
        name: String,
        /// Why.
        #[source]
        source: PackageError,
    },
}

impl Project {
    /// The project in `dir`: C when `src/` holds `.c` files, else Rust when `dir` has a
    /// `Cargo.toml`; `None` when it is neither.
    ///
    /// # Errors
    /// [`ProjectError::Io`] or [`ProjectError::Manifest`] when the folder or its
    /// `Cargo.toml` cannot be read, [`ProjectError::NoBinary`].
    pub fn open(dir: &Path) -> Result<Option<Self>, ProjectError> {
        let dir = dir.canonicalize().map_err(|source| ProjectError::Io { path: dir.into(), source })?;
        let manifest = dir.join("Cargo.toml");
        let c_sources = c_sources(&dir.join("src"))?;
        let library_manifest = library_manifest(&dir)?;
        // A C library with its own manifest needs no cargo (an installed home's C
        // build runs without Rust).
        let c_with_manifest = library_manifest.is_some() && !c_sources.is_empty();
        let metadata = if manifest.is_file() && !c_with_manifest { Some(metadata(&manifest)?) } else { None };
        let folder_name = || dir.file_name().map(|n| n.to_string_lossy().replace('-', "_")).unwrap_or_default();
        let language = if dir.join(cxx::MANIFEST).is_file() {
            Language::Cxx
        } else if !c_sources.is_empty() {
            Language::C(c_sources)
        } else if let Some(package) = &metadata {
            let bin = package["targets"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|target| target["kind"].as_array().is_some_and(|kinds| kinds.iter().any(|k| k == "bin")))
                .and_then(|target| target["name"].as_str())
                .ok_or_else(|| ProjectError::NoBinary { manifest: manifest.clone() })?;
            let device_feature = package["features"].get("device").is_some();
            Language::Rust { bin: bin.into(), device_feature }
        } else {
            return Ok(None);
        };
        let library_manifest = library_manifest.filter(|_| matches!(language, Language::C(_))).unwrap_or_default();
        let name = match &language {
            Language::Rust { bin, .. } => bin.clone(),
            Language::C(_) if library_manifest.name.is_some() => library_manifest.name.clone().unwrap_or_default(),
            Language::C(_) | Language::Cxx => metadata
                .as_ref()
                .and_then(|package| package["name"].as_str())
                .map(|name| name.replace('-', "_"))
                .unwrap_or_else(folder_name),
        };
        let declared = match &metadata {
            Some(package) => cargo_metadata(package, &manifest)?,
            None => CargoMetadata::default(),
        };
        // A C++ library's customop.json is read again, and checked, when it is built.
        let cxx_multicore =
            language == Language::Cxx && cxx::Library::open(&dir).is_ok_and(|library| library.manifest.multicore);
        let multicore = declared.multicore || cxx_multicore || library_manifest.multicore;
        let mut name = name;
        let checkout = Home::locate().ok().filter(|home| package::is_example(home, &dir));
        let (image_dir, package_dir, work_dir) = if let Some(checkout) = checkout.as_ref().and_then(Home::checkout) {
            // A built-in example: named after its folder, its outputs where `cargo sim`
            // has always put them.
            name = dir.file_name().expect("in examples/").to_string_lossy().into_owned();
            (
                checkout.join("target/images").join(&name),
                package::package_dir(checkout, &name),
                checkout.join("target/c-examples").join(&name),
            )
        } else {
            let out = dir.join("target/neuroncustomop");
            (out.join("images"), out.join("package").join(&name), out.join("c"))
        };
        let cflags = library_manifest.cflags;
        Ok(Some(Self { dir, name, language, image_dir, package_dir, work_dir, multicore, cflags }))
    }

    /// The built-in example `name` (`examples/<name>/` of the checkout the home is),
    /// with its outputs where `cargo sim` has always put them: `target/images/<name>/`
    /// and `target/package/<name>/`. `None` when there is no such example (an
    /// installed home has none).
    ///
    /// # Errors
    /// As [`Project::open`].
    pub fn example(name: &str) -> Result<Option<Self>, ProjectError> {
        let Some(examples) = examples_dir() else { return Ok(None) };
        let dir = examples.join(name);
        if name.is_empty() || name.contains('/') || !dir.is_dir() {
            return Ok(None);
        }
        Self::open(&dir)
    }

    /// The names of the built-in examples (the libraries among a checkout's `examples/`
    /// folders), sorted; none in an installed home.
    pub fn examples() -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(examples_dir().unwrap_or_default())
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter(|entry| matches!(Self::open(&entry.path()), Ok(Some(_))))
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Builds the 8 device images, with the project's lock held ([`publish::Lock`]).
    ///
    /// # Errors
    /// [`ProjectError::Build`] (cargo's or clang's diagnostics went to stderr).
    pub fn build(&self) -> Result<Images, ProjectError> {
        let _turn = self.lock()?;
        self.build_images()
    }

    /// The project's lock, which its builds and packagings take turns through.
    fn lock(&self) -> Result<publish::Lock, ProjectError> {
        let path = publish::lock_path(&self.package_dir);
        publish::Lock::exclusive(&path).map_err(|source| ProjectError::Io { path, source })
    }

    /// Builds the 8 device images; the caller holds the project's lock.
    fn build_images(&self) -> Result<Images, ProjectError> {
        let build_error = |source| ProjectError::Build { name: self.name.clone(), source };
        let tools = Toolchain::locate().map_err(|e| build_error(BuildError::Toolchain(e)))?;
        let image_dir = &self.image_dir;
        match &self.language {
            Language::Rust { bin, device_feature } => {
                Toolchain::rust().map_err(|e| build_error(BuildError::Toolchain(e)))?;
                let mut cargo = images::xtensa_cargo(&tools);
                cargo.args(["rustc", "--release", "--manifest-path"]).arg(self.dir.join("Cargo.toml"));
                cargo.args(["--bin", bin]);
                if *device_feature {
                    cargo.args(["--features", "device"]);
                }
                // Core 0's linker script (the others are linker/link-cores' work), and
                // the folder the per-core link writes the images to. Both are rustc
                // arguments of this crate only, so cargo relinks when they change.
                cargo.args(["--", "-C", "link-arg=-Tcore0.x", "-C"]);
                cargo.arg(format!("link-arg=--neuron-image-dir={}", image_dir.display()));
                let _building = images::build_lock(&tools.home).map_err(|e| build_error(BuildError::Io(e)))?;
                let status = cargo
                    .status()
                    .map_err(|e| build_error(BuildError::Cargo(format!("cannot run {}: {e}", toolchain::CARGO))))?;
                if !status.success() {
                    return Err(build_error(BuildError::Cargo(format!("cargo exited with {status}"))));
                }
                images::read_dir(&self.name, image_dir).map_err(build_error)
            }
            Language::C(sources) => {
                package::compile_and_link_c(&tools, &self.name, sources, &self.cflags, &self.work_dir, image_dir)
                    .map_err(|source| ProjectError::Package { name: self.name.clone(), source })
            }
            Language::Cxx => cxx::Library::open(&self.dir)
                .and_then(|library| cxx::build_images(&tools, &library, image_dir))
                .map_err(|source| ProjectError::Package { name: self.name.clone(), source }),
        }
    }

    /// Builds the images and packages them: a new version of the package, published
    /// as [`Project::package_dir`] ([`publish`]), while the project's lock is held, so
    /// processes and threads packaging it at once take turns. The package returned is
    /// that version's folder, which no later packaging changes.
    ///
    /// # Errors
    /// [`ProjectError::Build`] or [`ProjectError::Package`].
    pub fn package(&self) -> Result<Package, ProjectError> {
        let package_error = |source| ProjectError::Package { name: self.name.clone(), source };
        let io_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ProjectError::Io { path, source }
        };
        let _turn = self.lock()?;
        let built = self.build_images()?;
        if let Some(published) = self.published_as_built(&built) {
            return Ok(published);
        }
        let version = publish::new_version(&self.package_dir).map_err(io_error(&self.package_dir))?;
        let package = package::package_into(&self.name, &built, &version).map_err(package_error)?;
        if self.language == Language::Cxx {
            // The build made the shape driver; it goes into the package with the images.
            let tools = Toolchain::locate()
                .map_err(|e| ProjectError::Build { name: self.name.clone(), source: BuildError::Toolchain(e) })?;
            let driver = cxx::Library::open(&self.dir).map_err(package_error)?.shape_driver_path(&tools);
            package::copy_whole(&driver, &package.dir.join(package::SHAPE_DRIVER))
                .map_err(|e| package_error(PackageError::Io(e)))?;
        }
        publish::publish(&self.package_dir, &version).map_err(io_error(&self.package_dir))?;
        Ok(package)
    }
}

impl Project {
    /// The published package's version folder, when it holds the very images of
    /// `built` (hard links to the same files: a build replaces its images by renaming,
    /// never rewrites them, so the same file has the same contents) and, for C++, the
    /// shape driver the build made: packaging again would write the same package,
    /// after booting the images once more to read their kernels. `None` otherwise,
    /// or when it cannot tell. Called with the project's lock held.
    fn published_as_built(&self, built: &Images) -> Option<Package> {
        let package = Package::open(&fs::canonicalize(&self.package_dir).ok()?).ok()?;
        let same_file = |a: &Path, b: &Path| {
            let (a, b) = (fs::metadata(a).ok()?, fs::metadata(b).ok()?);
            Some(a.dev() == b.dev() && a.ino() == b.ino())
        };
        for (packaged, image) in package.images.cores.iter().zip(&built.cores) {
            same_file(packaged, image)?.then_some(())?;
        }
        if self.language == Language::Cxx {
            let tools = Toolchain::locate().ok()?;
            let driver = cxx::Library::open(&self.dir).ok()?.shape_driver_path(&tools);
            (fs::read(driver).ok()? == fs::read(package.dir.join(package::SHAPE_DRIVER)).ok()?).then_some(())?;
        }
        Some(package)
    }
}

/// The [`LIBRARY_MANIFEST`] of the project in `dir`, when it has one.
///
/// # Errors
/// [`ProjectError::Io`] when it cannot be read, [`ProjectError::Manifest`] for a key
/// it does not know or a value of the wrong type.
fn library_manifest(dir: &Path) -> Result<Option<LibraryManifest>, ProjectError> {
    let path = dir.join(LIBRARY_MANIFEST);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ProjectError::Io { path, source }),
    };
    toml::from_str(&text).map(Some).map_err(|e| ProjectError::Manifest {
        manifest: path,
        what: format!("{e}(it takes `name = \"...\"`, `multicore = true` or `false`, `cflags = [\"...\"]`)"),
    })
}

/// The checkout's `examples/`, when the home is a checkout.
fn examples_dir() -> Option<PathBuf> {
    Home::locate().ok().and_then(|home| home.examples_dir())
}

/// The `.c` files of `dir` in name order (none when `dir` does not exist).
fn c_sources(dir: &Path) -> Result<Vec<PathBuf>, ProjectError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(ProjectError::Io { path: dir.into(), source }),
    };
    let mut sources: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "c"))
        .collect();
    sources.sort();
    Ok(sources)
}

/// The `[package.metadata.neuroncustomop]` table of `package` (`cargo metadata`'s), or
/// its defaults when there is none.
///
/// # Errors
/// [`ProjectError::Manifest`] for a key it does not know or a value of the wrong type.
fn cargo_metadata(package: &serde_json::Value, manifest: &Path) -> Result<CargoMetadata, ProjectError> {
    match package["metadata"].get("neuroncustomop") {
        None => Ok(CargoMetadata::default()),
        Some(table) => CargoMetadata::deserialize(table).map_err(|e| ProjectError::Manifest {
            manifest: manifest.into(),
            what: format!("[package.metadata.neuroncustomop]: {e} (it takes `multicore = true` or `false`)"),
        }),
    }
}

/// The package `manifest` describes, from `cargo metadata` (which needs no network
/// with `--no-deps`).
fn metadata(manifest: &Path) -> Result<serde_json::Value, ProjectError> {
    let error = |what: String| ProjectError::Manifest { manifest: manifest.into(), what };
    let output = std::process::Command::new(toolchain::CARGO)
        .args(["metadata", "--no-deps", "--format-version", "1", "--manifest-path"])
        .arg(manifest)
        .env_remove("RUSTC_WRAPPER")
        .output()
        .map_err(|e| error(format!("cannot run {}: {e}", toolchain::CARGO)))?;
    if !output.status.success() {
        return Err(error(String::from_utf8_lossy(&output.stderr).trim().to_string()));
    }
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| error(format!("cargo metadata's output: {e}")))?;
    let root = manifest.canonicalize().map_err(|e| error(e.to_string()))?;
    json["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|package| package["manifest_path"].as_str().is_some_and(|path| Path::new(path) == root))
        .cloned()
        .ok_or_else(|| error("no package: a workspace root is not a project; open the package's folder".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("project-test-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("src")).unwrap();
        dir
    }

    #[test]
    fn c_sources_make_a_c_project_named_after_its_folder() {
        let dir = scratch("my-c-op");
        fs::write(dir.join("src/b.c"), "").unwrap();
        fs::write(dir.join("src/a.c"), "").unwrap();
        fs::write(dir.join("src/notes.txt"), "").unwrap();
        let project = Project::open(&dir).unwrap().unwrap();
        assert_eq!(project.name, format!("project_test_{}_my_c_op", std::process::id()));
        let dir = dir.canonicalize().unwrap();
        assert_eq!(project.language, Language::C(vec![dir.join("src/a.c"), dir.join("src/b.c")]));
        assert_eq!(project.package_dir, dir.join("target/neuroncustomop/package").join(&project.name));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_c_librarys_manifest_names_it_declares_it_multicore_and_adds_flags_and_needs_no_cargo_toml() {
        let dir = scratch("c-manifest");
        fs::write(dir.join("src/k.c"), "").unwrap();
        fs::write(dir.join(LIBRARY_MANIFEST), "name = \"scale\"\nmulticore = true\ncflags = [\"-DTILE=128\"]\n")
            .unwrap();
        // A Cargo.toml beside it is not read (it would need cargo): this one is not even valid.
        fs::write(dir.join("Cargo.toml"), "not toml [").unwrap();
        let project = Project::open(&dir).unwrap().unwrap();
        assert_eq!((project.name.as_str(), project.multicore), ("scale", true));
        assert_eq!(project.cflags, ["-DTILE=128"]);
        fs::write(dir.join(LIBRARY_MANIFEST), "multi_core = true\n").unwrap();
        let error = Project::open(&dir).unwrap_err().to_string();
        assert!(error.contains("neuroncustomop.toml") && error.contains("multicore = true"), "{error}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_rust_project_is_its_binary() {
        let dir = scratch("rust");
        fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"my-op\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[features]\ndevice = []\n\n\
             [[bin]]\nname = \"my_op\"\npath = \"src/kernels.rs\"\nrequired-features = [\"device\"]\n\n[workspace]\n",
        )
        .unwrap();
        fs::write(dir.join("src/kernels.rs"), "").unwrap();
        let project = Project::open(&dir).unwrap().unwrap();
        assert_eq!(project.name, "my_op");
        assert_eq!(project.language, Language::Rust { bin: "my_op".into(), device_feature: true });
        fs::remove_dir_all(&dir).unwrap();
        let empty = scratch("empty");
        assert_eq!(Project::open(&empty).unwrap(), None);
        fs::remove_dir_all(&empty).unwrap();
    }

    #[test]
    fn a_cargo_toml_declares_a_library_multicore_and_a_misspelt_key_is_an_error() {
        let dir = scratch("multicore");
        let manifest = |metadata: &str| {
            format!(
                "[package]\nname = \"my-op\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n{metadata}\n\
                 [[bin]]\nname = \"my_op\"\npath = \"src/kernels.rs\"\n\n[workspace]\n"
            )
        };
        fs::write(dir.join("src/kernels.rs"), "").unwrap();
        fs::write(dir.join("Cargo.toml"), manifest("")).unwrap();
        assert!(!Project::open(&dir).unwrap().unwrap().multicore);
        fs::write(dir.join("Cargo.toml"), manifest("[package.metadata.neuroncustomop]\nmulticore = true\n")).unwrap();
        assert!(Project::open(&dir).unwrap().unwrap().multicore);
        fs::write(dir.join("Cargo.toml"), manifest("[package.metadata.neuroncustomop]\nmulti-core = true\n")).unwrap();
        let error = Project::open(&dir).unwrap_err().to_string();
        assert!(error.contains("[package.metadata.neuroncustomop]: unknown field `multi-core`"), "{error}");
        fs::write(dir.join("Cargo.toml"), manifest("[package.metadata.neuroncustomop]\nmulticore = \"yes\"\n"))
            .unwrap();
        let error = Project::open(&dir).unwrap_err().to_string();
        assert!(error.contains("it takes `multicore = true` or `false`"), "{error}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_examples_are_projects_with_the_usual_outputs() {
        let cxx = [
            "cxx_add",
            "cxx_misuse",
            "cxx_ops",
            "cxx_relu",
            "cxx_relu_multicore",
            "cxx_relu_tcm",
            "cxx_scalars",
            "cxx_softmax",
            "cxx_stream",
        ];
        let mut all: Vec<&str> = ["c_kernel", "c_libc", "relu", "sort", "vector_add"].into_iter().chain(cxx).collect();
        all.sort();
        assert_eq!(Project::examples(), all);
        let cxx_relu = Project::example("cxx_relu").unwrap().unwrap();
        assert_eq!((cxx_relu.name.as_str(), &cxx_relu.language), ("cxx_relu", &Language::Cxx));
        let relu = Project::example("relu").unwrap().unwrap();
        assert_eq!(relu.language, Language::Rust { bin: "relu".into(), device_feature: true });
        // The tests run with the checkout as the home (.cargo/config.toml).
        let checkout = Home::locate().unwrap().checkout().unwrap().to_path_buf();
        assert_eq!(relu.package_dir, checkout.join("target/package/relu"));
        let c = Project::example("c_kernel").unwrap().unwrap();
        assert_eq!((c.name.as_str(), matches!(c.language, Language::C(_))), ("c_kernel", true));
        // Declared multicore: sort in its Cargo.toml, cxx_relu_multicore in its customop.json.
        let multicore = |name: &str| Project::example(name).unwrap().unwrap().multicore;
        assert_eq!(
            ["sort", "cxx_relu_multicore", "relu", "c_kernel", "cxx_relu"].map(multicore),
            [true, true, false, false, false]
        );
        assert_eq!(Project::example("missing").unwrap(), None);
    }
}
