//! stdout: a byte ring in device memory that kernels print into and the loader drains
//! after each kernel, plus the `write` shims and the [`print!`](crate::print) macros on
//! top of it.
//!
//! The ring is a `#[repr(C)]` header followed by the data, exported as the symbol
//! `neuron_stdout_ring` so the loader can find it in the image:
//!
//! | offset | field | written by |
//! |---|---|---|
//! | 0 | `magic`: [`STDOUT_RING_MAGIC`] (`"NOUT"`) | initialiser |
//! | 4 | `capacity`: N, a power of two ≤ 128 KiB | initialiser |
//! | 8 | `write_count`: bytes ever written, mod 2³² | device |
//! | 12 | `read_count`: bytes ever consumed, mod 2³² | loader |
//! | 16 | `data[N]`: byte `k` of the stream lives at `data[k % N]` | device |
//!
//! The device never blocks and never reads `read_count`: when more than N bytes are
//! unread it simply overwrites, so the OLDEST bytes are lost and the newest N kept. The
//! reader's side of the protocol is [`DrainPlan`].

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void};
use core::fmt;
use core::mem::{offset_of, size_of};
use core::ops::Range;

/// `magic` of a valid ring: the bytes `"NOUT"` read as a little-endian `u32`.
pub const STDOUT_RING_MAGIC: u32 = u32::from_le_bytes(*b"NOUT");

/// The largest ring capacity allowed (the vendor's documented 128 KiB bound).
pub const MAX_STDOUT_RING_CAPACITY: usize = 128 * 1024;

/// The capacity this image's ring ([`stdout_ring`]) starts with: 16 KiB, room for a few
/// hundred lines per kernel. The host may set another before `entry_func`, as the
/// vendor's runtime does from `NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES`: it writes the
/// header's `capacity` (a power of two up to [`STDOUT_RING_STORAGE`], or 0, which
/// disables printing).
pub const STDOUT_RING_CAPACITY: usize = 16 * 1024;

/// The bytes this image's ring holds: the largest capacity a host may set (128 KiB).
pub const STDOUT_RING_STORAGE: usize = MAX_STDOUT_RING_CAPACITY;

/// The ring's header as the loader reads it from device memory. 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingHeader {
    /// [`STDOUT_RING_MAGIC`].
    pub magic: u32,
    /// Size of the data area in bytes; a power of two.
    pub capacity: u32,
    /// Total bytes the device has written, wrapping at 2³².
    pub write_count: u32,
    /// Total bytes the loader has consumed, wrapping at 2³².
    pub read_count: u32,
}

const _: () = {
    assert!(size_of::<RingHeader>() == 16);
    assert!(offset_of!(RingHeader, magic) == 0);
    assert!(offset_of!(RingHeader, capacity) == 4);
    assert!(offset_of!(RingHeader, write_count) == 8);
    assert!(offset_of!(RingHeader, read_count) == 12);
};

/// The stdout ring: a [`RingHeader`] then `N` data bytes. `N` must be a power of two no
/// larger than [`MAX_STDOUT_RING_CAPACITY`]; anything else fails to compile:
///
/// ```compile_fail,E0080
/// let ring = neuroncustomop::start_exit::StdoutRing::<1000>::new();
/// ```
///
/// Writing goes through raw pointers and never forms a reference into the ring, so a
/// nested print (a `Display` impl that prints) cannot alias a borrow; the write counter
/// is stored (volatile) only after a `memw`, so a reader never sees it ahead of its
/// data. A ring is not `Sync`: the one shared ring is this image's, [`stdout_ring`].
#[repr(C)]
pub struct StdoutRing<const N: usize> {
    header: UnsafeCell<RingHeader>,
    data: UnsafeCell<[u8; N]>,
}

const _: () = assert!(offset_of!(StdoutRing<16>, data) == size_of::<RingHeader>());

impl<const N: usize> Default for StdoutRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> StdoutRing<N> {
    const VALID_CAPACITY: () = assert!(
        N.is_power_of_two() && N <= MAX_STDOUT_RING_CAPACITY,
        "the stdout ring's capacity must be a power of two of at most 128 KiB"
    );

    /// An empty ring with a valid header, using all `N` bytes.
    pub const fn new() -> Self {
        Self::with_capacity(N)
    }

