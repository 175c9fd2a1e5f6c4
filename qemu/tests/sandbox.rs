//! The simulated device is a sandbox: a C kernel that makes QEMU's semihosting calls
//! itself (`simcall`: open, read, write, close) cannot create, write or read a host
//! file (`neuroncustomop_machine::machine::spawn_sandboxed`), the memory checks name
//! its `simcall` with its line, and the device goes on.

use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_host::array::Array;
use neuroncustomop_host::library::{Arg, Library, Options, Output};
use neuroncustomop_machine::findings::FindingKind;
use std::fs;

/// A C kernel that asks the host, through semihosting, to create the file whose
/// NUL-terminated path is its first uint8 argument and write to it, then to read the
/// file named by its second; its int32 output says what each call returned: [open,
/// open's errno, write, close, open, open's errno, read, the first byte read].
const ESCAPE: &str = r#"#include <neuroncustomop.h>

/* QEMU's Xtensa semihosting: the call in a2, its arguments in a3..a5; the result comes
   back in a2 and errno in a3. */
static int simcall(int call, int a, int b, int c, int *error) {
    register int a2 __asm__("a2") = call;
    register int a3 __asm__("a3") = a;
    register int a4 __asm__("a4") = b;
    register int a5 __asm__("a5") = c;
    __asm__ volatile(".byte 0x00, 0x51, 0x00" /* simcall */ : "+r"(a2), "+r"(a3) : "r"(a4), "r"(a5) : "memory");
    *error = a3;
    return a2;
}

static void escape(void) {
    customop_setup(false);
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *path = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *secret = customop_next_tensor();
    const NEURON_ISA_TPB_CUSTOM_OP_ARG_TENSOR *out = get_dst_tensor();
    if (path != NULL && secret != NULL && out != NULL) {
        int32_t *result = customop_tensor_data(out);
        int error = 0;
        /* open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644): QEMU hands the flags to the
           host's open() as they are, so Linux's values */
        int fd = simcall(5, (int)customop_tensor_data(path), 0x241, 0644, &error);
        result[0] = fd;
        result[1] = error;
        result[2] = simcall(4, fd, (int)"escaped\n", 8, &error);
        result[3] = simcall(6, fd, 0, 0, &error);
        /* open(secret, O_RDONLY), read(fd, buffer, 8) */
        static char buffer[8];
        fd = simcall(5, (int)customop_tensor_data(secret), 0, 0, &error);
        result[4] = fd;
        result[5] = error;
        result[6] = simcall(3, fd, (int)buffer, sizeof buffer, &error);
        result[7] = buffer[0];
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

/// A NUL-terminated path as a uint8 tensor.
fn path_tensor(path: &std::path::Path) -> Array {
    let mut bytes = path.to_str().expect("a UTF-8 path").as_bytes().to_vec();
    bytes.push(0);
    Array::from_vec(vec![bytes.len()], bytes).unwrap()
}

#[test]
fn a_kernels_own_semihosting_is_named_and_cannot_create_write_or_read_a_host_file() {
    let dir = crate::common::checkout().join("target/sandbox-tests/escape");
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/escape.c"), ESCAPE).unwrap();
    let target = dir.join("escaped.txt");
    let _ = fs::remove_file(&target);
    let secret = dir.join("secret.txt");
    fs::write(&secret, "secret\n").unwrap();
    let library = Library::load(&dir).unwrap_or_else(|e| panic!("packaging the escape kernel: {e}"));
    let args = [Arg::Tensor(path_tensor(&target)), Arg::Tensor(path_tensor(&secret))];
    let output = Output::Shape { dtype: Dtype::Int32, shape: vec![8] };
    // EACCES (13): Landlock refused QEMU the write and the read; the calls on fd -1 fail too.
    let refused = [-1, 13, -1, -1, -1, 13, -1, 0];
    for _ in 0..2 {
        // Twice: the device goes on, the same call again on the same booted device.
        let call = library.call_with("escape", &args, output.clone(), &Options::default()).unwrap();
        assert!(!target.exists(), "the kernel created {}", target.display());
        assert_eq!(call.output.to_vec::<i32>().unwrap(), refused);
        // Each simcall is a finding that names the kernel's line, and fails the call.
        let finding = call.findings.shown.first().unwrap_or_else(|| panic!("no finding: {}", call.findings));
        assert_eq!((finding.kind, finding.core), (FindingKind::Simcall, 0), "{finding}");
        let line = ESCAPE.lines().position(|line| line.contains("/* simcall */")).unwrap() + 1;
        let at = finding.at.clone().unwrap_or_default();
        assert!(at.contains(&format!("escape.c:{line}")), "{finding}");
        let failed = call.check().unwrap_err().to_string();
        assert!(failed.contains("semihosting call on core 0"), "{failed}");
    }
}
