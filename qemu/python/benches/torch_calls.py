"""torch.ops benchmark: the training sample's relu_forward (examples/cxx_mlp_training)
built once, then warm calls on a [64, 4096] float32 tensor through torch.ops and through
the NumPy path, checked and unchecked, one core; where a warm torch.ops call's time
goes; and a second load() of the unchanged sources. docs/PERFORMANCE.md records it.

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


def median_seconds(call, calls: int) -> float:
    call()  # the device of this mode boots on its first call
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


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
    for checked in (False, True):
        with neuroncustomop.options(checked=checked):
            through_torch = median_seconds(lambda: torch.ops.my_ops.relu_forward(x), options.calls)
        through_numpy = median_seconds(lambda: library.relu_forward(array, checked=checked), options.calls)
        mode = "checked  " if checked else "unchecked"
        print(
            f"{mode}: torch.ops {through_torch * 1e3:6.1f} ms, NumPy path {through_numpy * 1e3:6.1f} ms "
            f"(ratio {through_torch / through_numpy:.2f}), median of {options.calls}"
        )

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
