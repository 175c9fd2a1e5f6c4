//! Build steps skipped when nothing they read has changed: what makes a second build of
//! an unchanged library (another `ncop run`, another process's `load`) cost a fraction
//! of a second rather than a compile and eight links.
//!
//! A step is one command (program, arguments, the environment it sets, its working
//! folder) with the files it reads and the files it writes. Its *key* is a SHA-256 of
//! the command, of each tool's identity (its path, size and modification time, or a
//! script's contents) and of every input's contents. A *stamp* file beside the outputs
//! records the key and each output's SHA-256. The step runs again unless the stamp
//! holds today's key and every output is as the stamp recorded it, so an edited input,
//! a rebuilt runtime archive, an updated compiler, another flag or a touched output
//! each makes it run.
//!
//! A compiler's inputs include every file its last run read (its `-MD` depfile): a
//! change to any of them changes the key, and a new `#include` can only come from a
//! change to a file already read.
//!
//! Invariants:
//! - A stamp is written only after its step succeeded, whole (a rename), and only when
//!   no input changed while the step ran: each input known before the step has the
//!   contents it had then, and a file the depfile names only afterwards is older than
//!   the step's start. An edit saved during a build leaves no stamp, and the next build
//!   runs the step.
//! - The stamp is removed before the step runs: a step that fails or is interrupted
//!   leaves none.
//! - The caller holds the lock of the outputs' folder (the project's, or the host
//!   tier's build lock), as it does to run the step at all.
//!
//! Cost: hashing the inputs and outputs, a few milliseconds for a C library (the
//! runtime archive is the largest input) against 0.5 s to 1.5 s for the steps.

use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

/// One cacheable build step: its command's description, inputs, outputs and stamp.
#[derive(Debug)]
pub struct Step {
    /// The command and the tools' identities, hashed into every key.
    command: Vec<u8>,
    inputs: Vec<PathBuf>,
    outputs: Vec<PathBuf>,
    stamp: PathBuf,
    /// The depfile (make syntax) the command writes, whose files are inputs too.
    depfile: Option<PathBuf>,
}

impl Step {
    /// The step `command` makes, reading `inputs` and writing `outputs`; its stamp is
    /// `stamp`. `tools` are programs the command runs besides its own (a driver
    /// script's linker, a compiler driver's `cc1plus` is its package's and needs none).
    pub fn new(
        command: &Command,
        tools: &[PathBuf],
        inputs: Vec<PathBuf>,
        outputs: Vec<PathBuf>,
        stamp: PathBuf,
    ) -> Self {
        let mut described = Vec::new();
        let mut part = |bytes: &[u8]| {
            described.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            described.extend_from_slice(bytes);
        };
        part(command.get_program().as_bytes());
        for argument in command.get_args() {
            part(argument.as_bytes());
        }
        for (name, value) in command.get_envs() {
            part(name.as_bytes());
            part(value.map_or(b"(removed)".as_slice(), OsStr::as_bytes));
        }
        part(command.get_current_dir().map_or(b"".as_slice(), |dir| dir.as_os_str().as_bytes()));
        for tool in std::iter::once(PathBuf::from(command.get_program())).chain(tools.iter().cloned()) {
            part(&tool_identity(&tool));
        }
        Self { command: described, inputs, outputs, stamp, depfile: None }
    }

    /// The files listed in `depfile`, which the command writes, are inputs too.
    pub fn with_depfile(mut self, depfile: PathBuf) -> Self {
        self.depfile = Some(depfile);
        self
    }

    /// Whether the outputs are those of this step with today's inputs (its stamp).
    pub fn is_fresh(&self) -> bool {
        self.is_fresh_with(&self.digests())
    }

    /// [`Step::is_fresh`], with the inputs' `digests` taken already.
    fn is_fresh_with(&self, digests: &[(PathBuf, Option<[u8; 32]>)]) -> bool {
        let Ok(stamp) = fs::read(&self.stamp) else { return false };
        let (Some(key), Some(outputs)) = (self.key(digests), self.outputs_digest()) else { return false };
        stamp == [key, outputs].concat()
    }

    /// Runs the step through `run` unless [`Step::is_fresh`]; stamps it after a run
    /// whose inputs did not change meanwhile. True when it ran.
    ///
    /// # Errors
    /// `run`'s error; an error writing the stamp is none (the step runs next time).
    pub fn run<E>(&self, run: impl FnOnce() -> Result<(), E>) -> Result<bool, E> {
        let before = self.digests();
        if self.is_fresh_with(&before) {
            return Ok(false);
        }
        let _ = fs::remove_file(&self.stamp);
        // The file system's clock, which dates the inputs, not this process's.
        let marker = self.stamp.with_extension(format!("started.{}", std::process::id()));
        let started = fs::write(&marker, b"").and_then(|()| fs::metadata(&marker)?.modified()).ok();
        let _ = fs::remove_file(&marker);
        run()?;
        if let Some(started) = started {
            self.record(&before, started);
        }
        Ok(true)
    }

