//! The device's libm against glibc: every function `runtime/include/libc/math.h`
//! declares, called on the device through its C symbol (`qemu/firmware/src/bin/
//! math_check.rs`) on [`CASES32`] inputs each ([`CASES64`] for doubles, [`CASES_FPU`] for
//! the functions on the FPU), special values
//! included, and compared there with glibc's results for the same inputs, computed here
//! on the host. `LIBM_CASES=full` runs [`CASES_FULL`] of each (several minutes).
//!
//! The goal: at most [`MAX_ULPS`] from glibc everywhere and no special-value mismatch
//! (NaN against a number, infinity against a finite value, zeros of different sign, a
//! different `int` result) except where C allows it: [`LOOSER`] and [`allowed_special`]
//! list each exception with why.

use std::ffi::c_int;
use std::fmt::Write as _;

use neuroncustomop_machine::images;
use neuroncustomop_machine::machine::Boot;
use neuroncustomop_wire::math::{Kind, MAGIC, name_words};

use crate::common::field;

/// Inputs per function of floats. The `libm` crate is software floating point on this
/// core (docs/toolchain.md, "LLVM defects" 5): a call costs 1,000 to 10,000 guest
/// instructions, so CI checks fewer inputs than a full run (`LIBM_CASES=full`).
const CASES32: usize = 2_000;
/// Inputs per function of doubles, which cost more still.
const CASES64: usize = 500;
/// Inputs per function with `LIBM_CASES=full`.
const CASES_FULL: usize = 20_000;
/// The functions on the FPU (`runtime/start_exit/fpu_math.rs`), a few dozen instructions
/// a call: [`CASES_FPU`] inputs each, always.
const FPU_FUNCTIONS: [&str; 3] = ["expf", "logf", "tanhf"];
const CASES_FPU: usize = 100_000;
/// The goal for every function, in units in the last place of glibc's result.
const MAX_ULPS: u64 = 2;
/// Where the firmware reads the table (math_check.rs, `TABLE`): the job tensor area,
/// unused by a firmware boot.
const TABLE: u32 = neuroncustomop_machine::job::TENSOR_AREA;

/// Functions held to a looser bound than [`MAX_ULPS`], with the reason: C sets no bound
/// on any of them, and these are the `libm` crate's (musl's) own accuracy.
const LOOSER: &[(&str, u64, &str)] = &[
    // Division is exact in IEEE 754: not a ulp of difference.
    ("__divsf3", 0, "correctly rounded by definition"),
    // glibc's cbrt is the inexact one: at x = -0.36608784605372036 it is 2.50 ulp from
    // the true cube root, musl's 0.50 (the full run's worst, 3 ulps apart).
    ("cbrt", 3, "glibc's cbrt, up to 2.5 ulp off"),
    ("erfcf", 4, "musl's erfcf near its underflow (results below 1e-36)"),
    ("erfc", 4, "musl's erfc near its underflow"),
    ("tgammaf", 8, "musl's tgammaf for negative arguments"),
    ("tgamma", 8, "musl's tgamma for negative arguments"),
    // glibc computes lgamma near its zeros (x = -2.457..., -2.747..., ...) from special
    // expansions; musl subtracts two close values there, so the result, tiny, keeps an
    // absolute error of about 1e-7 (float) / 1e-16 (double) but few correct bits.
    // (The full run's worst: 20,246 ulps at x = -2.4570 for lgammaf_r.)
    ("lgammaf", 65_536, "musl's lgammaf near the zeros of lgamma"),
    ("lgammaf_r", 65_536, "musl's lgammaf near the zeros of lgamma"),
    ("lgamma", 512, "musl's lgamma near the zeros of lgamma"),
    ("lgamma_r", 512, "musl's lgamma near the zeros of lgamma"),
];

