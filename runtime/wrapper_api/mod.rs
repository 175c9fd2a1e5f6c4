//! Argument marshalling: tensor descriptors and the `customop_*` pull stream.
//!
//! STUB: owned by the pull-stream work (issue 5).
