#!/usr/bin/env bash
# The figures of docs/scaling.md, measured on the machine at hand (run by hand, not by CTest; a few
# minutes on 2 cores):   tests/mpi/measure_scaling.sh BUILD_DIR [BASE_CHANNELS]
#  - peak RSS per rank at problem_scale 6 for 1, 2, 4 and 8 spatial shards (1 training step), each
#    next to the memory plan's total for that rank (what `benchmark` prints before the run);
#    SHARDS="2 4" picks the shard counts, GRIDS="1,1,2 1,2,2 2,2,2" adds 3D grids (dc_num_shards:
#    blocks along depth, rows and columns), MEASURE=rss stops after this part;
#  - training samples/s for 1 process (STARPU_NCPU 1 and 2) and 2 data-parallel ranks (STARPU_NCPU 1
#    each; workers inherit Open MPI's per-rank core binding: STARPU_WORKERS_NOBIND=1, set by the
#    runtime when ranks share a host), 8 steps of global batch 1 or 2;
#  - the gradient all-reduce schemes (tests/mpi/bench_allreduce) on the same model.
# The dataset (3 classes x 15 instances, 64^3 volumes) is generated once, outside the measurements.
set -u
B=${1:?usage: measure_scaling.sh BUILD_DIR [BASE_CHANNELS]}
BASE=${2:-16}
B=$(cd "$B" && pwd)
SF="$B/scaffold"
W=$(mktemp -d "${TMPDIR:-/tmp}/sf-scaling-XXXXXX")
trap 'rm -rf "$W"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 STARPU_SILENT=1
unset STARPU_NCPU STARPU_SCHED STARPU_WORKERS_NOBIND
cat >"$W/ps6.yml" <<YML
problem_scale: 6
unet_bottleneck_dim: 3
unet_base_channels: $BASE
n_categories: 3
n_instances_used_per_fractal: 15
epochs: 1
torch_amp: 0
warmup_batches: 0
fract_base_dir: $W/fractals
dataset_dir: $W/datasets
base_run_dir: $W/runs
YML
cat >"$W/rank.sh" <<'WRAP'
#!/bin/bash
r=${OMPI_COMM_WORLD_RANK:-0}
export STARPU_HOME="$SF_W/starpu.$r" STARPU_NCPU=${STARPU_NCPU:-1}
mkdir -p "$STARPU_HOME"
exec /usr/bin/time -f "  rank $r: peak RSS %M KiB" "$@"
WRAP
chmod +x "$W/rank.sh"
export SF_W="$W"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(mpirun --version | head -1)"
echo "model: problem_scale 6, base channels $BASE"
STARPU_HOME="$W/starpu" "$SF" benchmark -c "$W/ps6.yml" --max-count 1 >/dev/null 2>&1 # dataset + calibration
rate() { grep '^summary' | sed 's/.*| \([0-9.]* samples\/s\) (.*/\1/'; }

plan() { grep -m1 "total .* MiB (.* GiB) per rank" | sed 's/^ */  memory plan: /'; }
echo "peak RSS per rank, 1 training step:"
echo " 1 shard (one process):"
out=$(STARPU_NCPU=1 "$W/rank.sh" "$SF" benchmark -c "$W/ps6.yml" --max-count 1 2>&1)
grep "peak RSS" <<<"$out"; plan <<<"$out"
for T in ${SHARDS:-2 4 8}; do
  echo " $T shards (mpirun -np $T, spatial_ranks $T):"
  out=$(timeout 1800 mpirun --oversubscribe -np $T "$W/rank.sh" "$SF" benchmark -c "$W/ps6.yml" \
    --set spatial_ranks=$T --max-count 1 2>&1)
  grep "peak RSS" <<<"$out" | sort; plan <<<"$out"
done
for GR in ${GRIDS:-}; do
  IFS=, read -r gd gh gw <<<"$GR"
  n=$((gd * gh * gw))
  echo " grid [$gd,$gh,$gw] (mpirun -np $n, dc_num_shards [$gd, $gh, $gw]):"
  out=$(timeout 1800 mpirun --oversubscribe -np $n "$W/rank.sh" "$SF" benchmark -c "$W/ps6.yml" \
    --set "dc_num_shards=[$gd, $gh, $gw]" --max-count 1 2>&1)
  grep "peak RSS" <<<"$out" | sort; plan <<<"$out"
done
[ "${MEASURE:-all}" = rss ] && exit 0

echo "training throughput, 8 steps (the summary line's samples/s):"
for n in 1 2; do
  echo " 1 process, STARPU_NCPU=$n: $(STARPU_NCPU=$n "$W/rank.sh" "$SF" benchmark -c "$W/ps6.yml" --max-count 8 2>&1 | rate)"
done
echo " 2 data-parallel ranks, STARPU_NCPU=1 each: $(timeout 900 mpirun -np 2 "$W/rank.sh" "$SF" benchmark \
  -c "$W/ps6.yml" --max-count 16 2>&1 | rate)"
echo " 2 spatial ranks (spatial_ranks 2), STARPU_NCPU=1 each: $(timeout 900 mpirun -np 2 "$W/rank.sh" "$SF" \
  benchmark -c "$W/ps6.yml" --set spatial_ranks=2 --max-count 8 2>&1 | rate)"

if [ -x "$B/tests/mpi/bench_allreduce" ]; then
  echo "gradient all-reduce schemes (bench_allreduce 6 $BASE 5 100):"
  STARPU_NCPU=1 timeout 900 mpirun -np 2 "$B/tests/mpi/bench_allreduce" 6 "$BASE" 5 100 2>&1 | sed 's/^/ /'
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
