#!/usr/bin/env bash
# Runs every fuzz target of qemu/fuzz for a bounded time, or a bounded number of
# executions, and fails if any target finds an input that breaks its checks.
#
#   qemu/fuzz/run.sh                 each target for 6 s (all eight: about 30 s on 2 cores, after the build)
#   qemu/fuzz/run.sh 60              each target for 60 s
#   qemu/fuzz/run.sh --runs 10000000 each target for 10 M executions (the long mode)
#   qemu/fuzz/run.sh 30 heap wire    only these targets
#   qemu/fuzz/run.sh --build         only build the targets (`cargo sim test` builds them
#                                    beside the cargo tests, on the cores those leave idle)
#
# Prints one line per target with its execution count, then exactly
# `fuzz: N passed, M failed`; exits non-zero when a target fails or cannot run.
#
# Environment:
#   FUZZ_TOOLCHAIN   rustup toolchain to build with (default: rustup's default, stable).
#                    The build needs unstable flags (-Zsanitizer=address); on a stable
#                    toolchain they are enabled with RUSTC_BOOTSTRAP=1, which this script
#                    sets, so no nightly is needed.
#   FUZZ_SANITIZER   address (default), leak, thread or none. Without ASan the targets run 2-3x faster;
#                    the checks against the models stay, only memory errors that do not
#                    change a checked value go unseen. Use its own CARGO_TARGET_DIR.
#   FUZZ_JOBS        how many targets run at once (default: the number of cores).
#   FUZZ_MAX_LEN     libFuzzer's -max_len (default 4096): the longest input, so the
#                    longest operation sequence, a run tries.
#   CARGO_TARGET_DIR build directory (default: <repo>/target/fuzz). The working corpus of
#                    each target is kept in it (corpus/<target>), so later runs on the same
#                    machine start from what earlier ones found; qemu/fuzz/seeds/<target> is
#                    read as a seed corpus. A failing input is written to
#                    qemu/fuzz/artifacts/<target>/.
set -euo pipefail

fuzz_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$fuzz_dir/../.." && pwd)
targets_all=(handoff descriptor pull_stream translate heap wire ucode_lib npy)

