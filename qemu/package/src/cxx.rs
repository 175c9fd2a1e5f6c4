//! C++ libraries written against the AWS Neuron custom-op torch API: building their 8
//! images, and running their shape functions on the host.
//!
//! A C++ library is a folder with a `customop.json` that says what the author's
//! `custom_op.load(...)` call says:
//!
//! ```json
//! { "compute_srcs": ["relu.cpp"], "shape_srcs": ["shape.cpp"],
//!   "extra_cflags": ["-DSTACK_SIZE=20000"], "multicore": false }
//! ```
//!
//! The build ([`build_images`]):
//! 1. compiles the shape sources for the host with `g++`, the torch headers in their
//!    host form (`TORCHNEURON_HOST`: tensors with a shape, no data) and the shape
//!    driver (`runtime/include/torchneuron/shape_driver.cpp`), and runs its
//!    `NEURON_LIBRARY` registration ([`Registration`]): the op names, the name of each
//!    op's compute function, its argument kinds; more than 10 ops is an error;
//! 2. writes one C++ unit that includes the compute sources and, for each op, an entry
//!    `torchneuron::entry::run(&<compute function>)` — the entry is derived from the
//!    function's C++ type by templates, and a `static_assert` per argument names one
//!    the entry cannot pull — plus the kernel table `get_func_cnt/ptr/name`;
//! 3. compiles it with Debian's `clang++-22`, freestanding, `-fno-exceptions
//!    -fno-rtti`, to assembly and through `llvm-mc` (the LLVM 22 workaround of C
//!    kernels, docs/toolchain.md), and links it with `libneuroncustomop.a`, keeping the
//!    runtime's C++ support symbols ([`RUNTIME_SYMBOLS`]) in every image.
//!
//! [`output_shape`] asks the shape driver for an op's output shape and dtype, which is
//! how the real flow gets them; the simulator needs no output-shape flag for C++ ops.

use crate::package::{self, PackageError};
use crate::step_cache::{self, Step};
use neuroncustomop::wrapper_api::Dtype;
use neuroncustomop_machine::images::Images;
use neuroncustomop_machine::process;
use neuroncustomop_machine::toolchain::{Llvm, Toolchain};
use serde::Deserialize;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file that makes a folder a C++ library.
pub const MANIFEST: &str = "customop.json";

/// The host C++ compiler the shape sources are built with.
pub const HOST_CXX: &str = "g++";

/// The most functions a library registers, as the vendor allows.
pub const MAX_FUNCTIONS: usize = 10;

/// The largest `-DSTACK_SIZE` (the vendor's 400 KiB).
pub const MAX_STACK_SIZE: u32 = 400 * 1024;

