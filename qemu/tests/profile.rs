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
use neuroncustomop_profile::profile::{CoreProfile, EventKind, Profile, Region};
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

    assert_profiles_hold_the_counts(&calls, &profiles);
    let [element, tcm, eight] = [&profiles[0], &profiles[1], &profiles[2]];
    assert_the_element_loop_is_the_op(element, elements);
    assert_each_design_moves_its_data(&calls, &profiles, elements);
    let model = CostModel::default();
    assert_the_cost_model_ranks_the_designs_as_published(&model, &profiles);
    assert_the_prediction_repeats(&library, &x, &model);
    let dir = std::env::temp_dir().join(format!("neuroncustomop-profile-{}", std::process::id()));
    assert_the_files_and_the_trace(eight, &model, &dir);
    assert_a_diff_reads_the_files_back(tcm, eight, &model, &dir);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every instruction each call counted is in its profile, by class, by function and
/// (the loader's few around the call aside) by call path.
fn assert_profiles_hold_the_counts(calls: &[Call], profiles: &[Profile]) {
    for (call, profile) in calls.iter().zip(profiles) {
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
}

/// The element design's one function: its loop (inlined) is nearly all the op, and its
/// line is the hottest with an HBM load an element.
fn assert_the_element_loop_is_the_op(element: &Profile, elements: u64) {
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
}

/// Where each design's data goes: HBM by element, TCM by DMA, split over 8 cores.
fn assert_each_design_moves_its_data(calls: &[Call], profiles: &[Profile], elements: u64) {
    let [element, tcm, eight] = [&profiles[0], &profiles[1], &profiles[2]];
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
    for (call, profile) in calls.iter().zip(profiles) {
        let written: u64 = profile.cores.iter().map(|c| c.elements_written.expect("ranges kept")).sum();
        assert_eq!(written, elements, "{}: every element written once", call.kernel);
    }
    let work = calls[2].work();
    assert_eq!(work.elements, Some(elements / 8));
    assert!(work.balance < 1.05, "an even split: {work:?}");
}

/// The shipped cost model is the fit to the tutorial's three figures, and ranks the
/// designs (element, TCM, 8 cores) as the tutorial measured them.
fn assert_the_cost_model_ranks_the_designs_as_published(model: &CostModel, profiles: &[Profile]) {
    // The cost model: fitted to the tutorial's three figures, with the iteration's
    // overhead a parameter of its own; the shipped values are the fit's.
    let [element, tcm, eight] = [&profiles[0], &profiles[1], &profiles[2]];
    let names = ["relu (element access)", "relu_tcm (TCM)", "relu_multicore (TCM, 8 cores)"];
    let measured: Vec<Measured<'_>> = profiles
        .iter()
        .zip(names)
        .zip(PUBLISHED)
        .map(|((profile, name), per_second)| Measured { name, profile, seconds: 1.0 / per_second })
        .collect();
    let fitted = fit(model, &["hbm.load_cycles", "op.overhead_seconds"], &measured).expect("a fit");
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
}

/// The prediction and the balance of two more 8-core calls agree.
fn assert_the_prediction_repeats(library: &Library, x: &Array, model: &CostModel) {
    // Waits are idle: the wait loop's instructions vary with the simulated engine's
    // speed, the prediction does not. (The first call on a booted device runs 149 more
    // instructions a core, in the heap: the two compared are the second and third.)
    let [second, third] = [(); 2].map(|()| profiled(library, "relu_multicore", x, 8));
    let slowest = |call: &Call| model.predict(call.profile.as_ref().expect("profiled")).slowest.expect("a core").cycles;
    let (a, b) = (slowest(&second), slowest(&third));
    assert!((a / b - 1.0).abs() < 0.001, "the prediction repeats: {a} and {b} cycles");
    let (a, b) = (second.work().balance, third.work().balance);
    assert!((a / b - 1.0).abs() < 0.001, "the balance repeats: {a} and {b}");
}

/// The files `write` makes of the 8-core profile in `dir`, and its trace's spans.
fn assert_the_files_and_the_trace(eight: &Profile, model: &CostModel, dir: &std::path::Path) {
    // The files: a flame graph, folded stacks, a Chrome trace with the documented fields.
    let written = write::write(eight, model, dir).expect("written");
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
    for core in &eight.cores {
        assert_the_core_trace(core, &spans, model);
    }
}

/// One core's lanes of the trace. Its op lasts what its counts cost: every instruction
/// priced with its loads (the waits' none), and each transfer's latency and bytes at
/// the core's share of the DMA bandwidth, as the runtime waits for each copy.
fn assert_the_core_trace(core: &CoreProfile, spans: &[&serde_json::Value], model: &CostModel) {
    let us = |cycles: f64| cycles / model.clock.hz * 1e6;
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
    // The core's thread: the op, its waits and its calls, strictly nested as they ran.
    let thread: Vec<&serde_json::Value> = spans.iter().copied().filter(|e| e["tid"] == tid).collect();
    assert_nested(&thread);
    let functions: Vec<_> = thread.iter().filter(|e| e["cat"] == "function").collect();
    // The calls the plugin kept are the call paths' instructions: each top-level call
    // holds exactly what the paths that start with it ran.
    let depth = |e: &&&serde_json::Value| e["args"]["depth"].as_u64().unwrap();
    let instructions = |e: &&&serde_json::Value| e["args"]["instructions"].as_u64().unwrap();
    let named = |e: &&&serde_json::Value, name: &str| e["name"].as_str().unwrap().ends_with(name);
    for name in ["rust_kernel_entry", "relu::relu_through_tcm"] {
        let calls: Vec<_> = functions.iter().filter(|e| named(e, name)).collect();
        assert_eq!(calls.len(), 1, "core {tid}: one call of {name}");
        let level = depth(calls[0]) as usize;
        let by_paths: u64 = core
            .stacks
            .iter()
            .filter(|s| s.frames.get(level - 1).is_some_and(|f| f.ends_with(name)))
            .map(|s| s.instructions)
            .sum();
        assert_eq!(instructions(calls[0]), by_paths, "core {tid}: {name}'s call against its call paths");
    }
    // The kernel's entry is nearly the whole op (the loader's marker code is the
    // rest), and in device time it lasts what its instructions cost.
    let entry = functions.iter().find(|e| named(e, "rust_kernel_entry")).unwrap();
    let share = instructions(entry) as f64 / core.instructions as f64;
    assert!(share > 0.99, "core {tid}: {entry}");
    assert!((entry["dur"].as_f64().unwrap() / got - 1.0).abs() < 0.01, "core {tid}: {entry} in an op of {got} µs");
    // A callee's time is inside its caller's: the copies (with their waits) and the
    // element loop of relu_through_tcm's call.
    let kernel = functions.iter().find(|e| named(e, "relu::relu_through_tcm")).unwrap();
    let children: f64 =
        functions.iter().filter(|e| depth(e) == depth(kernel) + 1).map(|e| e["dur"].as_f64().unwrap()).sum();
    assert!(children > 0.0 && children <= kernel["dur"].as_f64().unwrap() * 1.000_001, "core {tid}: {kernel}");
    assert!(
        functions.iter().any(|e| e["name"].as_str().unwrap().contains("copy") && depth(e) > depth(kernel)),
        "core {tid}: the DMA copies as calls of the kernel"
    );
}

/// Two designs of one op compared, as `ncop profile diff` reads them back from `dir`.
fn assert_a_diff_reads_the_files_back(tcm: &Profile, eight: &Profile, model: &CostModel, dir: &std::path::Path) {
    // Two designs of one op compared, as `ncop profile diff` reads them back: the
    // 8-core design spreads the one core's loop over eight, and the DMA waits grow.
    let single = dir.join("tcm");
    write::write(tcm, model, &single).expect("written");
    let (before, after) = (write::read(&single).expect("read back"), write::read(dir).expect("read back"));
    assert_eq!(before.instructions(), tcm.instructions(), "profile.json holds the profile");
    let d = diff(&before, &after);
    assert_eq!((d.total.before, d.total.after), (tcm.instructions(), eight.instructions()));
    let loop_line = d.lines.iter().find(|l| l.name == "examples/relu/src/kernels.rs:36");
    assert!(loop_line.is_none(), "the same elements pass the loop's line either way: {:?}", d.lines);
    let svg = String::from_utf8(diff_flame(&before, &after).expect("a differential flame graph")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("relu_through_tcm"), "{}", &svg[..svg.len().min(300)]);
}

/// Asserts that the complete events of one thread nest strictly: each one either
/// inside the last open one or after it, never across its end (Perfetto's rule for
/// one thread's slices). Timestamps are compared in nanoseconds, as Perfetto does.
fn assert_nested(events: &[&serde_json::Value]) {
    let ns = |us: f64| (us * 1000.0).round() as i64;
    let mut spans: Vec<(i64, i64, String)> = events
        .iter()
        .map(|e| {
            let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
            (ns(ts), ns(ts + dur), e["name"].as_str().unwrap().to_string())
        })
        .collect();
    // Outer before inner: by start, then the longer first.
    spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut open: Vec<(i64, i64, String)> = Vec::new();
    for span in spans {
        while open.last().is_some_and(|last| last.1 <= span.0) {
            open.pop();
        }
        if let Some(last) = open.last() {
            assert!(span.1 <= last.1, "{span:?} starts inside {last:?} and ends after it");
        }
        open.push(span);
    }
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

    // The kernel's two loops are the author's ranges (`range_begin!`, `range_end!`):
    // each passed once, the first with its 64 `expf` calls, the second with its 64
    // divisions, together nearly all of the softmax call.
    let core = &profile.cores[0];
    let passes: Vec<(&str, bool)> = core.ranges.iter().map(|r| (r.name.as_str(), r.unclosed)).collect();
    assert_eq!(passes, [("exp and sum", false), ("normalise", false)], "{:?}", core.ranges);
    let [exp, normalise] = [&core.ranges[0], &core.ranges[1]];
    let expf = |s: &&neuroncustomop_profile::profile::Stack| s.frames.iter().any(|f| f.ends_with("expf"));
    let in_expf: u64 = core.stacks.iter().filter(expf).map(|s| s.instructions).sum();
    assert!(exp.instructions > in_expf, "the range holds the calls it makes: {exp:?}, {in_expf} in expf");
    assert!(normalise.start >= exp.start + exp.instructions, "{normalise:?} after {exp:?}");
    assert!(normalise.instructions >= 64 * 30, "64 divisions of about 30 instructions: {normalise:?}");
    let entry: u64 = core.calls.iter().filter(|c| c.depth == 1).map(|c| c.instructions).max().unwrap_or(0);
    assert!(
        (exp.instructions + normalise.instructions) as f64 > 0.95 * entry as f64,
        "{exp:?} {normalise:?} of the kernel's {entry}: {:?}",
        core.calls
    );
    // The summary's range table and the trace's range lanes, priced on the core's clock.
    let model = CostModel::default();
    let rows = model.ranges(&profile);
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["exp and sum", "normalise"], "most cycles first: {rows:?}");
    assert_eq!((rows[0].passes, rows[0].cores, rows[0].instructions), (1, 1, exp.instructions));
    let cpi = model.predict(&profile).cores[0].cycles / core.instructions as f64;
    assert!((rows[0].cycles / (exp.instructions as f64 * cpi) - 1.0).abs() < 0.05, "{rows:?} at {cpi} a cycle");
    let trace = write::trace_json(&profile, &model);
    let ranges: Vec<_> = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "range").collect();
    assert_eq!(ranges.len(), 2, "{ranges:?}");
    assert_eq!(ranges[0]["args"]["instructions"], exp.instructions);
}

