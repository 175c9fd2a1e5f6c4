//! Where the tools' data lives (the *home*), and where their writable state goes.
//!
//! The data is the runtime's headers, its per-core linker driver and target
//! specification, the Xtensa cargo settings, and, in an installed home, the runtime
//! prebuilt for the device (`libneuroncustomop.a` and its linker scripts), the firmware
//! (loader, DMA engine), the QEMU plugin, and the host tier's loader and x86-64
//! runtimes (`prebuilt/host/`). A home is one of two layouts, with the
//! same relative paths for what both hold:
//!
//! - an **installed** data folder, `<prefix>/share/neuroncustomop/` (the wheel's data,
//!   marked by its [`VERSION_FILE`]), whose `prebuilt/` holds what a checkout builds;
//! - a **source checkout** of this repository, where everything is built from source.
//!
//! [`Home::locate`] finds it, in this order:
//!
//! 1. [`HOME_VARIABLE`] (`NEURONCUSTOMOP_HOME`), when set: a checkout or an installed
//!    folder. A checkout is used only this way, never found silently: the checkout's
//!    own driver (`cargo sim`) and its tests set it (`.cargo/config.toml`, `[env]`).
//! 2. The folder the host program named ([`name_installed`]): the Python package
//!    names the data folder installed beside it.
//! 3. Beside the running executable: `<prefix>/bin/ncop` finds `<prefix>/share/neuroncustomop`.
//! 4. Beside the `ncop` on `PATH`: a Rust author's tests run the host API from a test
//!    binary of their own, and find the tools the author installed.
//!
//! Writable state never goes into the home: a project's build goes to its own
//! `target/neuroncustomop/`, and what every project shares (the Xtensa `core` and
//! `alloc`, built once per machine and toolchain) to the per-machine cache,
//! [`cache_dir`], for an installed home; a checkout's go to its own `target/xtensa/`
//! (`images::xtensa_target_dir`), so that two checkouts never wait on each other.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The environment variable that names the home explicitly.
pub const HOME_VARIABLE: &str = "NEURONCUSTOMOP_HOME";
/// The environment variable that names the per-machine cache (default
/// `$XDG_CACHE_HOME/neuroncustomop`, else `~/.cache/neuroncustomop`).
pub const CACHE_VARIABLE: &str = "NEURONCUSTOMOP_CACHE";
/// An installed home's folder below its installation prefix (where the wheel's data
/// goes: `bin/ncop` beside `share/neuroncustomop/`).
pub const INSTALLED_DIR: &str = "share/neuroncustomop";
/// The file that marks an installed home: the version it was built as.
pub const VERSION_FILE: &str = "VERSION";
/// The file of an installed home's `prebuilt/` that names the checkout its runtime
/// was built in (the paths of the runtime's debug information).
pub const SOURCE_ROOT_FILE: &str = "SOURCE_ROOT";
/// A file only a checkout of this repository has (the firmware's sources).
const CHECKOUT_MARK: &str = "qemu/firmware/Cargo.toml";

/// Which layout a home has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A source checkout of this repository, named explicitly: everything is built
    /// from its sources.
    Checkout,
    /// An installed data folder: the runtime, the firmware, the plugin and the host
    /// tier prebuilt.
    Installed,
}

/// The folder the tools read their data from ([the module's documentation](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
    layout: Layout,
}

/// No home was found, or the one named is not one; the message says what to do.
#[derive(Debug, Clone)]
pub enum NoHome {
    /// [`HOME_VARIABLE`] names a folder that is neither a checkout nor an installed home.
    NotAHome(PathBuf),
    /// Nothing named a home and none is installed beside the executable or `ncop`.
    NotFound(Vec<PathBuf>),
}

impl fmt::Display for NoHome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoHome::NotAHome(dir) => write!(
                f,
                "{HOME_VARIABLE}={} is neither a checkout of neuroncustomop (it has no {CHECKOUT_MARK}) nor an \
                 installed data folder (it has no {VERSION_FILE}): point it at one, or unset it to use the \
                 installed package",
                dir.display()
            ),
            NoHome::NotFound(looked) => {
                write!(f, "cannot find neuroncustomop's data folder (the runtime's headers and archive, the firmware")?;
                write!(f, ", the QEMU plugin); looked in ")?;
                let looked: Vec<String> = looked.iter().map(|dir| dir.display().to_string()).collect();
                write!(f, "{}", if looked.is_empty() { "no folder".into() } else { looked.join(", ") })?;
                write!(
                    f,
                    ". Install the wheel (`pip install neuroncustomop-*.whl`; a checkout builds it with `cargo sim \
                     dist`), or point {HOME_VARIABLE} at a source checkout"
                )
            }
        }
    }
}

impl std::error::Error for NoHome {}

