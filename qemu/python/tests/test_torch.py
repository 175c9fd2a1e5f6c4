"""Real PyTorch: a library's ops as torch.ops.<namespace>.<op> (the vendor's flow), built
with load(name=, compute_srcs=, shape_srcs=, build_directory=) and loaded again with
load_library("lib<name>.so")."""

import json
import os
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import neuroncustomop
from neuroncustomop import KernelError

SAMPLE = ("relu.cpp", "shape.cpp")


@pytest.fixture(scope="module")
def sample(repo, tmp_path_factory):
    """examples/cxx_mlp_training's C++ copied to a folder of its own and built there, as its
    build.py does: torch.ops.my_ops.relu_forward(x) and relu_backward(grad, x)."""
    folder = tmp_path_factory.mktemp("cxx_mlp_training")
    for name in SAMPLE:
        shutil.copy(repo / "examples" / "cxx_mlp_training" / name, folder)
    library = neuroncustomop.load(
        name="relu", compute_srcs=[folder / "relu.cpp"], shape_srcs=[folder / "shape.cpp"], build_directory=folder
    )
    return folder, library


@pytest.fixture(scope="module")
def scalars(repo):
    """examples/cxx_scalars: affine(x, int64_t offset, double scale), scale_add(x, int
    count, float factor), to_half(x), to_bfloat16(x), in NEURON_LIBRARY(scalar_ops)."""
    return neuroncustomop.load_library(repo / "examples" / "cxx_scalars")


def test_the_ops_are_torch_ops_that_return_tensors(sample):
    folder, library = sample
    assert (folder / "librelu.so").is_dir() and library.kernels == ["relu_forward", "relu_backward"]
    x = torch.randn(32, 120, generator=torch.Generator().manual_seed(3))
    out = torch.ops.my_ops.relu_forward(x)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == (32, 120)
    assert torch.equal(out, torch.relu(x))
    grad = torch.randn(32, 120, generator=torch.Generator().manual_seed(4))
    assert torch.equal(torch.ops.my_ops.relu_backward(grad, x), torch.where(x > 0, grad, 0.0))


def test_load_library_loads_what_load_built(sample):
    folder, _ = sample
    again = neuroncustomop.load_library(folder / "librelu.so")
    assert again.kernels == ["relu_forward", "relu_backward"]
    x = torch.linspace(-3, 3, 40).reshape(4, 10)
    assert torch.equal(torch.ops.my_ops.relu_forward(x), torch.relu(x))