/// The C kernel `qemu/tests/profile_c/src/divide.c` as an author's project in `dir`,
/// (re)built with `cflags`: one kernel, edited by a compile-time switch.
fn divide_built(dir: &std::path::Path, cflags: &[&str]) -> Library {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/divide.c"), include_str!("profile_c/src/divide.c")).unwrap();
    let flags: Vec<String> = cflags.iter().map(|flag| format!("{flag:?}")).collect();
    let manifest = format!("name = \"divide\"\ncflags = [{}]\n", flags.join(", "));
    std::fs::write(dir.join("neuroncustomop.toml"), manifest).unwrap();
    Library::load(dir).unwrap_or_else(|e| panic!("building divide.c with {cflags:?}: {e}"))
}

/// `divide` of `x` by 3 on one core, checked against the host's division.
fn divided(library: &Library, x: &Array, profile: bool) -> Call {
    let options = Options { cores: 1, profile, ..Options::default() };
    let call = library
        .call_with("divide", &[Arg::Tensor(x.clone()), Arg::Float(3.0)], Output::Like(0), &options)
        .unwrap_or_else(|e| panic!("divide: {}", neuroncustomop_host::library::describe(&e)))
        .check()
        .unwrap_or_else(|e| panic!("divide: {e}"));
    let got = call.output.to_vec::<f32>().unwrap();
    for (y, x) in got.iter().zip(x.to_vec::<f32>().unwrap()) {
        assert!((y - x / 3.0).abs() <= (x / 3.0).abs() * 1e-6, "{x} / 3 gave {y}");
    }
    call
}

