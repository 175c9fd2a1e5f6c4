//! The simulated device is a sandbox: a C kernel that makes QEMU's semihosting calls
//! itself (`simcall`: open, write, close) cannot create or write a host file
//! (`neuroncustomop_machine::machine::spawn_sandboxed`), and the device goes on.

use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_host::array::Array;
use neuroncustomop_host::library::{Arg, Library, Options, Output};
use neuroncustomop_machine::toolchain;
use std::fs;

/// A C kernel that asks the host, through semihosting, to create the file whose
/// NUL-terminated path is its uint8 argument and write to it; its int32 output says
/// what each call returned: [open, open's errno, write, close].
const ESCAPE: &str = r#"#include <neuroncustomop.h>

/* QEMU's Xtensa semihosting: the call in a2, its arguments in a3..a5; the result comes
   back in a2 and errno in a3. */
static int simcall(int call, int a, int b, int c, int *error) {
    register int a2 __asm__("a2") = call;
    register int a3 __asm__("a3") = a;
    register int a4 __asm__("a4") = b;
    register int a5 __asm__("a5") = c;
    __asm__ volatile(".byte 0x00, 0x51, 0x00" : "+r"(a2), "+r"(a3) : "r"(a4), "r"(a5) : "memory");
    *error = a3;
    return a2;
}

static void escape(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *path = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (path != NULL && out != NULL) {
        int32_t *result = customop_tensor_data(out);
        int error = 0;
        /* open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644): QEMU hands the flags to the
           host's open() as they are, so Linux's values */
        int fd = simcall(5, (int)customop_tensor_data(path), 0x241, 0644, &error);
        result[0] = fd;
        result[1] = error;
        result[2] = simcall(4, fd, (int)"escaped\n", 8, &error);
        result[3] = simcall(6, fd, 0, 0, &error);
        customop_return_tensor(out);
    }
    customop_cleanup();
}

static const struct {
    const char *name;
    neuron_kernel_fn kernel;
} kernels[] = {{"escape", escape}};

int get_func_cnt(void) { return 1; }
void *get_func_ptr(int index) { return index == 0 ? (void *)kernels[0].kernel : NULL; }
const char *get_func_name(int index) { return index == 0 ? kernels[0].name : NULL; }
"#;

#[test]
fn a_kernels_own_semihosting_cannot_create_or_write_a_host_file() {
    let dir = toolchain::repo_root().join("target/sandbox-tests/escape");
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/escape.c"), ESCAPE).unwrap();
    let target = dir.join("escaped.txt");
    let _ = fs::remove_file(&target);
    let library = Library::load(&dir).unwrap_or_else(|e| panic!("packaging the escape kernel: {e}"));
    let mut path = target.to_str().expect("a UTF-8 path").as_bytes().to_vec();
    path.push(0);
    let path = Array::from_vec(vec![path.len()], path).unwrap();
    let output = Output::Shape { dtype: Dtype::Int32, shape: vec![4] };
    let call = library.call_with("escape", &[Arg::Tensor(path.clone())], output.clone(), &Options::default()).unwrap();
    let call = call.check().unwrap();
    assert!(!target.exists(), "the kernel created {}", target.display());
    // EACCES (13): Landlock refused QEMU the write; the write and close of fd -1 fail too.
    assert_eq!(call.output.to_vec::<i32>().unwrap(), [-1, 13, -1, -1]);
    // The device goes on: the same call again, on the same booted device.
    let again = library.call_with("escape", &[Arg::Tensor(path)], output, &Options::default()).unwrap();
    assert_eq!(again.output.to_vec::<i32>().unwrap(), [-1, 13, -1, -1]);
    assert!(!target.exists());
}