    /// An empty ring that uses the first `capacity` of its `N` bytes until a host sets
    /// another capacity in its header. `capacity` must be a power of two of at most `N`
    /// (a compile error in a `static`).
    pub const fn with_capacity(capacity: usize) -> Self {
        let () = Self::VALID_CAPACITY;
        assert!(capacity.is_power_of_two() && capacity <= N, "a ring's capacity is a power of two of at most its size");
        Self {
            header: UnsafeCell::new(RingHeader {
                magic: STDOUT_RING_MAGIC,
                capacity: capacity as u32,
                write_count: 0,
                read_count: 0,
            }),
            data: UnsafeCell::new([0; N]),
        }
    }

    /// The capacity in use: the header's, as the host may have set it; 0 (printing
    /// disabled) stays 0, and anything but a power of two of at most `N` is taken as `N`.
    fn capacity(&self) -> usize {
        // SAFETY: the header is live and aligned; no reference aliases it (see
        // `stdout_ring`).
        let capacity = unsafe { (&raw const (*self.header.get()).capacity).read_volatile() } as usize;
        if capacity == 0 || (capacity.is_power_of_two() && capacity <= N) { capacity } else { N }
    }

    /// Appends `bytes`. Never blocks and never fails: if they overrun unread output, the
    /// oldest bytes are overwritten; if `bytes` alone is longer than the capacity, only
    /// its last bytes are stored (the rest still count as written, hence as lost). With
    /// a capacity of 0 (printing disabled by the host) nothing is written or counted.
    pub fn write(&self, bytes: &[u8]) {
        let capacity = self.capacity();
        if capacity == 0 {
            return;
        }
        let header = self.header.get();
        // SAFETY: `header` points into `self`, live and aligned; no reference aliases it
        // (see `stdout_ring`).
        let mut count = unsafe { (&raw const (*header).write_count).read_volatile() };
        let kept = &bytes[bytes.len().saturating_sub(capacity)..];
        // Truncation is the protocol: counts are kept mod 2^32.
        count = count.wrapping_add((bytes.len() - kept.len()) as u32);
        let start = count as usize & (capacity - 1);
        let first_len = kept.len().min(capacity - start);
        let data = self.data.get().cast::<u8>();
        // SAFETY: `start + first_len <= capacity <= N` and `kept.len() - first_len <=
        // capacity`, so both copies stay inside `data`. Neither overlaps `bytes`: the
        // ring's data is only ever reached through this raw pointer, never handed out
        // as a reference (see `stdout_ring`), so no `&[u8]` can point into it.
        unsafe {
            core::ptr::copy_nonoverlapping(kept.as_ptr(), data.add(start), first_len);
            core::ptr::copy_nonoverlapping(kept.as_ptr().add(first_len), data, kept.len() - first_len);
        }
        count = count.wrapping_add(kept.len() as u32);
        // The data must be visible before the counter that publishes it.
        crate::arch::memw();
        // SAFETY: as for the read above.
        unsafe { (&raw mut (*header).write_count).write_volatile(count) };
    }

    /// A `core::fmt::Write` adapter, for `write!` into this ring.
    pub fn writer(&self) -> RingWriter<'_, N> {
        RingWriter { ring: self }
    }

    /// The ring's address, which is where the loader reads it: the header at +0, the data
    /// at +16.
    pub fn as_ptr(&self) -> *const u8 {
        (self as *const Self).cast()
    }
}

/// `core::fmt::Write` into a [`StdoutRing`]; writing never fails.
pub struct RingWriter<'a, const N: usize> {
    ring: &'a StdoutRing<N>,
}

impl<const N: usize> fmt::Write for RingWriter<'_, N> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        self.ring.write(text.as_bytes());
        Ok(())
    }
}

/// The image's ring, shareable as a `static`.
#[cfg(c_abi)]
#[repr(transparent)]
struct ImageRing(StdoutRing<STDOUT_RING_STORAGE>);

// SAFETY: each core has its own image and so its own ring, and runs one context at a
// time (the `crate::global` invariant); every access goes through raw pointers and never
// holds a reference, so no Rust borrow of the ring's memory is ever live.
#[cfg(c_abi)]
unsafe impl Sync for ImageRing {}

/// Exported as `neuron_stdout_ring`, where the loader looks for it.
#[cfg(c_abi)]
#[unsafe(export_name = "neuron_stdout_ring")]
static STDOUT: ImageRing = ImageRing(StdoutRing::with_capacity(STDOUT_RING_CAPACITY));

