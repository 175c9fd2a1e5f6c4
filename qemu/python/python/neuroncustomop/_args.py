"""Turning what a caller passes into what the device takes: every tensor a
little-endian, C-contiguous byte buffer with a device dtype and a shape, and every
scalar one of the three C kinds.

The device's dtypes (NumPy names): ``float32``, ``bfloat16`` (with the ``ml_dtypes``
package), ``float16``, ``int32``, ``int8``, ``int64``, ``int16``, ``uint8``.

Scalars and their C kind:

==============================  ===============  ==================================
Python value                    C kind           note
==============================  ===============  ==================================
``int``, ``numpy.int32``        ``int``          a Python int must fit 32 bits
``numpy.int64``                 ``long long``    the only way to pass a long long
``float``, ``numpy.float32``,   ``float``        rounded to float32 (the only float
``numpy.float64``                                kind the kernel ABI has)
==============================  ===============  ==================================

``bool`` and other NumPy scalar types are refused: their kind would be a guess.
"""

from __future__ import annotations

import inspect
import math
import sys
from typing import Any, Optional

import numpy as np

from . import _native

DTYPES: tuple[str, ...] = _native.DTYPES
"""The device's dtypes, as NumPy names them (the runtime's ``Dtype``, from the native module)."""

TENSOR, INT, LONG, FLOAT, DOUBLE = _native.ARG_KINDS
"""The argument kinds, by the names the native module gives them (the C++ build's
``cxx::ArgKind::ALL``, in its order: ``tests/test_typing.py`` checks each name)."""

_INT32 = np.iinfo(np.int32)
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def device_dtype(dtype: Any, what: str) -> np.dtype:
    """``dtype`` as a NumPy dtype the device has; ``TypeError`` naming ``what`` if not."""
    try:
        dtype = np.dtype(dtype)
    except TypeError as error:
        raise TypeError(f"{what}: {dtype!r} is not a dtype") from error
    if dtype.name not in DTYPES:
        raise _not_a_device_dtype(what, dtype.name, "x.astype(np.float32)")
    return dtype


def _not_a_device_dtype(what: str, name: str, example: str) -> TypeError:
    return TypeError(
        f"{what} has dtype {name}, which the device does not have: use one of {', '.join(DTYPES)} (e.g. {example})"
    )


def _torch_dtype_name(value: Any) -> Optional[str]:
    """The NumPy name of a PyTorch tensor's dtype (``torch.float32`` -> ``float32``);
    None when ``value`` is not a PyTorch tensor."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    return str(value.dtype).removeprefix("torch.")


def dtype_name(dtype: Any, what: str) -> str:
    """The device dtype's NumPy name for ``dtype`` (a NumPy dtype or name; bfloat16
    without ml_dtypes too); ``TypeError`` naming ``what`` if the device lacks it."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    return device_dtype(dtype, what).name


def shape_and_dtype(value: Any) -> tuple:
    """``(shape, dtype)`` of an array or a PyTorch tensor (its dtype as a NumPy name)."""
    torch_dtype = _torch_dtype_name(value)
    if torch_dtype is not None:
        return tuple(value.shape), torch_dtype
    array = np.asarray(value)
    return array.shape, array.dtype


def tensor(value: Any, what: str) -> tuple[str, list[int], np.ndarray]:
    """``value`` (anything NumPy can view as an array: an ndarray, a CPU PyTorch
    tensor, bfloat16 included) as ``(dtype name, shape, bytes)``. A non-contiguous or
    big-endian array is copied, never refused."""
    torch_dtype = _torch_dtype_name(value)
    if torch_dtype is not None:
        # PyTorch's own bytes: NumPy has no bfloat16 without ml_dtypes.
        if torch_dtype not in DTYPES:
            raise _not_a_device_dtype(what, torch_dtype, "x.float()")
        if value.device.type != "cpu":
            raise ValueError(f"{what} is on {value.device}: the simulated device takes CPU tensors (x.cpu())")
        if value.dim() == 0:
            raise ValueError(f"{what} is a 0-d tensor: pass a scalar (x.item()) or a shape (1,) tensor")
        if value.numel() == 0:
            # PyTorch cannot view an empty tensor's bytes (its stride is not 1).
            return (torch_dtype, list(value.shape), np.zeros(0, np.uint8))
        flat = value.detach().contiguous().reshape(-1)
        return (torch_dtype, list(value.shape), flat.view(sys.modules["torch"].uint8).numpy())
    array = np.asarray(value)
    dtype = device_dtype(array.dtype, what)
    if array.ndim == 0:
        raise ValueError(f"{what} is a 0-d array: pass a scalar (e.g. np.float32(x)) or a shape (1,) array")
    if dtype.byteorder == ">":
        array = array.astype(dtype.newbyteorder("<"))
    array = np.ascontiguousarray(array)
    return (dtype.name, list(array.shape), array.reshape(-1).view(np.uint8))


def scalar(value: Any, what: str) -> tuple[str, np.ndarray]:
    """``value`` as ``(kind, bytes)``, by the table in this module's docstring: the
    kind ``INT``, ``LONG`` (a C ``long long``) or ``FLOAT``."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} is a bool: pass int(x) or np.int32(x) for an int")
    if isinstance(value, np.int64):
        return (LONG, np.array([value], dtype="<i8").view(np.uint8))
    if isinstance(value, np.int32):
        return (INT, np.array([value], dtype="<i4").view(np.uint8))
    if isinstance(value, int) and not isinstance(value, np.generic):
        if not _INT32.min <= value <= _INT32.max:
            raise OverflowError(f"{what} = {value} does not fit a C int: pass np.int64({value}) for a long long")
        return (INT, np.array([value], dtype="<i4").view(np.uint8))
    if isinstance(value, (float, np.float32)):
        # A finite float past float32's range would become an infinity in the cast: the
        # kernel would get another number than the caller passed.
        if math.isfinite(value) and abs(value) > _FLOAT32_MAX:
            raise OverflowError(f"{what} = {value!r} does not fit a C float (at most {_FLOAT32_MAX:.7g})")
        return (FLOAT, np.array([value], dtype="<f4").view(np.uint8))
    raise TypeError(
        f"{what} is a {type(value).__name__}: a scalar is an int or np.int32 (C int), np.int64 (long long), "
        f"or a float or np.float32 (float)"
    )


def is_scalar(value: Any) -> bool:
    """Whether ``value`` is passed as a scalar rather than a tensor."""
    return isinstance(value, (int, float, np.generic))


def argument(value: Any, index: int) -> tuple:
    """Input ``index`` in the form the native module takes."""
    what = f"input {index}"
    return scalar(value, what) if is_scalar(value) else tensor(value, what)


def kinds_of(shape_fn: Any) -> list:
    """The argument kinds of a Python shape function, from its annotations: ``int``
    and ``float`` scalars, anything else a tensor (as ``torch.ops`` and the property
    checks read them)."""
    kinds = []
    for parameter in inspect.signature(shape_fn).parameters.values():
        annotation = parameter.annotation
        # A string under `from __future__ import annotations`.
        if annotation in (int, int.__name__):
            kinds.append(INT)
        elif annotation in (float, float.__name__):
            kinds.append(FLOAT)
        else:
            kinds.append(TENSOR)
    return kinds
