"""The memory checks' findings as exceptions: each a :class:`KernelError` with
``.findings``, raised by a checked call (the default) whose kernel touched memory its
op was not given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._errors import KernelError

if TYPE_CHECKING:
    from ._library import CallResult


@dataclass(frozen=True)
class Finding:
    """One thing the checks found wrong.

    Attributes
    ----------
    kind : str
        ``out-of-bounds store``, ``store into an input``, ``store into another core's
        image``, ``out-of-bounds load``, ``race`` or ``semihosting call``.
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
        shown = "\n".join(str(finding) for finding in findings)
        more = f"\n... and {total - len(findings)} more" if total > len(findings) else ""
        self.args = (f"kernel {kernel}: the memory checks found {total} problem(s):\n{shown}{more}",)


class OutOfBoundsError(FindingsError):
    """A load or store outside what the op was given: past an output, into an input,
    into another core's image."""


class RaceError(FindingsError):
    """Two cores wrote the same output bytes in one op."""


class SandboxError(FindingsError):
    """The kernel made a semihosting call (``simcall``): a request to the host running
    the simulation, which the device does not serve."""


def raise_for(kernel: str, result: "CallResult", raw: Any) -> None:
    """Raises the error for the first finding of ``raw`` (a native ``RawCall``), if any."""
    findings = [Finding(kind, core, text, tuple(backtrace)) for kind, core, text, backtrace in raw.findings]
    if not findings:
        return
    errors = {"race": RaceError, "semihosting call": SandboxError}
    error = errors.get(findings[0].kind, OutOfBoundsError)
    raise error(kernel, result, findings, raw.findings_total)


# Shown as neuroncustomop.<Name> in tracebacks, where users import them from.
for _error in (Finding, FindingsError, OutOfBoundsError, RaceError, SandboxError):
    _error.__module__ = "neuroncustomop"
