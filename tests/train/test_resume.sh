#!/usr/bin/env bash
# Resume and warm-up rollback, bitwise under more_determinism: 1.
#  - 2 epochs, then --restart --run-dir to 4 epochs == 4 epochs uninterrupted (params, Adam m/v,
#    counters and every CSV column except epoch_duration);
#  - warm-up (3 steps, rolled back) then 1 epoch == 1 epoch without warm-up;
#  - a run that already converged exits at once on restart.
source "$(dirname "$0")/lib.sh"
DET=("${SMALL[@]}" --set more_determinism=1 --set checkpoint_interval=1 --set warmup_batches=0)

bench "${DET[@]}" --set "base_run_dir=$T/a" --set epochs=4 >"$T/a.log" 2>&1 || die "run A failed: $(cat "$T/a.log")"
A=$(run_dir_of "$T/a")
bench "${DET[@]}" --set "base_run_dir=$T/b" --set epochs=2 >"$T/b.log" 2>&1 || die "run B failed: $(cat "$T/b.log")"
B=$(run_dir_of "$T/b")
[ "$(wc -l <"$B/train_stats.csv")" = 3 ] || die "run B should have 2 rows"
"$SF_BINARY" benchmark -c "$B/config.yaml" --set epochs=4 --restart --run-dir "$B" >"$T/b2.log" 2>&1 ||
  die "resume of B failed: $(cat "$T/b2.log")"
grep -q "resumed from .*checkpoint_last.bin: epoch 2 done" "$T/b2.log" || die "no resume message: $(cat "$T/b2.log")"
[ "$(grep -c '^epoch ' "$T/b2.log")" = 2 ] || die "the resumed run should train epochs 3 and 4 only: $(cat "$T/b2.log")"
"$TRAIN_TOOL" ckpt-cmp "$A/checkpoints/checkpoint_last.bin" "$B/checkpoints/checkpoint_last.bin" ||
  die "resumed run differs from the uninterrupted one"
"$TRAIN_TOOL" csv-cmp "$A/train_stats.csv" "$B/train_stats.csv" || die "train_stats.csv differs"
"$TRAIN_TOOL" csv-check "$B/train_stats.csv" 4 || die "resumed train_stats.csv malformed"

bench "${DET[@]}" --set "base_run_dir=$T/c" --set epochs=1 --set warmup_batches=3 >"$T/c.log" 2>&1 ||
  die "run C failed: $(cat "$T/c.log")"
grep -q "Done warmup" "$T/c.log" || die "run C did not warm up: $(cat "$T/c.log")"
bench "${DET[@]}" --set "base_run_dir=$T/d" --set epochs=1 >"$T/d.log" 2>&1 || die "run D failed: $(cat "$T/d.log")"
! grep -q "Done warmup" "$T/d.log" || die "run D should not warm up"
"$TRAIN_TOOL" ckpt-cmp "$(run_dir_of "$T/c")/checkpoints/checkpoint_last.bin" \
  "$(run_dir_of "$T/d")/checkpoints/checkpoint_last.bin" || die "warm-up changed the result (rollback incomplete)"

# target_dice tiny: converges at epoch 1; a restart has nothing to do
bench "${DET[@]}" --set "base_run_dir=$T/e" --set epochs=5 --set target_dice=0.0001 >"$T/e.log" 2>&1 ||
  die "run E failed: $(cat "$T/e.log")"
E=$(run_dir_of "$T/e")
[ "$(wc -l <"$E/train_stats.csv")" = 2 ] || die "run E should stop after epoch 1: $(cat "$E/train_stats.csv")"
"$E/restart.sh" >"$T/e2.log" 2>&1 || die "restart of a converged run failed: $(cat "$T/e2.log")"
grep -q "nothing to train" "$T/e2.log" || die "restart of a converged run trained again: $(cat "$T/e2.log")"
[ "$(wc -l <"$E/train_stats.csv")" = 2 ] || die "restart of a converged run changed train_stats.csv"
echo "PASS"
