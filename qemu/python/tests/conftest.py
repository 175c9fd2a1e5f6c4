"""Libraries shared by the tests: each is packaged once per session."""

from pathlib import Path

import pytest

import neuroncustomop

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def repo():
    """This repository's root."""
    return REPO


@pytest.fixture(scope="session")
def relu():
    """examples/relu: relu, relu_tcm, relu_multicore over float32."""
    return neuroncustomop.load(REPO / "examples" / "relu")


@pytest.fixture(scope="session")
def scale():
    """examples/c_kernel/: scale(x, float factor) and scale_multicore, in C."""
    return neuroncustomop.load(REPO / "examples" / "c_kernel")
