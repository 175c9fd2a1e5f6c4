"""torch.ops benchmark: examples/cxx_mlp_training's relu_forward (the AWS sample's
element-accessor kernel, one core) on a float32[64, 128], 100 warm calls through
torch.ops.my_ops.relu_forward and 100 through the NumPy path, each output checked.
Prints both medians and totals, and their ratio, as docs/PERFORMANCE.md records them.

    target/python-venv/bin/python qemu/python/benches/torch_calls.py [--calls N]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import neuroncustomop

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "cxx_mlp_training"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as build:
        started = time.perf_counter()
        library = neuroncustomop.load(
            name="relu",
            compute_srcs=[SAMPLE / "relu.cpp"],
            shape_srcs=[SAMPLE / "shape.cpp"],
            build_directory=build,
        )
        loading = time.perf_counter() - started
        generator = torch.Generator().manual_seed(1)

        def torch_call() -> float:
            x = torch.rand(64, 128, generator=generator) * 200 - 100
            started = time.perf_counter()
            out = torch.ops.my_ops.relu_forward(x)
            elapsed = time.perf_counter() - started
            assert torch.equal(out, torch.relu(x))
            return elapsed

        def numpy_call() -> float:
            x = (torch.rand(64, 128, generator=generator) * 200 - 100).numpy()
            started = time.perf_counter()
            out = library.relu_forward(x)
            elapsed = time.perf_counter() - started
            np.testing.assert_array_equal(out, np.maximum(x, 0))
            return elapsed

        cold = torch_call()
        numpy_call()
        through_torch = [torch_call() for _ in range(options.calls)]
        through_numpy = [numpy_call() for _ in range(options.calls)]
    print(f"relu_forward, float32[64, 128], 1 core; load (build, package) {loading:.1f} s, first call {cold:.3f} s")
    for name, times in (("torch.ops", through_torch), ("NumPy", through_numpy)):
        print(f"  {options.calls} {name:9} calls: median {statistics.median(times) * 1000:.1f} ms, total {sum(times):.2f} s")
    ratio = statistics.median(through_torch) / statistics.median(through_numpy)
    print(f"  torch.ops / NumPy, median: {ratio:.2f}")


if __name__ == "__main__":
    main()
