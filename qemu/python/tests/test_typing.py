"""The native module's stub (``_native.pyi``) against the built module: the same
symbols, top level and per class, and signatures that mypy's stubtest finds agreeing;
and the Python half's argument kinds and finding kinds against the native module's
one list of each."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import neuroncustomop
from neuroncustomop import _args, _findings, _native

STUB = Path(neuroncustomop.__file__).with_name("_native.pyi")


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
    return names, members


def public(names):
    return {name for name in names if not name.startswith("_")}


def test_the_stub_names_every_native_symbol_and_no_other():
    names, members = stub_names()
    # Private names are the stub's own (its aliases), or the module's machinery.
    assert public(dir(_native)) == public(names)
    for cls in ("Library", "RawCall"):
        assert public(vars(getattr(_native, cls))) == public(members[cls]), cls


def test_the_package_is_typed():
    assert STUB.with_name("py.typed").is_file()



def test_the_python_half_names_argument_kinds_as_the_native_module_does():
    assert len(_native.ARG_KINDS) == len(set(_native.ARG_KINDS)) == 5
    for kind in _native.ARG_KINDS:
        assert getattr(_args, kind.upper()) == kind, "_args unpacks ARG_KINDS in another order"
    assert list(_native.SCHEMA_TYPES) == list(_native.ARG_KINDS)
    # No other spelling of a kind: no string literal that is one, outside docstrings.
    kinds = set(_native.ARG_KINDS) | {"long long"}
    for module in ("_args.py", "_torch.py", "_library.py"):
        tree = ast.parse(STUB.with_name(module).read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) is not None
        }
        literals = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and id(node) not in docstrings and node.value in kinds
        ]
        assert literals == [], f"{module} spells argument kinds itself: {literals}"


def string_literals(module):
    """The string constants of a module of the package, outside docstrings."""
    tree = ast.parse(STUB.with_name(module).read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) is not None
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_every_finding_kind_has_its_class_and_none_is_named_in_english():
    kinds = _native.FINDING_KINDS
    assert len(kinds) == len(set(kinds)) >= 12
    assert list(_native.FINDING_DESCRIPTIONS) == list(kinds)
    # Each kind raises (or warns with) a class of its own choosing, and only known
    # kinds are mapped: a kind renamed or added on the Rust side fails here.
    assert set(_findings._ERRORS).isdisjoint(_findings._WARNINGS)
    assert set(_findings._ERRORS) | set(_findings._WARNINGS) == set(kinds)
    # The host's English is presentation: no module branches on it.
    english = {text for kind, text in _native.FINDING_DESCRIPTIONS.items() if text != kind}
    assert "heap access outside every live block" in english
    for module in sorted(path.name for path in STUB.parent.glob("*.py")):
        spelled = [literal for literal in string_literals(module) if literal in english]
        assert spelled == [], f"{module} names finding kinds by the host's English: {spelled}"


def test_mypy_stubtest_finds_the_stub_agreeing_with_the_module(tmp_path):
    # mypy's cache (typeshed's and NumPy's stubs, checked again by mypy against their
    # files) goes to the folder run-tests.sh names, kept between runs, where a run takes
    # about a second against 20 s of CPU without; else to tmp_path, not the checkout.
    # stubtest turns incremental mode off unless a config file turns it on.
    cache = os.environ.get("NEURONCUSTOMOP_MYPY_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nincremental = True\ncache_dir = {cache}\n")
    stubtest = [sys.executable, "-m", "mypy.stubtest", "neuroncustomop._native", "--mypy-config-file", str(config)]
    checked = subprocess.run(stubtest, cwd=tmp_path, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
