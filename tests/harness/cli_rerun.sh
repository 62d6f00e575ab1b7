#!/usr/bin/env bash
# `scaffold rerun`: the banner, the recorded environment and the reconstructed command
# (call.argv, then the extra arguments, so later ones win), checked with --dry-run; then a real
# rerun: the environment is re-applied and the new result has no job id, so report ignores it.
. "$(dirname "$0")/lib.sh"

mkdir -p "$T/res"
STARPU_SCHED=dmda OMP_NUM_THREADS=1 fake_run "$T/res" s.t 1.0 '{"device": 0, "devices": [0]}' \
  -c "$T/cfg.yml" --set epochs=2 --set 'dc_num_shards=[1, 1, 1]' --max-count 20
R=$(ls "$T"/res/s.t.J1.0.*.json)
check "one result written" test -f "$R"

"$SCAFFOLD" rerun "$R" -o "$T/rerun" --dry-run -- --max-count 10 > "$T/o1" 2> "$T/e1"; rc=$?
check "rerun --dry-run exits 0 (got $rc)" test "$rc" -eq 0
check "banner" contains "$T/o1" "=== re-run command ==="
check "recorded STARPU_ environment" contains "$T/o1" "STARPU_SCHED=dmda \\"
check "recorded OMP_ environment" contains "$T/o1" "OMP_NUM_THREADS=1 \\"
check "command: call.argv then the extra arguments, no job id" contains "$T/o1" \
  "scaffold run -o $T/rerun --experiment-name s.t -- -c $T/cfg.yml --set epochs=2 --set 'dc_num_shards=[1, 1, 1]' --max-count 20 --max-count 10"
check "no job id in the rerun command" lacks "$T/o1" "--job-id"
check "nothing was run" test ! -e "$T/rerun"

# Real rerun, from a shell without the recorded variables (the fake benchmark stands in for
# `scaffold benchmark` through the tester's own SF_RUN_BENCHMARK_EXE, never through the file).
env -u STARPU_SCHED -u OMP_NUM_THREADS SF_RUN_BENCHMARK_EXE=$SF_FAKE_BENCH "$SCAFFOLD" rerun "$R" -o "$T/rerun" -- --max-count 10 > "$T/o2" 2> "$T/e2"; rc=$?
check "rerun exits 0 (got $rc)" test "$rc" -eq 0
N=$(ls "$T"/rerun/*.json 2>/dev/null | wc -l)
check "rerun wrote one result (got $N)" test "$N" -eq 1
NEW=$(ls "$T"/rerun/*.json | head -1)
check "the rerun result has no J<job> in its name" bash -c "basename '$NEW' | grep -qE '^s\.t\.[0-9]{8}-[0-9]{6}-[0-9]{6}\.json$'"
check "the rerun result has job_id null" contains "$NEW" '"job_id": null'
check "the recorded environment was re-applied" contains "$NEW" '"STARPU_SCHED": "dmda"'
check "the later --max-count won (10 samples, not 20)" contains "$NEW" '"count": 10'
"$SCAFFOLD" report "$T/rerun" > "$T/o3" 2> "$T/e3"; rc=$?
check "report ignores rerun results (nothing to report, rc $rc)" test "$rc" -ne 0
check "report says why the rerun was left out" contains "$T/e3" "without a job id (reruns)"

"$SCAFFOLD" rerun "$T/nosuch.json" --dry-run > /dev/null 2> "$T/e4"; rc=$?
check "rerun of a missing file exits 2 (got $rc)" test "$rc" -eq 2
finish
