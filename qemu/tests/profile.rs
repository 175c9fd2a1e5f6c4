//! The profile of an op (the TCG plugin's `profile` module, folded by
//! `neuroncustomop-profile`) and the device cost model, on the AWS tutorial's three
//! ReLU designs (`examples/relu`): the profile's instructions are the call's, the
//! memory regions and DMA bytes are the ones each design must touch, the files open,
//! the trace is in device time, and the cost model fitted to the tutorial's three
//! figures ranks the designs as the tutorial measured. And on a softmax as a newcomer
//! writes it: the summary's inclusive ranking puts `expf` first.

use neuroncustomop_host::array::Array;
use neuroncustomop_host::generate::{Distribution, generate};
use neuroncustomop_host::library::{Arg, Call, Library, Options, Output};
use neuroncustomop_machine::plugin::MARKER_OVERHEAD;
use neuroncustomop_profile::cost::CostModel;
use neuroncustomop_profile::diff::{diff, flame_svg as diff_flame};
use neuroncustomop_profile::fit::{Measured, fit};
use neuroncustomop_profile::profile::{EventKind, Region};
use neuroncustomop_profile::write;
use neuroncustomop_wire::job::DEFAULT_MAX_INSTRUCTIONS;

/// The tutorial's iterations per second on trn1 (element accessor, TCM, TCM on 8 cores).
const PUBLISHED: [f64; 3] = [8.10, 220.74, 269.94];
/// 65,536 f32 elements, as docs/PERFORMANCE.md's "Op flow" table.
const SHAPE: [usize; 2] = [2, 32768];

/// The shipped HBM load latency.
fn model_hbm_load_cycles() -> f64 {
    CostModel::default().hbm.load_cycles
}

fn profiled(library: &Library, kernel: &str, x: &Array, cores: usize) -> Call {
    let options = Options { cores, profile: true, max_instructions: DEFAULT_MAX_INSTRUCTIONS, ..Options::default() };
    let call = library
        .call_with(kernel, &[Arg::Tensor(x.clone())], Output::Like(0), &options)
        .unwrap_or_else(|e| panic!("{kernel}: {}", neuroncustomop_host::library::describe(&e)))
        .check()
        .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    let want: Vec<f32> = x.to_vec::<f32>().unwrap().iter().map(|v| v.max(0.0)).collect();
    assert_eq!(call.output.to_vec::<f32>().unwrap(), want, "{kernel}'s output");
    call
}

