"""Ctrl-C benchmark: a kernel that loops forever (the tests' ``spin``, in
``tests/muladd/muladd.c``) is called, and SIGINT is sent to this process 1 s into each
call. Prints, per interruption, how long after the signal the ``KeyboardInterrupt``
came, and how long the next call took (it boots the device again), as
docs/PERFORMANCE.md records them.

    target/python-venv/bin/python qemu/python/benches/interrupt.py [--rounds N]
"""

import argparse
import os
import signal
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import neuroncustomop

SOURCE = Path(__file__).resolve().parents[1] / "tests" / "muladd" / "muladd.c"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as build:
        library = neuroncustomop.load(name="muladd", compute_srcs=[SOURCE], build_directory=build)
        x = np.arange(8, dtype=np.int32)
        library.muladd(x, 1, np.int64(0))  # boots the device
        stops, next_calls = [], []
        for _ in range(options.rounds):
            sent = []

            def interrupt() -> None:
                time.sleep(1)
                sent.append(time.perf_counter())
                os.kill(os.getpid(), signal.SIGINT)

            threading.Thread(target=interrupt).start()
            try:
                library.spin(x)
            except KeyboardInterrupt:
                stops.append(time.perf_counter() - sent[0])
            else:
                raise SystemExit("spin returned: no interruption")
            started = time.perf_counter()
            np.testing.assert_array_equal(library.muladd(x, 2, np.int64(1)), 2 * x + 1)
            next_calls.append(time.perf_counter() - started)
    print("stopped after the signal: " + ", ".join(f"{t * 1000:.0f} ms" for t in stops))
    print(f"  median {statistics.median(stops) * 1000:.0f} ms, slowest {max(stops) * 1000:.0f} ms")
    print("next call (boots the device): " + ", ".join(f"{t:.2f} s" for t in next_calls))


if __name__ == "__main__":
    main()
