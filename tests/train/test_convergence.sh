#!/usr/bin/env bash
# Convergence (spec §6.6): configs/tiny.yml trains to validation Dice >= 0.95 within its epoch cap
# and stops at the epoch that first reaches it (no row after it). CONV_RUNTIME=openmp|sequential runs
# it on that task runtime (docs/runtimes.md; sequential: one thread); CONV_AMP=1 with torch_amp: 1 (bf16
# convolutions; skipped on a CPU without AVX512_BF16).
source "$(dirname "$0")/lib.sh"
case "${SF_SANITIZED:-OFF}" in ON | 1 | TRUE | YES | on | true)
  echo "SKIP: sanitizer build: this multi-epoch convergence run checks training quality, which the normal" \
    "suite checks; its code paths run under ASan in the shorter tests (train_outputs, train_resume, graph_equiv and graph_determinism on every runtime)"
  exit 77 ;;
esac
RT=()
if [ "${CONV_AMP:-0}" = 1 ]; then # torch_amp: 1: bf16 convolutions on the CPU's bf16 engine
  grep -qw avx512_bf16 /proc/cpuinfo || {
    echo "SKIP: CONV_AMP=1 needs a CPU with AVX512_BF16 (the bf16 engines); this one has none"
    exit 77
  }
  RT=(--set torch_amp=1)
fi
case "${CONV_RUNTIME:-}" in
"") ;;
sequential) RT=(--set runtime=sequential --set ncpu=1) ;;
*) RT=(--set "runtime=$CONV_RUNTIME") ;;
esac

t0=$(date +%s)
out=$(bench --set "base_run_dir=$T/runs" "${RT[@]}" 2>&1) || die "benchmark exited with $?: $out"
R=$(run_dir_of "$T/runs")
"$TRAIN_TOOL" csv-converged "$R/train_stats.csv" 0.95 || die "convergence check failed; log: $(grep '^epoch' <<<"$out")"
grep -q "^Benchmark run at scale 4 complete. Trained to >= 0.95 validation dice score in" <<<"$out" ||
  die "no convergence line; output: $out"
grep '^epoch\|^summary' <<<"$out"
[ -z "${CONV_RUNTIME:-}" ] || grep -q "benchmark: $(case $CONV_RUNTIME in openmp) echo OpenMP tasks ;; *) echo sequential executor ;; esac)" <<<"$out" ||
  die "the run does not say it used runtime $CONV_RUNTIME; output: $(head -5 <<<"$out")"
if [ "${CONV_AMP:-0}" = 1 ]; then
  grep -qE "CPU workers run the 3x3x3 convolutions( and the transposed ones)? in bf16 \(engine" <<<"$out" ||
    die "torch_amp: 1 run does not say its CPU workers ran bf16; output: $(head -8 <<<"$out")"
fi
echo "PASS in $(($(date +%s) - t0)) s"
