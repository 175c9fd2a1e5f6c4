"""``load``, and the library and kernel objects it returns."""

from __future__ import annotations

import inspect
import os
import shutil
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from . import _args, _native
from ._errors import KernelError, UnknownKernelError

PathLike = Union[str, "os.PathLike[str]"]
ShapeFn = Callable[..., Any]


@dataclass(frozen=True)
class CallResult:
    """Everything one kernel call returned.

    Attributes
    ----------
    output : numpy.ndarray
        The output tensor, of the shape and dtype the call asked for.
    status : int
        0 when every core succeeded, else the first failing core's status.
    status_name : str
        ``OK``, or the failing status' name.
    statuses : list of int
        Each core's invocation status, in core order.
    stdout : list of str
        What each core printed during the call.
    stdout_lost : list of int
        Per core, the bytes of output the device's print queue dropped before those
        (it keeps the newest).
    instructions : list of int
        Per core, the guest instructions the kernel took (to within 25 when QEMU did
        not switch cores in the middle; an upper bound otherwise); empty when the call
        did not count them.
    wall : float
        Seconds the simulated device took for the call.
    """

    output: np.ndarray
    status: int
    status_name: str
    statuses: list
    stdout: list
    stdout_lost: list
    instructions: list
    wall: float

    @property
    def unwritten(self) -> np.ndarray:
        """A boolean array of the output's shape: True where the element still holds
        the canary the output was filled with before the call (the kernel never
        wrote it, or wrote exactly those bits)."""
        canary = np.frombuffer(_native.canary(self.output.dtype.name), dtype=np.uint8)
        elements = self.output.reshape(-1).view(np.uint8).reshape(-1, canary.size)
        return (elements == canary).all(axis=1).reshape(self.output.shape)


class Kernel:
    """One kernel of a loaded library, called like a function.

    ``kernel(*inputs)`` returns the output array; ``kernel.run(*inputs)`` the whole
    :class:`CallResult`. Both take the same keywords (see :meth:`run`).
    """

    def __init__(self, library: "Library", name: str):
        self.library = library
        self.name = name

    def __repr__(self) -> str:
        return f"<kernel {self.name} of {self.library.name}>"

    def __call__(self, *inputs: Any, **options: Any) -> np.ndarray:
        return self.run(*inputs, **options).output

    def run(
        self,
        *inputs: Any,
        out_shape: Optional[Sequence[int]] = None,
        out_dtype: Any = None,
        cores: Optional[int] = None,
        count_instructions: bool = True,
    ) -> CallResult:
        """Runs the kernel once on the simulated device.

        Parameters
        ----------
        *inputs : array_like or scalar
            The kernel's arguments, in order (at most 10). Arrays (NumPy, or anything
            with the array protocol, such as a CPU PyTorch tensor) must have a device
            dtype; a non-contiguous or big-endian one is copied first. Scalars follow
            the kinds of :mod:`neuroncustomop` (``np.int64`` for a ``long long``).
        out_shape : sequence of int, optional
            The output's shape. Default: the shape function for this kernel given to
            ``load(shape_fns=...)``, else the C++ library's own (its ``shape_srcs``),
            else the first tensor input's shape.
        out_dtype : dtype, optional
            The output's dtype, by the same rule.
        cores : int, optional
            Cores to run on, 1 to 8. Default: 8 for a library loaded with
            ``multicore=True``, else 1.
        count_instructions : bool, default True
            Count each core's guest instructions (QEMU's ``-icount``). Without, calls
            are faster and ``instructions`` is empty. The library keeps one booted
            device per core count and counting mode.

        Returns
        -------
        CallResult

        Raises
        ------
        KernelError
            A core's invocation status is not 0.
        TypeError, ValueError, OverflowError
            Bad inputs: an unsupported dtype, a scalar whose kind is ambiguous, a wrong
            number of inputs (when the shape function says how many), an output
            that does not fit device memory.
        DeviceError
            The simulated device could not run the op.
        """
        arguments = [_args.argument(value, index) for index, value in enumerate(inputs)]
        shape, dtype = self.library._output_of(self.name, inputs, arguments, out_shape, out_dtype)
        cores = self.library.cores if cores is None else cores
        raw = self.library._native.call(self.name, arguments, dtype.name, list(shape), cores, count_instructions)
        result = _result(raw, shape, dtype)
        if result.status != 0:
            raise KernelError(self.name, result)
        return result


