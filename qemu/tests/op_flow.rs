//! An op author's flow end to end under QEMU: a package (8 images and
//! `ucode_lib.json`) that the strict reader reads back byte for byte, ops dispatched
//! from 0x85/0x86 words through the simulated loader with the package's FunctionIds,
//! and malformed words the loader rejects. Each example checks its own kernels
//! against its host reference (`examples/<name>/tests/`).

use neuroncustomop::data_transfer::NeuronMemcpyMethod;
use neuroncustomop_host::array::{Array, Dtype};
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Library, Options, Output, Staged, stage};
use neuroncustomop_machine::device::{self, OpStatus, Report};
use neuroncustomop_machine::images::CORES;
use neuroncustomop_package::package::{ISA_VERSION, Package, library_file_name, ucode_version};
use neuroncustomop_package::ucode_lib::UcodeLib;
use neuroncustomop_wire::{FunctionId, encode};
use std::collections::BTreeMap;
use std::fs;

use crate::common::packaged;

fn relu_input(elements: usize, seed: u64) -> Array {
    generate(Dtype::Float32, vec![elements], Distribution::Uniform { low: -100.0, high: 100.0 }, seed)
}

fn relu_of(x: &Array) -> Array {
    Array::from_vec(x.shape().to_vec(), x.to_vec::<f32>().unwrap().iter().map(|v| v.max(0.0)).collect()).unwrap()
}

#[test]
fn the_job_selects_any_memcpy_backend_for_the_tcm_copies() {
    // One 1,024-element TCM chunk: one copy in, one copy out.
    let x = relu_input(1000, 23);
    let library = Library::from_package(packaged("relu"));
    let mut counts = BTreeMap::new();
    for memcpy in NeuronMemcpyMethod::ALL {
        let options = Options { memcpy, ..Options::default() };
        let call = library.call_with("relu_tcm", &[Arg::Tensor(x.clone())], Output::Like(0), &options).expect("call");
        let call = call.check().unwrap_or_else(|failed| panic!("{memcpy:?}: {failed}"));
        assert_eq!(call.output, relu_of(&x), "{memcpy:?}");
        counts.insert(memcpy as u32, call.instructions[0]);
    }
    // The backend shows in the kernel's count: the two CPU copies are one routine since
    // the libc `memcpy` became the vector copy (within 1%: only their way in differs);
    // the DMA copies differ, costing the waiting core only its queueing and a few
    // wake-ups (it sleeps while the engine works), so they stay within 2x the vector
    // memcpy (docs/PERFORMANCE.md).
    let count = |method: NeuronMemcpyMethod| counts[&(method as u32)];
    let (c, vector, dma) =
        (count(NeuronMemcpyMethod::CMemcpy), count(NeuronMemcpyMethod::VecMemcpy), count(NeuronMemcpyMethod::Dma));
    assert!(c.abs_diff(vector) * 100 <= vector, "C {c}, vector {vector}: not the same copy");
    assert!(dma != vector && dma != c, "C {c}, vector {vector}, DMA {dma}: the job's method was not used");
    assert!(dma <= 2 * vector, "C {c}, vector {vector}, DMA {dma}: waiting for the engine costs too much");

    // An invalid method is refused by the runtime: the library keeps its own (DMA).
    let mut job = library.package().unwrap().job(1).expect("job");
    job.header.memcpy_method = NeuronMemcpyMethod::MAX_METHODS;
    let staged = stage(&mut job, &[Arg::Tensor(x.clone())], Output::Like(0)).expect("staged");
    push(&mut job, library.package().unwrap().function_id("relu_tcm").expect("relu_tcm"), staged);
    let report = device::run(&library.package().unwrap().images, &job).expect("QEMU runs");
    assert_eq!(report.core(0).ops[0].status, OpStatus::Returned(0));
    assert_eq!(report.dumps[&0], relu_of(&x).bytes());
}

fn push(job: &mut neuroncustomop_machine::job::Job, function: FunctionId, staged: Staged) {
    let op = neuroncustomop_machine::job::Op {
        function,
        output: Some(staged.output),
        inputs: staged.inputs,
        dump: staged.dump,
    };
    job.push(&op).expect("op");
}

