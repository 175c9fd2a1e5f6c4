"""Types of ``neuroncustomop._native``, the Rust half of the package (``qemu/python/src``).

``tests/test_typing.py`` checks that this stub and the built module name the same
symbols, and ``mypy.stubtest`` that it agrees with the module's signatures.
"""

from os import PathLike
from typing import Optional, Union, final

import numpy as np
import numpy.typing as npt

# One argument as ``_args.argument`` makes it: ``(dtype, shape, bytes)`` for a tensor,
# ``(kind, bytes)`` for a scalar (an ``ARG_KINDS`` name); the bytes little-endian, in a ``uint8`` array.
_TensorInput = tuple[str, list[int], npt.NDArray[np.uint8]]
_ScalarInput = tuple[str, npt.NDArray[np.uint8]]
_Input = Union[_TensorInput, _ScalarInput]

# As PyO3 makes it: every name the module adds, in the order it adds them.
__all__ = [
    "Library",
    "RawCall",
    "PackageError",
    "DeviceError",
    "canary",
    "name_installed",
    "VERSION",
    "write_profile",
    "CORES",
    "MAX_RANK",
    "MAX_DIM",
    "TCM_POOL_SIZE",
    "edge_sizes",
    "DTYPES",
    "ARG_KINDS",
    "SCHEMA_TYPES",
    "FINDING_KINDS",
    "FINDING_DESCRIPTIONS",
]

VERSION: str
"""The version of this package, of ``ncop`` and of the runtime (one definition: the
workspace's ``Cargo.toml``)."""
CORES: int
"""Cores of the simulated device."""
MAX_RANK: int
"""The most dimensions a device tensor has."""
MAX_DIM: int
"""The largest dimension of a device tensor."""
TCM_POOL_SIZE: int
"""Bytes of the TCM pool an op may take."""
DTYPES: tuple[str, ...]
"""The device's dtypes, as NumPy names them (the runtime's ``Dtype``)."""
ARG_KINDS: tuple[str, ...]
"""The argument kinds' names, in the order of the C++ build's ``cxx::ArgKind::ALL``."""
SCHEMA_TYPES: dict[str, str]
"""Each argument kind's type in a ``torch.library`` schema."""
FINDING_KINDS: tuple[str, ...]
"""The memory checks' finding kinds by their stable names (``oob-store``, ``race``, ...),
in the order of ``neuroncustomop_wire::finding::FindingKind::ALL``."""
FINDING_DESCRIPTIONS: dict[str, str]
"""Each finding kind's name in words, as the host prints it (presentation only)."""

class PackageError(RuntimeError):
    """The library could not be built or packaged (the message has the build's output)."""

class DeviceError(RuntimeError):
    """The simulated device could not run the op (QEMU failed, or the loader did not finish);
    a kernel that failed or stopped is a ``KernelError``."""

@final
class RawCall:
    """What one call gave back, per core in core order."""

    @property
    def output(self) -> npt.NDArray[np.uint8]: ...
    @property
    def status(self) -> int: ...
    @property
    def status_name(self) -> str: ...
    @property
    def status_detail(self) -> Optional[str]: ...
    @property
    def statuses(self) -> list[int]: ...
    @property
    def instructions(self) -> list[int]: ...
    @property
    def exact(self) -> list[bool]: ...
    @property
    def stop(self) -> Optional[str]: ...
    @property
    def report(self) -> str: ...
    @property
    def stdout(self) -> list[str]: ...
    @property
    def findings(self) -> list[tuple[str, str, int, str, list[str]]]: ...
    @property
    def findings_total(self) -> int: ...
    @property
    def unwritten(self) -> Optional[str]: ...
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

@final
class Library:
    """A packaged kernel library, ready to run."""

    def __new__(cls, path: Union[str, PathLike[str]], target: str = "device") -> Library: ...
    @property
    def name(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def package_dir(self) -> str: ...
    @property
    def default_cores(self) -> int: ...
    @property
    def kernels(self) -> list[str]: ...
    def registration(self) -> Optional[tuple[str, list[tuple[str, list[str]]]]]: ...
    def resolve_output(
        self,
        kernel: str,
        inputs: list[_Input],
        shape: Optional[list[int]],
        dtype: Optional[str],
        shape_fn: Optional[tuple[str, list[int]]],
    ) -> tuple[str, list[int]]: ...
    def diff_tiers(
        self,
        kernel: str,
        inputs: list[_Input],
        output_dtype: str,
        output_shape: list[int],
        cores: int,
    ) -> tuple[int, int, int, int, Optional[list[int]], bytes, bytes, str]: ...
    def call(
        self,
        kernel: str,
        inputs: list[_Input],
        output_dtype: str,
        output_shape: list[int],
        cores: int,
        count_instructions: bool,
        max_instructions: Optional[int] = None,
        checked: Optional[bool] = None,
        profile: bool = False,
        partial_output: bool = False,
    ) -> RawCall: ...

def canary(dtype_name: str) -> bytes: ...
def name_installed(path: Union[str, PathLike[str]]) -> None: ...
def edge_sizes(cores: int) -> list[int]: ...
def write_profile(profile: str, dir: Union[str, PathLike[str]]) -> None: ...
