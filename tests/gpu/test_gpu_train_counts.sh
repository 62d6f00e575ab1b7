#!/usr/bin/env bash
# The accounting of `gpu_train bench` (scripts/gpu-check's throughput runs) without a GPU: the same
# counting path with CPU workers (argument cpu) or 1 CPU + 1 OpenCL worker, PoCL (argument opencl),
# under dmda, with warm-up steps before the timed ones. From the SFGPU line: the tasks each kind of
# worker ran in the timed steps must be >= 0, add up to the tasks the graph submitted in those steps,
# be the same number per step (timed_steps x the per-step count the bench printed), and the step's
# GFLOP must be > 0. The H200 run of 2026-11-30 printed "cpu -1140, cuda 1140" and "0.0 GFLOP/step".
set -u
: "${GPU_TRAIN:?run through ctest (GPU_TRAIN)}"
kind=${1:-cpu}
T=$(mktemp -d "${TMPDIR:-/tmp}/sf-gpu-counts-XXXXXX")
trap 'rm -rf "$T"' EXIT
export STARPU_HOME="$T/starpu" STARPU_SILENT=1
unset STARPU_SCHED STARPU_NCPU STARPU_NCPUS STARPU_NCUDA STARPU_NOPENCL
mkdir -p "$STARPU_HOME"
case $kind in
  cpu) workers=(--ncpu 2 --ncuda 0) ;;
  opencl) workers=(--ncpu 1 --ncuda 0 --nopencl 1) ;;
  *) echo "usage: $0 cpu|opencl" >&2; exit 2 ;;
esac
fail() { echo "FAIL ($kind): $*" >&2; exit 1; }

"$GPU_TRAIN" bench --ps 4 --base 8 "${workers[@]}" --sched dmda --warmup 2 --steps 3 --max-seconds 60 \
  --label "counts-$kind" >"$T/out" 2>&1
rc=$?
cat "$T/out"
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "gpu_train bench exited with $rc"
line=$(grep '^SFGPU ' "$T/out" | tail -1)
[ -n "$line" ] || fail "no SFGPU line"
num() { echo "$line" | grep -o "\"$1\": [-0-9.]*" | awk '{print $2}'; }
cpu=$(num tasks_cpu) cuda=$(num tasks_cuda) ocl=$(num tasks_opencl) sub=$(num tasks_submitted)
timed=$(num timed_steps) gflop=$(num step_gflop)
per=$(sed -n 's/^  per step: \([0-9]*\) tasks.*/\1/p' "$T/out")
for v in cpu cuda ocl sub timed gflop per; do [ -n "${!v}" ] || fail "no value for $v in: $line"; done
for v in cpu cuda ocl; do [ "${!v}" -ge 0 ] || fail "negative task count: $v ${!v}"; done
[ $((cpu + cuda + ocl)) = "$sub" ] || fail "timed steps: cpu $cpu + cuda $cuda + opencl $ocl != submitted $sub"
[ "$timed" = 3 ] || fail "expected 3 timed steps, got $timed"
[ "$sub" = $((timed * per)) ] || fail "submitted $sub != $timed timed steps x $per tasks per step"
awk -v g="$gflop" 'BEGIN { exit !(g > 0) }' || fail "step_gflop $gflop is not > 0"
[ "$cpu" -gt 0 ] || fail "the CPU workers ran no task"
if [ "$kind" = opencl ]; then
  wocl=$(num warmup_tasks_opencl)
  [ $((ocl + wocl)) -gt 0 ] || fail "the OpenCL worker ran no task in 5 steps under dmda"
fi
echo "ok   counts ($kind): timed steps cpu $cpu + cuda $cuda + opencl $ocl = submitted $sub = $timed x $per; $gflop GFLOP/step"
