//! The entry contract: `entry_func`, kernel registration, the device libc, the stdout ring.
//!
//! STUB: owned by the entry-contract work (issue 3).
