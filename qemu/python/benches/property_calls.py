"""Property-check benchmark: the raw call rate of a kernel against the rate of a property
run of it (generation, the reference, comparison and bookkeeping added), checked and
unchecked; and how long shrinking a failure of the off-by-one partition kernel
(tests/partition/partition.c) takes on 8 cores, as docs/simulator-speed.md records them ("Property checks").
Raw calls and property runs alternate in rounds: their ratio is the figure to trust on a
shared machine, with this process's CPU time a call on each side (the device's and the
host tier's own work runs in their processes), which the machine's load sways less.

    target/python-venv/bin/python qemu/python/benches/property_calls.py [--calls 800] [--kernel relu] [--host] [--shapes]

``--shapes``: the property run with check's default shapes (``testing.array_shapes``)
instead, against its own calls made raw (no shrinking).
"""

import argparse
import os
import shutil
import time
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

import neuroncustomop
from neuroncustomop import testing

REPO = Path(__file__).resolve().parents[3]


def made_raw(kernel, inputs: list, cores: int, checked: bool) -> tuple:
    """(wall seconds, this process's CPU seconds) of ``kernel``'s calls of ``inputs``."""
    started, cpu = time.perf_counter(), time.process_time()
    for x in inputs:
        kernel.run(x, cores=cores, checked=checked)
    return time.perf_counter() - started, time.process_time() - cpu