/// The runtime's C++ support every packaged C++ library carries, defined, whether the
/// kernels use it or not (as the vendor's `start_exit` does): `operator new` /
/// `delete`, the C++ ABI, the libc++ threading stubs, the file shims, stdio, libm.
pub const RUNTIME_SYMBOLS: &[&str] = &[
    "_Znwj",
    "_Znaj",
    "_ZnwjSt11align_val_t",
    "_ZnajSt11align_val_t",
    "_ZnwjRKSt9nothrow_t",
    "_ZnajRKSt9nothrow_t",
    "_ZnwjSt11align_val_tRKSt9nothrow_t",
    "_ZnajSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv",
    "_ZdaPv",
    "_ZdlPvj",
    "_ZdaPvj",
    "_ZdlPvSt11align_val_t",
    "_ZdaPvSt11align_val_t",
    "_ZdlPvjSt11align_val_t",
    "_ZdaPvjSt11align_val_t",
    "_ZdlPvRKSt9nothrow_t",
    "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t",
    "__cxa_atexit",
    "__dso_handle",
    "__cxa_pure_virtual",
    "__cxa_guard_acquire",
    "__cxa_guard_release",
    "__cxa_guard_abort",
    "_init",
    "null_environ",
    "_ZNSt3__129__libcpp_recursive_mutex_initEPj",
    "_ZNSt3__129__libcpp_recursive_mutex_lockEPj",
    "_ZNSt3__132__libcpp_recursive_mutex_trylockEPj",
    "_ZNSt3__131__libcpp_recursive_mutex_unlockEPj",
    "_ZNSt3__132__libcpp_recursive_mutex_destroyEPj",
    "_ZNSt3__119__libcpp_mutex_lockEPj",
    "_ZNSt3__122__libcpp_mutex_trylockEPj",
    "_ZNSt3__121__libcpp_mutex_unlockEPj",
    "_ZNSt3__122__libcpp_mutex_destroyEPj",
    "_ZNSt3__123__libcpp_condvar_signalEPj",
    "_ZNSt3__126__libcpp_condvar_broadcastEPj",
    "_ZNSt3__121__libcpp_condvar_waitEPjS0_",
    "_ZNSt3__126__libcpp_condvar_timedwaitEPjS0_P8timespec",
    "_ZNSt3__124__libcpp_condvar_destroyEPj",
    "_ZNSt3__121__libcpp_execute_onceEP14pthread_once_tPFvvE",
    "_ZNSt3__124__libcpp_thread_id_equalEjj",
    "_ZNSt3__123__libcpp_thread_id_lessEjj",
    "_ZNSt3__122__libcpp_thread_isnullEPKj",
    "_ZNSt3__122__libcpp_thread_createEPjPFPvS1_ES1_",
    "_ZNSt3__130__libcpp_thread_get_current_idEv",
    "_ZNSt3__122__libcpp_thread_get_idEPKj",
    "_ZNSt3__120__libcpp_thread_joinEPj",
    "_ZNSt3__122__libcpp_thread_detachEPj",
    "_ZNSt3__121__libcpp_thread_yieldEv",
    "_ZNSt3__125__libcpp_thread_sleep_forERKNS_6chrono8durationIxNS_5ratioILx1ELx1000000000EEEEE",
    "_ZNSt3__119__libcpp_tls_createEPjPFvPvE",
    "_ZNSt3__116__libcpp_tls_getEj",
    "_ZNSt3__116__libcpp_tls_setEjPv",
    "_open_r",
    "_close_r",
    "_read_r",
    "_write_r",
    "_unlink_r",
    "fsync",
    "__errno",
    "printf",
    "puts",
    "putchar",
    "__assert_func",
    "expf",
    "logf",
    "sqrtf",
    "tanhf",
    "powf",
    "fabsf",
    "floorf",
    "ceilf",
    "fmaxf",
    "fminf",
    "erff",
    "exp",
    "log",
    "sqrt",
    "tanh",
    "pow",
    "fabs",
    "floor",
    "ceil",
    "fmax",
    "fmin",
    "erf",
];

/// What `customop.json` says: the arguments of the author's `custom_op.load(...)`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The compute sources, relative to the folder.
    pub compute_srcs: Vec<String>,
    /// The shape sources (with the `NEURON_LIBRARY` registration).
    pub shape_srcs: Vec<String>,
    /// Extra compiler flags: only `-DSTACK_SIZE=N` (1..=400 KiB) is accepted.
    #[serde(default)]
    pub extra_cflags: Vec<String>,
    /// Whether every op runs on all 8 cores (`multicore=True`).
    #[serde(default)]
    pub multicore: bool,
}

/// A C++ library folder, its manifest read and checked.
#[derive(Debug, Clone)]
pub struct Library {
    /// The library's name: its folder's.
    pub name: String,
    /// The folder.
    pub dir: PathBuf,
    /// `customop.json`.
    pub manifest: Manifest,
    /// `-DSTACK_SIZE=N`, if given.
    pub stack_size: Option<u32>,
}

fn build_error(what: impl Into<String>) -> PackageError {
    PackageError::CBuild(what.into())
}

