#!/usr/bin/env bash
# kill -9 during a background checkpoint write (async_save: 1) leaves the previous
# checkpoint intact, and restart.sh finishes the run exactly as an uninterrupted one.
# The write is held between its temporary file and its commit by the test-only hook of
# src/train/checkpoint.c (SF_TEST_CKPT_COMMIT_DELAY_MS, from epoch 2 on: SF_TEST_CKPT_COMMIT_
# DELAY_FROM_EPOCH), so the kill lands while epoch 2's save is in flight. Before the kill, epoch 3's
# row is written while that save is still held: training overlaps the write. After the kill,
# checkpoint_last is epoch 1's and verifies (checksum), and restart.sh resumes from it, removes the
# dead writer's temporary file, and ends with the reference run's checkpoint and CSV rows
# (more_determinism: 1, bitwise).
source "$(dirname "$0")/lib.sh"
E=3
DET=("${SMALL[@]}" --set more_determinism=1 --set checkpoint_interval=1 --set "epochs=$E")

bench "${DET[@]}" --set "base_run_dir=$T/ref" >"$T/ref.log" 2>&1 || die "reference run failed: $(cat "$T/ref.log")"
REF=$(newest_run "$T/ref")

SF_TEST_CKPT_COMMIT_DELAY_MS=120000 SF_TEST_CKPT_COMMIT_DELAY_FROM_EPOCH=2 \
  "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "${DET[@]}" --set async_save=1 --set "base_run_dir=$T/a" \
  >"$T/a1.log" 2>&1 &
pid=$!
ready=
for _ in $(seq 12000); do
  R=$(newest_run "$T/a")
  if [ -n "$R" ] && [ -f "$R/checkpoints/checkpoint_last.bin" ] &&
    ls "$R"/checkpoints/.tmp-checkpoint_last.bin-* >/dev/null 2>&1 &&
    [ "$(wc -l <"$R/train_stats.csv" 2>/dev/null || echo 0)" -ge $((E + 1)) ]; then
    ready=1
    break
  fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.01
done
kill -9 $pid 2>/dev/null
wait $pid
st=$?
[ -n "$ready" ] || die "never saw epoch 2's save in flight with epoch $E's row written (status $st): $(tail -5 "$T/a1.log")"
[ "$st" = 137 ] || die "exit status $st, expected 137 (kill -9)"
R=$(newest_run "$T/a")
ls "$R"/checkpoints/.tmp-checkpoint_last.bin-* >/dev/null 2>&1 || die "the killed write left no temporary file"
info=$("$TRAIN_TOOL" ckpt-info "$R/checkpoints/checkpoint_last.bin" 2>&1) ||
  die "checkpoint_last does not verify after the kill: $info"
echo "$info" | grep -qx "epoch=1" || die "checkpoint_last after the kill is not epoch 1's: $info"
check_no_corrupt_files "after the kill"
echo "ok   killed during epoch 2's background write (epoch $E already trained): checkpoint_last is epoch 1's and verifies"

"$R/restart.sh" >"$T/a2.log" 2>&1 || die "restart.sh failed: $(cat "$T/a2.log")"
grep -q "resumed from .*checkpoint_last.bin: epoch 1 done" "$T/a2.log" ||
  die "restart.sh did not resume from epoch 1's checkpoint: $(head -20 "$T/a2.log")"
"$TRAIN_TOOL" csv-check "$R/train_stats.csv" "$E" >/dev/null || die "train_stats.csv malformed after restart.sh"
"$TRAIN_TOOL" csv-cmp "$REF/train_stats.csv" "$R/train_stats.csv" ||
  die "train_stats.csv after restart.sh differs from the uninterrupted run's"
for f in checkpoint_last.bin checkpoint_best.bin; do
  "$TRAIN_TOOL" ckpt-cmp "$REF/checkpoints/$f" "$R/checkpoints/$f" || die "$f after restart.sh differs from the uninterrupted run's"
done
[ -z "$(find "$R" -name '.tmp-*')" ] || die "temporary files left after restart.sh: $(find "$R" -name '.tmp-*')"
echo "PASS: kill -9 during a background checkpoint write; the previous checkpoint held, restart.sh finished the run"