def rates(kernel, cores: int, calls: int, checked: bool, rounds: int = 4) -> tuple:
    """(raw calls/s, property calls/s, raw CPU ms a call, property CPU ms a call) of
    ``kernel`` on float32 [4, 1024]: ``rounds`` rounds, each of raw calls then a property
    run of as many, the times summed, so that the machine's load (shared by other builds)
    weighs on both alike. A round is best whole batches (``testing.BATCH``), as a sweep's
    runs are."""
    rng = np.random.default_rng(1)
    inputs = [rng.uniform(-100, 100, (4, 1024)).astype(np.float32) for _ in range(calls // rounds)]
    kernel.run(inputs[0], cores=cores, checked=checked)  # boots the device
    # A property run of the same shape (check's own generation, given the shape and
    # dtype: each call one draw of bytes, which check's sweep makes of its own random
    # bytes), the reference and the comparison on every call.
    strategy = testing.calls_of(kernel, shapes=(4, 1024), dtypes=["float32"])
    relu = lambda x: np.fmax(x, np.float32(0))  # noqa: E731
    # The device booted and the reference's NumPy code loaded, not a call's cost.
    testing.check(kernel, relu, calls=strategy, cores=cores, max_examples=50, seed=0)
    raw_seconds = property_seconds = raw_cpu = property_cpu = 0.0
    raw_calls = property_calls = 0
    for round_ in range(rounds):
        seconds, cpu = made_raw(kernel, inputs, cores, checked)
        raw_seconds, raw_cpu, raw_calls = raw_seconds + seconds, raw_cpu + cpu, raw_calls + len(inputs)
        started, cpu = time.perf_counter(), time.process_time()
        if checked:
            report = testing.check(kernel, relu, calls=strategy, cores=cores, max_examples=len(inputs), seed=1 + round_)
            property_calls += report.calls
        else:
            # check() always runs checked: the unchecked rate is measured with check's own
            # generation and steps (its sweep of this one-draw strategy, a batch at a time,
            # and the property's steps for up to an example's calls in turn), the
            # property's calls unchecked.
            prop = testing._Property(kernel, relu, testing.Tolerance(), cores, None, {})
            prop.options["checked"] = False
            single = testing._one_draw[strategy]
            for batch in range(0, len(inputs), testing.BATCH):
                count = min(testing.BATCH, len(inputs) - batch)
                made = [call for _, call in testing._sweep_calls(single, testing.batch_seed(round_, batch), count)]
                for start in range(0, count, testing.CALLS_PER_EXAMPLE):
                    testing._made(prop, made[start : start + testing.CALLS_PER_EXAMPLE], lambda: None)
                property_calls += count
        property_seconds += time.perf_counter() - started
        property_cpu += time.process_time() - cpu
    return (
        raw_calls / raw_seconds,
        property_calls / property_seconds,
        raw_cpu / raw_calls * 1e3,
        property_cpu / property_calls * 1e3,
    )


def default_shapes(kernel, cores: int, calls: int, rounds: int = 4) -> tuple:
    """(property calls/s, raw calls/s, property CPU ms a call, raw CPU ms a call) of
    ``kernel`` on float32 with check's default shapes (``testing.array_shapes``: 1 to 8
    dimensions biased to the edges, up to 65,536 elements): ``rounds`` rounds, each a
    property run of ``calls / rounds`` calls, then the same calls (the inputs its
    reference was given) made raw, the times summed. A shape's generation is most of
    what a property call adds here."""
    strategy = testing.calls_of(kernel, dtypes=["float32"])
    made = []

    def relu(x):
        made.append(x)
        return np.fmax(x, np.float32(0))

    testing.check(kernel, relu, calls=strategy, cores=cores, max_examples=50, seed=0)  # Hypothesis set up
    raw_seconds = property_seconds = raw_cpu = property_cpu = 0.0
    raw_calls = property_calls = 0
    for round_ in range(rounds):
        made.clear()
        started, cpu = time.perf_counter(), time.process_time()
        property_calls += testing.check(
            kernel, relu, calls=strategy, cores=cores, max_examples=calls // rounds, seed=1 + round_
        ).calls
        property_seconds += time.perf_counter() - started
        property_cpu += time.process_time() - cpu
        seconds, cpu = made_raw(kernel, made, cores, True)
        raw_seconds, raw_cpu, raw_calls = raw_seconds + seconds, raw_cpu + cpu, raw_calls + len(made)
    return (
        property_calls / property_seconds,
        raw_calls / raw_seconds,
        property_cpu / property_calls * 1e3,
        raw_cpu / raw_calls * 1e3,
    )


def shrink(host: bool) -> None:
    """A failure of double_rows on 8 cores found at [1001, 37] (the row count nearest
    [1000, 37] that its bug shows at), shrunk: Hypothesis replays the examples its
    database holds before it generates any, so the failing shape is stored there
    first (the choice sequence of its two integers, in the corpus Hypothesis shrinks)
    and the run shrinks from it. The
    values are ones: only the shape shrinks."""
    import tempfile

    from hypothesis import HealthCheck, given, settings
    from hypothesis.database import InMemoryExampleDatabase, choices_to_bytes

    build = tempfile.mkdtemp(prefix="partition")
    library = neuroncustomop.load(
        name="partition",
        compute_srcs=[REPO / "qemu/python/tests/partition/partition.c"],
        build_directory=build,
        multicore=True,
        target="host" if host else "device",
    )
    kernel = library.double_rows
    database = InMemoryExampleDatabase()
    calls = []

    @settings(database=database, max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.tuples(st.integers(1, 1001), st.integers(1, 37)))
    def doubled(shape):
        calls.append(shape)
        testing.check_call(kernel, lambda x: x * 2, np.ones(shape, np.float32))

    doubled._hypothesis_internal_database_key = b"found at 1001x37"
    # The secondary corpus: its examples are replayed and then shrunk (the primary's are
    # taken to be shrunk already).
    database.save(doubled._hypothesis_internal_database_key + b".secondary", choices_to_bytes((1001, 37)))
    started = time.perf_counter()
    try:
        doubled()
    except testing.CheckFailed as failure:
        print(
            f"double_rows on 8 cores: found at {list(calls[0])}, shrunk to {list(failure.inputs[0].shape)} in "
            f"{time.perf_counter() - started:.1f} s ({len(calls)} calls)"
        )
    else:
        print("double_rows: no failure (unexpected)")
    finally:
        # The bench's own build folder.
        shutil.rmtree(build, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--kernel", default="relu")
    parser.add_argument("--host", action="store_true", help="the host tier")
    parser.add_argument("--shapes", action="store_true", help="check's default shapes (array_shapes), not [4, 1024]")
    options = parser.parse_args()
    print("load average {:.2f} {:.2f} {:.2f}, {} CPUs".format(*os.getloadavg(), os.cpu_count()))
    target = "host" if options.host else "device"
    library = neuroncustomop.load(REPO / "examples" / "relu", target=target)
    for kernel_name, cores in ((options.kernel, 1), ("relu_multicore", 8)):
        kernel = library[kernel_name]
        if options.shapes:
            prop, raw, prop_cpu, raw_cpu = default_shapes(kernel, cores, options.calls)
            print(
                f"{kernel_name} float32 of array_shapes() on {cores} core(s), {target}, checked: property run "
                f"{prop:.1f} calls/s, its calls raw {raw:.1f} calls/s ({prop / raw:.0%}); this process's CPU a "
                f"call {raw_cpu:.2f} ms raw, {prop_cpu:.2f} ms property"
            )
            continue
        for checked in ((True,) if options.host else (True, False)):
            raw, prop, raw_cpu, prop_cpu = rates(kernel, cores, options.calls, checked)
            mode = "checked" if checked else "unchecked"
            print(
                f"{kernel_name} [4, 1024] on {cores} core(s), {target}, {mode}: raw {raw:.1f} calls/s "
                f"({raw / cores:.1f} per core), property run {prop:.1f} calls/s ({prop / raw:.0%} of raw); "
                f"this process's CPU a call {raw_cpu:.2f} ms raw, {prop_cpu:.2f} ms property"
            )
    if not options.shapes:
        shrink(options.host)


if __name__ == "__main__":
    main()
