#!/usr/bin/env bash
# restart.sh finishes a run that stopped before its first checkpoint, by starting it over in the
# same run directory (it used to fail every time with "--restart: no checkpoint"):
#  A. SIGKILL at the first write of checkpoint_last (fault shim: the end of epoch 1, its
#     train_stats.csv row appended, no checkpoint published): restart.sh says it starts over and
#     finishes; the run directory then holds exactly an uninterrupted run's CSV rows and checkpoint
#     (more_determinism: 1, bitwise), and the stopped attempt's row is kept aside in
#     train_stats.csv.before-restart. A second restart.sh resumes from the checkpoint.
#  B. checkpoint_interval -1 (never a checkpoint), `kill -9` from outside once epoch 1's row is
#     written: restart.sh starts over, and train_stats.csv ends with the uninterrupted run's rows
#     only (no stale row of the killed attempt).
source "$(dirname "$0")/lib.sh"
E=3
DET=("${SMALL[@]}" --set more_determinism=1 --set "epochs=$E")

bench "${DET[@]}" --set checkpoint_interval=1 --set "base_run_dir=$T/ref" >"$T/ref.log" 2>&1 ||
  die "reference run failed: $(cat "$T/ref.log")"
REF=$(newest_run "$T/ref")
"$TRAIN_TOOL" csv-check "$REF/train_stats.csv" "$E" >/dev/null || die "reference train_stats.csv malformed"

# ---- A: killed while writing its first checkpoint ---------------------------------------------------
with_fault 1 KILL checkpoint_last bench "${DET[@]}" --set checkpoint_interval=1 --set "base_run_dir=$T/a" \
  >"$T/a1.log" 2>&1
st=$?
[ "$st" = 137 ] ||
  die "A: exit status $st, expected 137 (SIGKILL at the first checkpoint write): $(tail -5 "$T/a1.log")"
A=$(newest_run "$T/a")
[ -n "$A" ] || die "A: no run directory under $T/a"
[ ! -e "$A/checkpoints/checkpoint_last.bin" ] && [ ! -e "$A/checkpoints/checkpoint_best.bin" ] ||
  die "A: a checkpoint was published before the kill: $(ls -a "$A/checkpoints")"
[ "$(wc -l <"$A/train_stats.csv")" = 2 ] ||
  die "A: expected the header and epoch 1's row at the kill: $(cat "$A/train_stats.csv")"
"$A/restart.sh" >"$T/a2.log" 2>&1 || die "A: restart.sh without a checkpoint failed: $(cat "$T/a2.log")"
grep -q "restart: no checkpoint in $A/checkpoints .*: starting the run over in $A" "$T/a2.log" ||
  die "A: restart.sh did not say that it starts the run over: $(head -20 "$T/a2.log")"
grep -q "moved from train_stats.csv to $A/train_stats.csv.before-restart" "$T/a2.log" ||
  die "A: the stopped attempt's row was not moved aside: $(head -20 "$T/a2.log")"
[ "$(wc -l <"$A/train_stats.csv.before-restart")" = 2 ] || die "A: train_stats.csv.before-restart should hold 1 row"
"$TRAIN_TOOL" csv-check "$A/train_stats.csv" "$E" >/dev/null || die "A: train_stats.csv malformed after the restart"
"$TRAIN_TOOL" csv-cmp "$REF/train_stats.csv" "$A/train_stats.csv" ||
  die "A: train_stats.csv after the restart differs from the uninterrupted run's"
"$TRAIN_TOOL" ckpt-cmp "$REF/checkpoints/checkpoint_last.bin" "$A/checkpoints/checkpoint_last.bin" ||
  die "A: the restarted run's checkpoint differs from the uninterrupted run's"
[ -z "$(find "$A" -name '.tmp-*')" ] || die "A: temporary files left: $(find "$A" -name '.tmp-*')"
"$A/restart.sh" >"$T/a3.log" 2>&1 || die "A: a second restart.sh failed: $(cat "$T/a3.log")"
grep -q "resumed from .*checkpoint_last.bin: epoch $E done" "$T/a3.log" ||
  die "A: the second restart.sh did not resume from the checkpoint: $(head -20 "$T/a3.log")"
echo "ok   A: killed at its first checkpoint write; restart.sh started over and matches the uninterrupted run"

# ---- B: no checkpointing, kill -9 during epoch 2 ------------------------------------------------------
"$SF_BINARY" benchmark -c "$CFG" "${COMMON[@]}" "${DET[@]}" --set "base_run_dir=$T/b" >"$T/b1.log" 2>&1 &
pid=$!
for _ in $(seq 6000); do
  csv=$(ls "$T"/b/*/train_stats.csv 2>/dev/null | head -1)
  [ -n "$csv" ] && [ "$(wc -l <"$csv")" -ge 2 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.01
done
kill -9 $pid 2>/dev/null
wait $pid
st=$?
[ "$st" = 137 ] || die "B: exit status $st, expected 137 (the run ended before the kill): $(tail -5 "$T/b1.log")"
B=$(newest_run "$T/b")
rows=$(($(wc -l <"$B/train_stats.csv") - 1))
[ "$rows" -ge 1 ] && [ "$rows" -lt "$E" ] || die "B: killed with $rows epoch rows, expected 1..$((E - 1))"
"$B/restart.sh" >"$T/b2.log" 2>&1 || die "B: restart.sh without a checkpoint failed: $(cat "$T/b2.log")"
grep -q "starting the run over in $B" "$T/b2.log" || die "B: restart.sh did not start over: $(head -20 "$T/b2.log")"
"$TRAIN_TOOL" csv-check "$B/train_stats.csv" "$E" >/dev/null || die "B: train_stats.csv malformed after the restart"
"$TRAIN_TOOL" csv-cmp "$REF/train_stats.csv" "$B/train_stats.csv" ||
  die "B: train_stats.csv after the restart is not the uninterrupted run's (stale rows?)"
[ "$(($(wc -l <"$B/train_stats.csv.before-restart") - 1))" = "$rows" ] ||
  die "B: train_stats.csv.before-restart should hold the $rows row(s) of the killed attempt"
echo "ok   B: killed in epoch $((rows + 1)) without checkpointing; restart.sh started over, $E clean rows"
echo "PASS"
