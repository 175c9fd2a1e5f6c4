//! The device cost model: predicted device cycles and time of an op per core, from its
//! profile (instructions, loads by region, DMA transfers) and parameters each documented
//! with its source in `qemu/profile/cost-model.toml`, which an author may override key by
//! key (`ncop run --cost-model FILE`) or fit to measured times (`ncop calibrate`,
//! [`crate::fit`]).
//!
//! Per core, every term in cycles:
//!
//! | term | cycles |
//! |---|---|
//! | compute | instructions × `core.cycles_per_instruction` |
//! | local memory | loads from local RAM, the image and the stack × (`local_ram.load_cycles` − 1) |
//! | HBM | loads from HBM and the HBM scratch × (`hbm.load_cycles` − 1) |
//! | stores | stores × (`stores.cycles` − 1) |
//! | DMA | the time the core waits for its transfers ([`crate::timeline`]): each batch's `dma.latency_cycles`, then its bytes at min(`dma.link_bytes_per_cycle`, `dma.shared_bytes_per_second` ÷ `clock.hz` ÷ cores) |
//!
//! The instructions of a wait for the DMA engine (the runtime's wait loop, its sleep,
//! the interrupt that ends it: [`crate::profile::Instruction::waiting`]) are not work:
//! how many run depends on how long the simulated engine took, so they and their loads
//! count nothing, and the DMA term stands for the wait. The terms add up; the largest is
//! what bounds the core. The op takes as long as its slowest core, and an iteration of
//! the framework around it `op.overhead_seconds` more.
//!
//! What it cannot model: the device's 512-bit SIMD (this toolchain emits none of it, so
//! a vendor-compiled kernel using it would be faster than predicted), caches (there
//! are none in the model: each load pays its region's latency), overlap of loads
//! (a load's latency is paid in full, as if the next instruction used it), and
//! anything outside the op but its one fixed overhead (the host, the framework, the
//! other engines).

use crate::profile::{CoreProfile, Instruction, Region};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The parameters shipped with the project, with their sources.
pub const DEFAULT_TOML: &str = include_str!("../cost-model.toml");

/// The model's parameters (`cost-model.toml` says what each is and where it comes from).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostModel {
    /// `[clock]`.
    pub clock: Clock,
    /// `[core]`.
    pub core: Core,
    /// `[local_ram]`.
    pub local_ram: LocalRam,
    /// `[hbm]`.
    pub hbm: Hbm,
    /// `[stores]`.
    pub stores: Stores,
    /// `[dma]`.
    pub dma: Dma,
    /// `[op]`.
    pub op: Op,
}

/// `[op]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Op {
    /// Seconds an iteration of the framework around the op takes besides the op.
    pub overhead_seconds: f64,
}

/// `[clock]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clock {
    /// Cycles per second.
    pub hz: f64,
}

/// `[core]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Core {
    /// Cycles an instruction takes to issue.
    pub cycles_per_instruction: f64,
}

/// `[local_ram]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalRam {
    /// Cycles of a load.
    pub load_cycles: f64,
    /// Its size per core (documentation: the model does not check it).
    pub bytes: u64,
}

/// `[hbm]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hbm {
    /// Cycles of a load.
    pub load_cycles: f64,
}

/// `[stores]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stores {
    /// Cycles of a store.
    pub cycles: f64,
}

/// `[dma]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dma {
    /// Bytes per cycle of one core's link.
    pub link_bytes_per_cycle: f64,
    /// Bytes per second of the DMA all cores share.
    pub shared_bytes_per_second: f64,
    /// Cycles from a batch of transfers queued to its first bytes moving.
    pub latency_cycles: f64,
}

/// Why a cost model file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CostModelError {
    /// It could not be read.
    #[error("cannot read the cost model {path}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// It is not TOML, or names a key the model does not have, or a value of the
    /// wrong kind.
    #[error("the cost model {path}: {message}(qemu/profile/cost-model.toml lists every key)")]
    Invalid {
        /// The file.
        path: String,
        /// TOML's words.
        message: String,
    },
}

impl Default for CostModel {
    fn default() -> Self {
        Self::from_toml(DEFAULT_TOML, "the default cost model").expect("the shipped cost-model.toml parses")
    }
}

