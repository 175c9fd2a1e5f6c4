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
  ``torch.export`` and meta tensors see.

An operator cannot be removed from PyTorch once defined, so one is defined per name
for the process; loading a library again (or another with the same op and schema)
rebinds it to the library loaded last.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Sequence

import numpy as np
import torch

from . import _args, _native
from ._library import Library, _checked

SCHEMA_TYPES: dict[str, str] = _native.SCHEMA_TYPES
"""The schema type of each argument kind (the Rust ``cxx::ArgKind::schema_type``)."""


class _Binding:
    """What one ``torch.ops`` operator calls: a kernel of the library loaded last."""

    def __init__(self, schema: str, library: Library, kernel: str, kinds: Sequence[str]):
        self.schema = schema
        self.library = library
        self.kernel = kernel
        self.kinds = list(kinds)

    def inputs(self, args: Sequence[Any]) -> list:
        """The call's arguments as the NumPy path takes them: each scalar of the C kind
        its parameter has."""
        return [_scalar(kind, value) if kind != _args.TENSOR else value for kind, value in zip(self.kinds, args)]

    def cpu(self, *args: Any) -> torch.Tensor:
        kernel = self.library.kernel(self.kernel)
        raw, shape, dtype = kernel._call(self.inputs(args), None, None, None, False)
        _checked(self.kernel, raw, shape, dtype)
        return torch.from_numpy(raw.output).view(getattr(torch, dtype)).reshape(shape)

    def fake(self, *args: Any) -> torch.Tensor:
        inputs = self.inputs(args)
        shape_fn = self.library._shape_fns.get(self.kernel)
        if shape_fn is not None:
            shape, dtype = self.library._output_of(self.kernel, inputs, [], None, None)
        else:
            # The C++ shape function reads shapes and dtypes only: zero bytes stand in
            # for the data a fake tensor does not have.
            arguments = [_shape_only(value, index) for index, value in enumerate(inputs)]
            shape, dtype = self.library._output_of(self.kernel, inputs, arguments, None, None)
        device = next((value.device for value in args if isinstance(value, torch.Tensor)), None)
        return torch.empty(shape, dtype=getattr(torch, dtype), device=device)


_bindings: dict = {}
_lock = threading.Lock()


def register(library: Library) -> None:
    """Defines (or rebinds) ``torch.ops.<namespace>.<op>`` for each op of ``library``
    that has a signature (module docstring).

    Raises
    ------
    ValueError
        An op of that name exists with another schema.
    """
    with _lock:
        for namespace, op, kinds in _signatures(library):
            qualname = f"{namespace}::{op}"
            schema = "(" + ", ".join(f"{SCHEMA_TYPES[kind]} arg{i}" for i, kind in enumerate(kinds)) + ") -> Tensor"
            binding = _bindings.get(qualname)
            if binding is None:
                binding = _Binding(schema, library, op, kinds)
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


def _define(qualname: str, schema: str, binding: _Binding) -> None:
    def cpu(*args: Any) -> torch.Tensor:
        return binding.cpu(*args)

    def fake(*args: Any) -> torch.Tensor:
        return binding.fake(*args)

    op = torch.library.custom_op(qualname, cpu, mutates_args=(), device_types="cpu", schema=schema)
    op.register_fake(fake)


def _signatures(library: Library) -> list:
    """``(namespace, op, kinds)`` of each op that becomes a ``torch.ops`` operator."""
    registration = library._native.registration()
    if registration is not None:
        namespace, ops = registration
        return [(namespace, op, list(kinds)) for op, kinds in ops]
    return [(library.name, kernel, _kinds_of(shape_fn)) for kernel, shape_fn in library._shape_fns.items()]


def _kinds_of(shape_fn: Any) -> list:
    """The argument kinds of a Python shape function, from its annotations."""
    kinds = []
    for parameter in inspect.signature(shape_fn).parameters.values():
        annotation = parameter.annotation
        # A string under `from __future__ import annotations`.
        if annotation in (int, int.__name__):
            kinds.append(_args.INT)
        elif annotation in (float, float.__name__):
            kinds.append(_args.FLOAT)
        else:
            kinds.append(_args.TENSOR)
    return kinds


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
