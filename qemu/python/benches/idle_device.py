"""Idle-device benchmark: what a booted device costs the host while it waits for the
next call. The AWS multicore sample (``examples/cxx_relu_multicore``) is called three
times on 8 cores, then left idle; prints the host CPU its QEMU process took over the
idle seconds (user + system, from ``/proc/PID/stat``), as docs/simulation.md records.

    target/python-venv/bin/python qemu/python/benches/idle_device.py [--seconds S]
"""

import argparse
import os
import subprocess
import time
from pathlib import Path

import numpy as np

import neuroncustomop

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "cxx_relu_multicore"
TICKS = os.sysconf("SC_CLK_TCK")


def qemu_cpu_seconds() -> float:
    """This process's QEMU children's CPU time so far."""
    pids = subprocess.run(["pgrep", "-P", str(os.getpid()), "qemu-system"], capture_output=True, text=True).stdout
    total = 0
    for pid in pids.split():
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    if not pids.split():
        raise SystemExit("idle_device: no QEMU child: did the calls run on the device?")
    return total / TICKS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    options = parser.parse_args()
    library = neuroncustomop.load_library(SAMPLE)
    x = np.linspace(-1, 1, 4096, dtype=np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(library.relu_forward(x, cores=8), np.maximum(x, 0))
    before = qemu_cpu_seconds()
    time.sleep(options.seconds)
    idle = qemu_cpu_seconds() - before
    print(f"an idle 8-core device took {idle:.2f} s of host CPU in {options.seconds:g} s ({100 * idle / options.seconds:.1f}% of a CPU)")


if __name__ == "__main__":
    main()
