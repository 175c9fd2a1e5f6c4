"""examples/cxx_mlp_training, the AWS custom-op training sample's files as an author runs them:
build.py in a process of its own writes librelu.so, my_ops.py loads it and wraps
torch.ops.my_ops.relu_forward/relu_backward in an autograd function, and train.py
trains model.py's MLP. It must train exactly as the same MLP with torch.relu: relu is
exact, so every loss and every gradient is equal."""

import importlib
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