/// This image's stdout ring, the one [`print!`](crate::print) and `write(1, …)` feed.
///
/// On the host each thread has its own (test threads stand in for cores, as in
/// `crate::allocators`), so parallel tests never interleave their output.
pub fn stdout_ring() -> &'static StdoutRing<STDOUT_RING_STORAGE> {
    #[cfg(c_abi)]
    {
        &STDOUT.0
    }
    #[cfg(not(c_abi))]
    {
        std::thread_local! {
            static STDOUT: &'static StdoutRing<STDOUT_RING_STORAGE> = {
                // Leaked on purpose: it stands in for the device's `static`.
                let ring: &'static StdoutRing<STDOUT_RING_STORAGE> =
                    std::boxed::Box::leak(std::boxed::Box::new(StdoutRing::with_capacity(STDOUT_RING_CAPACITY)));
                #[cfg(miri)]
                {
                    unsafe extern "Rust" {
                        /// Miri's own: counts the allocation at `ptr` as a static, not a leak.
                        fn miri_static_root(ptr: *const u8);
                    }
                    // SAFETY: Miri's documented extern, given the start of a live allocation.
                    unsafe { miri_static_root(core::ptr::from_ref(ring).cast()) };
                }
                ring
            };
        }
        STDOUT.with(|ring| *ring)
    }
}

/// Why a header is not a ring a reader can drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// `magic` is not [`STDOUT_RING_MAGIC`]: wrong address, or not initialised.
    BadMagic(u32),
    /// `capacity` is not a power of two of at most 128 KiB.
    BadCapacity(u32),
}

/// The reader's side of the protocol: what to copy out of a ring whose header it read.
///
/// A reader (the loader, after each kernel, while the core is stopped) reads the 16-byte
/// header, then:
/// 1. `pending = write_count - read_count` (wrapping): bytes written since last drain;
/// 2. `lost = pending - capacity` if `pending > capacity`, else 0: overwritten bytes;
/// 3. `len = pending - lost`: the bytes still there, the newest ones, which start at
///    stream position `write_count - len`, i.e. at `data[(write_count - len) % capacity]`,
///    and wrap around the end of `data` at most once ([`DrainPlan::segments`]);
/// 4. it stores `write_count` into `read_count` ([`DrainPlan::next_read_count`]).
///
/// The counts are exact as long as fewer than 2³² bytes are written between drains.
///
/// ```
/// use neuroncustomop::start_exit::{DrainPlan, StdoutRing};
///
/// let ring = StdoutRing::<8>::new();
/// ring.write(b"hello, world");
/// // The loader's view: the bytes at the ring's address.
/// // SAFETY: the ring is 16 + 8 bytes long and nothing writes it meanwhile.
/// let image = unsafe { core::slice::from_raw_parts(ring.as_ptr(), 24) };
/// let plan = DrainPlan::from_bytes(image).unwrap();
/// assert_eq!(plan.lost, 4);
/// let [a, b] = plan.segments();
/// let data = &image[16..];
/// assert_eq!([&data[a], &data[b]].concat(), b"o, world");
/// assert_eq!(plan.next_read_count, 12);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainPlan {
    /// Bytes overwritten before the reader got to them.
    pub lost: u32,
    /// Where the kept bytes start in `data`.
    pub start: usize,
    /// How many bytes to read (at most `capacity`).
    pub len: usize,
    /// `capacity`, checked.
    pub capacity: usize,
    /// What the reader stores into `read_count` once it has the bytes.
    pub next_read_count: u32,
}

impl DrainPlan {
    /// The plan for a ring with `header`.
    ///
    /// # Errors
    /// [`RingError`] when the header is not a valid ring.
    pub fn new(header: &RingHeader) -> Result<Self, RingError> {
        if header.magic != STDOUT_RING_MAGIC {
            return Err(RingError::BadMagic(header.magic));
        }
        let capacity = header.capacity as usize;
        // 0: printing disabled by the host; the device writes nothing.
        if capacity != 0 && (!capacity.is_power_of_two() || capacity > MAX_STDOUT_RING_CAPACITY) {
            return Err(RingError::BadCapacity(header.capacity));
        }
        let pending = header.write_count.wrapping_sub(header.read_count);
        let len = pending.min(header.capacity);
        Ok(Self {
            lost: pending - len,
            start: header.write_count.wrapping_sub(len) as usize & capacity.saturating_sub(1),
            len: len as usize,
            capacity,
            next_read_count: header.write_count,
        })
    }

