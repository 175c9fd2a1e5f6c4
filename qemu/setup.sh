#!/usr/bin/env bash
# Installs what building and running Xtensa images needs, from Debian's packages.
# Idempotent: installs only what is missing, and does nothing when all is there.
set -euo pipefail

packages=(
    rustc-web                # rustc 1.96 built on LLVM 22, which has the Xtensa backend
    rust-web-src             # the standard library source, for -Zbuild-std of core/alloc
    cargo-web                # the cargo matching that rustc
    llvm-22                  # llvm-mc (assembler), llvm-ar, llvm-objdump with Xtensa
    clang-22                 # the C and C++ compiler for C/C++ kernels (clang, clang++), same LLVM 22
    g++                      # the host compiler of C++ libraries' shape functions
    binutils-xtensa-lx106    # xtensa-lx106-elf-ld, -readelf, -nm
    qemu-system-misc         # qemu-system-xtensa
    gdb                      # the host tier's debugger (ncop run --host --gdb)
    libclang-rt-22-dev       # clang's sanitizer runtimes, for the host tier's --sanitize
)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
    exit 0
fi

echo "setup: installing ${missing[*]}" >&2
sudo=
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to apt-get install" >&2; exit 1; }
    sudo=sudo
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
