//! A library image whose kernel checks the DMA backend against the simulated engine
//! (`qemu/tests/dma.rs`): `neuron_memcpy` with method DMA over every length 0..=257 and
//! some large ones, at every source and destination alignment 0..4, byte for byte,
//! with canaries around the destination; and two copies to one destination in a row,
//! of which the second must win.
#![no_std]
#![no_main]

use neuroncustomop::data_transfer::{NeuronMemcpyMethod, dma, set_method};
use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};

const LARGE: [usize; 3] = [1000, 4096, 65_536 + 3];
const CANARY: u8 = 0xC5;
const SLACK: usize = 8;
/// The largest copy, its largest alignment, and the canaries on both sides.
const CAPACITY: usize = 65_536 + 3 + 3 + 2 * SLACK;

static mut SOURCE: [u8; CAPACITY] = [0; CAPACITY];
static mut DESTINATION: [u8; CAPACITY] = [0; CAPACITY];

/// Copies `len` bytes at the given alignments through DMA and checks every byte of the
/// destination window, canaries included. Returns the number of wrong bytes.
fn check(source: &mut [u8], destination: &mut [u8], len: usize, src_align: usize, dst_align: usize) -> usize {
    for (i, byte) in source.iter_mut().enumerate() {
        *byte = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ len as u8;
    }
    let window_len = SLACK + dst_align + len + SLACK;
    destination[..window_len].fill(CANARY);
    let (src, dst) = (&source[src_align..src_align + len], &mut destination[SLACK + dst_align..]);
    // SAFETY: both ranges hold `len` bytes of different statics.
    unsafe { neuroncustomop::data_transfer::neuron_memcpy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), len) };
    let window = &destination[..window_len];
    window.iter().enumerate().filter(|&(at, &byte)| {
        let expected = if at < SLACK + dst_align || at >= SLACK + dst_align + len { CANARY } else { src[at - SLACK - dst_align] };
        byte != expected
    }).count()
}

/// (int longest, int large, int aligned_only) -> u32[4]: cases, wrong bytes,
/// `neuron_dma_status()` after the last copy, and how many copies fell back to the CPU.
/// Copies every length `0..=longest`, then the large ones if `large != 0`, at every
/// alignment pair, or only at (0, 0) if `aligned_only != 0` (a copy that times out
/// takes 1 s of the core's clock, so those runs keep to a few).
fn dma_check(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let longest = args.int()?.max(0) as usize;
    let large = args.int()? != 0;
    let aligned_only = args.int()? != 0;
    let mut out = args.output()?;
    let _ = set_method(NeuronMemcpyMethod::Dma as u32);
    // SAFETY: only this kernel uses the two statics, and it runs one at a time.
    let (source, destination) = unsafe { (&mut *(&raw mut SOURCE), &mut *(&raw mut DESTINATION)) };
    let lengths = (0..=longest.min(257)).chain(LARGE.into_iter().filter(|_| large));
    let (mut cases, mut wrong, mut fell_back) = (0u32, 0u32, 0u32);
    for len in lengths {
        for src_align in 0..4 {
            for dst_align in 0..4 {
                if aligned_only && (src_align, dst_align) != (0, 0) {
                    continue;
                }
                wrong += check(&mut source[..len + src_align], &mut destination[..], len, src_align, dst_align) as u32;
                fell_back += u32::from(len > 0 && dma::neuron_dma_status() != 0);
                cases += 1;
            }
        }
    }
    // Ordering: two copies to one destination; the later one must be what remains.
    let (first, second) = source.split_at_mut(4096);
    first[..4096].fill(0x11);
    second[..4096].fill(0x22);
    // SAFETY: three disjoint 4 KiB ranges of the two statics.
    unsafe {
        neuroncustomop::data_transfer::neuron_memcpy(destination.as_mut_ptr().cast(), first.as_ptr().cast(), 4096);
        neuroncustomop::data_transfer::neuron_memcpy(destination.as_mut_ptr().cast(), second.as_ptr().cast(), 4096);
    }
    wrong += destination[..4096].iter().filter(|&&b| b != 0x22).count() as u32;
    cases += 1;
    let report = [cases, wrong, dma::neuron_dma_status() as u32, fell_back];
    out.as_mut_slice::<i32>()?.iter_mut().zip(report).for_each(|(o, r)| *o = r as i32);
    Ok(out)
}

neuroncustomop::kernels! { fn dma_check }
