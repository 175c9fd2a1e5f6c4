use super::*;
use proptest::prelude::*;
use std::vec::Vec;

/// Bytes around the destination that no copy may touch.
const CANARY: usize = 8;
const CANARY_BYTE: u8 = 0xA5;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(131).wrapping_add(seed) ^ (i >> 8) as u8).collect()
}

/// Copies `len` bytes with `method` from offset `src_offset` of a word-aligned source
/// to offset `dst_offset` of a word-aligned destination, and checks the copy byte for
/// byte and the canaries around it.
fn check_copy(method: NeuronMemcpyMethod, len: usize, src_offset: usize, dst_offset: usize) {
    // u32 storage: the buffers start word-aligned, so the offsets are the alignments.
    let mut src_words = std::vec![0u32; (src_offset + len).div_ceil(4) + 1];
    let src_bytes = as_bytes_mut(&mut src_words);
    src_bytes[src_offset..src_offset + len].copy_from_slice(&pattern(len, len as u8));
    let mut dst_words = std::vec![0u32; (CANARY + dst_offset + len + CANARY).div_ceil(4)];
    let dst_bytes = as_bytes_mut(&mut dst_words);
    dst_bytes.fill(CANARY_BYTE);
    let start = CANARY.next_multiple_of(4) + dst_offset;
    // SAFETY: both ranges lie inside their own buffers.
    unsafe { copy_with(method, dst_bytes.as_mut_ptr().add(start), src_bytes.as_ptr().add(src_offset), len) };
    assert_eq!(
        dst_bytes[start..start + len],
        src_bytes[src_offset..src_offset + len],
        "{} len {len} src+{src_offset} dst+{dst_offset}",
        method.name()
    );
    assert!(dst_bytes[..start].iter().all(|&b| b == CANARY_BYTE), "canary below dst");
    assert!(dst_bytes[start + len..].iter().all(|&b| b == CANARY_BYTE), "canary above dst");
}

fn as_bytes_mut(words: &mut [u32]) -> &mut [u8] {
    // SAFETY: u8 has no alignment or validity requirements; the slice covers exactly the
    // words' bytes and borrows them mutably for its lifetime.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), size_of_val(words)) }
}

#[test]
fn a_core_starts_with_dma() {
    std::thread::spawn(|| assert_eq!(active_method(), NeuronMemcpyMethod::Dma)).join().unwrap();
    assert_eq!(NeuronMemcpyMethod::DEFAULT, NeuronMemcpyMethod::Dma);
}

#[test]
fn numbering_matches_the_vendor_enum() {
    assert_eq!(NeuronMemcpyMethod::CMemcpy as u32, 0);
    assert_eq!(NeuronMemcpyMethod::VecMemcpy as u32, 1);
    assert_eq!(NeuronMemcpyMethod::Dma as u32, 2);
    assert_eq!(NeuronMemcpyMethod::MAX_METHODS, 3);
    for (number, method) in NeuronMemcpyMethod::ALL.into_iter().enumerate() {
        assert_eq!(NeuronMemcpyMethod::try_from(number as u32), Ok(method));
    }
}

#[test]
fn every_valid_method_is_accepted_and_the_previous_one_returned() {
    let mut previous = active_method();
    for method in NeuronMemcpyMethod::ALL {
        assert_eq!(set_method(method as u32), Ok(previous));
        assert_eq!(active_method(), method);
        previous = method;
    }
}

#[test]
fn max_methods_and_above_are_rejected_and_change_nothing() {
    for active in NeuronMemcpyMethod::ALL {
        set_method(active as u32).unwrap();
        for bad in [3, 4, 5, 0x8000_0000, u32::MAX] {
            assert_eq!(set_method(bad), Err(InvalidMethod(bad)));
            assert_eq!(active_method(), active, "after set_method({bad})");
            assert_eq!(neuron_set_memcpy_method(bad), MEMCPY_METHOD_INVALID);
            assert_eq!(neuron_get_memcpy_method(), active, "after neuron_set_memcpy_method({bad})");
        }
    }
}

