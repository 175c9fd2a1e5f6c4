//! The one-byte FunctionId that selects the kernel of an op.

/// A kernel's dispatch handle: the header's byte +0x0E and the `sub_opcode` of the
/// function in `ucode_lib.json`. Always in `0 ..= 253`: 0xFF means "unset" and at most
/// [`FunctionId::MAX_FUNCTIONS`] ids are ever allocated, so 0xFE is never one either.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FunctionId(u8);

impl FunctionId {
    /// The byte that marks a FunctionId as not set.
    pub const UNSET_BYTE: u8 = 0xFF;

    /// The most unique functions one module can hold (ids `0 ..= 253`).
    pub const MAX_FUNCTIONS: usize = 254;

    /// The id whose byte is `raw`, or `None` if `raw` is 0xFF (unset) or 0xFE (past the
    /// [`MAX_FUNCTIONS`](Self::MAX_FUNCTIONS) limit).
    ///
    /// ```
    /// use neuroncustomop_wire::FunctionId;
    /// assert_eq!(FunctionId::new(253).map(FunctionId::get), Some(253));
    /// assert_eq!(FunctionId::new(254), None);
    /// assert_eq!(FunctionId::new(FunctionId::UNSET_BYTE), None);
    /// ```
    pub const fn new(raw: u8) -> Option<Self> {
        if (raw as usize) < Self::MAX_FUNCTIONS { Some(Self(raw)) } else { None }
    }

    /// The id's byte on the wire.
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// The FunctionIds that name a registered kernel: the decoder rejects any other id.
///
/// Implemented for slices of ids and for predicates, so a caller can check against a
/// list, a bitmap or its own `ucode_lib.json` model.
pub trait FunctionTable {
    /// Whether `id` names a registered kernel.
    fn contains(&self, id: FunctionId) -> bool;
}

impl FunctionTable for [FunctionId] {
    fn contains(&self, id: FunctionId) -> bool {
        <[FunctionId]>::contains(self, &id)
    }
}

impl<F: Fn(FunctionId) -> bool> FunctionTable for F {
    fn contains(&self, id: FunctionId) -> bool {
        self(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_below_254_is_an_id_and_the_rest_are_not() {
        for raw in 0..=u8::MAX {
            assert_eq!(FunctionId::new(raw).map(FunctionId::get), (raw < 254).then_some(raw));
        }
    }

    #[test]
    fn slice_and_predicate_tables_answer_membership() {
        let three = FunctionId::new(3).unwrap();
        let four = FunctionId::new(4).unwrap();
        let list = [three];
        assert!(FunctionTable::contains(&list[..], three));
        assert!(!FunctionTable::contains(&list[..], four));
        let even = |id: FunctionId| id.get().is_multiple_of(2);
        assert!(FunctionTable::contains(&even, four));
        assert!(!FunctionTable::contains(&even, three));
    }
}
