"""torch.ops benchmark: the training sample's relu_forward (examples/cxx_mlp_training)
built once, then warm calls on a [64, 4096] float32 tensor through torch.ops and through
the NumPy path, checked and unchecked, one core; where a warm torch.ops call's time
goes; and a second load() of the unchanged sources. docs/simulator-speed.md records it
("Through `torch.ops`").

    target/python-venv/bin/python qemu/python/benches/torch_calls.py [--calls N]
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import neuroncustomop
from neuroncustomop import _args, _options

REPO = Path(__file__).resolve().parents[3]
SHAPE = (64, 4096)


def interleaved_medians(calls: dict, rounds: int) -> dict:
    """The median seconds of each of ``calls`` (name -> call), each round calling every
    one once in turn, so that the machine's load (shared by other builds) weighs on each
    alike: the ratios between them are the figures to trust, not the times."""
    for call in calls.values():
        call()  # the device of each mode boots on its first call
    times: dict = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(seconds) for name, seconds in times.items()}


def through_torch(x, checked: bool):
    """``relu_forward`` through ``torch.ops``, in an :func:`neuroncustomop.options` block."""
    with neuroncustomop.options(checked=checked):
        return torch.ops.my_ops.relu_forward(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    options = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, {os.cpu_count()} CPUs")

    folder = Path(tempfile.mkdtemp(prefix="torch_calls"))
    for name in ("relu.cpp", "shape.cpp"):
        shutil.copy(REPO / "examples" / "cxx_mlp_training" / name, folder)

    def load():
        return neuroncustomop.load(
            name="relu", compute_srcs=[folder / "relu.cpp"], shape_srcs=[folder / "shape.cpp"], build_directory=folder
        )

    started = time.perf_counter()
    library = load()
    first_load = time.perf_counter() - started
    started = time.perf_counter()
    load()
    second_load = time.perf_counter() - started
    print(f"load(): first {first_load:.2f} s, second (sources unchanged) {second_load:.3f} s")

    x = torch.randn(SHAPE, generator=torch.Generator().manual_seed(1))
    array = x.numpy()
    assert torch.equal(torch.ops.my_ops.relu_forward(x), torch.relu(x))
    medians = interleaved_medians(
        {
            # (Each lambda binds its own `checked`.)
            (path, checked): (lambda checked=checked: through_torch(x, checked)) if path == "torch.ops"
            else (lambda checked=checked: library.relu_forward(array, checked=checked))
            for checked in (False, True)
            for path in ("torch.ops", "NumPy path")
        },
        options.calls,
    )
    for checked in (False, True):
        mode = "checked  " if checked else "unchecked"
        torch_ops, numpy_path = medians[("torch.ops", checked)], medians[("NumPy path", checked)]
        print(
            f"{mode}: torch.ops {torch_ops * 1e3:6.1f} ms, NumPy path {numpy_path * 1e3:6.1f} ms "
            f"(ratio {torch_ops / numpy_path:.2f}), median of {options.calls} interleaved"
        )
    for path in ("torch.ops", "NumPy path"):
        print(f"{path}: checked / unchecked {medians[(path, True)] / medians[(path, False)]:.2f}")

    # Where a warm unchecked torch.ops call's time goes, step by step as _torch.py takes it.
    kernel = library.relu_forward
    said = _options.resolve(library, _options.CallOptions(checked=False))
    steps = {"tensor to bytes": [], "output shape": [], "device call": [], "result": [], "of which device wall": []}
    for _ in range(options.calls):
        t0 = time.perf_counter()
        arguments = [_args.argument(x, 0)]
        t1 = time.perf_counter()
        shape, dtype = library._output_of(kernel.name, [x], arguments, None, None)
        t2 = time.perf_counter()
        raw = library._native.call(kernel.name, arguments, dtype, list(shape), said.cores, False, None, False, False, False)
        t3 = time.perf_counter()
        out = torch.from_numpy(raw.output).view(torch.float32).reshape(shape)
        t4 = time.perf_counter()
        assert torch.equal(out, torch.relu(x))
        for name, seconds in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, raw.wall)):
            steps[name].append(seconds)
    print("a warm unchecked call, step by step (medians): " + ", ".join(
        f"{name} {statistics.median(times) * 1e3:.2f} ms" for name, times in steps.items()
    ))
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
