"""torch.ops calls in child processes: a child forked after the parent's first call (a
DataLoader's workers, multiprocessing under fork) boots a device of its own on its first
call, and the parent's device keeps running; a spawned child loads the library itself."""

import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import neuroncustomop


@pytest.fixture(scope="module")
def built(repo, tmp_path_factory):
    """examples/cxx_mlp_training's relu built as its build.py does; its lib<name>.so path."""
    folder = tmp_path_factory.mktemp("fork")
    for name in ("relu.cpp", "shape.cpp"):
        shutil.copy(repo / "examples" / "cxx_mlp_training" / name, folder)
    neuroncustomop.load(
        name="relu", compute_srcs=[folder / "relu.cpp"], shape_srcs=[folder / "shape.cpp"], build_directory=folder
    )
    return folder / "librelu.so"


def inputs(count):
    generator = torch.Generator().manual_seed(11)
    return [torch.randn(4, 16, generator=generator) for _ in range(count)]


def children(pid):
    """The processes ``pid`` started that still run (Linux's per-thread lists)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.update(int(child) for child in (task / "children").read_text().split())
        except FileNotFoundError:
            pass  # a thread that ended while the list was read
    return found


def relu(x):
    return torch.ops.my_ops.relu_forward(x)


def load_and_relu(path, x):
    """A spawned child's work: it starts without the library."""
    neuroncustomop.load_library(path)
    return relu(x)


class Relus(Dataset):
    """Each item the op's result on one input: the work a DataLoader worker does."""

    def __init__(self, xs):
        self.xs = xs

    def __len__(self):
        return len(self.xs)

    def __getitem__(self, index):
        return relu(self.xs[index])


@pytest.fixture
def booted(built):
    """The library loaded, its device booted by a call in this process: the processes
    that call started (its QEMU). The library is kept for the test."""
    library = neuroncustomop.load_library(built)
    before = children(os.getpid())
    x = inputs(1)[0]
    assert torch.equal(relu(x), torch.relu(x))
    devices = children(os.getpid()) - before
    assert devices, "the call ran on a device this process started"
    yield devices
    del library


def the_parent_s_device_is_untouched(devices):
    """The parent's devices still run, and serve its next call without a new boot."""
    running = children(os.getpid())
    assert devices <= running
    x = inputs(2)[1]
    assert torch.equal(relu(x), torch.relu(x))
    assert not children(os.getpid()) - running, "the call booted a device again"


def test_a_dataloader_s_forked_workers_get_devices_of_their_own(booted):
    xs = inputs(6)
    loader = DataLoader(Relus(xs), batch_size=None, num_workers=2, multiprocessing_context="fork")
    results = list(loader)
    assert len(results) == len(xs)
    for result, x in zip(results, xs):
        assert torch.equal(result, torch.relu(x))
    the_parent_s_device_is_untouched(booted)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_children_call_the_op(booted, built, method):
    xs = inputs(4)
    with multiprocessing.get_context(method).Pool(2) as pool:
        if method == "fork":
            results = pool.map(relu, xs)
        else:
            results = pool.starmap(load_and_relu, [(str(built), x) for x in xs])
    for result, x in zip(results, xs):
        assert torch.equal(result, torch.relu(x))
    the_parent_s_device_is_untouched(booted)


# A parent that forks a child which calls the op and ends through Python's own exit
# (its objects dropped, unlike a multiprocessing worker's os._exit), then checks its
# device still runs and serves it.
FORK_AND_EXIT = """
import os, sys
from pathlib import Path
import torch, neuroncustomop
neuroncustomop.load_library(sys.argv[1])
def children():
    return {int(c) for t in Path(f"/proc/{os.getpid()}/task").iterdir() for c in (t / "children").read_text().split()}
x = torch.linspace(-2, 2, 24).reshape(4, 6)
assert torch.equal(torch.ops.my_ops.relu_forward(x), torch.relu(x))
devices = children()
pid = os.fork()
if pid == 0:
    sys.exit(0 if torch.equal(torch.ops.my_ops.relu_forward(x * 2), torch.relu(x * 2)) else 3)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert devices and devices <= children(), (devices, children())
assert torch.equal(torch.ops.my_ops.relu_forward(x * 3), torch.relu(x * 3))
assert children() == devices
print("parent untouched")
"""


def test_a_forked_child_that_exits_leaves_the_parent_s_device_running(built, tmp_path):
    script = tmp_path / "fork_and_exit.py"
    script.write_text(FORK_AND_EXIT)
    done = subprocess.run([sys.executable, str(script), str(built)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "parent untouched"
