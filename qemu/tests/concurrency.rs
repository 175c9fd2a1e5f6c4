//! Many processes building, packaging and running one library at once, its source
//! edited in between (pytest-xdist workers, an editor's save during a run, two
//! terminals): every run gives the right result for a source that was written, and
//! none fails. Waiting for another's build is fine; a half-written image, a Landlock
//! rule on a replaced file or a runtime archive rebuilt under a link is not.

use neuroncustomop_host::npy;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// Processes at once, and runs each.
const PROCESSES: usize = 4;
const RUNS: usize = 10;

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
    let root = std::env::temp_dir().join(format!("ncop-concurrency-{}", std::process::id()));
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
        for process in 0..PROCESSES {
            let (lib, kernel, written, failures, root) = (&lib, &kernel, &written, &failures, &root);
            scope.spawn(move || {
                for run in 0..RUNS {
                    let scale = (process * RUNS + run) as u32 % 7 + 1;
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
    assert!(failures.is_empty(), "{} of {} runs failed:\n{}", failures.len(), PROCESSES * RUNS, failures.join("\n"));
    std::fs::remove_dir_all(&root).unwrap();
}
