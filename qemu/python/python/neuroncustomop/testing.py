"""Property checks of kernels, on Hypothesis: calls generated from the op itself, each
run checked and compared with a reference, and a failure shrunk to the smallest shape
and simplest values that still fail, with the ``ncop run`` command that reproduces it.

>>> import numpy as np, neuroncustomop                         # doctest: +SKIP
>>> from neuroncustomop import testing
>>> lib = neuroncustomop.load("examples/relu")
>>> testing.check(lib.relu_multicore, lambda x: np.fmax(x, 0))  # raises CheckFailed, or returns a CheckReport

What is generated (:func:`calls_of`), each bounded by the op:

- **shapes** (:func:`array_shapes`) within the device's limits, rank 1 to ``MAX_RANK``,
  dimensions up to ``MAX_DIM``, biased to the edges: 1, primes, multiples of 8 and of
  the core count and one either side of them, sizes around the TCM pool;
- **dtypes**: those the op accepts. Given, or found by calling the op once per device
  dtype on a small tensor: a dtype it refuses with ``DTYPE_MISMATCH`` is left out;
- **values** (:func:`arrays`) including ±0, subnormals, ±inf and NaN where the dtype
  has them; **scalars** (:func:`scalars_of`) of the op's parameter kinds;
- the **signature**: a C++ library's registration (its shape functions' parameters), a
  Python shape function's annotations (``load(shape_fns=...)``: ``int`` and ``float``
  scalars, anything else a tensor), or given; the op's shape function must accept a
  generated call (one it refuses is not counted).

Every tensor of one call has the same shape and dtype (elementwise ops); give your
own strategy (``check(..., calls=...)``, or ``@given`` with :func:`check_call`) for
others.

A call fails the property when the kernel fails (a status, a stop), the device's
checks find anything (an out-of-bounds access, a race, a leak or an uninitialized
read: warnings too), an output element is left unwritten, or the output differs from
the reference's. :class:`CheckFailed` then says why and how to reproduce it: the
inputs are saved as ``.npy`` beside the reference's output, and the message has the
``ncop run ... --arg ... --expect ...`` command that fails the same way.

Runs are deterministic from a seed, and shard: ``check(..., shard=(i, n), seed=s)``
(or the ``NCOP_CHECK_SHARD=i/n`` and ``NCOP_CHECK_SEED=s`` environment variables)
runs the i-th of n disjoint parts of the same sweep, so a CI matrix runs a sweep too
big for one machine. ``ncop check`` runs :func:`main` from the command line.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import itertools
import math
import os
import random
import shlex
import struct
import sys
import tempfile
import time
import unittest
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import InMemoryExampleDatabase

try:
    # The example database's form of a choice sequence (Hypothesis 6.125 on; not part
    # of its documented API): check's sweep hands a failing call to Hypothesis with it,
    # to shrink. Where a Hypothesis lacks it, every call is made by Hypothesis runs
    # instead, slower and the same in what they find.
    from hypothesis.database import choices_to_bytes as _choices_to_bytes
except ImportError:  # pragma: no cover - Hypothesis versions that differ
    _choices_to_bytes = None  # type: ignore[assignment]

from . import _args, _native
from ._errors import KernelError
from ._library import CallResult, Kernel, _numpy_dtype

MAX_RANK: int = _native.MAX_RANK
"""The most dimensions a device tensor has."""
MAX_DIM: int = _native.MAX_DIM
"""The largest dimension of a device tensor."""
TCM_POOL_SIZE: int = _native.TCM_POOL_SIZE
"""Bytes of the TCM pool an op may take (``tcm_malloc``)."""

DEFAULT_MAX_ELEMENTS = 1 << 16
"""Elements of a generated tensor at most, by default: a call of that size takes
milliseconds, so a run tries many shapes."""

Reference = Callable[..., Any]


def edge_sizes(cores: int = _native.CORES) -> list:
    """The dimensions a kernel's bugs live at, ascending: 1, primes, multiples of 8 and
    of ``cores`` with one either side, the elements of the TCM pool (of 1, 2, 4 and
    8-byte elements) with one either side, and the largest dimensions (the host API's
    ``generate::edge_sizes``, the one list)."""
    return list(_native.edge_sizes(cores))


def dimensions(cap: int, cores: int = _native.CORES) -> st.SearchStrategy[int]:
    """A dimension in ``[1, cap]``: half the time any, half an edge (:func:`edge_sizes`).
    One draw (:func:`_dimension_draw`); it shrinks towards 1."""
    index, dimension_of = _dimension_draw(cap, cores)
    return index.map(dimension_of)


def _dimension_draw(cap: int, cores: int) -> tuple:
    """A dimension in ``[1, cap]`` as one Hypothesis draw: the strategy of an integer
    ``v`` in ``[0, 2 cap)`` and the dimension it stands for, ``v / 2 + 1`` when ``v`` is
    even, else the edge (:func:`edge_sizes`, ascending) at ``v / 2`` modulo their count.
    Hypothesis' integers are even or odd about as often, and small more often than
    large: about half the dimensions are edges, and smaller values (any or an edge)
    shrink to 1 (``v`` of 0). One draw, not ``st.one_of``'s two (which branch, then its
    value): a Hypothesis draw costs tens of microseconds."""
    edges = [size for size in edge_sizes(cores) if size <= cap]

    def dimension_of(v: int) -> int:
        return v // 2 + 1 if v % 2 == 0 else edges[(v // 2) % len(edges)]

    return st.integers(0, 2 * cap - 1), dimension_of


def array_shapes(
    *,
    rank: Optional[int] = None,
    min_rank: int = 1,
    max_rank: int = MAX_RANK,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
    max_dim: int = MAX_DIM,
    cores: int = _native.CORES,
) -> st.SearchStrategy[tuple]:
    """Shapes the device holds: ``min_rank`` to ``max_rank`` dimensions (or exactly
    ``rank``), each at most ``max_dim`` (and ``MAX_DIM``), at most ``max_elements`` in
    all (dimensions past the budget cut down, the last first), each dimension biased to
    the edges (:func:`dimensions`). The rank is one draw (uniform; none for a fixed
    rank), each dimension one: a shape of rank r is r + 1 draws, not ``st.lists``' 3 r +
    1 (whether to go on, which branch of the dimension, its value). Shrinks towards
    fewer dimensions (Hypothesis lowers the rank and deletes the dimensions past it),
    each towards 1."""
    if rank is not None:
        min_rank = max_rank = rank
    if not 1 <= min_rank <= max_rank <= MAX_RANK:
        raise ValueError(f"rank {min_rank} to {max_rank}: a device tensor has 1 to {MAX_RANK} dimensions")
    max_dim = min(max_dim, MAX_DIM)

    # Every dimension is drawn from the same range and then cut to the element budget,
    # the last first: a shape's choices never depend on the values before them, so
    # Hypothesis' shrinking (the fewest and smallest choices) ends at the smallest shape.
    index, dimension_of = _dimension_draw(min(max_dim, max(1, max_elements)), cores)
    ranks = st.integers(min_rank, max_rank)

    @st.composite
    def shapes(draw: Any) -> tuple:
        budget = max(1, max_elements)
        shape = []
        for _ in range(min_rank if min_rank == max_rank else draw(ranks)):
            shape.append(max(1, min(dimension_of(draw(index)), budget)))
            budget //= shape[-1]
        return tuple(shape)

    return shapes()


def arrays(
    dtype: Any,
    shape: Union[tuple, st.SearchStrategy[tuple]],
    *,
    allow_nan: bool = True,
    allow_infinity: bool = True,
    allow_subnormal: bool = True,
) -> st.SearchStrategy[np.ndarray]:
    """Arrays of a device ``dtype`` and ``shape`` (a tuple, or a strategy of them)
    whose values include, for the float dtypes, ±0, subnormals, ±inf and NaN (unless
    refused here), and for the integers their extremes: one fill value and up to 2
    elements apart, each at any index, so a large array costs no more to make than a
    small one (Hypothesis' own ``arrays`` draws far more, about 0.1 s for 4,096 float32).
    The fill and the elements apart are one draw of bytes of a fixed length: the fill
    first (half the time one of the dtype's edge values, else any bit pattern, a NaN
    made quiet), how many elements apart (0, 1 or 2, a third of the time each), then
    each element apart (an index, then a quarter of the time an edge value, else any
    bit pattern, signalling NaN payloads included); values of a kind refused here are
    left out (a fill of one is 0). A Hypothesis draw costs tens of microseconds: a
    call's generation is one draw per array, not one per value, and of a fixed length
    (bytes of a length to be drawn cost a choice of their own per byte, whether to go
    on). They shrink towards a fill of zeros and no element apart."""
    choices, build, _ = _array_maker(
        _args.dtype_name(dtype, "the dtype"), allow_nan=allow_nan, allow_infinity=allow_infinity,
        allow_subnormal=allow_subnormal,
    )
    if not isinstance(shape, st.SearchStrategy):
        dims = tuple(shape)
        return choices.map(lambda raw: build(dims, raw))

    @st.composite
    def draw(data: Any) -> np.ndarray:
        dims = tuple(data(shape))
        return build(dims, data(choices))

    return draw()


class _Maker(NamedTuple):
    """How :func:`arrays` makes an array of one dtype (:func:`_array_maker`)."""

    choices: st.SearchStrategy[bytes]
    """What it draws: bytes of a fixed length."""
    build: Callable[[tuple, bytes], np.ndarray]
    """The array of a shape made of those bytes."""
    length: int
    """The bytes' length."""


@functools.lru_cache(maxsize=None)
def _array_maker(name: str, *, allow_nan: bool, allow_infinity: bool, allow_subnormal: bool) -> _Maker:
    """What :func:`arrays` of the dtype ``name`` draws (a strategy of bytes) and the
    function that makes an array of a shape from them: made once per dtype, as
    :func:`calls_of` draws a call's tensors through them (NumPy's dtype and limits
    looked up, and the strategy made and validated, on every call would cost more
    than the draw)."""
    if name == "bfloat16":
        # Hypothesis knows no bfloat16: float32 values, rounded to it.
        bfloat16 = _numpy_dtype("bfloat16")
        choices, build32, length = _array_maker(
            "float32", allow_nan=allow_nan, allow_infinity=allow_infinity, allow_subnormal=allow_subnormal
        )
        return _Maker(choices, lambda dims, raw: build32(dims, raw).astype(bfloat16), length)
    numpy_dtype = np.dtype(name)
    floating = numpy_dtype.kind == "f"
    size = numpy_dtype.itemsize
    unsigned = np.dtype(f"<u{size}")
    tiny = np.finfo(numpy_dtype).tiny if floating else None
    all_allowed = not floating or (allow_nan and allow_infinity and allow_subnormal)
    # The bits of a float: a NaN has every exponent bit and a mantissa bit set, and its
    # mantissa's top bit set makes it quiet. A fill of signalling NaN is made quiet:
    # NumPy's own functions treat a signalling NaN differently by the array's length
    # (its vector loops), so a reference such as `np.fmax(x, 0)` would fail on NumPy's
    # account.
    mantissa = (1 << np.finfo(numpy_dtype).nmant) - 1 if floating else 0
    exponent = ((1 << (8 * size - 1)) - 1) & ~mantissa
    quiet = (mantissa + 1) >> 1

    def refused(bits: int) -> bool:
        """Whether the value of ``bits`` is of a kind refused here."""
        if all_allowed:
            return False
        value = np.array(bits, unsigned).view(numpy_dtype)
        return bool(
            (np.isnan(value) and not allow_nan)
            or (np.isinf(value) and not allow_infinity)
            or (value != 0 and abs(value) < tiny and not allow_subnormal)
        )

    # A value: whether it is an edge value (the one at `bits` modulo their count;
    # all-zero bytes are the first, 0) and its bits. The fill is one (an edge value
    # when `edge` is even), then how many elements apart (`apart` modulo _APART + 1,
    # so all-zero bytes are none); an element apart is one (an edge value when `edge`
    # is a multiple of 4) after where it is (taken modulo the element count). Every
    # record is drawn, used or not: the length is fixed.
    head = struct.Struct(f"<B{_UNSIGNED[size]}B")
    record = struct.Struct(f"<IB{_UNSIGNED[size]}")
    length = head.size + _APART * record.size
    choices = st.binary(min_size=length, max_size=length)
    edges = [int(bits) for bits in _edge_values(numpy_dtype).view(unsigned)]

    def build(dims: tuple, raw: bytes) -> np.ndarray:
        # Made as bits, in Python's integers: NumPy's work on arrays of a few elements
        # (a record array of the elements apart, masks) cost more than a call's draws.
        edge, bits, apart = head.unpack_from(raw)
        if edge % 2 == 0:
            bits = edges[bits % len(edges)]
        elif floating and bits & exponent == exponent and bits & mantissa:
            bits |= quiet  # see above
        flat = np.empty(math.prod(dims), unsigned)
        flat.fill(0 if refused(bits) else bits)
        if flat.size:
            for index in range(apart % (_APART + 1)):
                at, edge, bits = record.unpack_from(raw, head.size + index * record.size)
                if edge % 4 == 0:
                    bits = edges[bits % len(edges)]
                if not refused(bits):
                    flat[at % flat.size] = bits
        return flat.view(numpy_dtype).reshape(dims)

    return _Maker(choices, build, length)


_APART = 2
"""Elements of a generated array drawn apart from its fill, at most: every array's draw
holds this many (used or not), and a byte of it costs about half a microsecond."""

_UNSIGNED = {1: "B", 2: "H", 4: "I", 8: "Q"}
"""The ``struct`` format of an unsigned integer of each size."""


def _edge_values(dtype: np.dtype) -> np.ndarray:
    """The values of ``dtype`` kernels get wrong, 0 first: for floats ±0, ±1, ±inf,
    NaN, the smallest subnormal and normal, the largest; for integers 0, ±1 and the
    extremes."""
    if dtype.kind == "f":
        info = np.finfo(dtype)
        smallest = np.array(1, f"<u{dtype.itemsize}").view(dtype)
        values = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, smallest, -smallest, info.tiny, info.max, info.min]
        with np.errstate(over="ignore"):
            return np.array(values, dtype=dtype)
    info = np.iinfo(dtype)
    return np.array(sorted({0, 1, info.max, info.min} | ({-1} if info.min < 0 else set()), key=abs), dtype=dtype)


