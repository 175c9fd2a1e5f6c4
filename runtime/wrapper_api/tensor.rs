//! The tensor view op authors program against: typed checked slices, the TCM accessor
//! (bulk copies), and the sequential read / write stream accessors.

use core::marker::PhantomData;
use core::ptr::NonNull;

use super::{ArgTensor, Dtype, Element, MAX_RANK, Platform, TensorError};
use crate::data_transfer;

/// Size of the TCM buffer each stream accessor takes from the op's pool.
pub const STREAM_BUFFER_BYTES: usize = 4096;

/// A tensor argument or the output, valid for one invocation (`'a`).
///
/// Inputs are read-only; the output (from [`Args::output`](super::Args::output)) is
/// writable. Element access is typed and checked against the dtype.
///
/// Access paths, fastest first:
/// - [`tensor_to_tcm`](Self::tensor_to_tcm) / [`tcm_to_tensor`](Self::tcm_to_tensor):
///   bulk copies through the memcpy backend; the only path valid when several cores
///   run the kernel (each copies its own part);
/// - [`read_stream`](Self::read_stream) / [`write_stream`](Self::write_stream):
///   sequential, buffered in 4 KiB of TCM; single core;
/// - [`as_slice`](Self::as_slice) / [`as_mut_slice`](Self::as_mut_slice): direct
///   access to device memory; single core.
///
/// ```
/// use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};
///
/// /// out = relu(x), one 1024-element TCM block at a time (valid on 8 cores).
/// fn relu(args: &Args) -> Result<Tensor<'_>, KernelError> {
///     let x = args.tensor()?;
///     let mut out = args.output()?;
///     let mut buf = args.tcm_buffer::<f32>(1024)?;
///     let mut offset = 0;
///     while offset < x.numel() {
///         let n = buf.len().min(x.numel() - offset);
///         x.tensor_to_tcm(&mut buf[..n], offset)?;
///         buf[..n].iter_mut().for_each(|v| *v = v.max(0.0));
///         out.tcm_to_tensor(&buf[..n], offset)?;
///         offset += n;
///     }
///     Ok(out)
/// }
/// ```
pub struct Tensor<'a> {
    /// The checked descriptor (the runtime's copy): the shape is read from it.
    desc: &'a ArgTensor,
    /// Translated address of element 0; null when the tensor has no elements.
    data: *mut u8,
    num_elem: u32,
    dtype: Dtype,
    writable: bool,
    platform: &'a Platform,
}

/// Row-major element strides of a tensor, one per dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strides {
    values: [u32; MAX_RANK],
    rank: usize,
}

impl core::ops::Deref for Strides {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.values[..self.rank]
    }
}

impl<'a> Tensor<'a> {
    /// A view over the `num_elem` elements of `dtype` that `desc` describes, at the
    /// translated `data`.
    ///
    /// # Safety
    /// `desc` is a checked tensor descriptor of `dtype` and `num_elem` elements. Unless
    /// the tensor is empty, `data` is valid for its bytes (elements times dtype size) of
    /// reads (and writes if `writable`) for `'a`, and no Rust reference to those bytes
    /// exists except through views that are themselves read-only when this one is
    /// writable.
    #[inline(always)]
    pub(super) unsafe fn new(
        desc: &'a ArgTensor,
        dtype: Dtype,
        num_elem: u32,
        data: *mut u8,
        writable: bool,
        platform: &'a Platform,
    ) -> Self {
        Tensor { desc, data, num_elem, dtype, writable, platform }
    }

