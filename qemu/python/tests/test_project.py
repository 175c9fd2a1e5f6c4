"""A C library outside any project, built the vendor's way: name, compute_srcs,
build_directory. Its kernel takes an int and a long long scalar."""

from pathlib import Path

import numpy as np
import pytest

import neuroncustomop
from neuroncustomop import KernelError

SOURCE = Path(__file__).parent / "muladd" / "muladd.c"


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    return tmp_path_factory.mktemp("build")


@pytest.fixture(scope="module")
def muladd(build):
    return neuroncustomop.load(name="muladd", compute_srcs=[SOURCE], build_directory=build)


def reference(x, mul, add):
    """x * mul + add in 32-bit two's complement, as the kernel computes it."""
    return (x.astype(np.int64) * mul + add).astype(np.int32)


def test_int_and_long_long_scalars_reach_the_kernel(muladd):
    x = (np.arange(-500, 500, dtype=np.int32) * 7919).reshape(10, 100)
    add = np.int64(2**33 + 12345)  # the kernel keeps the low 32 bits
    np.testing.assert_array_equal(muladd.muladd(x, -3, add), reference(x, -3, add))
    np.testing.assert_array_equal(muladd.muladd(x, np.int32(2**31 - 1), np.int64(-1)), reference(x, 2**31 - 1, -1))


def test_a_python_int_is_a_c_int_not_a_long_long(muladd):
    x = np.arange(4, dtype=np.int32)
    with pytest.raises(KernelError) as caught:
        muladd.muladd(x, 3, 7)
    assert caught.value.status_name == "SCALAR_KIND_MISMATCH"


def test_the_project_is_in_the_build_directory_and_loads_again(muladd, build):
    assert (build / "muladd" / "src" / "muladd.c").read_bytes() == SOURCE.read_bytes()
    again = neuroncustomop.load(build / "muladd")
    assert (again.name, again.kernels) == ("muladd", ["muladd"])
    x = np.array([1, -2, 3], dtype=np.int32)
    np.testing.assert_array_equal(again.muladd(x, 2, np.int64(1)), [3, -3, 7])


def test_what_load_built_load_library_loads_with_its_multicore(tmp_path):
    built = neuroncustomop.load(name="muladd", compute_srcs=[SOURCE], build_directory=tmp_path, multicore=True)
    assert built.cores == 8
    again = neuroncustomop.load_library(tmp_path / "libmuladd.so")
    assert again.cores == 8 and again.kernels == ["muladd"]


def test_sources_are_c_cpp_or_rust(tmp_path):
    header = tmp_path / "muladd.h"
    header.write_text("")
    with pytest.raises(ValueError, match="muladd.h is not a .cpp, .c or .rs source"):
        neuroncustomop.load(name="muladd", compute_srcs=[SOURCE, header], build_directory=tmp_path)