impl Library {
    /// Reads and checks the library in `dir`.
    ///
    /// # Errors
    /// [`PackageError::CBuild`] for a manifest that is missing, malformed, names a
    /// source that does not exist, or has a flag other than `-DSTACK_SIZE=N` in range.
    pub fn open(dir: &Path) -> Result<Self, PackageError> {
        let path = dir.join(MANIFEST);
        let text = fs::read_to_string(&path).map_err(|e| build_error(format!("{}: {e}", path.display())))?;
        let manifest: Manifest =
            serde_json::from_str(&text).map_err(|e| build_error(format!("{}: {e}", path.display())))?;
        if manifest.compute_srcs.is_empty() || manifest.shape_srcs.is_empty() {
            return Err(build_error(format!(
                "{}: compute_srcs and shape_srcs must each name a source",
                path.display()
            )));
        }
        for source in manifest.compute_srcs.iter().chain(&manifest.shape_srcs) {
            if !dir.join(source).is_file() {
                return Err(build_error(format!("{}: {source} does not exist", path.display())));
            }
        }
        let mut stack_size = None;
        for flag in &manifest.extra_cflags {
            let value = flag
                .strip_prefix("-DSTACK_SIZE=")
                .ok_or_else(|| build_error(format!("extra_cflags: {flag}: only -DSTACK_SIZE=N is accepted")))?;
            match value.parse::<u32>() {
                Ok(size) if (1..=MAX_STACK_SIZE).contains(&size) => stack_size = Some(size),
                _ => {
                    return Err(build_error(format!(
                        "extra_cflags: {flag}: STACK_SIZE is a byte count from 1 to {MAX_STACK_SIZE} (400 KiB)"
                    )));
                }
            }
        }
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| build_error(format!("{}: not a library folder", dir.display())))?
            .to_owned();
        Ok(Self { name, dir: dir.to_path_buf(), manifest, stack_size })
    }

    /// Where its build's scratch goes (the shape driver, the generated unit, the
    /// objects): the project's own `target/neuroncustomop/cxx/`, so two projects of the
    /// same name in different folders never share it; a built-in example's is this
    /// repository's `target/cxx/<name>/`, beside its other outputs.
    pub fn work_dir(&self, tools: &Toolchain) -> PathBuf {
        match tools.home.checkout() {
            Some(checkout) if package::is_example(&tools.home, &self.dir) => {
                checkout.join("target/cxx").join(&self.name)
            }
            _ => self.dir.join("target/neuroncustomop/cxx"),
        }
    }

    /// The shape driver of this library, once [`build_images`] (or
    /// [`Library::shape_driver`]) built it.
    pub fn shape_driver_path(&self, tools: &Toolchain) -> PathBuf {
        self.work_dir(tools).join("shape_driver")
    }

    /// Compiles the shape sources with the shape driver for the host.
    ///
    /// # Errors
    /// [`PackageError::CBuild`] with the compiler's diagnostics.
    pub fn shape_driver(&self, tools: &Toolchain) -> Result<PathBuf, PackageError> {
        fs::create_dir_all(self.work_dir(tools))?;
        let driver = self.shape_driver_path(tools);
        self.shape_driver_at(tools, &driver)?;
        Ok(driver)
    }

    /// Compiles the shape sources with the shape driver for the host into `driver`
    /// (the host tier keeps its own).
    ///
    /// # Errors
    /// [`PackageError::CBuild`] with the compiler's diagnostics.
    pub fn shape_driver_at(&self, tools: &Toolchain, driver: &Path) -> Result<(), PackageError> {
        let include = tools.home.include_dir();
        let sources: Vec<PathBuf> = self
            .manifest
            .shape_srcs
            .iter()
            .map(|s| self.dir.join(s))
            .chain([include.join("torchneuron/shape_driver.cpp")])
            .collect();
        let depfile = driver.with_extension("d");
        let mut command = Command::new(HOST_CXX);
        command.args(["-std=c++17", "-O1", "-DTORCHNEURON_HOST", "-I"]).arg(&include);
        command.args(&sources).arg("-o").arg(driver).arg("-MD").arg("-MF").arg(&depfile);
        // With two sources, g++ writes the depfile of the last (the driver's: the torch
        // headers and the C++ library's); the author's files are inputs by name.
        let mut inputs = sources;
        inputs.extend(step_cache::sources_under(&self.dir));
        inputs.extend(step_cache::sources_under(&include));
        Step::new(&command, &[], inputs, vec![driver.to_path_buf()], driver.with_extension("stamp"))
            .with_depfile(depfile)
            .run(|| compile(&mut command, "the shape sources"))
            .map(drop)
    }
}

