"""How kernel calls run when the call itself does not say: :func:`options`, a context
manager for a block of calls (``torch.ops`` calls take no keywords), over the library's
own defaults (``load(..., checked=...)``), over the built-in ones.

The result of each ``torch.ops`` call (its findings' warnings, instruction counts,
profile) is :func:`last_result`, and goes to the ``on_result`` callback of the
innermost :func:`options` that has one.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Union

if TYPE_CHECKING:
    from ._library import CallResult, Library

OnResult = Callable[[str, "CallResult"], None]


@dataclass(frozen=True)
class CallOptions:
    """A call's options, as :meth:`Kernel.run` takes them; None: not said here."""

    cores: Optional[int] = None
    checked: Optional[bool] = None
    count_instructions: Optional[bool] = None
    max_instructions: Optional[int] = None
    profile: Optional[bool] = None
    partial_output: Optional[bool] = None

    def over(self, defaults: "CallOptions") -> "CallOptions":
        """These options, each one not said taken from ``defaults``."""
        said = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        return replace(defaults, **said)


@dataclass(frozen=True)
class _Block:
    """What one ``with options(...)`` says, merged with the blocks around it."""

    options: CallOptions = CallOptions()
    on_result: Optional[OnResult] = None
    # Where each torch.ops call's profile is written (options(profile=DIR)).
    profile_dir: Optional[str] = None


_block: contextvars.ContextVar[_Block] = contextvars.ContextVar("neuroncustomop_options", default=_Block())
_last = threading.local()

BUILT_IN = CallOptions(checked=True, count_instructions=False, profile=False, partial_output=False)
"""The defaults of :meth:`Kernel.run`; ``cores`` is the library's (``Library.cores``)."""


@contextlib.contextmanager
def options(
    *,
    cores: Optional[int] = None,
    checked: Optional[bool] = None,
    count_instructions: Optional[bool] = None,
    max_instructions: Optional[int] = None,
    profile: Union[bool, str, "os.PathLike[str]", None] = None,
    partial_output: Optional[bool] = None,
    on_result: Optional[OnResult] = None,
) -> Iterator[None]:
    """Options for every kernel call in the ``with`` block (in this thread or task)
    that does not give its own: ``torch.ops.<namespace>.<op>`` calls, which take no
    keywords, and NumPy calls.

    Each option is :meth:`Kernel.run`'s; one not given (None) is the enclosing
    block's, else the library's (``load(..., checked=...)``), else the built-in
    default. Blocks nest.

    Parameters
    ----------
    cores, checked, count_instructions, max_instructions, partial_output
        As for :meth:`Kernel.run`.
    profile : bool or path, optional
        As for :meth:`Kernel.run`; a folder also gets each ``torch.ops`` call's
        profile written as ``ncop run --profile DIR`` writes one, in
        ``<folder>/<namespace>.<op>-<n>/`` (n counting from 1): the flame graph, the
        trace, the annotated source, ``profile.json`` (``ncop profile diff A B``
        compares two).
    on_result : callable, optional
        Called after each ``torch.ops`` call in the block that returned, with the op's
        qualified name (``my_ops::relu_forward``) and its :class:`CallResult` (its
        ``warnings``, ``instructions``, ``profile``, ...).

    Examples
    --------
    >>> with neuroncustomop.options(checked=False, cores=8):       # doctest: +SKIP
    ...     y = torch.ops.my_ops.relu_forward(x)
    >>> neuroncustomop.last_result().instructions                 # doctest: +SKIP
    """
    profile_dir = None
    if profile is not None and not isinstance(profile, bool):
        profile_dir = os.path.abspath(os.fspath(profile))
    profiled = None if profile is None else bool(profile_dir or profile)
    said = CallOptions(cores, checked, count_instructions, max_instructions, profiled, partial_output)
    if cores is not None and not 1 <= cores <= _cores():
        raise ValueError(f"cores={cores}: from 1 to {_cores()}")
    outer = _block.get()
    block = _Block(said.over(outer.options), on_result or outer.on_result, profile_dir or outer.profile_dir)
    token = _block.set(block)
    try:
        yield
    finally:
        _block.reset(token)


def _cores() -> int:
    from ._native import CORES

    return CORES


def resolve(library: "Library", said: CallOptions = CallOptions()) -> CallOptions:
    """Every option of a call of ``library``'s kernel: what the call ``said``, then the
    :func:`options` blocks around it, then the library's defaults, then the built-in
    ones."""
    defaults = library.defaults.over(replace(BUILT_IN, cores=library.cores))
    return said.over(_block.get().options.over(defaults))


def delivered(op: str, result: "CallResult", profile_json: Optional[str]) -> None:
    """A ``torch.ops`` call of ``op`` returned ``result`` (and its profile as the native
    call gave it): it becomes :func:`last_result`, its profile is written into the
    block's folder, and it goes to the block's ``on_result``."""
    _last.result = result
    block = _block.get()
    if block.profile_dir is not None and profile_json is not None:
        from ._native import write_profile

        with _profiles_lock:
            _profiles[op] = _profiles.get(op, 0) + 1
            folder = os.path.join(block.profile_dir, f"{op.replace('::', '.')}-{_profiles[op]}")
        write_profile(profile_json, folder)
    if block.on_result is not None:
        block.on_result(op, result)


# Profiles written per op in this process, to number their folders.
_profiles: dict = {}
_profiles_lock = threading.Lock()


def last_result() -> Optional["CallResult"]:
    """The :class:`CallResult` of this thread's last ``torch.ops`` call that returned
    (None before the first): its warnings, per-core instruction counts, device time and,
    under ``options(profile=True)``, its profile. A call that raised carries its result
    in the exception (``KernelError.result``)."""
    return getattr(_last, "result", None)