/// Whether C allows a special-value mismatch of `name` on these arguments (the case's
/// words), and why; `None` for a real mismatch.
fn allowed_special(name: &str, kind: Kind, args: &[u32]) -> Option<&'static str> {
    // (value, signalling NaN) of each argument.
    let values: Vec<(f64, bool)> = match kind {
        Kind::F2 | Kind::F1 | Kind::F3 => {
            args.iter().map(|&w| (f64::from(f(w)), f(w).is_nan() && w & 0x0040_0000 == 0)).collect()
        }
        Kind::D2 | Kind::D1 | Kind::D3 => {
            args.chunks(2).map(|w| (d(w), d(w).is_nan() && w[1] & 0x0008_0000 == 0)).collect()
        }
        _ => return None,
    };
    match name {
        // C (Annex F) makes hypot(±inf, NaN) +inf and pow(x, ±0), pow(1, y) 1 "even if
        // the other argument is a NaN", and leaves signalling NaNs out of its scope
        // (F.2.1); glibc returns NaN for a signalling one, musl the number.
        "hypotf" | "hypot" | "powf" | "pow" if values.iter().any(|v| v.1) => {
            Some("a signalling NaN where C gives a number")
        }
        // Of -0 and +0, C lets fmax/fmin return either (F.10.9.2); glibc returns one by
        // operand order, these +0 for fmax and -0 for fmin, as IEEE 754-2019 does.
        "fmaxf" | "fminf" | "fmax" | "fmin" if values.iter().all(|v| v.0 == 0.0) => Some("the sign of a zero"),
        _ => None,
    }
}

/// glibc's function, typed.
#[derive(Clone, Copy)]
enum Glibc {
    F1(unsafe extern "C" fn(f32) -> f32),
    F2(unsafe extern "C" fn(f32, f32) -> f32),
    F3(unsafe extern "C" fn(f32, f32, f32) -> f32),
    D1(unsafe extern "C" fn(f64) -> f64),
    D2(unsafe extern "C" fn(f64, f64) -> f64),
    D3(unsafe extern "C" fn(f64, f64, f64) -> f64),
    FOutInt(unsafe extern "C" fn(f32, *mut c_int) -> f32),
    DOutInt(unsafe extern "C" fn(f64, *mut c_int) -> f64),
    FInt(unsafe extern "C" fn(f32, c_int) -> f32),
    DInt(unsafe extern "C" fn(f64, c_int) -> f64),
    IntF(unsafe extern "C" fn(f32) -> c_int),
    IntD(unsafe extern "C" fn(f64) -> c_int),
    FOutF(unsafe extern "C" fn(f32, *mut f32) -> f32),
    DOutD(unsafe extern "C" fn(f64, *mut f64) -> f64),
    F2OutInt(unsafe extern "C" fn(f32, f32, *mut c_int) -> f32),
    D2OutInt(unsafe extern "C" fn(f64, f64, *mut c_int) -> f64),
}

impl Glibc {
    fn kind(self) -> Kind {
        match self {
            Glibc::F1(_) => Kind::F1,
            Glibc::F2(_) => Kind::F2,
            Glibc::F3(_) => Kind::F3,
            Glibc::D1(_) => Kind::D1,
            Glibc::D2(_) => Kind::D2,
            Glibc::D3(_) => Kind::D3,
            Glibc::FOutInt(_) => Kind::FOutInt,
            Glibc::DOutInt(_) => Kind::DOutInt,
            Glibc::FInt(_) => Kind::FInt,
            Glibc::DInt(_) => Kind::DInt,
            Glibc::IntF(_) => Kind::IntF,
            Glibc::IntD(_) => Kind::IntD,
            Glibc::FOutF(_) => Kind::FOutF,
            Glibc::DOutD(_) => Kind::DOutD,
            Glibc::F2OutInt(_) => Kind::F2OutInt,
            Glibc::D2OutInt(_) => Kind::D2OutInt,
        }
    }
}

/// Lists glibc's functions with the scale of their random inputs.
macro_rules! glibc {
    ($($variant:ident: fn $args:tt -> $ret:ty { $($name:ident $scale:literal),+ })*) => {
        /// Every function: (C name, glibc's, the half-width of its uniform inputs), and
        /// the runtime's `__divsf3` (the FPU's divide sequence) against IEEE division.
        fn functions() -> Vec<(&'static str, Glibc, f64)> {
            let mut all = vec![$($((
                stringify!($name),
                Glibc::$variant(glibc_symbol::<unsafe extern "C" fn $args -> $ret>(stringify!($name))),
                $scale as f64,
            ),)+)*];
            all.push(("__divsf3", Glibc::F2(divide), 1e3));
            all
        }
    };
}