def scalars_of(
    kind: str, *, allow_nan: bool = True, allow_infinity: bool = True, allow_subnormal: bool = True
) -> st.SearchStrategy[Any]:
    """Scalars of a parameter kind (``int``, ``long``, ``float``, ``double``: the C
    kinds of :mod:`neuroncustomop`), as a call passes them: a Python ``int``, an
    ``np.int64``, a float32's value as a Python ``float``."""
    if kind == _args.INT:
        return st.integers(-(2**31), 2**31 - 1)
    if kind == _args.LONG:
        return st.integers(-(2**63), 2**63 - 1).map(np.int64)
    if kind in (_args.FLOAT, _args.DOUBLE):
        return st.floats(
            width=32, allow_nan=allow_nan, allow_infinity=allow_infinity, allow_subnormal=allow_subnormal
        )
    raise ValueError(f"{kind!r} is not a scalar kind: one of {_args.INT}, {_args.LONG}, {_args.FLOAT}, {_args.DOUBLE}")


def signature(kernel: Kernel) -> tuple:
    """The kinds of ``kernel``'s parameters, in order (``tensor``, ``int``, ``long``,
    ``float``, ``double``): a C++ library's registration, else the annotations of the
    Python shape function it was loaded with, else one tensor (a C or Rust library's
    parameters cannot be read: name them with ``calls_of(kernel, kinds=[...])``)."""
    registration = kernel.library._native.registration()
    if registration is not None:
        for op, kinds in registration[1]:
            if op == kernel.name:
                return tuple(kinds)
    shape_fn = kernel.library._shape_fns.get(kernel.name)
    if shape_fn is not None:
        return tuple(_args.kinds_of(shape_fn))
    return (_args.TENSOR,)