    /// Element type.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }
    /// Number of dimensions, `1..=8`.
    pub fn rank(&self) -> usize {
        self.desc.num_dim as usize
    }
    /// The dimensions, outermost first.
    pub fn shape(&self) -> &[u16] {
        &self.desc.shape[..self.rank()]
    }
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.num_elem as usize
    }
    /// Element strides of the contiguous row-major layout (the last is 1).
    pub fn strides(&self) -> Strides {
        let mut values = [0u32; MAX_RANK];
        let mut stride = 1u32;
        for (slot, &dim) in values[..self.rank()].iter_mut().zip(self.shape()).rev() {
            *slot = stride;
            // Cannot overflow: the product of all dimensions is `num_elem`, a u32; with a
            // zero dimension the wrapping product is never used as an offset.
            stride = stride.wrapping_mul(u32::from(dim));
        }
        Strides { values, rank: self.rank() }
    }
    /// Whether this is the output (inputs are read-only).
    pub fn is_writable(&self) -> bool {
        self.writable
    }
    /// The wire descriptor this view came from.
    pub fn descriptor(&self) -> &'a ArgTensor {
        self.desc
    }
    /// The translated device address of element 0 (null for an empty tensor).
    pub fn data_ptr(&self) -> *mut u8 {
        self.data
    }

    fn check_dtype<T: Element>(&self) -> Result<(), TensorError> {
        if T::DTYPE == self.dtype() {
            Ok(())
        } else {
            Err(TensorError::DtypeMismatch { tensor: self.dtype(), requested: T::DTYPE })
        }
    }

    fn check_writable(&self) -> Result<(), TensorError> {
        if self.writable { Ok(()) } else { Err(TensorError::ReadOnly) }
    }

    fn check_range(&self, offset: usize, count: usize) -> Result<(), TensorError> {
        match offset.checked_add(count) {
            Some(end) if end <= self.numel() => Ok(()),
            _ => Err(TensorError::OutOfBounds { offset, count, numel: self.numel() }),
        }
    }

    /// The elements as `&[T]`, in device memory.
    ///
    /// # Errors
    /// [`TensorError::DtypeMismatch`] unless `T` is the tensor's dtype,
    /// [`TensorError::Misaligned`] if the device address is not aligned for `T`.
    pub fn as_slice<T: Element>(&self) -> Result<&[T], TensorError> {
        Ok(match self.typed_data::<T>()? {
            // SAFETY: `new`'s contract: `data` is readable for `numel * size_of::<T>()`
            // bytes (T's size is the dtype's) for `'a`, which outlives `&self`; aligned
            // (checked); any bit pattern is a valid `T` (`Element`); no `&mut` to these
            // bytes exists (only the output is writable, and it overlaps no input).
            Some(data) => unsafe { core::slice::from_raw_parts(data.as_ptr(), self.numel()) },
            None => &[],
        })
    }

    /// The elements as `&mut [T]` (the output only).
    ///
    /// # Errors
    /// [`TensorError::ReadOnly`] on an input, then as [`as_slice`](Self::as_slice).
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T], TensorError> {
        self.check_writable()?;
        Ok(match self.typed_data::<T>()? {
            // SAFETY: as in `as_slice`, plus: writable (checked), and `&mut self` makes
            // this the only live slice of this view; no other view covers these bytes.
            Some(data) => unsafe { core::slice::from_raw_parts_mut(data.as_ptr(), self.numel()) },
            None => &mut [],
        })
    }

    /// `data` as an aligned `T` pointer; `None` for an empty tensor.
    fn typed_data<T: Element>(&self) -> Result<Option<NonNull<T>>, TensorError> {
        self.check_dtype::<T>()?;
        let Some(data) = NonNull::new(self.data.cast::<T>()) else {
            return Ok(None);
        };
        if !(data.as_ptr() as usize).is_multiple_of(align_of::<T>()) {
            return Err(TensorError::Misaligned);
        }
        Ok(Some(data))
    }

    /// Copies elements `offset .. offset + tcm.len()` of the tensor into `tcm` (usually
    /// a [`TcmBuffer`]) through the memcpy backend.
    ///
    /// # Errors
    /// [`TensorError::DtypeMismatch`], or [`TensorError::OutOfBounds`] if the range runs
    /// past the tensor.
    pub fn tensor_to_tcm<T: Element>(&self, tcm: &mut [T], offset: usize) -> Result<(), TensorError> {
        self.check_dtype::<T>()?;
        self.check_range(offset, tcm.len())?;
        if !tcm.is_empty() {
            // SAFETY: the range is inside the tensor (checked), whose bytes are readable
            // (`new`'s contract); `tcm` is a distinct writable slice of the same size;
            // TCM and device tensor memory do not overlap (translate never maps TCM).
            unsafe {
                data_transfer::copy(tcm.as_mut_ptr().cast(), self.data.add(offset * size_of::<T>()), size_of_val(tcm))
            };
        }
        Ok(())
    }

    /// Copies `tcm` into elements `offset .. offset + tcm.len()` of the output.
    ///
    /// # Errors
    /// [`TensorError::ReadOnly`] on an input, [`TensorError::DtypeMismatch`], or
    /// [`TensorError::OutOfBounds`].
    pub fn tcm_to_tensor<T: Element>(&mut self, tcm: &[T], offset: usize) -> Result<(), TensorError> {
        self.check_writable()?;
        self.check_dtype::<T>()?;
        self.check_range(offset, tcm.len())?;
        if !tcm.is_empty() {
            // SAFETY: as in `tensor_to_tcm`, with the tensor writable (checked) and
            // `&mut self` excluding any live slice of it.
            unsafe {
                data_transfer::copy(self.data.add(offset * size_of::<T>()), tcm.as_ptr().cast(), size_of_val(tcm))
            };
        }
        Ok(())
    }

    /// A sequential reader over all elements, buffered in 4 KiB of TCM.
    ///
    /// ```
    /// use neuroncustomop::wrapper_api::{Args, KernelError, Tensor};
    ///
    /// /// out[i] = x[i] * k, through stream accessors.
    /// fn scale(args: &Args) -> Result<Tensor<'_>, KernelError> {
    ///     let x = args.tensor()?;
    ///     let k = args.float()?;
    ///     let mut out = args.output()?;
    ///     let mut writer = out.write_stream::<f32>()?;
    ///     for v in x.read_stream::<f32>()? {
    ///         writer.write(v * k)?;
    ///     }
    ///     writer.close();
    ///     Ok(out)
    /// }
    /// ```
    ///
    /// # Errors
    /// [`TensorError::DtypeMismatch`], or [`TensorError::TcmExhausted`] when the pool
    /// has no 4 KiB left.
    pub fn read_stream<T: Element>(&self) -> Result<ReadStream<'_, T>, TensorError> {
        self.check_dtype::<T>()?;
        let buffer = TcmBlock::allocate(self.platform, STREAM_BUFFER_BYTES, align_of::<T>())?;
        Ok(ReadStream { src: self.data, numel: self.numel(), fetched: 0, buffer, pos: 0, len: 0, _tensor: PhantomData })
    }

    /// A sequential writer from element 0, buffered in 4 KiB of TCM; flushed by
    /// [`WriteStream::close`] or when dropped.
    ///
    /// # Errors
    /// [`TensorError::ReadOnly`], [`TensorError::DtypeMismatch`], or
    /// [`TensorError::TcmExhausted`].
    pub fn write_stream<T: Element>(&mut self) -> Result<WriteStream<'_, T>, TensorError> {
        self.check_writable()?;
        self.check_dtype::<T>()?;
        let buffer = TcmBlock::allocate(self.platform, STREAM_BUFFER_BYTES, align_of::<T>())?;
        Ok(WriteStream { dst: self.data, numel: self.numel(), flushed: 0, buffer, len: 0, _tensor: PhantomData })
    }
}

