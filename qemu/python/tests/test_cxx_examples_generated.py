"""Property tests of the C++ examples (examples/cxx_*): each kernel on generated calls
(shapes biased to the edges: 1, primes, multiples of 8 and one either side, the TCM
chunk's neighbours; values with ±0, subnormals, ±inf and NaN), run checked on the
simulated device and compared with a NumPy reference, a failure shrunk to its smallest
call with the ``ncop run`` command that reproduces it (``neuroncustomop.testing``).

The examples' fixed-case tests are in qemu/tests/cxx.rs (every example), test_cxx.py
(cxx_ops, cxx_relu_multicore) and test_torch.py (cxx_scalars, cxx_mlp_training); these
add the shapes and values nobody picked. Each runs a few calls from a fixed seed, so a
CI run is deterministic and short."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import neuroncustomop
from neuroncustomop import KernelError, testing

# Calls per property (each checked on the device) and the sweep's seed.
CALLS = 8
SEED = 38


def shapes(rank=None, max_elements=1 << 11):
    return testing.array_shapes(rank=rank, max_elements=max_elements)


def check(kernel, reference, rank=None, max_elements=1 << 11, calls=CALLS, dtypes=None, **options):
    """``testing.check`` of ``kernel`` on ``calls`` generated calls (every tensor of a
    call of one shape of ``rank`` dimensions, of ``dtypes``, by default those the
    kernel takes)."""
    strategy = testing.calls_of(kernel, shapes=shapes(rank, max_elements), dtypes=dtypes)
    return testing.check(kernel, reference, calls=strategy, max_examples=calls, seed=SEED, **options)


def relu(x):
    """``x > 0 ? x : 0``, as the C++ kernels write it: NaN and -0.0 give +0.0."""
    return np.where(x > 0, x, np.float32(0))


def relu_backward(grad, x):
    return np.where(x > 0, grad, np.float32(0))


# examples/cxx_add: the reference guide's element-accessor add, over 1-D float32.
def test_cxx_add_on_generated_calls(example):
    add = example("cxx_add").tensor_add
    check(add, np.add, rank=1)


# examples/cxx_relu: element accessors over 1-D float32, forward and backward.
def test_cxx_relu_on_generated_calls(example):
    library = example("cxx_relu")
    check(library.relu_forward, relu, rank=1)
    check(library.relu_backward, relu_backward, rank=1)


# examples/cxx_relu_tcm: the TCM accessor in chunks of 1,024 floats, any rank; shapes
# up to 4 chunks, so the last partial chunk is generated.
def test_cxx_relu_tcm_on_generated_calls(example):
    check(example("cxx_relu_tcm").relu_forward, relu, max_elements=1 << 12)


# examples/cxx_relu_multicore (the AWS inference sample's multicore flavour): on its 8
# declared cores over generated shapes...
def test_cxx_relu_multicore_on_generated_calls(example):
    library = example("cxx_relu_multicore")
    assert library.cores == 8
    check(library.relu_forward, relu, max_elements=1 << 12)


# ... and on generated core counts: each core rectifies its share (n // 8 elements, the
# last core the rest) of a partition made for get_cpu_count() = 8, so on c < 8 cores
# exactly the first c shares are written, and nothing else.
@settings(max_examples=CALLS, deadline=None, derandomize=True, database=None)
@given(x=testing.arrays("float32", shapes(max_elements=1 << 12)), cores=st.integers(1, 8))
def test_cxx_relu_multicore_writes_the_shares_of_the_cores_it_ran_on(example, x, cores):
    library = example("cxx_relu_multicore")
    result = library.relu_forward.run(x, cores=cores, partial_output=True)
    share = x.size // 8
    written = np.arange(x.size) < (x.size if cores == 8 else share * cores)
    np.testing.assert_array_equal(result.unwritten.reshape(-1), ~written, err_msg=f"{cores} cores, {x.shape}")
    np.testing.assert_array_equal(result.output.reshape(-1)[written], relu(x).reshape(-1)[written])
    assert len(result.statuses) == cores


# examples/cxx_mlp_training: the training sample's 2-D element accessors (its folder is
# the sample's, with no customop.json: built as its build.py builds it).
def test_cxx_mlp_training_on_generated_calls(repo, tmp_path):
    folder = repo / "examples" / "cxx_mlp_training"
    library = neuroncustomop.load(
        name="relu", compute_srcs=[folder / "relu.cpp"], shape_srcs=[folder / "shape.cpp"], build_directory=tmp_path
    )
    check(library.relu_forward, relu, rank=2)
    check(library.relu_backward, relu_backward, rank=2)


# examples/cxx_ops: every documented element-wise operation, a row each. The float rows
# of libm functions are compared within 1e-5 (the device's libm and NumPy's round
# differently in the last bits; qemu/tests/cxx.rs compares them bit for bit with the
# runtime's own libm), the others exactly.
def float_ops(x, y):
    a = np.abs(x)
    x64, y64, a64 = (v.astype(np.float64) for v in (x, y, a))
    half, two, three, four = (np.float32(v) for v in (0.5, 2, 3, 4))
    rows = [
        np.abs(x), np.ceil(x), np.floor(x), np.sin(x64), np.cos(x64), np.tan(x64), np.log(a64), np.log2(a64),
        np.log10(a64), np.exp(x64), np.power(x64, 2), np.power(2, x64), np.power(a64, y64), np.clip(x, -1, 1),
        x + half * y, x - two * y, x * y, x / y, x * three, x / four,
    ]
    return np.stack([row.astype(np.float32) for row in rows])


def int_ops(k, m):
    k, m = k.astype(np.int64), m.astype(np.int64)
    truncated = np.sign(k) * (np.abs(k) // 7)  # C's division truncates
    rows = [np.abs(k), k + 5, k - 3 * m, k * m, truncated, k * k, np.clip(k, -10, 10), k & m, 3 | k, ~k, k + m]
    return np.stack(rows).astype(np.int32)  # each computed in 64 bits, kept as int32: it wraps


def test_cxx_ops_on_generated_calls(example):
    library = example("cxx_ops")
    check(library.float_ops, float_ops, rank=1, rtol=1e-5, atol=1e-37)
    check(library.int_ops, int_ops, rank=1)


# examples/cxx_scalars: int64_t, double, int and float arguments, generated too.
def affine(x, offset, scale):
    return x * np.float32(scale) + np.float32(offset)  # torch::mul, then torch::add: in float


def test_cxx_scalars_on_generated_calls(example):
    library = example("cxx_scalars")
    check(library.affine, affine)
    check(library.mask_minus_one, lambda x, mask: ((x.astype(np.int64) & int(mask)) - 1).astype(np.int32))
    check(library.scale_add, lambda x, count, factor: x * np.float32(factor) + np.float32(count), rank=1)
    check(library.to_half, lambda x: x.astype(np.float32).astype(np.float16))
    check(library.to_bfloat16, lambda x: x.astype(np.float32) + np.float32(0))


# stack_sum's second element is where its stack array is, which no reference knows: the
# sum alone is compared, the 65,536 additions in the kernel's order.
@settings(max_examples=4, deadline=None, derandomize=True, database=None)
@given(x=testing.arrays("float32", shapes(rank=1)))
def test_cxx_scalars_stack_sum_on_generated_calls(example, x):
    got = example("cxx_scalars").stack_sum(x)
    cyclic = np.resize(x, 65536)
    with np.errstate(over="ignore", invalid="ignore"):
        want = np.add.accumulate(cyclic, dtype=np.float32)[-1]
    np.testing.assert_array_equal(got[0], want)


# examples/cxx_softmax: each row's softmax with the runtime's expf; within 1e-5. Its
# dtype is given: the probe for the dtypes a kernel takes passes a 1-D tensor, whose
# size(1) ends the op before the accessor says which dtypes it refuses.
def softmax(x):
    x = x.astype(np.float64)
    largest = np.fmax.reduce(x, axis=1, keepdims=True)  # the kernel's fmaxf: NaN is passed over
    e = np.exp(x - largest)
    return e / e.sum(axis=1, keepdims=True)


def test_cxx_softmax_on_generated_calls(example):
    check(example("cxx_softmax").softmax, softmax, rank=2, dtypes=["float32"], rtol=1e-5, atol=1e-6)


# examples/cxx_stream: stream accessors, any rank; copy_coherent's read stream opened on
# a tensor with an open write stream is refused whatever the shape.
def test_cxx_stream_on_generated_calls(example):
    library = example("cxx_stream")
    check(library.tensor_add, np.add)
    check(library.copy_incoherent, lambda x, y: x)


@settings(max_examples=4, deadline=None, derandomize=True, database=None)
@given(x=testing.arrays("float32", shapes()))
def test_cxx_stream_refuses_a_read_under_an_open_write_for_every_shape(example, x):
    with pytest.raises(KernelError) as caught:
        example("cxx_stream").copy_coherent(x, x)
    assert caught.value.status_name == "INCOHERENT_ACCESS"


# examples/cxx_misuse is a misuse demo: its kernels must fail, each with its named
# status, on whatever input (its fixed-case test in qemu/tests/cxx.rs runs each once and
# the next op after it). The property: every generated input ends each misuse with its
# status, and the C++ runtime kernel and the TCM pool check compute their values.
MISUSES = {
    "wrong_dtype": "DTYPE_MISMATCH",
    "wrong_rank": "RANK_MISMATCH",
    "failed_assert": "ASSERT_FAILED",
    "heap_exhausted": "OUT_OF_MEMORY",
    "tcm_copy_past_end": "OUT_OF_BOUNDS",
    "bitwise_on_floats": "UNSUPPORTED_DTYPE",
}


@settings(max_examples=3, deadline=None, derandomize=True, database=None)
@given(x=testing.arrays("float32", shapes(rank=1)))
def test_cxx_misuse_ends_each_misuse_with_its_status_for_every_input(example, x):
    library = example("cxx_misuse")
    for kernel, status in MISUSES.items():
        with pytest.raises(KernelError) as caught:
            library[kernel](x)
        assert caught.value.status_name == status, (kernel, caught.value)
        assert caught.value.status_detail, f"{kernel}: the runtime's line is the status' detail"
    # wrong_return_shape returns 3 elements: wrong unless the input has 3.
    if x.size == 3:
        np.testing.assert_array_equal(library.wrong_return_shape(x), np.zeros(3, np.float32))
    else:
        with pytest.raises(KernelError, match="SHAPE_MISMATCH"):
            library.wrong_return_shape(x)


def test_cxx_misuse_s_working_kernels_on_generated_calls(example):
    library = example("cxx_misuse")
    # The area of a heap Square of side x[0], a guarded static's value, the sum of a new[] array.
    cxx_runtime = lambda x: np.array([x[0] * x[0], 1, 10], np.float32)  # noqa: E731
    check(library.cxx_runtime, cxx_runtime, rank=1)
    check(library.tcm_past_pool, lambda x: np.ones(2, np.float32), rank=1)
