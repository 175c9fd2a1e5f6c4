"""A C++ library on the AWS torch API (examples/cxx_ops), called from Python: its
output shapes come from its own C++ shape functions (`shape_srcs`)."""

import numpy as np
import pytest

import neuroncustomop


@pytest.fixture(scope="module")
def ops(example):
    """examples/cxx_ops: float_ops(x, y) -> [20, n] float32, int_ops(k, m) -> [11, n] int32."""
    return example("cxx_ops")


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


def test_a_multicore_library_runs_on_8_cores_and_on_1_fails_naming_the_idle_cores(example):
    """examples/cxx_relu_multicore (the AWS sample): its customop.json says
    "multicore": true, so calls run on 8 cores, as `ncop run` does; on 1 core it writes
    1/8 of its output, which is an error, not a result with NaN canaries in it."""
    relu = example("cxx_relu_multicore")
    assert relu.cores == 8
    x = np.linspace(-4, 4, 1000, dtype=np.float32)
    np.testing.assert_array_equal(relu.relu_forward(x), np.maximum(x, np.float32(0)))
    with pytest.raises(neuroncustomop.UnwrittenOutputError) as caught:
        relu.relu_forward(x, cores=1)
    assert "875 of 1000 output elements were never written; cores 1-7 wrote nothing" in str(caught.value)
    # The hint in Python's terms: torch.ops takes no cores=, so the library's multicore.
    assert "(in Python: cores=8, or load(..., multicore=True) for every call and torch.ops; partial_output=True)" in str(
        caught.value
    )
    assert isinstance(caught.value, neuroncustomop.KernelError)
    assert int(caught.value.result.unwritten.sum()) == 875
    # Declared partial: the call returns, and `unwritten` marks what no core wrote.
    partial = relu.relu_forward.run(x, cores=1, partial_output=True)
    assert int(partial.unwritten.sum()) == 875
    np.testing.assert_array_equal(partial.output[:125], np.maximum(x[:125], np.float32(0)))
