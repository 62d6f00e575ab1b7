#!/usr/bin/env bash
# Data parallelism (spec §6.9): 2 ranks with local_batch_size 1 equal 1 rank with
# local_batch_size 2 (the same global batch: DistributedSampler gives rank r the r-th of every 2
# samples, and the gradient is the mean over replicas, as the 1-rank batch mean) - parameters after
# 2 optimizer steps within 1e-5 relative; so do 4 ranks = 2 replicas x 2 spatial shards.
# SF_CHECK_REPLICAS=1 makes the distributed runs compare their ranks' parameters bitwise after
# every step.
source "${0%/*}/lib.sh" || { echo "FAIL: cannot load ${0%/*}/lib.sh" >&2; exit 1; }
t0=$(date +%s)
CK=(--set checkpoint_interval=1 --max-count 4)

out1=$(bench1 "${SMALL[@]}" "${CK[@]}" --set local_batch_size=2 --set base_run_dir="$T/one" 2>&1) ||
  die "1-rank run exited with $?: $out1"
grep -q "stopping: --max-count 4 training samples reached in epoch 1 at step 2/" <<<"$out1" ||
  die "1-rank run did not stop after 2 steps: $out1"
R1=$(run_dir_of "$T/one")

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
"$MPI_TOOL" ckpt-close "$R2/checkpoints/checkpoint_last.bin" "$R1/checkpoints/checkpoint_last.bin" 1e-5 ||
  die "2 data-parallel ranks differ from 1 rank with the same global batch"
# local_batch_size > 1 on each rank (host batch mean, then the graph's all-reduce and Adam):
# 2 ranks x batch 2 against 1 rank x batch 4.
CK8=(--set checkpoint_interval=1 --max-count 8)
out=$(bench1 "${SMALL[@]}" "${CK8[@]}" --set local_batch_size=4 --set base_run_dir="$T/one4" 2>&1) ||
  die "1-rank batch-4 run exited with $?: $out"
out=$(SF_CHECK_REPLICAS=1 benchn 2 "${SMALL[@]}" "${CK8[@]}" --set local_batch_size=2 --set base_run_dir="$T/two2" 2>&1)
rc=$?
[ $rc = 0 ] || die "2-rank batch-2 run exited with $rc: $out"
grep -q "replica check: parameters bitwise identical on all 2 ranks after each of 2 steps" <<<"$out" ||
  die "no replica check line (batch 2): $out"
"$MPI_TOOL" ckpt-close "$(run_dir_of "$T/two2")/checkpoints/checkpoint_last.bin" \
  "$(run_dir_of "$T/one4")/checkpoints/checkpoint_last.bin" 1e-5 ||
  die "2 ranks x local_batch_size 2 differ from 1 rank x local_batch_size 4"

# Both kinds at once: 4 ranks = 2 replicas x 2 spatial shards, the same global batch of 2.
out4=$(SF_CHECK_REPLICAS=1 benchn 4 "${SMALL[@]}" "${CK[@]}" --set spatial_ranks=2 --set base_run_dir="$T/four" 2>&1)
rc=$?
[ $rc = 124 ] && die "4-rank run hung (killed after ${RUN_TIMEOUT}s): $out4"
[ $rc = 0 ] || die "4-rank run (2 replicas x 2 shards) exited with $rc: $out4"
grep -q "4 MPI ranks = 2 data-parallel replica(s) x 2 spatial shard(s)" <<<"$out4" || die "no layout line: $out4"
grep -q "replica check: parameters bitwise identical on all 4 ranks after each of 2 steps" <<<"$out4" ||
  die "no replica check line: $out4"
R4=$(run_dir_of "$T/four")
"$MPI_TOOL" ckpt-close "$R4/checkpoints/checkpoint_last.bin" "$R1/checkpoints/checkpoint_last.bin" 1e-5 ||
  die "2 replicas x 2 spatial shards differ from 1 rank with the same global batch"
echo "PASS in $(($(date +%s) - t0)) s"
