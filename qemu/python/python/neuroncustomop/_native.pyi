"""Types of ``neuroncustomop._native``, the Rust half of the package (``qemu/python/src``).

``tests/test_typing.py`` checks that this stub and the built module name the same
symbols.
"""

from os import PathLike
from typing import Optional, Union

import numpy as np
import numpy.typing as npt

# One argument as ``_args.argument`` makes it: ``(dtype, shape, bytes)`` for a tensor,
# ``(C kind, bytes)`` for a scalar; the bytes little-endian, in a ``uint8`` array.
TensorInput = tuple[str, list[int], npt.NDArray[np.uint8]]
ScalarInput = tuple[str, npt.NDArray[np.uint8]]
Input = Union[TensorInput, ScalarInput]

CORES: int
"""Cores of the simulated device."""
DTYPES: tuple[str, ...]
"""The device's dtypes, as NumPy names them (the runtime's ``Dtype``)."""

class PackageError(RuntimeError):
    """The library could not be built or packaged (the message has the build's output)."""

class DeviceError(RuntimeError):
    """The simulated device could not run the op (QEMU failed, or the loader did not finish)."""

class RawCall:
    """What one call gave back, per core in core order."""

    @property
    def output(self) -> npt.NDArray[np.uint8]: ...
    @property
    def status(self) -> int: ...
    @property
    def status_name(self) -> str: ...
    @property
    def statuses(self) -> list[int]: ...
    @property
    def instructions(self) -> list[int]: ...
    @property
    def stdout(self) -> list[str]: ...
    @property
    def stdout_lost(self) -> list[int]: ...
    @property
    def wall(self) -> float: ...
    @property
    def profile(self) -> Optional[str]: ...
    @property
    def total_instructions(self) -> int: ...
    @property
    def balance(self) -> float: ...
    @property
    def per_element(self) -> Optional[float]: ...

class Library:
    """A packaged kernel library, ready to run."""

    def __new__(cls, path: Union[str, PathLike[str]]) -> Library: ...
    @property
    def name(self) -> str: ...
    @property
    def package_dir(self) -> str: ...
    @property
    def kernels(self) -> list[str]: ...
    def registration(self) -> Optional[tuple[str, list[tuple[str, list[str]]]]]: ...
    def output_of(self, kernel: str, inputs: list[Input]) -> Optional[tuple[str, list[int]]]: ...
    def call(
        self,
        kernel: str,
        inputs: list[Input],
        output_dtype: str,
        output_shape: list[int],
        cores: int,
        count_instructions: bool,
        max_instructions: Optional[int] = None,
        profile: bool = False,
    ) -> RawCall: ...

def canary(dtype_name: str) -> bytes: ...
