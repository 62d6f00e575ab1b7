#!/usr/bin/env bash
# bench_train_step's inputs to scripts/bench-runtimes' sweep and per-task costs: the smallest shapes build and run
# (--bottleneck, --groups, SF_HW_BLOCKS), the SFBENCH record carries the submission and OpenMP task-creation times,
# a traced StarPU run's worker_stats.json carries StarPU's per-task stages, and bad values are refused (exit 2,
# naming the option) before any work. Usage: bench_cost_fields.sh BENCH_TRAIN_STEP
set -u
B=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
export STARPU_SILENT=1 SF_HW_BLOCKS=4x4
small=(--ps 2 --bottleneck 1 --base 2 --groups 2 --slabs 2 --warmup 1 --steps 2)

# field NAME of the SFBENCH line in FILE, or empty
field() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if l.startswith("SFBENCH "): print(json.loads(l[8:]).get(sys.argv[2], ""))' "$1" "$2"; }

for rt in sequential openmp starpu; do
  n=2; [ $rt = sequential ] && n=1
  extra=(); [ $rt = starpu ] && extra=(--trace "$T/trace")
  if ! "$B" --runtime $rt --ncpu $n "${small[@]}" "${extra[@]}" >"$T/$rt.out" 2>"$T/$rt.err"; then
    bad "$rt run failed:"; tail -5 "$T/$rt.err"; continue
  fi
  tasks=$(field "$T/$rt.out" tasks_per_step); sub=$(field "$T/$rt.out" submit_s_per_step)
  spawn=$(field "$T/$rt.out" spawn_s_per_step); groups=$(field "$T/$rt.out" groups)
  echo "$rt: tasks/step $tasks, submit s/step $sub, spawn s/step $spawn, groups $groups"
  python3 -c "import sys; sys.exit(0 if float('$sub') > 0 else 1)" || bad "$rt: submit_s_per_step '$sub', expected > 0"
  want_spawn="> 0"; [ $rt = openmp ] || want_spawn="== -1"
  python3 -c "import sys; sys.exit(0 if float('$spawn') $want_spawn else 1)" ||
    bad "$rt: spawn_s_per_step '$spawn', expected $want_spawn"
  [ "$groups" = 2 ] || bad "$rt: groups '$groups', expected 2"
  python3 -c "import sys; sys.exit(0 if int('$tasks') > 1000 else 1)" ||
    bad "$rt: $tasks tasks/step with 2 slabs x 4 x 4 blocks, expected > 1000"
done
if [ -f "$T/trace/worker_stats.json" ]; then
  python3 - "$T/trace/worker_stats.json" <<'EOF' || fail=1
import json, sys
ws = json.load(open(sys.argv[1]))["workers"]
bad = 0
for k in ("starpu_push_s", "starpu_pop_s", "starpu_acquire_s", "starpu_release_s"):
    tot = sum(w.get(k, -1) for w in ws)
    print("traced StarPU: %s summed over %d workers: %.6f" % (k, len(ws), tot))
    if not tot > 0:
        print("FAIL: %s is %r, expected > 0 (StarPU's per-task stage, from its task profiling)" % (k, tot))
        bad = 1
sys.exit(bad)
EOF
else
  bad "the traced StarPU run wrote no worker_stats.json"
fi

refuse() { # expected message fragment, then the arguments
  local want=$1; shift
  "$B" "$@" >"$T/r.out" 2>"$T/r.err"; rc=$?
  if [ $rc -ne 2 ] || ! grep -q -- "$want" "$T/r.err" || grep -q SFBENCH "$T/r.out"; then
    bad "'$*': exit $rc (want 2), stderr: $(head -c 300 "$T/r.err") (want '$want')"
  fi
}
refuse "--groups 3 must divide --base 4" --base 4 --groups 3
refuse "--bottleneck 3 leaves no U-Net level" --ps 3 --bottleneck 3
refuse "--bottleneck expects an integer" --bottleneck x
[ $fail = 0 ] && echo "bench_cost_fields: all checks passed"
exit $fail