_accepted: dict = {}


def accepted_dtypes(kernel: Kernel, kinds: Optional[Sequence[str]] = None, cores: Optional[int] = None) -> tuple:
    """The device dtypes ``kernel`` takes, found by trying each once: every tensor of
    that dtype (8 elements), scalars 1, and the output may be partial. The dtypes whose
    call returned OK; if none did (the probe's shape is not one the kernel takes), those
    not refused with ``DTYPE_MISMATCH``. Remembered per kernel."""
    kinds = tuple(signature(kernel) if kinds is None else kinds)
    key = (id(kernel.library), kernel.name, kinds, cores)
    if key in _accepted:
        return _accepted[key]
    passed, not_refused = [], []
    for name in _args.DTYPES:
        if name == "bfloat16" and importlib.util.find_spec("ml_dtypes") is None:
            continue  # no way to make bfloat16 values
        inputs = [np.zeros(8, _numpy_dtype(name)) if kind == _args.TENSOR else _one(kind) for kind in kinds]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kernel.run(*inputs, cores=cores, partial_output=True)
            passed.append(name)
        except KernelError as error:
            if error.status_name != "DTYPE_MISMATCH":
                not_refused.append(name)
        except (TypeError, ValueError):
            not_refused.append(name)  # its shape function refused the probe: no word on the dtype
    _accepted[key] = tuple(passed or not_refused)
    return _accepted[key]


def _one(kind: str) -> Any:
    return np.int64(1) if kind == _args.LONG else (1.0 if kind in (_args.FLOAT, _args.DOUBLE) else 1)


def calls_of(
    kernel: Kernel,
    *,
    kinds: Optional[Sequence[str]] = None,
    shapes: Union[tuple, st.SearchStrategy[tuple], None] = None,
    dtypes: Optional[Sequence[Any]] = None,
    scalars: Optional[Mapping[int, st.SearchStrategy[Any]]] = None,
    allow_nan: bool = True,
    allow_infinity: bool = True,
    allow_subnormal: bool = True,
    cores: Optional[int] = None,
) -> st.SearchStrategy[tuple]:
    """Valid calls of ``kernel``: tuples of its inputs, in order.

    Parameters
    ----------
    kernel : Kernel
    kinds : sequence of str, optional
        Its parameters' kinds. Default: :func:`signature`.
    shapes : strategy or tuple, optional
        The tensors' shape (one for every tensor of a call), or the one shape of every
        call (no draw for it). Default: :func:`array_shapes`.
    dtypes : sequence of dtype, optional
        The tensors' dtypes to try. Default: :func:`accepted_dtypes`.
    scalars : mapping of int to strategy, optional
        Per parameter index, the values of that scalar. Default: :func:`scalars_of` its kind.
    allow_nan, allow_infinity, allow_subnormal : bool, default True
        Whether float values (tensors' and scalars') include them.
    cores : int, optional
        The cores the dtypes are tried on. Default: the library's.
    """
    kinds = tuple(signature(kernel) if kinds is None else kinds)
    chosen = tuple(
        _args.dtype_name(d, "dtypes") for d in (accepted_dtypes(kernel, kinds, cores) if dtypes is None else dtypes)
    )
    if not chosen:
        raise ValueError(f"{kernel.name} took none of the device's dtypes: give dtypes=[...]")
    shape_strategy = array_shapes() if shapes is None else shapes
    fixed_shape = None if isinstance(shape_strategy, st.SearchStrategy) else tuple(int(d) for d in shape_strategy)
    given_scalars = dict(scalars or {})
    values = dict(allow_nan=allow_nan, allow_infinity=allow_infinity, allow_subnormal=allow_subnormal)
    # Every strategy a call draws from, made once (not per call: see _array_maker). A
    # draw costs tens of microseconds: one dtype or one shape is not drawn.
    dtype_strategy = st.sampled_from(chosen)
    makers = {name: _array_maker(name, **values) for name in chosen}
    scalar_strategies = {
        index: given_scalars.get(index) or scalars_of(kind, **values)
        for index, kind in enumerate(kinds)
        if kind != _args.TENSOR
    }

    # One shape, one dtype and no scalar: every call is the same to the op's shape
    # function (it sees dtypes, shapes and scalars), which is asked once, and a call is
    # one draw per tensor.
    same_every_call = fixed_shape is not None and len(chosen) == 1 and not scalar_strategies
    verdict: dict = {}

    def accepted(inputs: list) -> bool:
        """Whether the op's shape function takes the call: it bounds what is a call."""
        if same_every_call and verdict:
            return verdict["accepted"]
        try:
            arguments = [_args.argument(value, i) for i, value in enumerate(inputs)]
            kernel.library._output_of(kernel.name, inputs, arguments, None, None)
            verdict["accepted"] = True
        except (TypeError, ValueError, OverflowError):
            verdict["accepted"] = False
        return verdict["accepted"]

    @st.composite
    def draw(data: Any, refused: Callable[[], Any]) -> Any:
        dtype = chosen[0] if len(chosen) == 1 else data(dtype_strategy)
        shape = fixed_shape if fixed_shape is not None else tuple(data(shape_strategy))
        choices, build, _ = makers[dtype]
        inputs = []
        for index, kind in enumerate(kinds):
            if kind == _args.TENSOR:
                inputs.append(build(shape, data(choices)))
            else:
                inputs.append(data(scalar_strategies[index]))
        return tuple(inputs) if accepted(inputs) else refused()

    calls = draw(reject)
    # check() draws several calls an example: there a refused call is left out of its
    # example, not the whole example rejected with it.
    _refused_as_none[calls] = draw(lambda: None)
    if same_every_call and kinds == (_args.TENSOR,):
        # A call is one draw: check() makes its calls of bytes of its own
        # (_sweep_calls), and Hypothesis draws them without the strategy around them (a
        # strategy's own work per draw is as much as the draw's).
        maker = makers[chosen[0]]

        shape = fixed_shape
        assert shape is not None  # the same every call

        def one_draw(raw: bytes) -> Optional[tuple]:
            inputs = [maker.build(shape, raw)]
            return tuple(inputs) if accepted(inputs) else None

        _one_draw[calls] = _OneDraw(maker.choices, maker.length, one_draw)
    return calls


