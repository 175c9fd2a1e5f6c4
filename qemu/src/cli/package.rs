//! `ncop package` and `sim package`: build a library for the device and package it.

use clap::Args;
use neuroncustomop_host::library::{Library, LoadError, Target};
use neuroncustomop_package::project::Project;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Build the library for the device (8 images) and write its package (the images
/// and ucode_lib.json) to target/neuroncustomop/package/<name>/.
#[derive(Debug, Args)]
pub struct PackageArgs {
    /// The project folder.
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

/// Runs `ncop package`.
pub fn exec(args: PackageArgs) -> super::Outcome {
    let library = load(&args.dir, Target::Device)?;
    let package = library.package()?;
    let dir = neuroncustomop_package::publish::published_dir(&package.dir);
    println!("{} in {} (kernels: {})", library.name(), dir.display(), library.kernels().join(", "));
    Ok(ExitCode::SUCCESS)
}

/// Loads the library at `dir` for calls on `target`, saying first that a build is
/// coming (the first one for the device compiles `core` and `alloc` for it: cargo shows
/// its progress; the host tier's builds only for the host).
pub fn load(dir: &Path, target: Target) -> Result<Library, LoadError> {
    if let Ok(Some(project)) = Project::open(dir) {
        let machine = match target {
            Target::Device => "the device",
            Target::Host => "the host tier",
        };
        eprintln!("building {} for {machine} ({})", project.name, project.dir.display());
    }
    Library::load_for(dir, target)
}

/// Build a built-in example (examples/<name>/) and write its package to
/// target/package/<name>/.
#[derive(Debug, Args)]
pub struct ExampleArgs {
    /// The example.
    pub example: String,
}

/// Runs `cargo sim package`.
pub fn exec_example(args: ExampleArgs) -> super::Outcome {
    let package = neuroncustomop_package::program::package(&args.example)?;
    let dir = neuroncustomop_package::publish::published_dir(&package.dir);
    println!("{} in {} (kernels: {})", package.name(), dir.display(), package.kernels().join(", "));
    Ok(ExitCode::SUCCESS)
}