impl core::fmt::Debug for Tensor<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &self.dtype())
            .field("shape", &self.shape())
            .field("writable", &self.writable)
            .field("data", &self.data)
            .finish()
    }
}

/// One block of the op's TCM pool, released when dropped.
struct TcmBlock {
    ptr: NonNull<u8>,
    release: fn(*mut u8),
}

impl TcmBlock {
    fn allocate(platform: &Platform, bytes: usize, align: usize) -> Result<TcmBlock, TensorError> {
        let ptr = NonNull::new((platform.tcm_alloc)(bytes)).ok_or(TensorError::TcmExhausted)?;
        let block = TcmBlock { ptr, release: platform.tcm_release };
        if !(ptr.as_ptr() as usize).is_multiple_of(align) {
            return Err(TensorError::Misaligned);
        }
        Ok(block)
    }
}

impl Drop for TcmBlock {
    fn drop(&mut self) {
        (self.release)(self.ptr.as_ptr());
    }
}

/// A zero-initialised array of `T` in the op's TCM pool, released when dropped; from
/// [`Args::tcm_buffer`](super::Args::tcm_buffer). Dereferences to `[T]`.
pub struct TcmBuffer<'a, T: Element> {
    block: TcmBlock,
    len: usize,
    _invocation: PhantomData<(&'a (), T)>,
}

impl<T: Element> TcmBuffer<'_, T> {
    pub(super) fn allocate(platform: &Platform, len: usize) -> Result<Self, TensorError> {
        // A size past the pool is exhaustion, like any other size the pool cannot give.
        let bytes = len.checked_mul(size_of::<T>()).ok_or(TensorError::TcmExhausted)?;
        let block = TcmBlock::allocate(platform, bytes.max(1), align_of::<T>())?;
        // SAFETY: the block holds `bytes` writable bytes (the TCM allocator's contract).
        unsafe { block.ptr.as_ptr().write_bytes(0, bytes) };
        Ok(TcmBuffer { block, len, _invocation: PhantomData })
    }
}