    /// The plan for a ring whose first 16 bytes (little-endian, as on the device) are
    /// `image[..16]`.
    ///
    /// # Errors
    /// [`RingError`] when the header is not a valid ring, or `image` is too short to
    /// hold one (reported as [`RingError::BadMagic`] of 0).
    pub fn from_bytes(image: &[u8]) -> Result<Self, RingError> {
        let word = |at: usize| image.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let (Some(magic), Some(capacity), Some(write_count), Some(read_count)) = (word(0), word(4), word(8), word(12))
        else {
            return Err(RingError::BadMagic(0));
        };
        Self::new(&RingHeader { magic, capacity, write_count, read_count })
    }

    /// The one or two ranges of `data` holding the kept bytes, oldest first; the second
    /// is empty unless they wrap around the end of `data`.
    pub fn segments(&self) -> [Range<usize>; 2] {
        let first_len = self.len.min(self.capacity - self.start);
        [self.start..self.start + first_len, 0..self.len - first_len]
    }
}

/// Appends `bytes` to this image's stdout.
pub fn write_stdout(bytes: &[u8]) {
    stdout_ring().write(bytes);
}

/// Makes everything printed so far visible to the loader (a `memw`). What the CRT's
/// exit handler and `fsync` do.
pub fn flush_stdout() {
    crate::arch::memw();
}

/// The body of [`print!`](crate::print) and [`println!`](crate::println).
#[doc(hidden)]
pub fn print_args(args: fmt::Arguments<'_>) {
    // Writing to the ring cannot fail.
    let _ = fmt::Write::write_fmt(&mut stdout_ring().writer(), args);
}

/// Prints to the device's stdout ring, like `std::print!`. Integers, strings and
/// anything with an integer-only `Display` work; do not print floats (`f32` / `f64`
/// formatting does not build for Xtensa).
///
/// ```
/// neuroncustomop::print!("core {} of {}", 0, 8);
/// ```
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::start_exit::print_args(::core::format_args!($($arg)*))
    };
}

/// Prints a line to the device's stdout ring, like `std::println!`; see
/// [`print!`](crate::print).
///
/// ```
/// use neuroncustomop::start_exit::{DrainPlan, stdout_ring};
///
/// neuroncustomop::println!("relu: {} elements", 1024);
/// // SAFETY: the header is the first 16 bytes of the ring; nothing prints meanwhile.
/// let header = unsafe { core::slice::from_raw_parts(stdout_ring().as_ptr(), 16) };
/// assert_eq!(DrainPlan::from_bytes(header).unwrap().len, "relu: 1024 elements\n".len());
/// ```
#[macro_export]
macro_rules! println {
    () => {
        $crate::print!("\n")
    };
    ($($arg:tt)*) => {
        $crate::start_exit::print_args(
            ::core::format_args!("{}\n", ::core::format_args!($($arg)*)),
        )
    };
}

/// Writes `bytes` to file `fd`: 1 (stdout) and 2 (stderr) both go to the ring.
///
/// # Errors
/// `None` for any other descriptor (there is no file system).
pub fn write_fd(fd: c_int, bytes: &[u8]) -> Option<usize> {
    match fd {
        1 | 2 => {
            write_stdout(bytes);
            Some(bytes.len())
        }
        _ => None,
    }
}

/// The body of both C `write` shims: a checked view of (`buf`, `len`).
///
/// # Safety
/// A non-null `buf` must be readable for `len` bytes.
unsafe fn write_raw(fd: c_int, buf: *const c_void, len: usize) -> isize {
    let bytes: &[u8] = if len == 0 {
        &[]
    } else if buf.is_null() || isize::try_from(len).is_err() {
        return -1;
    } else {
        // SAFETY: non-null and readable for `len` bytes (this function's contract), and
        // `len` fits an `isize` (checked above).
        unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) }
    };
    write_fd(fd, bytes).map_or(-1, |written| written as isize)
}

/// C `ssize_t write(int fd, const void* buf, size_t len)`: fds 1 and 2 append to the
/// stdout ring and return `len`; any other fd, or a null `buf` with `len > 0`, returns
/// -1. `errno` is not set (the runtime has none).
///
/// # Safety
/// A non-null `buf` must be readable for `len` bytes.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, len: usize) -> isize {
    // SAFETY: forwarded from this function's contract.
    unsafe { write_raw(fd, buf, len) }
}

