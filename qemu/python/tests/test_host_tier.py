"""The host tier from Python: ``load(..., target="host")`` builds the same sources for
x86-64 (each core a thread) and its calls give the device's outputs, statuses,
printed text and exceptions."""

import numpy as np
import pytest

import neuroncustomop


def test_host_and_device_give_the_same_output_text_and_errors(repo):
    # No shape_fns: neither library registers torch ops, so no test's ops are rebound.
    device = neuroncustomop.load(repo / "examples" / "c_libc")
    host = neuroncustomop.load(repo / "examples" / "c_libc", target="host")
    assert (device.target, host.target) == ("device", "host")
    assert host.kernels == device.kernels
    byte = np.zeros(1, dtype=np.uint8)
    on_device = device.printf_lines.run(byte, cores=8)
    on_host = host.printf_lines.run(byte, cores=8)
    assert on_host.statuses == on_device.statuses == [0] * 8
    assert on_host.stdout == on_device.stdout
    assert "vsnprintf 15 [ok 0 2 010 0xff]" in on_host.stdout[5]

    scale_device = neuroncustomop.load(repo / "examples" / "c_kernel")
    scale_host = neuroncustomop.load(repo / "examples" / "c_kernel", target="host")
    x = np.random.default_rng(3).uniform(-50, 50, (7, 9)).astype(np.float32)
    np.testing.assert_array_equal(scale_host.scale(x, -1.25), scale_device.scale(x, -1.25))
    np.testing.assert_array_equal(scale_host.scale(x, -1.25), x * np.float32(-1.25))
    # A kernel that fails: the same exception, with the same status.
    ints = np.arange(4, dtype=np.int32)
    with pytest.raises(neuroncustomop.KernelError) as on_device_error:
        scale_device.scale(ints, 2.0)
    with pytest.raises(neuroncustomop.KernelError) as on_host_error:
        scale_host.scale(ints, 2.0)
    assert on_host_error.value.status == on_device_error.value.status
