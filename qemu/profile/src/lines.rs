//! The TCG plugin's profile lines (`qemu/plugin/src/profile.rs` writes them), parsed:
//! what one core gathered in one op, by address, before any symbol is looked up.

use neuroncustomop_wire::report::Fields;
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
}

/// One timeline event as the plugin wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvent {
    /// `op`, `wait` or `dma`.
    pub kind: String,
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
        let Some((tag, rest)) = line.as_ref().split_once(' ') else { continue };
        let fields = Fields::new(rest);
        let number = |key: &str| fields.number::<u64>(key).unwrap_or(0);
        let hex = |key: &str| fields.text(key).ok().and_then(|t| u64::from_str_radix(t, 16).ok()).unwrap_or(0);
        match tag {
            "PROFILE" => {
                raw.pcs.push((hex("pc") as u32, number("n"), fields.text("insn").unwrap_or("?").to_string()));
            }
            "STACK" => {
                let frames = fields.text("frames").unwrap_or_default();
                let pcs = frames.split(';').filter_map(|f| u32::from_str_radix(f, 16).ok()).collect();
                raw.stacks.push((pcs, number("n")));
            }
            "MEMORY" => {
                raw.memory.insert(hex("page") as u8, (number("loads"), number("stores")));
            }
            "ACCESS" => {
                let page = raw.accesses.entry(hex("pc") as u32).or_default();
                page.insert(hex("page") as u8, (number("loads"), number("stores")));
            }
            "DMA" => raw.dma = (number("bytes"), number("transfers")),
            "EVENT" => raw.events.push(RawEvent {
                kind: fields.text("kind").unwrap_or("?").to_string(),
                ns: number("ns"),
                dur: number("dur"),
                bytes: number("bytes"),
                at: number("at"),
            }),
            "EVENTS" => raw.dropped_events = number("dropped"),
            "WROTE" => {
                let range = |text: &str| {
                    let (lo, hi) = text.split_once('-')?;
                    Some((u64::from_str_radix(lo, 16).ok()?, u64::from_str_radix(hi, 16).ok()?))
                };
                let ranges = fields.text("ranges").unwrap_or("?");
                raw.written = if ranges.is_empty() { Some(Vec::new()) } else { ranges.split(',').map(range).collect() };
            }
            _ => {}
        }
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ops_lines_parse_by_kind() {
        let lines = [
            "PROFILE core=1 pc=84000010 n=5 insn=l32i.n",
            "STACK core=1 n=7 frames=0;84000010",
            "MEMORY core=1 page=7f loads=3 stores=2",
            "ACCESS core=1 pc=84000010 page=7f loads=3 stores=2",
            "DMA core=1 bytes=4096 transfers=1",
            "EVENT core=1 kind=op ns=100 dur=50 bytes=0 at=7",
            "WROTE core=1 ranges=62000000-62000010,62000040-62000044",
            "COUNT core=1 instructions=17",
        ];
        let one = parse(&lines);
        assert_eq!(one.pcs, [(0x8400_0010, 5, "l32i.n".to_string())]);
        assert_eq!(one.stacks, [(vec![0, 0x8400_0010], 7)]);
        assert_eq!(one.memory[&0x7f], (3, 2));
        assert_eq!(one.accesses[&0x8400_0010][&0x7f], (3, 2));
        assert_eq!(one.dma, (4096, 1));
        assert_eq!(one.events[0], RawEvent { kind: "op".into(), ns: 100, dur: 50, bytes: 0, at: 7 });
        assert_eq!(one.written, Some(vec![(0x6200_0000, 0x6200_0010), (0x6200_0040, 0x6200_0044)]));
        assert_eq!(parse(&["COUNT core=0 instructions=1"]).written, None, "no WROTE line");
        assert_eq!(parse(&["WROTE core=2 ranges=?"]).written, None, "too many ranges");
        assert_eq!(parse(&["WROTE core=2 ranges="]).written, Some(vec![]), "wrote nothing");
    }
}
