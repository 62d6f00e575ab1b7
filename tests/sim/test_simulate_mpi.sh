#!/usr/bin/env bash
# sim_mpi_bytes: the bytes each rank sends and receives per step in a multi-rank simulation (`scaffold
# simulate --ranks`, StarPU-MPI over SimGrid's SMPI) equal the analytic communication volume of
# docs/scaling.md (the scale model, tests/mpi/comm_volume --rank-bytes), exactly, on the tiny U-Net (ps 4,
# base 8): data parallel on 2 and 4 ranks (the gradient all-reduce), 2 depth shards (halo planes, small
# sums), 2 column shards (3D block halos, with the backward's second row/column shell), and 2 replicas x
# 2 depth shards, and 2 depth or 2 column shards whose 1-voxel bottleneck is one merged block (KEEP=1 keeps
# the temp folder). The class is calibrated first from real mpirun runs of the same configs (2 steps each,
# every rank into its own folder, merged by scripts/calibrate-ranks), so it is never stale. Skipped, saying why, without scaffold-sim built by
# scripts/build-sim --mpi from the same kernel sources as this build, or without MPI.
set -uo pipefail
SRC=${SF_SOURCE_DIR:?}
BIN=${SF_BINARY:?}
SIM=${SCAFFOLD_SIM_MPI:-$SRC/build-sim-mpi/scaffold-sim}
SMPIRUN=${SCAFFOLD_SMPIRUN:-$SRC/build/starpu-simgrid-mpi/bin/starpu_smpirun}
skip() { echo "SKIPPED: $*"; exit 77; }
die() { echo "FAIL: $*"; exit 1; }
[ -x "$SIM" ] || skip "no scaffold-sim at $SIM (scripts/build-sim --mpi: StarPU-MPI over SimGrid's SMPI)"
[ -x "$SMPIRUN" ] || skip "no starpu_smpirun at $SMPIRUN (scripts/build-starpu --simgrid-mpi)"
[ -n "${COMM_VOLUME:-}" ] && [ -x "$COMM_VOLUME" ] || skip "this build has no StarPU-MPI (no comm_volume)"
command -v mpirun >/dev/null || skip "no mpirun"
ids_sim=$(dirname "$SIM")/generated/sf_perfmodel_ids.h
ids_here=${SF_BUILD_DIR:?}/generated/sf_perfmodel_ids.h
cmp -s "$ids_sim" "$ids_here" ||
  skip "$SIM was built from other kernel sources than this build ($ids_sim differs from $ids_here): its codelets have other perfmodel symbols; rebuild it with scripts/build-sim --mpi"
T=$(mktemp -d /tmp/sf-sim-mpi.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
models=$T/class/sim-mpi-test/sampling
mkdir -p "$models"
TINY=(-c "$SRC/configs/tiny.yml" --set ncpu=1 --set nopencl=0 --set scheduler=dmda)
# name ranks D H W B: the configs (D x H x W shards per sample, replicas = ranks / (D H W), bottleneck edge
# 2^B: B = 0 makes the 1-voxel bottleneck one block, merged from the grid's two)
CASES="dp2 2 1 1 1 3
dp4 4 1 1 1 3
depth2 2 2 1 1 3
cols2 2 1 1 2 3
rep2-depth2 4 2 1 1 3
depth2-merged 2 2 1 1 0
cols2-merged 2 1 1 2 0"

# the bus files first, from one process (ranks benchmarking the bus at once race on them)
out=$(STARPU_HOSTNAME=sim-mpi-test STARPU_PERF_MODEL_DIR="$models" timeout 300 "$BIN" steps "${TINY[@]}" --steps 1 \
  --warmup 0 --out "$T/bus" 2>&1) || die "bus benchmark run failed: $out"
while read -r name n d h w b; do # calibrate: every rank into its own folder, merged (scripts/calibrate-ranks)
  out=$(STARPU_HOSTNAME=sim-mpi-test STARPU_HISTORY_MAX_ERROR=1000 STARPU_NCPU=1 timeout 300 \
    "$SRC/scripts/calibrate-ranks" "$models" "$n" "$BIN" steps "${TINY[@]}" --set "dc_num_shards=[$d,$h,$w]" \
    --set unet_bottleneck_dim="$b" --steps 2 --warmup 0 --out "$T/cal" 2>&1) || die "calibration run $name failed: $out"
done <<<"$CASES"

fail=0
while read -r name n d h w b; do
  log=$T/sim-$name.log
  STARPU_CALIBRATE_MINIMUM=1 timeout 300 "$BIN" simulate "${TINY[@]}" --set "dc_num_shards=[$d,$h,$w]" \
    --set unet_bottleneck_dim="$b" \
    --class "$T/class/sim-mpi-test" --ranks "$n" --network loopback --sim-bin "$SIM" --smpirun "$SMPIRUN" \
    --steps 2 --out "$T/sim-$name" >"$log" 2>&1 </dev/null || die "simulation $name failed: $(tail -20 "$log")"
  rows=$(sed -n '/^  rank  step/,$p' "$log" | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1, $(NF-1), $NF}')
  [ "$(wc -l <<<"$rows")" = "$n" ] || die "$name: expected $n rank lines in the report: $(cat "$log")"
  bad=0 seen=
  while read -r r sent recv; do
    want=$("$COMM_VOLUME" --rank-bytes 4 "$b" 8 4 8 "$d" "$h" "$w" "$n" "$r") || die "comm_volume --rank-bytes failed"
    read -r wsent wrecv <<<"$want"
    if [ "$sent" != "$wsent" ] || [ "$recv" != "$wrecv" ]; then
      echo "FAIL: $name rank $r: sent $sent B, received $recv B per step; the model: $wsent / $wrecv B (sent differs by $((sent - wsent)), received by $((recv - wrecv)))"
      bad=1
    fi
    seen="$seen rank $r $sent/$recv;"
  done <<<"$rows"
  [ $bad = 0 ] && echo "$name ($n ranks, [$d,$h,$w] per sample, bottleneck 2^$b): bytes sent/received per step as the model says:$seen"
  fail=$((fail | bad))
done <<<"$CASES"
exit $fail
