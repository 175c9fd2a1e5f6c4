"""A C++ library on the AWS torch API (examples/cxx_ops), called from Python: its
output shapes come from its own C++ shape functions (`shape_srcs`)."""

import numpy as np
import pytest

import neuroncustomop


@pytest.fixture(scope="module")
def ops(repo):
    """examples/cxx_ops: float_ops(x, y) -> [20, n] float32, int_ops(k, m) -> [11, n] int32."""
    return neuroncustomop.load(repo / "examples" / "cxx_ops")


def test_the_output_shape_and_dtype_come_from_the_cxx_shape_function(ops):
    rng = np.random.default_rng(7)
    x = rng.uniform(-3, 3, 48).astype(np.float32)
    y = rng.uniform(0.5, 2, 48).astype(np.float32)
    out = ops.float_ops(x, y)
    assert out.shape == (20, 48) and out.dtype == np.float32  # not x's (48,)
    np.testing.assert_array_equal(out[0], np.abs(x))
    np.testing.assert_array_equal(out[16], x * y)
    np.testing.assert_array_equal(out[18], x * np.float32(3))


def test_an_integer_kernel_gets_an_integer_output(ops):
    k = np.arange(-16, 16, dtype=np.int32)
    m = np.arange(32, dtype=np.int32)
    out = ops.int_ops(k, m)
    assert out.shape == (11, 32) and out.dtype == np.int32
    np.testing.assert_array_equal(out[1], k + 5)
    np.testing.assert_array_equal(out[10], k + m)


def test_an_explicit_output_shape_still_wins(ops):
    x = np.ones(8, dtype=np.float32)
    result = ops.float_ops.run(x, x, out_shape=(20, 8), out_dtype=np.float32)
    assert result.output.shape == (20, 8)
