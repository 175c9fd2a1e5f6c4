#!/usr/bin/env bash
# Installs what building and running Xtensa images needs, from Debian's packages.
# `cargo sim setup` runs it; so does `ncop setup` (with --without-rust), only when asked.
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
    gdb                      # the host tier's debugger (ncop run --host --gdb)
    libclang-rt-22-dev       # clang's sanitizer runtimes, for the host tier's --sanitize
)
# --without-rust: what C and C++ libraries need with the installed wheel (`ncop setup`),
# which has the runtime prebuilt: no rustc, cargo or Rust's sources.
if [[ ${1:-} == --without-rust ]]; then
    packages=("${packages[@]/#rust*/}")
    packages=("${packages[@]/#cargo*/}")
    kept=()
    for p in "${packages[@]}"; do [[ -n $p ]] && kept+=("$p"); done
    packages=("${kept[@]}")
elif [[ -n ${1:-} ]]; then
    echo "setup: unknown option $1 (the one option is --without-rust)" >&2
    exit 2
fi
# qemu-system-xtensa 10.0 or newer: the TCG plugin API v4 that qemu/plugin needs
# (per-vCPU inline counters; docs/toolchain.md). Debian 12 ships 7.2 (API v1); its
# bookworm-backports suite has 10.0.2, the version the project is measured on.
qemu_package=qemu-system-misc
qemu_minimum=1:10.0

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# `|| true`: dpkg-query fails for a package this machine has never seen, which under
# `set -e -o pipefail` ended the script before it installed anything.
qemu_version=$({ dpkg-query -W -f='${Status} ${Version}' "$qemu_package" 2>/dev/null || true; } \
    | sed -n 's/^install ok installed //p')
qemu_ok=no
if [[ -n $qemu_version ]] && dpkg --compare-versions "$qemu_version" ge "$qemu_minimum"; then
    qemu_ok=yes
fi
if ((${#missing[@]} == 0)) && [[ $qemu_ok == yes ]]; then
    exit 0
fi

sudo=
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to apt-get install" >&2; exit 1; }
    sudo=sudo
fi

# The archive this machine already uses for `suite` (deb822 .sources files first, then
# one-line sources.list entries): the backports suite comes from the same mirror.
archive_of() {
    local suite=$1 file
    for file in /etc/apt/sources.list.d/*.sources; do
        [[ -f $file ]] || continue
        # Stanzas are separated by blank lines; print the first URI of a stanza whose
        # Suites list `suite` itself.
        awk -v suite="$suite" '
            BEGIN { RS = ""; FS = "\n" }
            {
                uri = ""; found = 0
                for (i = 1; i <= NF; i++) {
                    if ($i ~ /^URIs:/) { split(substr($i, 6), u, " "); uri = u[1] }
                    if ($i ~ /^Suites:/) {
                        n = split(substr($i, 8), s, " ")
                        for (j = 1; j <= n; j++) if (s[j] == suite) found = 1
                    }
                }
                if (found && uri != "") { print uri; exit }
            }' "$file" | grep . && return 0
    done
    for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $file ]] || continue
        # deb [options] URI suite components...
        sed -E 's/\[[^]]*\]//' "$file" | awk -v suite="$suite" '$1 == "deb" && $3 == suite { print $2; exit }' \
            | grep . && return 0
    done
    return 1
}

updated=no
qemu_from=()
if [[ $qemu_ok == no ]]; then
    . /etc/os-release
    codename=${VERSION_CODENAME:?setup: /etc/os-release names no Debian release}
    $sudo apt-get update -qq
    updated=yes
    candidate=$(apt-cache policy "$qemu_package" | sed -n 's/^ *Candidate: //p')
    if [[ -z $candidate || $candidate == "(none)" ]] || ! dpkg --compare-versions "$candidate" ge "$qemu_minimum"; then
        backports=$codename-backports
        if ! grep -rqs -- "$backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
            archive=$(archive_of "$codename") || {
                echo "setup: no apt source for Debian $codename found to add $backports from;" \
                     "add $backports (it has $qemu_package >= ${qemu_minimum#1:}) and run this again" >&2
                exit 1
            }
            echo "setup: adding $backports from $archive (for $qemu_package >= ${qemu_minimum#1:})" >&2
            keyring=/usr/share/keyrings/debian-archive-keyring.gpg
            {
                echo "Types: deb"
                echo "URIs: $archive"
                echo "Suites: $backports"
                echo "Components: main"
                [[ -f $keyring ]] && echo "Signed-By: $keyring"
            } | $sudo tee /etc/apt/sources.list.d/"$backports".sources >/dev/null
            $sudo apt-get update -qq
        fi
        qemu_from=(-t "$backports")
    fi
    echo "setup: installing $qemu_package >= ${qemu_minimum#1:} (now: ${qemu_version:-none})" >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${qemu_from[@]}" "$qemu_package" >&2
fi

if ((${#missing[@]} > 0)); then
    echo "setup: installing ${missing[*]}" >&2
    [[ $updated == yes ]] || $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
fi
