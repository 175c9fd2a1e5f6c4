"""Run neuroncustomop kernel libraries on the simulated GPSIMD device, from Python.

A library is loaded once and its kernels are called with NumPy arrays (or PyTorch
tensors, through the array protocol); they return NumPy arrays.

>>> import numpy as np, neuroncustomop                      # doctest: +SKIP
>>> lib = neuroncustomop.load("examples/relu")
>>> x = np.linspace(-1, 1, 8, dtype=np.float32)
>>> np.testing.assert_array_equal(lib.relu(x), np.maximum(x, 0))

The AWS Neuron flow's scripts run unchanged under ``python -m neuroncustomop
SCRIPT.py`` (their ``torch_neuronx.xla_impl.custom_op`` is this package), or with
their import changed to ``import neuroncustomop as custom_op``: :func:`load` builds
``lib<name>.so`` from
``name=``, ``compute_srcs=``, ``shape_srcs=``, ``build_directory=``, ``multicore=``,
``extra_cflags=``; :func:`load_library` loads it; with PyTorch installed each op is
``torch.ops.<namespace>.<op>``, its fake kernel the shape function; :func:`options`
sets how a block of calls runs (``torch.ops`` calls take no keywords) and
:func:`last_result` is the last one's whole result. The output's shape and dtype are
the first tensor input's unless the call (``out_shape=``, ``out_dtype=``) or the library's shape function
(``load(shape_fns=...)``) says otherwise. Scalars are passed as Python or NumPy
numbers, their C kind by their type: ``int``/``np.int32`` an ``int``, ``np.int64`` a
``long long``, ``float``/``np.float32`` a ``float``.

Errors
------
KernelError
    The kernel ran and returned a non-zero status; it carries the status, its name,
    each core's stdout and the output as the kernel left it.
UnwrittenOutputError
    Every core returned 0 but output elements were never written (a ``KernelError``).
FindingsError
    The memory checks found the kernel touching memory its op was not given, or
    misusing its heap (a ``KernelError``): ``OutOfBoundsError``, ``RaceError``,
    ``SandboxError``, ``HeapError`` and its ``UseAfterFreeError``, by the first
    finding's ``kind`` (one of ``FINDING_KINDS``). The checks' warnings (a leak, a read
    of memory never written) go to ``warnings.warn`` as a ``CheckWarning``
    (``LeakWarning``, ``UninitializedReadWarning``) and to ``CallResult.warnings``.
UnknownKernelError
    No kernel of that name; the message lists the library's kernels.
PackageError
    The library could not be built or packaged; the message has the build's output.
DeviceError
    The simulated device could not run the op.
TypeError, ValueError, OverflowError
    Bad inputs: a dtype the device lacks, an ambiguous scalar, a wrong number of
    inputs, an output too large for device memory.
"""

from ._args import DTYPES
from ._errors import KernelError, UnknownKernelError, UnwrittenOutputError
from ._findings import (
    FINDING_KINDS,
    CheckWarning,
    Finding,
    FindingsError,
    HeapError,
    LeakWarning,
    OutOfBoundsError,
    RaceError,
    SandboxError,
    UninitializedReadWarning,
    UseAfterFreeError,
)
from ._home import name_installed_home as _name_installed_home
from ._library import CallResult, Kernel, Library
from ._load import load, load_library
from ._native import CORES, VERSION, DeviceError, PackageError
from ._options import last_result, options

__version__ = VERSION
"""This package's version: its wheel's, ``ncop --version``'s and the runtime's."""

__all__ = [
    "CORES",
    "DTYPES",
    "FINDING_KINDS",
    "CallResult",
    "CheckWarning",
    "DeviceError",
    "Finding",
    "FindingsError",
    "HeapError",
    "Kernel",
    "KernelError",
    "LeakWarning",
    "Library",
    "OutOfBoundsError",
    "PackageError",
    "RaceError",
    "SandboxError",
    "UninitializedReadWarning",
    "UnknownKernelError",
    "UnwrittenOutputError",
    "UseAfterFreeError",
    "last_result",
    "load",
    "load_library",
    "options",
]

# The tools find their data beside the installed package.
_name_installed_home()
