"""The exceptions a kernel call raises, besides ``TypeError``/``ValueError`` for bad
arguments and the native ``PackageError``/``DeviceError`` (a device that could not run
the op at all)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:
    from ._library import CallResult


class KernelError(RuntimeError):
    """A kernel ran and failed: some core's invocation status is not 0, or the kernel
    stopped without returning (a panic, an exception, ``abort``/``exit``, its
    instruction budget). ``DeviceError`` is only for a device that could not run at all.

    Attributes
    ----------
    status : int or None
        The first failing core's invocation status (cores in order), e.g. ``0x40``, or
        ``0x10000 + n`` for a kernel's own code ``n``; ``None`` when the kernel stopped.
    status_name : str
        What failed, never ``OK``: the status' name, ``DTYPE_MISMATCH``,
        ``NO_MORE_ARGS``, ... or ``Op(n)`` (a kernel's own code n); for a stopped
        kernel, how it stopped: ``exit(101) EXIT_PANIC``, ``exception(3)
        EXIT_EXCEPTION``, ``abort``, ``over-budget``; when every core returned 0, the
        memory checks' first error, by its finding kind (``oob-store``, one of
        ``FINDING_KINDS``: a subclass of ``FindingsError``) or ``unwritten output``
        (``UnwrittenOutputError``).
    status_detail : str or None
        When the runtime knows the argument behind the status, which and why:
        ``argument 3: pulled as float, passed as int`` (arguments count from 0); for a
        C++ library's failure, the line the runtime printed as it ended the op, with the
        kernel's ``file:line`` where the check has one (``torch: accessor<T, N> at
        relu.cpp:12 (relu_forward): argument 0 holds int64, but T is float32``). The
        message shows it after the status. None otherwise.
    stopped : bool
        Whether the kernel stopped without returning.
    statuses : list of int
        Every core's status, in core order (empty when the kernel stopped).
    stdout : list of str
        What each core printed during the call, in core order; a panic's message too.
    report : str
        The whole account, as the exception's message: the status and what the
        kernel printed; for a stopped kernel, also where (function, ``file:line``,
        backtrace) and the heap blocks the device gave back.
    output : numpy.ndarray or None
        The output as the kernel left it (``None`` when it stopped);
        ``result.unwritten`` marks the elements it never wrote (they hold a canary: a
        NaN for floats, ``0xA5`` bytes for integers).
    result : CallResult or None
        Everything the call returned (``None`` when the kernel stopped).
    findings : list
        What the device's checks found wrong in the call (empty unless a check
        raised a subclass of this error).
    """

    def __init__(
        self,
        kernel: str,
        result: Optional["CallResult"] = None,
        *,
        stop: Optional[str] = None,
        stdout: Sequence[str] = (),
        report: str = "",
        findings: Sequence[Any] = (),
    ):
        self.kernel = kernel
        self.result = result
        self.findings = list(findings)
        self.stopped = result is None
        if result is not None:
            self.status: Optional[int] = result.status
            self.status_name = result.status_name
            self.status_detail: Optional[str] = result.status_detail
            self.statuses = list(result.statuses)
            self.stdout = list(result.stdout)
            self.output = result.output
            printed = "".join(result.stdout).strip()
            if self.status_detail and printed.endswith(self.status_detail):
                # A C++ failure's detail is the line the runtime printed last: said once.
                printed = printed[: -len(self.status_detail)].strip()
            tail = f"; it printed:\n{printed}" if printed else ""
            detail = f": {self.status_detail}" if self.status_detail else ""
            self.report = f"kernel {kernel} failed with status {self.status:#x} {self.status_name}{detail}{tail}"
        else:
            self.status = None
            self.status_name = stop or "stopped"
            self.status_detail = None
            self.statuses = []
            self.stdout = list(stdout)
            self.output = None
            self.report = report or f"kernel {kernel} stopped: {self.status_name}"
        super().__init__(self.report)


class UnwrittenOutputError(KernelError):
    """Every core returned 0, but elements of the output were never written: they still
    hold the canary the output was filled with. The message says how many, and which
    cores wrote nothing (a kernel written for 8 cores run on 1, say). ``result.unwritten``
    marks them. A kernel that writes part of its output on purpose passes
    ``partial_output=True``."""

    def __init__(self, kernel: str, result: "CallResult", message: str):
        super().__init__(kernel, result)
        self.status_name = "unwritten output"  # every core returned 0 (OK): not what failed
        # The message is the host API's, which ncop prints too: its hints name the
        # command line's and Rust's options; a Python caller (or torch.ops, which takes
        # no cores=) needs these.
        python = "in Python: cores=8, or load(..., multicore=True) for every call and torch.ops; partial_output=True"
        self.args = (f"kernel {kernel}: {message} ({python})",)


class UnknownKernelError(AttributeError):
    """The library has no kernel of that name; the message lists the ones it has."""


# Shown as neuroncustomop.KernelError in tracebacks, where users import them from.
KernelError.__module__ = UnwrittenOutputError.__module__ = UnknownKernelError.__module__ = "neuroncustomop"