def _result(raw: Any, shape: Sequence[int], dtype: np.dtype) -> CallResult:
    """The :class:`CallResult` of a native call."""
    statuses = list(raw.statuses)
    failing = next((status for status in statuses if status != 0), 0)
    return CallResult(
        output=raw.output.view(dtype).reshape(shape),
        status=failing,
        status_name=_native.status_name(failing),
        statuses=statuses,
        stdout=list(raw.stdout),
        stdout_lost=list(raw.stdout_lost),
        instructions=list(raw.instructions),
        wall=raw.wall,
    )


class Library:
    """A packaged kernel library on the simulated device (made by :func:`load`).

    Its kernels are attributes (``lib.relu``) and items (``lib["relu"]``); an unknown
    name raises :class:`UnknownKernelError` listing the kernels it has.
    """

    def __init__(self, native: Any, cores: int, shape_fns: Mapping[str, ShapeFn]):
        self._native = native
        self.cores = cores
        unknown = sorted(set(shape_fns) - set(native.kernels))
        if unknown:
            raise self._unknown(", ".join(unknown))
        self._shape_fns = dict(shape_fns)

    def __repr__(self) -> str:
        return f"<neuroncustomop library {self.name}: {', '.join(self.kernels)}>"

    @property
    def name(self) -> str:
        """The library's name."""
        return self._native.name

    @property
    def kernels(self) -> list:
        """Its kernel names, in registration order."""
        return list(self._native.kernels)

    @property
    def package_dir(self) -> str:
        """The package folder: the 8 per-core images and ``ucode_lib.json``."""
        return str(self._native.package_dir)

    def _unknown(self, name: str) -> UnknownKernelError:
        return UnknownKernelError(f"{self.name} has no kernel {name}; it has {', '.join(self.kernels)}")

    def kernel(self, name: str) -> Kernel:
        """The kernel called ``name``."""
        if name not in self._native.kernels:
            raise self._unknown(name)
        return Kernel(self, name)

    def __getitem__(self, name: str) -> Kernel:
        return self.kernel(name)

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.kernel(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.kernels))

    def _output_of(self, kernel: str, inputs: Sequence[Any], arguments: list, shape: Any, dtype: Any) -> tuple:
        """The output's shape and dtype, by the rule of :meth:`Kernel.run`; ``arguments``
        are ``inputs`` as the native call takes them."""
        shape_fn = self._shape_fns.get(kernel)
        if shape_fn is not None:
            try:
                inspect.signature(shape_fn).bind(*inputs)
            except TypeError as error:
                raise TypeError(f"{kernel}: the inputs do not match its shape function: {error}") from None
            if shape is None or dtype is None:
                like = np.asarray(shape_fn(*inputs))
                shape = like.shape if shape is None else shape
                dtype = like.dtype if dtype is None else dtype
        if shape is None or dtype is None:
            shaped = self._native.output_of(kernel, arguments)  # a C++ library's shape function
            if shaped is not None:
                shaped_dtype, shaped_shape = shaped
                shape = shaped_shape if shape is None else shape
                dtype = shaped_dtype if dtype is None else dtype
        if shape is None or dtype is None:
            first = next((value for value in inputs if not _args.is_scalar(value)), None)
            if first is None:
                raise TypeError(f"{kernel} has no tensor input to take the output from: pass out_shape and out_dtype")
            first = np.asarray(first)
            shape = first.shape if shape is None else shape
            dtype = first.dtype if dtype is None else dtype
        shape = tuple(int(d) for d in shape)
        return shape, _args.device_dtype(dtype, "the output")


