"""``CallResult.profile``: where a call's instructions went, as the host API's
``Profile`` gives it (``neuroncustomop_profile::profile``), field for field."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class Function:
    """Instructions run at the PCs of one function (an inlined one named itself)."""

    name: str
    file: Optional[str]
    instructions: int


@dataclass(frozen=True)
class Stack:
    """Instructions run with one call path on top (outermost frame first)."""

    frames: list
    instructions: int


@dataclass(frozen=True)
class Inclusive:
    """Instructions of one function and of everything it called: every call path
    through it, each once (a function inlined into another counts in that one)."""

    name: str
    instructions: int


@dataclass(frozen=True)
class CoreProfile:
    """One core's profile of the call.

    ``mix`` maps an instruction class (``alu``, ``mul_div``, ``fpu``, ``load``,
    ``store``, ``branch``, ``call``, ``system``) to its instructions; ``memory`` a
    region (``local_ram``, ``image``, ``hbm``, ``hbm_scratch``, ``dma_queues``,
    ``other``) to ``{"loads": n, "stores": n}``; ``elements_written`` is how many
    output elements this core stored to (None when it could not be told);
    ``inclusive`` lists :class:`Inclusive` figures, most first, without the
    functions every call path starts with (the kernel's entry: all of the op).
    """

    core: int
    instructions: int
    functions: list
    stacks: list
    inclusive: list
    mix: dict
    in_runtime: int
    in_libm: int
    memory: dict
    dma_bytes: int
    dma_transfers: int
    events: list
    dropped_events: int
    elements_written: Optional[int] = None


@dataclass(frozen=True)
class Profile:
    """A call's profile: :attr:`cores`, one :class:`CoreProfile` each, in core order."""

    kernel: str
    cores: list = field(default_factory=list)

    @staticmethod
    def from_json(text: str) -> "Profile":
        """The profile the native half serialized."""
        data: Any = json.loads(text)
        cores = []
        for core in data["cores"]:
            core = dict(core)
            core["functions"] = [Function(**f) for f in core["functions"]]
            core["stacks"] = [Stack(**s) for s in core["stacks"]]
            core["inclusive"] = [Inclusive(**f) for f in core["inclusive"]]
            cores.append(CoreProfile(**core))
        return Profile(kernel=data["kernel"], cores=cores)

    @property
    def instructions(self) -> int:
        """All the cores' instructions."""
        return sum(core.instructions for core in self.cores)

    def top(self, n: int = 5) -> list:
        """The ``n`` functions with the most instructions of their own over every
        core, as ``(name, instructions, share)``, most first."""
        return self._rank((f for core in self.cores for f in core.functions), n)

    def top_inclusive(self, n: int = 5) -> list:
        """The ``n`` functions with the most instructions in them and all they
        called over every core (:attr:`CoreProfile.inclusive`), as ``(name,
        instructions, share)``, most first: where the call's time goes."""
        return self._rank((f for core in self.cores for f in core.inclusive), n)

    def _rank(self, figures: Any, n: int) -> list:
        sums: dict = {}
        for figure in figures:
            sums[figure.name] = sums.get(figure.name, 0) + figure.instructions
        total = max(self.instructions, 1)
        ranked = sorted(sums.items(), key=lambda item: (-item[1], item[0]))[:n]
        return [(name, count, count / total) for name, count in ranked]
