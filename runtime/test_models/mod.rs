//! Reference models of the runtime's contracts, written independently of the code they
//! check (slow, exact, over raw bytes or one flag per granule), and shared by every test
//! that checks against them: the unit and property tests here (`cfg(test)`) and the fuzz
//! targets (`qemu/fuzz`, through the `test-models` feature). One model per contract, so
//! a contract that changes is changed in one place for all of them.
//!
//! | model | contract |
//! |---|---|
//! | [`descriptor`] | `ArgTensor::validate`: docs/abi/descriptors.md §1.4, over raw byte offsets |
//! | [`translate`] | `translate::configure`, `translate`, `translate_range`: the record list in order, u128 arithmetic |
//! | [`heap`] | `allocators::Heap` placement: first fit over one flag per 64-byte granule |
//! | [`platform`] | the pull stream's platform: host windows as translate, a TCM pool, call logs |
//! | [`pull_stream`] | `wrapper_api::Invocation`: each call's status in each phase, what it resolves to, output/input aliasing |
//! | [`printf_cases`] | C's `printf`: generated conversions with one argument each, compared with glibc |
//!
//! Host only: the models use `std`.

pub mod descriptor;
pub mod heap;
pub mod platform;
pub mod printf_cases;
pub mod pull_stream;
pub mod translate;
