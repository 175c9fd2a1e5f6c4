"""The vendor's build, ``load(name, compute_srcs, shape_srcs, build_directory, ...)``:
its sources turned into a project the host API builds (with no manifest for the author
to write), the build's output kept quiet, and the result written as ``lib<name>.so``.

What a build writes in ``build_directory``:

``<name>/``
    The project: for C++ sources a ``customop.json`` naming them where they are, for
    loose C sources a copy of them in ``src/``; its build's outputs under
    ``target/neuroncustomop/``. A Rust crate, or C sources in a project's ``src/``, is
    built where it is instead.
``lib<name>.so/``
    What ``load_library`` loads (the name the vendor's samples use): a folder with the
    package (the 8 images, ``ucode_lib.json``, a C++ library's shape functions) and
    ``library.json``, which records ``multicore``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
from typing import Callable, Iterator, Optional, Sequence, TypeVar

from . import _native

T = TypeVar("T")

CXX_SUFFIXES = (".cpp", ".cc", ".cxx")
"""Compute sources compiled as C++ (on the AWS torch API)."""

LIBRARY_FILE = "library.json"
"""The file that makes a folder a ``lib<name>.so`` that :func:`load_library` loads."""

PROGRESS_AFTER = 3.0
"""Seconds a quiet build runs before it says what it is doing (a first build compiles
the device runtime: minutes)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def library_file(build_directory: str, name: str) -> str:
    """Where the build of library ``name`` writes what ``load_library`` loads."""
    return os.path.join(build_directory, f"lib{name}.so")


def project_of(
    name: str,
    compute_srcs: Sequence[str],
    shape_srcs: Optional[Sequence[str]],
    build_directory: str,
    multicore: bool,
    extra_cflags: Optional[Sequence[str]],
) -> str:
    """The project folder that builds ``compute_srcs`` (by the rules of this module's
    docstring), made when needed; ``name`` was checked by :func:`locked`. Errors name
    the argument to change."""
    if not compute_srcs:
        raise ValueError("compute_srcs is empty: name the kernel sources (.cpp, .c, or a Rust crate)")
    sources = [os.path.abspath(source) for source in compute_srcs]
    for source in sources + [os.path.abspath(source) for source in shape_srcs or ()]:
        if not os.path.exists(source):
            raise FileNotFoundError(f"{source} does not exist")
    languages = {_language(source) for source in sources}
    if len(languages) != 1:
        raise ValueError(
            f"compute_srcs {list(compute_srcs)} mix {', '.join(sorted(languages))}: a library is in one language"
        )
    language = languages.pop()
    if language != "C++":
        if shape_srcs:
            raise ValueError(
                f"shape_srcs are C++ shape functions, and these compute_srcs are {language}: "
                "give the output shapes with shape_fns= instead"
            )
        if extra_cflags:
            raise ValueError(f"extra_cflags apply to C++ sources; these compute_srcs are {language}")
    if language == "Rust":
        return _crate_of(sources)
    if language == "C":
        return _c_project(name, sources, build_directory)
    if not shape_srcs:
        raise ValueError("C++ compute_srcs need shape_srcs: the sources with the shape functions and NEURON_LIBRARY")
    project = os.path.join(build_directory, name)
    manifest = {
        "compute_srcs": sources,
        "shape_srcs": [os.path.abspath(source) for source in shape_srcs],
        "extra_cflags": list(extra_cflags or ()),
        "multicore": bool(multicore),
    }
    os.makedirs(project, exist_ok=True)
    _write_whole(os.path.join(project, "customop.json"), json.dumps(manifest, indent=2) + "\n")
    return project


def _language(source: str) -> str:
    if os.path.isdir(source) or source.endswith(".rs") or os.path.basename(source) == "Cargo.toml":
        return "Rust"
    if source.endswith(".c"):
        return "C"
    if source.endswith(CXX_SUFFIXES):
        return "C++"
    raise ValueError(f"compute_srcs: {source} is not a .cpp, .c or .rs source, nor a Rust crate's folder")


def _crate_of(sources: Sequence[str]) -> str:
    """The one crate (the folder with ``Cargo.toml``) that holds every source."""
    crates = set()
    for source in sources:
        folder = source if os.path.isdir(source) else os.path.dirname(source)
        while not os.path.isfile(os.path.join(folder, "Cargo.toml")):
            parent = os.path.dirname(folder)
            if parent == folder:
                raise ValueError(f"compute_srcs: {source} is in no Rust crate (no Cargo.toml above it)")
            folder = parent
        crates.add(folder)
    if len(crates) != 1:
        raise ValueError(f"compute_srcs are in {len(crates)} crates ({', '.join(sorted(crates))}): give one")
    return crates.pop()


def _c_project(name: str, sources: Sequence[str], build_directory: str) -> str:
    """A project's own ``src/``, or a new project in ``<build_directory>/<name>/`` with a
    copy of loose sources."""
    folders = {os.path.dirname(source) for source in sources}
    if len(folders) == 1:
        folder = folders.pop()
        if os.path.basename(folder) == "src":
            return os.path.dirname(folder)
    project = os.path.join(build_directory, name)
    src = os.path.join(project, "src")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    for source in sources:
        shutil.copy2(source, src)
    return project


