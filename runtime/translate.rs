//! `neuron_translate`: framework addresses to device pointers through a five-region
//! software TLB.
//!
//! STUB: owned by the memory work (issue 4). The signature below is the contract other
//! modules already call; keep it.

/// Why a framework address has no device pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TranslateError {
    /// No configured region matches the address.
    Miss,
}

/// Translates `framework_addr` through the regions the loader configured for this op.
pub fn translate(framework_addr: u64) -> Result<*mut u8, TranslateError> {
    let _ = framework_addr;
    Err(TranslateError::Miss)
}
