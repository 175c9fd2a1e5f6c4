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
class Instruction:
    """One instruction (PC) of the call on one core: how often it ran, its
    disassembly, its inline chain (``frames``, outermost first), its source line,
    its loads and stores per region, and of its runs how many (``waiting``) were
    waits for the DMA engine."""

    pc: int
    executed: int
    mnemonic: str
    text: Optional[str]
    frames: list
    file: Optional[str]
    line: Optional[int]
    memory: dict
    waiting: int
    class_: str = ""

    @staticmethod
    def from_dict(data: dict) -> "Instruction":
        """The instruction the native half serialized (``class`` is a keyword)."""
        data = dict(data)
        data["class_"] = data.pop("class")
        return Instruction(**data)


@dataclass(frozen=True)
class Line:
    """One source line's part of the call: its instructions (``waiting`` of them
    waits for the DMA engine), loads and stores per region, and predicted device
    cycles under the shipped cost model; the same table as the host API's
    ``Profile::lines`` and ``ncop run --profile``'s hot lines."""

    file: str
    line: int
    function: str
    instructions: int
    waiting: int
    memory: dict
    cycles: float


@dataclass(frozen=True)
class Call:
    """One call of a function on one core, as it ran: a function span of the
    profile's ``trace.json``. ``depth`` 1 is a function the loader called (the
    kernel's entry); ``start`` is the core's instructions before the call,
    ``instructions`` its own and its callees'."""

    name: str
    depth: int
    start: int
    instructions: int


@dataclass(frozen=True)
class RangePass:
    """One pass through an author's range on one core (``NCOP_RANGE_BEGIN`` to
    ``NCOP_RANGE_END``, ``neuroncustomop::range_begin!`` to ``range_end!``):
    ``start`` is the core's instructions before it, ``instructions`` its own and
    those of the functions it called; ``unclosed`` means the op ended before its
    end marker."""

    name: str
    start: int
    instructions: int
    unclosed: bool


@dataclass(frozen=True)
class CoreProfile:
    """One core's profile of the call.

    ``mix`` maps an instruction class (``alu``, ``mul_div``, ``fpu``,
    ``fpu_divide``, ``fpu_move``, ``load``, ``store``, ``branch``, ``call``,
    ``system``) to its instructions; ``memory`` a region (``local_ram``,
    ``image``, ``stack``, ``hbm``, ``hbm_scratch``, ``dma_queues``, ``other``) to
    ``{"loads": n, "stores": n}``; ``pcs`` lists an :class:`Instruction` per PC
    and ``lines`` a :class:`Line` per source line, most instructions first;
    ``waiting`` counts the instructions of waits for the DMA engine (idle to the
    cost model); ``elements_written`` is how many
    output elements this core stored to (None when it could not be told);
    ``inclusive`` lists :class:`Inclusive` figures, most first, without the
    functions every call path starts with (the kernel's entry: all of the op);
    ``calls`` lists a :class:`Call` per call, in the order they began, down to
    ``calls_depth`` (``calls_dropped`` deeper ones were too many to keep);
    ``ranges`` a :class:`RangePass` per pass through an author's range.
    """

    core: int
    instructions: int
    functions: list
    stacks: list
    pcs: list
    lines: list
    inclusive: list
    mix: dict
    waiting: int
    in_runtime: int
    in_libm: int
    memory: dict
    dma_bytes: int
    dma_transfers: int
    events: list
    dropped_events: int
    elements_written: Optional[int] = None
    calls: list = field(default_factory=list)
    calls_depth: int = 0
    calls_dropped: int = 0
    ranges: list = field(default_factory=list)


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
            core["pcs"] = [Instruction.from_dict(i) for i in core["pcs"]]
            core["lines"] = [Line(**line) for line in core["lines"]]
            core["calls"] = [Call(**c) for c in core.get("calls", [])]
            core["ranges"] = [RangePass(**r) for r in core.get("ranges", [])]
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

    def lines(self, n: Optional[int] = None) -> list:
        """The per-line table over every core (each core's :attr:`CoreProfile.lines`
        summed by file and line), most instructions first, as :class:`Line`; the
        first ``n`` when given."""
        table: dict = {}
        for line in (line for core in self.cores for line in core.lines):
            key = (line.file, line.line)
            if key not in table:
                table[key] = Line(line.file, line.line, line.function, 0, 0, {}, 0.0)
            old = table[key]
            memory = {r: dict(a) for r, a in old.memory.items()}
            for region, accesses in line.memory.items():
                into = memory.setdefault(region, {"loads": 0, "stores": 0})
                into["loads"] += accesses["loads"]
                into["stores"] += accesses["stores"]
            table[key] = Line(
                old.file,
                old.line,
                old.function,
                old.instructions + line.instructions,
                old.waiting + line.waiting,
                memory,
                old.cycles + line.cycles,
            )
        ranked = sorted(table.values(), key=lambda l: (-l.instructions, l.file, l.line))
        return ranked if n is None else ranked[:n]

    def _rank(self, figures: Any, n: int) -> list:
        sums: dict = {}
        for figure in figures:
            sums[figure.name] = sums.get(figure.name, 0) + figure.instructions
        total = max(self.instructions, 1)
        ranked = sorted(sums.items(), key=lambda item: (-item[1], item[0]))[:n]
        return [(name, count, count / total) for name, count in ranked]