/// `over`'s keys laid over `base`'s, table by table.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(base)), toml::Value::Table(over)) => merge(base, over),
            (_, value) => _ = base.insert(key, value),
        }
    }
}

impl CostModel {
    /// The default parameters with `text`'s (TOML) laid over them.
    ///
    /// # Errors
    /// [`CostModelError::Invalid`], naming `what`.
    pub fn from_toml(text: &str, what: &str) -> Result<Self, CostModelError> {
        let invalid = |e: toml::de::Error| CostModelError::Invalid { path: what.into(), message: e.to_string() };
        let mut table: toml::Table = DEFAULT_TOML.parse().map_err(invalid)?;
        merge(&mut table, text.parse().map_err(invalid)?);
        table.try_into().map_err(invalid)
    }

    /// The default parameters with those of the TOML file at `path` laid over them.
    ///
    /// # Errors
    /// [`CostModelError`].
    pub fn load(path: &Path) -> Result<Self, CostModelError> {
        let what = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|source| CostModelError::Read { path: what.clone(), source })?;
        Self::from_toml(&text, &what)
    }

    /// Cycles of a load from `region`.
    fn load_cycles(&self, region: Region) -> f64 {
        match region {
            Region::LocalRam | Region::Image | Region::Stack => self.local_ram.load_cycles,
            Region::Hbm | Region::HbmScratch => self.hbm.load_cycles,
            // The queues' counters and the job block: not priced (an instruction's issue).
            Region::DmaQueues | Region::Other => 1.0,
        }
    }

    /// Predicted cycles of one instruction over all its runs: issue, plus its loads'
    /// and stores' cycles beyond issue; none for the runs that were waits
    /// ([`Instruction::waiting`]).
    pub fn instruction_cycles(&self, pc: &Instruction) -> f64 {
        let busy = pc.executed.saturating_sub(pc.waiting);
        if busy == 0 {
            return 0.0;
        }
        let share = busy as f64 / pc.executed as f64;
        let memory: f64 = pc
            .memory
            .iter()
            .map(|(&region, a)| {
                a.loads as f64 * (self.load_cycles(region) - 1.0) + a.stores as f64 * (self.stores.cycles - 1.0)
            })
            .sum();
        busy as f64 * self.core.cycles_per_instruction + memory * share
    }

    /// Bytes a cycle one core's transfers move while `cores` cores copy at once: its
    /// link, or its share of the DMA they share, whichever is less.
    pub fn dma_bytes_per_cycle(&self, cores: usize) -> f64 {
        let shared = self.dma.shared_bytes_per_second / self.clock.hz / cores.max(1) as f64;
        self.dma.link_bytes_per_cycle.min(shared)
    }

    /// The busy terms of one core (every term but the DMA wait): its figures less its
    /// waits' instructions and accesses.
    pub(crate) fn busy(&self, profile: &CoreProfile) -> Terms {
        // Each region's accesses less the waits' share of them.
        let mut memory: BTreeMap<Region, (f64, f64)> =
            profile.memory.iter().map(|(r, a)| (*r, (a.loads as f64, a.stores as f64))).collect();
        for pc in profile.pcs.iter().filter(|pc| pc.waiting > 0) {
            let share = pc.waiting as f64 / pc.executed.max(1) as f64;
            for (region, a) in &pc.memory {
                let sum = memory.entry(*region).or_default();
                sum.0 = (sum.0 - a.loads as f64 * share).max(0.0);
                sum.1 = (sum.1 - a.stores as f64 * share).max(0.0);
            }
        }
        let loads = |regions: &[Region]| {
            regions.iter().map(|&r| memory.get(&r).map_or(0.0, |a| a.0) * (self.load_cycles(r) - 1.0)).sum()
        };
        let stores: f64 = memory.values().map(|a| a.1).sum();
        Terms {
            compute: (profile.instructions - profile.waiting) as f64 * self.core.cycles_per_instruction,
            local_memory: loads(&[Region::LocalRam, Region::Image, Region::Stack]),
            hbm: loads(&[Region::Hbm, Region::HbmScratch]),
            stores: stores * (self.stores.cycles - 1.0),
            dma: 0.0,
        }
    }

    /// This model with the parameter `key` (`section.name`, as in the TOML file) set to
    /// `value`.
    ///
    /// # Errors
    /// [`CostModelError::Invalid`] for a key the model does not have or that is no number.
    pub fn with(&self, key: &str, value: f64) -> Result<CostModel, CostModelError> {
        let invalid = |message: String| CostModelError::Invalid { path: key.into(), message };
        let mut table = toml::Table::try_from(self).map_err(|e| invalid(e.to_string()))?;
        let (section, name) = key.split_once('.').ok_or_else(|| invalid("a key is `section.name` ".into()))?;
        let slot = table
            .get_mut(section)
            .and_then(|s| s.as_table_mut())
            .and_then(|s| s.get_mut(name))
            .ok_or_else(|| invalid("no such parameter ".into()))?;
        if !slot.is_float() {
            return Err(invalid("not a number of cycles, bytes or seconds ".into()));
        }
        *slot = toml::Value::Float(value);
        table.try_into().map_err(|e: toml::de::Error| invalid(e.to_string()))
    }

    /// The parameter `key`'s value.
    ///
    /// # Errors
    /// As [`CostModel::with`].
    pub fn get(&self, key: &str) -> Result<f64, CostModelError> {
        let invalid = |message: String| CostModelError::Invalid { path: key.into(), message };
        let table = toml::Table::try_from(self).map_err(|e| invalid(e.to_string()))?;
        let (section, name) = key.split_once('.').ok_or_else(|| invalid("a key is `section.name` ".into()))?;
        table
            .get(section)
            .and_then(|s| s.get(name))
            .and_then(toml::Value::as_float)
            .ok_or_else(|| invalid("no such number ".into()))
    }
}