/// One argument kind of an op, as its shape function's C++ type gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// `torch::Tensor` / `const torch::Tensor&`.
    Tensor,
    /// `int` / `int32_t`.
    Int,
    /// `int64_t`.
    Long,
    /// `float`.
    Float,
    /// `double`.
    Double,
}

impl ArgKind {
    /// Every kind, in the order of `torchneuron::ArgKind`: the one list, which
    /// `torchneuron/arg_kind.h` (with register.h and entry.h) and the Python package
    /// follow, each checked by a test.
    pub const ALL: [Self; 5] = [Self::Tensor, Self::Int, Self::Long, Self::Float, Self::Double];

    /// The shape driver's word for it (`torchneuron::arg_kind_name`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Tensor => "tensor",
            Self::Int => "int",
            Self::Long => "long",
            Self::Float => "float",
            Self::Double => "double",
        }
    }

    /// The kind named `word` ([`ArgKind::name`]).
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == word)
    }

    /// Its type in a `torch.library` schema: `Tensor`, `int` (PyTorch's is 64-bit,
    /// for both integer kinds) or `float` (a double, for both floating kinds).
    pub fn schema_type(self) -> &'static str {
        match self {
            Self::Tensor => "Tensor",
            Self::Int | Self::Long => "int",
            Self::Float | Self::Double => "float",
        }
    }
}

/// One op of a `NEURON_LIBRARY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    /// The name it is registered under (`m.def`'s first argument).
    pub name: String,
    /// The compute function's name (`m.def`'s third argument).
    pub kernel: String,
    /// Its arguments, from the shape function's signature.
    pub args: Vec<ArgKind>,
}

/// What a library's `NEURON_LIBRARY` registers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// `NEURON_LIBRARY`'s first argument.
    pub library: String,
    /// Its ops, in registration order.
    pub ops: Vec<Op>,
}

/// Runs the shape driver's `list`: the library's registration.
///
/// # Errors
/// [`PackageError::CBuild`] with the driver's message (more than 10 functions, no
/// `NEURON_LIBRARY`, ...), or for output it cannot read.
pub fn registration(driver: &Path) -> Result<Registration, PackageError> {
    let output = Command::new(driver)
        .arg("list")
        .output()
        .map_err(|e| build_error(format!("cannot run {}: {e}", driver.display())))?;
    if !output.status.success() {
        return Err(build_error(format!("NEURON_LIBRARY: {}", String::from_utf8_lossy(&output.stderr).trim())));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut library = None;
    let mut ops = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["library", name] => library = Some(name.to_string()),
            ["op", name, "kernel", kernel, "args", args @ ..] => ops.push(Op {
                name: name.to_string(),
                kernel: kernel.to_string(),
                args: args
                    .iter()
                    .map(|a| ArgKind::parse(a).ok_or_else(|| build_error(format!("shape driver: argument kind {a}"))))
                    .collect::<Result<_, _>>()?,
            }),
            _ => return Err(build_error(format!("shape driver: unexpected line {line:?}"))),
        }
    }
    let library = library.ok_or_else(|| build_error("shape driver: no library line"))?;
    if ops.is_empty() {
        return Err(build_error(format!("NEURON_LIBRARY({library}) registers no function")));
    }
    if ops.len() > MAX_FUNCTIONS {
        return Err(build_error(format!(
            "NEURON_LIBRARY({library}) registers {} functions: a library has at most {MAX_FUNCTIONS}",
            ops.len()
        )));
    }
    Ok(Registration { library, ops })
}

