//! How an image stops, in the words the device and the host share: the exit statuses
//! of an image that took an exception, overflowed its stack or panicked (the loader
//! reports them as `exception(<n>)` and `exit(<n>)`), and the names of the Xtensa
//! exception causes. Built for the host too, so the host's symbolizer and report
//! printers name them from this one table.

/// Exit status of an image whose code took an exception.
pub const EXIT_EXCEPTION: i32 = 3;
/// Exit status of an image whose code overflowed the image stack (the window overflow
/// handlers' check, vectors.S).
pub const EXIT_STACK_OVERFLOW: i32 = 4;
/// Exit status of an image whose code panicked.
pub const EXIT_PANIC: i32 = 101;

/// The constant's name of exit status `code`, if it is one of the above.
pub fn exit_name(code: i32) -> Option<&'static str> {
    match code {
        EXIT_EXCEPTION => Some("EXIT_EXCEPTION"),
        EXIT_STACK_OVERFLOW => Some("EXIT_STACK_OVERFLOW"),
        EXIT_PANIC => Some("EXIT_PANIC"),
        _ => None,
    }
}

/// The architectural name of an EXCCAUSE value (Xtensa ISA, exception causes), as a
/// `FAULT` report and the host's symbolizer name it.
pub fn cause_name(cause: u32) -> &'static str {
    match cause {
        0 => "IllegalInstruction",
        1 => "Syscall",
        2 => "InstructionFetchError",
        3 => "LoadStoreError",
        4 => "Level1Interrupt",
        5 => "Alloca",
        6 => "IntegerDivideByZero",
        8 => "Privileged",
        9 => "LoadStoreAlignment",
        12 => "InstrPIFDataError",
        13 => "LoadStorePIFDataError",
        14 => "InstrPIFAddrError",
        15 => "LoadStorePIFAddrError",
        16 => "InstTLBMiss",
        17 => "InstTLBMultiHit",
        18 => "InstFetchPrivilege",
        20 => "InstFetchProhibited",
        24 => "LoadStoreTLBMiss",
        25 => "LoadStoreTLBMultiHit",
        26 => "LoadStorePrivilege",
        28 => "LoadProhibited",
        29 => "StoreProhibited",
        32..=39 => "CoprocessorDisabled",
        _ => "reserved",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_and_causes_have_their_names() {
        assert_eq!(exit_name(EXIT_EXCEPTION), Some("EXIT_EXCEPTION"));
        assert_eq!(exit_name(EXIT_STACK_OVERFLOW), Some("EXIT_STACK_OVERFLOW"));
        assert_eq!(exit_name(EXIT_PANIC), Some("EXIT_PANIC"));
        assert_eq!(exit_name(0), None);
        assert_eq!(cause_name(15), "LoadStorePIFAddrError");
        assert_eq!(cause_name(35), "CoprocessorDisabled");
        assert_eq!(cause_name(63), "reserved");
    }
}
