#![no_main]
//! The `.npy` reader op authors feed their data through (`neuroncustomop_array::npy`,
//! the host API's `neuroncustomop_host::npy`): whatever the bytes, it returns an array
//! or an error and never panics; an array it returns holds exactly the elements the
//! header promised, and writing it and reading it back gives the same array.
use neuroncustomop_array::npy;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(array) = npy::from_bytes(data) else { return };
    assert_eq!(array.bytes().len(), array.numel() * array.dtype().size(), "{array:?}");
    let written = npy::to_bytes(&array).expect("an array read can be written");
    assert_eq!(npy::from_bytes(&written).expect("what was written reads back"), array);
});
