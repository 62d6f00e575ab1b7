#!/usr/bin/env bash
# Spatial decomposition: 2 ranks sharing every volume (spatial_ranks 2, depth slabs split between
# them, halo planes, GroupNorm statistics, loss and Dice sums through StarPU-MPI) equal 1 untiled
# rank (slabs 1): parameters after 2 steps within 1e-5 relative, both with 2 and with 4 slabs (2
# per rank: halos inside a rank and across ranks), with more_determinism's per-slab partials, and
# with activation_checkpointing (recomputed act_a's halo planes exchanged again for conv b's dW);
# and with local_batch_size 2 (the batch's pooled CE weight sum and per-sample GroupNorm gradients
# through StarPU-MPI), against 1 untiled rank with the same batch.
# With 2 slabs, the bytes StarPU-MPI moved (STARPU_COMM_STATS) must equal what comm_volume
# computes from the model for 2 steps (halo planes + gradient all-reduce + partial sums): the
# formulas of docs/scaling.md are the implementation's.
source "${0%/*}/lib.sh" || { echo "FAIL: cannot load ${0%/*}/lib.sh" >&2; exit 1; }
: "${COMM_VOLUME:?}"
t0=$(date +%s)
CK=(--set checkpoint_interval=1 --max-count 2)

out1=$(bench1 "${SMALL[@]}" "${CK[@]}" --set slabs=1 --set base_run_dir="$T/one" 2>&1) || die "1-rank run exited with $?: $out1"
R1=$(run_dir_of "$T/one")
for variant in "slabs=2" "slabs=4" "more_determinism=1" "activation_checkpointing=1"; do
  d="$T/sp-${variant%%=*}-${variant##*=}"
  out2=$(SF_CHECK_REPLICAS=1 STARPU_COMM_STATS=1 benchn 2 "${SMALL[@]}" "${CK[@]}" --set spatial_ranks=2 \
    --set "$variant" --set base_run_dir="$d" 2>&1)
  rc=$?
  [ $rc = 124 ] && die "spatial run ($variant) hung (killed after ${RUN_TIMEOUT}s): $out2"
  [ $rc = 0 ] || die "spatial run ($variant) exited with $rc: $out2"
  grep -q "stopping: --max-count 2 training samples reached in epoch 1 at step 2/" <<<"$out2" ||
    die "spatial run ($variant) did not stop after 2 steps: $out2"
  grep -q "replica check: parameters bitwise identical on all 2 ranks" <<<"$out2" || die "no replica check: $out2"
  if [ "$variant" = "slabs=2" ]; then
    want=$(($("$COMM_VOLUME" --step-bytes 4 3 8 4 8 2) * 2))
    for dir in "0:1" "1:0"; do
      got=$(grep -F "[starpu_comm_stats][$dir]" <<<"$out2" | head -1 | awk '{printf "%.0f", $2}')
      [ "$got" = "$want" ] || die "StarPU-MPI moved ${got:-nothing} bytes $dir in 2 steps, the model predicts $want"
    done
    echo "StarPU-MPI bytes per direction in 2 steps: $want, as computed from the model"
  fi
  R2=$(run_dir_of "$d")
  echo "spatial_ranks 2, $variant vs 1 untiled rank:"
  "$MPI_TOOL" ckpt-close "$R2/checkpoints/checkpoint_last.bin" "$R1/checkpoints/checkpoint_last.bin" 1e-5 ||
    die "2 spatial shards ($variant) differ from 1 untiled rank"
done
CK4=(--set checkpoint_interval=1 --max-count 4 --set local_batch_size=2)
out1=$(bench1 "${SMALL[@]}" "${CK4[@]}" --set slabs=1 --set base_run_dir="$T/one-b2" 2>&1) ||
  die "1-rank batch-2 run exited with $?: $out1"
out2=$(SF_CHECK_REPLICAS=1 benchn 2 "${SMALL[@]}" "${CK4[@]}" --set spatial_ranks=2 --set base_run_dir="$T/sp-b2" 2>&1)
rc=$?
[ $rc = 124 ] && die "spatial run (batch 2) hung (killed after ${RUN_TIMEOUT}s): $out2"
[ $rc = 0 ] || die "spatial run (batch 2) exited with $rc: $out2"
grep -q "stopping: --max-count 4 training samples reached in epoch 1 at step 2/" <<<"$out2" ||
  die "spatial run (batch 2) did not stop after 2 steps: $out2"
grep -q "replica check: parameters bitwise identical on all 2 ranks" <<<"$out2" || die "no replica check: $out2"
echo "spatial_ranks 2, local_batch_size 2 vs 1 untiled rank:"
"$MPI_TOOL" ckpt-close "$(run_dir_of "$T/sp-b2")/checkpoints/checkpoint_last.bin" \
  "$(run_dir_of "$T/one-b2")/checkpoints/checkpoint_last.bin" 1e-5 ||
  die "2 spatial shards with local_batch_size 2 differ from 1 untiled rank"
echo "PASS in $(($(date +%s) - t0)) s"
