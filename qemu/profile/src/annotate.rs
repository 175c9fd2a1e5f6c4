//! Per source line and per instruction: the line table (each line's instructions,
//! loads and stores by region, predicted cycles), the annotated source and the
//! annotated disassembly (as `perf annotate` shows it), and the images' disassembly
//! they quote (`llvm-objdump`, with the Xtensa features the cores have).

use crate::cost::CostModel;
use crate::profile::{Accesses, Instruction, Profile, Region};
use neuroncustomop_machine::toolchain::Llvm;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The distance between two cores' images (library and loader alike): every core runs
/// the same code, linked 2 MiB further on per core (docs/simulation.md's memory map).
const CORE_STRIDE: u32 = 0x20_0000;

/// Parts of the paths of library sources: the annotated source shows only their lines
/// that ran.
const LIBRARIES: [&str; 4] = ["/rustlib/", "/library/core/", "/.cargo/registry/", "runtime/"];

/// The features the disassembler needs to read every instruction the cores run
/// (without `+fp` it prints the FPU's opcodes as unknown words).
const FEATURES: &str = "+fp,+bool,+windowed,+density,+loop,+mul32,+mul32high,+div32,+mac16,+sext,+nsa,+minmax,+clamps";

/// The images' disassembly: each instruction's text and each label.
#[derive(Debug, Default)]
pub struct Disassembly {
    text: BTreeMap<u32, String>,
    labels: BTreeMap<u32, String>,
}

impl Disassembly {
    /// Adds `image`'s code; an image `llvm-objdump` cannot read adds nothing (the
    /// profile then has no disassembly for it, and says so where it would show).
    pub fn add(&mut self, image: &Path) {
        let Ok(out) = std::process::Command::new(Llvm::OBJDUMP)
            .args(["-d", "--no-show-raw-insn", "--triple=xtensa"])
            .arg(format!("--mattr={FEATURES}"))
            .arg(image)
            .output()
        else {
            return;
        };
        self.parse(&String::from_utf8_lossy(&out.stdout));
    }

    /// Reads `llvm-objdump -d --no-show-raw-insn`'s lines: `84000000 <name>:` and
    /// `84000003:      l32i.n a3, a2, 0`.
    fn parse(&mut self, text: &str) {
        for line in text.lines() {
            if let Some((address, rest)) = line.split_once(" <")
                && let Some(name) = rest.strip_suffix(">:")
                && let Ok(address) = u32::from_str_radix(address.trim(), 16)
            {
                self.labels.insert(address, name.to_string());
            } else if let Some((address, rest)) = line.split_once(':')
                && let Ok(address) = u32::from_str_radix(address.trim(), 16)
            {
                let rest = rest.trim();
                if !rest.is_empty() {
                    self.text.insert(address, rest.split_whitespace().collect::<Vec<_>>().join(" "));
                }
            }
        }
    }

    /// The instruction at `pc`, as text.
    pub fn text(&self, pc: u32) -> Option<&str> {
        self.text.get(&pc).map(String::as_str)
    }

    /// The label at or before `pc`, when `pc` is an instruction of a disassembled image.
    pub fn label(&self, pc: u32) -> Option<&str> {
        self.text.get(&pc)?;
        self.labels.range(..=pc).next_back().map(|(_, name)| name.as_str())
    }
}

pub use crate::profile::Line;

/// The line table of `pcs`, most instructions first; PCs with no line are left out.
pub fn lines(pcs: &[Instruction], model: &CostModel) -> Vec<Line> {
    let mut table: BTreeMap<(String, u32), Line> = BTreeMap::new();
    for pc in pcs {
        let (Some(file), Some(number)) = (&pc.file, pc.line) else { continue };
        let line = table.entry((file.clone(), number)).or_insert_with(|| Line {
            file: file.clone(),
            line: number,
            function: pc.frames.last().cloned().unwrap_or_default(),
            instructions: 0,
            waiting: 0,
            memory: BTreeMap::new(),
            cycles: 0.0,
        });
        line.instructions += pc.executed;
        line.waiting += pc.waiting;
        for (region, accesses) in &pc.memory {
            let sum = line.memory.entry(*region).or_default();
            sum.loads += accesses.loads;
            sum.stores += accesses.stores;
        }
        line.cycles += model.instruction_cycles(pc);
    }
    let mut lines: Vec<Line> = table.into_values().collect();
    lines.sort_by(|a, b| b.instructions.cmp(&a.instructions).then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line))));
    lines
}

/// Prices `profile`'s line tables under `model` (each core's [`lines`]).
pub fn price(profile: &mut Profile, model: &CostModel) {
    for core in &mut profile.cores {
        core.lines = lines(&core.pcs, model);
    }
}