#[test]
fn a_real_package_round_trips_through_the_strict_reader() {
    for (name, kernels) in
        [("relu", &["relu", "relu_tcm", "relu_multicore"][..]), ("c_kernel", &["scale", "scale_multicore"][..])]
    {
        let packaged = packaged(name);
        let text = fs::read_to_string(packaged.dir.join("ucode_lib.json")).expect("ucode_lib.json");
        let read = UcodeLib::from_json(&text).expect("the strict reader accepts it");
        assert_eq!(read, packaged.ucode_lib);
        assert_eq!(read.to_json().expect("writes"), text, "byte-exact round trip");
        assert_eq!(packaged.kernels(), kernels);

        assert_eq!(read.libraries.len(), CORES);
        for (cpu, library) in read.libraries.iter().enumerate() {
            assert_eq!(library.library, library_file_name(name, cpu));
            assert_eq!(
                (usize::from(library.cpu_id), usize::from(library.total_cpus), library.is_builtin),
                (cpu, CORES, false)
            );
            assert_eq!(
                (library.ulib_to_ucode_version.as_str(), library.ulib_to_isa_version.as_str()),
                (ucode_version().as_str(), ISA_VERSION)
            );
            let bound: Vec<(&str, u8)> =
                library.functions.iter().map(|f| (f.name.as_str(), f.sub_opcode.get())).collect();
            let dense: Vec<(&str, u8)> = kernels.iter().enumerate().map(|(id, name)| (*name, id as u8)).collect();
            assert_eq!(bound, dense, "FunctionIds dense from 0 in registration order");
            let image = fs::read(packaged.dir.join(&library.library)).expect("the image");
            assert_eq!(image, fs::read(&packaged.images.cores[cpu]).expect("the packaged image"));
            let base = 0x8400_0000 + cpu as u32 * 0x20_0000;
            let entry = neuroncustomop_machine::elf::symbol(&image, "entry_func").expect("ELF").expect("entry_func");
            assert!((base..base + 0x20_0000).contains(&entry), "cpu {cpu}'s image is linked for cpu {cpu}");
        }

        let opened = Package::open(&packaged.dir).expect("the package opens");
        assert_eq!(opened.ucode_lib, read);
        assert_eq!(opened.images.cores, packaged.images.cores);
    }
}

/// A job of the relu package on one core with op 0 a good `relu` and op 1 given as raw
/// words by `words`, from the descriptors of a second relu call.
fn run_words(words: impl FnOnce(&Package, &Staged) -> Vec<u8>) -> Report {
    let package = packaged("relu");
    let mut job = package.job(1).expect("job");
    let x = relu_input(64, 21);
    let good = stage(&mut job, &[Arg::Tensor(x.clone())], Output::Like(0)).expect("staged");
    push(&mut job, package.function_id("relu").expect("relu"), good);
    let bad = stage(&mut job, &[Arg::Tensor(relu_input(64, 22))], Output::Like(0)).expect("staged");
    job.words.extend(words(&package, &bad));
    job.dumps.push(bad.dump);
    let report = device::run(&package.images, &job).expect("QEMU runs");
    assert!(report.done, "{}", report.outcome.stdout);
    assert_eq!(report.core(0).ops[0].status, OpStatus::Returned(0), "op 0 runs");
    assert_eq!(report.dumps[&0], relu_of(&x).bytes());
    report
}

/// The loader's line for op 1, which it rejected: no kernel ran.
fn rejected(report: &Report) -> String {
    assert_eq!(report.core(0).ops[1].status, OpStatus::BadWords);
    report.outcome.stdout.lines().find(|line| line.starts_with("OP 1 ")).expect("an OP 1 line").to_string()
}

#[test]
fn a_function_id_the_package_does_not_have_is_rejected_by_the_loader() {
    let run = run_words(|package, staged| {
        let unknown = FunctionId::new(package.kernels().len() as u8).expect("an id");
        encode(unknown, Some(&staged.output), &staged.inputs).expect("words").as_bytes().to_vec()
    });
    assert!(rejected(&run).ends_with("error=FunctionId 3 names no registered function"), "{}", rejected(&run));
}

#[test]
fn a_payload_count_that_does_not_match_n_is_rejected_by_the_loader() {
    let run = run_words(|package, staged| {
        let mut words = encode(package.function_id("relu").expect("relu"), Some(&staged.output), &staged.inputs)
            .expect("words")
            .as_bytes()
            .to_vec();
        words[0x0C] = 4; // num_payloads 4 with num_arguments 1 (N + 2 = 3)
        words
    });
    assert!(
        rejected(&run).ends_with("error=num_payloads 4 does not match num_arguments 1 (expected 3)"),
        "{}",
        rejected(&run)
    );
}

#[test]
fn a_second_output_is_rejected_by_the_loader() {
    let run = run_words(|package, staged| {
        // Two inputs, the second of them marked as an output too.
        let inputs = [staged.inputs[0], staged.inputs[0]];
        let mut words = encode(package.function_id("relu").expect("relu"), Some(&staged.output), &inputs)
            .expect("words")
            .as_bytes()
            .to_vec();
        words[2 * 64 + 0x0F] |= 0x01; // word 2's flags: OUTPUT
        words
    });
    assert!(
        rejected(&run).ends_with("error=word 2: a second output payload (at most one output)"),
        "{}",
        rejected(&run)
    );
}
