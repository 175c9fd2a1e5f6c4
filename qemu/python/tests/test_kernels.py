"""Kernels of the repository's examples against NumPy."""

import numpy as np
import pytest

import neuroncustomop
from neuroncustomop import KernelError


def random_floats(shape, seed):
    return np.random.default_rng(seed).uniform(-100, 100, shape).astype(np.float32)


def test_relu_matches_numpy_and_keeps_the_shape(relu):
    x = random_floats((4, 250), 1)
    out = relu.relu(x)
    assert out.shape == (4, 250) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_every_relu_variant_on_its_cores(relu):
    x = random_floats(3000, 2)
    assert relu.kernels == ["relu", "relu_tcm", "relu_multicore"]
    np.testing.assert_array_equal(relu.relu_tcm(x), np.maximum(x, 0))
    result = relu["relu_multicore"].run(x, cores=8)
    np.testing.assert_array_equal(result.output, np.maximum(x, 0))
    assert (result.status, result.status_name, result.statuses) == (0, "OK", [0] * 8)
    assert len(result.stdout) == 8
    assert all(count > 3000 / 8 for count in result.instructions) and len(result.instructions) == 8
    assert not result.unwritten.any()


def test_a_rust_library_declared_multicore_runs_on_8_cores_by_default(repo, relu):
    """examples/sort says `multicore = true` under [package.metadata.neuroncustomop] in
    its Cargo.toml: its calls run on 8 cores with no cores=, as `ncop run` does; relu,
    which does not declare it, on 1."""
    sort = neuroncustomop.load(repo / "examples" / "sort")
    assert (sort.cores, relu.cores) == (8, 1)
    x = random_floats((21, 37), 9)
    result = sort.sort_ascending.run(x)
    assert result.statuses == [0] * 8
    np.testing.assert_array_equal(result.output, np.sort(x, axis=-1))


def test_instructions_are_the_same_with_or_without_icount(relu):
    x = random_floats(256, 8)
    # Each mode has a device of its own, whose first op pays a one-time setup: the
    # second call of each is compared.
    counted = [relu.relu.run(x) for _ in range(2)][1]
    assert len(counted.instructions) == 1 and counted.instructions[0] > 256
    # Without -icount the TCG plugin counts: the same figure as ICOUNT's under it.
    threads = [relu.relu.run(x, count_instructions=False) for _ in range(2)][1]
    assert threads.instructions == counted.instructions
    np.testing.assert_array_equal(threads.output, np.maximum(x, 0))


def test_a_profile_accounts_for_every_instruction_and_defines_per_element(relu):
    x = random_floats(4096, 9)
    result = relu["relu_multicore"].run(x, cores=8, profile=True)
    np.testing.assert_array_equal(result.output, np.maximum(x, 0))
    profile = result.profile
    # The profile also holds the loader's op markers (8 instructions a core); an
    # instruction a window exception interrupted counts once, as in the count.
    assert [core.instructions for core in profile.cores] == [n + 8 for n in result.instructions]
    assert sum(core.elements_written for core in profile.cores) == 4096
    # Each core's calls as they ran: the kernel's entry holds nearly all of the op.
    for core in profile.cores:
        entry = max((c for c in core.calls if c.depth == 1), key=lambda c: c.instructions)
        assert entry.name.endswith("rust_kernel_entry"), core.calls[:3]
        assert entry.instructions > 0.99 * core.instructions
        assert any(c.name == "relu::relu_through_tcm" and c.depth == 2 for c in core.calls)
        assert core.ranges == []
    assert result.total_instructions == sum(result.instructions)
    slowest = max(result.instructions)
    # Balance leaves out the waits for the DMA engine, whose count varies from run to run.
    busy = [n - core.waiting for n, core in zip(result.instructions, profile.cores)]
    assert result.balance == pytest.approx(max(busy) / (sum(busy) / 8))
    # The per-line table: every line's figures are its instructions', summed over cores.
    lines = profile.lines()
    top = lines[0]
    at_top = [pc for c in profile.cores for pc in c.pcs if (pc.file, pc.line) == (top.file, top.line)]
    assert top.instructions == sum(pc.executed for pc in at_top) and top.cycles > 0
    assert lines == sorted(lines, key=lambda l: (-l.instructions, l.file, l.line))
    assert sum(l.instructions for l in lines) <= profile.instructions
    assert result.per_element == pytest.approx(slowest / 512), "per element the slowest core wrote"
    name, count, share = profile.top(1)[0]
    in_all = sum(f.instructions for c in profile.cores for f in c.functions if f.name == name)
    assert count == in_all and share == pytest.approx(count / profile.instructions)
    # With what it calls: the kernel's body under its entry, which is left out.
    name, count, share = profile.top_inclusive(1)[0]
    assert name.endswith("relu_through_tcm") and share > 0.9, profile.top_inclusive(3)
    assert count == sum(f.instructions for c in profile.cores for f in c.inclusive if f.name == name)
    assert all(c.dma_bytes == 2 * 4 * 512 for c in profile.cores)
    # Without a profile, several cores' elements are not known; one core's are.
    assert relu["relu_multicore"].run(x, cores=8).per_element is None
    one = relu.relu.run(x)
    assert one.per_element == pytest.approx(one.instructions[0] / 4096) and one.profile is None


