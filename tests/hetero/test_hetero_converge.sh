#!/usr/bin/env bash
# Convergence with mixed workers: configs/tiny.yml with 1 CPU + 1 OpenCL worker under dmda reaches
# validation Dice >= 0.95 within the config's epoch cap, in bounded time, with tasks on both kinds of
# worker. more_determinism: 1 applies the placement rule (docs/heterogeneous.md): codelets whose
# results depend on the device (GEMM convs, GroupNorm, loss) stay on the CPU worker, the others
# (reductions, sums of squares, clip, Adam, sample loads) may run on OpenCL. Without it, a fresh
# STARPU_HOME makes dmda calibrate by placing convs on PoCL's slow direct-loop kernels, and the run
# takes minutes.
source "$(dirname "$0")/lib.sh"
case "${SF_SANITIZED:-OFF}" in ON | 1 | TRUE | YES | on | true)
  echo "SKIP: sanitizer build: this multi-epoch convergence run checks training quality, which the normal" \
    "suite checks; its code paths run under ASan in the shorter tests (hetero_mix, hetero_step, hetero_trace)"
  exit 77 ;;
esac
LIMIT=${HETERO_CONVERGE_LIMIT_S:-$((300 * ${SF_TEST_SLOWDOWN:-1}))}

t0=$(date +%s)
out=$(timeout "$LIMIT" "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" --set "base_run_dir=$T/runs" \
  --set scheduler=dmda --set more_determinism=1 --set trace=1 2>&1)
rc=$?
[ $rc = 124 ] && die "no convergence within $LIMIT s; epochs so far: $(grep '^epoch' <<<"$out")"
[ $rc = 0 ] || die "benchmark exited with $rc: $out"
grep -q "workers (1 CPU, 0 CUDA, 1 OpenCL)" <<<"$out" || die "not a 1 CPU + 1 OpenCL run: $(grep StarPU <<<"$out")"
grep -q "^Benchmark run at scale 4 complete. Trained to >= 0.95 validation dice score in" <<<"$out" ||
  die "no convergence line; output: $out"
R=$(run_dir_of "$T/runs")
"$TRAIN_TOOL" csv-converged "$R/train_stats.csv" 0.95 || die "convergence check failed; log: $(grep '^epoch' <<<"$out")"
n_ocl=$("$HETERO_TOOL" tasks "$R" OpenCL)
n_cpu=$("$HETERO_TOOL" tasks "$R" CPU)
[ "$n_ocl" -gt 0 ] && [ "$n_cpu" -gt 0 ] || die "tasks on CPU workers $n_cpu, on OpenCL workers $n_ocl: want both > 0"
grep '^epoch\|^summary' <<<"$out"
"$HETERO_TOOL" shares "$R"
echo "PASS in $(($(date +%s) - t0)) s"
