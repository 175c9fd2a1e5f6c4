"""The exceptions a kernel call raises, besides ``TypeError``/``ValueError`` for bad
arguments and the native ``PackageError``/``DeviceError``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._library import CallResult


class KernelError(RuntimeError):
    """A kernel ran and failed: some core's invocation status is not 0.

    Attributes
    ----------
    status : int
        The first failing core's invocation status (cores in order), e.g. ``0x40``, or
        ``0x10000 + n`` for a kernel's own code ``n``.
    status_name : str
        Its name: ``DTYPE_MISMATCH``, ``NO_MORE_ARGS``, ... or ``Op(n)`` (a kernel's own code n).
    statuses : list of int
        Every core's status, in core order.
    stdout : list of str
        What each core printed during the call, in core order.
    output : numpy.ndarray
        The output as the kernel left it; ``result.unwritten`` marks the elements it
        never wrote (they hold a canary: a NaN for floats, ``0xA5`` bytes for integers).
    result : CallResult
        Everything the call returned.
    """

    def __init__(self, kernel: str, result: "CallResult"):
        self.result = result
        self.status = result.status
        self.status_name = result.status_name
        self.statuses = result.statuses
        self.stdout = result.stdout
        self.output = result.output
        printed = "".join(result.stdout).strip()
        tail = f"; it printed:\n{printed}" if printed else ""
        super().__init__(f"kernel {kernel} failed with status {self.status_name} ({self.status:#x}){tail}")


class UnknownKernelError(AttributeError):
    """The library has no kernel of that name; the message lists the ones it has."""


# Shown as neuroncustomop.KernelError in tracebacks, where users import them from.
KernelError.__module__ = UnknownKernelError.__module__ = "neuroncustomop"