/// The number of the line of `divide.c` that holds `text`.
fn divide_line(text: &str) -> usize {
    let source = include_str!("profile_c/src/divide.c");
    source.lines().position(|line| line.contains(text)).expect("in divide.c") + 1
}

/// `src/divide.c:LINE`, as a profile names the line.
fn divide_at(line: usize) -> String {
    format!("src/divide.c:{line}")
}

#[test]
fn range_markers_cost_no_instruction_and_a_profile_diff_shows_what_an_edit_bought() {
    let dir = std::env::temp_dir().join(format!("neuroncustomop-divide-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // More turns of the loop than the plugin keeps events ([`MAX_EVENTS`] in the plugin): a
    // marker reached each turn is written once, so the range still closes.
    let elements = 1 << 17;
    let x = generate(
        neuroncustomop::wrapper_api::Dtype::Float32,
        vec![4, elements / 4],
        Distribution::Uniform { low: -100.0, high: 100.0 },
        7,
    );
    let plain = divide_built(&dir, &[]);
    let (plain_call, plain_profiled) = (divided(&plain, &x, false), divided(&plain, &x, true));
    let plain_text = code_and_loaded_bytes(&plain);

    // The same kernel with its loop between range markers: the same code, the same
    // loaded bytes, the same count, profiled or not.
    let ranged = divide_built(&dir, &["-DRANGES"]);
    assert!(plain_text == code_and_loaded_bytes(&ranged), "the markers changed the code or the loaded image");
    let (ranged_call, ranged_profiled) = (divided(&ranged, &x, false), divided(&ranged, &x, true));
    assert_eq!(ranged_call.instructions, plain_call.instructions, "a marker costs no instruction");
    let (before, ranged_profile) = (plain_profiled.profile.unwrap(), ranged_profiled.profile.unwrap());
    assert_eq!(ranged_profile.instructions(), before.instructions());
    assert!(before.cores[0].ranges.is_empty(), "no markers, no ranges");
    let division = assert_the_range_holds_the_loop(&ranged_profile, elements as u64);

    // The edit: a multiply by the reciprocal. `ncop profile diff` of the two profiles
    // shows the divisions gone and the loop's line moved, and draws it.
    let edited = divide_built(&dir, &["-DRECIPROCAL"]);
    let after = divided(&edited, &x, true).profile.unwrap();
    let model = CostModel::default();
    let (before_dir, after_dir, out) = (dir.join("before"), dir.join("after"), dir.join("diff"));
    write::write(&before, &model, &before_dir).expect("written");
    write::write(&after, &model, &after_dir).expect("written");
    let d = diff(&write::read(&before_dir).unwrap(), &write::read(&after_dir).unwrap());
    let find = |deltas: &[neuroncustomop_profile::diff::Delta], name: &str| {
        deltas.iter().find(|d| d.name.ends_with(name)).cloned().unwrap_or_else(|| panic!("no {name} in {deltas:?}"))
    };
    let divsf3 = find(&d.functions, "__divsf3");
    assert_eq!(divsf3.before, division);
    assert_eq!(divsf3.after * elements as u64, division, "one division left: {divsf3:?}");
    assert_eq!(d.functions[0].name, "__divsf3", "the largest change first: {:?}", d.functions);
    let old_line = find(&d.lines, &divide_at(divide_line("src[i] / d")));
    let new_line = find(&d.lines, &divide_at(divide_line("src[i] * r")));
    assert!(old_line.before >= 3 * elements as u64 && old_line.after == 0, "{old_line:?}");
    assert!(new_line.before == 0 && new_line.after >= 3 * elements as u64, "{new_line:?}");
    let saved = d.total.before - d.total.after;
    assert!(saved >= divsf3.before - divsf3.after, "{:?}", d.total);

    assert_ncop_profile_diff_prints_it(&before_dir, &after_dir, &out, &d, &divsf3);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The code (`.text`) of `library`'s core image and the bytes it loads.
fn code_and_loaded_bytes(library: &Library) -> (Vec<u8>, u32) {
    use neuroncustomop_machine::elf;
    let image = std::fs::read(&library.package().expect("packaged").images.cores[0]).unwrap();
    let text = elf::section(&image, ".text").unwrap().expect("a .text").to_vec();
    let loaded: u32 = elf::load_segments(&image).unwrap().iter().map(|s| s.memsz).sum();
    (text, loaded)
}

/// The ranged `divide`'s one range against its loop's lines and divisions, over
/// `elements`; the instructions in `__divsf3`, which the edit takes away.
fn assert_the_range_holds_the_loop(ranged_profile: &Profile, elements: u64) -> u64 {
    // The range holds the loop's lines and the division each element calls.
    let core = &ranged_profile.cores[0];
    let [range] = core.ranges.as_slice() else { panic!("one pass: {:?}", core.ranges) };
    assert_eq!((range.name.as_str(), range.unclosed), ("divide loop", false));
    let line = |l: &neuroncustomop_profile::profile::Line| format!("{}:{}", l.file, l.line);
    // The plain loop: its `for` line and its body's.
    let body = divide_line("src[i] / d");
    let loop_lines: u64 = core
        .lines
        .iter()
        .filter(|l| [divide_at(body - 1), divide_at(body)].iter().any(|want| line(l).ends_with(want)))
        .map(|l| l.instructions)
        .sum();
    let division: u64 = core.functions.iter().filter(|f| f.name == "__divsf3").map(|f| f.instructions).sum();
    assert!(division >= 20 * elements, "{:?}", core.functions);
    // Up to the few instructions of the loop's set-up and exit that the compiler put
    // before the `for` line's first instruction or after the loop (the markers take
    // effect at line starts): 34 here.
    let inside = loop_lines + division;
    assert!(
        range.instructions.abs_diff(inside) <= 64,
        "the range {range:?} against its lines' {loop_lines} and the divisions' {division}"
    );
    let rows = CostModel::default().ranges(ranged_profile);
    assert_eq!((rows.len(), rows[0].passes, rows[0].instructions), (1, 1, range.instructions), "{rows:?}");
    division
}

/// `ncop profile diff` of the two folders prints the totals and the division's row, and
/// writes the folded stacks and the graph into `out`.
fn assert_ncop_profile_diff_prints_it(
    before_dir: &std::path::Path,
    after_dir: &std::path::Path,
    out: &std::path::Path,
    d: &neuroncustomop_profile::diff::Diff,
    divsf3: &neuroncustomop_profile::diff::Delta,
) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ncop"))
        .args(["profile", "diff"])
        .args([before_dir, after_dir])
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let total = format!("{} -> {} instructions", d.total.before, d.total.after);
    assert!(stdout.contains(&total), "{stdout}");
    let row = format!("{:>+12}", divsf3.change());
    assert!(stdout.lines().any(|l| l.contains(&row) && l.ends_with("__divsf3")), "{stdout}");
    let folded = std::fs::read_to_string(out.join("diff.folded")).unwrap();
    let paths = |name: &str| {
        folded.lines().filter(|l| l.rsplitn(3, ' ').nth(2).is_some_and(|path| path.ends_with(name))).fold(
            (0, 0),
            |(b, a), l| {
                let mut counts = l.rsplitn(3, ' ').map(|n| n.parse::<u64>().unwrap_or(0));
                let (after, before) = (counts.next().unwrap(), counts.next().unwrap());
                (b + before, a + after)
            },
        )
    };
    assert_eq!(paths(";__divsf3"), (divsf3.before, divsf3.after), "{folded}");
    // The graph draws the after profile's paths (the one division left is too thin
    // to be drawn), coloured by their change.
    let svg = std::fs::read_to_string(out.join("diff.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("<title>divide ("), "{}", &svg[..svg.len().min(300)]);
}

#[test]
fn the_c_and_cpp_markers_write_the_records_the_profile_reads() {
    use neuroncustomop_machine::elf;
    use neuroncustomop_machine::ranges::{Kind, records};
    use neuroncustomop_machine::toolchain::Llvm;
    // The header's macros in C and in C++ (a block of a member function), compiled for
    // the device as the builds do, and the object's records read by the profile's reader.
    let source = "#include <neuroncustomop.h>\n\
                  struct S { float f(const float *x, int n); };\n\
                  float S::f(const float *x, int n) {\n\
                      NCOP_RANGE_BEGIN(\"sum\");\n\
                      float s = 0;\n\
                      for (int i = 0; i < n; i++) s += x[i];\n\
                      NCOP_RANGE_END(\"sum\");\n\
                      return s;\n\
                  }\n";
    let dir = std::env::temp_dir().join(format!("neuroncustomop-markers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let include = crate::common::checkout().join("runtime/include");
    for (compiler, file, standard) in [(Llvm::CLANG, "k.c", "-std=c11"), (Llvm::CLANGXX, "k.cpp", "-std=c++17")] {
        // C has no member functions: the same body as a plain function, on the same lines.
        let text = if file == "k.c" {
            source.replace("struct S { float f(const float *x, int n); };", "").replace("S::f", "f")
        } else {
            source.to_string()
        };
        std::fs::write(dir.join(file), text).unwrap();
        let object = dir.join(format!("{file}.o"));
        let output = std::process::Command::new(compiler)
            .args(["--target=xtensa-none-elf", "-Os", "-ffreestanding", "-nostdlibinc", "-c", standard])
            .args(["-Wall", "-Wextra", "-Werror", "-I"])
            .arg(include.join("libc"))
            .arg("-I")
            .arg(&include)
            .arg(dir.join(file))
            .arg("-o")
            .arg(&object)
            .output()
            .unwrap();
        assert!(output.status.success(), "{file}: {}", String::from_utf8_lossy(&output.stderr));
        let bytes = std::fs::read(&object).unwrap();
        let section = elf::section(&bytes, ".ncop_ranges").unwrap().expect("the records' section");
        let found = records(section);
        let file_name = dir.join(file).display().to_string();
        assert_eq!(
            found,
            [("sum".to_string(), Kind::Begin, file_name.clone(), 4), ("sum".to_string(), Kind::End, file_name, 7)],
            "{file}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
