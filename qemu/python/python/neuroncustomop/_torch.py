"""A loaded library's ops as PyTorch operators, ``torch.ops.<namespace>.<op>``, through
``torch.library.custom_op``: the vendor's flow, where the library's registration
(``NEURON_LIBRARY(<namespace>, m)``) names them.

Each op gets
- a schema from its shape function's parameters: a C++ shape function's types
  (``torch::Tensor`` -> ``Tensor``; ``int``, ``int64_t`` -> ``int``; ``float``,
  ``double`` -> ``float``), or a Python shape function's annotations (``int``,
  ``float``; anything else a ``Tensor``), returning one ``Tensor``;
- a CPU kernel that runs the library's kernel on the simulated device, each scalar
  passed as the C kind its parameter has (an ``int64_t`` as a ``long long``, a
  ``double`` as the ``float`` the kernel ABI carries) and the output made a tensor;
- a fake kernel that runs only the shape function: what ``torch.compile``,
  ``torch.export`` and meta tensors see. Its sizes stay symbolic: a Python shape
  function runs on the fake tensors themselves; a C++ one runs on the host twice, with
  the sizes' hints and with other sizes, and each output size that follows one input
  size is that size (``torch.empty(x.sizes())`` keeps ``x``'s batch symbolic), each
  that stays put a constant; a rule beyond that (a product, a sum) specializes the
  sizes to the hints;
- with ``load(backward={op: backward_op})``, an autograd formula: the backward op
  called with the output's gradient and the forward op's inputs.

Calls take their options from :func:`neuroncustomop.options` and the library
(``load(..., checked=...)``); each result is :func:`neuroncustomop.last_result`.

An operator cannot be removed from PyTorch once defined, so one is defined per name
for the process; loading a library again (or another with the same op and schema)
rebinds it to the library loaded last.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from . import _args, _native, _options
from ._library import Library, _checked

SCHEMA_TYPES: dict[str, str] = _native.SCHEMA_TYPES
"""The schema type of each argument kind (the Rust ``cxx::ArgKind::schema_type``)."""

# The most a dimension of a device tensor can be (the descriptor's u16).
_MAX_DIM = 65535


class _Binding:
    """What one ``torch.ops`` operator calls: a kernel of the library loaded last."""

    def __init__(self, qualname: str, schema: str, library: Library, kernel: str, kinds: Sequence[str]):
        self.qualname = qualname
        self.schema = schema
        self.library = library
        self.kernel = kernel
        self.kinds = list(kinds)
        self.op: Any = None  # the torch.library.custom_op, once defined

    def inputs(self, args: Sequence[Any]) -> list:
        """The call's arguments as the NumPy path takes them: each scalar of the C kind
        its parameter has."""
        return [_scalar(kind, value) if kind != _args.TENSOR else value for kind, value in zip(self.kinds, args)]

    def cpu(self, *args: Any) -> torch.Tensor:
        kernel = self.library.kernel(self.kernel)
        raw, shape, dtype = kernel._call(self.inputs(args), None, None, _options.resolve(self.library))
        result = _checked(self.kernel, raw, shape, dtype)
        _options.delivered(self.qualname, result, raw.profile)
        return _tensor(raw.output, shape, dtype)

    def fake(self, *args: Any) -> torch.Tensor:
        device = next((value.device for value in args if isinstance(value, torch.Tensor)), None)
        shape_fn = self.library._shape_fns.get(self.kernel)
        if shape_fn is not None:
            # The author's Python shape function, on the fake tensors: their sizes,
            # symbolic ones included, make its output's.
            made = shape_fn(*self.inputs(args))
            shape, dtype = _args.shape_and_dtype(made)
            return torch.empty(tuple(shape), dtype=getattr(torch, _args.dtype_name(dtype, "the output")), device=device)
        hints = [_hinted(value) for value in args]
        shape, dtype = self._cxx_output(hints)
        sizes = self._symbolic(args, hints, shape)
        return torch.empty(sizes, dtype=getattr(torch, dtype), device=device)

    def _cxx_output(self, args: Sequence[Any]) -> tuple:
        """The C++ shape function's output ``(shape, dtype)`` for ``args`` (tensors as
        ``(dtype, sizes)``), run on the host."""
        inputs = self.inputs([value if not isinstance(value, _Sizes) else value.meta() for value in args])
        arguments = [_shape_only(value, index) for index, value in enumerate(inputs)]
        return self.library._output_of(self.kernel, inputs, arguments, None, None)

    def _symbolic(self, args: Sequence[Any], hints: Sequence[Any], shape: Sequence[int]) -> list:
        """The output's sizes with each one that follows an input's symbolic size that
        size (the module docstring), by a second run of the shape function with every
        symbolic size moved."""
        symbolic = [
            (index, dim, size)
            for index, value in enumerate(args)
            if isinstance(value, torch.Tensor)
            for dim, size in enumerate(value.shape)
            if not isinstance(size, int)
        ]
        if not symbolic:
            return list(shape)
        # Move each symbolic size to a value of its own, far from every hint.
        moved = [list(hint.sizes) if isinstance(hint, _Sizes) else hint for hint in hints]
        taken = {int(d) for hint in hints if isinstance(hint, _Sizes) for d in hint.sizes} | {int(d) for d in shape}
        probe = {}
        candidate = 2
        for index, dim, _ in symbolic:
            while candidate in taken:
                candidate += 1
            probe[(index, dim)] = candidate
            moved[index][dim] = candidate
            taken.add(candidate)
        moved_args = [_Sizes(hints[i].dtype, sizes) if isinstance(hints[i], _Sizes) else sizes for i, sizes in enumerate(moved)]
        try:
            moved_shape, _ = self._cxx_output(moved_args)
        except (ValueError, TypeError, RuntimeError):
            moved_shape = None
        if moved_shape is None or len(moved_shape) != len(shape):
            return [int(d) for d in _specialized(args, shape)]
        sizes: list = []
        for hinted, moved_size in zip(shape, moved_shape):
            followed = [(i, d, size) for i, d, size in symbolic if probe[(i, d)] == moved_size]
            if moved_size == hinted:
                sizes.append(int(hinted))  # a constant
            elif len(followed) == 1 and int(_hint_of(followed[0][2])) == hinted:
                sizes.append(followed[0][2])
            else:
                return [int(d) for d in _specialized(args, shape)]
        return sizes


class _Sizes:
    """A tensor argument of a shape query: its dtype and its sizes (hints of symbolic
    ones, or moved ones)."""

    def __init__(self, dtype: torch.dtype, sizes: Sequence[int]):
        self.dtype = dtype
        self.sizes = [int(d) for d in sizes]

    def meta(self) -> torch.Tensor:
        return torch.empty(self.sizes, dtype=self.dtype, device="meta")


def _hint_of(size: Any) -> int:
    """A size's concrete value: an int's own, a symbolic size's hint (without a guard)."""
    if isinstance(size, int):
        return size
    node = getattr(size, "node", None)
    hint = getattr(node, "hint", None)
    return int(hint) if hint is not None else int(size)