impl Profile {
    /// The line table over every core ([`crate::profile::CoreProfile::lines`] summed by
    /// file and line), most instructions first.
    pub fn lines(&self) -> Vec<Line> {
        let mut table: BTreeMap<(&str, u32), Line> = BTreeMap::new();
        for line in self.cores.iter().flat_map(|core| &core.lines) {
            let sum = table.entry((&line.file, line.line)).or_insert_with(|| Line {
                instructions: 0,
                waiting: 0,
                memory: BTreeMap::new(),
                cycles: 0.0,
                ..line.clone()
            });
            sum.instructions += line.instructions;
            sum.waiting += line.waiting;
            sum.cycles += line.cycles;
            for (region, accesses) in &line.memory {
                let region = sum.memory.entry(*region).or_default();
                region.loads += accesses.loads;
                region.stores += accesses.stores;
            }
        }
        let mut lines: Vec<Line> = table.into_values().collect();
        lines.sort_by(|a, b| {
            b.instructions.cmp(&a.instructions).then_with(|| (&a.file, a.line).cmp(&(&b.file, b.line)))
        });
        lines
    }
}

/// `memory`'s loads and stores in words: `2 local RAM, 1 HBM loads; 1 HBM stores`.
fn accesses(memory: &BTreeMap<Region, Accesses>) -> String {
    let part = |pick: fn(&Accesses) -> u64, what: &str| {
        let parts: Vec<String> = Region::ALL
            .iter()
            .filter_map(|r| memory.get(r).map(pick).filter(|&n| n > 0).map(|n| format!("{n} {}", r.name())))
            .collect();
        (!parts.is_empty()).then(|| format!("{} {what}", parts.join(", ")))
    };
    [part(|a| a.loads, "loads"), part(|a| a.stores, "stores")].into_iter().flatten().collect::<Vec<_>>().join("; ")
}

/// Each core's instructions moved onto core 0's addresses and summed: every core runs
/// the same code, [`CORE_STRIDE`] apart.
fn on_core_zero(profile: &Profile) -> Vec<Instruction> {
    let mut merged: BTreeMap<u32, Instruction> = BTreeMap::new();
    for core in &profile.cores {
        for pc in &core.pcs {
            let address = pc.pc.wrapping_sub(core.core * CORE_STRIDE);
            let sum = merged.entry(address).or_insert_with(|| Instruction {
                pc: address,
                executed: 0,
                memory: BTreeMap::new(),
                ..pc.clone()
            });
            sum.executed += pc.executed;
            for (region, accesses) in &pc.memory {
                let region = sum.memory.entry(*region).or_default();
                region.loads += accesses.loads;
                region.stores += accesses.stores;
            }
        }
    }
    merged.into_values().collect()
}

/// The annotated source: every line of each source file the op ran (of a library's,
/// the lines that ran), with its
/// instructions, loads and stores by region and predicted cycles, and under each line
/// that ran, its instructions (all cores summed, at core 0's addresses). A file that
/// cannot be read (a library's, outside this machine) lists its lines that ran.
pub fn source(profile: &Profile, model: &CostModel) -> String {
    let pcs = on_core_zero(profile);
    let mut by_line: BTreeMap<&str, BTreeMap<u32, Vec<&Instruction>>> = BTreeMap::new();
    for pc in &pcs {
        if let (Some(file), Some(line)) = (&pc.file, pc.line) {
            by_line.entry(file).or_default().entry(line).or_default().push(pc);
        }
    }
    let total = profile.instructions().max(1) as f64;
    let mut text = format!(
        "# {}: each source line the op ran, all cores summed: instructions (share of the op), \
         predicted cycles (cost model), loads and stores by region; under it, its instructions \
         at core 0's addresses (times run, then the disassembly)\n",
        profile.kernel
    );
    for (file, lines) in &by_line {
        let source = std::fs::read_to_string(file).ok();
        let _ = writeln!(text, "\n== {file}{}", if source.is_some() { "" } else { " (source not readable here)" });
        // Every line of the author's files; of a library's (the standard library's,
        // a registry crate's), the lines that ran.
        let library = LIBRARIES.iter().any(|part| file.contains(part));
        let numbered: Vec<(u32, Option<&str>)> = match &source {
            Some(source) if !library => source.lines().enumerate().map(|(i, l)| (i as u32 + 1, Some(l))).collect(),
            Some(source) => {
                let text: Vec<&str> = source.lines().collect();
                lines.keys().map(|&n| (n, text.get(n as usize - 1).copied())).collect()
            }
            None => lines.keys().map(|&n| (n, None)).collect(),
        };
        for (number, code) in numbered {
            let Some(ran) = lines.get(&number) else {
                let _ = writeln!(text, "{:>12} {:>6} {:>12} {number:>6}  {}", "", "", "", code.unwrap_or(""));
                continue;
            };
            let executed: u64 = ran.iter().map(|pc| pc.executed).sum();
            let cycles: f64 = ran.iter().map(|pc| model.instruction_cycles(pc)).sum();
            let mut memory = BTreeMap::new();
            for pc in ran {
                for (region, a) in &pc.memory {
                    let sum: &mut Accesses = memory.entry(*region).or_default();
                    sum.loads += a.loads;
                    sum.stores += a.stores;
                }
            }
            let _ = writeln!(
                text,
                "{executed:>12} {:>5.1}% {cycles:>12.0} {number:>6}  {}   {}",
                executed as f64 / total * 100.0,
                code.unwrap_or(""),
                accesses(&memory)
            );
            for pc in ran {
                let wait = if pc.waiting > 0 { format!("  ({} waiting)", pc.waiting) } else { String::new() };
                let _ = writeln!(
                    text,
                    "{:>40} {:08x}: {:>10}  {}{wait}",
                    "",
                    pc.pc,
                    pc.executed,
                    pc.text.as_deref().unwrap_or(&pc.mnemonic)
                );
            }
        }
    }
    text
}