unsafe extern "C" {
    fn dlopen(file: *const std::ffi::c_char, mode: c_int) -> *mut std::ffi::c_void;
    fn dlsym(handle: *mut std::ffi::c_void, name: *const std::ffi::c_char) -> *mut std::ffi::c_void;
}

/// glibc's own `name`, from `libm.so.6`. Not the symbol the test binary links: Rust's
/// `compiler_builtins` defines some of the same names (`fmaxf`, `fmod`, ...) itself,
/// weakly, and the executable's definition would win over the shared library's.
fn glibc_symbol<F: Copy>(name: &str) -> F {
    const RTLD_NOW: c_int = 2;
    let name = std::ffi::CString::new(name).unwrap();
    // SAFETY: both are NUL-terminated strings that outlive the calls; dlopen of a
    // loaded library returns its handle, dlsym a symbol's address or null.
    let address = unsafe { dlsym(dlopen(c"libm.so.6".as_ptr(), RTLD_NOW), name.as_ptr()) };
    assert!(!address.is_null(), "glibc has no {name:?}");
    assert_eq!(size_of::<F>(), size_of_val(&address));
    // SAFETY: F is the function pointer type of the C prototype glibc's math.h gives
    // `name` (the table below), the same size as the address.
    unsafe { std::mem::transmute_copy(&address) }
}

glibc! {
    F1: fn(f32) -> f32 {
        expf 100, exp2f 150, expm1f 100, logf 1e3, log2f 1e3, log10f 1e3, log1pf 10, sqrtf 1e4,
        cbrtf 1e4, sinf 10, cosf 10, tanf 10, asinf 1.1, acosf 1.1, atanf 20, sinhf 100, coshf 100,
        tanhf 10, asinhf 100, acoshf 100, atanhf 1.1, erff 5, erfcf 12, tgammaf 40, lgammaf 50,
        fabsf 100, floorf 100, ceilf 100, truncf 100, roundf 100, roundevenf 100, rintf 100,
        nearbyintf 100
    }
    F2: fn(f32, f32) -> f32 {
        hypotf 1e3, powf 20, atan2f 10, fmodf 1e3, remainderf 1e3, copysignf 100, fdimf 100,
        nextafterf 2, fmaxf 10, fminf 10, fmaximumf 10, fminimumf 10, fmaximum_numf 10,
        fminimum_numf 10
    }
    F3: fn(f32, f32, f32) -> f32 { fmaf 100 }
    D1: fn(f64) -> f64 {
        exp 750, exp2 1100, expm1 750, log 1e3, log2 1e3, log10 1e3, log1p 10, sqrt 1e4, cbrt 1e4,
        sin 10, cos 10, tan 10, asin 1.1, acos 1.1, atan 20, sinh 750, cosh 750, tanh 30,
        asinh 100, acosh 100, atanh 1.1, erf 6, erfc 30, tgamma 180, lgamma 100, fabs 100,
        floor 100, ceil 100, trunc 100, round 100, roundeven 100, rint 100, nearbyint 100
    }
    D2: fn(f64, f64) -> f64 {
        hypot 1e3, pow 20, atan2 10, fmod 1e10, remainder 1e10, copysign 100, fdim 100,
        nextafter 2, fmax 10, fmin 10, fmaximum 10, fminimum 10, fmaximum_num 10, fminimum_num 10
    }
    D3: fn(f64, f64, f64) -> f64 { fma 100 }
    FOutInt: fn(f32, *mut c_int) -> f32 { frexpf 1e6, lgammaf_r 50 }
    DOutInt: fn(f64, *mut c_int) -> f64 { frexp 1e6, lgamma_r 100 }
    FInt: fn(f32, c_int) -> f32 { ldexpf 100, scalbnf 100 }
    DInt: fn(f64, c_int) -> f64 { ldexp 100, scalbn 100 }
    IntF: fn(f32) -> c_int { ilogbf 1e6 }
    IntD: fn(f64) -> c_int { ilogb 1e6 }
    FOutF: fn(f32, *mut f32) -> f32 { modff 1e8 }
    DOutD: fn(f64, *mut f64) -> f64 { modf 1e17 }
    F2OutInt: fn(f32, f32, *mut c_int) -> f32 { remquof 1e3 }
    D2OutInt: fn(f64, f64, *mut c_int) -> f64 { remquo 1e10 }
}

