"""The library and kernel objects ``load`` returns (``_load``), and a call's result."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from . import _args, _findings, _native, _options
from ._errors import KernelError, UnknownKernelError, UnwrittenOutputError
from ._options import CallOptions
from ._profile import Profile

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
    status_detail : str or None
        When the runtime knows the argument behind the failing status, which and why:
        ``argument 3: pulled as float, passed as int`` (arguments count from 0); for a
        C++ library's failure, the line the runtime printed as it ended the op (with the
        kernel's ``file:line`` where the check has one); else None.
    statuses : list of int
        Each core's invocation status, in core order.
    stdout : list of str
        What each core printed during the call.
    stdout_lost : list of int
        Per core, the bytes of output the device's print queue dropped before those
        (it keeps the newest).
    instructions : list of int
        Per core, the guest instructions the kernel took on that core, exactly (the
        core's own count, whatever the other cores did). Unless
        ``count_instructions=True``, a kernel that waits (for DMA, for other cores)
        may count a few more or fewer wake-ups from run to run.
    exact : list of bool
        Per core, whether its count is exactly the kernel's instructions, as the
        device says (``exact=yes``); False marks an estimate.
    wall : float
        Seconds the simulated device took for the call.
    total_instructions : int
        Every core's instructions, summed: the work done.
    balance : float
        The slowest core's instructions over the cores' mean: 1.0 is an even split.
    per_element : float or None
        The slowest core's instructions per output element *it* wrote; None when that
        is not known (several cores without ``profile=True``) or it wrote none. The
        op-author guide, "Instructions per element", defines these three.
    profile : Profile or None
        Where the instructions went (``run(..., profile=True)``), else None.
    warnings : list of Finding
        The memory checks' warnings (a leaked heap block, a read of memory never
        written), also given to Python's ``warnings.warn`` as :class:`CheckWarning`
        subclasses: they do not fail the call.
    """

    output: np.ndarray
    status: int
    status_name: str
    statuses: list
    stdout: list
    stdout_lost: list
    instructions: list
    exact: list
    wall: float
    total_instructions: int = 0
    balance: float = 1.0
    per_element: Optional[float] = None
    profile: Optional[Profile] = None
    status_detail: Optional[str] = None
    warnings: list = field(default_factory=list)

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
        count_instructions: Optional[bool] = None,
        max_instructions: Optional[int] = None,
        checked: Optional[bool] = None,
        profile: Optional[bool] = None,
        partial_output: Optional[bool] = None,
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

        Each option below not given (None) is that of the enclosing
        :func:`neuroncustomop.options` block, else the library's (``load(...,
        checked=...)``), else its default here.

        cores : int, optional
            Cores to run on, 1 to 8. Default: 8 for a library loaded with
            ``multicore=True`` or declared multicore (its ``customop.json`` or
            ``Cargo.toml``, see :func:`load_library`), else 1.
        count_instructions : bool, default False
            Run under QEMU's ``-icount``: all cores on one host thread, with a
            deterministic clock, so waits cost no wall time and a kernel that waits
            counts the same every run. Only for an unchecked call without a profile
            (``checked=False``): the checks and the profile need the device's TCG
            plugin, which does not run there. By default each core runs on a host
            thread of its own and the plugin counts; ``instructions`` are exact either
            way. The library keeps one booted device per core count and mode.
        max_instructions : int, optional
            Stop the kernel after this many guest instructions on a core (a
            ``KernelError`` naming where it was); the next call works. Default: the host
            API's budget, 10 billion.
        checked : bool, default True
            Check every load and store of the kernel against what its op was given (the
            device's TCG plugin, which runs without ``-icount``: a checked call runs
            without it, and its counts are as exact). ``False`` is faster.
        profile : bool, default False
            Profile the call (:attr:`CallResult.profile`): instructions per function and
            call path, the instruction mix, memory accesses by region, the timeline.
            Slower; runs without ``-icount`` (``count_instructions`` is ignored).
        partial_output : bool, default False
            The kernel writes part of its output on purpose: elements no core wrote do
            not fail the call (:attr:`CallResult.unwritten` still marks them).

        Returns
        -------
        CallResult

        Raises
        ------
        KernelError
            A core's invocation status is not 0, or the kernel stopped without
            returning (a panic, an exception, its instruction budget).
        OutOfBoundsError, RaceError
            (Subclasses of ``KernelError``.) The memory checks found the kernel touching
            memory its op was not given, or two cores writing the same output bytes;
            ``.findings`` lists what, where and the source line.
        UnwrittenOutputError
            (A ``KernelError``.) Every core returned 0, but output elements were never
            written; the message says how many and which cores wrote nothing.
        TypeError, ValueError, OverflowError
            Bad inputs: an unsupported dtype, a scalar whose kind is ambiguous, a wrong
            number of inputs (when the shape function says how many), an output
            that does not fit device memory.
        DeviceError
            The simulated device could not run the op.
        """
        said = CallOptions(cores, checked, count_instructions, max_instructions, profile, partial_output)
        raw, shape, dtype = self._call(inputs, out_shape, out_dtype, _options.resolve(self.library, said))
        return _checked(self.name, raw, shape, dtype)

    def _call(self, inputs: Sequence[Any], out_shape: Any, out_dtype: Any, options: CallOptions) -> tuple:
        """The native call of :meth:`run` with every option resolved
        (:func:`_options.resolve`): ``(raw result, output shape, output dtype name)``; a
        failing status is not raised here."""
        arguments = [_args.argument(value, index) for index, value in enumerate(inputs)]
        shape, dtype = self.library._output_of(self.name, inputs, arguments, out_shape, out_dtype)
        raw = self.library._native.call(
            self.name,
            arguments,
            dtype,
            list(shape),
            options.cores,
            options.count_instructions,
            options.max_instructions,
            options.checked,
            options.profile,
            options.partial_output,
        )
        return raw, shape, dtype


def _checked(kernel: str, raw: Any, shape: Sequence[int], dtype: str) -> CallResult:
    """The :class:`CallResult` of a native call whose every core returned 0, whose
    memory accesses the checks found nothing wrong with, and which wrote its whole
    output; else the :class:`KernelError` of a stopped kernel, a finding, a failing
    status or unwritten output, raised."""
    if raw.stop is not None:
        raise KernelError(kernel, stop=raw.stop, stdout=list(raw.stdout), report=raw.report)
    result = _result(raw, shape, dtype)
    # A finding of the memory checks first: a wrong access explains a failing status.
    _findings.raise_for(kernel, result, raw)
    if any(status != 0 for status in result.statuses):
        raise KernelError(kernel, result)
    if raw.unwritten is not None:
        raise UnwrittenOutputError(kernel, result, raw.unwritten)
    return result


def _numpy_dtype(name: str) -> np.dtype:
    """NumPy's dtype for a device dtype's name: bfloat16 through the ``ml_dtypes``
    package, or without it as its raw 2-byte values (``|V2``, as ``.npy`` files keep it):
    a ``torch.ops`` call of a bfloat16 op needs no ml_dtypes."""
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            return np.dtype("V2")
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _result(raw: Any, shape: Sequence[int], dtype: str) -> CallResult:
    """The :class:`CallResult` of a native call."""
    return CallResult(
        output=raw.output.view(_numpy_dtype(dtype)).reshape(shape),
        status=raw.status,
        status_name=raw.status_name,
        statuses=list(raw.statuses),
        stdout=list(raw.stdout),
        stdout_lost=list(raw.stdout_lost),
        instructions=list(raw.instructions),
        exact=list(raw.exact),
        wall=raw.wall,
        total_instructions=raw.total_instructions,
        balance=raw.balance,
        per_element=raw.per_element,
        profile=None if raw.profile is None else Profile.from_json(raw.profile),
        status_detail=raw.status_detail,
        warnings=_findings.warnings_of(raw),
    )


class Library:
    """A packaged kernel library on the simulated device (made by :func:`load`).

    Its kernels are attributes (``lib.relu``) and items (``lib["relu"]``); an unknown
    name raises :class:`UnknownKernelError` listing the kernels it has.
    """

    def __init__(
        self,
        native: Any,
        cores: int,
        shape_fns: Mapping[str, ShapeFn],
        checked: Optional[bool] = None,
        source: str = "",
    ):
        self._native = native
        self.cores = cores
        self._source = source
        #: The options of its calls that say nothing else (``load(..., checked=...)``).
        self.defaults = CallOptions(checked=checked)
        # The output (dtype, shape) per kernel and argument signature (_output_of).
        self._outputs: dict = {}
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
    def target(self) -> str:
        """Where its calls run: ``"device"`` or ``"host"`` (the host tier)."""
        return self._native.target

    @property
    def source(self) -> str:
        """The folder ``ncop run --lib`` takes for it: the project it was built from,
        or its package folder."""
        return self._source or self.package_dir

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
        """The output's shape and dtype name, by the rule of :meth:`Kernel.run` (the host
        API's ``Library::resolve_output``, which this calls); ``arguments`` are ``inputs``
        as the native call takes them."""
        shape_fn = self._shape_fns.get(kernel)
        said = None
        if shape_fn is not None:
            try:
                inspect.signature(shape_fn).bind(*inputs)
            except TypeError as error:
                raise TypeError(f"{kernel}: the inputs do not match its shape function: {error}") from None
            if shape is None or dtype is None:
                fn_shape, fn_dtype = _args.shape_and_dtype(shape_fn(*inputs))
                said = (_args.dtype_name(fn_dtype, "the output"), [int(d) for d in fn_shape])
        given_shape = None if shape is None else [int(d) for d in shape]
        given_dtype = None if dtype is None else _args.dtype_name(dtype, "the output")
        if said is None and given_shape is None and given_dtype is None:
            # The library's own shape function (a C++ library's runs in a process on the
            # host) sees only dtypes, shapes and scalars: its answer for those is kept.
            key = (kernel, *(_signature(argument) for argument in arguments))
            known = self._outputs.get(key)
            if known is None:
                known = self._native.resolve_output(kernel, arguments, None, None, None)
                self._outputs[key] = known
            out_dtype, out_shape = known
        else:
            out_dtype, out_shape = self._native.resolve_output(kernel, arguments, given_shape, given_dtype, said)
        return tuple(out_shape), out_dtype


def _signature(argument: tuple) -> tuple:
    """What a shape function sees of a native argument: a tensor's dtype and shape, a
    scalar's kind and value."""
    if len(argument) == 3:
        dtype, shape, _ = argument
        return (dtype, tuple(shape))
    kind, data = argument
    return (kind, data.tobytes())
