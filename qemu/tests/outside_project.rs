//! An op author's project outside this checkout: `ncop new` in a temporary
//! folder, then `ncop run` packages it and calls its kernel with generated data and
//! with `.npy` files, saves the output, and compares it with an expected `.npy`; a
//! Rust and a C library, and no file of the checkout changes.

use neuroncustomop_host::array::Array;
use neuroncustomop_host::npy;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh folder outside the checkout.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ncop-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!dir.starts_with(crate::common::checkout()), "{} is inside the checkout", dir.display());
    dir
}

fn ncop(dir: &Path, args: &[&str]) -> Output {
    let output = Command::new(env!("CARGO_BIN_EXE_ncop")).current_dir(dir).args(args).output().expect("ncop runs");
    eprintln!(
        "ncop {}:\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `git status --porcelain` of the checkout, which the test must leave as it was.
fn checkout_status() -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(crate::common::checkout())
        .args(["status", "--porcelain"])
        .output()
        .expect("git");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `ncop new --lang <lang>`, then a run with generated inputs, one against the saved
/// reference, one against a wrong reference, and one with bad arguments.
fn new_project_runs_and_checks(lang: &str) {
    let before = checkout_status();
    let root = scratch(lang);
    std::fs::create_dir_all(&root).unwrap();
    let dir = root.join(format!("my_{lang}_op"));
    assert!(ncop(&root, &["new", dir.to_str().unwrap(), "--lang", lang]).status.success());
    assert!(!ncop(&root, &["new", dir.to_str().unwrap(), "--lang", lang]).status.success(), "not over a project");

    let run = ncop(
        &dir,
        &[
            "run",
            "scale",
            "--arg",
            "gen:float32:3x50:normal:0:10",
            "--arg",
            "float:-0.5",
            "--save",
            "out.npy",
            "--save-inputs",
            "in",
        ],
    );
    assert!(run.status.success() && stdout(&run).contains("returned    0x0 OK"), "{}", stdout(&run));
    let x = npy::read(&dir.join("in/arg0.npy")).unwrap();
    let got = npy::read(&dir.join("out.npy")).unwrap();
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v * -0.5).collect();
    assert_eq!(got, Array::from_vec(vec![3, 50], want.clone()).unwrap());

    // The op author's reference as a .npy file: bit-exact, then one element off.
    npy::write(&dir.join("want.npy"), &got).unwrap();
    let exact = ncop(&dir, &["run", "scale", "--arg", "in/arg0.npy", "--arg", "float:-0.5", "--expect", "want.npy"]);
    assert!(exact.status.success() && stdout(&exact).contains("result      OK: matches want.npy"));
    let mut off = want;
    off[57] += 1.0;
    npy::write(&dir.join("off.npy"), &Array::from_vec(vec![3, 50], off).unwrap()).unwrap();
    let args = ["run", "scale", "--arg", "in/arg0.npy", "--arg", "float:-0.5", "--expect", "off.npy", "--rtol", "1e-6"];
    let mismatch = ncop(&dir, &args);
    assert_eq!(mismatch.status.code(), Some(1));
    assert!(stdout(&mismatch).contains("1 of 150 elements differ\n  at [1, 7]: got"), "{}", stdout(&mismatch));

    // Bad input: each a clear error or the kernel's named status.
    let failed = ncop(&dir, &["run", "scale", "--arg", "in/arg0.npy", "--arg", "int:2"]);
    assert_eq!(failed.status.code(), Some(1));
    // The status names the argument behind it, in the `returned` line and the result's.
    let named = "0x9 SCALAR_KIND_MISMATCH: argument 1: pulled as float, passed as int";
    assert!(stdout(&failed).contains(&format!("returned    {named}\n")), "{}", stdout(&failed));
    assert!(
        stdout(&failed).contains(&format!("FAILED: kernel scale failed on core 0: {named}")),
        "{}",
        stdout(&failed)
    );
    assert!(!stdout(&failed).contains("ARGFAIL"), "{}", stdout(&failed));
    let unknown = ncop(&dir, &["run", "scal", "--arg", "in/arg0.npy"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("has no kernel scal; it has scale"));
    std::fs::write(dir.join("short.npy"), &std::fs::read(dir.join("want.npy")).unwrap()[..200]).unwrap();
    let short = ncop(&dir, &["run", "scale", "--arg", "short.npy", "--arg", "float:1"]);
    assert_eq!(short.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&short.stderr).contains("the header promises 600 data bytes"));

    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(checkout_status(), before, "the checkout changed");
}

#[test]
fn a_rust_library_outside_the_checkout() {
    new_project_runs_and_checks("rust");
}

/// Rust projects made with one home share one device build of `core`, `alloc` and the
/// runtime (the home's Xtensa target folder: `neuroncustomop_machine::images::xtensa_target_dir`):
/// a second project, in a folder of another depth, compiles only its own crate once the
/// first has been built.
#[test]
fn a_second_rust_library_compiles_no_core_alloc_or_runtime_of_its_own() {
    let root = scratch("shared-core");
    std::fs::create_dir_all(root.join("deeper/still")).unwrap();
    let first = root.join("first_op");
    let second = root.join("deeper/still/second_op");
    for dir in [&first, &second] {
        assert!(ncop(&root, &["new", dir.to_str().unwrap(), "--lang", "rust"]).status.success());
    }
    assert!(ncop(&first, &["package"]).status.success());
    let packaged = ncop(&second, &["package"]);
    assert!(packaged.status.success());
    let cargo = String::from_utf8_lossy(&packaged.stderr);
    let compiled: Vec<&str> = cargo.lines().filter_map(|line| line.trim().strip_prefix("Compiling ")).collect();
    assert!(
        compiled.iter().all(|crate_| crate_.starts_with("second-op ")),
        "the second project compiled more than its own crate: {compiled:?}"
    );
    assert!(!compiled.is_empty(), "the second project was not compiled at all:\n{cargo}");
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn a_c_library_outside_the_checkout() {
    new_project_runs_and_checks("c");
}

/// A second packaging of an unchanged C library links nothing (the step cache keeps
/// the images whose link inputs are unchanged) and returns the published package, and
/// one after an edit of its source links the edit in: its images change, and its
/// kernel computes the edited value.
#[test]
fn an_unchanged_c_library_is_not_linked_again_and_an_edited_one_is() {
    use neuroncustomop_package::project::Project;
    let root = scratch("relink");
    std::fs::create_dir_all(root.join("src")).unwrap();
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/c_kernel/src/scale.c")).unwrap();
    std::fs::write(root.join("src/scale.c"), &source).unwrap();
    let project = Project::open(&root).unwrap().expect("a C project");
    let image = |package: &neuroncustomop_package::package::Package| {
        let path = package.dir.join(neuroncustomop_package::package::library_file_name(&project.name, 3));
        std::fs::read(path).unwrap()
    };
    let core3 = project.image_dir.join("core3.elf");
    let package = project.package().unwrap();
    let first = image(&package);
    let linked_at = std::fs::metadata(&core3).unwrap().modified().unwrap();
    // Nothing changed: the published version itself, not a new one.
    assert_eq!(project.package().unwrap().dir, package.dir);
    assert_eq!(std::fs::metadata(&core3).unwrap().modified().unwrap(), linked_at, "linked again");
    // The edit: a multiply becomes a divide; the image changes.
    let edited = source.replacen("src[i] * factor", "src[i] / factor", 1);
    assert_ne!(edited, source, "scale.c multiplies by its factor");
    std::fs::write(root.join("src/scale.c"), edited).unwrap();
    assert_ne!(image(&project.package().unwrap()), first, "the edit was not linked in");
    let saved = root.join("saved");
    let args = ["run", "scale", "--arg", "gen:float32:4x8:uniform:-8:8", "--arg", "float:4", "--save-inputs"];
    let output =
        ncop(&root, &args.iter().copied().chain([saved.to_str().unwrap(), "--save", "out.npy"]).collect::<Vec<_>>());
    assert!(output.status.success());
    let x = npy::read(&saved.join("arg0.npy")).unwrap().to_vec::<f32>().unwrap();
    let out = npy::read(&root.join("out.npy")).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(out, x.iter().map(|v| v / 4.0).collect::<Vec<f32>>());
    std::fs::remove_dir_all(&root).unwrap();
}

/// The help an author without a checkout reads names a C library's own manifest for
/// `multicore` (not a Cargo.toml, which `ncop new --lang c` does not write) and says
/// where the guide is, since the wheel does not hold it.
#[test]
fn the_help_names_a_c_librarys_manifest_and_where_the_guide_is() {
    let root = std::env::temp_dir();
    let help = stdout(&ncop(&root, &["--help"]));
    assert!(help.contains("a C one\n(neuroncustomop.toml with its name, multicore and cflags"), "{help}");
    assert!(help.contains("in neuroncustomop's source repository (the wheel does not\nhold it)"), "{help}");
    let run = stdout(&ncop(&root, &["run", "--help"]));
    assert!(run.contains("a C library's neuroncustomop.toml says multicore = true"), "{run}");
}

/// A C++ op called with a scalar of the wrong kind is refused before the device runs,
/// naming the argument, the parameter's type and the `--arg` that fits.
#[test]
fn a_cxx_scalar_of_the_wrong_kind_says_which_arg_to_pass() {
    let library = crate::common::checkout().join("examples/cxx_scalars");
    let root = std::env::temp_dir();
    let args = ["run", "affine", "--lib", library.to_str().unwrap(), "--arg", "gen:float32:8", "--arg", "longlong:1"];
    let output = ncop(&root, &[&args[..], &["--arg", "int:2"]].concat());
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains(
            "op affine: argument 2 is an int, but its parameter there is a double (tensor, long, double): pass a \
             float (ncop run: --arg float:V; Python: a float)"
        ),
        "{said}"
    );
}