impl<T: Element> core::ops::Deref for TcmBuffer<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the block holds `len` initialised (zeroed, then only written as `T`)
        // `T`s, aligned (checked in `allocate`), owned by this buffer until drop.
        unsafe { core::slice::from_raw_parts(self.block.ptr.as_ptr().cast(), self.len) }
    }
}

impl<T: Element> core::ops::DerefMut for TcmBuffer<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` makes the slice unique.
        unsafe { core::slice::from_raw_parts_mut(self.block.ptr.as_ptr().cast(), self.len) }
    }
}

/// Sequential reader over a tensor: [`read`](Self::read) gives the elements in order,
/// `None` at the end. Also an [`Iterator`].
pub struct ReadStream<'t, T: Element> {
    src: *const u8,
    numel: usize,
    /// Elements copied into the buffer so far.
    fetched: usize,
    buffer: TcmBlock,
    /// Next buffered element, and how many the buffer holds.
    pos: usize,
    len: usize,
    _tensor: PhantomData<&'t [T]>,
}

impl<T: Element> ReadStream<'_, T> {
    const CAPACITY: usize = STREAM_BUFFER_BYTES / size_of::<T>();

    /// The next element, or `None` after the last.
    pub fn read(&mut self) -> Option<T> {
        if self.pos == self.len {
            let count = Self::CAPACITY.min(self.numel - self.fetched);
            if count == 0 {
                return None;
            }
            // SAFETY: elements `fetched .. fetched + count` are inside the tensor, which
            // the stream borrows for reading; the buffer holds CAPACITY >= count `T`s.
            unsafe {
                data_transfer::copy(
                    self.buffer.ptr.as_ptr(),
                    self.src.add(self.fetched * size_of::<T>()),
                    count * size_of::<T>(),
                )
            };
            self.fetched += count;
            self.pos = 0;
            self.len = count;
        }
        // SAFETY: `pos < len`: the element was copied in above, and the buffer is
        // aligned for `T` (checked at allocation).
        let value = unsafe { self.buffer.ptr.as_ptr().cast::<T>().add(self.pos).read() };
        self.pos += 1;
        Some(value)
    }

    /// Elements not yet read.
    pub fn remaining(&self) -> usize {
        self.numel - self.fetched + (self.len - self.pos)
    }

    /// Ends the stream and gives its TCM buffer back (as dropping does).
    pub fn close(self) {}
}

impl<T: Element> Iterator for ReadStream<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.read()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining(), Some(self.remaining()))
    }
}

/// Sequential writer into the output from element 0. Written data reaches the tensor
/// when the 4 KiB buffer fills, on [`close`](Self::close), and on drop.
pub struct WriteStream<'t, T: Element> {
    dst: *mut u8,
    numel: usize,
    /// Elements already copied to the tensor.
    flushed: usize,
    buffer: TcmBlock,
    /// Elements waiting in the buffer.
    len: usize,
    _tensor: PhantomData<&'t mut [T]>,
}

impl<T: Element> WriteStream<'_, T> {
    const CAPACITY: usize = STREAM_BUFFER_BYTES / size_of::<T>();

    /// Appends `value`.
    ///
    /// # Errors
    /// [`TensorError::StreamFull`] once every element of the tensor has been written.
    pub fn write(&mut self, value: T) -> Result<(), TensorError> {
        if self.flushed + self.len == self.numel {
            return Err(TensorError::StreamFull);
        }
        // SAFETY: `len < CAPACITY` (the buffer is flushed when full), aligned buffer.
        unsafe { self.buffer.ptr.as_ptr().cast::<T>().add(self.len).write(value) };
        self.len += 1;
        if self.len == Self::CAPACITY {
            self.flush();
        }
        Ok(())
    }

    /// Elements written so far.
    pub fn written(&self) -> usize {
        self.flushed + self.len
    }

    fn flush(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: elements `flushed .. flushed + len` are inside the tensor
        // (`write` stops at `numel`), which the stream borrows exclusively; the buffer
        // holds `len` written `T`s.
        unsafe {
            data_transfer::copy(
                self.dst.add(self.flushed * size_of::<T>()),
                self.buffer.ptr.as_ptr(),
                self.len * size_of::<T>(),
            )
        };
        self.flushed += self.len;
        self.len = 0;
    }

    /// Flushes the buffered elements to the tensor and gives the TCM buffer back.
    pub fn close(self) {}
}

impl<T: Element> Drop for WriteStream<'_, T> {
    fn drop(&mut self) {
        self.flush();
        // Make the flushed data visible before anyone (another core, the loader) reads.
        crate::arch::memw();
    }
}
