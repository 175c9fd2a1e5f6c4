#!/usr/bin/env bash
# Installs the Python package into a virtualenv under target/ and runs its pytest tests.
# `cargo sim test` builds the package beside the cargo tests and runs its tests after
# them (they use the device tools and images those built).
#
# The virtualenv (target/python-venv) gets maturin, numpy, hypothesis, pytest, pytest-xdist,
# ml_dtypes (NumPy's bfloat16) and mypy (its stubtest checks _native.pyi) from PyPI,
# and PyTorch from the machine's cache (torch-cache.sh: installed once per machine,
# 3-4 minutes the first time); the package is built by
# `pip install qemu/python` exactly as a user installs it, with the Rust build in
# target/python. pytest's exit code 5 (no test collected) is a failure, and so is a
# skipped test (tests/conftest.py).
#
#   run-tests.sh [PYTEST ARGS]     the virtualenv, the package's build, then pytest
#   run-tests.sh --install-only    the virtualenv and the package's build, no PyTorch and
#                                  no test (`cargo sim test` runs it beside the cargo
#                                  tests, on the CPU they leave idle)
#   run-tests.sh --installed [...] as the first, the package as installed already

set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
# The checkout is the home of the tools the tests run (qemu/machine/src/home.rs): the
# package installed from source has no data folder of its own.
export NEURONCUSTOMOP_HOME="${NEURONCUSTOMOP_HOME:-$repo}"
venv="$repo/target/python-venv"
# Each phase's wall and CPU time in the log (docs/PERFORMANCE.md, "CI time").
TIMEFORMAT='run-tests.sh: %R s wall, %U s user, %S s sys'

mode=all
case ${1:-} in
    --install-only) mode=install; shift ;;
    --installed) mode=test; shift ;;
esac

echo "run-tests.sh: the virtualenv and its packages" >&2
time {
    if [[ ! -x "$venv/bin/python" ]]; then
        python3 -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install --quiet "maturin>=1.5,<2" "numpy>=1.21" "pytest>=7" "pytest-xdist>=3" "ml_dtypes>=0.3" "hypothesis>=6.125" \
        "mypy>=1.10"
    if [[ $mode != install ]]; then
        # torch through a .pth file: the venv's own packages come first on sys.path.
        torch_dir="$(bash "$repo/qemu/python/torch-cache.sh" "$venv/bin/python")"
        site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
        echo "$torch_dir" >"$site/neuroncustomop-torch.pth"
    fi
}
if [[ $mode != test ]]; then
    echo "run-tests.sh: building the package" >&2
    # No build isolation: the venv's maturin builds it, so a run needs no fresh download.
    time PATH="$venv/bin:$PATH" CARGO_TARGET_DIR="$repo/target/python" \
        "$venv/bin/python" -m pip install --quiet --no-build-isolation --force-reinstall --no-deps "$repo/qemu/python"
fi
[[ $mode != install ]] || exit 0

status=0
# mypy's cache for the stub test (tests/test_typing.py), kept between runs.
export NEURONCUSTOMOP_MYPY_CACHE="$repo/target/mypy-cache"
echo "run-tests.sh: pytest" >&2
# Two workers (pytest-xdist), as an author's suite runs under `pytest -n auto`: builds,
# devices and lib<name>.so folders shared between processes are part of what is tested.
# The 20 slowest tests are listed, so a CI log says where the minutes went (docs/ci-time.md).
time (cd "$repo/qemu/python" && "$venv/bin/python" -m pytest -q -n 2 --durations=20 "$@") || status=$?
if ((status == 5)); then
    echo "qemu/python/run-tests.sh: pytest collected no test" >&2
fi
exit "$status"
