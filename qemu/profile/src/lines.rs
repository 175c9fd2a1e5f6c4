//! The TCG plugin's profile lines (`qemu/plugin/src/profile.rs` writes them, as
//! `neuroncustomop_wire::plugin::Line`s), parsed:
//! what one core gathered in one op, by address, before any symbol is looked up.

pub use neuroncustomop_wire::plugin::EventKind;
use neuroncustomop_wire::plugin::Line;
use std::collections::BTreeMap;

/// One core's raw profile of one op.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawCore {
    /// Each PC it ran: (pc, instructions, mnemonic).
    pub pcs: Vec<(u32, u64, String)>,
    /// Each call path, outermost first (function entry PCs; `0` is the loader), with the
    /// instructions run while it was on top.
    pub stacks: Vec<(Vec<u32>, u64)>,
    /// Loads and stores per 16 MiB page of the address.
    pub memory: BTreeMap<u8, (u64, u64)>,
    /// The same per instruction: by PC, then page.
    pub accesses: BTreeMap<u32, BTreeMap<u8, (u64, u64)>>,
    /// Bytes and transfers the core queued on its DMA queues.
    pub dma: (u64, u64),
    /// Timeline events, in the order they happened.
    pub events: Vec<RawEvent>,
    /// Events past the plugin's limit, dropped.
    pub dropped_events: u64,
    /// The byte ranges it stored to in the tensor area, merged; `None` when the plugin
    /// could not keep them (too many) or was not told the area.
    pub written: Option<Vec<(u64, u64)>>,
    /// Each call down to `frame_depth`, in the order they returned.
    pub frames: Vec<RawFrame>,
    /// The deepest call kept, and the calls deeper than it, not kept.
    pub frame_depth: u32,
    /// Calls deeper than `frame_depth`, not kept.
    pub frames_dropped: u64,
    /// Each range marker the core reached, in order: its PC and the instructions run
    /// before it.
    pub marks: Vec<(u32, u64)>,
}

/// One call as the plugin wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawFrame {
    /// The function's entry.
    pub pc: u32,
    /// Its depth: 1 for a function the loader called.
    pub depth: u32,
    /// The core's instructions since the op started, at its entry.
    pub at: u64,
    /// Its instructions, its callees' included.
    pub len: u64,
}

/// One timeline event as the plugin wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvent {
    /// The op, a sleep or a DMA transfer.
    pub kind: EventKind,
    /// Host nanoseconds from the plugin's start.
    pub ns: u64,
    /// Its length in host nanoseconds (0 for a DMA transfer queued).
    pub dur: u64,
    /// A DMA transfer's bytes.
    pub bytes: u64,
    /// The core's instructions since the op started.
    pub at: u64,
}

/// One core's profile of one op, from the plugin's lines for that op (the host's
/// `OpReport::plugin`); lines of other kinds are skipped.
pub fn parse<S: AsRef<str>>(lines: &[S]) -> RawCore {
    let mut raw = RawCore::default();
    for line in lines {
        let Ok(line) = Line::parse(line.as_ref()) else { continue };
        match line {
            Line::Profile { pc, count, mnemonic, .. } => raw.pcs.push((pc, count, mnemonic.to_string())),
            Line::Stack { count, frames, .. } => raw.stacks.push((frames.iter().collect(), count)),
            Line::Memory { page, loads, stores, .. } => _ = raw.memory.insert(page, (loads, stores)),
            Line::Access { pc, page, loads, stores, .. } => {
                raw.accesses.entry(pc).or_default().insert(page, (loads, stores));
            }
            Line::Dma { bytes, transfers, .. } => raw.dma = (bytes, transfers),
            Line::Event { kind, ns, dur, bytes, at, .. } => raw.events.push(RawEvent { kind, ns, dur, bytes, at }),
            Line::Events { dropped, .. } => raw.dropped_events = dropped,
            Line::Wrote { ranges, .. } => raw.written = ranges.map(|ranges| ranges.iter().collect()),
            Line::Frame { pc, depth, at, len, .. } => raw.frames.push(RawFrame { pc, depth, at, len }),
            Line::Frames { depth, dropped, .. } => (raw.frame_depth, raw.frames_dropped) = (depth, dropped),
            Line::Mark { pc, at, .. } => raw.marks.push((pc, at)),
            _ => {}
        }
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;
    use neuroncustomop_wire::plugin::List;

    #[test]
    fn an_ops_lines_parse_by_kind() {
        let ranges = [(0x6200_0000, 0x6200_0010), (0x6200_0040, 0x6200_0044)];
        let lines = [
            Line::Profile { core: 1, pc: 0x8400_0010, count: 5, mnemonic: "l32i.n" },
            Line::Stack { core: 1, count: 7, frames: List::Raw(&[0, 0x8400_0010]) },
            Line::Memory { core: 1, page: 0x7f, loads: 3, stores: 2 },
            Line::Access { core: 1, pc: 0x8400_0010, page: 0x7f, loads: 3, stores: 2 },
            Line::Dma { core: 1, bytes: 4096, transfers: 1 },
            Line::Event { core: 1, kind: EventKind::Op, ns: 100, dur: 50, bytes: 0, at: 7 },
            Line::Wrote { core: 1, ranges: Some(List::Raw(&ranges)) },
            Line::Frame { core: 1, pc: 0x8400_0010, depth: 1, at: 3, len: 9 },
            Line::Frames { core: 1, depth: 1, dropped: 4 },
            Line::Mark { core: 1, pc: 0x8400_0014, at: 5 },
            Line::Count { core: 1, instructions: 17 },
        ];
        let text = |lines: &[Line<'_>]| lines.iter().map(Line::to_string).collect::<Vec<_>>();
        let one = parse(&text(&lines));
        assert_eq!(one.pcs, [(0x8400_0010, 5, "l32i.n".to_string())]);
        assert_eq!(one.stacks, [(vec![0, 0x8400_0010], 7)]);
        assert_eq!(one.memory[&0x7f], (3, 2));
        assert_eq!(one.accesses[&0x8400_0010][&0x7f], (3, 2));
        assert_eq!(one.dma, (4096, 1));
        assert_eq!(one.events[0], RawEvent { kind: EventKind::Op, ns: 100, dur: 50, bytes: 0, at: 7 });
        assert_eq!(one.written, Some(ranges.to_vec()));
        assert_eq!(one.frames, [RawFrame { pc: 0x8400_0010, depth: 1, at: 3, len: 9 }]);
        assert_eq!((one.frame_depth, one.frames_dropped), (1, 4));
        assert_eq!(one.marks, [(0x8400_0014, 5)]);
        assert_eq!(parse(&text(&lines[10..])).written, None, "no WROTE line");
        assert_eq!(parse(&text(&[Line::Wrote { core: 2, ranges: None }])).written, None, "too many ranges");
        let nothing = Line::Wrote { core: 2, ranges: Some(List::EMPTY) };
        assert_eq!(parse(&text(&[nothing])).written, Some(vec![]), "wrote nothing");
    }
}
