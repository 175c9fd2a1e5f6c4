//! What an op may touch, per core: the region table the loader writes before each
//! kernel run and the device's TCG plugin (`qemu/plugin`, its memory checks) reads from
//! guest memory at the op's start marker.
//!
//! The loader fills its own [`RegionTable`] (a static of its image, one per core) with
//! the op's output and inputs (their device addresses, dtypes and shapes), the core's
//! data and HBM scratch (what the runtime's heaps and TCM allocator hand out), its DMA
//! queues and the stack the kernel runs on. The library image's own writable sections are fixed for
//! a session: the host gives them to the plugin when it boots the device.
//!
//! ```
//! use neuroncustomop_wire::checks::{Region, RegionKind, RegionTable};
//!
//! let mut table = RegionTable::EMPTY;
//! table.push(Region::new(RegionKind::Output, 0, 0x6200_0000, 256));
//! assert_eq!(table.regions().len(), 1);
//! assert_eq!(RegionTable::from_bytes(&table.to_bytes()), Some(table));
//! ```

/// Most regions a table holds: an output, ten inputs, the two scratch areas, the DMA
/// queues, the stack.
pub const MAX_REGIONS: usize = 16;

/// [`RegionTable::magic`]: a table the loader filled.
pub const REGIONS_MAGIC: u32 = u32::from_le_bytes(*b"NCRG");

/// What a region is to the op: what it may do there, and how a finding names it.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegionKind {
    /// An output tensor: the op writes it (and may read it back).
    Output = 1,
    /// An input tensor: read-only.
    Input = 2,
    /// The core's data scratch (dataram): its TCM allocator and small heap.
    DataScratch = 3,
    /// The core's HBM scratch: its large heap (and the HBM stack, when switched to).
    HbmScratch = 4,
    /// The stack the kernel runs on (the loader image's).
    Stack = 5,
    /// The core's DMA queues in the SoC's queue window (the runtime's DMA backend
    /// writes its descriptors there).
    DmaQueues = 6,
    /// A core's loader image outside its stack: the device's firmware. The loader never
    /// puts it in a table; the plugin names an access there by it.
    LoaderImage = 7,
}

impl RegionKind {
    /// The kind of a raw byte, if it is one.
    #[inline] // called on every memory access the plugin checks
    pub const fn from_u8(value: u8) -> Option<RegionKind> {
        Some(match value {
            1 => Self::Output,
            2 => Self::Input,
            3 => Self::DataScratch,
            4 => Self::HbmScratch,
            5 => Self::Stack,
            6 => Self::DmaQueues,
            7 => Self::LoaderImage,
            _ => return None,
        })
    }

    /// Whether the op may store there.
    pub const fn writable(self) -> bool {
        !matches!(self, Self::Input | Self::LoaderImage)
    }

    /// Every kind.
    pub const ALL: [RegionKind; 7] = [
        Self::Output,
        Self::Input,
        Self::DataScratch,
        Self::HbmScratch,
        Self::Stack,
        Self::DmaQueues,
        Self::LoaderImage,
    ];

    /// Its stable one-word name in the plugin's lines: `output`, `data-scratch`, ...
    pub const fn key(self) -> &'static str {
        match self {
            Self::Output => "output",
            Self::Input => "input",
            Self::DataScratch => "data-scratch",
            Self::HbmScratch => "hbm-scratch",
            Self::Stack => "stack",
            Self::DmaQueues => "dma-queues",
            Self::LoaderImage => "loader-image",
        }
    }

    /// The kind whose [`RegionKind::key`] is `key`.
    pub fn from_key(key: &str) -> Option<RegionKind> {
        Self::ALL.into_iter().find(|kind| kind.key() == key)
    }

    /// How a finding names the region to a person: `output`, `input`, `data scratch`, ...
    pub const fn name(self) -> &'static str {
        match self {
            Self::Output => "output",
            Self::Input => "input",
            Self::DataScratch => "data scratch",
            Self::HbmScratch => "HBM scratch",
            Self::Stack => "stack",
            Self::DmaQueues => "DMA queues",
            Self::LoaderImage => "loader image",
        }
    }
}

/// One region: `len` bytes at device address `start`; for a tensor, its dtype (the
/// runtime's `Dtype` byte) and shape, so a finding can name an element.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First byte's device address.
    pub start: u32,
    /// Length in bytes.
    pub len: u32,
    /// A [`RegionKind`] byte.
    pub kind: u8,
    /// Which output or input (argument order), 0 for the others.
    pub index: u8,
    /// The tensor's `Dtype` byte (0 for the others).
    pub dtype: u8,
    /// The tensor's rank (0 for the others).
    pub rank: u8,
    /// The tensor's dimensions, outermost first.
    pub shape: [u16; 8],
}

