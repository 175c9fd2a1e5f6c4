"""The op author's path from Python: `ncop new` makes a Rust library in a temporary
folder outside the checkout, the author adds a kernel, and the library is loaded and
checked against NumPy."""

import subprocess

import numpy as np
import pytest

import neuroncustomop
from neuroncustomop import KernelError


@pytest.fixture(scope="module")
def my_op(repo, ncop, tmp_path_factory):
    project = tmp_path_factory.mktemp("ops") / "my_op"
    subprocess.run([*ncop, "new", str(project), "--lang", "rust"], cwd=repo, check=True)
    kernels = project / "src" / "kernels.rs"
    source = kernels.read_text()
    table = "neuroncustomop::kernels! { fn scale }"
    assert table in source, "the template's kernel table changed: update this test"
    kernels.write_text(source.replace(table, SHOUT + "\nneuroncustomop::kernels! { fn scale, fn shout }"))
    return neuroncustomop.load(project)


# The kernel the test adds: it prints, fails with its own code past 4 elements, and
# panics past 100.
SHOUT = """
fn shout(args: &Args) -> Result<Tensor<'_>, KernelError> {
    let x = args.tensor()?;
    let mut out = args.output()?;
    neuroncustomop::println!("shout: {} elements", x.numel());
    if x.numel() > 100 {
        panic!("too loud at {} elements", x.numel());
    }
    if x.numel() > 4 {
        return Err(KernelError::Op(7));
    }
    out.as_mut_slice::<f32>()?.copy_from_slice(x.as_slice::<f32>()?);
    Ok(out)
}
"""


def test_the_new_librarys_kernel_matches_numpy(my_op):
    assert (my_op.name, my_op.kernels) == ("my_op", ["scale", "shout"])
    x = np.random.default_rng(9).standard_normal((8, 100)).astype(np.float32)
    np.testing.assert_array_equal(my_op.scale(x, 2.5), x * np.float32(2.5))


def test_an_extra_input_is_the_templates_own_error(my_op):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(KernelError) as caught:
        my_op.scale(x, 2.0, x)
    assert caught.value.status_name == "Op(2)"  # the template's TOO_MANY_ARGS
    assert caught.value.result.unwritten.all()


def test_what_a_kernel_prints_comes_back_and_with_its_failure(my_op):
    x = np.arange(4, dtype=np.float32)
    result = my_op.shout.run(x)
    np.testing.assert_array_equal(result.output, x)
    assert result.stdout == ["shout: 4 elements\n"]
    with pytest.raises(KernelError, match="shout: 5 elements") as caught:
        my_op.shout(np.arange(5, dtype=np.float32))
    assert (caught.value.status, caught.value.status_name) == (0x10007, "Op(7)")
    assert caught.value.stdout == ["shout: 5 elements\n"]


def test_a_panicking_kernel_is_a_kernel_error_with_its_message_and_line(my_op):
    with pytest.raises(KernelError) as caught:
        my_op.shout(np.arange(200, dtype=np.float32))
    error = caught.value
    assert error.stopped and error.status is None and error.result is None and error.findings == []
    assert error.status_name == "exit(101) EXIT_PANIC"
    printed = error.stdout[0]
    assert printed.startswith("shout: 200 elements\n") and "too loud at 200 elements" in printed, printed
    assert "FAULT " not in printed, "the device's fault line is read, not shown"
    assert "too loud at 200 elements" in str(error) and "kernels.rs:" in str(error), str(error)
    np.testing.assert_array_equal(my_op.shout(np.arange(4, dtype=np.float32)), np.arange(4, dtype=np.float32))
