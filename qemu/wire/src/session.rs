//! How the host hands the persistent simulated device a job: frames on QEMU's stdin,
//! which the loader on core 0 reads with semihosting `SYS_READ` on fd 0.
//!
//! A frame is a [`FrameHeader`], then `segments` times a [`SegmentHeader`] followed by
//! its `len` bytes, which the loader reads straight to device address `address`. The
//! first segment is the job block (at `JOB_ADDRESS`); the others are the job's data.
//! End of file instead of a frame ends the simulation with status 0.
//!
//! ```
//! use neuroncustomop_wire::session::{FrameHeader, SegmentHeader, FRAME_MAGIC};
//!
//! let header = FrameHeader { magic: FRAME_MAGIC, segments: 1 }.to_bytes();
//! assert_eq!(FrameHeader::from_bytes(header), FrameHeader { magic: FRAME_MAGIC, segments: 1 });
//! let segment = SegmentHeader { address: 0x6100_0000, len: 444 }.to_bytes();
//! assert_eq!(SegmentHeader::from_bytes(segment).len, 444);
//! ```

/// [`FrameHeader::magic`]: `NCSF`.
pub const FRAME_MAGIC: u32 = u32::from_le_bytes(*b"NCSF");

/// The start of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// [`FRAME_MAGIC`].
    pub magic: u32,
    /// How many segments follow.
    pub segments: u32,
}

/// The start of one segment: `len` bytes for device address `address` follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    /// Where the bytes go.
    pub address: u32,
    /// How many bytes.
    pub len: u32,
}

/// Two little-endian words.
fn pair(bytes: [u8; 8]) -> (u32, u32) {
    let [a, b, c, d, e, f, g, h] = bytes;
    (u32::from_le_bytes([a, b, c, d]), u32::from_le_bytes([e, f, g, h]))
}

fn unpair(first: u32, second: u32) -> [u8; 8] {
    let mut bytes = [0; 8];
    bytes[..4].copy_from_slice(&first.to_le_bytes());
    bytes[4..].copy_from_slice(&second.to_le_bytes());
    bytes
}

impl FrameHeader {
    /// The 8 bytes on the wire.
    pub fn to_bytes(self) -> [u8; 8] {
        unpair(self.magic, self.segments)
    }

    /// Reads the 8 bytes on the wire.
    pub fn from_bytes(bytes: [u8; 8]) -> Self {
        let (magic, segments) = pair(bytes);
        Self { magic, segments }
    }
}

impl SegmentHeader {
    /// The 8 bytes on the wire.
    pub fn to_bytes(self) -> [u8; 8] {
        unpair(self.address, self.len)
    }

    /// Reads the 8 bytes on the wire.
    pub fn from_bytes(bytes: [u8; 8]) -> Self {
        let (address, len) = pair(bytes);
        Self { address, len }
    }
}

/// The line core 0 writes to stderr once a job is over, just before its `DONE` line on
/// stdout: everything the guest wrote to stderr before it belongs to that job.
pub const STDERR_JOB_END: &[u8] = b"\x1eEND OF JOB\n";