/// The installed data folder a host program named (see [`name_installed`]).
static NAMED: OnceLock<PathBuf> = OnceLock::new();

/// Names the installed data folder for this process, for a host program whose
/// executable is not beside it (the Python interpreter, for the Python package).
/// [`HOME_VARIABLE`] still comes first. The first name given stays.
pub fn name_installed(dir: &Path) {
    let _first_stays = NAMED.set(dir.to_path_buf());
}

impl Home {
    /// Finds the home (the order: [the module's documentation](self)).
    ///
    /// # Errors
    /// [`NoHome`], saying where it looked and what to do.
    pub fn locate() -> Result<Self, NoHome> {
        let exe = std::env::current_exe().ok().and_then(|exe| exe.canonicalize().ok());
        let ncop = std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|dir| dir.join("ncop")).find(|ncop| ncop.is_file()));
        resolve(std::env::var_os(HOME_VARIABLE), NAMED.get().map(PathBuf::as_path), exe, ncop)
    }

    /// The home at `dir`, whichever layout it has.
    ///
    /// # Errors
    /// [`NoHome::NotAHome`] when it is neither layout.
    pub fn at(dir: &Path) -> Result<Self, NoHome> {
        let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        if root.join(CHECKOUT_MARK).is_file() {
            Ok(Self { root, layout: Layout::Checkout })
        } else if root.join(VERSION_FILE).is_file() {
            Ok(Self { root, layout: Layout::Installed })
        } else {
            Err(NoHome::NotAHome(dir.to_path_buf()))
        }
    }

    /// Its folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Its layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The checkout's root, when the home is one.
    pub fn checkout(&self) -> Option<&Path> {
        (self.layout == Layout::Checkout).then_some(self.root.as_path())
    }

    /// The installed home's prebuilt files (`prebuilt/`: the runtime's archive and
    /// linker scripts, the firmware's images, the plugin; `host/`, the host tier's
    /// loader and runtimes), when the home is installed.
    pub fn prebuilt(&self) -> Option<PathBuf> {
        (self.layout == Layout::Installed).then(|| self.root.join("prebuilt"))
    }

    /// The folders the runtime's sources were in when it was built, which reports show
    /// its source lines relative to (so `runtime/...` reads as the runtime's, not the
    /// author's): the home's own, and an installed home's build checkout
    /// ([`SOURCE_ROOT_FILE`] in `prebuilt/`).
    pub fn source_roots(&self) -> Vec<PathBuf> {
        let built_in = self.prebuilt().and_then(|prebuilt| fs::read_to_string(prebuilt.join(SOURCE_ROOT_FILE)).ok());
        std::iter::once(self.root.clone()).chain(built_in.map(|root| PathBuf::from(root.trim_end()))).collect()
    }

    /// The runtime's headers (`neuroncustomop.h`, `torch/`, `neuron/`, `torchneuron/`;
    /// the C library's in `libc/`).
    pub fn include_dir(&self) -> PathBuf {
        self.root.join("runtime/include")
    }

    /// The per-core linker driver (`linker/link-cores`).
    pub fn link_cores(&self) -> PathBuf {
        self.root.join("linker/link-cores")
    }

    /// The device's target specification (ISA, core options, windowed ABI).
    pub fn target_spec(&self) -> PathBuf {
        self.root.join(".cargo/xtensa-gpsimd-none-elf.json")
    }

    /// The cargo settings of a device (Xtensa) build, passed with `--config`.
    pub fn cargo_config(&self) -> PathBuf {
        self.root.join(".cargo/xtensa.toml")
    }

    /// The script that installs the system's packages the tools need (`qemu/setup.sh`).
    pub fn setup_script(&self) -> PathBuf {
        self.root.join("qemu/setup.sh")
    }

    /// The built-in examples' folder (`examples/`), which only a checkout has.
    pub fn examples_dir(&self) -> Option<PathBuf> {
        self.checkout().map(|root| root.join("examples"))
    }
}

/// The home by the rules of [`Home::locate`], from what it reads: the variable's value,
/// the folder the host program named, the running executable and the `ncop` on `PATH`.
fn resolve(
    variable: Option<OsString>,
    named: Option<&Path>,
    exe: Option<PathBuf>,
    ncop: Option<PathBuf>,
) -> Result<Home, NoHome> {
    if let Some(dir) = variable.filter(|value| !value.is_empty()) {
        return Home::at(Path::new(&dir));
    }
    let mut looked = Vec::new();
    if let Some(dir) = named {
        looked.push(dir.to_path_buf());
    }
    // `<prefix>/bin/<program>` -> `<prefix>/share/neuroncustomop`.
    let beside = |program: PathBuf| {
        let program = program.canonicalize().unwrap_or(program);
        program.parent().and_then(Path::parent).map(|prefix| prefix.join(INSTALLED_DIR))
    };
    looked.extend(exe.and_then(beside));
    looked.extend(ncop.and_then(beside));
    looked.dedup();
    for dir in &looked {
        if dir.join(VERSION_FILE).is_file() {
            return Ok(Home { root: dir.clone(), layout: Layout::Installed });
        }
    }
    Err(NoHome::NotFound(looked))
}

