//! The instruction mix: each executed instruction's class, from the mnemonic QEMU's own
//! disassembler gives it (`qemu_plugin_insn_disas`, first word), so no decoder of ours
//! can disagree with what ran.

use serde::{Deserialize, Serialize};

/// What an instruction does, as far as the cost model cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Integer arithmetic, logic, shifts, moves, constants.
    Alu,
    /// Integer multiply and divide (`mull`, `muluh`, `quou`, `rems`, MAC16).
    MulDiv,
    /// Floating-point arithmetic (`add.s`, `sub.s`, `mul.s`, `madd.s`, `msub.s`).
    Fpu,
    /// The FPU's divide and square-root steps (`div0.s`, `divn.s`, `maddn.s`,
    /// `nexp01.s`, `recip0.s`, `sqrt0.s`, …): a divide or root is a sequence of them.
    FpuDivide,
    /// Floating-point moves, conversions and compares (`mov.s`, `float.s`, `trunc.s`,
    /// `olt.s`, `rfr`, `wfr`, …), not its loads and stores.
    FpuMove,
    /// Loads, float loads included (`l32i`, `l32r`, `lsi`).
    Load,
    /// Stores, float stores included (`s32i`, `ssi`).
    Store,
    /// Branches, jumps, loops, returns.
    Branch,
    /// Calls (`call0`..`call12`, `callx*`).
    Call,
    /// The register window, special registers, barriers, `waiti`, exceptions.
    System,
}

impl Class {
    /// Every class, in the order reports list them.
    pub const ALL: [Class; 10] = [
        Class::Alu,
        Class::MulDiv,
        Class::Fpu,
        Class::FpuDivide,
        Class::FpuMove,
        Class::Load,
        Class::Store,
        Class::Branch,
        Class::Call,
        Class::System,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Class::Alu => "alu",
            Class::MulDiv => "mul/div",
            Class::Fpu => "fpu",
            Class::FpuDivide => "fpu divide",
            Class::FpuMove => "fpu move",
            Class::Load => "load",
            Class::Store => "store",
            Class::Branch => "branch",
            Class::Call => "call",
            Class::System => "system",
        }
    }

    /// The class of an Xtensa mnemonic as QEMU prints it (`l32i.n`, `madd.s`, `retw.n`).
    pub fn of(mnemonic: &str) -> Class {
        let m = mnemonic.to_ascii_lowercase();
        let base = m.strip_suffix(".n").unwrap_or(&m);
        const LOADS: [&str; 11] =
            ["l8ui", "l16ui", "l16si", "l32i", "l32r", "l32ai", "lsi", "lsiu", "lsx", "lsxu", "l32e"];
        const STORES: [&str; 10] = ["s8i", "s16i", "s32i", "s32ri", "s32c1i", "ssi", "ssiu", "ssx", "ssxu", "s32e"];
        const MUL_DIV: [&str; 9] = ["mull", "muluh", "mulsh", "mul16u", "mul16s", "quos", "quou", "rems", "remu"];
        const SYSTEM: [&str; 21] = [
            "entry", "rotw", "rfwo", "rfwu", "rfe", "rfde", "rfi", "rsr", "wsr", "xsr", "rur", "wur", "isync", "rsync",
            "esync", "dsync", "memw", "extw", "excw", "waiti", "syscall",
        ];
        const FPU: [&str; 5] = ["add.s", "sub.s", "mul.s", "madd.s", "msub.s"];
        const FPU_DIVIDE: [&str; 11] = [
            "div0.s",
            "divn.s",
            "maddn.s",
            "nexp01.s",
            "recip0.s",
            "rsqrt0.s",
            "sqrt0.s",
            "mkdadj.s",
            "mksadj.s",
            "addexp.s",
            "addexpm.s",
        ];
        const BRANCHES: [&str; 7] = ["j", "jx", "loop", "loopnez", "loopgtz", "ret", "retw"];
        if LOADS.contains(&base) {
            Class::Load
        } else if STORES.contains(&base) {
            Class::Store
        } else if base.starts_with("call") {
            Class::Call
        } else if FPU.contains(&base) {
            Class::Fpu
        } else if FPU_DIVIDE.contains(&base) {
            Class::FpuDivide
        } else if base.ends_with(".s") || base == "rfr" || base == "wfr" {
            Class::FpuMove
        } else if MUL_DIV.contains(&base) || base.starts_with("mul.") || base.starts_with("mula.") {
            // MAC16's `mul.aa.ll`, `mula.dd.hh`, … (the FPU's `mul.s` is taken above).
            Class::MulDiv
        } else if SYSTEM.contains(&base) || base.starts_with("simcall") || base.starts_with("break") {
            Class::System
        } else if BRANCHES.contains(&base) || (base.starts_with('b') && !base.starts_with("break")) {
            Class::Branch
        } else {
            Class::Alu
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mnemonics_fall_in_their_classes() {
        let cases = [
            ("l32i.n", Class::Load),
            ("l32r", Class::Load),
            ("lsi", Class::Load),
            ("s32i.n", Class::Store),
            ("ssi", Class::Store),
            ("madd.s", Class::Fpu),
            ("mul.s", Class::Fpu),
            ("div0.s", Class::FpuDivide),
            ("maddn.s", Class::FpuDivide),
            ("wfr", Class::FpuMove),
            ("float.s", Class::FpuMove),
            ("olt.s", Class::FpuMove),
            ("mul.aa.ll", Class::MulDiv),
            ("mull", Class::MulDiv),
            ("quou", Class::MulDiv),
            ("beqz.n", Class::Branch),
            ("bnez", Class::Branch),
            ("bgeu", Class::Branch),
            ("retw.n", Class::Branch),
            ("j", Class::Branch),
            ("loopnez", Class::Branch),
            ("callx8", Class::Call),
            ("call0", Class::Call),
            ("entry", Class::System),
            ("waiti", Class::System),
            ("break", Class::System),
            ("memw", Class::System),
            ("add.n", Class::Alu),
            ("movi", Class::Alu),
            ("extui", Class::Alu),
        ];
        for (mnemonic, class) in cases {
            assert_eq!(Class::of(mnemonic), class, "{mnemonic}");
        }
    }
}