def load(
    path: Optional[PathLike] = None,
    *,
    name: Optional[str] = None,
    compute_srcs: Optional[Sequence[PathLike]] = None,
    build_directory: Optional[PathLike] = None,
    multicore: bool = False,
    shape_fns: Optional[Mapping[str, ShapeFn]] = None,
) -> Library:
    """Builds and packages a kernel library, and returns it ready to call.

    Two ways to name the library, as the AWS Neuron custom-op flow does:
    ``load(path)``, or ``load(name=..., compute_srcs=[...], build_directory=...)``.

    Parameters
    ----------
    path : str or os.PathLike, optional
        A kernel library: a project folder (``ncop new``, or an example of the
        checkout such as ``examples/relu``: a Rust crate, or C sources in ``src/``),
        or a package folder (one with ``ucode_lib.json``).
    name : str, optional
        The library's name (the vendor's ``name``); checked against the library's own.
    compute_srcs : sequence of path, optional
        The kernel sources (the vendor's ``compute_srcs``), all in one folder: the
        ``src/`` files of a project load that project; ``.c`` files elsewhere are
        copied into a new C project, ``<build_directory>/<name>/``, and built there.
    build_directory : path, optional
        Where the build's results go (the vendor's ``build_directory``), in
        ``<build_directory>/<name>/``: the package (loadable again with
        ``load(<build_directory>/<name>)``), or the project made from loose C sources.
        Default for loose C sources: a ``build`` folder beside them.
    multicore : bool, default False
        Run calls on all 8 cores unless a call says otherwise (the vendor's
        ``multicore``). A kernel that splits its work by ``get_cpu_count()`` needs it.
    shape_fns : mapping of str to callable, optional
        Per kernel, the output's shape and dtype: called with the call's inputs, it
        returns an array of the output's shape and dtype (``np.empty(...)``), as the
        vendor's shape function returns an empty tensor. Its signature also checks the
        number of inputs.

    Returns
    -------
    Library

    Raises
    ------
    PackageError
        The library could not be built or packaged (the message has the cause).

    Examples
    --------
    >>> import numpy as np, neuroncustomop
    >>> relu = neuroncustomop.load("examples/relu")          # doctest: +SKIP
    >>> relu.relu(np.array([-1.0, 2.0], dtype=np.float32))     # doctest: +SKIP
    array([0., 2.], dtype=float32)
    >>> lib = neuroncustomop.load(name="muladd", compute_srcs=["muladd.c"],
    ...                           build_directory="build")      # doctest: +SKIP
    """
    copy_package = build_directory is not None
    if path is None:
        if not compute_srcs:
            raise TypeError("load needs a path, or name= and compute_srcs=")
        path, made_project = _library_of_sources([os.fspath(source) for source in compute_srcs], name, build_directory)
        copy_package = copy_package and not made_project
    elif compute_srcs is not None:
        raise TypeError("load takes a path or compute_srcs=, not both")
    native = _native.Library(os.path.expanduser(os.fspath(path)))
    if name is not None and name != native.name:
        raise ValueError(f"name={name!r}, but the library at {path} is named {native.name}")
    if copy_package:
        native = _native.Library(_copy_package(native.package_dir, native.name, build_directory))
    return Library(native, _native.CORES if multicore else 1, shape_fns or {})


def _copy_package(package_dir: PathLike, name: str, build_directory: PathLike) -> str:
    """Copies the package to ``build_directory/<name>/`` (replacing what was there)."""
    target = os.path.join(os.fspath(build_directory), name)
    if os.path.abspath(target) != os.path.abspath(os.fspath(package_dir)):
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(package_dir, target)
    return target


def _library_of_sources(
    sources: Sequence[str], name: Optional[str], build_directory: Optional[PathLike]
) -> tuple:
    """The library ``compute_srcs`` name, and whether a project was made for them (by
    the rules of :func:`load`)."""
    folders = {os.path.dirname(os.path.abspath(source)) for source in sources}
    if len(folders) != 1:
        raise ValueError(f"compute_srcs {list(sources)} are in {len(folders)} folders: put them in one")
    folder = folders.pop()
    if os.path.basename(folder) == "src":
        return os.path.dirname(folder), False
    if not all(source.endswith(".c") for source in sources):
        raise ValueError(
            f"compute_srcs {list(sources)}: loose sources are .c files (a Rust library is a project: ncop new)"
        )
    name = name or os.path.basename(folder)
    project = os.path.join(os.fspath(build_directory or os.path.join(folder, "build")), name)
    src = os.path.join(project, "src")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    for source in sources:
        shutil.copy2(source, src)
    return project, True
