//! Building and packaging one library from many processes at once: pytest-xdist
//! workers, an editor's save during a run, two terminals, CI jobs on one runner.
//! Every run uses a whole package, of the source its build saw, or waits for one.
//!
//! - A project's build and packaging take turns through a lock file beside its package
//!   ([`Lock`]: an exclusive `flock`, which also keeps apart two threads of one
//!   process), so nobody reads a half-linked image or a package being written.
//! - Each packaging whose images differ from the published package's writes a version
//!   folder of its own ([`new_version`]; one whose build changed nothing returns the
//!   published version), which is never changed afterwards, and publishes it by renaming a symbolic link over the
//!   package's name ([`publish`]: `package/<name>` -> `<name>.versions/<id>/<name>`).
//!   A reader that resolved the name sees one whole version. The package a packaging
//!   returns is its version folder, so a run boots the very images its build made, and
//!   QEMU's Landlock rules name files that nothing replaces while it runs.
//! - A version that is not the published one is removed at a later packaging once it
//!   is [`KEEP_UNPUBLISHED`] old: long enough for any run that took it to have started
//!   its device (QEMU keeps the files it opened). Its images are hard links to the
//!   build's (which a later build replaces, never rewrites), so a version costs
//!   little room.

pub use neuroncustomop_machine::lock::Lock;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// How long a version other than the published one is kept: a run boots its device
/// within seconds of its packaging, and QEMU keeps the files it opened. (A day's
/// versions of a library edited in a loop filled a disk.)
pub const KEEP_UNPUBLISHED: Duration = Duration::from_secs(10 * 60);

/// The lock file of the package folder `package_dir`: `<package_dir>.lock`.
pub fn lock_path(package_dir: &Path) -> PathBuf {
    with_suffix(package_dir, ".lock")
}

/// A new, empty version folder for the package `package_dir`:
/// `<package_dir>.versions/<id>/<name>/` (the last part the package's own name, which
/// a copy of the folder keeps).
///
/// # Errors
/// The folder cannot be made.
pub fn new_version(package_dir: &Path) -> io::Result<PathBuf> {
    let name = package_dir.file_name().ok_or_else(|| io::Error::other("a package folder has a name"))?;
    let since_epoch = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let id = format!("{:x}-{}", since_epoch.as_nanos(), std::process::id());
    let version = versions_dir(package_dir).join(id).join(name);
    fs::create_dir_all(&version)?;
    Ok(version)
}

/// Makes `version` (from [`new_version`]) the package `package_dir` names: a symbolic
/// link renamed over it, so the name moves from one whole version to the next. Then
/// removes the versions [`KEEP_UNPUBLISHED`] old that are not published. Called with
/// the package's [`Lock`] held.
///
/// # Errors
/// The link cannot be made or renamed.
pub fn publish(package_dir: &Path, version: &Path) -> io::Result<()> {
    let versions = versions_dir(package_dir);
    let relative = version.strip_prefix(package_dir.parent().unwrap_or(Path::new(""))).unwrap_or(version);
    // A package folder of an older layout (a folder, not a link) cannot be renamed over.
    if fs::symlink_metadata(package_dir).is_ok_and(|meta| meta.is_dir()) {
        fs::remove_dir_all(package_dir)?;
    }
    let link = with_suffix(package_dir, &format!(".{}.link", std::process::id()));
    let _ = fs::remove_file(&link);
    std::os::unix::fs::symlink(relative, &link)?;
    fs::rename(&link, package_dir)?;
    let published = version.parent().map(Path::to_path_buf);
    for entry in fs::read_dir(&versions)?.filter_map(Result::ok) {
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .is_ok_and(|modified| SystemTime::now().duration_since(modified).is_ok_and(|age| age > KEEP_UNPUBLISHED));
        if old && Some(entry.path()) != published {
            // Another packaging's leftovers; one that cannot be removed now is tried later.
            let _ = fs::remove_dir_all(entry.path());
        }
    }
    Ok(())
}

/// The name a version folder is published as (`<package>.versions/<id>/<name>` ->
/// `<package>`), for messages; a folder that is no version is its own.
pub fn published_dir(dir: &Path) -> PathBuf {
    let versions = dir.parent().and_then(Path::parent);
    let published = versions.and_then(|versions| versions.to_str()?.strip_suffix(".versions").map(PathBuf::from));
    published.filter(|published| published.file_name() == dir.file_name()).unwrap_or_else(|| dir.to_path_buf())
}

/// `<package_dir>.versions/`.
fn versions_dir(package_dir: &Path) -> PathBuf {
    with_suffix(package_dir, ".versions")
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("neuroncustomop-publish-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_published_version_stays_whole_while_the_next_is_published() {
        let root = scratch("versions");
        let package = root.join("package/my_op");
        // An older layout's folder is replaced by the link.
        fs::create_dir_all(&package).unwrap();
        fs::write(package.join("ucode_lib.json"), "old").unwrap();
        let first = new_version(&package).unwrap();
        assert_eq!(first.file_name(), package.file_name(), "a copy of the version keeps the package's name");
        fs::write(first.join("ucode_lib.json"), "1").unwrap();
        publish(&package, &first).unwrap();
        assert_eq!(fs::read_to_string(package.join("ucode_lib.json")).unwrap(), "1");
        let second = new_version(&package).unwrap();
        fs::write(second.join("ucode_lib.json"), "2").unwrap();
        publish(&package, &second).unwrap();
        // The name moved; the first version, which a run may still be using, did not change.
        assert_eq!(fs::read_to_string(package.join("ucode_lib.json")).unwrap(), "2");
        assert_eq!(fs::read_to_string(first.join("ucode_lib.json")).unwrap(), "1");
        assert!(fs::symlink_metadata(&package).unwrap().file_type().is_symlink());
        assert_eq!((published_dir(&second), published_dir(&package)), (package.clone(), package.clone()));
        fs::remove_dir_all(root).unwrap();
    }
}