limit=(-max_total_time=6)
mode="6 s"
build_only=
if [[ ${1:-} == --build ]]; then
    (($# == 1)) || { echo "usage: $0 --build (it builds every target)" >&2; exit 2; }
    build_only=1
    shift
elif [[ ${1:-} == --runs ]]; then
    [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "usage: $0 [seconds | --runs N] [target...]" >&2; exit 2; }
    limit=(-runs="$2")
    mode="$2 runs"
    shift 2
elif [[ ${1:-} =~ ^[0-9]+$ ]]; then
    limit=(-max_total_time="$1")
    mode="$1 s"
    shift
fi
targets=("$@")
((${#targets[@]})) || targets=("${targets_all[@]}")
for target in "${targets[@]}"; do
    [[ " ${targets_all[*]} " == *" $target "* ]] || { echo "fuzz: unknown target $target (${targets_all[*]})" >&2; exit 2; }
done

toolchain=()
if [[ -n ${FUZZ_TOOLCHAIN:-} ]]; then
    toolchain=("+$FUZZ_TOOLCHAIN")
fi
if ! rustc_version=$(rustc "${toolchain[@]}" --version 2>&1); then
    echo "fuzz: no usable Rust toolchain ${FUZZ_TOOLCHAIN:-(rustup default)}: ${rustc_version%%$'\n'*}" >&2
    echo "fuzz: installed toolchains: $(rustup toolchain list 2>&1 | tr '\n' ' ')" >&2
    exit 1
fi
# The build passes -Zsanitizer and other unstable flags: a stable rustc accepts them
# with RUSTC_BOOTSTRAP=1 (a nightly ignores the variable).
export RUSTC_BOOTSTRAP=1

target_dir=${CARGO_TARGET_DIR:-$repo/target/fuzz}
sanitizer=${FUZZ_SANITIZER:-address}
[[ $sanitizer =~ ^(address|leak|thread|none)$ ]] || { echo "fuzz: FUZZ_SANITIZER must be address, leak, thread or none, not $sanitizer" >&2; exit 2; }
host=$(rustc "${toolchain[@]}" -vV | sed -n 's/^host: //p')
# What `cargo fuzz build --sanitizer <s>` of cargo-fuzz 0.13.2 runs (its src/project.rs),
# without cargo-fuzz itself: a runner without it compiled it from crates.io first, 40 s
# of wall and 73 s of CPU on 2 cores (docs/PERFORMANCE.md, "CI time"). The same flags
# give the same build: after `cargo fuzz build` this command compiles nothing. The
# instrumentation libFuzzer needs (sanitizer coverage: 8-bit counters, the PC table,
# compare tracing, stack depth; `--cfg fuzzing`), branch folding off so that each branch
# keeps its own counter, debug assertions on, and one codegen unit per crate (with more,
# the coverage pass keeps ThinLTO from importing functions across units: cargo-fuzz's
# note measured the targets about 3x slower). `--target` keeps the
# flags away from build scripts and proc macros, which run on the build machine.
# In cargo-fuzz's order: cargo compares the flags as written, so another order would
# rebuild every crate.
rustflags=(-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing
    -Cllvm-args=-simplifycfg-branch-fold-threshold=0)
[[ $sanitizer == none ]] || rustflags+=("-Zsanitizer=$sanitizer")
rustflags+=(-Cllvm-args=-sanitizer-coverage-stack-depth -Cdebug-assertions -Ccodegen-units=1)
if [[ -n $build_only ]]; then
    echo "fuzz: $rustc_version, sanitizer $sanitizer, building only" >&2
else
    echo "fuzz: $rustc_version, sanitizer $sanitizer, ${#targets[@]} targets, $mode each" >&2
fi
mkdir -p "$target_dir"
build_log=$target_dir/fuzz-build.log
echo "fuzz: building the targets" >&2
# The build's wall and CPU time in the log (docs/PERFORMANCE.md, "CI time"). The braces
# keep the time report out of the log (bash drops it when a timed subshell itself is
# redirected). Run from qemu/, as `cargo fuzz` runs from the folder above its fuzz
# directory, so the same .cargo/config.toml files apply.
TIMEFORMAT='fuzz: %R s wall, %U s user, %S s sys'
if ! time { (cd "$repo/qemu" && RUSTFLAGS="${rustflags[*]} ${RUSTFLAGS:-}" cargo "${toolchain[@]}" build \
    --manifest-path "$fuzz_dir/Cargo.toml" --target "$host" --release \
    --config 'profile.release.debug="line-tables-only"' --bins --target-dir "$target_dir") >"$build_log" 2>&1; }; then
    grep -E '^error' -A12 "$build_log" | head -40 >&2
    echo "fuzz: the targets do not build (log: $build_log)" >&2
    echo "fuzz: 0 passed, ${#targets[@]} failed"
    exit 1
fi
[[ -z $build_only ]] || exit 0
bin_dir=$target_dir/$host/release

log_dir=$target_dir/fuzz-logs
mkdir -p "$log_dir"
# Runs one target; its report goes to $log_dir/<target>.result, and the exit status says
# whether it passed.
run_target() {
    local target=$1
    local corpus=$target_dir/corpus/$target
    local artifacts=$fuzz_dir/artifacts/$target
    mkdir -p "$corpus" "$artifacts"
    local seeds=()
    [[ -d $fuzz_dir/seeds/$target ]] && seeds=("$fuzz_dir/seeds/$target")
    local log=$log_dir/$target.log
    local start
    start=$(date +%s%N)
    if [[ ! -x $bin_dir/$target ]]; then
        echo "fuzz $target: FAILED, not built ($bin_dir/$target missing)"
        return 1
    fi
    local status=0
    "$bin_dir/$target" "${limit[@]}" -max_len="${FUZZ_MAX_LEN:-4096}" -print_final_stats=1 -timeout=10 -rss_limit_mb=4096 \
        -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" >"$log" 2>&1 || status=$?
    local millis=$((($(date +%s%N) - start) / 1000000))
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    local corpus_size
    corpus_size=$(find "$corpus" -type f | wc -l)
    if ((status == 0)); then
        printf 'fuzz %-12s ok: %s executions in %d.%d s, corpus %s\n' "$target" "${runs:-?}" \
            $((millis / 1000)) $((millis % 1000 / 100)) "$corpus_size"
    else
        printf 'fuzz %-12s FAILED (exit %s) after %s executions; input in %s, log %s:\n' \
            "$target" "$status" "${runs:-?}" "$artifacts" "$log"
        grep -E 'panicked at|ERROR: AddressSanitizer|ERROR: libFuzzer|SUMMARY' -A3 "$log" | head -20 | sed 's/^/    /'
        return 1
    fi
}

# libFuzzer runs a target on one core: as many targets at once as the machine has
# cores (FUZZ_JOBS), so the run takes the time of 8 / cores targets, each still
# fuzzed for its whole time.
parallel=${FUZZ_JOBS:-$(nproc)}
[[ $parallel =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: FUZZ_JOBS must be a positive number, not $parallel" >&2; exit 2; }
for target in "${targets[@]}"; do
    while (($(jobs -rp | wc -l) >= parallel)); do
        wait -n || true
    done
    rm -f "$log_dir/$target.passed"
    { run_target "$target" && touch "$log_dir/$target.passed"; } >"$log_dir/$target.result" 2>&1 &
done
wait
passed=0
failed=0
for target in "${targets[@]}"; do
    cat "$log_dir/$target.result"
    if [[ -f $log_dir/$target.passed ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