def _hinted(value: Any) -> Any:
    """An argument with each symbolic size replaced by its hint: a tensor as ``_Sizes``."""
    if isinstance(value, torch.Tensor):
        return _Sizes(value.dtype, [_hint_of(d) for d in value.shape])
    return value


def _specialized(args: Sequence[Any], shape: Sequence[int]) -> Sequence[int]:
    """``shape``, after specializing every symbolic input size to its value (a guard):
    an output size rule other than "follows one input size" is not known."""
    for value in args:
        if isinstance(value, torch.Tensor):
            for size in value.shape:
                int(size)  # on a symbolic size: its value, and a guard that keeps it
    return shape


_bindings: dict = {}
_lock = threading.Lock()


def register(library: Library, backward: Mapping[str, str]) -> None:
    """Defines (or rebinds) ``torch.ops.<namespace>.<op>`` for each op of ``library``
    that has a signature (module docstring), and the autograd formula of each op
    ``backward`` names.

    Raises
    ------
    ValueError
        An op of that name exists with another schema; ``backward`` names an op the
        library does not have, or one that does not take the gradient and the forward
        op's inputs.
    """
    with _lock:
        signatures = _signatures(library)
        for namespace, op, kinds in signatures:
            qualname = f"{namespace}::{op}"
            schema = "(" + ", ".join(f"{SCHEMA_TYPES[kind]} arg{i}" for i, kind in enumerate(kinds)) + ") -> Tensor"
            binding = _bindings.get(qualname)
            if binding is None:
                binding = _Binding(qualname, schema, library, op, kinds)
                _define(qualname, schema, binding)
                _bindings[qualname] = binding
            elif binding.schema != schema:
                raise ValueError(
                    f"torch.ops.{namespace}.{op} is already defined as {binding.schema} (library "
                    f"{binding.library.name}); {library.name} has it as {schema}: an operator cannot be "
                    f"redefined in a process, so rename one of them"
                )
            else:
                binding.library, binding.kernel, binding.kinds = library, op, list(kinds)
        kinds_of = {op: (namespace, kinds) for namespace, op, kinds in signatures}
        for forward, backward_op in backward.items():
            _register_autograd(library, kinds_of, forward, backward_op)


