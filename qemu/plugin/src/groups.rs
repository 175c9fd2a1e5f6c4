//! Runs of a translated block's loads or stores that the memory checks take with one
//! callback (`checks.rs`, "Cost"): what the instructions are, decoded from QEMU's
//! disassembly, and which of them form a group.
//!
//! A **group** is a run of adjacent instructions of one block, each a plain load or
//! store (`l32i`, `s32i`, their narrow forms, `l8ui`, `s8i`, `l16ui`, `l16si`, `s16i`,
//! `lsi`, `ssi`: a base address register plus a constant offset), all loads or all
//! stores, of one width, off one base register that none of them changes before the
//! last, and all inside or all outside the runtime's copies (`word-loads=`). So once the
//! first (the leader) has run, the address of each of the others is the leader's plus
//! a constant known here: the leader's callback knows every access of the group. The
//! unrolled loops of the runtime's `memset` (64 stores off one register) and `memcpy`
//! (8 loads, then 8 stores) are groups, and so is a structure written field by field.
//!
//! The stores of a group never overlap one another, so each store's value is still in
//! guest memory once the group has run (the checks read it back where they need it:
//! a store into the heap journal or the DMA queues), and a group of stores is followed
//! by another instruction of its block, before which the checks can read them.

/// One access of a group after its leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) pc: u32,
    /// Its address less the leader's (wrapping).
    pub(crate) delta: u32,
    /// Bytes.
    pub(crate) size: u32,
}

/// A plain load or store: a register of the address registers plus a constant offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plain {
    pub(crate) store: bool,
    /// Bytes.
    pub(crate) size: u32,
    /// The register a load writes (`a` or `f` and its number); a store's source.
    data: (char, u8),
    /// The address register.
    base: u8,
    offset: i32,
}

/// The plain loads and stores: mnemonic, width in bytes, whether it stores.
const PLAIN: [(&str, u32, bool); 11] = [
    ("l8ui", 1, false),
    ("l16ui", 2, false),
    ("l16si", 2, false),
    ("l32i", 4, false),
    ("l32i.n", 4, false),
    ("lsi", 4, false),
    ("s8i", 1, true),
    ("s16i", 2, true),
    ("s32i", 4, true),
    ("s32i.n", 4, true),
    ("ssi", 4, true),
];

/// The plain load or store QEMU disassembles as `text` (`l32i\ta6, a3, 12`: the data
/// register, the base register, the offset in bytes, in decimal), if it is one.
pub(crate) fn decode(text: &str) -> Option<Plain> {
    let (mnemonic, operands) = text.trim().split_once(char::is_whitespace)?;
    let &(_, size, store) = PLAIN.iter().find(|(name, ..)| *name == mnemonic)?;
    let mut operands = operands.split(',').map(str::trim);
    let register = |text: &str| {
        let mut chars = text.chars();
        let file = chars.next()?;
        Some((file, chars.as_str().parse::<u8>().ok()?))
    };
    let data = register(operands.next()?)?;
    let ('a', base) = register(operands.next()?)? else { return None };
    let offset = operands.next()?.parse().ok()?;
    operands.next().is_none().then_some(Plain { store, size, data, base, offset })
}

/// What each instruction of a block is to the checks' memory callbacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Not a plain load or store: checked by a callback of its own, as any access.
    Own,
    /// The first of a group (its members, maybe none): its callback checks them all.
    Leads(Vec<Member>),
    /// A member of the group before it: no callback of its own.
    Member,
}

/// The roles of a block's instructions, given each one's address, decoding (`None`: not
/// plain, or not checked) and whether it is in the runtime's copies.
pub(crate) fn roles(instructions: &[(u32, Option<Plain>, bool)]) -> Vec<Role> {
    let mut roles = Vec::with_capacity(instructions.len());
    let mut at = 0;
    while at < instructions.len() {
        let (_, decoded, copy) = instructions[at];
        let Some(leader) = decoded else {
            roles.push(Role::Own);
            at += 1;
            continue;
        };
        let mut members = Vec::new();
        // The bytes of the group's stores, as offsets: none may overlap another.
        let mut stored = vec![(leader.offset, leader.offset + leader.size as i32)];
        let mut last = leader;
        for &(pc, decoded, in_copy) in &instructions[at + 1..] {
            let Some(next) = decoded else { break };
            let joins = next.store == leader.store
                && next.size == leader.size
                && next.base == leader.base
                && in_copy == copy
                // The instruction before it (a load) has not changed the base register.
                && (last.store || last.data != ('a', leader.base));
            let bytes = (next.offset, next.offset + next.size as i32);
            if !joins || (next.store && stored.iter().any(|&(lo, hi)| bytes.0 < hi && lo < bytes.1)) {
                break;
            }
            stored.push(bytes);
            members.push(Member { pc, delta: next.offset.wrapping_sub(leader.offset) as u32, size: next.size });
            last = next;
        }
        // A group of stores ends before the block's last instruction: the checks take
        // its values before the next instruction runs (`checks.rs`, `State::flush`).
        if leader.store && at + 1 + members.len() == instructions.len() {
            members.pop();
        }
        at += 1 + members.len();
        let count = members.len();
        roles.push(Role::Leads(members));
        roles.extend(std::iter::repeat_n(Role::Member, count));
    }
    roles
}