/// f32 division as IEEE 754 defines it (the host's `divss`), the reference of the
/// device's `__divsf3`, which must match it bit for bit.
extern "C" fn divide(x: f32, y: f32) -> f32 {
    x / y
}

/// A small deterministic generator (xorshift64*), so every run checks the same inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// In [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An input of a function whose interesting range is [-scale, scale]: a special
    /// value, any bit pattern, uniform in the range, or a log-uniform magnitude.
    fn input(&mut self, scale: f64, specials: &[f64]) -> Input {
        match self.next() % 8 {
            0 => Input::Value(specials[(self.next() % specials.len() as u64) as usize]),
            1 | 2 => Input::Bits(self.next()),
            3..=5 => Input::Value((self.unit() * 2.0 - 1.0) * scale),
            _ => {
                let magnitude = 2f64.powf(self.unit() * 80.0 - 40.0);
                Input::Value(if self.next().is_multiple_of(2) { magnitude } else { -magnitude })
            }
        }
    }

    /// An exponent argument of `ldexp`/`scalbn`: mostly small, sometimes extreme.
    fn exponent(&mut self) -> c_int {
        match self.next() % 8 {
            0 => [c_int::MIN, c_int::MAX, -1100, 1100, -160, 160, 0, -1][(self.next() % 8) as usize],
            _ => (self.next() % 601) as c_int - 300,
        }
    }
}

/// A generated input: a value, or raw bits (any float, NaNs and subnormals included).
#[derive(Clone, Copy)]
enum Input {
    Value(f64),
    Bits(u64),
}

impl Input {
    fn f32(self) -> f32 {
        match self {
            Input::Value(v) => v as f32,
            Input::Bits(b) => f32::from_bits(b as u32),
        }
    }

    fn f64(self) -> f64 {
        match self {
            Input::Value(v) => v,
            Input::Bits(b) => f64::from_bits(b),
        }
    }
}

/// The special values every function is called on (and, for two arguments, every
/// pair of them): zeros, infinities, NaNs (a signalling one too), the edges of the
/// subnormals and of the range, small integers and halves.
fn specials32() -> Vec<f32> {
    let mut values = vec![
        0.0,
        f32::INFINITY,
        f32::NAN,
        f32::from_bits(0x7fa0_0000),
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        f32::MAX,
        1.0,
        0.5,
        1.5,
        2.0,
        3.0,
        10.0,
        88.72284,
        89.0,
        1e-20,
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::PI,
    ];
    values.extend(values.clone().iter().map(|v| -v));
    values
}

fn specials64() -> Vec<f64> {
    let mut values = vec![
        0.0,
        f64::INFINITY,
        f64::NAN,
        f64::from_bits(0x7ff4_0000_0000_0000),
        f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        f64::MIN_POSITIVE,
        f64::MAX,
        1.0,
        0.5,
        1.5,
        2.0,
        3.0,
        10.0,
        709.782712893384,
        710.0,
        1e-300,
        std::f64::consts::FRAC_PI_2,
        std::f64::consts::PI,
        1e10,
        3.0e15,
    ];
    values.extend(values.clone().iter().map(|v| -v));
    values
}

fn words64(x: f64) -> [u32; 2] {
    let bits = x.to_bits();
    [bits as u32, (bits >> 32) as u32]
}