def _register_autograd(library: Library, kinds_of: Mapping[str, tuple], forward: str, backward_op: str) -> None:
    """The autograd formula of ``forward``: ``backward_op(grad, *inputs)`` is the
    gradient of its first input."""
    for name in (forward, backward_op):
        if name not in kinds_of:
            raise ValueError(f"backward={{{forward!r}: {backward_op!r}}}: {library.name} has no op {name} in torch.ops")
    namespace, kinds = kinds_of[forward]
    _, backward_kinds = kinds_of[backward_op]
    if backward_kinds != [_args.TENSOR, *kinds] or kinds[:1] != [_args.TENSOR]:
        raise ValueError(
            f"backward={{{forward!r}: {backward_op!r}}}: {backward_op} takes ({', '.join(backward_kinds)}), where the "
            f"gradient of {forward} ({', '.join(kinds)}) would take (tensor, {', '.join(kinds)}): the output's "
            f"gradient, then {forward}'s inputs"
        )
    backward_fn = getattr(getattr(torch.ops, namespace), backward_op)

    def setup_context(ctx: Any, inputs: tuple, output: Any) -> None:
        ctx.save_for_backward(*[value for value in inputs if isinstance(value, torch.Tensor)])
        ctx.scalars = [None if isinstance(value, torch.Tensor) else value for value in inputs]

    def gradient(ctx: Any, grad: torch.Tensor) -> tuple:
        saved = iter(ctx.saved_tensors)
        inputs = [next(saved) if scalar is None else scalar for scalar in ctx.scalars]
        return (backward_fn(grad.contiguous(), *inputs), *([None] * (len(inputs) - 1)))

    _bindings[f"{namespace}::{forward}"].op.register_autograd(gradient, setup_context=setup_context)


def _define(qualname: str, schema: str, binding: _Binding) -> None:
    def cpu(*args: Any) -> torch.Tensor:
        return binding.cpu(*args)

    def fake(*args: Any) -> torch.Tensor:
        return binding.fake(*args)

    op = torch.library.custom_op(qualname, cpu, mutates_args=(), device_types="cpu", schema=schema)
    op.register_fake(fake)
    binding.op = op


def _signatures(library: Library) -> list:
    """``(namespace, op, kinds)`` of each op that becomes a ``torch.ops`` operator."""
    registration = library._native.registration()
    if registration is not None:
        namespace, ops = registration
        return [(namespace, op, list(kinds)) for op, kinds in ops]
    return [(library.name, kernel, _args.kinds_of(shape_fn)) for kernel, shape_fn in library._shape_fns.items()]


def _tensor(data: np.ndarray, shape: Sequence[int], dtype: str) -> torch.Tensor:
    """The output's bytes as a tensor of ``shape`` and ``dtype`` (a device dtype's name),
    sharing them."""
    if data.size == 0:
        # PyTorch cannot view an empty buffer as another dtype (its stride is not 1).
        return torch.empty(tuple(shape), dtype=getattr(torch, dtype))
    return torch.from_numpy(data).view(getattr(torch, dtype)).reshape(tuple(shape))



def _scalar(kind: str, value: Any) -> Any:
    """A scalar argument as the NumPy path passes a C ``kind``."""
    if kind == _args.LONG:
        return np.int64(value)
    if kind in (_args.FLOAT, _args.DOUBLE):
        return float(value)
    return value


def _shape_only(value: Any, index: int) -> tuple:
    """The native argument of input ``index`` for a shape query: a tensor's dtype and
    shape with zero bytes."""
    if not isinstance(value, torch.Tensor):
        return _args.argument(value, index)
    name = str(value.dtype).removeprefix("torch.")
    shape = [int(d) for d in value.shape]
    return (_args.dtype_name(name, f"input {index}"), shape, np.zeros(int(value.numel()) * value.element_size(), np.uint8))
