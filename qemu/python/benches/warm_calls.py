"""Warm-call benchmark: one relu library loaded once, then 100 calls of a 65,536-element
single-core relu from Python, each checked against NumPy. Prints the first (cold) call,
and the warm calls' median, slowest and total wall time, as docs/PERFORMANCE.md records
them.

    target/python-venv/bin/python qemu/python/benches/warm_calls.py [--calls N] [--kernel relu] [--no-count]
"""

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import neuroncustomop

REPO = Path(__file__).resolve().parents[3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--kernel", default="relu")
    parser.add_argument("--no-count", dest="count_instructions", action="store_false", help="without -icount")
    options = parser.parse_args()

    started = time.perf_counter()
    library = neuroncustomop.load(REPO / "examples" / "relu")
    loading = time.perf_counter() - started
    kernel = library[options.kernel]
    rng = np.random.default_rng(1)

    def timed_call() -> float:
        # New data every call, so a stale output cannot pass the check.
        x = rng.uniform(-100, 100, (2, 32768)).astype(np.float32)
        started = time.perf_counter()
        result = kernel.run(x, count_instructions=options.count_instructions)
        elapsed = time.perf_counter() - started
        np.testing.assert_array_equal(result.output, np.maximum(x, 0))
        return elapsed

    cold = timed_call()
    warm = [timed_call() for _ in range(options.calls)]
    counting = "counting instructions" if options.count_instructions else "not counting"
    print(f"{options.kernel}, 65,536 float32 elements, 1 core, {counting}; load (package) {loading:.2f} s")
    print(f"  first call        {cold:.3f} s")
    print(
        f"  {options.calls} warm calls    median {statistics.median(warm):.3f} s, "
        f"slowest {max(warm):.3f} s, total {sum(warm):.2f} s"
    )


if __name__ == "__main__":
    main()