/// The annotated disassembly, as `perf annotate` prints it: each function the op ran
/// (the one its code was compiled into), most instructions first, each instruction
/// with its share of the function's instructions and its source line above it when
/// the line changes. All cores summed, at core 0's addresses.
pub fn disassembly(profile: &Profile) -> String {
    let pcs = on_core_zero(profile);
    let mut functions: BTreeMap<&str, Vec<&Instruction>> = BTreeMap::new();
    for pc in &pcs {
        functions.entry(pc.frames.first().map_or("?", String::as_str)).or_default().push(pc);
    }
    let mut order: Vec<(&str, u64)> =
        functions.iter().map(|(name, pcs)| (*name, pcs.iter().map(|pc| pc.executed).sum())).collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut text = String::new();
    for (name, executed) in order {
        let _ = writeln!(
            text,
            " Percent |      Source code & Disassembly of {name} ({executed} instructions, all cores)\n\
             ---------+---------------------------------------------------------------"
        );
        let mut last_line = None;
        for pc in &functions[name] {
            let here = pc.file.as_deref().zip(pc.line);
            if here != last_line
                && let Some((file, line)) = here
            {
                let _ = writeln!(text, "         :   {file}:{line} ({})", pc.frames.last().map_or("?", String::as_str));
                last_line = here;
            }
            let share = pc.executed as f64 / executed.max(1) as f64 * 100.0;
            let memory = accesses(&pc.memory);
            let memory = if memory.is_empty() { memory } else { format!("   ; {memory}") };
            let _ = writeln!(
                text,
                " {share:>7.2} :   {:08x}:  {}{memory}",
                pc.pc,
                pc.text.as_deref().unwrap_or(&pc.mnemonic)
            );
        }
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix::Class;

    #[test]
    fn objdumps_lines_give_text_and_labels() {
        let mut d = Disassembly::default();
        d.parse(
            "\nfile:\tfile format elf32-xtensa\n\nDisassembly of section .text:\n\n84000000 <_WindowOverflow4>:\n\
             84000000:      \ts32e\ta0, a5, -16\n84000003:      \ts32e\ta1, a5, -12\n\n84000040 <_WindowUnderflow4>:\n\
             84000040:      \tl32e\ta0, a5, -16\n",
        );
        assert_eq!(d.text(0x8400_0003), Some("s32e a1, a5, -12"));
        assert_eq!(d.label(0x8400_0003), Some("_WindowOverflow4"));
        assert_eq!(d.label(0x8400_0040), Some("_WindowUnderflow4"));
        assert_eq!(d.label(0x8400_0041), None, "not an instruction of the image");
    }

    fn pc(pc: u32, executed: u64, line: u32, hbm_loads: u64) -> Instruction {
        Instruction {
            pc,
            executed,
            mnemonic: "l32i".into(),
            text: Some(format!("l32i a2, a3, {pc}")),
            class: Class::Load,
            frames: vec!["kernel".into(), "inlined".into()],
            file: Some("k.rs".into()),
            line: Some(line),
            memory: BTreeMap::from([(Region::Hbm, Accesses { loads: hbm_loads, stores: 0 })]),
            waiting: 0,
        }
    }

    #[test]
    fn a_lines_figures_are_its_instructions_summed_and_priced() {
        let model = CostModel::from_toml("[hbm]\nload_cycles = 11.0\n", "test").unwrap();
        let table = lines(&[pc(0x10, 5, 7, 5), pc(0x13, 5, 7, 0), pc(0x16, 20, 9, 0)], &model);
        assert_eq!((table[0].line, table[0].instructions), (9, 20), "most first");
        let seven = &table[1];
        assert_eq!((seven.line, seven.instructions, seven.function.as_str()), (7, 10, "inlined"));
        assert_eq!(seven.memory[&Region::Hbm].loads, 5);
        assert_eq!(seven.cycles, 10.0 + 5.0 * 10.0, "10 issued, 5 HBM loads at 10 more each");
    }
}
