#!/usr/bin/env bash
# Opt-in check that a profile's files open in real tools (the flame graph and
# trace open: in a real browser for the SVG, and Perfetto accepts the JSON). Not run by
# .ci/run: installing and starting Chromium takes minutes. Run as root (it installs what
# is missing: Debian's chromium, and PyPI's perfetto in a virtualenv under target/):
#
#   bash qemu/tools/check_profile_view.sh [OUT]      # OUT: default target/profile-view
#
# 1. Profiles examples/relu's relu_multicore on 8 cores with `ncop run --profile`.
# 2. Opens flame.svg in headless Chromium: its DOM must be the SVG with the kernel's
#    frames, not Chromium's XML error page; a screenshot goes to OUT/flame.png.
# 3. Loads trace.json with Perfetto's trace processor (PyPI `perfetto`), asking it for
#    the slices of each core and its import errors. Its Python package downloads the
#    trace_processor_shell binary on first use (PERFETTO_TRACE_PROCESSOR=/path/to/it
#    uses one you have instead); where neither is possible (a closed network: no
#    registry ships the binary, and it does not build from them), the trace is checked
#    against the rules of Perfetto's JSON importer that the trace uses (below), and
#    the script says which check ran.
# Exits non-zero if any check fails.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="$(realpath -m "${1:-$repo/target/profile-view}")"
rm -rf "$out"
mkdir -p "$out"

echo "== 1. a profile of relu_multicore on 8 cores"
(cd "$repo" && cargo run --quiet -p neuroncustomop-sim --bin ncop -- run relu_multicore --lib examples/relu \
    --cores 8 --arg gen:float32:2x32768 --profile "$out/profile")

echo "== 2. flame.svg in Chromium"
if ! command -v chromium >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
chromium --version
browser_dir="$(mktemp -d)"
trap 'rm -rf "$browser_dir"' EXIT
# The flags of a closed network: no background connections, no first-run or sync.
chrome=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --user-data-dir="$browser_dir")
"${chrome[@]}" --dump-dom "file://$out/profile/flame.svg" >"$out/flame.dom" 2>"$out/chromium.log"
"${chrome[@]}" --window-size=1200,900 --screenshot="$out/flame.png" "file://$out/profile/flame.svg" \
    >>"$out/chromium.log" 2>&1
python3 - "$out" <<'PY'
import pathlib, sys
out = pathlib.Path(sys.argv[1])
dom = (out / "flame.dom").read_text()
# An SVG Chromium could not parse shows as its XML error page instead.
assert "This page contains the following errors" not in dom, "Chromium could not parse flame.svg"
assert "<svg" in dom and "relu_multicore" in dom, "the rendered DOM is not the flame graph"
frames = dom.count("<title>")
assert frames > 1, f"{frames} frames in the rendered flame graph"
png = (out / "flame.png").read_bytes()
assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, "no screenshot"
print(f"flame.svg: Chromium rendered it, {frames} frames (titles) in its DOM; screenshot {out / 'flame.png'}")
PY

echo "== 3. trace.json in Perfetto's trace processor"
venv="$repo/target/profile-view-venv"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet perfetto
"$venv/bin/python" - "$out/profile/trace.json" <<'PY'
import collections, json, sys
path = sys.argv[1]
try:
    import os
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    binary = os.environ.get("PERFETTO_TRACE_PROCESSOR")
    config = {"config": TraceProcessorConfig(bin_path=binary)} if binary else {}
    processor = TraceProcessor(trace=path, **config)
except Exception as error:  # the binary's download refused, most likely
    print(f"Perfetto's trace processor did not start ({type(error).__name__}: {str(error)[:200]})")
    processor = None
if processor is not None:
    rows = processor.query(
        "select thread.name as thread, count(*) as n from slice join thread_track on slice.track_id = thread_track.id "
        "join thread using (utid) group by thread.name order by thread.name"
    )
    counts = {row.thread: row.n for row in rows}
    stats = processor.query("select name, value from stats where severity = 'error' and value > 0")
    errors = {row.name: row.value for row in stats}
    assert len(counts) == 8 and not errors, (counts, errors)
    print(f"trace.json: Perfetto's trace processor imported it: slices per core {counts}, no import errors")
    sys.exit(0)
# The rules of Perfetto's JSON importer (its tokenizer and parser, read as of August
# 2026) and of the Trace Event Format that this trace's events use, each one an
# error-severity import stat there: a {"traceEvents": [...]} object (else the import
# fails); every event a phase `ph` (else json_tokenizer_failure); complete events (X)
# with a name, numeric ts and a dur >= 0 in microseconds, and integer pid/tid (else
# json_parser_failure); metadata events (M) naming a process or a thread in a
# non-empty args.name (else json_parser_failure); and the complete events of one
# thread strictly nested (one that overlaps its parent's end is moved to an overflow
# track: slice_spill_overlapping_complete_event). displayTimeUnit only raises an
# info stat (Perfetto reads ts and dur in microseconds whatever it says).
trace = json.load(open(path))
assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list), "not a traceEvents object"
assert trace.get("displayTimeUnit", "ms") in ("ms", "ns"), trace.get("displayTimeUnit")
spans = collections.defaultdict(list)
named = set()
for event in trace["traceEvents"]:
    phase = event.get("ph")
    assert phase in ("X", "M"), f"an event of phase {phase!r}: {event}"
    assert isinstance(event.get("pid"), int) and isinstance(event.get("tid"), int), event
    if phase == "M":
        assert event["name"] in ("process_name", "thread_name") and isinstance(event["args"]["name"], str), event
        named.add((event["name"], event["tid"]))
        continue
    assert isinstance(event.get("name"), str) and event["name"], event
    ts, dur = event.get("ts"), event.get("dur")
    assert isinstance(ts, (int, float)) and isinstance(dur, (int, float)) and ts >= 0 and dur >= 0, event
    spans[(event["pid"], event["tid"])].append((ts, -dur, event["name"]))
for thread, events in spans.items():
    assert ("thread_name", thread[1]) in named, f"thread {thread} has no name"
    open_ends = []
    for ts, negative, name in sorted(events):
        end = ts - negative
        while open_ends and open_ends[-1] <= ts:
            open_ends.pop()
        assert not open_ends or end <= open_ends[-1], f"{name} at {ts} overlaps its parent's end on {thread}"
        open_ends.append(end)
assert len(spans) == 8, f"{len(spans)} cores on the timeline"
print(
    f"trace.json: checked against the Trace Event Format and Perfetto's JSON importer rules (the trace processor "
    f"itself could not run here): {sum(map(len, spans.values()))} complete events on {len(spans)} named "
    "threads, strictly nested"
)
PY
echo "check_profile_view: every check above passed ($out)"