/// The per-machine cache every project shares: [`CACHE_VARIABLE`] when set, else
/// `$XDG_CACHE_HOME/neuroncustomop`, else `~/.cache/neuroncustomop` (the system's
/// temporary folder when there is no home folder).
pub fn cache_dir() -> PathBuf {
    let var = |name| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    var(CACHE_VARIABLE)
        .or_else(|| var("XDG_CACHE_HOME").map(|cache| cache.join("neuroncustomop")))
        .or_else(|| var("HOME").map(|home| home.join(".cache/neuroncustomop")))
        .unwrap_or_else(|| std::env::temp_dir().join("neuroncustomop-cache"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder of its own under the system's temporary folder.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("neuroncustomop-home-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    /// `<prefix>/bin/ncop` and `<prefix>/share/neuroncustomop/VERSION`.
    fn installed_prefix(name: &str) -> PathBuf {
        let prefix = scratch(name);
        fs::create_dir_all(prefix.join("bin")).unwrap();
        fs::write(prefix.join("bin/ncop"), "").unwrap();
        fs::create_dir_all(prefix.join(INSTALLED_DIR)).unwrap();
        fs::write(prefix.join(INSTALLED_DIR).join(VERSION_FILE), "0.1.0").unwrap();
        prefix
    }

    #[test]
    fn an_installed_home_is_found_beside_the_executable_and_beside_ncop_on_path() {
        let prefix = installed_prefix("beside");
        let want = Home { root: prefix.join(INSTALLED_DIR), layout: Layout::Installed };
        assert_eq!(resolve(None, None, Some(prefix.join("bin/ncop")), None).unwrap(), want);
        let elsewhere = PathBuf::from("/usr/bin/python3");
        assert_eq!(resolve(None, None, Some(elsewhere), Some(prefix.join("bin/ncop"))).unwrap(), want);
        assert_eq!(resolve(None, Some(&prefix.join(INSTALLED_DIR)), None, None).unwrap(), want);
        // Its runtime's sources are shown relative to the checkout it was built in, too.
        fs::create_dir_all(want.root().join("prebuilt")).unwrap();
        fs::write(want.root().join("prebuilt").join(SOURCE_ROOT_FILE), "/build/neuroncustomop\n").unwrap();
        assert_eq!(want.source_roots(), [want.root().to_path_buf(), PathBuf::from("/build/neuroncustomop")]);
        fs::remove_dir_all(prefix).unwrap();
    }

    #[test]
    fn a_checkout_is_used_only_when_the_variable_names_it() {
        let checkout = scratch("checkout");
        fs::create_dir_all(checkout.join("qemu/firmware")).unwrap();
        fs::write(checkout.join(CHECKOUT_MARK), "").unwrap();
        // An executable inside the checkout (its target/) does not make it the home.
        let exe = checkout.join("target/release/ncop");
        match resolve(None, None, Some(exe.clone()), None) {
            Err(NoHome::NotFound(looked)) => assert_eq!(looked, [checkout.join("target").join(INSTALLED_DIR)]),
            other => panic!("found {other:?}"),
        }
        let home = resolve(Some(checkout.clone().into()), None, Some(exe), None).unwrap();
        assert_eq!((home.root(), home.layout()), (checkout.as_path(), Layout::Checkout));
        assert_eq!(home.examples_dir(), Some(checkout.join("examples")));
        assert_eq!(home.prebuilt(), None);
        fs::remove_dir_all(checkout).unwrap();
    }

    #[test]
    fn the_variable_comes_first_and_a_wrong_value_is_refused_in_words() {
        let prefix = installed_prefix("variable");
        let empty = scratch("not-a-home");
        let refused = resolve(Some(empty.clone().into()), None, Some(prefix.join("bin/ncop")), None).unwrap_err();
        assert!(matches!(&refused, NoHome::NotAHome(dir) if *dir == empty), "{refused:?}");
        assert!(refused.to_string().contains("neither a checkout"), "{refused}");
        // An empty value is as if unset.
        assert!(resolve(Some(OsString::new()), None, Some(prefix.join("bin/ncop")), None).is_ok());
        let message = resolve(None, None, None, None).unwrap_err().to_string();
        assert!(message.contains("cargo sim dist") && message.contains(HOME_VARIABLE), "{message}");
        fs::remove_dir_all(prefix).unwrap();
        fs::remove_dir_all(empty).unwrap();
    }
}