    /// Writes the stamp, unless an input read `before` the step differs now, one read
    /// only now (a header new in the depfile) was written after `started`, or one
    /// cannot be read.
    fn record(&self, before: &[(PathBuf, Option<[u8; 32]>)], started: SystemTime) {
        let after = self.digests();
        let changed = after.iter().any(|(input, digest)| match before.iter().find(|(known, _)| known == input) {
            Some((_, earlier)) => earlier != digest,
            None => fs::metadata(input).and_then(|m| m.modified()).is_ok_and(|at| at > started),
        });
        if changed {
            return;
        }
        let (Some(key), Some(outputs)) = (self.key(&after), self.outputs_digest()) else { return };
        let partial = self.stamp.with_extension(format!("{}.partial", std::process::id()));
        if fs::write(&partial, [key, outputs].concat()).is_ok() {
            let _ = fs::rename(&partial, &self.stamp);
        }
    }

    /// Each input (the depfile's files too, once it is written) with its contents'
    /// digest, `None` for one that cannot be read.
    fn digests(&self) -> Vec<(PathBuf, Option<[u8; 32]>)> {
        let mut inputs = self.inputs.clone();
        if let Some(depfile) = &self.depfile {
            inputs.extend(fs::read_to_string(depfile).map(|text| depfile_inputs(&text)).unwrap_or_default());
        }
        inputs
            .into_iter()
            .map(|input| {
                let digest = file_digest(&input);
                (input, digest)
            })
            .collect()
    }

    /// The key of the command with the inputs' `digests`; `None` when the command
    /// writes a depfile that is not there yet, or an input cannot be read.
    fn key(&self, digests: &[(PathBuf, Option<[u8; 32]>)]) -> Option<[u8; 32]> {
        if self.depfile.as_ref().is_some_and(|depfile| !depfile.is_file()) {
            return None;
        }
        let mut hash = Sha256::new();
        hash.update(&self.command);
        for (input, digest) in digests {
            hash.update(input.as_os_str().as_bytes());
            hash.update([0]);
            hash.update((*digest)?);
        }
        Some(hash.finalize().into())
    }

    /// One digest of every output's contents; `None` when one is missing.
    fn outputs_digest(&self) -> Option<[u8; 32]> {
        let mut hash = Sha256::new();
        for output in &self.outputs {
            hash.update(file_digest(output)?);
        }
        Some(hash.finalize().into())
    }
}

/// The sources and headers under `dir` (C, C++, their headers, JSON and TOML), in
/// every folder but `target` and hidden ones, sorted: the inputs of a step that reads
/// a project's files where no depfile can list them all.
pub fn sources_under(dir: &Path) -> Vec<PathBuf> {
    const KINDS: [&str; 11] = ["c", "cc", "cpp", "cxx", "h", "hh", "hpp", "hxx", "inc", "json", "toml"];
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).into_iter().flatten().filter_map(Result::ok) {
            let (path, name) = (entry.path(), entry.file_name());
            if name.as_bytes().starts_with(b".") {
                continue;
            }
            match entry.file_type() {
                Ok(kind) if kind.is_dir() && name != "target" => folders.push(path),
                Ok(_) if path.extension().is_some_and(|ext| KINDS.iter().any(|kind| ext == *kind)) => found.push(path),
                _ => {}
            }
        }
    }
    found.sort();
    found
}

/// The SHA-256 of a file's contents, or of a folder's files' names and contents (the
/// linker scripts' folder); `None` when it cannot be read.
fn file_digest(path: &Path) -> Option<[u8; 32]> {
    let mut hash = Sha256::new();
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = fs::read_dir(path).ok()?.filter_map(|e| Some(e.ok()?.path())).collect();
        entries.sort();
        for entry in entries.iter().filter(|entry| entry.is_file()) {
            hash.update(entry.file_name()?.as_bytes());
            hash.update(file_digest(entry)?);
        }
    } else {
        hash.update(fs::read(path).ok()?);
    }
    Some(hash.finalize().into())
}

/// A tool's identity: a small file's (a script's) contents, a binary's size and
/// modification time (a package update changes both), found on `PATH` when named bare.
fn tool_identity(tool: &Path) -> Vec<u8> {
    let found = if tool.components().count() == 1 { on_path(tool) } else { Some(tool.to_path_buf()) };
    let Some(path) = found.and_then(|path| fs::canonicalize(path).ok()) else {
        return format!("{} (not found)", tool.display()).into_bytes();
    };
    let mut identity = path.as_os_str().as_bytes().to_vec();
    match fs::metadata(&path) {
        Ok(meta) if meta.len() < 64 * 1024 => identity.extend(fs::read(&path).unwrap_or_default()),
        Ok(meta) => identity.extend(format!(" {} {}.{}", meta.len(), meta.mtime(), meta.mtime_nsec()).into_bytes()),
        Err(_) => {}
    }
    identity
}

/// `name` as the `PATH` search of a spawn would find it.
fn on_path(name: &Path) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(name)).find(|path| path.is_file())
}

