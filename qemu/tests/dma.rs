//! The DMA backend against the simulated DMA engine (a spare core serving every
//! library core's queues), in order, out of order, and never completing.

use neuroncustomop::translate::TRANSLATE_PER_CORE;
use neuroncustomop::wrapper_api::{ArgTensor, Dtype, ScalarKind};
use neuroncustomop_machine::device::{self, OpStatus};
use neuroncustomop_machine::images;
use neuroncustomop_machine::job::{FRAMEWORK_BASE, Job, Op, TENSOR_AREA, translate_record};
use neuroncustomop_wire::job::{DmaMode, OutputDump};

/// What one `dma_check` run checks: every length `0..=longest`, the large lengths or
/// not, at every alignment pair or only the aligned one.
struct Check {
    longest: i32,
    large: bool,
    aligned_only: bool,
}

/// (cases, wrong bytes, `neuron_dma_status`, copies that fell back to the CPU) of one
/// `dma_check` run on each of `cores` cores, from every core.
fn dma_check(mode: DmaMode, check: Check, cores: usize) -> Vec<[u32; 4]> {
    let library = images::build("dma_probe").expect("build dma_probe");
    let mut job = Job::new(&library, cores).expect("job");
    job.header.dma_mode = mode as u32;
    let scalars = [check.longest, i32::from(check.large), i32::from(check.aligned_only)];
    let inputs = scalars
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let (address, _) = job.place(16 * i as u32, value.to_le_bytes().to_vec());
            ArgTensor::hbm_scalar(ScalarKind::Int, address).to_bytes()
        })
        .collect();
    // Each core writes its report into its own 16 bytes (the per-core translate window).
    let (out, out_device) = job.place(0x1000, vec![0xEE; 16 * cores]);
    job.set_translate(&[
        translate_record(FRAMEWORK_BASE, 0x1000, u64::from(TENSOR_AREA), 0, 0),
        translate_record(FRAMEWORK_BASE + 0x1000, 16, u64::from(out_device), TRANSLATE_PER_CORE, 16),
    ]);
    let op = Op {
        function: job.function("dma_check"),
        output: Some(ArgTensor::hbm_tensor(Dtype::Int32, &[4], out).expect("descriptor").to_bytes()),
        inputs,
        dump: OutputDump { address: out_device, len: 16 * cores as u32 },
    };
    job.push(&op).expect("op");
    let report = device::run(&library, &job).expect("QEMU runs");
    assert!(report.done, "{}\n{}", report.outcome.stdout, report.outcome.stderr);
    for core in 0..cores as u32 {
        assert_eq!(report.core(core).ops[0].status, OpStatus::Returned(0), "core {core}");
    }
    report.dumps[&0]
        .chunks(16)
        .map(|core| std::array::from_fn(|i| u32::from_le_bytes(core[4 * i..4 * i + 4].try_into().unwrap())))
        .collect()
}

#[test]
fn the_engine_copies_every_length_and_alignment_in_order() {
    let reports = dma_check(DmaMode::InOrder, Check { longest: 257, large: true, aligned_only: false }, 1);
    // 258 short and 3 large lengths at 16 alignment pairs, and the ordering check.
    assert_eq!(reports, [[(258 + 3) * 16 + 1, 0, 0, 0]], "every copy by the engine, every byte right");
}

#[test]
fn completion_out_of_order_still_copies_everything_on_all_cores() {
    let reports = dma_check(DmaMode::Reversed, Check { longest: 16, large: true, aligned_only: false }, 8);
    assert_eq!(reports, [[(17 + 3) * 16 + 1, 0, 0, 0]; 8]);
}

#[test]
fn an_engine_that_never_completes_is_a_timeout_and_loses_nothing() {
    let reports = dma_check(DmaMode::Stuck, Check { longest: 2, large: false, aligned_only: true }, 1);
    // Lengths 0, 1, 2 and the ordering check; status 2 is DmaError::Stopped. The two
    // non-empty copies found the engine stopped (the empty one never reaches the engine), and the CPU
    // made every copy right anyway.
    assert_eq!(reports, [[4, 0, 2, 2]]);
}
