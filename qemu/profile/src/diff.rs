//! Two profiles of one kernel compared, before and after an edit: what each function and
//! each source line gained or lost, and a differential flame graph (`inferno`'s
//! `diff-folded`, then its flame graph: red where the after profile spends more).

use crate::profile::Profile;
use crate::write::folded;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io;

/// One name's instructions before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delta {
    /// A function, or a source line as `file:line`.
    pub name: String,
    /// Its instructions, all cores, in the first profile.
    pub before: u64,
    /// In the second.
    pub after: u64,
}

impl Delta {
    /// `after − before`.
    pub fn change(&self) -> i128 {
        i128::from(self.after) - i128::from(self.before)
    }
}

/// Two profiles compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// All instructions before and after.
    pub total: Delta,
    /// Per function (its own instructions, inlined functions under their own names),
    /// largest change first; unchanged ones left out.
    pub functions: Vec<Delta>,
    /// Per source line, largest change first; unchanged ones left out.
    pub lines: Vec<Delta>,
}

/// Each name's before and after, changed ones only, largest change first.
fn deltas(before: impl Iterator<Item = (String, u64)>, after: impl Iterator<Item = (String, u64)>) -> Vec<Delta> {
    let mut table: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (name, n) in before {
        table.entry(name).or_default().0 += n;
    }
    for (name, n) in after {
        table.entry(name).or_default().1 += n;
    }
    let mut deltas: Vec<Delta> = table
        .into_iter()
        .filter(|(_, (b, a))| b != a)
        .map(|(name, (before, after))| Delta { name, before, after })
        .collect();
    deltas.sort_by(|x, y| y.change().abs().cmp(&x.change().abs()).then_with(|| x.name.cmp(&y.name)));
    deltas
}

/// `before` and `after` compared.
pub fn diff(before: &Profile, after: &Profile) -> Diff {
    let functions = |p: &Profile| {
        p.cores.iter().flat_map(|c| c.functions.iter().map(|f| (f.name.clone(), f.instructions))).collect::<Vec<_>>()
    };
    let lines = |p: &Profile| {
        p.lines().into_iter().map(|l| (format!("{}:{}", l.file, l.line), l.instructions)).collect::<Vec<_>>()
    };
    Diff {
        total: Delta { name: "all".into(), before: before.instructions(), after: after.instructions() },
        functions: deltas(functions(before).into_iter(), functions(after).into_iter()),
        lines: deltas(lines(before).into_iter(), lines(after).into_iter()),
    }
}

/// The differential folded stacks (`inferno`'s `diff-folded`): each call path with its
/// instructions before and after.
///
/// # Errors
/// `inferno` could not read the stacks.
pub fn folded_diff(before: &Profile, after: &Profile) -> io::Result<String> {
    let mut out = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        folded(before).as_bytes(),
        folded(after).as_bytes(),
        &mut out,
    )?;
    String::from_utf8(out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The differential flame graph, as SVG: the after profile's call paths, red where
/// they gained instructions, blue where they lost.
///
/// # Errors
/// `inferno` found no stack to draw.
pub fn flame_svg(before: &Profile, after: &Profile) -> io::Result<Vec<u8>> {
    let folded = folded_diff(before, after)?;
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!("{} → {}: instructions per call path, before and after", before.kernel, after.kernel);
    options.count_name = "instructions".into();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, folded.lines(), &mut svg)?;
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{CoreProfile, Function, Stack};

    fn profile(functions: &[(&str, u64)]) -> Profile {
        let core = CoreProfile {
            instructions: functions.iter().map(|f| f.1).sum(),
            functions: functions
                .iter()
                .map(|&(name, instructions)| Function { name: name.into(), file: None, instructions })
                .collect(),
            stacks: functions
                .iter()
                .map(|&(name, instructions)| Stack { frames: vec!["k".into(), name.into()], instructions })
                .collect(),
            ..CoreProfile::default()
        };
        Profile { kernel: "k".into(), cores: vec![core] }
    }

    #[test]
    fn a_diff_names_what_changed_largest_first() {
        let before = profile(&[("expf", 1000), ("loop", 200), ("same", 5)]);
        let after = profile(&[("expf", 100), ("loop", 250), ("same", 5), ("new", 7)]);
        let d = diff(&before, &after);
        assert_eq!((d.total.before, d.total.after), (1205, 362));
        let changes: Vec<(&str, i128)> = d.functions.iter().map(|f| (f.name.as_str(), f.change())).collect();
        assert_eq!(changes, [("expf", -900), ("loop", 50), ("new", 7)]);
        let folded = folded_diff(&before, &after).unwrap();
        assert!(folded.lines().any(|l| l == "core_0;k;expf 1000 100"), "{folded}");
        assert!(folded.lines().any(|l| l == "core_0;k;new 0 7"), "{folded}");
        let svg = String::from_utf8(flame_svg(&before, &after).unwrap()).unwrap();
        assert!(svg.contains("<svg") && svg.contains("expf"), "{}", &svg[..300.min(svg.len())]);
    }
}