/// The arguments of each case: the specials (pairs of them for two arguments), then
/// random inputs, [`CASES32`] or [`CASES64`] in all.
fn arguments(name: &str, kind: Kind, scale: f64, rng: &mut Rng) -> Vec<Vec<u32>> {
    let (s32, s64) = (specials32(), specials64());
    let s64_as_f64: Vec<f64> = s32.iter().map(|&v| f64::from(v)).collect();
    let one32 = |rng: &mut Rng, i: usize, n: usize| -> f32 {
        if i < n { s32[i % s32.len()] } else { rng.input(scale, &s64_as_f64).f32() }
    };
    let one64 = |rng: &mut Rng, i: usize, n: usize| -> f64 {
        if i < n { s64[i % s64.len()] } else { rng.input(scale, &s64).f64() }
    };
    let full = std::env::var("LIBM_CASES").is_ok_and(|v| v == "full");
    let count = match kind {
        _ if FPU_FUNCTIONS.contains(&name) => CASES_FPU,
        _ if full => CASES_FULL,
        Kind::F1 | Kind::F2 | Kind::F3 | Kind::FOutInt | Kind::FInt | Kind::IntF | Kind::FOutF | Kind::F2OutInt => {
            CASES32
        }
        _ => CASES64,
    };
    let mut cases = Vec::with_capacity(count);
    for i in 0..count {
        let (a32, b32) = (s32.len(), s32.len() * s32.len());
        let (a64, b64) = (s64.len(), s64.len() * s64.len());
        let case = match kind {
            Kind::F1 | Kind::FOutInt | Kind::IntF | Kind::FOutF => vec![one32(rng, i, a32).to_bits()],
            Kind::F2 | Kind::F2OutInt => {
                let (x, y) = if i < b32 { (s32[i / a32], s32[i % a32]) } else { (one32(rng, i, 0), one32(rng, i, 0)) };
                vec![x.to_bits(), y.to_bits()]
            }
            Kind::F3 => (0..3).map(|_| one32(rng, i, 0).to_bits()).collect(),
            Kind::FInt => vec![one32(rng, i, a32).to_bits(), rng.exponent() as u32],
            Kind::D1 | Kind::DOutInt | Kind::IntD | Kind::DOutD => words64(one64(rng, i, a64)).to_vec(),
            Kind::D2 | Kind::D2OutInt => {
                let (x, y) = if i < b64 { (s64[i / a64], s64[i % a64]) } else { (one64(rng, i, 0), one64(rng, i, 0)) };
                [words64(x), words64(y)].concat()
            }
            Kind::D3 => (0..3).flat_map(|_| words64(one64(rng, i, 0))).collect(),
            Kind::DInt => [&words64(one64(rng, i, a64))[..], &[rng.exponent() as u32]].concat(),
        };
        cases.push(case);
    }
    cases
}

fn f(w: u32) -> f32 {
    f32::from_bits(w)
}

fn d(w: &[u32]) -> f64 {
    f64::from_bits(u64::from(w[0]) | u64::from(w[1]) << 32)
}

/// glibc's results for one case, as the table's words.
fn glibc_results(function: Glibc, a: &[u32]) -> Vec<u32> {
    let mut int: c_int = 0;
    // SAFETY: each is glibc's function of that exact C signature; the out-pointers
    // are to live locals.
    unsafe {
        match function {
            Glibc::F1(g) => vec![g(f(a[0])).to_bits()],
            Glibc::F2(g) => vec![g(f(a[0]), f(a[1])).to_bits()],
            Glibc::F3(g) => vec![g(f(a[0]), f(a[1]), f(a[2])).to_bits()],
            Glibc::D1(g) => words64(g(d(a))).to_vec(),
            Glibc::D2(g) => words64(g(d(a), d(&a[2..]))).to_vec(),
            Glibc::D3(g) => words64(g(d(a), d(&a[2..]), d(&a[4..]))).to_vec(),
            Glibc::FOutInt(g) => {
                let r = g(f(a[0]), &mut int);
                vec![r.to_bits(), int as u32]
            }
            Glibc::DOutInt(g) => {
                let r = g(d(a), &mut int);
                [&words64(r)[..], &[int as u32]].concat()
            }
            Glibc::FInt(g) => vec![g(f(a[0]), a[1] as c_int).to_bits()],
            Glibc::DInt(g) => words64(g(d(a), a[2] as c_int)).to_vec(),
            Glibc::IntF(g) => vec![g(f(a[0])) as u32],
            Glibc::IntD(g) => vec![g(d(a)) as u32],
            Glibc::FOutF(g) => {
                let mut whole = 0.0f32;
                let r = g(f(a[0]), &mut whole);
                vec![r.to_bits(), whole.to_bits()]
            }
            Glibc::DOutD(g) => {
                let mut whole = 0.0f64;
                let r = g(d(a), &mut whole);
                [words64(r), words64(whole)].concat()
            }
            Glibc::F2OutInt(g) => {
                let r = g(f(a[0]), f(a[1]), &mut int);
                vec![r.to_bits(), int as u32]
            }
            Glibc::D2OutInt(g) => {
                let r = g(d(a), d(&a[2..]), &mut int);
                [&words64(r)[..], &[int as u32]].concat()
            }
        }
    }
}

