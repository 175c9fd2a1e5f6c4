"""Property checks (``neuroncustomop.testing``): the strategies stay within the device's
limits and reach its edges, and a kernel whose bug only some shapes show passes its
fixed-shape test but not the property check, which shrinks it to a failing shape and
prints an ``ncop run`` command that fails the same way."""

import os
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuroncustomop
from neuroncustomop import testing

PARTITION = Path(__file__).parent / "partition" / "partition.c"


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    """tests/partition/partition.c on all 8 cores: double_rows (drops the remainder rows)
    and sum_long."""
    build = tmp_path_factory.mktemp("partition")
    return neuroncustomop.load(name="partition", compute_srcs=[PARTITION], build_directory=build, multicore=True)


@settings(max_examples=300, deadline=None)
@given(shape=testing.array_shapes(max_elements=1 << 16))
def test_generated_shapes_are_ones_the_device_holds(shape):
    assert 1 <= len(shape) <= testing.MAX_RANK == 8
    assert all(1 <= d <= testing.MAX_DIM == 65535 for d in shape)
    assert int(np.prod(shape)) <= 1 << 16


def test_the_edges_are_the_sizes_bugs_live_at():
    edges = testing.edge_sizes(8)
    for size in (1, 7, 8, 9, 15, 17, 63, 65, 1023, 1024, 1025, 4095, 4096, 4097, 8191, 65521, 65534, 65535):
        assert size in edges, size
    # Drawn, they come up: a sweep of one dimension meets 1, a multiple of 8 and its
    # neighbours, not only the integers between.
    seen = set()

    @settings(max_examples=400, deadline=None, database=None, derandomize=True)
    @given(testing.dimensions(65535))
    def collect(dim):
        seen.add(dim)

    collect()
    assert {1, 65535} <= seen and seen & {7, 9, 15, 17, 1023, 1025}, sorted(seen)[:40]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_values_include_the_special_floats_and_scalars_their_kind(data):
    array = data.draw(testing.arrays("float32", (64,)))
    assert array.dtype == np.float32 and array.shape == (64,)
    assert isinstance(data.draw(testing.scalars_of("int")), int)
    assert isinstance(data.draw(testing.scalars_of("long")), np.int64)
    value = data.draw(testing.scalars_of("float"))
    assert isinstance(value, float) and (np.isnan(value) or float(np.float32(value)) == value)


def test_special_values_are_generated():
    found = {"nan": False, "inf": False, "-inf": False, "-0": False, "subnormal": False}
    tiny = np.finfo(np.float32).tiny

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(testing.arrays("float32", (16,)))
    def collect(array):
        found["nan"] |= bool(np.isnan(array).any())
        found["inf"] |= bool((array == np.inf).any())
        found["-inf"] |= bool((array == -np.inf).any())
        found["-0"] |= bool(((array == 0) & np.signbit(array)).any())
        found["subnormal"] |= bool(((array != 0) & (np.abs(array) < tiny)).any())

    collect()
    assert all(found.values()), found


def test_an_array_is_a_fill_and_up_to_two_elements_apart_each_at_any_index():
    # One draw of bytes of a fixed length makes the array: a fill, then 0, 1 or 2
    # elements apart; all three counts come up, and the elements apart land anywhere.
    apart_counts, where = set(), set()

    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(testing.arrays("int32", (64,)))
    def collect(array):
        values, counts = np.unique(array, return_counts=True)
        fill = values[np.argmax(counts)]
        apart = np.flatnonzero(array != fill)
        apart_counts.add(len(apart))
        where.update(apart.tolist())

    collect()
    assert apart_counts == {0, 1, 2}, apart_counts
    assert len(where) > 32 and {0, 63} & where, sorted(where)


def test_a_call_of_one_shape_is_one_draw_and_shrinks_to_one_element_apart(relu):
    # calls_of with a fixed shape and one dtype: each call is one draw of bytes. A
    # reference that is wrong for negative values fails; the failure shrinks to one call
    # of zeros but for one negative element, the first. (From a call found with a
    # negative fill, Hypothesis' shrinking can end instead at a fill of the smallest
    # negative value: a change of the fill alone passes. This seed's call does not.)
    calls = testing.calls_of(relu.relu, shapes=(4, 64), dtypes=["float32"])
    with pytest.raises(testing.CheckFailed) as caught:
        testing.check(relu.relu, lambda x: x, calls=calls, max_examples=300, seed=2)
    (x,) = caught.value.inputs
    assert x.shape == (4, 64) and x.dtype == np.float32
    flat = x.reshape(-1)
    assert np.flatnonzero(flat).tolist() == [0] and flat[0] < 0, flat[:8]
    assert "1 of 256 elements differ" in caught.value.reason, caught.value


