//! How the C++ tensor API (`runtime/include/torch/`) and the C++ runtime support
//! (`crate::start_exit::cxx`) end an op on a misuse: the failure is recorded as the
//! invocation's status under its own name ([`Status::ASSERT_FAILED`],
//! [`Status::RANK_MISMATCH`], ...), a line saying why goes to stdout, and the kernel
//! stops through `_Exit(status)`; the loader, seeing the exit status equal the recorded
//! one, reports the op as ended with that status (`0x40 DTYPE_MISMATCH`) and goes on
//! with the next op. C++ kernels are built with `-fno-exceptions`: there is nothing to
//! unwind, and returning to the kernel after a misuse would run it on garbage.

use core::ffi::{CStr, c_char};

use super::{Status, with_session};

/// Records `status` as this core's invocation failure and prints `parts`, one after
/// the other, as one line. What [`end_op`] does before it stops the kernel;
/// host-testable on its own.
pub fn record_failure(status: Status, parts: &[&[u8]]) -> Status {
    let status = with_session(|invocation| invocation.fail_status(status));
    for part in parts {
        crate::start_exit::write_stdout(part);
    }
    if !parts.last().is_some_and(|last| last.ends_with(b"\n")) {
        crate::start_exit::write_stdout(b"\n");
    }
    status
}

/// Records `status` and the line `parts` make ([`record_failure`]) and ends the kernel
/// with `_Exit(status)`: the loader reports the op as ended with that status.
pub fn end_op(status: Status, parts: &[&[u8]]) -> ! {
    let status = record_failure(status, parts);
    // Status values are below 0x2_0000: they fit a C int.
    crate::start_exit::_Exit(status.0 as i32)
}

/// C ABI `void neuron_cxx_fail(uint32_t status, const char *message)`, never
/// returning: [`end_op`] for the C++ headers. A null `message` prints nothing.
///
/// # Safety
/// `message` is null or a NUL-terminated string.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn neuron_cxx_fail(status: u32, message: *const c_char) -> ! {
    // SAFETY: forwarded from this function's contract.
    end_op(Status(status), &[unsafe { message_bytes(message) }])
}

/// C ABI `uint32_t neuron_cxx_record(uint32_t status, const char *message)`:
/// [`record_failure`] without ending the kernel, for failures the generated entry
/// reports after the kernel returned (a returned tensor that does not fit the output).
/// Returns the status recorded.
///
/// # Safety
/// `message` is null or a NUL-terminated string.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn neuron_cxx_record(status: u32, message: *const c_char) -> u32 {
    // SAFETY: forwarded from this function's contract.
    let text = unsafe { message_bytes(message) };
    record_failure(Status(status), &[text]).0
}

/// C ABI `void neuron_cxx_heap_room(size_t *free_bytes, size_t *largest_free)`: the HBM
/// heap's free bytes and its largest free block, for the C++ API's `OUT_OF_MEMORY`
/// message (a tensor that does not fit says how much was left). A null pointer is
/// skipped.
///
/// # Safety
/// Each pointer is null or valid for a write.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn neuron_cxx_heap_room(free_bytes: *mut usize, largest_free: *mut usize) {
    let stats = crate::allocators::heap_stats(crate::allocators::HeapId::Hbm);
    for (out, value) in [(free_bytes, stats.free_bytes), (largest_free, stats.largest_free)] {
        if !out.is_null() {
            // SAFETY: non-null, valid for a write (contract).
            unsafe { out.write(value) };
        }
    }
}

/// The bytes of a C message; none for null.
///
/// # Safety
/// `message` is null or a NUL-terminated string.
unsafe fn message_bytes<'a>(message: *const c_char) -> &'a [u8] {
    if message.is_null() {
        &[]
    } else {
        // SAFETY: a NUL-terminated string (contract).
        unsafe { CStr::from_ptr(message) }.to_bytes()
    }
}

/// `line` in decimal, in `buffer`; returns the digits.
fn decimal(line: u32, buffer: &mut [u8; 10]) -> &[u8] {
    let mut start = buffer.len();
    let mut value = line;
    loop {
        start -= 1;
        buffer[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &buffer[start..];
        }
    }
}

/// newlib's `void __assert_func(const char *file, int line, const char *func, const
/// char *expr)`, what `assert` in `<assert.h>` calls: prints the expression and
/// `file:line` and ends the op with [`Status::ASSERT_FAILED`].
///
/// # Safety
/// Each pointer is null or a NUL-terminated string.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn __assert_func(
    file: *const c_char,
    line: core::ffi::c_int,
    function: *const c_char,
    expression: *const c_char,
) -> ! {
    // SAFETY: forwarded from this function's contract.
    let (file, function, expression) =
        unsafe { (message_bytes(file), message_bytes(function), message_bytes(expression)) };
    let mut digits = [0; 10];
    let line = decimal(line.unsigned_abs(), &mut digits);
    end_op(
        Status::ASSERT_FAILED,
        &[b"assertion failed: ", expression, b" at ", file, b":", line, b" (", function, b")"],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::start_exit::drain_this_thread as drained;

    #[test]
    fn a_failure_is_the_invocations_status_and_a_line_of_output() {
        let status = record_failure(Status::RANK_MISMATCH, &[b"accessor<float, ", b"2> on a tensor of rank 1"]);
        assert_eq!(status, Status::RANK_MISMATCH);
        assert_eq!(super::super::customop_invocation_status(), Status::RANK_MISMATCH.0);
        // A later failure keeps the first as the invocation's.
        record_failure(Status::ASSERT_FAILED, &[b"second\n"]);
        assert_eq!(super::super::customop_invocation_status(), Status::RANK_MISMATCH.0);
        assert_eq!(super::super::customop_last_status(), Status::ASSERT_FAILED.0);
        assert_eq!(drained(), b"accessor<float, 2> on a tensor of rank 1\nsecond\n");
    }

    #[test]
    fn line_numbers_are_decimal() {
        let mut buffer = [0; 10];
        assert_eq!(decimal(0, &mut buffer), b"0");
        assert_eq!(decimal(17, &mut buffer), b"17");
        assert_eq!(decimal(u32::MAX, &mut buffer), b"4294967295");
    }
}
