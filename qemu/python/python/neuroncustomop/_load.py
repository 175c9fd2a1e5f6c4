"""``load`` and ``load_library``: a library built, loaded, and its ops registered
with PyTorch when it is installed. Above both ``_library`` (the objects it returns)
and ``_torch`` (the registration), so neither imports the other back."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types
import warnings
from typing import Any, Mapping, Optional, Sequence, Union

from . import _build, _native
from ._library import Library, ShapeFn

PathLike = Union[str, "os.PathLike[str]"]


def load(
    name: Optional[Union[str, PathLike]] = None,
    compute_srcs: Optional[Sequence[PathLike]] = None,
    shape_srcs: Optional[Sequence[PathLike]] = None,
    build_directory: Optional[PathLike] = None,
    multicore: bool = False,
    extra_cflags: Optional[Sequence[str]] = None,
    verbose: bool = False,
    *,
    shape_fns: Optional[Mapping[str, ShapeFn]] = None,
    target: str = "device",
    checked: Optional[bool] = None,
    backward: Optional[Mapping[str, str]] = None,
) -> Library:
    """Builds a kernel library from its sources, writes ``lib<name>.so`` and loads it:
    the vendor's ``custom_op.load``, with its arguments, in its order.

    With PyTorch installed, each op also becomes ``torch.ops.<namespace>.<op>`` (see
    :func:`load_library`). ``load(path)`` (no ``compute_srcs``) is
    ``load_library(path)``.

    Parameters
    ----------
    name : str
        The library's name: the build writes ``<build_directory>/lib<name>.so``.
    compute_srcs : sequence of path
        The kernel sources, all of one language: ``.cpp`` files on the AWS torch API
        (with ``shape_srcs``), ``.c`` files, or a Rust crate (its folder, or any
        ``.rs`` file in it).
    shape_srcs : sequence of path, optional
        The C++ shape functions and the ``NEURON_LIBRARY`` registration; required
        with ``.cpp`` compute sources, refused with others (use ``shape_fns``).
    build_directory : path, optional
        Where the build goes: ``<name>/`` (the project made for loose sources) and
        ``lib<name>.so``. Default: a ``build`` folder beside the first compute source.
    multicore : bool, default False
        Run calls on all 8 cores unless a call says otherwise. A kernel that splits its
        work by ``get_cpu_count()`` needs it. ``lib<name>.so`` records it.
    extra_cflags : sequence of str, optional
        C++ compiler flags; as the vendor's, ``-DSTACK_SIZE=N`` (N bytes up to 400 KiB)
        moves the kernel's stack to device memory (HBM).
    verbose : bool, default False
        Show the build's output (cargo, clang, g++). Without, it is kept and put into
        the ``PackageError`` of a failed build; a build that takes more than a few
        seconds (the first one compiles the device runtime) prints one progress line.
    shape_fns : mapping of str to callable, optional
        Per kernel of a Rust or C library, the output's shape and dtype (a C++
        library's come from ``shape_srcs``): called with the call's inputs, it returns
        an array or tensor of the output's shape and dtype (``np.empty(...)``,
        ``torch.empty(...)``), as the vendor's shape function returns an empty
        tensor. Its signature also checks the number of inputs.
    target : str, default "device"
        Where its calls run: ``"device"``, the simulated device (the reference), or
        ``"host"``, the host tier (the same sources built for x86-64, each core a
        thread: results, statuses and printed text are the device's; no instruction
        counts). For the host tier the library is built for the host only, and no
        ``lib<name>.so`` is written.
    checked : bool, optional
        Whether its calls check every memory access, unless a call or an
        :func:`neuroncustomop.options` block says otherwise (``torch.ops`` calls take
        no keywords). Default True; ``False`` is faster.
    backward : mapping of str to str, optional
        For ``torch.ops``: each op's backward op, ``{"relu_forward": "relu_backward"}``,
        the vendor's pattern: the backward op takes the output's gradient, then the
        forward op's inputs, and returns the first input's gradient. It registers
        ``torch.library.register_autograd``, so autograd, ``opcheck`` and
        ``torch.compile`` differentiate the forward op (the gradients of its other
        inputs are None).

    Returns
    -------
    Library

    Raises
    ------
    PackageError
        The build failed: the message has the compiler's diagnostics.
    ValueError, FileNotFoundError
        Sources that cannot make a library (the message says what to change).

    Examples
    --------
    >>> import neuroncustomop as custom_op
    >>> custom_op.load(name="relu", compute_srcs=["relu.cpp"], shape_srcs=["shape.cpp"],
    ...                build_directory=".")                     # doctest: +SKIP
    >>> custom_op.load_library("librelu.so")                   # doctest: +SKIP
    """
    if compute_srcs is None:
        if name is None:
            raise TypeError("load needs name= and compute_srcs= (or a library's path: load_library(path))")
        if shape_srcs is not None or build_directory is not None or extra_cflags is not None:
            raise TypeError("load(path) loads a library as it is: shape_srcs, build_directory and extra_cflags need compute_srcs")
        # multicore=False is load's default, not a choice: the library's own then decides.
        return load_library(
            name,
            multicore=multicore or None,
            shape_fns=shape_fns,
            verbose=verbose,
            target=target,
            checked=checked,
            backward=backward,
        )
    if name is None:
        raise TypeError("load(compute_srcs=...) needs name=: the library's name (it writes lib<name>.so)")
    if isinstance(compute_srcs, (str, os.PathLike)):
        raise TypeError("compute_srcs is a list of paths: compute_srcs=[...]")
    sources = [os.path.expanduser(os.fspath(source)) for source in compute_srcs]
    shapes = None if shape_srcs is None else [os.path.expanduser(os.fspath(source)) for source in shape_srcs]
    if build_directory is None:
        build_directory = os.path.join(os.path.dirname(os.path.abspath(sources[0])), "build") if sources else "build"
    build_directory = os.path.abspath(os.path.expanduser(os.fspath(build_directory)))
    if target == "device":
        # This process built these very files into lib<name>.so already: load it.
        state = _build.sources_state(os.fspath(name), sources, shapes, build_directory, multicore, extra_cflags)
        built = _built_here.get(state)
        if built is not None and _build.read_library_file(built) is not None:
            return load_library(built, shape_fns=shape_fns, checked=checked, backward=backward)
    with _build.locked(build_directory, os.fspath(name)):
        project = _build.project_of(os.fspath(name), sources, shapes, build_directory, multicore, extra_cflags)
        with _build.project_locked(project):
            native = _build.quietly(lambda: _native.Library(project, target), os.fspath(name), verbose)
        if target == "host":
            # lib<name>.so names a device package, which the host tier does not make.
            cores = native.default_cores if not multicore else _native.CORES
            return _loaded(native, cores, shape_fns, checked, backward, project)
        built = _build.write_library_file(native.package_dir, build_directory, os.fspath(name), multicore)
        _built_here[state] = built
    return load_library(built, shape_fns=shape_fns, checked=checked, backward=backward)


# What load() built in this process: lib<name>.so by the state of its sources.
_built_here: dict = {}


def load_library(
    path: PathLike,
    *,
    multicore: Optional[bool] = None,
    shape_fns: Optional[Mapping[str, ShapeFn]] = None,
    verbose: bool = False,
    target: str = "device",
    checked: Optional[bool] = None,
    backward: Optional[Mapping[str, str]] = None,
) -> Library:
    """Loads a library: the vendor's ``custom_op.load_library``.

    With PyTorch installed, each op becomes ``torch.ops.<namespace>.<op>``: for a C++
    library every function of its ``NEURON_LIBRARY(<namespace>, m)``, its schema from
    the shape function's C++ parameters; for a Rust or C library each kernel that has
    a shape function in ``shape_fns``, under the library's name. The op's CPU kernel
    runs the simulated device and returns a tensor; its fake (meta) kernel is the shape
    function, so ``torch.compile``, ``torch.export`` and meta tensors get the output's
    shape and dtype. Loading a library again rebinds its ops to the new one. PyTorch
    is not imported for this: the ops are registered when the process imports it,
    before or after the load (a NumPy-only process never pays its import).

    Parameters
    ----------
    path : str or os.PathLike
        ``lib<name>.so`` as :func:`load` writes it; or a project folder (``ncop new``,
        a C++ folder with ``customop.json``, an example of the checkout such as
        ``examples/relu``), built and packaged first; or a package folder (one with
        ``ucode_lib.json``).
    multicore : bool, optional
        Run calls on all 8 cores unless a call says otherwise. Default: what ``load``
        recorded in ``lib<name>.so``; for a C++ folder, its ``customop.json``'s
        ``"multicore"``; for a C folder, ``multicore`` in its ``neuroncustomop.toml``;
        for a Rust folder, ``multicore`` under ``[package.metadata.neuroncustomop]`` in
        its ``Cargo.toml`` (as ``ncop run`` reads them); else False.
    shape_fns : mapping of str to callable, optional
        As for :func:`load`.
    verbose : bool, default False
        As for :func:`load` (a project is built first).
    target : str, default "device"
        As for :func:`load`: ``"host"`` runs the calls on the host tier, built from a
        project's sources (a package or ``lib<name>.so`` has none: ``PackageError``).
    checked, backward
        As for :func:`load`.

    Returns
    -------
    Library

    Raises
    ------
    PackageError
        Not a library, or its build failed (the message has the compiler's diagnostics).
    """
    path = os.path.abspath(os.path.expanduser(os.fspath(path)))
    recorded = _build.read_library_file(path)
    source = path
    if recorded is not None:
        package, recorded_multicore = recorded
        source = os.fspath(package)
        native = _native.Library(package, target)
        multicore = recorded_multicore if multicore is None else multicore
    else:
        with _build.project_locked(path):
            native = _build.quietly(lambda: _native.Library(path, target), os.path.basename(path), verbose)
    cores = native.default_cores if multicore is None else (_native.CORES if multicore else 1)
    return _loaded(native, cores, shape_fns, checked, backward, source)


def _loaded(
    native: Any,
    cores: int,
    shape_fns: Optional[Mapping[str, ShapeFn]],
    checked: Optional[bool],
    backward: Optional[Mapping[str, str]],
    source: str,
) -> Library:
    """The :class:`Library` of ``native`` (loaded from ``source``), its ops registered
    with PyTorch: now when the process has imported it (or ``backward`` asks for its
    autograd), else when it is first imported (:class:`_RegisterOnTorchImport`)."""
    library = Library(native, cores, shape_fns or {}, checked, os.fspath(source))
    if "torch" in sys.modules or backward:
        if importlib.util.find_spec("torch") is None:
            raise ValueError("backward= registers torch.ops autograd: it needs PyTorch (pip install torch)")
        from . import _torch

        _torch.register(library, backward or {})
    elif importlib.util.find_spec("torch") is not None:
        _RegisterOnTorchImport.later(library)
    return library


class _RegisterOnTorchImport(importlib.abc.MetaPathFinder):
    """Registers loaded libraries' ops once ``torch`` is imported, so that a process
    that never uses PyTorch never pays its import (seconds), and one that imports it
    after ``load`` still finds ``torch.ops.<namespace>.<op>``.

    It sits first on ``sys.meta_path`` while libraries wait; on the import of ``torch``
    it hands the import to the other finders and wraps the loader, so the libraries
    are registered, in the order they were loaded, once ``torch`` has run its
    ``__init__``. Then it leaves ``sys.meta_path``."""

    _waiting: "list[Library]" = []
    _lock = threading.Lock()

    @classmethod
    def later(cls, library: Library) -> None:
        with cls._lock:
            if not cls._waiting:
                sys.meta_path.insert(0, _FINDER)
            cls._waiting.append(library)

    @classmethod
    def _register_waiting(cls) -> None:
        with cls._lock:
            waiting, cls._waiting = cls._waiting, []
            if _FINDER in sys.meta_path:
                sys.meta_path.remove(_FINDER)
        from . import _torch

        for library in waiting:
            # Raised here, the error would undo the import of torch itself (importlib
            # removes a module whose loader fails): it is said, and the rest registered.
            try:
                _torch.register(library, {})
            except Exception as error:  # noqa: BLE001: any failure is reported, none is lost
                warnings.warn(f"{library.name}'s ops are not in torch.ops: {error}", RuntimeWarning, stacklevel=2)

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None, target: object = None) -> Any:
        if fullname != "torch":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _ThenRegister(spec.loader)
                return spec
        return None


class _ThenRegister(importlib.abc.Loader):
    """``torch``'s own loader, then the waiting libraries' registration."""

    def __init__(self, loader: importlib.abc.Loader):
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        _RegisterOnTorchImport._register_waiting()


_FINDER = _RegisterOnTorchImport()