def test_a_load_imports_no_torch_and_a_later_import_finds_the_ops(sample):
    # A NumPy-only process does not pay PyTorch's import (seconds); one that imports it
    # after the load still finds the ops, in a process of its own (this one has torch).
    folder, _ = sample
    script = f"""
import sys
import numpy as np
import neuroncustomop
library = neuroncustomop.load_library({str(folder / "librelu.so")!r})
np.testing.assert_array_equal(library.relu_forward(np.array([[-1.0, 2.0]], np.float32)), [[0.0, 2.0]])
assert "torch" not in sys.modules, "the load imported torch"
import torch
x = torch.tensor([[-1.5, 0.5], [2.0, -0.0]])
assert torch.equal(torch.ops.my_ops.relu_forward(x), torch.relu(x))
print("registered after the import")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "registered after the import"


def test_meta_tensors_get_the_shape_function_s_output(sample):
    out = torch.ops.my_ops.relu_forward(torch.empty(7, 9, device="meta"))
    assert (out.device.type, out.shape, out.dtype) == ("meta", (7, 9), torch.float32)


def test_torch_compile_and_export_trace_the_shape_function(sample):
    def f(x):
        return torch.ops.my_ops.relu_forward(x * 2) + 1

    x = torch.linspace(-2, 2, 24).reshape(4, 6)
    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(x), torch.relu(x * 2) + 1)

    class Model(torch.nn.Module):
        def forward(self, x):
            return f(x)

    exported = torch.export.export(Model(), (x,))
    calls = [node for node in exported.graph.nodes if node.target is torch.ops.my_ops.relu_forward.default]
    assert len(calls) == 1
    assert calls[0].meta["val"].shape == (4, 6) and calls[0].meta["val"].dtype == torch.float32
    assert torch.equal(exported.module()(x), f(x))


def test_each_scalar_reaches_the_kernel_as_its_parameter_says(scalars):
    x = torch.linspace(-4, 4, 33)
    # int64_t and double parameters: Python ints and floats; the double crosses as a float.
    assert torch.equal(torch.ops.scalar_ops.affine(x, 3, 0.5), x * 0.5 + 3)
    # int and float parameters.
    assert torch.equal(torch.ops.scalar_ops.scale_add(x, -2, 1.5), x * 1.5 - 2)
    assert torch.ops.scalar_ops.affine(torch.empty(5, 2, device="meta"), 1, 2.0).shape == (5, 2)
    assert "int arg1, float arg2" in str(torch.ops.scalar_ops.affine.default._schema)


def test_half_and_bfloat16_outputs_are_tensors_of_that_dtype(scalars):
    x = torch.tensor([1.0, 1 / 3, -65504.0, 1e-8])
    half = torch.ops.scalar_ops.to_half(x)
    assert half.dtype == torch.float16 and torch.equal(half, x.half())
    brain = torch.ops.scalar_ops.to_bfloat16(x)
    assert brain.dtype == torch.bfloat16 and torch.equal(brain, x.bfloat16())


def test_bad_calls_raise_the_numpy_path_s_errors(sample, scalars):
    with pytest.raises(TypeError, match="float64, which the device does not have"):
        torch.ops.my_ops.relu_forward(torch.ones(2, 2, dtype=torch.float64))
    with pytest.raises(OverflowError, match="does not fit a C int"):
        torch.ops.scalar_ops.scale_add(torch.ones(3), 2**40, 1.0)
    with pytest.raises(RuntimeError, match="expected at most 1 argument"):
        torch.ops.my_ops.relu_forward(torch.ones(2), torch.ones(2))


def test_a_build_error_carries_the_compiler_s_diagnostics(tmp_path, capfd):
    (tmp_path / "bad.cpp").write_text("torch::Tensor broken(const torch::Tensor& x) { return x +; }\n")
    (tmp_path / "shape.cpp").write_text(
        '#include <torch/torch.h>\n#include "torchneuron/register.h"\n'
        "torch::Tensor shape(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }\n"
        'NEURON_LIBRARY(bad_ops, m) { m.def("broken", &shape, "broken"); }\n'
    )
    with pytest.raises(neuroncustomop.PackageError, match=r"bad\.cpp:1:\d+: error: expected expression"):
        neuroncustomop.load(
            name="bad", compute_srcs=[tmp_path / "bad.cpp"], shape_srcs=[tmp_path / "shape.cpp"], build_directory=tmp_path
        )
    printed = capfd.readouterr()
    assert "error" not in printed.out + printed.err  # the diagnostics are in the exception only


def test_sources_that_cannot_make_a_library_say_what_to_change(tmp_path):
    cpp, c = tmp_path / "k.cpp", tmp_path / "k.c"
    cpp.write_text("")
    c.write_text("")
    with pytest.raises(ValueError, match="need shape_srcs"):
        neuroncustomop.load(name="k", compute_srcs=[cpp])
    with pytest.raises(ValueError, match="mix C, C\\+\\+: a library is in one language"):
        neuroncustomop.load(name="k", compute_srcs=[cpp, c], shape_srcs=[cpp])
    with pytest.raises(ValueError, match="give the output shapes with shape_fns="):
        neuroncustomop.load(name="k", compute_srcs=[c], shape_srcs=[cpp])
    with pytest.raises(FileNotFoundError, match="missing.cpp does not exist"):
        neuroncustomop.load(name="k", compute_srcs=[tmp_path / "missing.cpp"], shape_srcs=[cpp])
    with pytest.raises(ValueError, match="a C identifier"):
        neuroncustomop.load(name="my-ops", compute_srcs=[cpp], shape_srcs=[cpp])


def test_a_numpy_call_still_returns_numpy(sample):
    _, library = sample
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    out = library.relu_forward(x)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, np.maximum(x, 0))


def test_a_c_library_s_kernels_register_with_python_shape_functions(repo):
    def scale(x, factor: float):
        return torch.empty(x.shape, dtype=torch.float32)

    library = neuroncustomop.load_library(repo / "examples" / "c_kernel", shape_fns={"scale": scale})
    assert library.name == "c_kernel"
    x = torch.linspace(-1, 1, 10)
    assert torch.equal(torch.ops.c_kernel.scale(x, 2.5), x * 2.5)
    assert torch.ops.c_kernel.scale(torch.empty(3, device="meta"), 1.0).shape == (3,)
    with pytest.raises(KernelError) as caught:  # the kernel's own check: its code 1
        torch.ops.c_kernel.scale(torch.ones(3, dtype=torch.int32), 1.0)
    assert caught.value.status_name == "Op(1)"


def test_an_empty_tensor_gives_an_empty_result_in_every_path(sample):
    _, library = sample
    for shape in [(0, 32), (5, 0)]:
        x = torch.empty(shape)
        out = torch.ops.my_ops.relu_forward(x)
        assert (type(out), out.shape, out.dtype) == (torch.Tensor, shape, torch.float32)
        assert torch.ops.my_ops.relu_backward(x, x).shape == shape
        assert torch.ops.my_ops.relu_forward(torch.empty(shape, device="meta")).shape == shape
        # The NumPy path, with a tensor and with an array.
        assert library.relu_forward(x).shape == shape
        assert library.relu_forward(np.empty(shape, np.float32)).shape == shape


def test_options_reach_torch_ops_calls_and_their_results_are_reachable(sample, tmp_path):
    folder, _ = sample
    x = torch.linspace(-1, 1, 24).reshape(4, 6)
    # relu_forward is written for one core: on 8 each core writes the whole output.
    with neuroncustomop.options(cores=8):
        with pytest.raises(neuroncustomop.RaceError) as raced:
            torch.ops.my_ops.relu_forward(x)
        assert raced.value.status_name == "race"  # every core returned 0: not 'OK'
        seen = []
        with neuroncustomop.options(checked=False, on_result=lambda op, result: seen.append((op, result))):
            assert torch.equal(torch.ops.my_ops.relu_forward(x), torch.relu(x))
    assert [op for op, _ in seen] == ["my_ops::relu_forward"]
    last = neuroncustomop.last_result()
    assert last is seen[0][1] and len(last.statuses) == 8 and all(count > 0 for count in last.instructions)
    torch.ops.my_ops.relu_forward(x)  # outside the blocks: one core again
    assert len(neuroncustomop.last_result().statuses) == 1
    with neuroncustomop.options(profile=True):
        torch.ops.my_ops.relu_forward(x)
    profile = neuroncustomop.last_result().profile
    assert len(profile.cores) == 1 and profile.instructions > 0
    # A folder: each call's profile written as `ncop run --profile DIR` writes one.
    with neuroncustomop.options(profile=tmp_path):
        torch.ops.my_ops.relu_forward(x)
        torch.ops.my_ops.relu_forward(x)
    assert sorted(p.name for p in tmp_path.iterdir())[-2:] == ["my_ops.relu_forward-1", "my_ops.relu_forward-2"]
    written = json.loads((tmp_path / "my_ops.relu_forward-2" / "profile.json").read_text())
    assert sum(core["instructions"] for core in written["cores"]) == neuroncustomop.last_result().profile.instructions
    assert (tmp_path / "my_ops.relu_forward-2" / "flame.svg").is_file()
    # The library's own default, under the blocks' options.
    try:
        neuroncustomop.load_library(folder / "librelu.so", checked=False)
        with neuroncustomop.options(cores=8):
            assert torch.equal(torch.ops.my_ops.relu_forward(x), torch.relu(x))
    finally:
        neuroncustomop.load_library(folder / "librelu.so")
    with pytest.raises(ValueError, match="cores=9: from 1 to 8"):
        with neuroncustomop.options(cores=9):
            pass


def test_an_int64_or_1_d_tensor_into_a_float_2_d_accessor_names_what_is_wrong(sample):
    # The shape function says float32 for any input; the kernel's accessor<float, 2> refuses.
    folder, _ = sample
    lines = (folder / "relu.cpp").read_text().splitlines()
    forward = 1 + lines.index("    auto in_acc = x.accessor<float, 2>();")
    backward = 1 + lines.index("    auto grad_acc = grad.accessor<float, 2>();")
    with warnings.catch_warnings():
        # The op's torch::zeros is given back by the runtime when the op ends early: no leak.
        warnings.simplefilter("error", neuroncustomop.LeakWarning)
        with pytest.raises(KernelError) as caught:
            torch.ops.my_ops.relu_forward(torch.ones(2, 3, dtype=torch.int64))
        assert caught.value.status_name == "DTYPE_MISMATCH"
        assert re.search(
            rf"accessor<T, N> at \S*relu\.cpp:{forward} \(relu_forward\): argument 0 holds int64, but T is float32",
            str(caught.value),
        ), caught.value
        assert caught.value.status_detail.endswith(
            f"relu.cpp:{forward} (relu_forward): argument 0 holds int64, but T is float32"
        ), caught.value.status_detail
        with pytest.raises(KernelError) as caught:
            torch.ops.my_ops.relu_backward(torch.ones(3), torch.ones(3))
        assert caught.value.status_name == "RANK_MISMATCH"
        assert re.search(
            rf"accessor<T, N> at \S*relu\.cpp:{backward} \(relu_backward\): argument 0 has rank 1, but N is 2",
            str(caught.value),
        ), caught.value


def test_backward_registers_the_vendor_s_autograd_pattern(sample):
    folder, _ = sample
    neuroncustomop.load_library(folder / "librelu.so", backward={"relu_forward": "relu_backward"})
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(5), requires_grad=True)
    torch.ops.my_ops.relu_forward(x).sum().backward()
    assert torch.equal(x.grad, (x > 0).float())
    torch.library.opcheck(torch.ops.my_ops.relu_forward.default, (torch.randn(4, 6, requires_grad=True),))
    with pytest.raises(ValueError, match="relu_forward takes \\(tensor\\), where the gradient"):
        neuroncustomop.load_library(folder / "librelu.so", backward={"relu_backward": "relu_forward"})


def test_torch_compile_dynamic_compiles_once_over_batch_sizes(sample):
    counter = torch._dynamo.testing.CompileCounter()
    torch._dynamo.reset()

    @torch.compile(backend=counter, dynamic=True, fullgraph=True)
    def f(x):
        return torch.ops.my_ops.relu_forward(x) * 2

    for batch in (3, 5, 8, 13):
        x = torch.randn(batch, 12, generator=torch.Generator().manual_seed(batch))
        assert torch.equal(f(x), torch.relu(x) * 2)
    assert counter.frame_count == 1


def test_export_keeps_a_dynamic_batch(sample):
    class Step(torch.nn.Module):
        def forward(self, x, grad):
            return torch.ops.my_ops.relu_backward(grad, torch.ops.my_ops.relu_forward(x))

    batch = torch.export.Dim("batch")
    x = torch.randn(32, 120, generator=torch.Generator().manual_seed(8))
    exported = torch.export.export(Step(), (x, x), dynamic_shapes={"x": {0: batch}, "grad": {0: batch}})
    calls = [node for node in exported.graph.nodes if node.target is torch.ops.my_ops.relu_forward.default]
    assert isinstance(calls[0].meta["val"].shape[0], torch.SymInt)
    for rows in (4, 32, 50):
        x = torch.randn(rows, 120, generator=torch.Generator().manual_seed(rows))
        assert torch.equal(exported.module()(x, x), torch.where(x > 0, x, 0.0))


def test_an_op_the_compute_sources_lack_is_one_sentence(sample, tmp_path):
    folder, _ = sample
    shutil.copy(folder / "relu.cpp", tmp_path)
    shape = (folder / "shape.cpp").read_text()
    (tmp_path / "shape.cpp").write_text(
        shape.replace('m.def("relu_backward"', 'm.def("relu_sideways", &relu_forward_shape, "relu_sideways");\n    m.def("relu_backward"')
    )
    with pytest.raises(neuroncustomop.PackageError) as caught:
        neuroncustomop.load(
            name="sideways", compute_srcs=[tmp_path / "relu.cpp"], shape_srcs=[tmp_path / "shape.cpp"], build_directory=tmp_path
        )
    message = str(caught.value)
    assert (
        "NEURON_LIBRARY(my_ops) registers the function relu_sideways, which no compute source (" in message
        and "relu.cpp) defines: define it there (returning torch::Tensor), or take its m.def out of the shape sources"
        in message
    ), message
    assert "entries.cpp" not in message and "error:" not in message


def test_a_second_load_of_unchanged_sources_reuses_the_process_s_build(sample):
    folder, _ = sample

    def load():
        neuroncustomop.load(
            name="relu", compute_srcs=[folder / "relu.cpp"], shape_srcs=[folder / "shape.cpp"], build_directory=folder
        )
        # write_library_file makes lib<name>.so anew (a new folder) on every build.
        return (folder / "librelu.so" / "library.json").stat().st_ino

    built = load()
    assert load() == built
    os.utime(folder / "shape.cpp")  # a source touched: built again
    assert load() != built