/// The newlib reentrant form the C library's `printf` calls:
/// `_write_r(struct _reent*, fd, buf, len)`. The reentrancy struct is ignored; otherwise
/// as [`write()`].
///
/// # Safety
/// A non-null `buf` must be readable for `len` bytes.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub unsafe extern "C" fn _write_r(_reent: *mut c_void, fd: c_int, buf: *const c_void, len: usize) -> isize {
    // SAFETY: forwarded from this function's contract.
    unsafe { write_raw(fd, buf, len) }
}

/// C `int fsync(int fd)`: for fds 1 and 2, makes the ring's contents visible to the
/// loader and returns 0; -1 for any other fd.
#[cfg_attr(c_abi, unsafe(no_mangle))]
pub extern "C" fn fsync(fd: c_int) -> c_int {
    match fd {
        1 | 2 => {
            flush_stdout();
            0
        }
        _ => -1,
    }
}

/// What this test thread printed since the last drain: its ring drained as the loader
/// drains a core's.
#[cfg(test)]
pub(crate) fn drain_this_thread() -> std::vec::Vec<u8> {
    tests::drain(stdout_ring()).1
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write as _;
    use proptest::prelude::*;
    use std::vec::Vec;

    /// The model reader: drains `ring` exactly as the loader does, from its raw bytes,
    /// then stores the new read count back into the header.
    pub(super) fn drain<const N: usize>(ring: &StdoutRing<N>) -> (u32, Vec<u8>) {
        // SAFETY: the ring is 16 + N bytes long and nothing writes it meanwhile.
        let image = unsafe { core::slice::from_raw_parts(ring.as_ptr(), 16 + N) };
        let plan = DrainPlan::from_bytes(image).unwrap();
        let data = &image[16..];
        let [first, second] = plan.segments();
        let bytes = [&data[first], &data[second]].concat();
        // SAFETY: read_count is the u32 at +12, inside the ring; nothing else touches it.
        unsafe { ring.as_ptr().add(12).cast_mut().cast::<u32>().write(plan.next_read_count) };
        (plan.lost, bytes)
    }

    fn header<const N: usize>(ring: &StdoutRing<N>) -> RingHeader {
        // SAFETY: the header is the first field; nothing writes the ring meanwhile.
        unsafe { ring.as_ptr().cast::<RingHeader>().read() }
    }

    #[test]
    fn a_new_ring_has_a_valid_empty_header() {
        let ring = StdoutRing::<64>::new();
        assert_eq!(header(&ring), RingHeader { magic: STDOUT_RING_MAGIC, capacity: 64, write_count: 0, read_count: 0 });
        assert_eq!(drain(&ring), (0, Vec::new()));
    }

    #[test]
    fn wraparound_keeps_order() {
        let ring = StdoutRing::<8>::new();
        ring.write(b"abcdef");
        assert_eq!(drain(&ring), (0, b"abcdef".to_vec()));
        ring.write(b"ghijk"); // positions 6..11 wrap the 8-byte data area
        assert_eq!(drain(&ring), (0, b"ghijk".to_vec()));
        assert_eq!(header(&ring).write_count, 11);
    }

    #[test]
    fn overflow_keeps_the_newest_bytes_and_counts_the_lost_ones() {
        let ring = StdoutRing::<8>::new();
        ring.write(b"0123");
        ring.write(b"456789AB"); // 12 unread > 8: "0123" overwritten
        assert_eq!(drain(&ring), (4, b"456789AB".to_vec()));
        ring.write(b"the quick brown fox"); // one write longer than the ring
        assert_eq!(drain(&ring), (11, b"rown fox".to_vec()));
    }

    /// What the host does before `entry_func`: writes the header's capacity.
    fn set_capacity<const N: usize>(ring: &StdoutRing<N>, capacity: u32) {
        // SAFETY: capacity is the u32 at +4; nothing else touches the ring meanwhile.
        unsafe { ring.as_ptr().add(4).cast_mut().cast::<u32>().write(capacity) };
    }

    #[test]
    fn the_host_sets_the_capacity_and_0_disables_printing() {
        let ring = StdoutRing::<16>::with_capacity(8);
        assert_eq!(header(&ring).capacity, 8);
        ring.write(b"0123456789"); // longer than the capacity: its last 8 bytes kept
        assert_eq!(drain(&ring), (2, b"23456789".to_vec()));
        set_capacity(&ring, 4);
        ring.write(b"abcdef");
        assert_eq!(drain(&ring), (2, b"cdef".to_vec()));
        set_capacity(&ring, 0);
        ring.write(b"silence");
        assert_eq!(drain(&ring), (0, Vec::new()));
        assert_eq!(header(&ring).write_count, 16, "nothing is counted while printing is disabled");
        set_capacity(&ring, 12); // not a power of two: the whole ring is used
        ring.write(b"0123456789ABCDEFGH");
        assert_eq!(header(&ring).write_count, 34);
        set_capacity(&ring, 16); // what a reader then sees
        assert_eq!(drain(&ring), (2, b"23456789ABCDEFGH".to_vec()));
    }

    #[test]
    fn counters_wrap_at_2_pow_32() {
        let ring = StdoutRing::<8>::new();
        let start = u32::MAX - 2;
        // SAFETY: write_count and read_count are the u32s at +8 and +12.
        unsafe {
            let counts = ring.as_ptr().add(8).cast_mut().cast::<u32>();
            counts.write(start);
            counts.add(1).write(start);
        }
        ring.write(b"wrap!");
        assert_eq!(header(&ring).write_count, 2);
        assert_eq!(drain(&ring), (0, b"wrap!".to_vec()));
    }

    #[test]
    fn writer_formats_integers_and_strings() {
        let ring = StdoutRing::<64>::new();
        let name = "k";
        write!(ring.writer(), "{name}:{:#x}:{:>4}|", 255u32, -7i32).unwrap();
        assert_eq!(drain(&ring).1, b"k:0xff:  -7|");
    }

    #[test]
    fn bad_headers_are_refused() {
        let good = RingHeader { magic: STDOUT_RING_MAGIC, capacity: 8, write_count: 0, read_count: 0 };
        assert!(DrainPlan::new(&good).is_ok());
        assert_eq!(DrainPlan::new(&RingHeader { magic: 1, ..good }), Err(RingError::BadMagic(1)));
        for capacity in [12, 256 * 1024] {
            assert_eq!(DrainPlan::new(&RingHeader { capacity, ..good }), Err(RingError::BadCapacity(capacity)));
        }
        // 0: printing disabled; nothing to drain.
        let disabled = DrainPlan::new(&RingHeader { capacity: 0, write_count: 5, read_count: 5, ..good }).unwrap();
        assert_eq!((disabled.len, disabled.lost, disabled.segments()), (0, 0, [0..0, 0..0]));
        assert_eq!(DrainPlan::from_bytes(&[0; 15]), Err(RingError::BadMagic(0)));
    }

    #[test]
    fn shims_and_macros_reach_the_image_ring() {
        let msg = b"from C\n";
        // SAFETY: `msg` is readable for its length.
        unsafe {
            assert_eq!(write(1, msg.as_ptr().cast(), msg.len()), 7);
            assert_eq!(_write_r(core::ptr::null_mut(), 2, msg.as_ptr().cast(), 3), 3);
            assert_eq!(write(3, msg.as_ptr().cast(), msg.len()), -1);
            assert_eq!(write(1, core::ptr::null(), 1), -1);
            assert_eq!(write(1, core::ptr::null(), 0), 0);
            assert_eq!(write(3, core::ptr::null(), 0), -1);
        }
        crate::print!("{}+", 1);
        crate::println!("{}", 2);
        crate::println!();
        assert_eq!((fsync(1), fsync(2), fsync(0)), (0, 0, -1));
        assert_eq!(drain(stdout_ring()), (0, b"from C\nfro1+2\n\n".to_vec()));
    }

    proptest! {
        // Miri interprets about 1000x slower: a few cases there, the full count natively.
        #![proptest_config(if cfg!(miri) { ProptestConfig::with_cases(16) } else { ProptestConfig::default() })]

        /// Against a model that keeps the whole stream: every drain returns exactly the
        /// newest min(pending, N) bytes and reports the rest as lost.
        #[test]
        fn drains_match_a_model_stream(
            ops in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 0..40), any::<bool>()), 1..40)
        ) {
            let ring = StdoutRing::<16>::new();
            let mut undrained = Vec::new();
            for (bytes, drain_after) in ops {
                ring.write(&bytes);
                undrained.extend_from_slice(&bytes);
                if drain_after {
                    let (lost, got) = drain(&ring);
                    let keep = undrained.len().min(16);
                    prop_assert_eq!(lost as usize, undrained.len() - keep);
                    prop_assert_eq!(&got[..], &undrained[undrained.len() - keep..]);
                    undrained.clear();
                }
            }
        }
    }
}
