"""Libraries shared by the tests: each is packaged once per session."""

import os
from pathlib import Path

import pytest

import neuroncustomop

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def repo():
    """This repository's root."""
    return REPO


@pytest.fixture(scope="session")
def ncop():
    """The command that runs the checkout's ``ncop``: ``$NCOP_PROGRAM`` when set (``cargo
    sim test`` gives the one its build made: a ``cargo run`` would wait for the cargo
    tests that run beside, which hold the build folder's lock), else ``cargo run``."""
    program = os.environ.get("NCOP_PROGRAM")
    if program:
        return [program]
    return [os.environ.get("CARGO", "cargo"), "run", "--quiet", "-p", "neuroncustomop-sim", "--bin", "ncop", "--"]


@pytest.fixture(scope="session")
def example():
    """``example(name)``: examples/<name>, loaded once for the session (loading a C++
    example's folder builds it: seconds each)."""
    loaded = {}

    def load(name):
        if name not in loaded:
            loaded[name] = neuroncustomop.load(REPO / "examples" / name)
        return loaded[name]

    return load


@pytest.fixture(scope="session")
def relu():
    """examples/relu: relu, relu_tcm, relu_multicore over float32."""
    return neuroncustomop.load(REPO / "examples" / "relu")


@pytest.fixture(scope="session")
def scale():
    """examples/c_kernel/: scale(x, float factor) and scale_multicore, in C."""
    return neuroncustomop.load(REPO / "examples" / "c_kernel")


def pytest_sessionfinish(session, exitstatus):
    """A skipped test is a failed run: every test here must run (torch included), so a
    skip would count a test that checked nothing."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if skipped and exitstatus == pytest.ExitCode.OK:
        names = ", ".join(report.nodeid for report in skipped)
        reporter.write_line(f"conftest.py: {len(skipped)} test(s) skipped, which fails the run: {names}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
