//! `ncop new`: a kernel library with one kernel and its test, anywhere on disk.

use clap::{Args, ValueEnum};
use neuroncustomop_machine::home::Home;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The language of the kernels. There is no C++ template: a C++ library on the AWS
/// torch API is a folder with a `customop.json` and its sources, which `ncop` builds
/// and runs as it does these (docs/op-author-guide.md); a template for it would be a
/// variant here and its files under qemu/templates/.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    /// A no_std Rust crate whose binary is the device image.
    Rust,
    /// C files against neuroncustomop.h, linked with libneuroncustomop.a.
    C,
}

impl Lang {
    /// The template's files: path in the project, text with `{{name}}`, `{{package}}`,
    /// `{{version}}` and `{{patch}}` to fill in.
    fn files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Lang::Rust => &[
                ("Cargo.toml", include_str!("../../templates/rust/Cargo.toml")),
                ("src/kernels.rs", include_str!("../../templates/rust/src/kernels.rs")),
                ("tests/kernels.rs", include_str!("../../templates/rust/tests/kernels.rs")),
                (".gitignore", include_str!("../../templates/rust/gitignore")),
            ],
            Lang::C => &[
                ("neuroncustomop.toml", include_str!("../../templates/c/neuroncustomop.toml")),
                ("src/kernels.c", include_str!("../../templates/c/src/kernels.c")),
                ("tests/test_kernels.py", include_str!("../../templates/c/tests/test_kernels.py")),
                (".gitignore", include_str!("../../templates/c/gitignore")),
            ],
        }
    }
}

/// Make a kernel library in DIR: a `scale` kernel (x * factor) and a test that checks
/// it on the simulated device. Rust: a Cargo package and a Cargo test (`cargo test`),
/// depending on the runtime and the host API by version (from crates.io), or on a
/// source checkout's crates when asked (`--checkout`).
/// C: src/kernels.c, neuroncustomop.toml (name, multicore, cflags) and a pytest test
/// (`pytest tests`); no Cargo.toml, no Rust. Then, in DIR: `ncop run scale --arg
/// gen:float32:4x8 --arg float:2`. A C++ library on the AWS torch API has no template (a
/// folder with customop.json and its sources; `ncop --help`).
#[derive(Debug, Args)]
pub struct NewArgs {
    /// The folder to create (it must not exist, or be empty).
    pub dir: PathBuf,
    /// The kernels' language.
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    pub lang: Lang,
    /// The library's name (default: the folder's name); letters, digits and `_`.
    #[arg(long)]
    pub name: Option<String>,
    /// Rust: take the runtime and the host API from this source checkout of
    /// neuroncustomop (a `[patch.crates-io]` in the Cargo.toml) instead of crates.io.
    /// Default: the tools' home, when it is a checkout (NEURONCUSTOMOP_HOME names one).
    #[arg(long, value_name = "CHECKOUT")]
    pub checkout: Option<PathBuf>,
}

/// Why a project could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    /// The folder exists and holds files.
    #[error("{} exists and is not empty", .0.display())]
    NotEmpty(PathBuf),
    /// The name cannot name a library.
    #[error("{0:?} cannot name a library: use letters, digits and _, not starting with a digit")]
    BadName(String),
    /// Writing failed.
    #[error("writing {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Runs `new`.
