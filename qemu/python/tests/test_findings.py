"""The memory checks from Python: a finding raises a KernelError subclass with
``.findings``; ``checked=False`` runs unchecked; the next call works."""

from pathlib import Path

import numpy as np
import pytest

import neuroncustomop
from neuroncustomop import KernelError, OutOfBoundsError, RaceError

CHECKS_C = Path(__file__).resolve().parents[2] / "tests" / "checks_c"


@pytest.fixture(scope="module")
def misuse():
    return neuroncustomop.load(CHECKS_C)


def test_a_store_past_the_output_raises_out_of_bounds_naming_the_line(misuse):
    x = np.arange(128, dtype=np.float32)
    with pytest.raises(OutOfBoundsError) as raised:
        misuse.past_end_256.run(x, cores=8)
    assert isinstance(raised.value, KernelError)
    (finding,) = raised.value.findings
    assert (finding.kind, finding.core) == ("oob-store", 0)
    assert "elements [128] to [191], 0–256 bytes past the end of output 0 ([128] float32)" in finding.text
    assert "misuse.c:" in finding.text
    # Unchecked, the same kernel returns; the next checked call is clean.
    misuse.past_end_256.run(x, cores=8, checked=False)
    np.testing.assert_array_equal(misuse.copy(x, cores=8), x)


def test_two_cores_writing_one_element_raise_a_race(misuse):
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(RaceError) as raised:
        misuse.race.run(x, cores=8)
    assert raised.value.findings[0].kind == "race"


def test_a_finding_in_a_helper_carries_its_backtrace(misuse):
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(OutOfBoundsError) as raised:
        misuse.past_end_nested.run(x, cores=8)
    (finding,) = raised.value.findings
    # The helper's store, called from the kernel's line: innermost first.
    assert "scribble (" in finding.text
    assert finding.backtrace and finding.backtrace[0].startswith("past_end_nested (")
    assert "misuse.c:" in finding.backtrace[0]
    assert f"called from {finding.backtrace[0]}" in finding.text


def test_a_use_after_free_raises_a_heap_error_and_a_leak_is_a_warning_on_the_result(misuse):
    x = np.arange(128, dtype=np.float32)
    with pytest.raises(neuroncustomop.UseAfterFreeError) as raised:
        misuse.use_after_free.run(x, cores=8)
    assert isinstance(raised.value, neuroncustomop.HeapError)
    assert isinstance(raised.value, KernelError)
    (finding,) = raised.value.findings
    assert (finding.kind, finding.severity, finding.core) == ("use-after-free", "error", 0)
    assert "a heap block of 64 bytes allocated at use_after_free (" in finding.text
    assert "), freed at use_after_free (" in finding.text
    with pytest.warns(neuroncustomop.LeakWarning) as warned:
        result = misuse.leaks.run(x, cores=8)
    np.testing.assert_array_equal(result.output, x)
    (leak,) = result.warnings
    assert (leak.kind, leak.severity, leak.core) == ("leak", "warning", 0)
    assert str(warned[0].message).startswith("kernel leaks: leak on core 0: ")
    assert "still held when the op ended" in leak.text
    assert warned[0].message.finding == leak
    np.testing.assert_array_equal(misuse.copy(x, cores=8), x)
