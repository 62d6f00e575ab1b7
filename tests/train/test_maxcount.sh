#!/usr/bin/env bash
# Harness hooks (scaffold/bench.h): --max-count stops after N training samples at a step boundary
# and still writes outputs; --out writes the result JSON with the expected fields; a converging
# run records time_to_solution and epochs.
source "$(dirname "$0")/lib.sh"

bench "${SMALL[@]}" --set "base_run_dir=$T/r" --set epochs=3 --max-count 5 --out "$T/res/a.json" >"$T/a.log" 2>&1 ||
  die "max-count run failed: $(cat "$T/a.log")"
R=$(run_dir_of "$T/r")
J="$T/res/a.json"
[ -s "$J" ] || die "no result JSON at $J"
get() { "$TRAIN_TOOL" json-get "$J" "$1" || die "result lacks $1"; }
[ "$(get success)" = true ] || die "success is not true: $(cat "$J")"
[ "$(get timings.train.count)" = 5 ] || die "trained $(get timings.train.count) samples, expected 5"
[ "$(get name)" = scaffold.benchmark ] || die "name: $(get name)"
[ "$(get run_dir)" = "$R" ] || die "run_dir $(get run_dir) != $R"
[ "$(get converged)" = false ] || die "converged should be false"
get peak_rss_mib >/dev/null
get timings.program.time >/dev/null
get metrics.loss >/dev/null
get call.argv >/dev/null
grep -q "stopping: --max-count 5 training samples reached in epoch 1 at step 5/11" "$T/a.log" ||
  die "no max-count message: $(cat "$T/a.log")"
[ "$(wc -l <"$R/train_stats.csv")" = 1 ] || die "a partial epoch must not write a CSV row"

# exactly one epoch's worth: the epoch completes (validation, CSV row) and the run stops there
bench "${SMALL[@]}" --set "base_run_dir=$T/s" --set epochs=3 --max-count 11 >"$T/b.log" 2>&1 ||
  die "max-count 11 failed: $(cat "$T/b.log")"
[ "$(wc -l <"$(run_dir_of "$T/s")/train_stats.csv")" = 2 ] || die "max-count 11 should complete exactly epoch 1"

# a converging run (tiny target) records the time to solution
bench "${SMALL[@]}" --set "base_run_dir=$T/t" --set epochs=3 --set target_dice=0.0001 --out "$T/res2" >"$T/c.log" 2>&1 ||
  die "converging run failed: $(cat "$T/c.log")"
J=$(ls "$T"/res2/scaffold.benchmark.*.json) || die "no result in $T/res2"
[ "$(get converged)" = true ] || die "converged should be true: $(cat "$J")"
[ "$(get epochs)" = 1 ] || die "epochs $(get epochs), expected 1"
awk -v t="$(get time_to_solution)" 'BEGIN { exit !(t > 0) }' || die "time_to_solution $(get time_to_solution)"
grep -q "Trained to >= 0.0001 validation dice score" "$T/c.log" || die "no convergence line: $(cat "$T/c.log")"
echo "PASS"
