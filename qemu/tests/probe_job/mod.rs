//! The job the fault, session and counting tests give the `fault_probe` library: its
//! kernels in order on one core, each (x: 16 x i32) -> out, every output dumped.

use neuroncustomop::wrapper_api::{ArgTensor, Dtype};
use neuroncustomop_machine::images::Images;
use neuroncustomop_machine::job::{Job, Op};
use neuroncustomop_wire::job::OutputDump;

/// The little-endian bytes of `values`.
pub fn int_bytes(values: &[i32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A 1-core job of `kernels` in order, each reading the 16 `input` values and writing
/// its own 16-value output (filled with 0xAB first), every output dumped.
pub fn probe_job(library: &Images, kernels: &[&str], input: &[i32]) -> Job {
    let mut job = Job::new(library, 1).expect("job");
    let (x, _) = job.place(0, int_bytes(input));
    for (i, kernel) in kernels.iter().enumerate() {
        let (out, out_device) = job.place(0x1000 * (i as u32 + 1), vec![0xAB; 64]);
        let op = Op {
            function: job.function(kernel),
            output: Some(ArgTensor::hbm_tensor(Dtype::Int32, &[16], out).unwrap().to_bytes()),
            inputs: vec![ArgTensor::hbm_tensor(Dtype::Int32, &[16], x).unwrap().to_bytes()],
            dump: OutputDump { address: out_device, len: 64 },
        };
        job.push(&op).expect("op");
    }
    job
}