def test_without_the_databases_choice_form_one_draw_calls_are_hypothesis_runs(relu, monkeypatch):
    # The sweep hands a failing call to Hypothesis through the example database's form
    # of a choice sequence, which Hypothesis has from 6.125 on and does not document.
    # Without it, one-draw calls are made by Hypothesis runs, and a failure is still
    # found and shrunk to one call.
    monkeypatch.setattr(testing, "_choices_to_bytes", None)

    def no_sweep(*_):
        raise AssertionError("the sweep ran without the choice form")

    monkeypatch.setattr(testing, "_sweep_calls", no_sweep)
    calls = testing.calls_of(relu.relu, shapes=(4, 64), dtypes=["float32"])
    with pytest.raises(testing.CheckFailed) as caught:
        testing.check(relu.relu, lambda x: x, calls=calls, max_examples=300, seed=2)
    (x,) = caught.value.inputs
    assert x.shape == (4, 64) and x.dtype == np.float32
    assert (x < 0).any() and "elements differ" in caught.value.reason, caught.value


def test_a_one_draw_sweep_is_its_seeds_and_reaches_the_special_values(relu):
    # A batch of one-draw calls is made of seeded random bytes, not a Hypothesis run:
    # the same seed makes the same calls, each batch's first is zeros (Hypothesis'
    # simplest), and the fills reach every kind of float.
    calls = testing.calls_of(relu.relu, shapes=(4, 64), dtypes=["float32"])
    seen = []

    def reference(x):
        seen.append(x)
        return np.fmax(x, np.float32(0))

    runs = []
    for seed in (7, 7, 8):
        seen.clear()
        report = testing.check(relu.relu, reference, calls=calls, max_examples=2 * testing.BATCH, seed=seed)
        assert report.calls == len(seen) == 2 * testing.BATCH and report.batches == [0, 1], report
        runs.append([x.tobytes() for x in seen])
    assert runs[0] == runs[1] != runs[2]
    assert runs[0][0] == runs[0][testing.BATCH] == bytes(256 * 4) != runs[0][1]
    values = np.concatenate([x.reshape(-1) for x in seen])
    tiny = np.finfo(np.float32).tiny
    assert np.isnan(values).any() and (values == np.inf).any() and (values == -np.inf).any()
    assert ((values == 0) & np.signbit(values)).any() and ((values != 0) & (np.abs(values) < tiny)).any()


def test_the_signature_comes_from_the_shape_function(repo):
    def scale(x, factor: float):
        return np.empty_like(x)

    scale_lib = neuroncustomop.load(repo / "examples" / "c_kernel", shape_fns={"scale": scale})
    assert testing.signature(scale_lib.scale) == ("tensor", "float")
    assert testing.signature(scale_lib.scale_multicore) == ("tensor",)  # none given: one tensor
    # A kernel that fails for any dtype but float32 takes only float32.
    assert testing.accepted_dtypes(scale_lib.scale) == ("float32",)