pub fn exec(args: NewArgs) -> super::Outcome {
    let name = match &args.name {
        Some(name) => name.clone(),
        None => args.dir.file_name().map(|n| n.to_string_lossy().replace('-', "_")).unwrap_or_default(),
    };
    let checkout = match args.checkout {
        Some(checkout) => match Home::at(&checkout) {
            Ok(home) if home.checkout().is_some() => Some(home.root().to_path_buf()),
            _ => {
                return Err(format!(
                    "--checkout {}: not a source checkout of neuroncustomop; name the root folder of a clone",
                    checkout.display()
                )
                .into());
            }
        },
        None => Home::locate().ok().as_ref().and_then(Home::checkout).map(Path::to_path_buf),
    };
    create(&args.dir, args.lang, &name, checkout.as_deref())?;
    println!("made {} ({:?}, library {name}); in it:", args.dir.display(), args.lang);
    println!("  ncop run scale --arg gen:float32:4x8 --arg float:2   call the kernel on the simulated device");
    println!("  ncop debug scale --arg gen:float32:4x8 --arg float:2 the same on the host tier, under gdb");
    match args.lang {
        Lang::Rust => println!("  cargo test                                          its test (tests/kernels.rs)"),
        Lang::C => println!("  pytest tests                                        its test (tests/test_kernels.py)"),
    }
    if let Some(note) = unpublished_crates_note(args.lang, checkout.as_deref()) {
        eprintln!("{note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What a Rust project made without a checkout needs to know before its first build:
/// the crates it depends on by version are not on crates.io yet, so cargo would stop
/// with "no matching package named `neuroncustomop` found". `None` for a C project
/// (no Rust) or one that takes the crates from a checkout.
fn unpublished_crates_note(lang: Lang, checkout: Option<&Path>) -> Option<&'static str> {
    (lang == Lang::Rust && checkout.is_none()).then_some(
        "note: the runtime's crates (neuroncustomop, neuroncustomop-host) are not on crates.io yet, so this \
         project builds only with a source checkout's: make it again with --checkout <checkout> (a clone of \
         neuroncustomop), or write the kernels in C (--lang c), which needs no Rust",
    )
}

/// The `[patch]` that takes the crates from the checkout `checkout` instead of the
/// registry: written when asked (`--checkout`), or when the tools' home is a checkout
/// (named explicitly, `NEURONCUSTOMOP_HOME`), so a project made with a checkout's tools
/// builds with its runtime.
fn checkout_patch(checkout: &Path) -> String {
    format!(
        "\n# Made with the tools of the source checkout {}: its crates, not the registry's.\n\
         [patch.crates-io]\n\
         neuroncustomop = {{ path = {:?} }}\n\
         neuroncustomop-host = {{ path = {:?} }}\n",
        checkout.display(),
        checkout.display().to_string(),
        checkout.join("qemu/host").display().to_string()
    )
}

/// Writes the template of `lang` for library `name` into `dir`; a Rust library takes
/// the crates from `checkout` when given, from crates.io otherwise.
pub fn create(dir: &Path, lang: Lang, name: &str, checkout: Option<&Path>) -> Result<(), NewError> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(NewError::BadName(name.into()));
    }
    if fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(NewError::NotEmpty(dir.into()));
    }
    let patch = checkout.map(checkout_patch).unwrap_or_default();
    for (path, text) in lang.files() {
        let text = text
            .replace("{{name}}", name)
            .replace("{{package}}", &name.replace('_', "-"))
            .replace("{{version}}", env!("CARGO_PKG_VERSION"))
            .replace("{{patch}}", &patch);
        let path = dir.join(path);
        let io = |source| NewError::Io { path: path.clone(), source };
        fs::create_dir_all(path.parent().expect("in the project")).map_err(io)?;
        fs::write(&path, text).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_project_without_a_checkout_is_told_the_crates_are_not_published() {
        let note = unpublished_crates_note(Lang::Rust, None).expect("a note");
        assert!(note.contains("not on crates.io yet") && note.contains("--checkout <checkout>"), "{note}");
        assert!(note.contains("--lang c"), "{note}");
        assert_eq!(unpublished_crates_note(Lang::Rust, Some(Path::new("/src/neuroncustomop"))), None);
        assert_eq!(unpublished_crates_note(Lang::C, None), None);
    }

    #[test]
    fn a_rust_project_depends_on_versions_and_on_a_checkout_only_when_given_one() {
        let root = std::env::temp_dir().join(format!("ncop-new-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let version = env!("CARGO_PKG_VERSION");
        create(&root.join("registry"), Lang::Rust, "my_op", None).unwrap();
        let manifest = fs::read_to_string(root.join("registry/Cargo.toml")).unwrap();
        assert!(manifest.contains(&format!("\nneuroncustomop = \"{version}\"\n")), "{manifest}");
        assert!(manifest.contains(&format!("\nneuroncustomop-host = \"{version}\"\n")), "{manifest}");
        assert!(!manifest.contains("[patch") && !manifest.contains("{ path"), "{manifest}");
        create(&root.join("checkout"), Lang::Rust, "my_op", Some(Path::new("/src/neuroncustomop"))).unwrap();
        let manifest = fs::read_to_string(root.join("checkout/Cargo.toml")).unwrap();
        assert!(manifest.contains(&format!("\nneuroncustomop = \"{version}\"\n")), "{manifest}");
        let patch = manifest.split_once("[patch.crates-io]\n").map(|(_, patch)| patch).unwrap_or_default();
        assert_eq!(
            patch.trim_end(),
            "neuroncustomop = { path = \"/src/neuroncustomop\" }\n\
             neuroncustomop-host = { path = \"/src/neuroncustomop/qemu/host\" }"
        );
        fs::remove_dir_all(root).unwrap();
    }
}