/// An argument as the shape driver takes it.
#[derive(Debug, Clone, PartialEq)]
pub enum ShapeArg {
    /// A tensor of this dtype and shape.
    Tensor(Dtype, Vec<u32>),
    /// An `int`.
    Int(i32),
    /// An `int64_t`.
    Long(i64),
    /// A `float`.
    Float(f32),
    /// A `double`.
    Double(f64),
}

/// The torch name of a wire dtype (`c10::toString`).
pub fn torch_dtype_name(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::Float32 => "Float",
        Dtype::Bfloat16 => "BFloat16",
        Dtype::Float16 => "Half",
        Dtype::Int32 => "Int",
        Dtype::Int8 => "Char",
        Dtype::Int64 => "Long",
        Dtype::Int16 => "Short",
        Dtype::Uint8 => "Byte",
    }
}

impl ShapeArg {
    /// Its kind.
    pub fn kind(&self) -> ArgKind {
        match self {
            Self::Tensor(..) => ArgKind::Tensor,
            Self::Int(_) => ArgKind::Int,
            Self::Long(_) => ArgKind::Long,
            Self::Float(_) => ArgKind::Float,
            Self::Double(_) => ArgKind::Double,
        }
    }

    fn to_driver(&self) -> String {
        let value = match self {
            Self::Tensor(dtype, shape) => {
                let dims: Vec<String> = shape.iter().map(u32::to_string).collect();
                format!("{}:{}", torch_dtype_name(*dtype), dims.join("x"))
            }
            Self::Int(v) => v.to_string(),
            Self::Long(v) => v.to_string(),
            Self::Float(v) => format!("{v:?}"),
            Self::Double(v) => format!("{v:?}"),
        };
        format!("{}:{value}", self.kind().name())
    }
}

/// An op's output: dtype and shape, from its shape function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputShape {
    /// The dtype.
    pub dtype: Dtype,
    /// The dimensions (1 to 8 of them, each at most 65535).
    pub shape: Vec<u16>,
}

/// Runs op `op`'s shape function on `args` through the shape driver.
///
/// # Errors
/// The driver's message (the shape function threw or failed, an argument that does not
/// fit), or an output of more than 8 dimensions, a dimension above 65535, or a dtype the
/// device has no tensor of.
pub fn output_shape(driver: &Path, op: &str, args: &[ShapeArg]) -> Result<OutputShape, String> {
    let output = Command::new(driver)
        .arg("shape")
        .arg(op)
        .args(args.iter().map(ShapeArg::to_driver))
        .output()
        .map_err(|e| format!("cannot run {}: {e}", driver.display()))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).trim().to_owned());
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let words: Vec<&str> = text.split_whitespace().collect();
    let ["output", dtype, dims] = words.as_slice() else {
        return Err(format!("shape driver: unexpected output {text:?}"));
    };
    let dtype = Dtype::ALL
        .iter()
        .copied()
        .find(|&d| torch_dtype_name(d) == *dtype)
        .ok_or_else(|| format!("the shape function of {op} returns a {dtype} tensor, which no device tensor is"))?;
    let dims: Vec<u64> = dims
        .split('x')
        .map(|d| d.parse().map_err(|_| format!("shape driver: dimension {d:?}")))
        .collect::<Result<_, _>>()?;
    if dims.len() > 8 {
        return Err(format!("the shape function of {op} returns a tensor of {} dims: at most 8", dims.len()));
    }
    let shape = dims
        .iter()
        .map(|&d| {
            u16::try_from(d)
                .map_err(|_| format!("the shape function of {op} returns a dimension of {d}: at most 65535"))
        })
        .collect::<Result<_, _>>()?;
    Ok(OutputShape { dtype, shape })
}

