//! The Xtensa ABI's `va_list`, walked in Rust: what the assembly variadic entry points
//! (`runtime/arch/xtensa/variadic.S`) build for `printf`, and what a C caller passes to
//! `vprintf`. Its layout and `va_arg` rule are GCC's for Xtensa (its
//! `xtensa_gimplify_va_arg_expr`), which clang 22's callers follow when they place the
//! arguments (docs/toolchain.md, defect 6): registers a2..a7 saved in order, 8-byte
//! arguments at an even register or an 8-byte aligned stack slot, and never split
//! between registers and stack.

use super::{ArgKind, ArgSource};

/// Bytes of the six argument registers a2..a7.
const REGISTER_BYTES: i32 = 24;
/// The index of the first stack argument: the stack pointer is stored 32 bytes low.
const STACK_START: i32 = 32;

/// C's `va_list` on Xtensa: `{ int *__va_stk; int *__va_reg; int __va_ndx; }`.
#[repr(C)]
#[derive(Debug)]
pub struct VaList {
    /// The caller's first stack argument, less `STACK_START` bytes.
    pub stack: *const u8,
    /// Where a2..a7 were saved, a2 first.
    pub registers: *const u8,
    /// The byte offset of the next argument: below 24 in the registers, from 32 on in
    /// the stack; it starts past the named arguments (4 bytes each).
    pub index: i32,
}

#[cfg(target_pointer_width = "32")]
const _: () = {
    assert!(core::mem::size_of::<VaList>() == 12);
    assert!(core::mem::offset_of!(VaList, registers) == 4);
    assert!(core::mem::offset_of!(VaList, index) == 8);
};

/// A [`VaList`] as an [`ArgSource`].
pub struct VaArgs<'a>(&'a mut VaList);

impl<'a> VaArgs<'a> {
    /// Reads the arguments `list` describes.
    ///
    /// # Safety
    /// `list` describes real arguments (saved registers and stack), and the formatter
    /// asks for no more of them, nor other types, than the caller passed, as C's
    /// `va_arg` requires.
    pub unsafe fn new(list: &'a mut VaList) -> Self {
        VaArgs(list)
    }
}

impl ArgSource for VaArgs<'_> {
    fn next(&mut self, kind: ArgKind) -> u64 {
        let size = match kind {
            ArgKind::Int => 4,
            ArgKind::Long => core::mem::size_of::<core::ffi::c_long>() as i32,
            ArgKind::LongLong | ArgKind::Double => 8,
        };
        let list = &mut *self.0;
        let mut index = list.index;
        if size == 8 {
            index = (index + 7) & !7;
        }
        let mut end = index + size;
        let base = if end <= REGISTER_BYTES {
            list.registers
        } else {
            // The first argument that goes to the stack starts it, even if a register
            // was left.
            if index <= REGISTER_BYTES {
                end = STACK_START + size;
            }
            list.stack
        };
        list.index = end;
        let address = base.wrapping_add((end - size) as usize);
        // SAFETY: the argument of this type is there (VaArgs::new's contract); the ABI
        // aligns it, but an unaligned read costs nothing to allow.
        unsafe {
            if size == 8 {
                address.cast::<u64>().read_unaligned()
            } else {
                u64::from(address.cast::<u32>().read_unaligned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// A call as clang 22 places it: `printf(fmt, 1, 2.0, 3LL, 4, 5.0, 6, 7LL, 8)` has
    /// fmt in a2, 1 in a3, 2.0 in a4/a5, 3LL in a6/a7; 4 at the stack's 0, 5.0 at 8,
    /// 6 at 16, 7LL at 24, 8 at 32 (qemu/tests checks the same call on the device).
    #[test]
    fn arguments_straddling_registers_and_stack_are_read_where_clang_puts_them() {
        let mut registers = [0u32; 6];
        registers[1] = 1;
        registers[2..4].copy_from_slice(&[2.0f64.to_bits() as u32, (2.0f64.to_bits() >> 32) as u32]);
        registers[4..6].copy_from_slice(&[3, 0]);
        let mut stack = [0u32; 10];
        stack[0] = 4;
        stack[2..4].copy_from_slice(&[5.0f64.to_bits() as u32, (5.0f64.to_bits() >> 32) as u32]);
        stack[4] = 6;
        stack[6..8].copy_from_slice(&[7, 0]);
        stack[8] = 8;
        let mut list = VaList {
            stack: stack.as_ptr().cast::<u8>().wrapping_sub(32),
            registers: registers.as_ptr().cast(),
            index: 4,
        };
        // SAFETY: the areas above hold exactly these arguments.
        let mut args = unsafe { VaArgs::new(&mut list) };
        assert_eq!(args.next(ArgKind::Int), 1);
        assert_eq!(f64::from_bits(args.next(ArgKind::Double)), 2.0);
        assert_eq!(args.next(ArgKind::LongLong), 3);
        assert_eq!(args.next(ArgKind::Int), 4);
        assert_eq!(f64::from_bits(args.next(ArgKind::Double)), 5.0);
        assert_eq!(args.next(ArgKind::Int), 6);
        assert_eq!(args.next(ArgKind::LongLong), 7);
        assert_eq!(args.next(ArgKind::Int), 8);
    }

    /// `printf(fmt, 1, 2, 3, 4, 5.0, 6)`: the double does not fit a6/a7 after a6 holds 4,
    /// so it and everything after it go to the stack; a7 stays unused.
    #[test]
    fn a_double_that_does_not_fit_leaves_the_last_register_unused() {
        let registers = [0u32, 1, 2, 3, 4, 0xdead];
        let mut stack = [0u32; 4];
        stack[0..2].copy_from_slice(&[5.0f64.to_bits() as u32, (5.0f64.to_bits() >> 32) as u32]);
        stack[2] = 6;
        let mut list = VaList {
            stack: stack.as_ptr().cast::<u8>().wrapping_sub(32),
            registers: registers.as_ptr().cast(),
            index: 4,
        };
        // SAFETY: as above.
        let mut args = unsafe { VaArgs::new(&mut list) };
        let ints: Vec<u64> = (0..4).map(|_| args.next(ArgKind::Int)).collect();
        assert_eq!(ints, [1, 2, 3, 4]);
        assert_eq!(f64::from_bits(args.next(ArgKind::Double)), 5.0);
        assert_eq!(args.next(ArgKind::Int), 6);
    }
}
