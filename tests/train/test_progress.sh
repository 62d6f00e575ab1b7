#!/usr/bin/env bash
# Progress off a terminal (scaffold/progress.h): with stdout a pipe, `scaffold benchmark` prints the
# warm-up's size and its estimate after the first step, then plain "progress: <phase>: k/N (pct),
# rate/s, elapsed mm:ss, ETA mm:ss" lines for the warm-up, each epoch's training steps and its
# validation, and none at all with progress_interval: 0. (The spacing of the lines is checked by the
# unit test util_progress, on a clock the test controls: arrival times through a pipe bunch up on a
# loaded machine.)
source "$(dirname "$0")/lib.sh"

run() { # interval log: the benchmark with stdout a pipe
  bench --set n_instances_used_per_fractal=60 --set warmup_batches=16 --set epochs=2 --set "base_run_dir=$T/r$1" \
    --set progress_interval="$1" 2>"$T/$1.err" | cat >"$2"
  [ "${PIPESTATUS[0]}" = 0 ] || die "benchmark with progress_interval $1 failed: $(tail -5 "$T/$1.err")"
}

run 0.005 "$T/on.log"
python3 - "$T/on.log" 0.005 <<'PY' || exit 1
import re, sys
path, interval = sys.argv[1], float(sys.argv[2])
lines = [l.rstrip("\n") for l in open(path)]
text = "\n".join(lines)
def fail(msg):
    sys.exit(f"FAIL: {msg}\n--- output ---\n{text}")
if not re.search(r"^warm-up: 16 training step\(s\) and \d+ validation sample\(s\)", text, re.M):
    fail("no warm-up size line before the warm-up")
if not re.search(r"^warm-up: the first step took [0-9.]+ s, so the warm-up should take about \d+ s$", text, re.M):
    fail("no warm-up estimate after its first step")
pat = re.compile(r"^progress: (.+?): (\d+)/(\d+) \((\d+)%\), [0-9.e+]+/s, elapsed \d\d:\d\d, ETA (\d\d:\d\d|--:--)( \| .*)?$")
phases = {}
for line in lines:
    if not line.startswith("progress: "):
        continue
    m = pat.match(line)
    if not m:
        fail(f"a progress line not of the documented form: {line!r}")
    done, total = int(m.group(2)), int(m.group(3))
    if not 0 <= done <= total:
        fail(f"count {done}/{total} out of range in {line!r}")
    phases.setdefault(m.group(1), []).append(done)
for want in ("warm-up training steps", "epoch 1 training steps", "epoch 2 training steps"):
    if want not in phases:
        fail(f"no progress line for '{want}' (phases seen: {sorted(phases)})")
if not any(p.endswith("validation samples") for p in phases):
    fail(f"no progress line for a validation (phases seen: {sorted(phases)})")
n = sum(len(s) for s in phases.values())
print(f"progress: {n} lines over {len(phases)} phases: {sorted(phases)}")
PY

run 0 "$T/off.log"
grep -q "^progress: " "$T/off.log" && die "progress_interval 0 still printed: $(grep -m3 progress: "$T/off.log")"
grep -q "^summary: " "$T/off.log" ||
  die "the run with progress_interval 0 printed no summary: $(tail -5 "$T/off.log")"
echo "train_progress: all checks passed"
