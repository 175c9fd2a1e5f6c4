"""Failing kernels and bad inputs: each a clear Python exception."""

import numpy as np
import pytest

import neuroncustomop
from neuroncustomop import KernelError, PackageError, UnknownKernelError


def test_a_failing_kernel_raises_with_its_status_and_untouched_output(relu):
    x = np.arange(-4, 4, dtype=np.int32)  # relu reads float32: DTYPE_MISMATCH
    with pytest.raises(KernelError) as caught:
        relu.relu(x)
    error = caught.value
    assert error.status == 0x40
    assert error.status_name == "DTYPE_MISMATCH"
    assert error.statuses == [0x40]
    assert len(error.stdout) == 1
    assert error.output.dtype == np.int32 and error.output.shape == (8,)
    assert error.result.unwritten.all(), "the kernel wrote nothing: the canary is left"
    assert (error.output == np.int32(np.uint32(0xA5A5A5A5).view(np.int32))).all()
    assert "0x40 DTYPE_MISMATCH" in str(error)
    assert error.status_detail is None, "a tensor access is no argument's failure"
    assert error.findings == [] and not error.stopped


def test_a_kernels_own_code_is_named(scale):
    x = np.ones(8, dtype=np.float32)
    with pytest.raises(KernelError) as caught:
        scale.scale(x, 2.0, out_shape=(4,))  # fewer output elements than x: SHAPE_MISMATCH, code 1
    assert (caught.value.status, caught.value.status_name) == (0x10001, "Op(1)")


def test_a_cxx_ops_scalar_of_the_wrong_kind_says_what_to_pass(example):
    # examples/cxx_scalars: affine(const Tensor&, int64_t offset, double scale). A Python
    # int where the op takes a double is refused before the device runs, with the fix.
    affine = example("cxx_scalars").affine
    with pytest.raises(ValueError) as caught:
        affine(np.ones(4, dtype=np.float32), np.int64(1), 2)
    assert str(caught.value) == (
        "op affine: argument 2 is an int, but its parameter there is a double (tensor, long, double): "
        "pass a float (ncop run: --arg float:V; Python: a float)"
    )
    np.testing.assert_array_equal(
        affine(np.ones(4, dtype=np.float32), np.int64(1), 2.0), np.full(4, 3.0, dtype=np.float32)
    )


def test_a_scalar_of_the_wrong_kind_is_the_kernels_error(scale):
    with pytest.raises(KernelError) as caught:
        scale.scale(np.ones(4, dtype=np.float32), np.int64(2))
    assert caught.value.status_name == "SCALAR_KIND_MISMATCH"
    # The runtime names the argument: scale pulls a tensor, then a float.
    assert caught.value.status_detail == "argument 1: pulled as float, passed as long long"
    assert caught.value.result.status_detail == caught.value.status_detail
    assert "0x9 SCALAR_KIND_MISMATCH: argument 1: pulled as float, passed as long long" in str(caught.value)
    assert "ARGFAIL" not in "".join(caught.value.stdout), "the runtime's line is not the kernel's output"


def test_too_few_inputs_and_a_scalar_for_a_tensor_are_the_kernels_errors(relu, scale):
    with pytest.raises(KernelError) as caught:
        scale.scale(np.ones(4, dtype=np.float32))
    assert caught.value.status_name == "NO_MORE_ARGS"
    assert caught.value.status_detail == "argument 1: pulled as float, but 1 argument was passed (argument 0)"
    with pytest.raises(KernelError) as caught:
        relu.relu(np.float32(1), out_shape=(4,), out_dtype=np.float32)
    assert caught.value.status_name == "EXPECTED_TENSOR"
    assert caught.value.status_detail == "argument 0: pulled as a tensor, passed as float"


def test_an_unknown_kernel_lists_the_kernels(relu):
    with pytest.raises(UnknownKernelError, match="has no kernel relu6; it has relu, relu_tcm, relu_multicore"):
        relu.relu6
    with pytest.raises(UnknownKernelError):
        relu["relu6"]
    assert not hasattr(relu, "relu6")
    with pytest.raises(UnknownKernelError, match="relu6"):
        neuroncustomop.load(relu.package_dir, shape_fns={"relu6": lambda x: x})