_refused_as_none: "weakref.WeakKeyDictionary[st.SearchStrategy, st.SearchStrategy]" = weakref.WeakKeyDictionary()
"""Per strategy of :func:`calls_of`: the same draws, a call its op refuses drawn as None."""

class _OneDraw(NamedTuple):
    """A :func:`calls_of` strategy whose call is one draw of bytes."""

    choices: st.SearchStrategy[bytes]
    """The strategy drawn."""
    length: int
    """The bytes' length."""
    make_call: Callable[[bytes], Optional[tuple]]
    """The call made of them: None for one the op refuses."""


_one_draw: "weakref.WeakKeyDictionary[st.SearchStrategy, _OneDraw]" = weakref.WeakKeyDictionary()
"""Per strategy of :func:`calls_of` whose call is one draw: how it is drawn and made."""


class CheckFailed(AssertionError):
    """A generated call failed the property: the kernel failed, the device's checks
    found something, output was left unwritten, or the output differs from the
    reference's.

    Attributes
    ----------
    kernel : str
        The kernel's name.
    inputs : tuple
        The call's inputs (after shrinking, in :func:`check`: the smallest failing).
    cores : int
        The cores it ran on.
    reason : str
        Why it failed.
    command : str
        The ``ncop run`` command that reproduces it (its inputs saved as ``.npy``).
    directory : str
        Where the inputs (``arg<k>.npy``) and the reference's output (``want.npy``) are.
    first_failure : str or None
        In :func:`check`: the inputs (dtype and shapes) of the first failing call found,
        before shrinking.
    shrink_seconds : float or None
        In :func:`check`: the seconds from that first failure to the end of shrinking.
    """

    def __init__(self, kernel: str, inputs: tuple, cores: int, reason: str, command: str, directory: str):
        self.kernel = kernel
        self.inputs = inputs
        self.cores = cores
        self.reason = reason
        self.command = command
        self.directory = directory
        self.first_failure: Optional[str] = None
        self.shrink_seconds: Optional[float] = None
        super().__init__(self._message())

    def _message(self) -> str:
        text = f"kernel {self.kernel} on {self.cores} core(s) with {describe(self.inputs)}: {self.reason}\n"
        text += f"reproduce: {self.command}"
        if self.first_failure is not None:
            text += f"\nfirst found with {self.first_failure}, shrunk in {self.shrink_seconds:.1f} s"
        return text

    def __str__(self) -> str:
        return self._message()


def describe(inputs: Iterable[Any]) -> str:
    """Inputs as a message names them: ``float32 (9, 1), float 0.5``."""
    parts = []
    for value in inputs:
        if _args.is_scalar(value):
            kind = _args.scalar(value, "a scalar")[0]
            parts.append(f"{kind} {value!r}")
        else:
            array = np.asarray(value)
            parts.append(f"{_dtype_name(array)} {tuple(array.shape)}")
    return ", ".join(parts)


def _dtype_name(array: np.ndarray) -> str:
    return "bfloat16" if array.dtype.name == "bfloat16" else array.dtype.name


@dataclass
class Tolerance:
    """How the output is compared with the reference's (cast to the output's dtype
    first): equal as values (``-0.0 == 0.0``, NaN equal to NaN with ``equal_nan``), or
    NumPy's ``allclose`` when ``rtol`` or ``atol`` is given."""

    rtol: Optional[float] = None
    atol: Optional[float] = None
    equal_nan: bool = True

    def differing(self, got: np.ndarray, want: np.ndarray) -> np.ndarray:
        """A boolean array: True where ``got`` and ``want`` differ."""
        if got.dtype.kind in "iu":
            return got != want
        if self.rtol is None and self.atol is None:
            # In the dtype itself: its values are float64's exactly, and a property call
            # compares every output, so not two float64 copies first.
            bad = got != want
            if self.equal_nan and bad.any():
                bad &= ~(np.isnan(got) & np.isnan(want))
            return bad
        g, w = got.astype(np.float64), want.astype(np.float64)
        rtol = 1e-5 if self.rtol is None else self.rtol
        atol = 1e-8 if self.atol is None else self.atol
        with np.errstate(invalid="ignore", over="ignore"):
            same = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=False)
        if self.equal_nan:
            same |= np.isnan(g) & np.isnan(w)
        return ~same

    def ncop_options(self) -> list:
        """The same comparison as ``ncop run``'s options."""
        rtol = 0.0 if self.rtol is None and self.atol is None else (1e-5 if self.rtol is None else self.rtol)
        atol = 0.0 if self.rtol is None and self.atol is None else (1e-8 if self.atol is None else self.atol)
        return ["--rtol", repr(rtol), "--atol", repr(atol)] + (["--equal-nan"] if self.equal_nan else [])


def _reference_output(reference: Reference, inputs: tuple) -> np.ndarray:
    """The reference's output for ``inputs`` as an array (a PyTorch tensor made a
    NumPy array), of its own dtype (:func:`_as_dtype` casts it)."""
    copies = [np.array(value, copy=True) if not _args.is_scalar(value) else value for value in inputs]
    # The inputs hold infinities and NaN on purpose: NumPy's warnings about them are noise.
    with np.errstate(all="ignore"):
        want = reference(*copies)
        if hasattr(want, "detach"):
            want = want.detach().cpu().numpy()
        return np.asarray(want)


