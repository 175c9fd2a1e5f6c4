//! Many processes building, packaging and running one library at once, its source
//! edited in between (pytest-xdist workers, an editor's save during a run, two
//! terminals): every run gives the right result for a source that was written, and
//! none fails, on the device and on the host tier. Waiting for another's build is fine;
//! a half-written image, a Landlock rule on a replaced file or a runtime archive
//! rebuilt under a link is not. And a boot runs the files it named, whatever happens to
//! their names once QEMU has started.

use neuroncustomop_host::npy;
use neuroncustomop_machine::images;
use neuroncustomop_machine::machine::Boot;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The C library's kernel, `out = x * factor * SCALE`, with `SCALE` the edit.
fn source(scale: u32) -> String {
    format!(
        "#include <neuroncustomop.h>\n\
         #define SCALE {scale}.0f\n\
         static void scale(void) {{\n\
             customop_setup(false);\n\
             const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *x = customop_next_tensor();\n\
             float factor = customop_next_float();\n\
             const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();\n\
             if (x != NULL && out != NULL) {{\n\
                 const float *src = customop_tensor_data(x);\n\
                 float *dst = customop_tensor_data(out);\n\
                 for (uint32_t i = 0; src != NULL && dst != NULL && i < customop_tensor_numel(x); i++) {{\n\
                     dst[i] = src[i] * factor * SCALE;\n\
                 }}\n\
                 customop_return_tensor(out);\n\
             }}\n\
             customop_cleanup();\n\
         }}\n\
         int get_func_cnt(void) {{ return 1; }}\n\
         void *get_func_ptr(int index) {{ return index == 0 ? (void *)scale : NULL; }}\n\
         const char *get_func_name(int index) {{ return index == 0 ? \"scale\" : NULL; }}\n"
    )
}

/// Writes `text` to `path` through a rename, as an editor saves.
fn save(path: &Path, text: &str) {
    let partial = path.with_extension(format!("c.{:?}.partial", std::thread::current().id()));
    std::fs::write(&partial, text).unwrap();
    std::fs::rename(&partial, path).unwrap();
}

#[test]
fn processes_running_one_library_while_it_is_edited_each_get_a_whole_build_of_a_written_source() {
    runs_while_edited("device", 4, runs(5), &[]);
}

/// Each process's runs: `default`, or `NEURONCUSTOMOP_STRESS_RUNS` for a longer stress
/// (a run is a build and a device boot, about a second of CPU).
fn runs(default: usize) -> usize {
    std::env::var("NEURONCUSTOMOP_STRESS_RUNS").ok().and_then(|runs| runs.parse().ok()).unwrap_or(default)
}

/// The host tier's builds (clang's objects, the runtime's host archive, the per-core
/// copies a running loader has mapped) take turns across processes as they do within one.
#[test]
fn processes_running_one_library_on_the_host_tier_while_it_is_edited_each_get_a_whole_build() {
    runs_while_edited("host", 2, runs(6), &["--host"]);
}

/// `processes` processes each make `runs` calls of `ncop run scale --lib <one library>`
/// with `extra` arguments, each call after saving an edit of the library's source; every
/// call must succeed with the result of some source that was written.
fn runs_while_edited(name: &str, processes: usize, runs: usize, extra: &[&str]) {
    let root = std::env::temp_dir().join(format!("ncop-concurrency-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let lib = root.join("edited_op");
    std::fs::create_dir_all(lib.join("src")).unwrap();
    std::fs::write(lib.join("neuroncustomop.toml"), "name = \"edited_op\"\n").unwrap();
    let kernel = lib.join("src/kernel.c");
    save(&kernel, &source(1));
    // Every scale some process has written so far: a run's result must be one of them.
    let written = Mutex::new(vec![1u32]);
    let failures = Mutex::new(Vec::<String>::new());
    std::thread::scope(|scope| {
        for process in 0..processes {
            let (lib, kernel, written, failures, root) = (&lib, &kernel, &written, &failures, &root);
            scope.spawn(move || {
                for run in 0..runs {
                    let scale = (process * runs + run) as u32 % 7 + 1;
                    written.lock().unwrap().push(scale);
                    save(kernel, &source(scale));
                    let out: PathBuf = root.join(format!("out-{process}-{run}"));
                    let output = Command::new(env!("CARGO_BIN_EXE_ncop"))
                        .args(["run", "scale", "--lib"])
                        .arg(lib)
                        .args(["--arg", "gen:float32:4x128:uniform:-8:8", "--arg", "float:0.5", "--save"])
                        .arg(out.join("out.npy"))
                        .arg("--save-inputs")
                        .arg(&out)
                        .args(extra)
                        .output()
                        .expect("ncop runs");
                    let said = format!(
                        "process {process} run {run}: {}\n{}{}",
                        output.status,
                        String::from_utf8_lossy(&output.stdout),
                        String::from_utf8_lossy(&output.stderr)
                    );
                    if !output.status.success() {
                        failures.lock().unwrap().push(said);
                        continue;
                    }
                    let x = npy::read(&out.join("arg0.npy")).unwrap().to_vec::<f32>().unwrap();
                    let got = npy::read(&out.join("out.npy")).unwrap().to_vec::<f32>().unwrap();
                    // The one scale of this build: every element agrees on it.
                    let scales: Vec<u32> = written.lock().unwrap().clone();
                    let matches =
                        |k: u32| x.iter().zip(&got).all(|(x, got)| (x * 0.5 * k as f32).to_bits() == got.to_bits());
                    if !scales.iter().any(|&k| matches(k)) {
                        failures.lock().unwrap().push(format!("{said}\nthe output is x * 0.5 * k for no written k"));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{} of {} runs failed:\n{}", failures.len(), processes * runs, failures.join("\n"));
    std::fs::remove_dir_all(&root).unwrap();
}

/// QEMU boots the files a boot named when it started (it reads them through descriptors
/// opened before, which its Landlock rules name): here each image of the `cores`
/// program, 8 cores, is replaced by another program's the moment QEMU has started, long
/// before it reads them (QEMU takes tens of milliseconds to reach its loader devices),
/// and the boot still runs `cores` on every core. With the files named by their paths,
/// QEMU found the names on files its rules did not name, and failed with EACCES.
#[test]
fn a_boot_runs_the_images_it_named_though_their_names_are_replaced_as_qemu_starts() {
    let cores = images::build("cores").expect("building cores");
    let other = images::build("recursion").expect("building recursion");
    let dir = std::env::temp_dir().join(format!("ncop-concurrency-boot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let copies: Vec<PathBuf> = (0..cores.cores.len()).map(|core| dir.join(format!("core{core}.elf"))).collect();
    for (image, copy) in cores.cores.iter().zip(&copies) {
        std::fs::copy(image, copy).unwrap();
    }
    let child = Boot::new(copies.clone()).spawn().expect("QEMU starts");
    for copy in &copies {
        let partial = copy.with_extension("elf.partial");
        std::fs::copy(&other.cores[0], &partial).unwrap();
        std::fs::rename(&partial, copy).unwrap();
    }
    let output = child.wait_with_output().expect("QEMU ends");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    let reports = stdout.lines().filter(|line| line.starts_with("core ") && line.contains(" prid=")).count();
    assert_eq!(reports, copies.len(), "every core ran `cores`, not `recursion`:\n{stdout}{stderr}");
    assert!(!stdout.contains("recursion"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
