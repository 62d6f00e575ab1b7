#!/usr/bin/env bash
# Checkpoints of a distributed run: a 2-rank run stopped inside epoch 1 (--max-count, checkpoint
# with the epoch's position and global running sums, written by rank 0 only) resumes in a 2-rank
# run and ends where an uninterrupted 2-rank run ends (parameters within 1e-5, same CSV rows); a
# 1-rank resume of that mid-epoch checkpoint is refused (status 2) before the run directory is
# touched.
source "${0%/*}/lib.sh" || { echo "FAIL: cannot load ${0%/*}/lib.sh" >&2; exit 1; }
t0=$(date +%s)
E=(--set epochs=2 --set checkpoint_interval=1 "${SMALL[@]}")

out=$(benchn 2 "${E[@]}" --set base_run_dir="$T/ref" 2>&1) || die "uninterrupted 2-rank run exited with $?: $out"
REF=$(run_dir_of "$T/ref")

out=$(benchn 2 "${E[@]}" --set base_run_dir="$T/cut" --max-count 6 2>&1) || die "interrupted run exited with $?: $out"
grep -q "stopping: --max-count 6 training samples reached in epoch 1 at step 3/" <<<"$out" ||
  die "the 2-rank run did not stop after 3 steps of global batch 2: $out"
R=$(run_dir_of "$T/cut")
st=$("$MPI_TOOL" ckpt-state "$R/checkpoints/checkpoint_last.bin") || die "no checkpoint after the stop"
grep -q "^partial_epoch=1$" <<<"$st" && grep -q "^replicas=2$" <<<"$st" || die "unexpected checkpoint state: $st"

cp "$R/restart.sh" "$T/restart.before"
out=$(bench1 "${E[@]}" --run-dir "$R" 2>&1)
rc=$?
[ $rc = 2 ] || die "a 1-rank resume of a 2-replica mid-epoch checkpoint exited with $rc (expected 2): $out"
grep -q "stopped inside epoch 1 of a run with 2 data-parallel replica(s), and this run has 1" <<<"$out" ||
  die "no clear refusal: $out"
cmp -s "$R/restart.sh" "$T/restart.before" || die "the refused resume rewrote restart.sh"

out=$(benchn 2 "${E[@]}" --run-dir "$R" 2>&1) || die "2-rank resume exited with $?: $out"
grep -q "resuming it at step 4" <<<"$out" || die "the resume did not continue epoch 1 at step 4: $out"
"$TRAIN_TOOL" csv-cmp "$R/train_stats.csv" "$REF/train_stats.csv" || die "resumed CSV differs from the uninterrupted run"
"$MPI_TOOL" ckpt-close "$R/checkpoints/checkpoint_last.bin" "$REF/checkpoints/checkpoint_last.bin" 1e-5 ||
  die "resumed parameters differ from the uninterrupted run"
echo "PASS in $(($(date +%s) - t0)) s"