@pytest.mark.parametrize(
    "inputs, error, message",
    [
        ((np.ones(4),), TypeError, "float64, which the device does not have"),
        ((np.ones(4, dtype=bool),), TypeError, "bool"),
        ((np.float32(1),) * 11, TypeError, "at most 10"),
        ((), TypeError, "no inputs"),
        ((np.ones(4, np.float32), True), TypeError, "is a bool"),
        ((np.ones(4, np.float32), 2**40), OverflowError, r"np.int64\(1099511627776\)"),
        ((np.ones(4, np.float32), 1e300), OverflowError, "1e\\+300 does not fit a C float"),
        ((np.ones(4, np.float32), np.float16(1)), TypeError, "is a float16"),
        ((np.array(1.0, np.float32),), ValueError, "0-d array"),
        ((np.ones(70_000, np.float32),), ValueError, "argument 0 cannot be passed to the device"),
    ],
)
def test_bad_inputs_are_refused_before_the_device(relu, inputs, error, message):
    with pytest.raises(error, match=message):
        relu.relu(*inputs, out_shape=(4,), out_dtype=np.float32)


def test_an_output_larger_than_device_memory_is_refused(relu):
    with pytest.raises(ValueError, match="bytes of device memory; 134217728 are available"):
        relu.relu(np.ones(4, np.float32), out_shape=(8192, 8192))


def test_the_shape_function_checks_the_number_of_inputs(relu):
    checked = neuroncustomop.load(relu.package_dir, shape_fns={"relu": lambda x: np.empty_like(x)})
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="do not match its shape function"):
        checked.relu(x, x)


def test_cores_and_paths_are_checked(relu):
    with pytest.raises(ValueError, match="1 to 8"):
        relu.relu(np.ones(4, np.float32), cores=9)
    with pytest.raises(PackageError, match="/nonexistent/lib: reading /nonexistent/lib"):
        neuroncustomop.load("/nonexistent/lib")
    with pytest.raises(TypeError, match="load needs name= and compute_srcs="):
        neuroncustomop.load()
    with pytest.raises(TypeError, match="need compute_srcs"):
        neuroncustomop.load(relu.package_dir, build_directory="elsewhere")


def test_max_instructions_stops_a_call_and_the_next_call_works(relu):
    x = np.ones((2, 32768), np.float32)  # about 0.8 million instructions of relu
    with pytest.raises(KernelError, match="stopped on core 0: over-budget") as caught:
        relu.relu.run(x, max_instructions=10_000)
    assert (caught.value.stopped, caught.value.status, caught.value.status_name) == (True, None, "over-budget")
    assert "ran past" in caught.value.report and "max_instructions" in caught.value.report, caught.value.report
    result = relu.relu.run(x)
    np.testing.assert_array_equal(result.output, x)
    assert result.exact == [True], "the device counted exactly"


def test_a_cxx_failure_s_detail_is_the_runtime_s_line_with_the_kernel_s_file_and_line(repo, example):
    """A C++ library's misuse ends the op with the runtime's line (examples/cxx_misuse):
    it is the status' detail, naming the tensor, both dtypes and misuse.cpp's line, and
    the message says it once."""
    misuse = example("cxx_misuse")
    source = (repo / "examples" / "cxx_misuse" / "misuse.cpp").read_text().splitlines()
    line = {name: 1 + next(i for i, text in enumerate(source) if marker in text) for name, marker in LINES.items()}
    x = np.ones(4, np.float32)
    with pytest.raises(KernelError) as caught:
        misuse.wrong_dtype(x)
    error = caught.value
    assert error.status_name == "DTYPE_MISMATCH"
    detail = error.status_detail
    assert detail.startswith("torch: accessor<T, N> at ") and detail.endswith(
        f"misuse.cpp:{line['wrong_dtype']} (wrong_dtype): argument 0 holds float32, but T is int32"
    ), detail
    assert error.result.status_detail == detail
    assert str(error).count(detail) == 1 and f"0x40 DTYPE_MISMATCH: {detail}" in str(error), str(error)
    with pytest.raises(KernelError) as caught:
        misuse.failed_assert(x)
    assert caught.value.status_detail.startswith("assertion failed: t_in.numel() == 0 at ")
    assert caught.value.status_detail.endswith(f"misuse.cpp:{line['failed_assert']} (failed_assert)")
    # A rank, not a dtype: the same line names what is wrong.
    with pytest.raises(KernelError) as caught:
        misuse.wrong_rank(x)
    assert caught.value.status_detail.endswith(
        f"misuse.cpp:{line['wrong_rank']} (wrong_rank): argument 0 has rank 1, but N is 2"
    ), caught.value.status_detail


# The misuses of examples/cxx_misuse/misuse.cpp, by a text of their line.
LINES = {
    "wrong_dtype": "t_in.accessor<int32_t, 1>();",
    "wrong_rank": "t_in.accessor<float, 2>();",
    "failed_assert": "assert(t_in.numel() == 0);",
}
