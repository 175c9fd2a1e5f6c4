"""The op author's path from Python: `ncop new` makes a Rust library in a temporary
folder outside the checkout, and it is loaded and checked against NumPy."""

import os
import subprocess

import numpy as np
import pytest

import neuroncustomop
from neuroncustomop import KernelError


@pytest.fixture(scope="module")
def my_op(repo, tmp_path_factory):
    project = tmp_path_factory.mktemp("ops") / "my_op"
    cargo = os.environ.get("CARGO", "cargo")
    ncop = [cargo, "run", "--quiet", "--release", "-p", "neuroncustomop-sim", "--bin", "ncop", "--"]
    subprocess.run([*ncop, "new", str(project), "--lang", "rust"], cwd=repo, check=True)
    return neuroncustomop.load(project)


def test_the_new_librarys_kernel_matches_numpy(my_op):
    assert (my_op.name, my_op.kernels) == ("my_op", ["scale"])
    x = np.random.default_rng(9).standard_normal((8, 100)).astype(np.float32)
    np.testing.assert_array_equal(my_op.scale(x, 2.5), x * np.float32(2.5))


def test_an_extra_input_is_the_templates_own_error(my_op):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(KernelError) as caught:
        my_op.scale(x, 2.0, x)
    assert caught.value.status_name == "KERNEL+2"  # the template's TOO_MANY_ARGS
    assert caught.value.result.unwritten.all()
