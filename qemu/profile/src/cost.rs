//! The device cost model: predicted device cycles and time of an op per core, from its
//! profile (instructions, loads by region, DMA bytes) and parameters each documented
//! with its public source in `qemu/profile/cost-model.toml`, which an author may
//! override key by key (`ncop run --cost-model FILE`).
//!
//! Per core, every term in cycles:
//!
//! | term | cycles |
//! |---|---|
//! | compute | instructions × `core.cycles_per_instruction` |
//! | local memory | loads from local RAM and the image × (`local_ram.load_cycles` − 1) |
//! | HBM | loads from HBM and the HBM scratch × (`hbm.load_cycles` − 1) |
//! | stores | stores × (`stores.cycles` − 1) |
//! | DMA | bytes ÷ min(`dma.link_bytes_per_cycle`, `dma.shared_bytes_per_second` ÷ `clock.hz` ÷ cores) + transfers × `dma.cycles_per_transfer` |
//!
//! The terms add up (the runtime waits for each DMA copy before going on); the largest
//! is what bounds the core. The op takes as long as its slowest core.
//!
//! What it cannot model: the device's 512-bit SIMD (this toolchain emits none of it, so
//! a vendor-compiled kernel using it would be faster than predicted), caches (there
//! are none in the model: each load pays its region's latency), overlap of loads
//! (a load's latency is paid in full, as if the next instruction used it), and
//! anything outside the op (the host, the framework, the other engines).

use crate::profile::{CoreProfile, Profile, Region};
use serde::{Deserialize, Serialize};
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
    /// Cycles per transfer besides its bytes.
    pub cycles_per_transfer: f64,
}

/// Why a cost model file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CostModelError {
    /// It could not be read.
    #[error("reading the cost model {path}: {source}")]
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

    /// The prediction for one core of an op that ran on `cores` cores at once.
    pub fn core(&self, profile: &CoreProfile, cores: usize) -> CorePrediction {
        let loads = |regions: &[Region]| regions.iter().map(|&r| profile.accesses(r).loads).sum::<u64>() as f64;
        let stores: u64 = profile.memory.values().map(|a| a.stores).sum();
        let shared = self.dma.shared_bytes_per_second / self.clock.hz / cores.max(1) as f64;
        let dma_rate = self.dma.link_bytes_per_cycle.min(shared);
        let terms = Terms {
            compute: profile.instructions as f64 * self.core.cycles_per_instruction,
            local_memory: loads(&[Region::LocalRam, Region::Image]) * (self.local_ram.load_cycles - 1.0),
            hbm: loads(&[Region::Hbm, Region::HbmScratch]) * (self.hbm.load_cycles - 1.0),
            stores: stores as f64 * (self.stores.cycles - 1.0),
            dma: profile.dma_bytes as f64 / dma_rate + profile.dma_transfers as f64 * self.dma.cycles_per_transfer,
        };
        let cycles = terms.compute + terms.local_memory + terms.hbm + terms.stores + terms.dma;
        CorePrediction { core: profile.core, cycles, seconds: cycles / self.clock.hz, bound: terms.bound(), terms }
    }

    /// The prediction for an op: each core's, and the slowest.
    pub fn predict(&self, profile: &Profile) -> Prediction {
        let cores: Vec<CorePrediction> = profile.cores.iter().map(|c| self.core(c, profile.cores.len())).collect();
        let slowest = cores.iter().max_by(|a, b| a.cycles.total_cmp(&b.cycles)).cloned();
        Prediction { cores, slowest }
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
    /// DMA transfers.
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
    fn bound(&self) -> Bound {
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
}

/// The HBM load latency that makes `slow` take `ratio` times as long as `fast` under
/// `model` (every other parameter as it is): how `[hbm] load_cycles` was calibrated.
/// `None` when no latency can (the two make the same number of HBM loads, or the
/// latency would be below a cycle).
pub fn calibrate_hbm_load_cycles(model: &CostModel, slow: &Profile, fast: &Profile, ratio: f64) -> Option<f64> {
    // Each prediction is a + b·(L − 1) in the latency L; solve a_s + b_s·x = ratio·(a_f + b_f·x).
    let split = |profile: &Profile| {
        let at = |hbm: f64| {
            let mut model = model.clone();
            model.hbm.load_cycles = hbm;
            model.predict(profile).slowest.map_or(0.0, |p| p.cycles)
        };
        let a = at(1.0);
        (a, at(2.0) - a)
    };
    let ((a_s, b_s), (a_f, b_f)) = (split(slow), split(fast));
    let denominator = b_s - ratio * b_f;
    if denominator.abs() < f64::EPSILON {
        return None;
    }
    Some((ratio * a_f - a_s) / denominator + 1.0).filter(|&l| l >= 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Accesses;
    use std::collections::BTreeMap;

    fn core(instructions: u64, hbm_loads: u64, local_loads: u64, dma_bytes: u64) -> CoreProfile {
        let memory = BTreeMap::from([
            (Region::Hbm, Accesses { loads: hbm_loads, stores: 0 }),
            (Region::LocalRam, Accesses { loads: local_loads, stores: 0 }),
        ]);
        CoreProfile {
            core: 0,
            instructions,
            functions: vec![],
            stacks: vec![],
            inclusive: vec![],
            mix: BTreeMap::new(),
            in_runtime: 0,
            in_libm: 0,
            memory,
            dma_bytes,
            dma_transfers: 0,
            events: vec![],
            dropped_events: 0,
            elements_written: None,
        }
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
    }

    #[test]
    fn terms_add_up_and_the_largest_bounds() {
        let model = CostModel::from_toml("[hbm]\nload_cycles = 101.0\n", "test").unwrap();
        let prediction = model.core(&core(1000, 10, 100, 6400), 1);
        assert_eq!(prediction.terms.compute, 1000.0);
        assert_eq!(prediction.terms.hbm, 1000.0);
        assert_eq!(prediction.terms.local_memory, 200.0);
        assert_eq!(prediction.terms.dma, 100.0, "64 B a cycle on one core");
        assert_eq!(prediction.cycles, 2300.0);
        assert_eq!(prediction.seconds, 2300.0 / 1.4e9);
        // On 8 cores each gets 307e9 / 1.4e9 / 8 = 27.4 B a cycle: the shared DMA binds.
        let eight = model.core(&core(0, 0, 0, 6400), 8);
        assert!((eight.terms.dma - 6400.0 / (307e9 / 1.4e9 / 8.0)).abs() < 1e-9);
        assert_eq!(eight.bound, Bound::Dma);
    }

    #[test]
    fn calibration_recovers_the_latency_that_gives_the_ratio() {
        let profile = |c| Profile { kernel: "k".into(), cores: vec![c] };
        let model = CostModel::default();
        let (slow, fast) = (profile(core(1000, 100, 0, 0)), profile(core(1000, 0, 0, 0)));
        let latency = calibrate_hbm_load_cycles(&model, &slow, &fast, 5.0).unwrap();
        assert!((latency - 41.0).abs() < 1e-9, "1000 + 100·(L − 1) = 5000 ⟹ L = 41, got {latency}");
        assert_eq!(calibrate_hbm_load_cycles(&model, &fast, &fast, 2.0), None);
    }
}
