#!/usr/bin/env bash
# Reliability on a CUDA worker, run ON the GPU machine from the repo root with the bundle of
# scripts/gpu-bundle carried along (build/gpu-bundle.tar.gz); not a CTest test (no GPU here). ~10 s:
#   0. library, dataset and one epoch on CPU workers (configs/tiny.yml, 30 volumes)
#   1. torch_amp: 1 (bf16 on the CUDA worker) with lr 1e30: the overflow stops training with status 1,
#      the epoch and step named and the step's statistics, as in fp32 (tests/train/test_ckpt_errors.sh)
#   2. SIGINT during bf16 training on the CUDA worker: status 130, a checkpoint, restart.sh-style resume
# Logs go to $OUT. Exit status 0 when every expectation held, 1 otherwise, 77 without a CUDA device.
# Measured on an H200 (2026-11-30): 1. "training diverged in epoch 1 at step 2/21 ... loss nan" with
# the statistics line; 2. "interrupted by SIGINT in epoch 2 after step 4/21", resumed at step 5.
set -u
out=${OUT:-/tmp/sf-gpu-rel}
mkdir -p "$out"
command -v nvidia-smi >/dev/null && nvidia-smi -L >"$out/gpu.txt" 2>&1 || { echo "skipped: no CUDA device"; exit 77; }
mkdir -p /tmp/sf-gb && tar xzf "${SF_GPU_BUNDLE:-build/gpu-bundle.tar.gz}" -C /tmp/sf-gb || exit 1
B=$(dirname "$(find /tmp/sf-gb -name run -type f | head -1)")
export STARPU_HOME=/tmp/sf-gpu-rel-starpu STARPU_SILENT=1
mkdir -p "$STARPU_HOME"
W=$(mktemp -d /tmp/sf-gpu-rel-XXXXXX)
C=(-c configs/tiny.yml --set "fract_base_dir=$W/fr" --set "dataset_dir=$W/ds" --set n_instances_used_per_fractal=30)
bad=0
check() { if eval "$1"; then echo "ok   $2"; else echo "FAIL $2"; bad=1; fi; }

timeout 120 "$B/run" scaffold benchmark "${C[@]}" --set ncpu=2 --set epochs=1 --set "base_run_dir=$W/r0" \
  >"$out/0-cpu.log" 2>&1
check '[ $? = 0 ]' "0. data and one CPU epoch"

timeout 120 "$B/run" scaffold benchmark "${C[@]}" --set ncpu=0 --set ncuda=1 --set torch_amp=1 --set epochs=2 \
  --set starting_learning_rate=1e30 --set disable_scheduler=1 --set "base_run_dir=$W/r1" >"$out/1-amp-diverge.log" 2>&1
st=$?
check '[ $st = 1 ] && grep -q "training diverged in epoch 1 at step" "$out/1-amp-diverge.log" &&
  grep -q "step statistics: ce" "$out/1-amp-diverge.log"' "1. bf16 overflow on CUDA: $(grep -m1 -o 'training diverged.*' "$out/1-amp-diverge.log")"

timeout 120 "$B/run" scaffold benchmark "${C[@]}" --set ncpu=0 --set ncuda=1 --set torch_amp=1 --set epochs=8 \
  --set checkpoint_interval=1 --set "base_run_dir=$W/r2" >"$out/2-sigint.log" 2>&1 &
pid=$!
for _ in $(seq 1500); do
  f=$(find "$W/r2" -name train_stats.csv 2>/dev/null | head -1)
  [ -n "$f" ] && [ "$(wc -l <"$f")" -ge 2 ] && break
  sleep 0.02
done
kill -INT "$(pgrep -f "bin/scaffold benchmark.*$W/r2" | head -1)"
wait $pid
st=$?
check '[ $st = 130 ] && grep -q "interrupted by SIGINT in epoch" "$out/2-sigint.log"' "2. SIGINT in CUDA training: status $st"
R=$(ls -d "$W"/r2/*/ | head -1)
timeout 120 "$B/run" scaffold benchmark --config "$R/config.yaml" --restart --run-dir "$R" >"$out/2-resume.log" 2>&1
st=$?
check '[ $st = 0 ] && grep -q "resumed from" "$out/2-resume.log"' "2. resume after SIGINT: status $st"
rm -rf "$W"
exit $bad