def _as_dtype(want: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``want`` as an array of ``dtype`` (NumPy's warnings about the cast are noise)."""
    if want.dtype == dtype:
        return want
    with np.errstate(all="ignore"):
        return want.astype(dtype)


def check_call(
    kernel: Kernel,
    reference: Reference,
    *inputs: Any,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    equal_nan: bool = True,
    cores: Optional[int] = None,
    directory: Optional[str] = None,
    **options: Any,
) -> CallResult:
    """Calls ``kernel`` with ``inputs`` (checked) and compares its output with
    ``reference(*inputs)``: the property of one call, for a test of your own under
    ``@given``.

    Parameters
    ----------
    kernel : Kernel
    reference : callable
        Takes the inputs (copies), returns what the output should be (an array, or a
        PyTorch tensor), cast to the output's dtype before comparing.
    *inputs
        The call's inputs.
    rtol, atol : float, optional
        NumPy's ``allclose`` tolerances; without either, the values must be equal
        (``-0.0`` equals ``0.0``).
    equal_nan : bool, default True
        NaN equals NaN.
    cores : int, optional
        Default: the library's declared cores.
    directory : str, optional
        Where a failing call's inputs and the reference's output are saved. Default:
        ``$NCOP_CHECK_DIR``, else a folder per library and kernel under the system's
        temporary folder. Under Hypothesis each failing call overwrites it, and the
        minimal failing call, replayed last, is what stays.
    **options
        More keywords of :meth:`Kernel.run` (``checked=False`` is refused: the checks
        are part of the property).

    Returns
    -------
    CallResult

    Raises
    ------
    CheckFailed
        Why, with the ``ncop run`` command that reproduces it.
    """
    if options.get("checked") is False:
        raise ValueError("check_call runs checked: the device's checks are part of the property")
    prop = _Property(kernel, reference, Tolerance(rtol, atol, equal_nan), cores, directory, options)
    # The reference runs before the call: its work is the same either way, and after the
    # call (this process idle while the device ran) it found the CPU's caches cold.
    result, want = prop.run(inputs, prop.expected(inputs))
    prop.compare(inputs, result, want)
    return result


class _Property:
    """The property of one call (:func:`check_call`) in its three steps: the
    reference's output, the kernel's call (checked), the comparison. :func:`check`
    takes each step for all of an example's calls in turn (:func:`_made`): a step's
    code and data then stay in the CPU's caches from one call to the next, where
    after a device call (this process idle while QEMU ran) they found them cold."""

    def __init__(
        self, kernel: Kernel, reference: Reference, tolerance: Tolerance, cores: Optional[int],
        directory: Optional[str], options: dict,
    ):
        self.kernel = kernel
        self.reference = reference
        self.tolerance = tolerance
        self.cores = kernel.library.cores if cores is None else cores
        self.directory = directory
        # Checked whatever the library's own default (``load(..., checked=False)``).
        self.options = {**options, "cores": self.cores, "checked": True}

    def expected(self, inputs: tuple) -> np.ndarray:
        """The reference's output for ``inputs``."""
        try:
            return _reference_output(self.reference, inputs)
        except TypeError as error:
            kinds = ", ".join(type(value).__name__ if _args.is_scalar(value) else "tensor" for value in inputs)
            raise TypeError(
                f"the reference could not take {self.kernel.name}'s generated call ({kinds}): {error}. A C or "
                f"Rust library's parameters cannot be read, and are taken as one tensor: name them, "
                f"check(..., calls=calls_of(kernel, kinds=['tensor', 'float', ...]))"
            ) from error

    def run(self, inputs: tuple, expected: np.ndarray) -> tuple:
        """The call's result and the reference's output in its dtype (``expected`` cast),
        or the :class:`CheckFailed` of a kernel that failed, of the device's checks'
        warnings, or of an output not of the reference's shape, raised."""
        try:
            result = self.kernel.run(*inputs, **self.options)
        except KernelError as error:
            want = _as_dtype(expected, _numpy_dtype(self.output_form(inputs)[1]))
            raise self.failed(inputs, _first_lines(str(error)), want) from error
        want = _as_dtype(expected, result.output.dtype)
        if result.warnings:
            reason = "the device's checks warned: " + "; ".join(
                str(finding).splitlines()[0] for finding in result.warnings
            )
            raise self.failed(inputs, reason, want)
        if want.shape != result.output.shape:
            raise self.failed(inputs, f"the reference gives shape {want.shape}, the kernel {result.output.shape}", want)
        return result, want

    def compare(self, inputs: tuple, result: CallResult, want: np.ndarray) -> None:
        """Raises the :class:`CheckFailed` of an output that differs from ``want``."""
        got = result.output
        # The same bits are the same values, under any tolerance: the common case costs
        # a comparison of bytes, not NumPy's of values (and a NaN is not equal to itself
        # without ``equal_nan``).
        if self.tolerance.equal_nan and got.tobytes() == want.tobytes():
            return
        bad = self.tolerance.differing(got, want)
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            reason = (
                f"{int(bad.sum())} of {bad.size} elements differ from the reference; the first at {list(first)}: "
                f"got {got[first]}, want {want[first]}"
            )
            raise self.failed(inputs, reason, want)

    def failed(self, inputs: tuple, reason: str, want: Optional[np.ndarray]) -> CheckFailed:
        """The failure of the call of ``inputs``, its inputs and ``want`` saved."""
        folder = _save(self.kernel, inputs, want, self.directory)
        out_shape, out_dtype = self.output_form(inputs)
        tolerance = self.tolerance if want is not None else None
        command = reproducer(self.kernel, inputs, folder, self.cores, out_dtype, out_shape, tolerance)
        return CheckFailed(self.kernel.name, inputs, self.cores, reason, command, folder)

    def output_form(self, inputs: tuple) -> tuple:
        """The output's shape and dtype name. The call resolves them itself: only a
        failure's reproducer asks again (not every property call)."""
        arguments = [_args.argument(value, index) for index, value in enumerate(inputs)]
        return self.kernel.library._output_of(self.kernel.name, inputs, arguments, None, None)


def _made(prop: _Property, calls: list, made: Callable[[], None]) -> None:
    """Makes ``calls`` (each a tuple of inputs) with the property ``prop``, each step
    for a part of them in turn (:class:`_Property`): every reference's output, every
    call, every comparison. ``made`` is told of each call before it runs. A part is
    calls of ``_PART_BYTES`` of tensors at most (one at least): an example of large
    tensors is not held whole. Of the failures of one part, the first call's is
    raised: a call that fails after another that gave a wrong output raises that one."""
    start = 0
    while start < len(calls):
        end, size = start, 0
        while end < len(calls) and (end == start or size + _tensor_bytes(calls[end]) <= _PART_BYTES):
            size += _tensor_bytes(calls[end])
            end += 1
        part = calls[start:end]
        expected = [prop.expected(inputs) for inputs in part]
        ran = []
        try:
            for inputs, want in zip(part, expected):
                made()
                ran.append((inputs, *prop.run(inputs, want)))
        except CheckFailed:
            # Those that ran before the failing call are compared first: a wrong output
            # of one of them is the first failure.
            for inputs, result, want in ran:
                prop.compare(inputs, result, want)
            raise
        for inputs, result, want in ran:
            prop.compare(inputs, result, want)
        start = end


_PART_BYTES = 4 << 20
"""Bytes of tensors of the calls :func:`check` takes each step of the property for in
turn, at most (:func:`_made`): the bench's calls of 16 KiB are an example's whole."""


def _tensor_bytes(inputs: tuple) -> int:
    return sum(getattr(value, "nbytes", 0) for value in inputs)


def _first_lines(text: str, lines: int = 6) -> str:
    kept = text.strip().splitlines()
    return "\n".join(kept[:lines] + (["..."] if len(kept) > lines else []))


def _save(kernel: Kernel, inputs: tuple, want: Optional[np.ndarray], directory: Optional[str]) -> str:
    """Saves the tensor inputs as ``arg<k>.npy`` and ``want`` as ``want.npy`` (old ones
    removed first); returns the folder."""
    folder = directory or os.environ.get("NCOP_CHECK_DIR") or os.path.join(
        tempfile.gettempdir(), "ncop-check", f"{kernel.library.name}-{kernel.name}-{os.getpid()}"
    )
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name.endswith(".npy"):
            os.remove(os.path.join(folder, name))
    for index, value in enumerate(inputs):
        if not _args.is_scalar(value):
            np.save(os.path.join(folder, f"arg{index}.npy"), _savable(np.asarray(value)))
    if want is not None:
        np.save(os.path.join(folder, "want.npy"), _savable(want))
    return folder


def _savable(array: np.ndarray) -> np.ndarray:
    """bfloat16 as ``.npy`` keeps it: its raw 2 bytes (``|V2``), which ``ncop`` reads."""
    return array.view("V2") if array.dtype.name == "bfloat16" else array


def _scalar_arg(value: Any) -> str:
    kind = _args.scalar(value, "a scalar")[0]
    if kind == _args.LONG:
        return f"longlong:{int(value)}"
    if kind == _args.INT:
        return f"int:{int(value)}"
    number = float(np.float32(value))
    text = "NaN" if np.isnan(number) else ("inf" if number == np.inf else ("-inf" if number == -np.inf else repr(number)))
    return f"float:{text}"


def reproducer(
    kernel: Kernel,
    inputs: tuple,
    folder: str,
    cores: int,
    out_dtype: str,
    out_shape: Sequence[int],
    tolerance: Optional[Tolerance],
) -> str:
    """The ``ncop run`` command of this call, its tensors read from ``folder``
    (``arg<k>.npy``) and its output compared with ``want.npy`` there."""
    library = kernel.library
    command = ["ncop", "run", kernel.name, "--lib", library.source]
    for index, value in enumerate(inputs):
        command += ["--arg", _scalar_arg(value) if _args.is_scalar(value) else os.path.join(folder, f"arg{index}.npy")]
    shape = "x".join(str(d) for d in out_shape)
    command += ["--output", f"{out_dtype}:{shape}", "--cores", str(cores)]
    if library.target == "host":
        command.append("--host")
    if tolerance is not None:
        command += ["--expect", os.path.join(folder, "want.npy"), *tolerance.ncop_options()]
    return shlex.join(command)


@dataclass
class CheckReport:
    """What a :func:`check` that found nothing did.

    Attributes
    ----------
    calls : int
        Calls of the kernel (each checked and compared).
    seconds : float
        Wall time of the run.
    batches : list of int
        The batches this shard ran (each a Hypothesis run of ``BATCH`` calls from its
        own seed, 1 to ``CALLS_PER_EXAMPLE`` calls an example).
    """

    calls: int = 0
    seconds: float = 0.0
    batches: list = field(default_factory=list)

    @property
    def calls_per_second(self) -> float:
        return self.calls / self.seconds if self.seconds > 0 else 0.0


BATCH = 100
"""Calls of one batch: the unit a budget and a shard count in. A batch is a Hypothesis
run, whose own work (a few milliseconds: its setup, its simplest example, ending it)
is shared by the batch's calls."""

CALLS_PER_EXAMPLE = 32
"""Calls of one Hypothesis example in :func:`check`, at most: an example draws how many
(1 to this, uniformly: 16.5 on average), then its calls. Hypothesis' own work per
example (seeding the global random generators, NumPy's included, and its choice tree)
is shared by the calls of one example, and a failing example shrinks to its one
failing call (Hypothesis deletes the calls around it and lowers the count to 1)."""

_EXAMPLES_PER_RUN = 9
"""Examples of one Hypothesis run in :func:`check`, at most: from 10 on, Hypothesis caps
the size of a run's first examples (to a few times its simplest example's, one call
here), which would cut them to a few calls each."""


class _BatchMade(unittest.SkipTest):
    """Ends a batch's Hypothesis run at its last call: Hypothesis stops a run at a skip
    exception at once (no shrinking, nothing reported), and :func:`check` catches it.
    A run cannot be told to stop after a number of calls when an example makes
    several."""


@dataclass
class _Batch:
    """The batch a property run is making: its calls still to make, and whether one of
    them failed (then Hypothesis is shrinking it: its calls are not counted down)."""

    left: int = 0
    failed: bool = False


def _shard_of(text: Optional[str]) -> Optional[tuple]:
    if not text:
        return None
    index, _, count = text.partition("/")
    try:
        shard = (int(index), int(count))
    except ValueError:
        raise ValueError(f"shard {text!r} is not I/N (e.g. 0/4)") from None
    if not 0 <= shard[0] < shard[1]:
        raise ValueError(f"shard {text!r}: I must be in 0..N-1")
    return shard


def batch_seed(seed: int, batch: int, run: int = 0) -> int:
    """The Hypothesis seed of batch ``batch`` of a sweep seeded ``seed``: the same on
    every machine, whichever shard runs it. ``run``: of the batch's further Hypothesis
    runs, when its first ends before the batch's last call (:func:`check`)."""
    text = f"{seed}:{batch}" if run == 0 else f"{seed}:{batch}:{run}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def examples_of(calls: st.SearchStrategy[tuple]) -> st.SearchStrategy[list]:
    """The examples :func:`check` draws of ``calls``: lists of 1 to ``CALLS_PER_EXAMPLE``
    calls (None for a call the op's shape function refuses, of a :func:`calls_of`
    strategy), all drawn before the first is made: what an example draws never depends
    on the batch's count (Hypothesis fails a run whose examples draw differently after
    the same choices), and the run may end in the middle of one. Their count is drawn
    once, not ``st.lists``' choice whether to go on before every call: a Hypothesis
    draw costs tens of microseconds, and a list's examples average 6 calls whatever
    its largest. A call of a :func:`calls_of` strategy that is one draw (one tensor
    of one shape and dtype) is drawn without the strategy around it."""
    one_call = _refused_as_none.get(calls, calls)
    single = _one_draw.get(calls)
    count = st.integers(1, CALLS_PER_EXAMPLE)

    @st.composite
    def examples(draw: Any) -> list:
        if single is not None:
            return [single.make_call(draw(single.choices)) for _ in range(draw(count))]
        return [draw(one_call) for _ in range(draw(count))]

    return examples()


def _sweep_calls(single: _OneDraw, seed: int, count: int) -> Iterable[tuple]:
    """The ``count`` calls of a batch seeded ``seed`` of a strategy whose call is one
    draw of bytes (:func:`check`), each ``(bytes, inputs)``: the first of zero bytes
    (Hypothesis' simplest example: a fill of zeros, no element apart), the others of
    uniform random bytes from a generator seeded ``seed``, as Hypothesis draws bytes of
    a fixed length. Hypothesis would cost more than the call's own work: its draw and
    its work per example 0.06 ms a call."""
    generator = random.Random(seed)
    for index in range(count):
        raw = generator.randbytes(single.length) if index else bytes(single.length)
        inputs = single.make_call(raw)
        if inputs is None:
            raise ValueError("the op's shape function refuses the calls' shape and dtype: every call of them")
        yield raw, inputs


def check(
    kernel: Kernel,
    reference: Reference,
    *,
    calls: Optional[st.SearchStrategy[tuple]] = None,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    equal_nan: bool = True,
    cores: Optional[int] = None,
    max_examples: Optional[int] = None,
    budget: Optional[float] = None,
    seed: Optional[int] = None,
    shard: Optional[tuple] = None,
    directory: Optional[str] = None,
    **options: Any,
) -> CheckReport:
    """Checks ``kernel`` against ``reference`` on generated calls: the property run.

    The sweep is numbered batches of ``BATCH`` (100) calls, each a Hypothesis run from
    a seed made of ``seed`` and its number, whose examples are 1 to
    ``CALLS_PER_EXAMPLE`` calls (the run ends at the batch's last call, and if its
    examples end first, another run from a seed of its own makes the rest; a call the
    op's shape function refuses is left out; :func:`examples_of`). A :func:`calls_of`
    call of one tensor, one dtype and one shape (``shapes=(4, 1024)``) is one draw of
    bytes (its fill and up to 2 elements apart), and its batch is no Hypothesis run:
    its calls are made of uniform random bytes from a generator seeded the same way
    (:func:`_sweep_calls`; the first of zeros, Hypothesis' simplest), and a failing
    one is shrunk by Hypothesis from an example of that call (Hypothesis' work per
    call cost more than the call's own: 0.06 ms). The property's steps run for up to
    an example's calls in turn: every reference, every call, every comparison. A
    shard ``(i, n)`` runs the batches whose number is ``i`` modulo ``n`` (the
    granularity of a shard: one of fewer than ``BATCH`` calls makes the first calls of
    its first batch). It stops after ``max_examples`` calls (default 100, when there
    is no ``budget``) or when ``budget`` seconds have passed, whichever first; the
    batch that fails is shrunk to its smallest failing call (an example of that one
    call).

    Parameters
    ----------
    kernel : Kernel
    reference : callable
        As for :func:`check_call`.
    calls : strategy, optional
        Tuples of inputs. Default: :func:`calls_of` the kernel.
    rtol, atol, equal_nan, cores, directory, **options
        As for :func:`check_call`.
    max_examples : int, optional
        Calls to make at most, in this shard.
    budget : float, optional
        Seconds to run for at most (a batch started is finished, and a failure's
        shrinking is not cut short).
    seed : int, optional
        The sweep's seed. Default: ``$NCOP_CHECK_SEED``, else 0.
    shard : (int, int), optional
        ``(i, n)``: this is shard i of n. Default: ``$NCOP_CHECK_SHARD`` (``i/n``),
        else the whole sweep.

    Returns
    -------
    CheckReport

    Raises
    ------
    CheckFailed
        The smallest failing call found, why, and the command that reproduces it.
    """
    if seed is None:
        seed = int(os.environ.get("NCOP_CHECK_SEED", "0"))
    if shard is None:
        shard = _shard_of(os.environ.get("NCOP_CHECK_SHARD")) or (0, 1)
    if max_examples is None and budget is None:
        max_examples = 100
    if options.get("checked") is False:
        raise ValueError("check runs checked: the device's checks are part of the property")
    strategy = calls if calls is not None else calls_of(kernel, cores=cores)

    report = CheckReport()
    batch = _Batch()
    first: dict = {}
    started = time.monotonic()

    prop = _Property(kernel, reference, Tolerance(rtol, atol, equal_nan), cores, directory, options)

    def counted() -> None:
        report.calls += 1

    def property_of(example: list) -> None:
        made = [inputs for inputs in example if inputs is not None]
        if not made:
            reject()  # every call of it refused by the op's shape function: not an example
        if not batch.failed:
            # The batch ends at its last call, in the middle of the example if need be.
            made = made[: batch.left]
        try:
            _made(prop, made, counted)
        except Exception as error:
            batch.failed = True
            if isinstance(error, CheckFailed):
                first.setdefault("case", describe(error.inputs))
                first.setdefault("at", time.monotonic())
            raise
        if not batch.failed:
            batch.left -= len(made)
            if batch.left == 0:
                raise _BatchMade()

    def hypothesis_test(**overrides: Any) -> Any:
        """The Hypothesis test of a batch (``overrides`` of its settings): made once and
        run for every batch with that batch's seed, as making one costs Hypothesis
        milliseconds (it reads and compiles the test's source), as much as a few calls."""
        chosen = dict(
            # The run ends at the batch's last call (_BatchMade), and its first example
            # is Hypothesis' simplest (one call): the rest of a batch is an example or two.
            max_examples=_EXAMPLES_PER_RUN,
            deadline=None,
            database=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            print_blob=False,
            # One failure is all a check reports: shrink it at once, not after more
            # generated examples.
            report_multiple_bugs=False,
            # Not the explain phase: it replays the failing calls under a line tracer
            # (which lines only failing calls ran, in this package), 25 times the
            # shrinking's time for a failing call on the device.
            phases=[phase for phase in Phase if phase != Phase.explain],
        )
        test = settings(**{**chosen, **overrides})(given(examples_of(strategy))(property_of))
        # Hypothesis names a test's examples in its database by a digest of the test's
        # source, made on every run (8 ms of CPU under cProfile at a load of 9: most of
        # a batch's own cost) unless the test names them.
        test._hypothesis_internal_database_key = b"neuroncustomop.testing.check"
        return test

    def runs(number: int, batch_run: Any) -> None:
        """Batch ``number`` as Hypothesis runs of ``batch_run``. A run ends at the
        batch's last call; one that ends first (its examples made fewer calls than the
        batch has left, or were refused) is followed by another, from a seed of its own:
        every run makes a call at least, or Hypothesis raises."""
        runs_of_batch = 0
        while batch.left:
            run = hypothesis_seed(batch_seed(seed, number, runs_of_batch))(batch_run)
            runs_of_batch += 1
            try:
                run()
            except _BatchMade:
                return

    def sweep(number: int, single: _OneDraw) -> None:
        """Batch ``number`` of a strategy whose call is one draw: its calls made of bytes
        of its own (:func:`_sweep_calls`), as many at a time as an example's at most. A
        failing call is shrunk by Hypothesis from an example of that call (of all those
        made together, for an error that names no call: the reference's own, say), as
        a batch's Hypothesis run would shrink it."""
        calls = _sweep_calls(single, batch_seed(seed, number), batch.left)
        while part := list(itertools.islice(calls, CALLS_PER_EXAMPLE)):
            try:
                _made(prop, [inputs for _, inputs in part], counted)
            except Exception as error:
                batch.failed = True
                found = [raw for raw, _ in part]
                if isinstance(error, CheckFailed):
                    first["case"], first["at"] = describe(error.inputs), time.monotonic()
                    found = [raw for raw, inputs in part if inputs is error.inputs]
                # Hypothesis replays the examples its database holds before shrinking
                # them: those of the secondary corpus (the primary's are taken to be
                # shrunk already). The example's choices: how many calls, each's bytes.
                database = InMemoryExampleDatabase()
                shrinking = hypothesis_test(database=database, phases=[Phase.reuse, Phase.shrink])
                key = shrinking._hypothesis_internal_database_key + b".secondary"
                database.save(key, _choices_to_bytes((len(found), *found)))
                # Shrinking from the batch's seed, as a batch's Hypothesis run would:
                # what @seed sets, without its settings' database=None.
                shrinking._hypothesis_internal_use_seed = batch_seed(seed, number)
                shrinking()
                raise  # the calls passed when replayed: the failure as found

    single = _one_draw.get(strategy) if _choices_to_bytes is not None else None
    batch_run = hypothesis_test() if single is None else None
    number = shard[0]
    while True:
        if max_examples is not None and report.calls >= max_examples:
            break
        if budget is not None and time.monotonic() - started >= budget:
            break
        batch.left = BATCH if max_examples is None else min(BATCH, max_examples - report.calls)
        batch.failed = False
        report.batches.append(number)
        try:
            if single is not None:
                sweep(number, single)
            else:
                runs(number, batch_run)
        except CheckFailed as failure:
            failure.first_failure = first.get("case")
            failure.shrink_seconds = time.monotonic() - first.get("at", time.monotonic())
            failure.args = (str(failure),)
            raise
        number += shard[1]
    report.seconds = time.monotonic() - started
    return report


@dataclass(frozen=True)
class TierDiff:
    """One call on the simulated device and on the host tier, compared
    (:func:`diff_tiers`).

    Attributes
    ----------
    differing : int
        Output elements that differ (as values: ``-0.0 == 0.0``, NaN equals NaN).
    total : int
        Of all the output's elements.
    long_truncated : int
        Of those, how many are the host's value cut to 32 bits: a ``long`` is 32 bits
        on the device and 64 on the host tier.
    pointer_sized : int
        Of those, how many are 4 on the device and 8 on the host tier: a pointer's or a
        ``long``'s size.
    first : tuple of int or None
        The index of the first differing element.
    device, host : numpy.ndarray
        Each tier's output.
    report : str
        The account ``ncop run --diff-tiers`` prints: the first differing element, both
        values, and on each tier the core and ``file:line`` of the store that last
        wrote it.
    """

    differing: int
    total: int
    long_truncated: int
    pointer_sized: int
    first: Optional[tuple]
    device: np.ndarray
    host: np.ndarray
    report: str

    def __str__(self) -> str:
        return self.report


def diff_tiers(
    kernel: Kernel, *inputs: Any, cores: Optional[int] = None, out_shape: Any = None, out_dtype: Any = None
) -> TierDiff:
    """Runs ``kernel`` with ``inputs`` on the device (checked) and on the host tier, and
    compares the outputs; when they differ, names where (:class:`TierDiff`). The
    library must be loaded from its project (the host tier builds from its sources).
    ``cores``, ``out_shape`` and ``out_dtype`` as for :meth:`Kernel.run`.
    """
    arguments = [_args.argument(value, index) for index, value in enumerate(inputs)]
    shape, dtype = kernel.library._output_of(kernel.name, inputs, arguments, out_shape, out_dtype)
    cores = kernel.library.cores if cores is None else cores
    differing, total, truncated, pointer, first, device, host, report = kernel.library._native.diff_tiers(
        kernel.name, arguments, dtype, list(shape), cores
    )
    numpy_dtype = _numpy_dtype(dtype)
    as_array = lambda raw: np.frombuffer(raw, dtype=numpy_dtype).reshape(shape)  # noqa: E731
    return TierDiff(
        differing, total, truncated, pointer, None if first is None else tuple(first), as_array(device),
        as_array(host), report,
    )


def load_reference(spec: str) -> Reference:
    """The function ``FILE.py:NAME`` names."""
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise ValueError(f"--ref {spec!r} is not FILE.py:FUNCTION")
    module_spec = importlib.util.spec_from_file_location("ncop_reference", path)
    if module_spec is None or module_spec.loader is None:
        raise FileNotFoundError(f"--ref: cannot read {path}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    function = getattr(module, name, None)
    if not callable(function):
        raise ValueError(f"--ref: {path} has no function {name}")
    return function


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``ncop check`` (``python -m neuroncustomop.testing``): 0 when every call passed,
    1 with the smallest failing call and its reproducer, 2 on bad input."""
    from . import _load

    parser = argparse.ArgumentParser(prog="ncop check", description="Check a kernel on generated calls")
    parser.add_argument("kernel")
    parser.add_argument("--lib", default=".")
    parser.add_argument("--ref", required=True)
    parser.add_argument("--budget", type=float)
    parser.add_argument("--max-examples", type=int)
    parser.add_argument("--host", action="store_true")
    parser.add_argument("--cores", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--shard")
    parser.add_argument("--rtol", type=float)
    parser.add_argument("--atol", type=float)
    parser.add_argument("--no-equal-nan", dest="equal_nan", action="store_false")
    parser.add_argument("--max-elements", type=int, default=DEFAULT_MAX_ELEMENTS)
    parser.add_argument("--rank", type=int)
    parser.add_argument("--dtype", action="append")
    options = parser.parse_args(argv)
    try:
        reference = load_reference(options.ref)
        shard = _shard_of(options.shard)
        library = _load.load_library(options.lib, target="host" if options.host else "device")
        kernel = library.kernel(options.kernel)
        strategy = calls_of(
            kernel,
            shapes=array_shapes(rank=options.rank, max_elements=options.max_elements),
            dtypes=options.dtype,
            cores=options.cores,
        )
    except (ValueError, TypeError, FileNotFoundError, AttributeError, _native.PackageError) as error:
        print(f"ncop check: {error}", file=sys.stderr)
        return 2
    where = "the host tier" if options.host else "the device"
    try:
        report = check(
            kernel, reference, calls=strategy, rtol=options.rtol, atol=options.atol, equal_nan=options.equal_nan,
            cores=options.cores, max_examples=options.max_examples, budget=options.budget, seed=options.seed,
            shard=shard,
        )
    except CheckFailed as failure:
        print(f"{library.name} / {kernel.name} on {where}: FAILED\n{failure}")
        return 1
    print(
        f"{library.name} / {kernel.name} on {where}: OK, {report.calls} calls passed in {report.seconds:.1f} s "
        f"({report.calls_per_second:.1f} calls/s; batches {report.batches[0]}..{report.batches[-1]} "
        f"step {shard[1] if shard else 1})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