/// The cycles of each term of one core's prediction.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Terms {
    /// Issuing the instructions.
    pub compute: f64,
    /// Local RAM and image load latency beyond issue.
    pub local_memory: f64,
    /// HBM load latency beyond issue.
    pub hbm: f64,
    /// Store cost beyond issue.
    pub stores: f64,
    /// Waiting for DMA transfers.
    pub dma: f64,
}

/// What bounds a core: its largest term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// Issuing instructions.
    Compute,
    /// Local RAM loads.
    LocalMemory,
    /// HBM loads.
    Hbm,
    /// Stores.
    Stores,
    /// DMA transfers.
    Dma,
}

impl Bound {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::LocalMemory => "local memory",
            Bound::Hbm => "HBM",
            Bound::Stores => "stores",
            Bound::Dma => "DMA",
        }
    }
}

impl Terms {
    pub(crate) fn bound(&self) -> Bound {
        let terms = [
            (Bound::Compute, self.compute),
            (Bound::LocalMemory, self.local_memory),
            (Bound::Hbm, self.hbm),
            (Bound::Stores, self.stores),
            (Bound::Dma, self.dma),
        ];
        terms.into_iter().max_by(|a, b| a.1.total_cmp(&b.1)).map_or(Bound::Compute, |(bound, _)| bound)
    }
}

/// One core's predicted cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorePrediction {
    /// The core.
    pub core: u32,
    /// Device cycles.
    pub cycles: f64,
    /// Device seconds.
    pub seconds: f64,
    /// What bounds it.
    pub bound: Bound,
    /// The cycles of each term.
    pub terms: Terms,
}