/// The table the firmware reads: every function's cases and glibc's results.
fn table() -> Vec<u8> {
    let functions = functions();
    let mut words = vec![MAGIC, functions.len() as u32];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (name, function, scale) in functions {
        words.extend(name_words(name).unwrap_or_else(|| panic!("{name}: a longer name than the table holds")));
        let kind = function.kind();
        let cases = arguments(name, kind, scale, &mut rng);
        words.extend([kind as u32, cases.len() as u32]);
        for case in cases {
            let results = glibc_results(function, &case);
            words.extend(case);
            words.extend(results);
        }
    }
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The function names `math.h` declares.
fn declared() -> Vec<String> {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime/include/libc/math.h"))
        .expect("math.h");
    header
        .lines()
        .filter(|line| line.ends_with(");") && !line.starts_with('#'))
        .filter_map(|line| Some(line.split('(').next()?.split([' ', '*']).next_back()?.to_string()))
        .collect()
}

#[test]
fn every_declared_math_function_is_tested() {
    let tested: Vec<&str> = functions().iter().map(|(name, ..)| *name).filter(|name| *name != "__divsf3").collect();
    let declared = declared();
    assert!(declared.len() > 100, "{declared:?}");
    for name in &declared {
        assert!(tested.contains(&name.as_str()), "{name} is declared in math.h and not compared with glibc");
    }
    assert_eq!(tested.len(), declared.len(), "a tested function math.h does not declare");
}

#[test]
fn every_math_function_on_the_device_matches_glibc() {
    let dir = std::env::temp_dir().join(format!("libm-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let table_file = dir.join("table.bin");
    std::fs::write(&table_file, table()).unwrap();
    let built = images::build("math_check").unwrap_or_else(|e| panic!("building math_check: {e}"));
    let mut boot = Boot::new(built.cores[..1].to_vec());
    boot.timeout = std::time::Duration::from_secs(1800);
    boot.data.push((table_file, TABLE));
    let started = std::time::Instant::now();
    let outcome = boot.run().expect("QEMU runs");
    eprintln!("the device's part: {:.1} s", started.elapsed().as_secs_f64());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!outcome.timed_out && outcome.code() == Some(0), "{}\n{}", outcome.stdout, outcome.stderr);
    let mut failures = String::new();
    let lines: Vec<&str> = outcome.stdout.lines().filter(|l| l.starts_with("MATH ")).collect();
    assert_eq!(lines.len(), functions().len(), "{}", outcome.stdout);
    for line in lines {
        let name = line.split_whitespace().nth(1).unwrap();
        let max_ulp: u64 = field(line, "max_ulp").parse().unwrap();
        let special: usize = field(line, "special").parse().unwrap();
        let ulps = LOOSER.iter().find(|(n, ..)| *n == name).map_or(MAX_ULPS, |&(_, ulps, _)| ulps);
        let specials: Vec<&str> =
            outcome.stdout.lines().filter(|l| l.starts_with(&format!("MATHSPECIAL {name} "))).collect();
        let arg_words = |l: &str| -> Vec<u32> {
            let words: Vec<u32> = field(l, "case").split(':').map(|w| u32::from_str_radix(w, 16).unwrap()).collect();
            let results = field(l, "got").split(':').count();
            words[..words.len() - results].to_vec()
        };
        let kind = functions().iter().find(|(n, ..)| *n == name).expect("a function of the table").1.kind();
        let unexplained: Vec<&&str> =
            specials.iter().filter(|l| allowed_special(name, kind, &arg_words(l)).is_none()).collect();
        if max_ulp > ulps || !unexplained.is_empty() || special > specials.len() {
            let shown: Vec<&str> = unexplained.iter().map(|l| **l).collect();
            writeln!(failures, "{line}\n  {}", shown.join("\n  ")).unwrap();
        }
    }
    assert!(failures.is_empty(), "functions past their bound against glibc:\n{failures}");
}