#[test]
fn the_relu_designs_profile_exactly_and_the_cost_model_ranks_them_as_the_tutorial() {
    let library = Library::example("relu").expect("packaging examples/relu");
    let x = generate(
        neuroncustomop::wrapper_api::Dtype::Float32,
        SHAPE.to_vec(),
        Distribution::Uniform { low: -100.0, high: 100.0 },
        1,
    );
    let elements = x.numel() as u64;
    let calls = [
        profiled(&library, "relu", &x, 1),
        profiled(&library, "relu_tcm", &x, 1),
        profiled(&library, "relu_multicore", &x, 8),
    ];
    let profiles: Vec<_> = calls.iter().map(|call| call.profile.clone().expect("profiled")).collect();

    for (call, profile) in calls.iter().zip(&profiles) {
        for core in &profile.cores {
            // Every instruction the call counted on the core is in the profile, and so
            // are the loader's op markers; an instruction a window exception interrupts
            // counts once, as it does in the count and in ICOUNT (it starts twice).
            let counted = call.instructions[core.core as usize] + MARKER_OVERHEAD;
            assert_eq!(core.instructions, counted, "{} core {}: the profile against the count", call.kernel, core.core);
            let by_class: u64 = core.mix.values().sum();
            let by_stack: u64 = core.stacks.iter().map(|s| s.instructions).sum();
            let by_function: u64 = core.functions.iter().map(|f| f.instructions).sum();
            assert_eq!((by_class, by_function), (core.instructions, core.instructions), "{}", call.kernel);
            // The call paths miss only the loader's own instructions around the call.
            assert!(by_stack <= core.instructions && by_stack + 50 >= core.instructions, "{by_stack} {core:?}");
            // The paths start in the library (its kernel entry), named from its DWARF.
            assert!(core.stacks.iter().any(|s| s.frames[0].starts_with("relu::")), "{:?}", core.stacks);
            let op = core.events.iter().find(|e| e.kind == EventKind::Op).expect("the op's span");
            assert_eq!(op.instruction, core.instructions);
        }
    }
    let [element, tcm, eight] = [&profiles[0], &profiles[1], &profiles[2]];
    // Element relu is one function: its loop shows as the inlined `relu::relu`, with the
    // `f32::max` and the zipped iterators' `next` inlined into it, nearly all the op.
    let core = &element.cores[0];
    let in_loop: u64 =
        core.stacks.iter().filter(|s| s.frames.iter().any(|f| f == "relu::relu")).map(|s| s.instructions).sum();
    assert!(in_loop as f64 > 0.99 * core.instructions as f64, "{in_loop} of {}: {:?}", core.instructions, core.stacks);
    assert!(
        core.stacks.iter().any(|s| s.frames.ends_with(&["relu::relu".into(), "<f32>::max".into()])),
        "{:?}",
        core.stacks
    );
    // The hottest lines have their file:line, and the kernel's loop line is among them
    // with its 65,536 HBM loads (one an element) priced at the HBM latency.
    let lines = element.lines();
    let body = lines.iter().take(10).find(|l| l.file == "examples/relu/src/kernels.rs").expect("the loop's line");
    assert_eq!(body.memory.get(&Region::Hbm).map(|a| a.loads), Some(elements), "{body:?}");
    assert!(body.cycles >= elements as f64 * model_hbm_load_cycles(), "{body:?}");
    // Element access loads every input element from HBM and stores every output there.
    let hbm = element.cores[0].accesses(Region::Hbm);
    assert!(hbm.loads >= elements && hbm.stores >= elements, "{hbm:?}");
    assert_eq!(element.cores[0].dma_bytes, 0);
    // The TCM design moves each element in and out by DMA, and touches HBM only there.
    assert_eq!(tcm.cores[0].dma_bytes, 2 * 4 * elements, "in and out, 4 bytes each");
    assert!(tcm.cores[0].accesses(Region::Hbm).loads < elements / 100, "{:?}", tcm.cores[0].memory);
    assert!(tcm.cores[0].accesses(Region::LocalRam).loads >= elements, "{:?}", tcm.cores[0].memory);
    assert_eq!(eight.cores.iter().map(|c| c.dma_bytes).sum::<u64>(), 2 * 4 * elements);
    // Each core wrote its own eighth; the per-element figure is per element it wrote.
    for (call, profile) in calls.iter().zip(&profiles) {
        let written: u64 = profile.cores.iter().map(|c| c.elements_written.expect("ranges kept")).sum();
        assert_eq!(written, elements, "{}: every element written once", call.kernel);
    }
    let work = calls[2].work();
    assert_eq!(work.elements, Some(elements / 8));
    assert!(work.balance < 1.05, "an even split: {work:?}");

    // The cost model: fitted to the tutorial's three figures, with the iteration's
    // overhead a parameter of its own; the shipped values are the fit's.
    let model = CostModel::default();
    let names = ["relu (element access)", "relu_tcm (TCM)", "relu_multicore (TCM, 8 cores)"];
    let measured: Vec<Measured<'_>> = profiles
        .iter()
        .zip(names)
        .zip(PUBLISHED)
        .map(|((profile, name), per_second)| Measured { name, profile, seconds: 1.0 / per_second })
        .collect();
    let fitted = fit(&model, &["hbm.load_cycles", "op.overhead_seconds"], &measured).expect("a fit");
    for p in &fitted.parameters {
        eprintln!(
            "fitted {} = {:.6e} ± {:.3e} (shipped {})",
            p.key,
            p.value,
            p.error.unwrap_or(f64::NAN),
            model.get(&p.key).unwrap()
        );
    }
    for f in &fitted.figures {
        eprintln!(
            "{}: published {:.1} µs, predicted {:.1} µs, residual {:+.2}%, leave-one-out {:.1} µs ({:+.1}%)",
            f.name,
            f.measured * 1e6,
            f.predicted * 1e6,
            f.residual * 100.0,
            f.leave_one_out.unwrap_or(f64::NAN) * 1e6,
            (f.leave_one_out.unwrap_or(f64::NAN) / f.measured - 1.0) * 100.0
        );
    }
    for p in &fitted.parameters {
        let shipped = model.get(&p.key).unwrap();
        assert!(
            (p.value / shipped - 1.0).abs() < 0.10,
            "refit {} in cost-model.toml: {:.6e} fits today",
            p.key,
            p.value
        );
    }
    let time = |profile| model.predict(profile).seconds;
    let predicted = [time(element), time(tcm), time(eight)];
    assert!(predicted[0] > predicted[1] && predicted[1] > predicted[2], "{predicted:?}");

    // Waits are idle: the wait loop's instructions vary with the simulated engine's
    // speed, the prediction does not. (The first call on a booted device runs 149 more
    // instructions a core, in the heap: the two compared are the second and third.)
    let [second, third] = [(); 2].map(|()| profiled(&library, "relu_multicore", &x, 8));
    let slowest = |call: &Call| model.predict(call.profile.as_ref().expect("profiled")).slowest.expect("a core").cycles;
    let (a, b) = (slowest(&second), slowest(&third));
    assert!((a / b - 1.0).abs() < 0.001, "the prediction repeats: {a} and {b} cycles");
    let (a, b) = (second.work().balance, third.work().balance);
    assert!((a / b - 1.0).abs() < 0.001, "the balance repeats: {a} and {b}");

    // The files: a flame graph, folded stacks, a Chrome trace with the documented fields.
    let dir = std::env::temp_dir().join(format!("neuroncustomop-profile-{}", std::process::id()));
    let written = write::write(eight, &model, &dir).expect("written");
    let svg = std::fs::read_to_string(&written.flame).unwrap();
    assert!(svg.contains("<svg") && svg.contains("relu_multicore"), "{}", &svg[..svg.len().min(300)]);
    let folded = std::fs::read_to_string(&written.folded).unwrap();
    assert!(folded.lines().all(|line| line.starts_with("core_") && line.rsplit_once(' ').is_some()), "{folded}");
    let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(&written.trace).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let spans: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    for span in &spans {
        assert!(span["name"].is_string() && span["ts"].is_number() && span["dur"].is_number(), "{span}");
        assert!(span["pid"].is_number() && span["tid"].is_number(), "{span}");
    }
    let lanes: Vec<_> = events.iter().filter(|e| e["ph"] == "M" && e["name"] == "thread_name").collect();
    assert_eq!(lanes.len(), 16, "a thread per core and a DMA lane per core: {lanes:?}");
    // Each core's op lasts what its counts cost: every instruction priced with its
    // loads (the waits' none), and each transfer's latency and bytes at the core's
    // share of the DMA bandwidth, as the runtime waits for each copy.
    let us = |cycles: f64| cycles / model.clock.hz * 1e6;
    for core in &eight.cores {
        let tid = core.core;
        let op = spans.iter().find(|e| e["cat"] == "op" && e["tid"] == tid).expect("the op's span");
        let busy: f64 = core.pcs.iter().map(|pc| model.instruction_cycles(pc)).sum();
        let dma: f64 = core
            .events
            .iter()
            .filter(|e| e.kind == EventKind::Dma)
            .map(|e| model.dma.latency_cycles + e.bytes as f64 / model.dma_bytes_per_cycle(8))
            .sum();
        let want = us(busy + dma);
        let got = op["dur"].as_f64().unwrap();
        assert!((got / want - 1.0).abs() < 0.01, "core {tid}: the op lasts {got} µs, its counts and costs {want} µs");
        assert_eq!(op["ts"].as_f64(), Some(0.0), "device time from the op's start");
        let transfers: Vec<_> = spans.iter().filter(|e| e["cat"] == "dma" && e["tid"] == 8 + tid).collect();
        assert_eq!(transfers.len() as u64, core.dma_transfers, "core {tid}: one span a transfer on its lane");
        for t in &transfers {
            let bytes = t["args"]["bytes"].as_f64().unwrap();
            let want = us(model.dma.latency_cycles + bytes / model.dma_bytes_per_cycle(8));
            let (start, dur) = (t["ts"].as_f64().unwrap(), t["dur"].as_f64().unwrap());
            assert!(dur >= want * 0.999 && start + dur <= got * 1.0001, "core {tid}: {t}, {want} µs at least");
        }
    }
    // Two designs of one op compared, as `ncop profile diff` reads them back: the
    // 8-core design spreads the one core's loop over eight, and the DMA waits grow.
    let single = dir.join("tcm");
    write::write(tcm, &model, &single).expect("written");
    let (before, after) = (write::read(&single).expect("read back"), write::read(&dir).expect("read back"));
    assert_eq!(before.instructions(), tcm.instructions(), "profile.json holds the profile");
    let d = diff(&before, &after);
    assert_eq!((d.total.before, d.total.after), (tcm.instructions(), eight.instructions()));
    let loop_line = d.lines.iter().find(|l| l.name == "examples/relu/src/kernels.rs:36");
    assert!(loop_line.is_none(), "the same elements pass the loop's line either way: {:?}", d.lines);
    let svg = String::from_utf8(diff_flame(&before, &after).expect("a differential flame graph")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("relu_through_tcm"), "{}", &svg[..svg.len().min(300)]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_softmax_on_the_libm_crates_expf_ranks_expf_first_with_what_it_calls() {
    use neuroncustomop::wrapper_api::{ArgTensor, Dtype};
    use neuroncustomop_machine::device::{Session, SessionOptions};
    use neuroncustomop_machine::images;
    use neuroncustomop_machine::job::{Job, Op};
    use neuroncustomop_profile::fold::Folder;
    use neuroncustomop_wire::job::OutputDump;

    let library = images::build("count_probe").expect("build count_probe");
    let loader = images::build("loader").expect("build the loader");
    // One row of 64: about 150 k instructions, nearly all in `expf`.
    let x: Vec<f32> = (0..64).map(|i| (i * 37 % 64) as f32 / 8.0 - 4.0).collect();
    let mut job = Job::new(&library, 1).expect("job");
    let (input, _) = job.place(0, x.iter().flat_map(|v| v.to_le_bytes()).collect());
    let (out, out_device) = job.place(0x1000, vec![0; 4 * x.len()]);
    let tensor = |at| ArgTensor::hbm_tensor(Dtype::Float32, &[x.len() as u32], at).unwrap().to_bytes();
    let function = job.function("softmax");
    job.push(&Op {
        function,
        output: Some(tensor(out)),
        inputs: vec![tensor(input)],
        dump: OutputDump { address: out_device, len: 4 * x.len() as u32 },
    })
    .expect("op");
    let options = SessionOptions { count_instructions: false, checked: false, profile: true, ..Default::default() };
    let report = Session::boot(&library, 1, options).expect("QEMU boots").dispatch(&job).expect("QEMU runs");
    assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    let y: Vec<f32> = report.dumps[&0].chunks(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    let largest = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = x.iter().map(|v| (v - largest).exp()).sum();
    for (y, x) in y.iter().zip(&x) {
        assert!((y - (x - largest).exp() / sum).abs() < 1e-6, "softmax {y} at {x}");
    }

    let op = &report.core(0).ops[0];
    let images: Vec<_> = library.cores.iter().chain(&loader.cores).cloned().collect();
    let profile = Folder::new(&images)
        .expect("symbols")
        .profile("softmax", &[op.plugin.lines.as_slice()], None)
        .expect("a profile");
    // The profile holds every instruction the count does, and the op's markers.
    assert_eq!(Some(profile.cores[0].instructions), op.instructions.map(|n| n + MARKER_OVERHEAD));
    let inclusive = profile.top_inclusive(5);
    let own = profile.top(5);
    println!("inclusive {inclusive:#?}\nown {own:#?}");
    // `expf` and its soft-float calls hold most of the op, and the ranking says so...
    let first = &inclusive[0];
    assert!(first.name.ends_with("expf"), "{inclusive:?}");
    assert!(first.share > 0.8, "{first:?}");
    assert_eq!(first.instructions, profile.cores[0].inclusive[0].instructions);
    // ...where `expf`'s own code is a small part of it, behind the soft-float helpers.
    let expf_own = own.iter().find(|hot| hot.name.ends_with("expf")).map_or(0, |hot| hot.instructions);
    assert!(expf_own < first.instructions / 4, "{own:?}");
    assert!(!own[0].name.ends_with("expf"), "{own:?}");
}
