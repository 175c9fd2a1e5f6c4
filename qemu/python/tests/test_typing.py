"""The native module's stub (``_native.pyi``) against the built module: the same
symbols, top level and per class."""

import ast
from pathlib import Path

import neuroncustomop
from neuroncustomop import _native

STUB = Path(neuroncustomop.__file__).with_name("_native.pyi")
# Names the stub defines for its own signatures, not the module's.
STUB_ONLY = {"TensorInput", "ScalarInput", "Input"}


def stub_names():
    """The stub's top-level names, and each class's members."""
    tree = ast.parse(STUB.read_text())
    names, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        elif isinstance(node, (ast.AnnAssign, ast.Assign)):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names - STUB_ONLY, members


def public(names):
    return {name for name in names if not name.startswith("_")}


def test_the_stub_names_every_native_symbol_and_no_other():
    names, members = stub_names()
    assert public(dir(_native)) == names
    for cls in ("Library", "RawCall"):
        assert public(vars(getattr(_native, cls))) == public(members[cls]), cls


def test_the_package_is_typed():
    assert STUB.with_name("py.typed").is_file()