/// An op's predicted cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Per core.
    pub cores: Vec<CorePrediction>,
    /// The slowest core: the op's time (`None` for no core).
    pub slowest: Option<CorePrediction>,
    /// Seconds of an iteration: the slowest core's, and `op.overhead_seconds`.
    pub seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix::Class;
    use crate::profile::{Accesses, Event, EventKind};

    fn core(instructions: u64, hbm_loads: u64, local_loads: u64) -> CoreProfile {
        let memory = BTreeMap::from([
            (Region::Hbm, Accesses { loads: hbm_loads, stores: 0 }),
            (Region::LocalRam, Accesses { loads: local_loads, stores: 0 }),
        ]);
        CoreProfile { instructions, memory, ..CoreProfile::default() }
    }

    /// A transfer of `bytes` queued at instruction `at`.
    fn transfer(at: u64, bytes: u64) -> Event {
        Event { kind: EventKind::Dma, start_ns: 0, duration_ns: 0, bytes, instruction: at }
    }

    #[test]
    fn the_shipped_parameters_parse_and_an_override_changes_only_its_key() {
        let model = CostModel::default();
        assert_eq!(model.clock.hz, 1.4e9);
        assert_eq!(model.local_ram.load_cycles, 3.0);
        assert_eq!(model.dma.link_bytes_per_cycle, 64.0);
        let over = CostModel::from_toml("[hbm]\nload_cycles = 100.0\n", "test").unwrap();
        assert_eq!(over.hbm.load_cycles, 100.0);
        assert_eq!(over.clock, model.clock);
        let bad = CostModel::from_toml("[hbm]\nlatency = 1\n", "test").unwrap_err().to_string();
        assert!(bad.contains("unknown field `latency`"), "{bad}");
        assert_eq!(model.with("hbm.load_cycles", 7.0).unwrap().hbm.load_cycles, 7.0);
        assert_eq!(model.get("op.overhead_seconds").unwrap(), model.op.overhead_seconds);
        assert!(model.with("hbm.nothing", 1.0).is_err() && model.with("local_ram.bytes", 1.0).is_err());
    }

    #[test]
    fn a_core_that_queued_no_transfer_waits_plus_zero_cycles() {
        let (prediction, _) = CostModel::default().core(&core(1000, 10, 100), 1);
        assert!(prediction.terms.dma == 0.0 && prediction.terms.dma.is_sign_positive(), "{:?}", prediction.terms);
        assert_eq!(format!("{:.0}", prediction.terms.dma), "0");
    }

    #[test]
    fn terms_add_up_and_the_largest_bounds() {
        let model = CostModel::from_toml("[hbm]\nload_cycles = 101.0\n[dma]\nlatency_cycles = 50.0\n", "test").unwrap();
        let mut one = core(1000, 10, 100);
        one.events = vec![transfer(500, 6400)];
        let (prediction, timeline) = model.core(&one, 1);
        assert_eq!(prediction.terms.compute, 1000.0);
        assert_eq!(prediction.terms.hbm, 1000.0);
        assert_eq!(prediction.terms.local_memory, 200.0);
        assert_eq!(prediction.terms.dma, 50.0 + 100.0, "the latency, then 64 B a cycle on one core");
        assert_eq!(prediction.cycles, 2350.0);
        assert_eq!(prediction.seconds, 2350.0 / 1.4e9);
        assert_eq!(timeline.op.cycles, prediction.cycles, "the trace's op is the prediction");
        // Queued halfway through the busy cycles (2200 at 2.2 a busy instruction).
        assert_eq!(timeline.transfers[0].start, 500.0 * 2.2);
        assert_eq!(timeline.waits[0].start, 500.0 * 2.2);
        // On 8 cores each gets 307e9 / 1.4e9 / 8 = 27.4 B a cycle: the shared DMA binds.
        let mut eight = core(0, 0, 0);
        eight.events = vec![transfer(0, 6400)];
        let (eight, _) = model.core(&eight, 8);
        assert!((eight.terms.dma - 50.0 - 6400.0 / (307e9 / 1.4e9 / 8.0)).abs() < 1e-9, "{eight:?}");
        assert_eq!(eight.bound, Bound::Dma);
    }

    #[test]
    fn waits_are_idle_and_the_stack_is_local_ram() {
        let model = CostModel::default();
        let pc = |executed, waiting, region| Instruction {
            pc: 0,
            executed,
            mnemonic: "l32i".into(),
            text: None,
            class: Class::Load,
            frames: vec![],
            file: None,
            line: None,
            memory: BTreeMap::from([(region, Accesses { loads: executed, stores: 0 })]),
            waiting: if waiting { executed } else { 0 },
        };
        assert_eq!(model.instruction_cycles(&pc(10, false, Region::Stack)), 10.0 * 3.0);
        assert_eq!(model.instruction_cycles(&pc(10, true, Region::DmaQueues)), 0.0);
        // A core whose wait loop ran 40 more times costs the same.
        let busy = |waits: u64| {
            let mut core = core(1000 + waits, 0, 0);
            core.waiting = waits;
            core.memory.insert(Region::DmaQueues, Accesses { loads: waits, stores: 0 });
            core.pcs = vec![pc(waits, true, Region::DmaQueues)];
            model.core(&core, 1).0.cycles
        };
        assert_eq!(busy(10), busy(50));
        assert_eq!(busy(10), 1000.0);
    }
}
