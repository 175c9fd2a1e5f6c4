"""``python -m neuroncustomop SCRIPT.py [ARGS...]``: runs an AWS Neuron custom-op script
as it is written, its ``torch_neuronx`` served by this package.

The vendor's scripts import ``torch_neuronx`` and ``from torch_neuronx.xla_impl import
custom_op``. Under the runner, an import hook (a finder at the end of ``sys.meta_path``)
serves those modules when no real ``torch_neuronx`` is installed: ``custom_op`` is this
package's ``load`` / ``load_library`` (the ops become ``torch.ops.<namespace>.<op>`` on
the simulated device). A real ``torch_neuronx`` is always the one imported: the hook is
installed only when none is found, and after every other finder. Outside the runner,
nothing is served.

A process the script starts with ``multiprocessing``'s spawn (or ``subprocess``) runs
without the hook; forked ones keep it.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import types
from typing import Optional, Sequence

VENDOR = "torch_neuronx"
"""The vendor's package, whose custom-op part the runner serves."""

# What the hook serves, each with its docstring. Packages get a __path__.
_SERVED = {
    VENDOR: "neuroncustomop's stand-in for torch_neuronx (python -m neuroncustomop): only its custom-op part.",
    f"{VENDOR}.xla_impl": "neuroncustomop's stand-in for torch_neuronx.xla_impl: the custom_op module.",
    f"{VENDOR}.xla_impl.custom_op": (
        "neuroncustomop's load and load_library, as torch_neuronx.xla_impl.custom_op: the ops run on the "
        "simulated device."
    ),
}
_PACKAGES = {VENDOR, f"{VENDOR}.xla_impl"}


class _VendorModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The finder and loader of the modules in ``_SERVED``."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: object = None):
        if fullname not in _SERVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=fullname in _PACKAGES)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
        return None  # the default module

    def exec_module(self, module: types.ModuleType) -> None:
        module.__doc__ = _SERVED[module.__name__]
        if module.__name__ == f"{VENDOR}.xla_impl.custom_op":
            from ._load import load, load_library

            module.load, module.load_library = load, load_library
            module.__all__ = ["load", "load_library"]


def vendor_installed() -> bool:
    """Whether a real ``torch_neuronx`` can be imported (the hook not counted)."""
    if VENDOR in sys.modules:
        return not isinstance(getattr(sys.modules[VENDOR], "__loader__", None), _VendorModules)
    hooks = [finder for finder in sys.meta_path if isinstance(finder, _VendorModules)]
    for hook in hooks:
        sys.meta_path.remove(hook)
    try:
        return importlib.util.find_spec(VENDOR) is not None
    finally:
        sys.meta_path.extend(hooks)


def serve_vendor_modules() -> bool:
    """Serves ``torch_neuronx``'s custom-op modules for this process, unless a real
    ``torch_neuronx`` is installed; returns whether the hook is on."""
    if vendor_installed():
        return False
    if not any(isinstance(finder, _VendorModules) for finder in sys.meta_path):
        sys.meta_path.append(_VendorModules())
    return True


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m neuroncustomop",
        description=(
            "Run an AWS Neuron custom-op script unchanged: its `import torch_neuronx` and "
            "`from torch_neuronx.xla_impl import custom_op` get this package's load and load_library, "
            "and its torch.ops run on the simulated device. A real torch_neuronx, when installed, "
            "is used instead."
        ),
        epilog="Example: python -m neuroncustomop build.py && python -m neuroncustomop train.py --epochs 1",
    )
    parser.add_argument("script", help="the Python script to run, as `python SCRIPT.py` would")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Runs the script ``argv`` names (``sys.argv[1:]`` by default) as ``__main__``,
    with ``sys.argv`` and ``sys.path[0]`` as ``python SCRIPT.py ARGS`` sets them."""
    options = _parser().parse_args(argv)
    script = os.path.abspath(options.script)
    if not os.path.isfile(script):
        _parser().error(f"{options.script}: no such file (give the script's path, e.g. build.py)")
    if not serve_vendor_modules():
        print(f"python -m neuroncustomop: a real {VENDOR} is installed; the script uses it", file=sys.stderr)
    sys.argv = [options.script, *options.args]
    sys.path[0] = os.path.dirname(script)
    runpy.run_path(script, run_name="__main__")