def sources_state(
    name: str,
    sources: Sequence[str],
    shapes: Optional[Sequence[str]],
    build_directory: str,
    multicore: bool,
    extra_cflags: Optional[Sequence[str]],
) -> tuple:
    """What a build of ``load``'s arguments depends on that can be seen cheaply: the
    arguments, and the size and modification time of every file in the sources'
    folders (their headers too; hidden files, such as the build's lock, aside). Equal
    states: the same library."""
    folders = sorted({os.path.dirname(os.path.abspath(source)) for source in [*sources, *(shapes or ())]})
    files = []
    for folder in folders:
        for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
            if entry.is_file() and not entry.name.startswith("."):
                stat = entry.stat()
                files.append((entry.path, stat.st_size, stat.st_mtime_ns))
    arguments = (name, tuple(sources), tuple(shapes or ()), build_directory, bool(multicore), tuple(extra_cflags or ()))
    return (arguments, tuple(files))


@contextlib.contextmanager
def locked(build_directory: str, name: str) -> Iterator[None]:
    """Holds ``<build_directory>/.lib<name>.so.lock`` for the block, once ``name`` is
    checked: builds of one library in one folder (pytest-xdist workers, two scripts)
    take turns, and the later one finds the earlier one's outputs to reuse."""
    if not _NAME.fullmatch(name) or name == "builtin":
        raise ValueError(f"name={name!r}: a library name is a C identifier (and not 'builtin')")
    os.makedirs(build_directory, exist_ok=True)
    with open(os.path.join(build_directory, f".lib{name}.so.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def project_locked(path: str) -> Iterator[None]:
    """Holds a lock named after the project folder ``path`` (in the temporary folder)
    for the block: processes that build one project (pytest-xdist workers loading one
    example) take turns, so none reads another's half-written outputs, and the later
    ones find the build done."""
    digest = hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:16]
    with open(os.path.join(tempfile.gettempdir(), f"neuroncustomop-{digest}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def write_library_file(package_dir: str, build_directory: str, name: str, multicore: bool) -> str:
    """Writes ``<build_directory>/lib<name>.so/``: a copy of the package and
    ``library.json``. Returns its path."""
    target = library_file(build_directory, name)
    os.makedirs(build_directory, exist_ok=True)
    partial = tempfile.mkdtemp(prefix=f".lib{name}.so.", dir=build_directory)
    package = os.path.basename(os.path.normpath(package_dir))
    shutil.copytree(package_dir, os.path.join(partial, package))
    with open(os.path.join(partial, LIBRARY_FILE), "w") as file:
        json.dump({"package": package, "multicore": bool(multicore)}, file)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)
    return target


def read_library_file(path: str) -> Optional[tuple]:
    """``(package folder, multicore)`` of a ``lib<name>.so`` folder; None for any other
    path."""
    try:
        with open(os.path.join(path, LIBRARY_FILE)) as file:
            recorded = json.load(file)
    except FileNotFoundError:
        return None
    return os.path.join(path, recorded["package"]), bool(recorded["multicore"])


def _write_whole(path: str, text: str) -> None:
    """Writes ``path`` through a temporary file and a rename: a concurrent build reads
    the old text or the new, never half; an unchanged file is left alone."""
    try:
        with open(path) as file:
            if file.read() == text:
                return
    except FileNotFoundError:
        pass
    partial = f"{path}.{os.getpid()}.{threading.get_ident()}.partial"
    with open(partial, "w") as file:
        file.write(text)
    os.replace(partial, path)


def quietly(build: Callable[[], T], what: str, verbose: bool) -> T:
    """Runs ``build`` (a native load: cargo, clang and g++ write to the process's file
    descriptors 1 and 2) with that output captured unless ``verbose``, a progress line
    on stderr if it runs past :data:`PROGRESS_AFTER` seconds, and the output appended to
    the message of the ``PackageError`` it raises."""
    if verbose:
        return build()
    with tempfile.TemporaryFile() as log:
        with _redirected(log.fileno(), f"neuroncustomop: building {what}...\n"):
            try:
                return build()
            except _native.PackageError as error:
                failure = error
        log.seek(0)
        output = log.read().decode(errors="replace").strip()
    raise _native.PackageError(f"{failure}\n\nThe build's output:\n{output}" if output else str(failure)) from None


@contextlib.contextmanager
def _redirected(fd: int, progress: str) -> Iterator[None]:
    """Points file descriptors 1 and 2 at ``fd`` for the block (the output of other
    threads meanwhile goes there too), and writes ``progress`` to the real stderr if the
    block runs past :data:`PROGRESS_AFTER` seconds."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    saved = (os.dup(1), os.dup(2))
    timer = threading.Timer(PROGRESS_AFTER, os.write, (saved[1], progress.encode()))
    timer.daemon = True
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        timer.start()
        yield
    finally:
        timer.cancel()
        if timer.ident is not None:
            timer.join()  # a progress line being written finishes before its fd closes
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