def test_a_non_contiguous_input_is_copied(relu):
    x = random_floats((40, 30), 3)
    view = x[::2, ::3]
    assert not view.flags.c_contiguous
    np.testing.assert_array_equal(relu.relu(view), np.maximum(view, 0))


def test_anything_with_the_array_protocol_is_a_tensor(relu):
    class Tensorish:
        """What a CPU PyTorch tensor offers NumPy: __array__."""

        def __init__(self, values):
            self.values = values

        def __array__(self, dtype=None, copy=None):
            return self.values

    x = random_floats(64, 4)
    np.testing.assert_array_equal(relu.relu(Tensorish(x)), np.maximum(x, 0))


def test_a_pytorch_tensor_in_a_numpy_array_out(relu):
    import torch
    x = torch.linspace(-2, 2, 17)
    out = relu.relu(x)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, torch.relu(x).numpy())


def test_a_float_scalar_reaches_a_c_kernel(scale):
    x = random_floats(500, 5)
    np.testing.assert_array_equal(scale.scale(x, 2.5), x * np.float32(2.5))
    np.testing.assert_array_equal(scale.scale(x, np.float32(-0.75)), x * np.float32(-0.75))
    np.testing.assert_array_equal(scale.scale_multicore(x, 3.0, cores=8), x * np.float32(3.0))


def test_the_output_shape_and_dtype_can_be_given(relu):
    x = random_floats(12, 6)
    out = relu.relu(x, out_shape=(3, 4))
    np.testing.assert_array_equal(out, np.maximum(x, 0).reshape(3, 4))
    shaped = neuroncustomop.load(relu.package_dir, shape_fns={"relu": lambda x: np.empty((2, 6), np.float32)})
    assert shaped.relu(x).shape == (2, 6)


def test_a_rust_crate_builds_into_lib_name_so(repo, tmp_path):
    source = repo / "examples" / "relu" / "src" / "kernels.rs"
    built = neuroncustomop.load(name="relu", compute_srcs=[source], build_directory=tmp_path)
    assert built.package_dir == str(tmp_path / "librelu.so" / "relu")
    assert sorted(p.name for p in (tmp_path / "librelu.so" / "relu").iterdir())[-1] == "ucode_lib.json"
    again = neuroncustomop.load_library(tmp_path / "librelu.so")
    x = random_floats(16, 7)
    np.testing.assert_array_equal(again.relu(x), np.maximum(x, 0))



@pytest.mark.parametrize("dtype", neuroncustomop.DTYPES)
def test_every_device_dtype_reaches_the_kernel(relu, dtype):
    """relu reads float32: every other dtype must arrive as itself and be refused."""
    if dtype == "bfloat16":
        dtype = pytest.importorskip("ml_dtypes").bfloat16
    x = np.arange(-3, 3).astype(dtype).reshape(2, 3)
    if np.dtype(dtype) == np.float32:
        np.testing.assert_array_equal(relu.relu(x), np.maximum(x, 0))
        return
    with pytest.raises(KernelError) as caught:
        relu.relu(x)
    assert caught.value.status_name == "DTYPE_MISMATCH"
    assert caught.value.output.dtype == np.dtype(dtype) and caught.value.output.shape == (2, 3)
    assert caught.value.result.unwritten.all()