/// The prerequisites a make-syntax depfile lists (`target: a.c b.h \` lines).
fn depfile_inputs(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\n", " ");
    let mut inputs = Vec::new();
    for rule in joined.lines() {
        let Some((_, prerequisites)) = rule.split_once(": ") else { continue };
        // Spaces in a name are escaped with a backslash.
        let mut name = String::new();
        let mut chars = prerequisites.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => name.push(chars.next().unwrap_or(' ')),
                ' ' | '\t' => {
                    if !name.is_empty() {
                        inputs.push(PathBuf::from(std::mem::take(&mut name)));
                    }
                }
                c => name.push(c),
            }
        }
        if !name.is_empty() {
            inputs.push(PathBuf::from(name));
        }
    }
    inputs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder of its own.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("step-cache-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A step that concatenates `inputs` into `out` (with `cat`), and counts its runs.
    fn cat(dir: &Path, inputs: &[&str]) -> (Step, Command) {
        let mut command = Command::new("sh");
        let names: Vec<String> = inputs.iter().map(|i| dir.join(i).display().to_string()).collect();
        command.args(["-c", &format!("cat {} > {}", names.join(" "), dir.join("out").display())]);
        let step = Step::new(
            &command,
            &[],
            inputs.iter().map(|i| dir.join(i)).collect(),
            vec![dir.join("out")],
            dir.join("out.stamp"),
        );
        (step, command)
    }

    /// Writes `text` to `path`, dated a minute ago, as a source saved before the build:
    /// a file the depfile names only after a step must be older than the step's start.
    fn write_old(path: &Path, text: &str) {
        fs::write(path, text).unwrap();
        let past = SystemTime::now() - std::time::Duration::from_secs(60);
        fs::File::options().write(true).open(path).unwrap().set_modified(past).unwrap();
    }

    fn run(step: &Step, command: &mut Command) -> bool {
        step.run(|| command.status().map(drop)).unwrap()
    }

    #[test]
    fn a_step_runs_again_when_an_input_an_output_or_the_command_changed() {
        let dir = scratch("changes");
        write_old(&dir.join("a"), "1");
        write_old(&dir.join("b"), "2");
        let (step, mut command) = cat(&dir, &["a", "b"]);
        assert!(run(&step, &mut command), "the first build runs");
        assert_eq!(fs::read_to_string(dir.join("out")).unwrap(), "12");
        assert!(!run(&step, &mut command), "nothing changed");
        write_old(&dir.join("b"), "3");
        assert!(run(&step, &mut command), "an input changed");
        assert_eq!(fs::read_to_string(dir.join("out")).unwrap(), "13");
        fs::write(dir.join("out"), "edited").unwrap();
        assert!(run(&step, &mut command), "the output was changed by someone else");
        fs::remove_file(dir.join("out")).unwrap();
        assert!(run(&step, &mut command), "the output is gone");
        let (other, mut other_command) = cat(&dir, &["b", "a"]);
        assert!(run(&other, &mut other_command), "another command");
        assert_eq!(fs::read_to_string(dir.join("out")).unwrap(), "31");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_step_or_one_whose_input_changed_while_it_ran_leaves_no_stamp() {
        let dir = scratch("unstamped");
        write_old(&dir.join("a"), "1");
        let (step, mut command) = cat(&dir, &["a"]);
        assert!(step.run(|| Err::<(), _>("failed")).is_err());
        assert!(!dir.join("out.stamp").exists());
        // An editor saves `a` while the step runs.
        let ran = step.run(|| {
            command.status().map(drop)?;
            std::thread::sleep(std::time::Duration::from_millis(5));
            fs::write(dir.join("a"), "2")
        });
        assert!(ran.unwrap());
        assert!(!dir.join("out.stamp").exists() && !step.is_fresh());
        assert!(run(&step, &mut command));
        assert_eq!(fs::read_to_string(dir.join("out")).unwrap(), "2");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_depfiles_headers_are_inputs() {
        let dir = scratch("depfile");
        write_old(&dir.join("a.c"), "#include \"a b.h\"");
        write_old(&dir.join("a b.h"), "1");
        let depfile = format!(
            "{}: {} \\\n  {}\n",
            dir.join("out").display(),
            dir.join("a.c").display(),
            dir.join("a\\ b.h").display()
        );
        let mut command = Command::new("sh");
        command
            .args(["-c", &format!("cat '{0}/a b.h' > {0}/out && printf '%s' '{depfile}' > {0}/out.d", dir.display())]);
        let step = Step::new(&command, &[], vec![dir.join("a.c")], vec![dir.join("out")], dir.join("out.stamp"))
            .with_depfile(dir.join("out.d"));
        assert!(run(&step, &mut command));
        assert!(!run(&step, &mut command));
        write_old(&dir.join("a b.h"), "2");
        assert!(run(&step, &mut command), "a header changed");
        assert_eq!(fs::read_to_string(dir.join("out")).unwrap(), "2");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_depfile_lists_each_prerequisite() {
        let text = "x.o: a.c /usr/include/stdio.h \\\n  my\\ header.h\ny.o: b.c\n";
        let want: Vec<PathBuf> = ["a.c", "/usr/include/stdio.h", "my header.h", "b.c"].map(PathBuf::from).into();
        assert_eq!(depfile_inputs(text), want);
    }
}