def test_an_off_by_one_partition_passes_its_fixed_test_and_the_property_check_shrinks_it(partition, repo, ncop):
    kernel = partition.double_rows
    # The fixed-shape test its author wrote passes: 64 rows divide by 8 cores.
    x = np.random.default_rng(1).uniform(-10, 10, (64, 37)).astype(np.float32)
    np.testing.assert_array_equal(kernel(x), x * 2)

    calls = testing.calls_of(kernel, shapes=testing.array_shapes(rank=2, max_elements=1 << 15))
    with pytest.raises(testing.CheckFailed) as caught:
        testing.check(kernel, lambda x: x * 2, calls=calls, max_examples=100, seed=3)
    failure = caught.value
    rows = failure.inputs[0].shape[0]
    assert rows % 8 != 0, failure
    assert failure.inputs[0].shape == (1, 1), f"shrunk to the smallest shape: {failure}"
    assert "never written" in failure.reason
    assert failure.first_failure is not None and failure.shrink_seconds is not None
    # The command it prints fails when run (exit 1), for the same reason.
    command = shlex.split(failure.command)
    assert command[:3] == ["ncop", "run", "double_rows"]
    assert os.path.isfile(os.path.join(failure.directory, "arg0.npy"))
    run = subprocess.run([*ncop, *command[1:]], cwd=repo, capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "never written" in run.stdout, run.stdout


def test_a_correct_kernel_passes_and_says_how_many_calls(relu):
    report = testing.check(
        relu.relu_tcm, lambda x: np.fmax(x, np.float32(0)), max_examples=15, seed=1,
        calls=testing.calls_of(relu.relu_tcm, shapes=testing.array_shapes(max_elements=1 << 12)),
    )
    assert report.calls == 15 and report.batches == [0]  # fewer than a batch (testing.BATCH)


def test_calls_the_shape_function_refuses_are_left_out_and_a_batch_is_still_its_calls(repo):
    # A property run's examples hold several calls: one the op's shape function refuses
    # is left out of its example (not run, not counted). Here it refuses 15 sizes in 16,
    # so a batch's first Hypothesis run (9 examples at most) ends before its 25th call:
    # other runs make the rest, and the 25 calls are still batch 0's.
    def multiples_of_16(x):
        if x.size % 16:
            raise ValueError("relu takes a multiple of 16 elements here")
        return np.empty_like(x)

    library = neuroncustomop.load(repo / "examples" / "relu", shape_fns={"relu": multiples_of_16})
    sizes = []

    def reference(x):
        sizes.append(x.size)
        return np.fmax(x, np.float32(0))

    calls = testing.calls_of(library.relu, shapes=testing.array_shapes(max_elements=256), dtypes=["float32"])
    report = testing.check(library.relu, reference, calls=calls, max_examples=25, seed=4)
    assert report.calls == len(sizes) == 25 and report.batches == [0], (report, sizes)
    assert all(size % 16 == 0 for size in sizes), sizes
    assert len(set(sizes)) > 3, f"the calls try many shapes: {sizes}"


def test_shards_split_the_sweep_into_disjoint_batches(relu):
    calls = testing.calls_of(relu.relu, shapes=testing.array_shapes(max_elements=256))
    seen = []

    def reference(x):
        seen.append(x.tobytes() + repr((x.dtype, x.shape)).encode())
        return np.fmax(x, np.float32(0))

    # A shard's calls are the same on every run: each batch is a Hypothesis run from
    # its own seed.
    runs = []
    for shard in ((0, 2), (0, 2), (1, 2)):
        seen.clear()
        report = testing.check(relu.relu, reference, calls=calls, max_examples=testing.BATCH + 10, shard=shard, seed=5)
        runs.append((report.batches, list(seen)))
    assert [batches for batches, _ in runs] == [[0, 2], [0, 2], [1, 3]]
    assert runs[0][1] == runs[1][1] != runs[2][1]
    assert testing.batch_seed(5, 2) == testing.batch_seed(5, 2) != testing.batch_seed(6, 2)


# The check inside a test of your own: pytest and Hypothesis' @given, a session fixture.
@settings(max_examples=10, deadline=None)
@given(x=testing.arrays("float32", testing.array_shapes(max_elements=2048)))
def test_relu_under_given(relu, x):
    testing.check_call(relu.relu_tcm, lambda x: np.fmax(x, np.float32(0)), x)


def test_a_mismatch_names_the_first_element_and_the_command_compares(relu, tmp_path):
    x = np.array([-1.0, 2.0, -3.0], np.float32)
    with pytest.raises(testing.CheckFailed) as caught:
        testing.check_call(relu.relu, lambda x: np.abs(x), x, directory=str(tmp_path))
    assert "2 of 3 elements differ from the reference; the first at [0]: got 0.0, want 1.0" in str(caught.value)
    assert f"--expect {tmp_path / 'want.npy'} --rtol 0.0 --atol 0.0 --equal-nan" in caught.value.command
    np.testing.assert_array_equal(np.load(tmp_path / "arg0.npy"), x)


def test_diff_tiers_names_a_long_accumulator_down_to_its_store(tmp_path_factory, repo, ncop):
    """sum_long sums in an `unsigned long`: 32 bits on the device, 64 on the host tier.
    The first element past 2^32 differs; each tier's store is named by its line."""
    build = tmp_path_factory.mktemp("tiers")
    neuroncustomop.load(name="partition", compute_srcs=[PARTITION], build_directory=build, multicore=True)
    library = neuroncustomop.load(build / "partition")  # the project: the host tier builds from it
    x = np.full(8, 2**31 - 1, np.int32)
    diff = testing.diff_tiers(library.sum_long, x, cores=1, out_dtype=np.int64)
    want = np.cumsum(x.astype(np.int64))
    np.testing.assert_array_equal(diff.host, want)
    np.testing.assert_array_equal(diff.device, want & 0xFFFFFFFF)
    assert (diff.differing, diff.total, diff.long_truncated, diff.first) == (6, 8, 6, (2,))
    report = str(diff)
    assert "first at [2]: device 2147483645, host 6442450941" in report, report
    line = SUM_LONG_STORE
    assert f"last written on the device by core 0, sum_long (" in report and f"partition.c:{line})" in report, report
    assert report.count(f"partition.c:{line}") == 2, f"both tiers name the store's line {line}: {report}"
    assert "a `long` is 32 bits on the device" in report
    # The same from the command line: ncop run --diff-tiers, exit 1.
    np.save(build / "x.npy", x)
    options = ["run", "sum_long", "--lib", str(build / "partition"), "--arg", str(build / "x.npy"), "--output", "int64:8", "--cores", "1"]
    options.append("--diff-tiers")
    run = subprocess.run([*ncop, *options], cwd=repo, capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "DIFFER: 6 of 8 elements differ" in run.stdout and "first at [2]: device 2147483645, host 6442450941" in run.stdout
    assert run.stdout.count(f"partition.c:{line})") == 2, run.stdout


# The line of sum_long's store into the output.
SUM_LONG_STORE = next(
    number for number, text in enumerate(PARTITION.read_text().splitlines(), 1) if "dst[i] = (int64_t)sum;" in text
)


def test_a_reference_that_cannot_take_the_generated_call_says_to_name_the_parameters(relu):
    # A Rust or C library's parameters cannot be read: the call is one tensor, and a
    # reference of three parameters is told how to name them.
    x = np.array([-1.0, 2.0], np.float32)
    with pytest.raises(TypeError, match=r"calls=calls_of\(kernel, kinds=\['tensor', 'float', \.\.\.\]\)"):
        testing.check_call(relu.relu, lambda x, lo, hi: np.clip(x, lo, hi), x)