impl Region {
    /// A region that is not a tensor (or whose shape is not known).
    pub const fn new(kind: RegionKind, index: u8, start: u32, len: u32) -> Region {
        Region { start, len, kind: kind as u8, index, dtype: 0, rank: 0, shape: [0; 8] }
    }

    /// Its kind, if the byte is one.
    #[inline] // called on every memory access the plugin checks
    pub const fn kind(&self) -> Option<RegionKind> {
        RegionKind::from_u8(self.kind)
    }

    /// Whether `address` lies in it.
    #[inline] // called on every memory access the plugin checks
    pub const fn contains(&self, address: u32) -> bool {
        address.wrapping_sub(self.start) < self.len
    }

    /// The tensor's dimensions.
    pub fn shape(&self) -> &[u16] {
        &self.shape[..(self.rank as usize).min(8)]
    }
}

/// The regions of one op on one core, as the loader leaves them for the plugin.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionTable {
    /// [`REGIONS_MAGIC`] once filled.
    pub magic: u32,
    /// Regions in use.
    pub count: u32,
    /// The regions; those past `count` are unused.
    pub regions: [Region; MAX_REGIONS],
}

// The loader writes the table in place and the plugin reads its bytes: the layout is
// pinned so the two cannot disagree.
const _: () = {
    use core::mem::offset_of;
    assert!(size_of::<Region>() == 28);
    assert!(offset_of!(Region, start) == 0);
    assert!(offset_of!(Region, len) == 4);
    assert!(offset_of!(Region, kind) == 8);
    assert!(offset_of!(Region, index) == 9);
    assert!(offset_of!(Region, dtype) == 10);
    assert!(offset_of!(Region, rank) == 11);
    assert!(offset_of!(Region, shape) == 12);
    assert!(offset_of!(RegionTable, magic) == 0);
    assert!(offset_of!(RegionTable, count) == 4);
    assert!(offset_of!(RegionTable, regions) == 8);
    assert!(size_of::<RegionTable>() == 8 + MAX_REGIONS * 28);
};

impl RegionTable {
    /// A table with no region.
    pub const EMPTY: RegionTable =
        RegionTable { magic: REGIONS_MAGIC, count: 0, regions: [Region::new(RegionKind::Stack, 0, 0, 0); MAX_REGIONS] };

    /// Adds `region`; a table already full keeps its regions (it has room for every
    /// region an op has: [`MAX_REGIONS`]).
    pub fn push(&mut self, region: Region) {
        if let Some(slot) = self.regions.get_mut(self.count as usize) {
            *slot = region;
            self.count += 1;
        }
    }

    /// The regions in use.
    #[inline] // called on every memory access the plugin checks
    pub fn regions(&self) -> &[Region] {
        &self.regions[..(self.count as usize).min(MAX_REGIONS)]
    }

    /// The table's bytes, little-endian, as they lie in guest memory.
    pub fn to_bytes(&self) -> [u8; size_of::<RegionTable>()] {
        let mut bytes = [0u8; size_of::<RegionTable>()];
        bytes[0..4].copy_from_slice(&self.magic.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.count.to_le_bytes());
        for (region, out) in self.regions.iter().zip(bytes[8..].chunks_exact_mut(size_of::<Region>())) {
            out[0..4].copy_from_slice(&region.start.to_le_bytes());
            out[4..8].copy_from_slice(&region.len.to_le_bytes());
            out[8..12].copy_from_slice(&[region.kind, region.index, region.dtype, region.rank]);
            for (dim, pair) in region.shape.iter().zip(out[12..].chunks_exact_mut(2)) {
                pair.copy_from_slice(&dim.to_le_bytes());
            }
        }
        bytes
    }

    /// The table in `bytes` (as [`RegionTable::to_bytes`] writes it), if it has the
    /// magic and a count that fits.
    pub fn from_bytes(bytes: &[u8]) -> Option<RegionTable> {
        let word = |at: usize| Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
        let (magic, count) = (word(0)?, word(4)?);
        if magic != REGIONS_MAGIC || count as usize > MAX_REGIONS {
            return None;
        }
        let mut table = RegionTable { magic, count, ..RegionTable::EMPTY };
        for (i, region) in table.regions.iter_mut().enumerate().take(count as usize) {
            let at = 8 + i * size_of::<Region>();
            let raw = bytes.get(at..at + size_of::<Region>())?;
            let mut shape = [0u16; 8];
            for (dim, pair) in shape.iter_mut().zip(raw[12..].chunks_exact(2)) {
                *dim = u16::from_le_bytes([pair[0], pair[1]]);
            }
            *region = Region {
                start: word(at)?,
                len: word(at + 4)?,
                kind: raw[8],
                index: raw[9],
                dtype: raw[10],
                rank: raw[11],
                shape,
            };
        }
        Some(table)
    }
}