/// The C++ unit the build compiles for the device: the compute sources, one entry per
/// op derived from its compute function's type, and the kernel table.
pub fn generated_unit(library: &Library, registration: &Registration) -> String {
    let mut unit =
        String::from("// Generated by `cargo sim package` from the library's NEURON_LIBRARY: do not edit.\n");
    for source in &library.manifest.compute_srcs {
        writeln!(unit, "#include \"{}\"", library.dir.join(source).display()).expect("a String");
    }
    // The entry's messages name the shape sources (a shape function the kernel disagrees with).
    let shape_srcs: Vec<&str> = library
        .manifest
        .shape_srcs
        .iter()
        .map(|source| Path::new(source).file_name().and_then(|name| name.to_str()).unwrap_or(source))
        .collect();
    writeln!(unit, "#define TORCHNEURON_SHAPE_SRCS {:?}", shape_srcs.join(", ")).expect("a String");
    unit.push_str("#include <torchneuron/entry.h>\n\n");
    for (index, op) in registration.ops.iter().enumerate() {
        let kernel = &op.kernel;
        writeln!(
            unit,
            "static_assert(torchneuron::entry::Signature<decltype(&{kernel})>::arity == {arity}, \
             \"op {name}: {kernel} takes another number of arguments than its shape function ({arity})\");",
            name = op.name,
            arity = op.args.len()
        )
        .expect("a String");
        for position in 0..op.args.len() {
            writeln!(
                unit,
                "static_assert(torchneuron::entry::Pull<torchneuron::entry::Parameter<{position}, decltype(&{kernel})>::type>::supported, \
                 \"op {name}: argument {number} of {kernel} is of a type the kernel entry cannot pull: \
                 it takes const torch::Tensor&, torch::Tensor, int, int32_t, int64_t, float or double\");",
                name = op.name,
                number = position + 1
            )
            .expect("a String");
        }
        writeln!(unit, "extern \"C\" void torchneuron_entry_{index}(void) {{ torchneuron::entry::run(&{kernel}); }}\n")
            .expect("a String");
    }
    let count = registration.ops.len();
    let names: Vec<String> = registration.ops.iter().map(|op| format!("\"{}\"", op.name)).collect();
    let entries: Vec<String> = (0..count).map(|index| format!("torchneuron_entry_{index}")).collect();
    writeln!(
        unit,
        "static const char *const torchneuron_names[{count}] = {{{names}}};\n\
         static void (*const torchneuron_entries[{count}])(void) = {{{entries}}};\n\
         extern \"C\" int get_func_cnt(void) {{ return {count}; }}\n\
         extern \"C\" void *get_func_ptr(int i) {{ return i >= 0 && i < {count} ? (void *)torchneuron_entries[i] : nullptr; }}\n\
         extern \"C\" const char *get_func_name(int i) {{ return i >= 0 && i < {count} ? torchneuron_names[i] : nullptr; }}",
        names = names.join(", "),
        entries = entries.join(", ")
    )
    .expect("a String");
    unit
}

/// Builds `library` into its 8 images (`out/core<i>.elf`): the shape driver, the
/// registration, the generated unit, clang++, llvm-mc, the link.
///
/// # Errors
/// [`PackageError::CBuild`] naming the step that failed (compiler diagnostics go to
/// stderr), [`PackageError::Build`] when the runtime does not build.
pub fn build_images(tools: &Toolchain, library: &Library, out: &Path) -> Result<Images, PackageError> {
    if !Path::new(Llvm::CLANGXX).is_file() {
        return Err(build_error(format!("{} is missing: install Debian's clang-22 (qemu/setup.sh)", Llvm::CLANGXX)));
    }
    let driver = library.shape_driver(tools)?;
    let registration = registration(&driver)?;
    let work = library.work_dir(tools);
    let unit = work.join("entries.cpp");
    fs::write(&unit, generated_unit(library, &registration))?;
    let features = package::target_features(tools)?;
    let (assembly, object) = (work.join("entries.s"), work.join("entries.o"));
    let clang = |features: &[String]| {
        let mut clang = package::xtensa_clang(Llvm::CLANGXX, tools, features);
        clang
            // DWARF 4: clang 22's DWARF 5 line table for C++ names an artificial "<stdin>"
            // file without the MD5 the others have, and llvm-mc warns about it.
            .args(["-std=c++17", "-gdwarf-4", "-Wall", "-Wno-unused-parameter", "-fno-exceptions", "-fno-rtti"])
            .arg("-I")
            .arg(&library.dir)
            .args(&library.manifest.extra_cflags)
            .arg(&unit)
            .arg("-o")
            .arg(&assembly);
        clang
    };
    package::compile_to_object(clang, &unit, &assembly, &object, &features)
        .map_err(|error| undefined_kernels(error, library, &registration))?;
    let keep: Vec<String> = RUNTIME_SYMBOLS.iter().map(|symbol| format!("--undefined={symbol}")).collect();
    package::link_images(tools, &library.name, &work, &[object], &keep, out)
}

