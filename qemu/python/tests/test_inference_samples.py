"""The AWS custom-op inference sample's three flavours under the runner, ``python -m
neuroncustomop SCRIPT.py``, as an author runs them: each folder's build.py writes
librelu.so, its my_ops.py loads it, and inference.py runs model.py's MLP over a
dataset. Every output must equal the same MLP's with torch.relu (relu is exact).

The sample's files are not in this repository (the Amazon Software License limits
their use to Amazon's services); each flavour's folder here is made of this
repository's files of the same flow, with the sample's lines where they differ:
- build.py and my_ops.py (examples/cxx_mlp_training's) import the vendor's way, the
  two lines ``import torch_neuronx`` and ``from torch_neuronx.xla_impl import
  custom_op``, and the multicore flavour's build.py passes ``multicore=True,
  verbose=True`` as the sample's does; my_ops.py also defines the backward, which
  inference never calls;
- relu.cpp and shape.cpp are the flavour's kernel: the element accessor
  (examples/cxx_mlp_training, over [batch, features]), the TCM accessor
  (examples/cxx_relu_tcm), the TCM accessor on all 8 cores (examples/cxx_relu_multicore);
- model.py is examples/cxx_mlp_training's: the sample's MLP with layers of 120 and
  84 where the inference sample has 4,096 and 2,048 (fewer instructions per call on a
  simulated device, the same code path);
- inference.py (examples/cxx_mlp_training's) is the sample's loop (seed 0, Xavier
  weights, eval mode, batches of 32, a throughput) written for this repository, where
  the sample's differs: its device is the CPU, not ``'xla'`` (each ReLU still runs on
  the simulated device); no ``torch_xla`` and its ``xm.mark_step()``; 128 generated
  images (train.py's ``dataset``), not the MNIST download; 2 epochs, not 4.
examples/cxx_mlp_training/run-aws-inference-sample.sh runs the sample's own files of
each flavour, unchanged, with that inference.py.
"""

import json
import shutil
import subprocess
import sys

import pytest

# The vendor's two import lines, which build.py and my_ops.py have where this
# repository's have `import neuroncustomop as custom_op`.
VENDOR_IMPORTS = "import torch_neuronx\nfrom torch_neuronx.xla_impl import custom_op\n"

SAMPLE = ("build.py", "my_ops.py", "model.py", "train.py", "inference.py")

# Each flavour: the example whose relu.cpp and shape.cpp it builds, and the cores its
# calls run on.
FLAVOURS = {
    "element": ("cxx_mlp_training", 1),
    "tcm": ("cxx_relu_tcm", 1),
    "multicore": ("cxx_relu_multicore", 8),
}

# Runs build.py, then inference.py's main, as scripts (in one process under the
# runner: one start, one PyTorch import), then the same MLP with torch.relu, and prints
# whether every output is equal and the cores the last call ran on.
COMPARE = """
import json, runpy, sys
from unittest import mock
import torch
import neuroncustomop
runpy.run_path("build.py", run_name="__main__")
import inference, my_ops
outputs = inference.main()
cores = len(neuroncustomop.last_result().statuses)
with mock.patch.object(my_ops.Relu, "apply", torch.relu):
    reference, _ = inference.infer(inference.model())
vendor = sys.modules["torch_neuronx"].__doc__
equal = torch.equal(outputs, reference)
print(json.dumps({"equal": equal, "images": outputs.shape[0], "cores": cores, "vendor": vendor}))
"""


def as_the_vendor_writes_it(path, multicore=False):
    """``path`` importing the vendor's ``custom_op`` (and, for build.py of the multicore
    flavour, building as the sample's: ``multicore=True, verbose=True``)."""
    text = path.read_text()
    assert text.count("import neuroncustomop as custom_op\n") == 1
    text = text.replace("import neuroncustomop as custom_op\n", VENDOR_IMPORTS)
    if multicore:
        last = "    build_directory=os.getcwd(),\n)"
        assert text.count(last) == 1
        text = text.replace(last, "    build_directory=os.getcwd(),\n    multicore=True,\n    verbose=True,\n)")
    path.write_text(text)


def run(args, cwd):
    return subprocess.run([sys.executable, "-m", "neuroncustomop", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_the_inference_sample_runs_under_the_runner_as_with_torch_relu(flavour, repo, tmp_path):
    kernels, cores = FLAVOURS[flavour]
    for name in SAMPLE:
        shutil.copy(repo / "examples" / "cxx_mlp_training" / name, tmp_path)
    for name in ("relu.cpp", "shape.cpp"):
        shutil.copy(repo / "examples" / kernels / name, tmp_path)
    as_the_vendor_writes_it(tmp_path / "build.py", multicore=cores > 1)
    as_the_vendor_writes_it(tmp_path / "my_ops.py")
    (tmp_path / "compare.py").write_text(COMPARE)
    inferred = run(["compare.py"], tmp_path)
    assert inferred.returncode == 0, inferred.stderr
    assert (tmp_path / "librelu.so" / "library.json").is_file()
    assert "Inf throughput (iter/sec): " in inferred.stdout, inferred.stdout
    result = json.loads(inferred.stdout.splitlines()[-1])
    assert result["equal"] and result["images"] == 128, result
    assert result["cores"] == cores, result
    assert "neuroncustomop's stand-in" in result["vendor"]
