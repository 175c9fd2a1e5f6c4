//! The host tier's loader process: `ncop-hostrun [--job FILE --report FILE] core0.so
//! [core1.so …]`, one library copy per core. Job frames on stdin (or from FILE), the
//! loader's report lines on stdout (or to FILE: under gdb, whose own output is the
//! terminal's), as the simulated device (`neuroncustomop_hosttier::loader`). Started by
//! the host API and `ncop run --host`, and under gdb by `ncop run --host --gdb`.

fn main() {
    let mut args = std::env::args_os().skip(1).peekable();
    let (mut job, mut report) = (None, None);
    while let Some(flag) = args.peek().and_then(|a| a.to_str()).filter(|a| a.starts_with("--")).map(String::from) {
        args.next();
        let value = args.next().map(std::path::PathBuf::from);
        match (flag.as_str(), value) {
            ("--job", Some(path)) => job = Some(path),
            ("--report", Some(path)) => report = Some(path),
            _ => usage(),
        }
    }
    let libraries: Vec<std::path::PathBuf> = args.map(Into::into).collect();
    if libraries.is_empty() || libraries.len() > neuroncustomop_wire::job::CORES {
        usage();
    }
    std::process::exit(neuroncustomop_hosttier::loader::run(libraries, job, report));
}

fn usage() -> ! {
    eprintln!(
        "usage: ncop-hostrun [--job FILE --report FILE] core0.so [core1.so …] (1 to 8 library copies, one per core)"
    );
    std::process::exit(2);
}