/// `error`, the generated unit's failed compile, as one sentence when its cause is ops
/// that `NEURON_LIBRARY` registers and no compute source defines (the compiler's
/// account is several errors in the generated unit); else `error` itself.
fn undefined_kernels(error: PackageError, library: &Library, registration: &Registration) -> PackageError {
    let PackageError::CBuild(diagnostics) = &error else { return error };
    let missing: Vec<&str> = registration
        .ops
        .iter()
        .map(|op| op.kernel.as_str())
        .filter(|kernel| diagnostics.contains(&format!("use of undeclared identifier '{kernel}'")))
        .collect();
    if missing.is_empty() {
        return error;
    }
    let (one, it) = if missing.len() == 1 { ("function", "it") } else { ("functions", "each") };
    build_error(format!(
        "NEURON_LIBRARY({}) registers the {one} {}, which no compute source ({}) defines: define {it} there \
         (returning torch::Tensor), or take its m.def out of the shape sources ({})",
        registration.library,
        missing.join(", "),
        library.manifest.compute_srcs.join(", "),
        library.manifest.shape_srcs.join(", "),
    ))
}

/// Runs a compiler; a failure's error carries its diagnostics.
fn compile(command: &mut Command, what: &str) -> Result<(), PackageError> {
    process::output(command).map(drop).map_err(|failed| build_error(format!("compiling {what}: {failed}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arg_kinds_are_those_of_the_cxx_headers() {
        let header = |name: &str| {
            fs::read_to_string(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../runtime/include/torchneuron").join(name),
            )
            .unwrap()
        };
        let kinds = header("arg_kind.h");
        let (_, rest) = kinds.split_once("enum class ArgKind {").unwrap();
        let variants: Vec<&str> = rest.split_once('}').unwrap().0.split(',').map(str::trim).collect();
        assert_eq!(variants, ArgKind::ALL.map(|kind| format!("{kind:?}")));
        // The host's shape driver makes each kind (register.h), the device's entry pulls it (entry.h).
        let (register, entry) = (header("register.h"), header("entry.h"));
        for kind in ArgKind::ALL {
            let case = format!("case ArgKind::{kind:?}: return \"{}\";", kind.name());
            assert!(kinds.contains(&case), "arg_kind.h's arg_kind_name lacks `{case}`");
            let made = format!("struct FromHostKind<ArgKind::{kind:?}> {{");
            assert!(register.contains(&made), "register.h lacks `{made}`");
            let pulled = format!("struct PullKind<ArgKind::{kind:?}> {{");
            assert!(entry.contains(&pulled), "entry.h lacks `{pulled}`");
        }
    }

    fn manifest_dir(name: &str, manifest: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cxx-manifest-{}", std::process::id())).join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(MANIFEST), manifest).unwrap();
        fs::write(dir.join("k.cpp"), "").unwrap();
        fs::write(dir.join("s.cpp"), "").unwrap();
        dir
    }

    #[test]
    fn the_manifest_takes_only_a_stack_size_in_range() {
        let ok = manifest_dir(
            "ok",
            r#"{"compute_srcs":["k.cpp"],"shape_srcs":["s.cpp"],"extra_cflags":["-DSTACK_SIZE=20000"]}"#,
        );
        let library = Library::open(&ok).unwrap();
        assert_eq!((library.name.as_str(), library.stack_size, library.manifest.multicore), ("ok", Some(20000), false));
        for (name, flags, expected) in [
            ("big", r#"["-DSTACK_SIZE=409601"]"#, "STACK_SIZE is a byte count from 1 to 409600"),
            ("zero", r#"["-DSTACK_SIZE=0"]"#, "STACK_SIZE"),
            ("other", r#"["-O3"]"#, "only -DSTACK_SIZE=N is accepted"),
        ] {
            let dir = manifest_dir(
                name,
                &format!(r#"{{"compute_srcs":["k.cpp"],"shape_srcs":["s.cpp"],"extra_cflags":{flags}}}"#),
            );
            let error = Library::open(&dir).unwrap_err().to_string();
            assert!(error.contains(expected), "{name}: {error}");
        }
        let missing = manifest_dir("missing", r#"{"compute_srcs":["nope.cpp"],"shape_srcs":["s.cpp"]}"#);
        assert!(Library::open(&missing).unwrap_err().to_string().contains("nope.cpp does not exist"));
        let unknown = manifest_dir("unknown", r#"{"compute_srcs":["k.cpp"],"shape_srcs":["s.cpp"],"multicor":true}"#);
        assert!(Library::open(&unknown).unwrap_err().to_string().contains("multicor"));
    }

    #[test]
    fn the_generated_unit_derives_each_entry_from_the_compute_function() {
        let dir = manifest_dir("gen", r#"{"compute_srcs":["k.cpp"],"shape_srcs":["s.cpp"]}"#);
        let library = Library::open(&dir).unwrap();
        let registration = Registration {
            library: "my_ops".into(),
            ops: vec![
                Op { name: "relu_forward".into(), kernel: "relu_forward".into(), args: vec![ArgKind::Tensor] },
                Op {
                    name: "scale".into(),
                    kernel: "scale_compute".into(),
                    args: vec![ArgKind::Tensor, ArgKind::Double],
                },
            ],
        };
        let unit = generated_unit(&library, &registration);
        assert!(unit.contains(&format!("#include \"{}\"", dir.join("k.cpp").display())));
        assert!(unit.contains("void torchneuron_entry_1(void) { torchneuron::entry::run(&scale_compute); }"));
        assert!(unit.contains("Parameter<1, decltype(&scale_compute)>"), "one check per argument");
        assert!(unit.contains("argument 2 of scale_compute"));
        assert!(unit.contains("{\"relu_forward\", \"scale\"}"));
        assert!(unit.contains("int get_func_cnt(void) { return 2; }"));
    }

    #[test]
    fn same_named_projects_in_two_folders_build_apart() {
        let manifest = r#"{"compute_srcs":["k.cpp"],"shape_srcs":["s.cpp"]}"#;
        let (first, second) = (manifest_dir("one/my_op", manifest), manifest_dir("two/my_op", manifest));
        // The tests run with the checkout as the home (.cargo/config.toml).
        let tools = Toolchain { home: neuroncustomop_machine::home::Home::locate().unwrap() };
        let checkout = tools.home.checkout().unwrap().to_path_buf();
        let (a, b) = (Library::open(&first).unwrap(), Library::open(&second).unwrap());
        assert_eq!((a.name.as_str(), b.name.as_str()), ("my_op", "my_op"));
        assert_eq!(a.work_dir(&tools), first.join("target/neuroncustomop/cxx"));
        assert_eq!(b.work_dir(&tools), second.join("target/neuroncustomop/cxx"));
        let example = Library::open(&checkout.join("examples/cxx_relu")).unwrap();
        assert_eq!(example.work_dir(&tools), checkout.join("target/cxx/cxx_relu"));
    }

    #[test]
    fn shape_arguments_are_written_as_the_driver_reads_them() {
        assert_eq!(ShapeArg::Tensor(Dtype::Float32, vec![3, 1001]).to_driver(), "tensor:Float:3x1001");
        assert_eq!(ShapeArg::Long(-4).to_driver(), "long:-4");
        assert_eq!(ShapeArg::Double(0.5).to_driver(), "double:0.5");
    }
}
