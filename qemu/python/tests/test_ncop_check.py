"""``ncop check`` end to end, as an author runs it: the command line's property run
(qemu/src/cli/check.rs runs ``neuroncustomop.testing`` in the given Python) finds a
kernel's off-by-one partition, shrinks it and prints a reproducer that fails when run;
passes a correct kernel; and its shards split one seeded sweep into disjoint,
reproducible parts."""

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import neuroncustomop

PARTITION = Path(__file__).parent / "partition" / "partition.c"

# The references, FILE.py:FUNCTION as `--ref` takes them. relu logs each call it is
# asked about (dtype, shape, a digest of the values) when CALLS_LOG names a file.
REFERENCES = """
import hashlib
import os

import numpy as np


def double(x):
    return x * 2


def relu(x):
    log = os.environ.get("CALLS_LOG")
    if log:
        with open(log, "a") as calls:
            calls.write(f"{x.dtype} {x.shape} {hashlib.sha256(x.tobytes()).hexdigest()[:16]}\\n")
    return np.fmax(x, np.float32(0))
"""


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    path = tmp_path_factory.mktemp("references") / "ref.py"
    path.write_text(REFERENCES)
    return path


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    """tests/partition/partition.c built the vendor's way for all 8 cores, its
    libpartition.so: double_rows leaves the remainder rows of rows / 8 unwritten."""
    build = tmp_path_factory.mktemp("partition")
    neuroncustomop.load(name="partition", compute_srcs=[PARTITION], build_directory=build, multicore=True)
    return build / "libpartition.so"


@pytest.fixture
def run_ncop(ncop):
    """``run_ncop(*args, cwd=, env=)``: the checkout's ``ncop`` with ``args``; ``check``
    runs in this test's Python."""
    return functools.partial(_run_ncop, ncop)


def _run_ncop(ncop, *args, cwd, env=None):
    command = [*ncop, *args]
    if args[0] == "check":
        command += ["--python", sys.executable]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)


def test_ncop_check_shrinks_an_off_by_one_partition_to_a_command_that_fails(partition, references, repo, tmp_path, run_ncop):
    # The failing call's inputs go to this test's folder, not the system's temporary one.
    saved = dict(os.environ, NCOP_CHECK_DIR=str(tmp_path))
    found = run_ncop(
        "check", "double_rows", "--lib", str(partition), "--ref", f"{references}:double", "--rank", "2",
        "--max-elements", "32768", "--max-examples", "100", "--seed", "3", cwd=repo, env=saved,
    )
    assert found.returncode == 1, found.stdout + found.stderr
    assert "partition / double_rows on the device: FAILED" in found.stdout, found.stdout
    case = re.search(r"kernel double_rows on 8 core\(s\) with float32 \((\d+), (\d+)\): (.*)", found.stdout)
    assert case is not None, found.stdout
    rows = int(case[1])
    assert rows % 8 != 0 and "never written" in case[3], found.stdout
    assert re.search(r"first found with float32 \(\d+, \d+\), shrunk in [\d.]+ s", found.stdout), found.stdout
    command = next(line for line in found.stdout.splitlines() if line.startswith("reproduce: "))
    words = shlex.split(command[len("reproduce: ") :])
    assert words[:3] == ["ncop", "run", "double_rows"] and "--cores" in words, words
    assert (tmp_path / "arg0.npy").is_file() and (tmp_path / "want.npy").is_file()
    reproduced = run_ncop(*words[1:], cwd=repo)
    assert reproduced.returncode == 1, reproduced.stdout + reproduced.stderr
    assert "never written" in reproduced.stdout, reproduced.stdout


def test_ncop_check_passes_a_correct_kernel(relu, references, repo, run_ncop):
    passed = run_ncop(
        "check", "relu_tcm", "--lib", relu.package_dir, "--ref", f"{references}:relu", "--max-examples", "10",
        "--max-elements", "4096", "--seed", "1", cwd=repo,
    )
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "relu / relu_tcm on the device: OK, 10 calls passed" in passed.stdout, passed.stdout


def test_ncop_check_shards_are_disjoint_parts_of_one_reproducible_sweep(relu, references, repo, tmp_path, run_ncop):
    def sweep(name, *options):
        log = tmp_path / f"{name}.calls"
        env = dict(os.environ, CALLS_LOG=str(log))
        run = run_ncop(
            "check", "relu", "--lib", relu.package_dir, "--ref", f"{references}:relu", "--max-elements", "256",
            "--dtype", "float32", "--seed", "5", *options, cwd=repo, env=env,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        return run.stdout, log.read_text().splitlines()

    # A batch is 100 calls (testing.BATCH): the whole sweep of 200 is batches 0 and 1,
    # each shard of 100 one of them, run by processes of their own.
    whole, whole_calls = sweep("whole", "--max-examples", "200")
    first, first_calls = sweep("first", "--shard", "0/2", "--max-examples", "100")
    second, second_calls = sweep("second", "--shard", "1/2", "--max-examples", "100")
    assert "batches 0..1 step 1" in whole, whole
    assert "batches 0..0 step 2" in first and "batches 1..1 step 2" in second, first + second
    assert len(first_calls) == len(second_calls) == 100 and first_calls != second_calls
    assert whole_calls[:100] == first_calls, "the same seed makes the same calls in another process"
    assert whole_calls == first_calls + second_calls, "the shards split the whole sweep, each batch run once"
