#!/usr/bin/env bash
# Prints the folder that holds PyTorch for the Python interpreter $1, installing it
# there first when this machine has none: the tests of the torch.ops flow run on real
# PyTorch, never skipped.
#
# PyPI's Linux torch wheel needs the CUDA libraries to import (libtorch_cuda.so links
# cudart, cublas, cudnn, nccl, ... even where no GPU is used), so torch comes with
# its nvidia-* and triton dependencies: about 2.7 GB to download and 5.4 GB on disk,
# 3.5 minutes on this 2-core machine. That is paid once per machine and Python
# version, not per checkout: the folder is outside the checkout (a fresh clone, as CI
# makes, has an empty target/), and each checkout's venv reaches it through a .pth
# file. It is installed into a temporary folder and renamed into place when complete,
# so concurrent runs never see half an installation.
set -euo pipefail
python="$1"
version=2.15.0
tag="$("$python" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
# The machine's cache folder; the checkout's target/ only where there is no HOME.
home_cache="${XDG_CACHE_HOME:-${HOME:+$HOME/.cache}}"
default_cache="${home_cache:+$home_cache/neuroncustomop}"
cache="${NEURONCUSTOMOP_CACHE:-${default_cache:-$(cd "$(dirname "$0")/../.." && pwd)/target/torch-cache}}"
dir="$cache/torch-$version-$tag"
if [[ ! -f "$dir/.complete" ]]; then
    mkdir -p "$cache"
    partial="$(mktemp -d "$cache/.torch-$version-$tag.XXXXXX")"
    echo "torch-cache.sh: installing torch $version for $tag into $dir, once per machine" \
        "(about 2.7 GB to download, 5.4 GB on disk, 3-4 minutes)" >&2
    if ! "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --target "$partial" "torch==$version" >&2; then
        rm -rf "$partial"
        echo "torch-cache.sh: pip could not install torch $version (see above)" >&2
        exit 1
    fi
    touch "$partial/.complete"
    # Another run may have finished first: then keep its folder.
    mv -T "$partial" "$dir" 2>/dev/null || rm -rf "$partial"
fi
echo "$dir"