#[test]
fn the_c_glue_sets_and_reports_the_method() {
    assert_eq!(neuron_set_memcpy_method(0), MEMCPY_METHOD_OK);
    assert_eq!(neuron_get_memcpy_method(), NeuronMemcpyMethod::CMemcpy);
    assert_eq!(neuron_set_memcpy_method(2), MEMCPY_METHOD_OK);
    assert_eq!(neuron_get_memcpy_method(), NeuronMemcpyMethod::Dma);
}

#[test]
fn every_method_copies_every_short_length_at_every_alignment() {
    // Miri interprets about 1000x slower: there, every length up to two words, the
    // lengths around the four-word loop's first pass, one past its second, and the longest.
    let w = size_of::<usize>();
    let lengths: Vec<usize> = if cfg!(miri) {
        (0..=2 * w).chain([4 * w - 1, 4 * w, 4 * w + 1, 9 * w + 3, 257]).collect()
    } else {
        (0..=257).collect()
    };
    for method in NeuronMemcpyMethod::ALL {
        for &len in &lengths {
            for src_offset in 0..4 {
                for dst_offset in 0..4 {
                    check_copy(method, len, src_offset, dst_offset);
                }
            }
        }
    }
}

#[test]
fn neuron_memcpy_copies_through_the_active_method() {
    let src = pattern(1000, 7);
    for method in NeuronMemcpyMethod::ALL {
        set_method(method as u32).unwrap();
        let mut dst = std::vec![0u8; 1000];
        // SAFETY: both buffers hold 1000 bytes.
        unsafe { neuron_memcpy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), 1000) };
        assert_eq!(dst, src, "{}", method.name());
    }
}

#[test]
fn zero_length_copies_touch_nothing() {
    let dangling = core::ptr::NonNull::<u8>::dangling().as_ptr();
    for method in NeuronMemcpyMethod::ALL {
        // SAFETY: a zero-length copy reads and writes nothing.
        unsafe { copy_with(method, dangling, dangling, 0) };
    }
}

#[test]
fn overlap_is_exact() {
    let base = 0x1000 as *const u8;
    let at = |offset: usize| base.wrapping_add(offset);
    assert!(overlap(at(0), at(0), 1));
    assert!(overlap(at(0), at(9), 10));
    assert!(overlap(at(9), at(0), 10));
    assert!(!overlap(at(0), at(10), 10));
    assert!(!overlap(at(10), at(0), 10));
    assert!(!overlap(at(0), at(0), 0));
}

proptest! {
    // Miri interprets about 1000x slower: a few cases there, the full count natively.
    #![proptest_config(if cfg!(miri) { ProptestConfig::with_cases(2) } else { ProptestConfig::default() })]

    #[test]
    fn every_method_matches_the_reference_on_long_copies(
        method in proptest::sample::select(NeuronMemcpyMethod::ALL.to_vec()),
        len in 0usize..70_000,
        src_offset in 0usize..4,
        dst_offset in 0usize..4,
    ) {
        check_copy(method, len, src_offset, dst_offset);
    }

    #[test]
    fn overlapping_copies_behave_as_memmove(
        method in proptest::sample::select(NeuronMemcpyMethod::ALL.to_vec()),
        (dst, src, len) in (0usize..512, 0usize..512).prop_flat_map(|(d, s)| (Just(d), Just(s), 0..=512 - d.max(s))),
    ) {
        let mut got = pattern(512, 3);
        let mut want = got.clone();
        want.copy_within(src..src + len, dst);
        let base = got.as_mut_ptr();
        // SAFETY: both ranges lie inside the one 512-byte buffer.
        unsafe { copy_with(method, base.add(dst), base.add(src), len) };
        prop_assert_eq!(got, want);
    }
}
