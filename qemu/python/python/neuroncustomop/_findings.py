"""The memory checks' findings as exceptions: each a :class:`KernelError` with
``.findings``, raised by a checked call (the default) whose kernel touched memory its
op was not given or misused its heap; and their warnings (a leaked block, a read of
memory never written), given to ``warnings.warn`` and kept in ``CallResult.warnings``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _native
from ._errors import KernelError

if TYPE_CHECKING:
    from ._library import CallResult


FINDING_KINDS: tuple[str, ...] = _native.FINDING_KINDS
"""Every finding kind's stable name (``oob-store``, ``race``, ``heap-outside``, ...):
what :attr:`Finding.kind` holds, and what code branches on."""


@dataclass(frozen=True)
class Finding:
    """One thing the checks found wrong.

    Attributes
    ----------
    kind : str
        Its stable name, one of :data:`FINDING_KINDS`: ``oob-store``, ``input-store``,
        ``cross-core-store``, ``oob-load``, ``race``, ``simcall``, ``use-after-free``,
        ``heap-outside``, ``double-free``, ``invalid-free``, ``leak``, ``uninit-read``.
        Branch on it, not on ``text``, whose words may change.
    severity : str
        ``"error"``: the call raised a :class:`FindingsError` for it; or
        ``"warning"`` (a leak, a read of uninitialized memory): the call returned, and
        gave it to ``warnings.warn`` as a :class:`CheckWarning`.
    core : int
        The core whose kernel did it.
    text : str
        What, where (a region and offset: ``12 bytes past the end of output 0 ([64, 128]
        float32)``, ``input 1, element [3, 17]``), the source line and the backtrace.
    backtrace : tuple of str
        The call sites that led there, innermost first, each as function and
        ``file:line``.
    """

    kind: str
    severity: str
    core: int
    text: str
    backtrace: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.text


class FindingsError(KernelError):
    """The memory checks found problems; ``findings`` lists the first ten of the op,
    ``findings_total`` counts them all."""

    def __init__(self, kernel: str, result: "CallResult", findings: list[Finding], total: int):
        super().__init__(kernel, result)
        self.findings = findings
        self.findings_total = total
        if self.status == 0:
            # Every core returned 0: what failed the call is the checks' first error.
            self.status_name = next((f.kind for f in findings if f.severity == "error"), "memory check")
        shown = "\n".join(_listed(finding) for finding in findings)
        more = f"\n... and {total - len(findings)} more" if total > len(findings) else ""
        self.args = (f"kernel {kernel}: the memory checks found {total} problem(s):\n{shown}{more}",)


class OutOfBoundsError(FindingsError):
    """A load or store outside what the op was given: past an output, into an input,
    into another core's memory."""


class RaceError(FindingsError):
    """Two cores wrote the same output bytes in one op."""


class SandboxError(FindingsError):
    """The kernel made a semihosting call (``simcall``): a request to the host running
    the simulation, which the device does not serve."""


class HeapError(FindingsError):
    """The kernel misused its heap: an access outside every live block (past a
    block's end), a double free, a free of a pointer the heap did not give out."""


class UseAfterFreeError(HeapError):
    """A load or store into a heap block freed earlier."""


class CheckWarning(UserWarning):
    """A warning of the memory checks: the call returned, but something is likely
    wrong. ``finding`` is the :class:`Finding`."""

    def __init__(self, kernel: str, finding: Finding):
        super().__init__(f"kernel {kernel}: {finding}")
        self.finding = finding


class LeakWarning(CheckWarning):
    """A heap block the op allocated and still held when it ended."""


class UninitializedReadWarning(CheckWarning):
    """A load of heap bytes never written since their block was allocated."""


# The error or warning class of each finding kind, by its stable name (the native
# module's FINDING_KINDS; tests/test_typing.py checks that every kind has its class
# here, and that no kind is named by the host's English). A kind added on the Rust side
# and not yet here raises the base class of its severity.
_ERRORS: dict[str, type[FindingsError]] = {
    "oob-store": OutOfBoundsError,
    "input-store": OutOfBoundsError,
    "cross-core-store": OutOfBoundsError,
    "oob-load": OutOfBoundsError,
    "race": RaceError,
    "simcall": SandboxError,
    "use-after-free": UseAfterFreeError,
    "heap-outside": HeapError,
    "double-free": HeapError,
    "invalid-free": HeapError,
}
_WARNINGS: dict[str, type[CheckWarning]] = {
    "leak": LeakWarning,
    "uninit-read": UninitializedReadWarning,
}


def _findings(raw: Any) -> list[Finding]:
    return [
        Finding(kind, severity, core, text, tuple(backtrace))
        for kind, severity, core, text, backtrace in raw.findings
    ]


def _listed(finding: Finding) -> str:
    """A finding in an error's list, a warning labelled as the host's list labels it."""
    return f"warning: {finding}" if finding.severity == "warning" else str(finding)


def warnings_of(raw: Any) -> list[Finding]:
    """The warnings among the first findings of ``raw`` (a native ``RawCall``)."""
    return [finding for finding in _findings(raw) if finding.severity == "warning"]


def raise_for(kernel: str, result: "CallResult", raw: Any) -> None:
    """Raises the error for the first finding of ``raw`` (a native ``RawCall``) that is
    not a warning, if any; else gives each warning to ``warnings.warn``."""
    findings = _findings(raw)
    errors = [finding for finding in findings if finding.severity == "error"]
    if errors:
        error = _ERRORS.get(errors[0].kind, FindingsError)
        raise error(kernel, result, findings, raw.findings_total)
    for finding in findings:
        warnings.warn(_WARNINGS.get(finding.kind, CheckWarning)(kernel, finding), stacklevel=4)


# Shown as neuroncustomop.<Name> in tracebacks, where users import them from.
for _error in (
    Finding,
    FindingsError,
    OutOfBoundsError,
    RaceError,
    SandboxError,
    HeapError,
    UseAfterFreeError,
    CheckWarning,
    LeakWarning,
    UninitializedReadWarning,
):
    _error.__module__ = "neuroncustomop"
