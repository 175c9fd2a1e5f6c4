"""examples/cxx_mlp_training, the AWS custom-op training sample's files as an author runs them:
build.py in a process of its own writes librelu.so, my_ops.py loads it and wraps
torch.ops.my_ops.relu_forward/relu_backward in an autograd function, and train.py
trains model.py's MLP. It must train exactly as the same MLP with torch.relu: relu is
exact, so every loss and every gradient is equal."""

import importlib
import json
import os
import shutil
import subprocess
import sys
from unittest import mock

import pytest
import torch

FILES = ("relu.cpp", "shape.cpp", "build.py", "my_ops.py", "model.py", "train.py")


@pytest.fixture
def sample(repo, tmp_path, monkeypatch):
    """The sample's modules (train, model, my_ops), imported from a copy of the folder
    after its build.py ran there."""
    for name in FILES:
        shutil.copy(repo / "examples" / "cxx_mlp_training" / name, tmp_path)
    monkeypatch.chdir(tmp_path)
    built = subprocess.run([sys.executable, "build.py"], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "librelu.so" / "library.json").is_file()
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = [importlib.import_module(name) for name in ("my_ops", "model", "train")]
    yield modules
    for name in ("my_ops", "model", "train"):
        sys.modules.pop(name, None)


def trained(train, model):
    """A fresh MLP (seed 0) trained by train.py: its losses and its parameters with
    their last step's gradients."""
    torch.manual_seed(0)
    net = model.MLP()
    losses = train.train(net)
    return losses, {name: (p.detach().clone(), p.grad.clone()) for name, p in net.named_parameters()}


def test_the_sample_trains_exactly_as_with_torch_relu(sample):
    my_ops, model, train = sample
    losses, parameters = trained(train, model)
    with mock.patch.object(my_ops.Relu, "apply", torch.relu):
        reference_losses, reference = trained(train, model)
    assert len(losses) == 8 and losses == reference_losses
    assert losses[-1] < losses[0]  # it learns: the generated set is small enough to fit
    for name, (value, grad) in parameters.items():
        assert torch.equal(grad, reference[name][1]), name
        assert torch.equal(value, reference[name][0]), name


# The vendor's two import lines, which the sample's build.py and my_ops.py have where
# this folder's have `import neuroncustomop as custom_op`.
VENDOR_IMPORTS = "import torch_neuronx\nfrom torch_neuronx.xla_impl import custom_op\n"

# A script that imports the vendor's my_ops.py (through model.py) and trains as
# test_the_sample_trains_exactly_as_with_torch_relu does, printing both runs' losses.
COMPARE = """
import json, sys
from unittest import mock
import torch
import model, my_ops, train
torch.manual_seed(0)
losses = train.train(model.MLP())
torch.manual_seed(0)
with mock.patch.object(my_ops.Relu, "apply", torch.relu):
    reference = train.train(model.MLP())
vendor = sys.modules["torch_neuronx"].__doc__
print(json.dumps({"losses": losses, "reference": reference, "argv": sys.argv[1:], "vendor": vendor}))
"""


def as_the_vendor_writes_it(path):
    """``path`` with its import as the AWS sample's: ``import torch_neuronx``, then
    ``from torch_neuronx.xla_impl import custom_op``."""
    text = path.read_text()
    assert text.count("import neuroncustomop as custom_op\n") == 1
    path.write_text(text.replace("import neuroncustomop as custom_op\n", VENDOR_IMPORTS))


def run(args, cwd, env=None):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, env=env)


@pytest.fixture
def vendor_sample(repo, tmp_path):
    """The sample's folder with build.py and my_ops.py importing torch_neuronx, as shipped."""
    for name in FILES:
        shutil.copy(repo / "examples" / "cxx_mlp_training" / name, tmp_path)
    for name in ("build.py", "my_ops.py"):
        as_the_vendor_writes_it(tmp_path / name)
    (tmp_path / "compare.py").write_text(COMPARE)
    return tmp_path


def test_the_runner_runs_the_vendor_s_files_unchanged(vendor_sample):
    # Without the runner, torch_neuronx is not there: nothing is faked.
    plain = run(["build.py"], vendor_sample)
    assert plain.returncode != 0 and "No module named 'torch_neuronx'" in plain.stderr
    built = run(["-m", "neuroncustomop", "build.py"], vendor_sample)
    assert built.returncode == 0, built.stderr
    assert (vendor_sample / "librelu.so" / "library.json").is_file()
    trained = run(["-m", "neuroncustomop", "compare.py", "--epochs", "2"], vendor_sample)
    assert trained.returncode == 0, trained.stderr
    result = json.loads(trained.stdout.splitlines()[-1])
    assert len(result["losses"]) == 8 and result["losses"] == result["reference"]
    assert result["argv"] == ["--epochs", "2"]  # the script's own arguments, as python gives them
    assert "neuroncustomop's stand-in" in result["vendor"]


def test_a_real_torch_neuronx_is_never_shadowed(vendor_sample, tmp_path_factory):
    real = tmp_path_factory.mktemp("site") / "torch_neuronx"
    (real / "xla_impl").mkdir(parents=True)
    (real / "__init__.py").write_text('"""the real one"""\n')
    (real / "xla_impl" / "__init__.py").write_text("")
    (real / "xla_impl" / "custom_op.py").write_text("def load(**kwargs):\n    print('the real load', sorted(kwargs))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(real.parent), os.environ.get("PYTHONPATH")])))
    built = run(["-m", "neuroncustomop", "build.py"], vendor_sample, env)
    assert built.returncode == 0, built.stderr
    assert "the real load ['build_directory', 'compute_srcs', 'name', 'shape_srcs']" in built.stdout
    assert "a real torch_neuronx is installed" in built.stderr
    assert not (vendor_sample / "librelu.so").exists()


def test_the_runner_says_what_it_runs(tmp_path):
    missing = run(["-m", "neuroncustomop", "missing.py"], tmp_path)
    assert missing.returncode == 2 and "missing.py: no such file" in missing.stderr
    helped = run(["-m", "neuroncustomop", "--help"], tmp_path)
    assert helped.returncode == 0 and "unchanged" in helped.stdout
