#!/usr/bin/env bash
# async_save: 1: checkpoints written on a background thread.
#  A. The same run with async_save 0 and 1 (more_determinism: 1, a checkpoint every epoch) gives
#     byte-identical checkpoint_last and checkpoint_best and the same train_stats.csv rows (all
#     columns but epoch_duration, which is a wall-clock time).
#  B. A write error in the background fails the run at the next join, as a synchronous one does:
#     the epoch-1 save is held before its commit (SF_TEST_CKPT_COMMIT_DELAY_MS, a test-only hook of
#     checkpoint.c) while the test removes the checkpoint directory, so its rename fails; epoch 2
#     trains meanwhile (its CSV row is written while the save is still in flight: the overlap), and
#     the run stops with status 1 naming epoch 1's checkpoint.
source "$(dirname "$0")/lib.sh"
E=3
DET=("${SMALL[@]}" --set more_determinism=1 --set checkpoint_interval=1 --set "epochs=$E")

# ---- A: async_save 0 and 1 write the same files ------------------------------------------------------
bench "${DET[@]}" --set async_save=0 --set "base_run_dir=$T/sync" >"$T/sync.log" 2>&1 ||
  die "A: async_save 0 run failed: $(cat "$T/sync.log")"
bench "${DET[@]}" --set async_save=1 --set "base_run_dir=$T/async" >"$T/async.log" 2>&1 ||
  die "A: async_save 1 run failed: $(cat "$T/async.log")"
S=$(run_dir_of "$T/sync")
A=$(run_dir_of "$T/async")
for f in checkpoint_last.bin checkpoint_best.bin; do
  [ -s "$A/checkpoints/$f" ] || die "A: async_save 1 wrote no $f: $(ls -la "$A/checkpoints")"
  cmp "$S/checkpoints/$f" "$A/checkpoints/$f" ||
    die "A: $f differs between async_save 0 and 1 (cmp above gives the first differing byte)"
done
"$TRAIN_TOOL" ckpt-info "$A/checkpoints/checkpoint_last.bin" | grep -qx "epoch=$E" ||
  die "A: async checkpoint_last is not epoch $E: $("$TRAIN_TOOL" ckpt-info "$A/checkpoints/checkpoint_last.bin")"
"$TRAIN_TOOL" csv-check "$A/train_stats.csv" "$E" >/dev/null || die "A: async train_stats.csv malformed"
"$TRAIN_TOOL" csv-cmp "$S/train_stats.csv" "$A/train_stats.csv" || die "A: train_stats.csv differs between async_save 0 and 1"
[ -z "$(find "$A" -name '.tmp-*')" ] || die "A: temporary files left: $(find "$A" -name '.tmp-*')"
echo "ok   A: async_save 0 and 1: identical checkpoints (cmp) and CSV rows over $E epochs"

# ---- B: a background write error fails the run at the next join -------------------------------------
SF_TEST_CKPT_COMMIT_DELAY_MS=4000 SF_TEST_CKPT_COMMIT_DELAY_FROM_EPOCH=1 \
  "$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "${SMALL[@]}" --set more_determinism=1 --set checkpoint_interval=1 \
  --set epochs=2 --set async_save=1 --set "base_run_dir=$T/b" >"$T/b.log" 2>&1 &
pid=$!
held=
for _ in $(seq 3000); do
  tmp=$(ls "$T"/b/*/checkpoints/.tmp-checkpoint_last.bin-* 2>/dev/null | head -1)
  if [ -n "$tmp" ]; then
    held=$tmp
    rm -rf "$(dirname "$tmp")" # the commit's rename now fails
    break
  fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.01
done
wait $pid
st=$?
[ -n "$held" ] || die "B: no temporary checkpoint file was ever seen (status $st): $(tail -5 "$T/b.log")"
[ "$st" = 1 ] || die "B: status $st, expected 1 (the background write failed): $(cat "$T/b.log")"
grep -q "background checkpoint write" "$T/b.log" || die "B: the background error was not reported: $(cat "$T/b.log")"
grep -q "cannot write the checkpoint of epoch 1" "$T/b.log" ||
  die "B: the failure does not name epoch 1's checkpoint: $(cat "$T/b.log")"
B=$(run_dir_of "$T/b")
[ "$(wc -l <"$B/train_stats.csv")" = 3 ] ||
  die "B: expected epoch 2's row written while epoch 1's save was in flight: $(cat "$B/train_stats.csv")"
echo "ok   B: a background write error fails the run at the next join (status 1, epoch 1 named); epoch 2 overlapped it"
echo "PASS"
