#!/usr/bin/env bash
# Data parallelism (spec §6.9): R replicas of local_batch_size B take, per step, the mean over
# replicas of each replica's batch gradient - its CE pooled over its own batch only, as upstream's
# DDP - then one clip + Adam. dp_ref computes that in one process (each replica's DistributedSampler
# share through the graph's gradient-only batch step, the mean and Adam on the host); the parameters
# after 2 optimizer steps must match it within 1e-5 relative for 2 ranks x batch 1, 2 ranks x
# batch 2, and 4 ranks = 2 replicas x 2 spatial shards. (2 ranks x batch 1 is not 1 rank x batch 2:
# the latter pools the CE denominator over both samples.) SF_CHECK_REPLICAS=1 makes the distributed
# runs compare their ranks' parameters bitwise after every step.
source "${0%/*}/lib.sh" || { echo "FAIL: cannot load ${0%/*}/lib.sh" >&2; exit 1; }
: "${DP_REF:?run through ctest (DP_REF)}"
t0=$(date +%s)
CK=(--set checkpoint_interval=1 --max-count 4)

out2=$(SF_CHECK_REPLICAS=1 benchn 2 "${SMALL[@]}" "${CK[@]}" --set base_run_dir="$T/two" 2>&1)
rc=$?
[ $rc = 124 ] && die "2-rank run hung (killed after ${RUN_TIMEOUT}s): $out2"
[ $rc = 0 ] || die "2-rank run exited with $rc: $out2"
grep -q "stopping: --max-count 4 training samples reached in epoch 1 at step 2/" <<<"$out2" ||
  die "2-rank run did not stop after 2 steps of global batch 2: $out2"
grep -q "replica check: parameters bitwise identical on all 2 ranks after each of 2 steps" <<<"$out2" ||
  die "no replica check line: $out2"
R2=$(run_dir_of "$T/two")
"$MPI_TOOL" ckpt-state "$R2/checkpoints/checkpoint_last.bin" | grep -q "^replicas=2$" ||
  die "the 2-rank checkpoint does not record 2 replicas"
# the reference (the dataset exists now: the 2-rank run made it)
ref=$(timeout "$RUN_TIMEOUT" "$DP_REF" 2 2 "$T/ref_r2_b1.bin" -c "$CFG" "${COMMON[@]}" "${SMALL[@]}" 2>&1) ||
  die "dp_ref (2 replicas x batch 1) failed: $ref"
"$MPI_TOOL" ckpt-close "$R2/checkpoints/checkpoint_last.bin" "$T/ref_r2_b1.bin" 1e-5 ||
  die "2 data-parallel ranks differ from the one-process reference of 2 replicas x batch 1"

# local_batch_size > 1 on each rank: 2 ranks x batch 2
CK8=(--set checkpoint_interval=1 --max-count 8)
out=$(SF_CHECK_REPLICAS=1 benchn 2 "${SMALL[@]}" "${CK8[@]}" --set local_batch_size=2 --set base_run_dir="$T/two2" 2>&1)
rc=$?
[ $rc = 0 ] || die "2-rank batch-2 run exited with $rc: $out"
grep -q "replica check: parameters bitwise identical on all 2 ranks after each of 2 steps" <<<"$out" ||
  die "no replica check line (batch 2): $out"
ref=$(timeout "$RUN_TIMEOUT" "$DP_REF" 2 2 "$T/ref_r2_b2.bin" -c "$CFG" "${COMMON[@]}" "${SMALL[@]}" \
  --set local_batch_size=2 2>&1) || die "dp_ref (2 replicas x batch 2) failed: $ref"
"$MPI_TOOL" ckpt-close "$(run_dir_of "$T/two2")/checkpoints/checkpoint_last.bin" "$T/ref_r2_b2.bin" 1e-5 ||
  die "2 ranks x local_batch_size 2 differ from the one-process reference of 2 replicas x batch 2"

# Both kinds at once: 4 ranks = 2 replicas x 2 spatial shards, batch 1.
out4=$(SF_CHECK_REPLICAS=1 benchn 4 "${SMALL[@]}" "${CK[@]}" --set spatial_ranks=2 --set base_run_dir="$T/four" 2>&1)
rc=$?
[ $rc = 124 ] && die "4-rank run hung (killed after ${RUN_TIMEOUT}s): $out4"
[ $rc = 0 ] || die "4-rank run (2 replicas x 2 shards) exited with $rc: $out4"
grep -q "4 MPI ranks = 2 data-parallel replica(s) x 2 spatial shard(s)" <<<"$out4" || die "no layout line: $out4"
grep -q "replica check: parameters bitwise identical on all 4 ranks after each of 2 steps" <<<"$out4" ||
  die "no replica check line: $out4"
"$MPI_TOOL" ckpt-close "$(run_dir_of "$T/four")/checkpoints/checkpoint_last.bin" "$T/ref_r2_b1.bin" 1e-5 ||
  die "2 replicas x 2 spatial shards differ from the one-process reference of 2 replicas x batch 1"
echo "PASS in $(($(date +%s) - t0)) s"
