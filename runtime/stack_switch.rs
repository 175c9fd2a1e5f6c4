//! Running a kernel on a stack in HBM (`switch_stack_or_call_wrapper`).
//!
//! STUB: owned by the data-movement work (issue 6).
