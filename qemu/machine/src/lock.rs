//! Locks between processes (and threads) on one machine: the build of a project, the
//! device build's shared target folder. A lock is a file's `flock`, which the system
//! releases when its holder ends, however it ends; two opens of the file in one
//! process exclude each other too.

use std::fs::{self, File};
use std::io;
use std::path::Path;

/// A lock on a file, held until dropped.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

impl Lock {
    /// Waits for, then takes, the exclusive lock of `path` (made, with its folder,
    /// when missing).
    ///
    /// # Errors
    /// The file cannot be made or locked.
    pub fn exclusive(path: &Path) -> io::Result<Self> {
        let file = open(path)?;
        file.lock()?;
        Ok(Self { _file: file })
    }

    /// Waits for, then takes, a shared lock of `path`: any number of shared holders,
    /// no exclusive one.
    ///
    /// # Errors
    /// The file cannot be made or locked.
    pub fn shared(path: &Path) -> io::Result<Self> {
        let file = open(path)?;
        file.lock_shared()?;
        Ok(Self { _file: file })
    }
}

fn open(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    File::options().create(true).truncate(false).write(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exclusive_holder_keeps_out_every_other_and_shared_holders_keep_out_an_exclusive_one() {
        let dir = std::env::temp_dir().join(format!("neuroncustomop-lock-{}", std::process::id()));
        let path = dir.join("my_op.lock");
        let probe = || File::options().write(true).create(true).truncate(false).open(&path).unwrap();
        let held = Lock::exclusive(&path).unwrap();
        assert!(matches!(probe().try_lock_shared(), Err(fs::TryLockError::WouldBlock)));
        drop(held);
        let (first, second) = (Lock::shared(&path).unwrap(), Lock::shared(&path).unwrap());
        assert!(matches!(probe().try_lock(), Err(fs::TryLockError::WouldBlock)));
        drop((first, second));
        probe().try_lock().expect("free once every holder is dropped");
        fs::remove_dir_all(dir).unwrap();
    }
}
