#!/usr/bin/env bash
# Convergence (spec §6.6): configs/tiny.yml trains to validation Dice >= 0.95 within its epoch cap
# and stops at the epoch that first reaches it (no row after it).
source "$(dirname "$0")/lib.sh"

t0=$(date +%s)
out=$(bench --set "base_run_dir=$T/runs" 2>&1) || die "benchmark exited with $?: $out"
R=$(run_dir_of "$T/runs")
"$TRAIN_TOOL" csv-converged "$R/train_stats.csv" 0.95 || die "convergence check failed; log: $(grep '^epoch' <<<"$out")"
grep -q "^Benchmark run at scale 4 complete. Trained to >= 0.95 validation dice score in" <<<"$out" ||
  die "no convergence line; output: $out"
grep '^epoch\|^summary' <<<"$out"
echo "PASS in $(($(date +%s) - t0)) s"
